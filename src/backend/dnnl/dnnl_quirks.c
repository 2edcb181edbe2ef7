/* Post-op chains oneDNN 2.6 (Debian's 2.6.3) computes wrongly, and how the
 * backend avoids them (issue 15; docs/linear-backend.md, "Post-op chains
 * oneDNN gets wrong"). Found by tests/dnnl/test_dnnl_postop_*.c, which
 * compare every fused kernel with the interpreter.
 *
 * 1. A repeated eltwise algorithm. The x64 JIT post-op injector
 *    (jit_uni_postops_injector_t) keeps one eltwise injector per
 *    *algorithm*, created with the parameters of the algorithm's first
 *    post-op; every later post-op of the same algorithm is computed with
 *    those parameters. `linear(1.3,0)` then `linear(1,0.2)` (x*1.3+0.2)
 *    gives x*1.69; `clip(a,b)` then `clip(c,d)` clips twice to [a,b]. Every
 *    JIT implementation is affected (brgconv_1x1, brgconv, jit:avx512_core,
 *    jit_1x1, brdgmm_dw, brg matmul); gemm:jit and ref are not.
 *    an_legalize rewrites the chain so no algorithm appears twice with
 *    different parameters: consecutive affine steps are composed into one
 *    `linear`, consecutive clips (and ReLUs) into one `clip`, and a repeat
 *    that remains takes an algorithm oneDNN computes identically under
 *    another name (relu_use_dst_for_bwd, elu_use_dst_for_bwd, clip_v2,
 *    clip_v2_use_dst_for_bwd, bounded_relu, pow(a,1) for linear(a,0) and
 *    back, sqrt for pow(1,0.5), square for pow(1,2)); a chain with no such
 *    assignment is refused with the reason (the step is then not fused).
 *
 * 2. gemm:jit convolutions with a channels-last destination apply binary
 *    post-ops whose operand is broadcast other than per tensor, per channel
 *    or not at all (per position (1,1,H,W), per image (N,1,1,1), per image
 *    and channel (N,C,1,1)) at wrong offsets. dn_impl_computes refuses that
 *    kernel when oneDNN picks gemm:jit for it; the other variant (blocked
 *    activations) gets a correct implementation.
 *
 *    The same for a full-tensor operand when the destination has one column
 *    and more than one row ((N,C,H,1)), as oneDNN broadcasts it along the
 *    size-1 dims (korch-difftest seed 7403: Conv 3x3 dilation 2 over a 2x1
 *    image, + a full Min; measured on Zen 4: 2x1 and 3x1 outputs wrong,
 *    1x2, 2x2, 4x3, 1x1 right).
 *
 *    And for a full-tensor operand (or one that varies per image or per
 *    position) when the kernel is wider than the image (korch-difftest
 *    seed 25932: Conv 5x5 pads [3,4,4,1] over a 1x1 image, the output of
 *    GlobalAveragePool, + a full Add, 225 of 240 wrong). Swept on Zen 4
 *    (3,400 shapes): every failure had a kernel wider than the image along
 *    W with at least two columns of left padding (1x3 to 1x9 kernels over 1
 *    to 7 columns); none along H, none with the kernel within the image.
 *    Refused when the dilated kernel exceeds the image along any spatial
 *    axis (H too: the cause inside oneDNN was not isolated), and for a
 *    one-row destination (1 x W: 1-D convolutions, and H x 1 ones run as
 *    1 x H), kernel inside the image or not (tests/dnnl/test_dnnl_linear.c,
 *    the 1-D, unit-height and unit-width cases with a residual).
 *
 * 3. gemm:jit grouped convolutions with post-ops, on CPUs without AVX-512
 *    (where oneDNN picks gemm:jit for them): a depthwise convolution in plain
 *    NCHW with bias, GELU and a residual add gave 656 wrong elements of 1,024
 *    on an AVX2-only Zen 3 (tests/dnnl/test_dnnl_epilogue; the AVX-512
 *    machines of earlier sessions pick another implementation). Eltwise-only
 *    chains (ReLU6, hard-swish, swish on the zoo's depthwise convolutions)
 *    compute right there, and so do blocked destinations (nChw8c); a chain
 *    with a binary post-op on a gemm:jit grouped convolution with a plain
 *    destination is refused (which of its steps oneDNN misplaces was not
 *    isolated); the blocked variant or a shorter chain remains.
 *
 * 5. gemm:jit bf16 convolutions (`--precision bf16`, which oneDNN picks on
 *    AVX512_BF16 for plain activations with few channels) with a binary
 *    post-op: korch-difftest --precision bf16, seed 62: Conv 1->15 3x3 pads
 *    (0,1,0,2), channels-last, its output transposed back into the
 *    destination's strides, then bias and a full-tensor Add: 1308 of 1440
 *    elements wrong (errors of the size of the values), while the float32
 *    kernel of the same chain is right. Refused with any binary post-op;
 *    eltwise-only chains and the other variants remain.
 *
 * 6. jit_bf16_1x1 bf16 transposed convolutions with plain (channels-last or
 *    -first) activations and an odd number of input channels compute wrong
 *    values (korch-difftest --precision bf16, seed 289: ConvTranspose 3->6,
 *    1x1, 455 of 720 elements wrong; measured: input channels 1, 3, 5, 7,
 *    17 wrong with 6, 16 or 32 outputs, 2, 4, 8, 16 right; the blocked
 *    variant and 3x3 kernels right). Refused; the blocked variant remains.
 *
 * 7. The int8 gemm convolutions (x64:gemm_s8u8s32:jit, gemm_s8s8s32:jit,
 *    which oneDNN picks for int8 grouped convolutions whose group
 *    channel counts its direct kernels do not take) apply a binary post-op
 *    wrongly when the convolution has groups: tests/dnnl/test_dnnl_int8,
 *    400 random int8 convolutions on Zen 4 (VNNI), every failure a grouped
 *    (g2) one with a per-channel bias post-op through such an
 *    implementation (290-5,600 elements wrong), with and without a zero
 *    point, u8 and s8, every variant; the same shapes without post-ops, and
 *    every other implementation, right. Refused with any binary post-op;
 *    the kernel without the chain, or the float32 one, remains.
 *
 * 8. Integer matmuls and convolutions (dnnl_imatmul.c) must be exact, and
 *    oneDNN 2.6 is not always: its reference int8 convolution (ref_int8,
 *    what a plain-layout int8 convolution gets) and its int8 matmul with a
 *    source zero point round sums past 2^24 (off by one or two at 4e7;
 *    tests/dnnl/test_dnnl_imatmul.c, K = 3072 and 4608). The zero point is
 *    korch's own correction (dnnl_primitive.c, zp_correct); a reference
 *    implementation is refused for an integer kernel (the blocked variant's
 *    JIT kernels are exact).
 *
 * 4. Not a wrong result, a slow one: oneDNN 2.x's deconvolution (jit:avx2 on
 *    the Zen 3) runs a fused bias or any post-op many times slower than the
 *    bare deconvolution followed by korch's own elementwise kernel: 24->24
 *    channels, 2x2 stride 2, 1x24x120x120 on 2 threads: bare 1.4-1.8 ms,
 *    bias fused 4.2-6.0 ms (separate bias kernel: 1.5 ms in all), ReLU
 *    fused 33-82 ms; in ppocrv4_det's decoder 260-300 ms against 1.0 ms
 *    (bench/RESULTS.md). Profiles see it and never choose the fusion, but
 *    `--estimate` (a roofline) cannot, and chose it: its ppocrv4_det plan
 *    ran 394-542 ms against 26-28 ms profiled. an_deconv_fusion refuses
 *    the fusion at analysis, on oneDNN before 3.0, so no strategy is
 *    offered it. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/dnnl/dnnl_analyze.h"

/* ---- 1a: composing consecutive steps -------------------------------------------- */

static bool is_eltwise(const dn_post *p, dnnl_alg_kind_t alg) { return p->kind == DN_POST_ELTWISE && p->alg == alg; }

/* clip(lo, hi), or relu (lo 0, hi +inf) */
static bool clip_bounds(const dn_post *p, double *lo, double *hi) {
    if (is_eltwise(p, dnnl_eltwise_clip) || is_eltwise(p, dnnl_eltwise_clip_v2)) {
        *lo = p->alpha;
        *hi = p->beta;
        return true;
    }
    if (is_eltwise(p, dnnl_eltwise_relu) && p->alpha == 0.0f) {
        *lo = 0;
        *hi = INFINITY;
        return true;
    }
    return false;
}

/* Replaces q (the step after p) and p by one step in *p when their
 * composition is one oneDNN function. */
static bool compose(dn_post *p, const dn_post *q) {
    if (is_eltwise(p, dnnl_eltwise_linear) && is_eltwise(q, dnnl_eltwise_linear)) {
        /* c (a x + b) + d: rounded once instead of twice */
        double a = p->alpha, b = p->beta, c = q->alpha, d = q->beta;
        p->alpha = (float)(c * a);
        p->beta = (float)(c * b + d);
        return true;
    }
    double l1, h1, l2, h2;
    if (clip_bounds(p, &l1, &h1) && clip_bounds(q, &l2, &h2)) {
        /* clamping to [l1,h1] then [l2,h2] is clamping to their intersection
         * when it is not empty */
        double lo = fmax(l1, l2), hi = fmin(h1, h2);
        if (!(lo <= hi)) return false;
        if (isinf(hi) && lo == 0) { /* relu of relu; a one-sided clip at another floor stays a clip */
            p->alg = dnnl_eltwise_relu;
            p->alpha = p->beta = 0;
        } else {
            p->alg = dnnl_eltwise_clip;
            p->alpha = (float)lo;
            p->beta = (float)hi;
        }
        return true;
    }
    return false;
}

static void compose_all(dn_desc *d) {
    int n = 0;
    for (int i = 0; i < d->n_post; i++) {
        dn_post q = d->post[i];
        if (n > 0 && compose(&d->post[n - 1], &q)) {
            /* x*1 + 0 (e.g. a multiply undone by a divide) does nothing */
            if (is_eltwise(&d->post[n - 1], dnnl_eltwise_linear) && d->post[n - 1].alpha == 1.0f &&
                d->post[n - 1].beta == 0.0f)
                n--;
            continue;
        }
        if (is_eltwise(&q, dnnl_eltwise_linear) && q.alpha == 1.0f && q.beta == 0.0f) continue;
        d->post[n++] = q;
    }
    d->n_post = n;
}

/* ---- 1b: no algorithm twice with different parameters ------------------------------ */

typedef struct enc {
    dnnl_alg_kind_t alg;
    float a, b;
} enc;

/* The same function under every algorithm oneDNN computes it with (forward
 * only; the *_use_dst_for_bwd variants differ from the plain ones only in
 * training), the post-op's own first. */
static int encodings(const dn_post *p, enc *out) {
    int n = 0;
    float a = p->alpha, b = p->beta;
    out[n++] = (enc){p->alg, a, b};
    switch (p->alg) {
    case dnnl_eltwise_relu:
        if (a >= 0) out[n++] = (enc){dnnl_eltwise_relu_use_dst_for_bwd, a, 0};
        break;
    case dnnl_eltwise_elu:
        if (a >= 0) out[n++] = (enc){dnnl_eltwise_elu_use_dst_for_bwd, a, 0};
        break;
    case dnnl_eltwise_clip:
        out[n++] = (enc){dnnl_eltwise_clip_v2, a, b};
        out[n++] = (enc){dnnl_eltwise_clip_v2_use_dst_for_bwd, a, b};
        if (a == 0.0f && b > 0) out[n++] = (enc){dnnl_eltwise_bounded_relu, b, 0};
        break;
    case dnnl_eltwise_linear:
        if (b == 0.0f) out[n++] = (enc){dnnl_eltwise_pow, a, 1.0f}; /* a * x^1: one multiply in the JIT */
        break;
    case dnnl_eltwise_pow:
        if (b == 1.0f) out[n++] = (enc){dnnl_eltwise_linear, a, 0};
        if (a == 1.0f && b == 0.5f) out[n++] = (enc){dnnl_eltwise_sqrt, 0, 0};
        if (a == 1.0f && b == 2.0f) out[n++] = (enc){dnnl_eltwise_square, 0, 0};
        break;
    default: break;
    }
    return n;
}

typedef struct assign {
    const dn_desc *d;
    enc choice[DN_MAX_POST];
    enc bound[DN_MAX_POST]; /* algorithms in use and their parameters */
    int n_bound;
    int budget;
} assign;

static bool search(assign *s, int i) {
    if (i == s->d->n_post) return true;
    const dn_post *p = &s->d->post[i];
    if (p->kind != DN_POST_ELTWISE) return search(s, i + 1);
    if (--s->budget < 0) return false;
    enc e[6];
    int ne = encodings(p, e);
    for (int k = 0; k < ne; k++) {
        bool clash = false, known = false;
        for (int j = 0; j < s->n_bound; j++)
            if (s->bound[j].alg == e[k].alg) {
                known = true;
                clash = s->bound[j].a != e[k].a || s->bound[j].b != e[k].b;
            }
        if (clash) continue;
        if (!known) s->bound[s->n_bound++] = e[k];
        s->choice[i] = e[k];
        if (search(s, i + 1)) return true;
        if (!known) s->n_bound--;
    }
    return false;
}

bool an_legalize(actx *c) {
    dn_desc *d = c->d;
    compose_all(d);
    assign s = {.d = d, .budget = 4096};
    if (search(&s, 0)) {
        for (int i = 0; i < d->n_post; i++)
            if (d->post[i].kind == DN_POST_ELTWISE) {
                d->post[i].alg = s.choice[i].alg;
                d->post[i].alpha = s.choice[i].a;
                d->post[i].beta = s.choice[i].b;
            }
        return true;
    }
    /* name the first pair of clashing post-ops */
    char n1[160], n2[160];
    for (int j = 0; j < d->n_post; j++)
        for (int i = 0; i < j; i++) {
            const dn_post *p = &d->post[i], *q = &d->post[j];
            if (p->kind != DN_POST_ELTWISE || q->kind != DN_POST_ELTWISE || p->alg != q->alg) continue;
            if (p->alpha == q->alpha && p->beta == q->beta) continue;
            return an_fail(c,
                           "%s and %s both become oneDNN eltwise %s, with parameters (%g,%g) and (%g,%g), and no "
                           "equivalent algorithm is free: oneDNN 2.6's JIT post-op injector would compute both with the "
                           "first's parameters; not fused",
                           an_node_name(c, p->node, n1, sizeof n1), an_node_name(c, q->node, n2, sizeof n2),
                           dn_alg_name(p->alg), p->alpha, p->beta, q->alpha, q->beta);
        }
    return an_fail(c, "the post-op chain has no assignment of oneDNN algorithms that oneDNN 2.6 computes correctly");
}

/* ---- 4: deconvolution fusion on oneDNN 2.x -------------------------------------------- */

bool an_deconv_fusion(actx *c) {
    const dn_desc *d = c->d;
    if (d->op != KORCH_LINEAR_CONV_TRANSPOSE || (d->n_post == 0 && d->bias_slot < 0)) return true;
    const dnnl_version_t *v = dnnl_version();
    if (v->major >= 3) return true;
    return an_fail(c,
                   "oneDNN %d.%d's deconvolution runs a fused %s 3-50x slower than the bare deconvolution followed "
                   "by a separate elementwise kernel (dnnl_quirks.c, 4); not fused",
                   v->major, v->minor, d->n_post ? "post-op" : "bias");
}

/* ---- 2: implementation-specific defects ------------------------------------------------ */

/* Is md a plain layout with the channels (dim 1) innermost? One channel
 * counts too: its stride still says channels-last (1) or channels-first
 * (H*W), and a one-channel channels-last convolution has the defect (a
 * per-row operand (H,1) or per-column (W,): korch-difftest --features qdq
 * seed 91, reduced to Conv 14->1 3x3 stride 2 + Sub of a (3,1) constant). */
static bool channels_innermost(const dnnl_memory_desc_t *md) {
    return md && md->format_kind == dnnl_blocked && md->ndims >= 3 && md->format_desc.blocking.inner_nblks == 0 &&
           md->format_desc.blocking.strides[1] == 1;
}

bool dn_impl_computes(const dn_desc *d, const char *impl, const dnnl_memory_desc_t *dst, char *reason, size_t size) {
    bool plain = dst && dst->format_kind == dnnl_blocked && dst->format_desc.blocking.inner_nblks == 0;
    bool binary = false;
    for (int i = 0; i < d->n_post; i++) binary = binary || d->post[i].kind == DN_POST_BINARY;
    if (d->params.bf16 && d->op == KORCH_LINEAR_CONV_TRANSPOSE && impl && strstr(impl, "jit_bf16_1x1") && plain &&
        d->src.ndims >= 2 && d->src.dims[1] % 2 == 1) {
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s bf16 transposed convolution computes %lld (odd) input channels in plain layout "
                     "wrongly (dnnl_quirks.c, 6)",
                     impl, (long long)d->src.dims[1]);
        return false;
    }
    if (d->imatmul && dn_impl_is_reference(impl)) {
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s integer kernel rounds its int32 sums through float32 (inexact past 2^24; "
                     "dnnl_quirks.c, 8)",
                     impl);
        return false;
    }
    if (d->src_q && d->params.group > 1 && binary && impl && strstr(impl, "gemm_s8")) {
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s int8 grouped convolution computes chains with a binary post-op wrongly "
                     "(dnnl_quirks.c, 7); not fused",
                     impl);
        return false;
    }
    if (d->op == KORCH_LINEAR_MATMUL || !impl || !strstr(impl, "gemm:jit")) return true;
    if (d->params.bf16 && binary) {
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s bf16 convolution computes chains with a binary post-op wrongly (dnnl_quirks.c, "
                     "5); not fused",
                     impl);
        return false;
    }
    if (d->op == KORCH_LINEAR_CONV && d->params.group > 1 && binary && plain) {
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s grouped convolution computes chains with a binary post-op wrongly on this "
                     "CPU (seen without AVX-512); not fused",
                     impl);
        return false;
    }
    if (!channels_innermost(dst)) return true;
    bool kernel_wider = false; /* than the image, along some spatial axis (seed 25932) */
    if (d->op == KORCH_LINEAR_CONV)
        for (int j = 2; j < d->src.ndims && j < d->wei.ndims; j++)
            kernel_wider = kernel_wider || (d->wei.dims[j] - 1) * d->params.dilations[j - 2] + 1 > d->src.dims[j];
    /* a one-row destination (1 x W, and 1-D convolutions): wrong with the
     * kernel within the image too (tests/dnnl/test_dnnl_linear.c's 1-D,
     * unit-height and unit-width cases with a residual: e.g. a 1x19 image,
     * 1x1 kernel, stride 2, pads (0,2): 16 of 20 wrong; most failures
     * padded along W, one not: a 1-D convolution 1 -> 1 channel, kernel 2,
     * stride 2, dilation 2 over 7, 1 of 3 wrong), so refused on every one */
    int last_dim = d->dst.ndims - 1;
    bool one_row = d->op == KORCH_LINEAR_CONV && last_dim >= 2;
    for (int j = 2; j < last_dim && one_row; j++) one_row = d->dst.dims[j] == 1;
    bool full_wrong = kernel_wider || one_row; /* a full-tensor operand is misplaced too */
    for (int i = 0; i < d->n_post; i++) {
        const dn_post *p = &d->post[i];
        if (p->kind != DN_POST_BINARY) continue;
        bool scalar = true, channel = true, full = true;
        for (int j = 0; j < p->operand.ndims; j++) {
            int64_t o = p->operand.dims[j], t = d->dst.dims[j];
            scalar = scalar && o == 1;
            channel = channel && (j == 1 ? o == t : o == 1);
            full = full && o == t;
        }
        /* a full operand whose innermost dim is 1 while an outer spatial
         * dim is not ((1,C,H,1): a one-column output) is applied at wrong
         * offsets too: korch-difftest seed 7403, Conv 3x3 dilation 2 over a
         * 2x1 image + Min/Add of a full tensor, 13-24 of 48 wrong; measured
         * on Zen 4: outputs 2x1 and 3x1 wrong, 1x2, 2x2, 4x3, 1x1 right */
        int last = d->dst.ndims - 1;
        bool one_column = last >= 3 && d->dst.dims[last] == 1;
        bool taller = false;
        for (int j = 2; j < last; j++) taller = taller || d->dst.dims[j] > 1;
        if (full && one_column && taller) full = false;
        if (full && full_wrong) full = false;
        if (scalar || channel || full) continue;
        if (reason && size)
            snprintf(reason, size,
                     "oneDNN 2.6's %s convolution with a channels-last destination applies binary post-op %d (%s, "
                     "operand broadcast neither per tensor nor per channel%s) at wrong offsets",
                     impl, i, dn_alg_name(p->alg),
                     kernel_wider ? ", or the kernel wider than the image"
                     : one_row    ? ", or a one-row image"
                                  : "");
        return false;
    }
    return true;
}
