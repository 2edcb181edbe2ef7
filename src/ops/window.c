#include "ops/window.h"

#include <string.h>

#include "ops/flop_count.h"

korch_status korch_window_auto_pad(const korch_op_ctx *ctx, korch_auto_pad *out) {
    const char *s = korch_node_attr_string(ctx->node, "auto_pad", "NOTSET");
    char buf[64];
    if (strcmp(s, "NOTSET") == 0) *out = KORCH_AUTO_PAD_NOTSET;
    else if (strcmp(s, "SAME_UPPER") == 0) *out = KORCH_AUTO_PAD_SAME_UPPER;
    else if (strcmp(s, "SAME_LOWER") == 0) *out = KORCH_AUTO_PAD_SAME_LOWER;
    else if (strcmp(s, "VALID") == 0) *out = KORCH_AUTO_PAD_VALID;
    else
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "auto_pad \"%s\" is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                              korch_printable(s, buf, sizeof buf));
    return KORCH_OK;
}

korch_status korch_window_ints(const korch_op_ctx *ctx, const char *name, int count, int64_t dflt, int64_t lo,
                               int64_t *out) {
    const int64_t *v = NULL;
    int n = korch_node_attr_ints(ctx->node, name, &v);
    if (n < 0 && korch_node_attr(ctx->node, name))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute %s must be a list of integers", name);
    if (n < 0) {
        for (int i = 0; i < count; i++) out[i] = dflt;
        return KORCH_OK;
    }
    if (n != count)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s has %d values, expected %d", name, n, count);
    for (int i = 0; i < count; i++) {
        if (v[i] < lo || v[i] >= KORCH_WINDOW_MAX_ATTR)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s[%d] = %lld is out of range (must be %s)", name, i,
                                  (long long)v[i], lo == 0 ? ">= 0 and < 2^31" : "> 0 and < 2^31");
        out[i] = v[i];
    }
    return KORCH_OK;
}

/* Output size and padding of one spatial dimension. */
static korch_status forward_dim(const korch_op_ctx *ctx, korch_auto_pad auto_pad, bool ceil_mode, int dim,
                                korch_window *w, int j) {
    int64_t in = w->in[j], k = w->kernel[j], s = w->stride[j], d = w->dilation[j];
    int64_t extent = d * (k - 1) + 1;
    if (auto_pad == KORCH_AUTO_PAD_SAME_UPPER || auto_pad == KORCH_AUTO_PAD_SAME_LOWER) {
        int64_t out = (in + s - 1) / s;
        int64_t total = (out - 1) * s + extent - in;
        if (total < 0) total = 0;
        w->pad_begin[j] = auto_pad == KORCH_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        w->pad_end[j] = total - w->pad_begin[j];
        w->out[j] = out;
        return KORCH_OK;
    }
    if (auto_pad == KORCH_AUTO_PAD_VALID) w->pad_begin[j] = w->pad_end[j] = 0;
    int64_t span = in + w->pad_begin[j] + w->pad_end[j];
    if (span < extent)
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "spatial dimension %d: kernel extent %lld (kernel %lld, dilation %lld) is larger "
                              "than the padded input %lld (input %lld, pads %lld+%lld)",
                              dim, (long long)extent, (long long)k, (long long)d, (long long)span, (long long)in,
                              (long long)w->pad_begin[j], (long long)w->pad_end[j]);
    int64_t out = (span - extent) / s + 1;
    if (ceil_mode && auto_pad == KORCH_AUTO_PAD_NOTSET) {
        out = (span - extent + s - 1) / s + 1;
        /* a window starting in the end padding would see no input at all */
        if ((out - 1) * s >= in + w->pad_begin[j]) out--;
    }
    w->out[j] = out;
    return KORCH_OK;
}

korch_status korch_window_forward(const korch_op_ctx *ctx, const korch_shape *x, const int64_t *kernel,
                                  bool ceil_mode, korch_window *w) {
    memset(w, 0, sizeof *w);
    int spatial = x->rank - 2;
    if (spatial < 1 || spatial > KORCH_WINDOW_MAX_SPATIAL)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "input has rank %d; korch supports 1, 2 or 3 spatial dimensions (rank 3 to 5)",
                              x->rank);
    w->spatial = spatial;
    int base = 3 - spatial;
    for (int j = 0; j < 3; j++) {
        w->in[j] = w->kernel[j] = w->stride[j] = w->dilation[j] = w->out[j] = 1;
        w->pad_begin[j] = w->pad_end[j] = 0;
    }
    int64_t ks[3], st[3], dl[3], pads[6];
    bool has_kernel_attr = korch_node_attr(ctx->node, "kernel_shape") != NULL;
    if (!has_kernel_attr && !kernel) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing kernel_shape attribute");
    if (has_kernel_attr) KORCH_TRY(korch_window_ints(ctx, "kernel_shape", spatial, 1, 1, ks));
    for (int i = 0; i < spatial && kernel; i++) {
        if (kernel[i] < 1 || kernel[i] >= KORCH_WINDOW_MAX_ATTR)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "weight spatial dimension %d is %lld", i, (long long)kernel[i]);
        if (has_kernel_attr && ks[i] != kernel[i])
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "kernel_shape[%d] = %lld but the weights have %lld", i,
                                  (long long)ks[i], (long long)kernel[i]);
        ks[i] = kernel[i];
    }
    KORCH_TRY(korch_window_ints(ctx, "strides", spatial, 1, 1, st));
    KORCH_TRY(korch_window_ints(ctx, "dilations", spatial, 1, 1, dl));
    KORCH_TRY(korch_window_ints(ctx, "pads", 2 * spatial, 0, 0, pads));
    korch_auto_pad auto_pad;
    KORCH_TRY(korch_window_auto_pad(ctx, &auto_pad));
    if (auto_pad != KORCH_AUTO_PAD_NOTSET)
        for (int i = 0; i < 2 * spatial; i++)
            if (pads[i] != 0)
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "pads and auto_pad=%s are both set",
                                      korch_node_attr_string(ctx->node, "auto_pad", ""));
    for (int i = 0; i < spatial; i++) {
        int j = base + i;
        if (x->dims[2 + i] < 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "spatial dimension %d of the input is %lld", i,
                                  (long long)x->dims[2 + i]);
        w->in[j] = x->dims[2 + i];
        w->kernel[j] = ks[i];
        w->stride[j] = st[i];
        w->dilation[j] = dl[i];
        w->pad_begin[j] = pads[i];
        w->pad_end[j] = pads[spatial + i];
        KORCH_TRY(forward_dim(ctx, auto_pad, ceil_mode, i, w, j));
    }
    if (korch_window_out_size(w) > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would have %s positions per channel",
                              korch_window_out_size(w) == INT64_MAX ? "more than 2^63" : "more than 2^40");
    return KORCH_OK;
}

static int64_t product3(const int64_t *v) {
    return korch_flops_mul(korch_flops_mul(v[0], v[1]), v[2]);
}
int64_t korch_window_in_size(const korch_window *w) { return product3(w->in); }
int64_t korch_window_out_size(const korch_window *w) { return product3(w->out); }
int64_t korch_window_kernel_size(const korch_window *w) { return product3(w->kernel); }

void korch_window_valid_range(int64_t offset, int64_t step, int64_t limit, int64_t count, int64_t *lo, int64_t *hi) {
    /* offset + t*step >= 0  <=>  t >= ceil(-offset / step) */
    int64_t first = offset >= 0 ? 0 : (-offset + step - 1) / step;
    /* offset + t*step < limit  <=>  t <= floor((limit - 1 - offset) / step) */
    int64_t last_plus_one = limit - 1 - offset < 0 ? 0 : (limit - 1 - offset) / step + 1;
    if (last_plus_one > count) last_plus_one = count;
    if (first > last_plus_one) first = last_plus_one;
    *lo = first;
    *hi = last_plus_one;
}
