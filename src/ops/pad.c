/* Pad: constant, edge, reflect and wrap padding, with negative pads that crop.
 * Opset 1 names the attribute 'paddings', opsets 2-10 'pads'; from opset 11
 * pads and the constant value are inputs, and opset 18 adds an axes input.
 *
 * Negative pads crop first and the remaining positive pads apply to the
 * cropped tensor (as ONNX Runtime does), so reflect/edge/wrap look at the
 * kept window only. Each output dim gets a source index map and the gather
 * kernel does the rest. */
#include <stdlib.h>
#include <string.h>

#include "ops/layout.h"

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

typedef struct pad_plan {
    pad_mode mode;
    int64_t begin[KORCH_MAX_RANK], end[KORCH_MAX_RANK];
} pad_plan;

static korch_status plan_pad(const korch_op_ctx *ctx, pad_plan *p) {
    const korch_shape *in = &ctx->inputs[0]->shape;
    int rank = in->rank, opset = ctx->node->opset;
    const char *mode = korch_node_attr_string(ctx->node, "mode", "constant");
    if (strcmp(mode, "constant") == 0) p->mode = PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) p->mode = PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0) p->mode = PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0) p->mode = PAD_WRAP;
    else {
        char buf[64];
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown mode \"%s\"", korch_printable(mode, buf, sizeof buf));
    }
    int64_t pads[2 * KORCH_MAX_RANK], axes[KORCH_MAX_RANK];
    int n_pads = 0, n_axes = rank;
    bool present = false, has_axes = false;
    KORCH_TRY(korch_layout_read_list(ctx, opset >= 11, 1, opset == 1 ? "paddings" : "pads", pads, 2 * KORCH_MAX_RANK,
                                     &n_pads, &present));
    if (!present) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing pads");
    if (opset >= 18) KORCH_TRY(korch_layout_read_list(ctx, true, 3, "axes", axes, KORCH_MAX_RANK, &n_axes, &has_axes));
    if (!has_axes) {
        n_axes = rank;
        for (int k = 0; k < rank; k++) axes[k] = k;
    }
    KORCH_TRY(korch_layout_normalize_axes(ctx, axes, n_axes, rank));
    if (n_pads != 2 * n_axes)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "pads has %d entries, expected %d (2 per padded axis)",
                              n_pads, 2 * n_axes);
    for (int d = 0; d < rank; d++) p->begin[d] = p->end[d] = 0;
    for (int k = 0; k < n_axes; k++) {
        int d = (int)axes[k];
        int64_t b = pads[k], e = pads[n_axes + k], dim = in->dims[d];
        /* |pads| beyond the element limit can only be hostile; bounding them
         * keeps every sum below from overflowing */
        if (b < -KORCH_MAX_ELEMENTS || b > KORCH_MAX_ELEMENTS || e < -KORCH_MAX_ELEMENTS || e > KORCH_MAX_ELEMENTS)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "pads for axis %d are too large", d);
        int64_t kept = dim + (b < 0 ? b : 0) + (e < 0 ? e : 0);
        if (dim + b + e < 0 || kept < 0)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "pads %lld, %lld crop more than axis %d holds (%lld)",
                                  (long long)b, (long long)e, d, (long long)dim);
        if (p->mode != PAD_CONSTANT && kept == 0 && (b > 0 || e > 0))
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s padding of axis %d needs at least one element", mode, d);
        p->begin[d] = b;
        p->end[d] = e;
    }
    return KORCH_OK;
}

static korch_status infer_pad(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    pad_plan p;
    KORCH_TRY(plan_pad(ctx, &p));
    const korch_tensor *x = ctx->inputs[0];
    if (ctx->node->opset >= 11 && korch_op_has_input(ctx, 2)) {
        const korch_tensor *v = ctx->inputs[2];
        if (v->dtype != x->dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "constant_value is %s but the data is %s",
                                  korch_dtype_name(v->dtype), korch_dtype_name(x->dtype));
        if (korch_shape_numel(&v->shape) != 1)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "constant_value must hold one element");
    }
    korch_shape out = x->shape;
    for (int d = 0; d < out.rank; d++) out.dims[d] += p.begin[d] + p.end[d];
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

/* Maps output index o of one axis to a source index, or -1 for "constant". */
static int64_t source_index(pad_mode mode, int64_t o, int64_t begin, int64_t end, int64_t dim) {
    int64_t lo = begin < 0 ? -begin : 0;                /* first kept source index */
    int64_t len = dim - lo - (end < 0 ? -end : 0);      /* kept window length */
    int64_t c = o - (begin > 0 ? begin : 0);            /* position within the window */
    if (c >= 0 && c < len) return lo + c;
    switch (mode) {
    case PAD_CONSTANT: return -1;
    case PAD_EDGE: return lo + (c < 0 ? 0 : len - 1);
    case PAD_WRAP: return lo + ((c % len) + len) % len;
    case PAD_REFLECT: {
        if (len == 1) return lo;
        int64_t period = 2 * (len - 1), m = ((c % period) + period) % period;
        return lo + (m < len ? m : period - m);
    }
    }
    return -1;
}

/* Writes the pad value for dtype into fill (esize bytes). */
static void fill_value(const korch_op_ctx *ctx, char *fill) {
    const korch_tensor *x = ctx->inputs[0];
    size_t esize = korch_dtype_size(x->dtype);
    memset(fill, 0, esize);
    if (ctx->node->opset >= 11) {
        if (korch_op_has_input(ctx, 2)) memcpy(fill, ctx->inputs[2]->data, esize);
        return;
    }
    /* before opset 11 the value is a float attribute, converted to the data type */
    double v = korch_node_attr_float(ctx->node, "value", 0.0f);
    switch (x->dtype) {
    case KORCH_DTYPE_FLOAT32: { float f = (float)v; memcpy(fill, &f, 4); break; }
    case KORCH_DTYPE_FLOAT64: memcpy(fill, &v, 8); break;
    default: break; /* integer data: the attribute form only allowed floats */
    }
}

static korch_status run_pad(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    pad_plan p;
    KORCH_TRY(plan_pad(ctx, &p));
    if (korch_tensor_numel(y) == 0) return KORCH_OK; /* index maps are sized by the output dims */
    int rank = x->shape.rank;
    int64_t total = 0;
    for (int d = 0; d < rank; d++) total += y->shape.dims[d];
    int64_t *store = malloc(((size_t)total + 1) * sizeof *store);
    if (!store) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory for index maps");
    int64_t *maps[KORCH_MAX_RANK];
    int64_t *at = store;
    for (int d = 0; d < rank; d++) {
        maps[d] = at;
        for (int64_t o = 0; o < y->shape.dims[d]; o++)
            at[o] = source_index(p.mode, o, p.begin[d], p.end[d], x->shape.dims[d]);
        at += y->shape.dims[d];
    }
    char fill[16];
    fill_value(ctx, fill);
    korch_layout_gather_maps(y->data, x->data, korch_dtype_size(x->dtype), rank, y->shape.dims, x->shape.dims, maps,
                             fill);
    free(store);
    return KORCH_OK;
}

const korch_op_def korch_op_def_Pad = {
    .kind = KORCH_OP_Pad, .op_type = "Pad", .opset_min = 1, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_pad, .run = run_pad, .flops = korch_layout_no_flops,
};
