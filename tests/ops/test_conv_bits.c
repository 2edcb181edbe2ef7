/* The reference convolution (src/ops/conv_kernel.c over the reference SGEMM,
 * src/ops/gemm_kernel.c) bit for bit against its arithmetic written as
 * plain loops, one output element at a time, on 1, 2 and 3 threads.
 *
 * Both references verification trusts compute every convolution with these
 * kernels, so how they sum is part of what they mean: a faster path
 * (another blocking, a parallel split, a wider register tile) must give the
 * same bits, whatever the thread count. The definition:
 *  - GEMM path: y = bias (or 0); the k = channels-per-group x taps terms,
 *    in order (channel, then kd, kh, kw), are summed in blocks of
 *    KORCH_SGEMM_KC, each block from 0 in float (a multiply, then an add:
 *    never fused), and each block's sum is added to y in turn; a tap in the
 *    padding contributes w * 0.0f like any other;
 *  - depthwise (one input channel per group): y = bias (or 0), then
 *    y += w * x for each tap in order, taps in the padding skipped.
 * Shapes: 1x1 (the pointwise path and a strided one), 3x3 with k across a
 * block edge, strided, asymmetric padding, dilated, grouped, depthwise (and
 * with a multiplier), 1-D and 3-D, batch 2, output channels and columns not
 * multiples of the register tile, and two large cases that take the two
 * parallel schedules (whole blocks per thread; one block at a time with a
 * parallel im2col and GEMM). The loops below are compiled without fused
 * multiply-adds (the build targets baseline x86-64; fp-contract off). */
#include <omp.h>

#include "nn_harness.h"
#include "ops/conv_kernel.h"
#include "ops/gemm_kernel.h"

typedef struct bits_case {
    const char *name;
    int spatial;
    int64_t batch, groups, cpg, mpg;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    bool bias;
} bits_case;

static korch_conv_geometry geometry_of(const bits_case *c) {
    korch_conv_geometry g = {.batch = c->batch, .groups = c->groups, .channels_per_group = c->cpg,
                             .out_per_group = c->mpg};
    g.channels = c->groups * c->cpg;
    g.out_channels = c->groups * c->mpg;
    korch_window *w = &g.w;
    w->spatial = c->spatial;
    for (int j = 0; j < 3; j++) {
        w->in[j] = w->kernel[j] = w->stride[j] = w->dilation[j] = w->out[j] = 1;
        w->pad_begin[j] = w->pad_end[j] = 0;
    }
    for (int i = 0; i < c->spatial; i++) {
        int j = 3 - c->spatial + i;
        w->in[j] = c->in[i];
        w->kernel[j] = c->k[i];
        w->stride[j] = c->s[i] ? c->s[i] : 1;
        w->dilation[j] = c->d[i] ? c->d[i] : 1;
        w->pad_begin[j] = c->pb[i];
        w->pad_end[j] = c->pe[i];
        w->out[j] = (w->in[j] + w->pad_begin[j] + w->pad_end[j] - w->dilation[j] * (w->kernel[j] - 1) - 1) / w->stride[j] + 1;
    }
    return g;
}

/* The input element a tap reads, or -1 in the padding. */
static int64_t input_index(const korch_window *w, int64_t channel, const int64_t o[3], const int64_t t[3]) {
    int64_t at = channel;
    for (int j = 0; j < 3; j++) {
        int64_t i = o[j] * w->stride[j] + t[j] * w->dilation[j] - w->pad_begin[j];
        if (i < 0 || i >= w->in[j]) return -1;
        at = at * w->in[j] + i;
    }
    return at;
}

__attribute__((optimize("fp-contract=off"))) static void naive_conv(const korch_conv_geometry *g, const float *x,
                                                                     const float *wt, const float *bias, float *y) {
    const korch_window *w = &g->w;
    int64_t taps = w->kernel[0] * w->kernel[1] * w->kernel[2], k = g->channels_per_group * taps;
    int64_t idx = 0;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t grp = m / g->out_per_group;
            for (int64_t od = 0; od < w->out[0]; od++)
                for (int64_t oh = 0; oh < w->out[1]; oh++)
                    for (int64_t ow = 0; ow < w->out[2]; ow++, idx++) {
                        int64_t o[3] = {od, oh, ow};
                        float acc = bias ? bias[m] : 0.0f;
                        if (g->channels_per_group == 1) {
                            for (int64_t p = 0; p < taps; p++) {
                                int64_t t[3] = {p / (w->kernel[1] * w->kernel[2]), (p / w->kernel[2]) % w->kernel[1],
                                                p % w->kernel[2]};
                                int64_t at = input_index(w, n * g->channels + grp, o, t);
                                if (at >= 0) acc = acc + wt[m * taps + p] * x[at];
                            }
                        } else {
                            for (int64_t pc = 0; pc < k; pc += KORCH_SGEMM_KC) {
                                float block = 0.0f;
                                for (int64_t p = pc; p < k && p < pc + KORCH_SGEMM_KC; p++) {
                                    int64_t c = p / taps, tap = p % taps;
                                    int64_t t[3] = {tap / (w->kernel[1] * w->kernel[2]),
                                                    (tap / w->kernel[2]) % w->kernel[1], tap % w->kernel[2]};
                                    int64_t at = input_index(w, n * g->channels + grp * g->channels_per_group + c, o, t);
                                    float xv = at >= 0 ? x[at] : 0.0f;
                                    block = block + wt[m * k + p] * xv;
                                }
                                acc = acc + block;
                            }
                        }
                        y[idx] = acc;
                    }
        }
}

static float *random_floats(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) p[i] = h_rand_float();
    return p;
}

static void check_case(const bits_case *c) {
    korch_conv_geometry g = geometry_of(c);
    int64_t in_n = g.batch * g.channels * korch_window_in_size(&g.w);
    int64_t out_n = g.batch * g.out_channels * korch_window_out_size(&g.w);
    int64_t w_n = g.out_channels * g.channels_per_group * korch_window_kernel_size(&g.w);
    float *x = random_floats(in_n), *wt = random_floats(w_n), *bias = c->bias ? random_floats(g.out_channels) : NULL;
    float *want = malloc((size_t)out_n * sizeof *want), *got = malloc((size_t)out_n * sizeof *got);
    naive_conv(&g, x, wt, bias, want);
    for (int threads = 1; threads <= 3; threads++) {
        omp_set_num_threads(threads);
        for (int64_t i = 0; i < out_n; i++) got[i] = NAN; /* every element must be written */
        CHECK_OK(korch_conv_run(&g, x, wt, bias, got));
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < out_n; i++)
            if (memcmp(&got[i], &want[i], sizeof got[i]) != 0 && bad++ == 0) first = i;
        CHECK_MSG(bad == 0, "%s, %d thread(s): %lld of %lld outputs differ from the definition (first %lld: %.9g, want %.9g)",
                  c->name, threads, (long long)bad, (long long)out_n, (long long)first, first >= 0 ? got[first] : 0.0,
                  first >= 0 ? want[first] : 0.0);
    }
    omp_set_num_threads(2);
    free(x);
    free(wt);
    free(bias);
    free(want);
    free(got);
}

int main(void) {
    const bits_case cases[] = {
        {"1x1 pointwise", 2, 1, 1, 37, 13, {17, 19}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true},
        {"1x1 stride 2", 2, 2, 1, 21, 9, {15, 14}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, false},
        {"3x3 pad 1, k = 261 across a block edge", 2, 1, 1, 29, 70, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true},
        {"3x3 stride 2, asymmetric pads", 2, 1, 1, 16, 31, {20, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {0, 1}, false},
        {"5x5 dilated (2,3), padded", 2, 1, 1, 11, 10, {23, 25}, {5, 5}, {1, 1}, {2, 3}, {4, 6}, {3, 5}, true},
        {"grouped 3x3 dilation 2", 2, 2, 3, 5, 7, {12, 13}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, true},
        {"depthwise 3x3 stride 2", 2, 1, 24, 1, 1, {19, 18}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true},
        {"depthwise x2 multiplier 5x5 dilated", 2, 2, 6, 1, 2, {14, 15}, {5, 5}, {1, 2}, {2, 1}, {4, 2}, {4, 3}, false},
        {"1-D k=7 stride 3", 1, 2, 1, 40, 19, {101}, {7}, {3}, {1}, {3}, {2}, true},
        {"3-D 3x3x3", 3, 1, 1, 10, 12, {6, 7, 8}, {3, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 0}, true},
        /* many column blocks: each thread takes whole blocks */
        {"56x56 3x3, 64 -> 100, batch 2", 2, 2, 1, 64, 100, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true},
        /* few blocks: one at a time, im2col and GEMM parallel inside */
        {"20x20 3x3, 300 -> 200", 2, 1, 1, 300, 200, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
        {"1x1 pointwise, 520 -> 130, 30x30", 2, 1, 1, 520, 130, {30, 30}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    TEST_MAIN_END();
}
