/* Resize kernels. Nearest is a gather through one index map per axis.
 * Linear and cubic are separable: one 1-D interpolation pass per resized
 * axis (in axis order, like the ONNX reference), which gives bilinear,
 * bicubic, trilinear, ... for the cost of one pass each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/resize.h"

/* The extrapolation value as one element of dtype t (tf_crop_and_resize). */
static void encode_fill(korch_dtype t, float v, char *out) {
    memset(out, 0, 16);
    if (t == KORCH_DTYPE_FLOAT32) memcpy(out, &v, sizeof v);
    else if (t == KORCH_DTYPE_FLOAT64) {
        double dv = v;
        memcpy(out, &dv, sizeof dv);
    }
}

korch_status korch_resize_run_nearest(const korch_op_ctx *ctx, const resize_plan *p) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t total = 0;
    for (int d = 0; d < p->rank; d++) total += p->out_dims[d];
    int64_t *store = malloc(((size_t)total + 1) * sizeof *store);
    if (!store) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory for index maps");
    int64_t *maps[KORCH_MAX_RANK], *at = store;
    for (int d = 0; d < p->rank; d++) {
        maps[d] = at;
        bool identity = korch_resize_axis_is_identity(p, d);
        for (int64_t o = 0; o < p->out_dims[d]; o++) at[o] = identity ? o : korch_resize_nearest_index(p, d, o);
        at += p->out_dims[d];
    }
    char fill[16];
    encode_fill(x->dtype, p->extrapolation, fill);
    korch_layout_gather_maps(y->data, x->data, korch_dtype_size(x->dtype), p->rank, p->out_dims, p->in_dims, maps,
                             fill);
    free(store);
    return KORCH_OK;
}

/* One linear pass along axis d: src has dims `dims`, dst the same with
 * dims[d] replaced by out_len. */
static korch_status linear_pass(const korch_op_ctx *ctx, const resize_plan *p, int d, const int64_t *dims,
                                const float *src, float *dst) {
    int64_t out_len = p->out_dims[d], in_len = dims[d], outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= dims[k];
    for (int k = d + 1; k < p->rank; k++) inner *= dims[k];
    int64_t *lo = malloc(((size_t)out_len + 1) * 2 * sizeof *lo);
    float *w = malloc(((size_t)out_len + 1) * sizeof *w);
    if (!lo || !w) {
        free(lo);
        free(w);
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory for interpolation weights");
    }
    int64_t *hi = lo + out_len;
    for (int64_t j = 0; j < out_len; j++) {
        bool outside;
        double x = korch_resize_source_coord(p, d, j, &outside);
        if (outside) {
            lo[j] = -1; /* extrapolated */
            continue;
        }
        double f = floor(x);
        w[j] = (float)(x - f);
        lo[j] = korch_resize_clamp_index(f, in_len);
        hi[j] = korch_resize_clamp_index(f + 1.0, in_len);
    }
    float e = p->extrapolation;
    if (inner == 1) {
        /* the last axis: each output row interpolates within one input row */
#pragma omp parallel for schedule(static) if (outer * out_len >= 32768 && outer > 1)
        for (int64_t o = 0; o < outer; o++) {
            const float *in = src + o * in_len;
            float *out = dst + o * out_len;
            for (int64_t j = 0; j < out_len; j++) {
                float w1 = w[j];
                out[j] = lo[j] < 0 ? e : (1.0f - w1) * in[lo[j]] + w1 * in[hi[j]];
            }
        }
    } else {
#pragma omp parallel for collapse(2) schedule(static) if (outer * out_len * inner >= 32768)
        for (int64_t o = 0; o < outer; o++) {
            for (int64_t j = 0; j < out_len; j++) {
                float *out = dst + (o * out_len + j) * inner;
                if (lo[j] < 0) {
                    for (int64_t k = 0; k < inner; k++) out[k] = e;
                    continue;
                }
                const float *a = src + (o * in_len + lo[j]) * inner, *b = src + (o * in_len + hi[j]) * inner;
                float w1 = w[j], w0 = 1.0f - w1;
                for (int64_t k = 0; k < inner; k++) out[k] = w0 * a[k] + w1 * b[k];
            }
        }
    }
    free(lo);
    free(w);
    return KORCH_OK;
}

/* One cubic pass along axis d, as linear_pass: four taps per output. */
static korch_status cubic_pass(const korch_op_ctx *ctx, const resize_plan *p, int d, const int64_t *dims,
                               const float *src, float *dst) {
    int64_t out_len = p->out_dims[d], in_len = dims[d], outer = 1, inner = 1;
    for (int k = 0; k < d; k++) outer *= dims[k];
    for (int k = d + 1; k < p->rank; k++) inner *= dims[k];
    int64_t *idx = malloc(((size_t)out_len + 1) * 4 * sizeof *idx);
    double *w = malloc(((size_t)out_len + 1) * 4 * sizeof *w);
    bool *outside = malloc((size_t)out_len + 1);
    if (!idx || !w || !outside) {
        free(idx);
        free(w);
        free(outside);
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory for interpolation weights");
    }
    for (int64_t j = 0; j < out_len; j++) outside[j] = !korch_resize_cubic_taps(p, d, j, idx + 4 * j, w + 4 * j);
    float e = p->extrapolation;
#pragma omp parallel for collapse(2) schedule(static) if (outer * out_len * inner >= 32768)
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < out_len; j++) {
            float *out = dst + (o * out_len + j) * inner;
            if (outside[j]) {
                for (int64_t k = 0; k < inner; k++) out[k] = e;
                continue;
            }
            const int64_t *t = idx + 4 * j;
            const double *wj = w + 4 * j;
            const float *base = src + o * in_len * inner;
            for (int64_t k = 0; k < inner; k++)
                out[k] = (float)(wj[0] * base[t[0] * inner + k] + wj[1] * base[t[1] * inner + k] +
                                 wj[2] * base[t[2] * inner + k] + wj[3] * base[t[3] * inner + k]);
        }
    }
    free(idx);
    free(w);
    free(outside);
    return KORCH_OK;
}

typedef korch_status (*pass_fn)(const korch_op_ctx *, const resize_plan *, int, const int64_t *, const float *,
                                float *);

static korch_status run_separable(const korch_op_ctx *ctx, const resize_plan *p, pass_fn pass) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    if (korch_tensor_numel(y) == 0) return KORCH_OK;
    int last = -1;
    for (int d = 0; d < p->rank; d++)
        if (!korch_resize_axis_is_identity(p, d)) last = d;
    if (last < 0) {
        memcpy(y->data, x->data, korch_tensor_bytes(y));
        return KORCH_OK;
    }
    int64_t dims[KORCH_MAX_RANK];
    memcpy(dims, p->in_dims, sizeof dims);
    const float *cur = x->data;
    float *owned = NULL;
    korch_status st = KORCH_OK;
    for (int d = 0; d <= last && st == KORCH_OK; d++) {
        if (korch_resize_axis_is_identity(p, d)) continue;
        /* dims: the source of this pass; the destination differs on axis d */
        float *next = y->data;
        if (d != last) {
            int64_t n = p->out_dims[d];
            for (int k = 0; k < p->rank; k++)
                if (k != d) n *= dims[k];
            next = malloc((size_t)n * sizeof *next + sizeof *next);
            if (!next) {
                st = korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory for an interpolation pass");
                break;
            }
        }
        st = pass(ctx, p, d, dims, cur, next);
        dims[d] = p->out_dims[d];
        free(owned);
        owned = next == y->data ? NULL : next;
        cur = next;
    }
    free(owned);
    return st;
}

korch_status korch_resize_run_linear(const korch_op_ctx *ctx, const resize_plan *p) {
    return run_separable(ctx, p, linear_pass);
}

korch_status korch_resize_run_cubic(const korch_op_ctx *ctx, const resize_plan *p) {
    return run_separable(ctx, p, cubic_pass);
}
