/* Helpers fission rules are written with (rules.h). */
#include <stdlib.h>
#include <string.h>

#include "fission/rules.h"

int fission_in(const korch_fission_ctx *ctx, int i) { return i >= 0 && i < ctx->n_inputs ? ctx->in[i] : -1; }

bool fission_has_in(const korch_fission_ctx *ctx, int i) { return fission_in(ctx, i) >= 0; }

const korch_tensor *fission_const_in(const korch_fission_ctx *ctx, int i) {
    if (i < 0 || i >= ctx->n_inputs || ctx->node->inputs[i] < 0) return NULL;
    const korch_value *val = &ctx->g->values[ctx->node->inputs[i]];
    return val->is_constant ? &val->constant : NULL;
}

const korch_shape *fission_in_shape(const korch_fission_ctx *ctx, int i) {
    return &ctx->g->values[ctx->node->inputs[i]].shape;
}

korch_dtype fission_in_dtype(const korch_fission_ctx *ctx, int i) { return ctx->g->values[ctx->node->inputs[i]].dtype; }

bool fission_has_out(const korch_fission_ctx *ctx, int k) { return k < ctx->n_outputs && ctx->node->outputs[k] >= 0; }

const korch_shape *fission_out_shape(const korch_fission_ctx *ctx, int k) {
    return &ctx->g->values[ctx->node->outputs[k]].shape;
}

korch_dtype fission_out_dtype(const korch_fission_ctx *ctx, int k) {
    return ctx->g->values[ctx->node->outputs[k]].dtype;
}

const korch_shape *fission_shape(const korch_fission_ctx *ctx, int v) { return &ctx->pg->values[v].shape; }

static korch_status node_error(const korch_fission_ctx *ctx, korch_status st, const char *what) {
    char nbuf[160];
    return korch_error(st, "node \"%s\" (%s, opset %d): %s", korch_printable(ctx->node->name, nbuf, sizeof nbuf),
                       ctx->node->op_type, ctx->node->opset, what);
}

int fission_axis(const korch_fission_ctx *ctx, int64_t axis, int rank) {
    int a = korch_axis_normalize(axis, rank);
    if (a < 0) node_error(ctx, KORCH_ERR_INVALID_MODEL, "axis out of range");
    return a;
}

int64_t fission_axes_mask(const korch_fission_ctx *ctx, const int64_t *axes, int count, int rank) {
    int64_t mask = 0;
    for (int i = 0; i < count; i++) {
        int a = fission_axis(ctx, axes[i], rank);
        if (a < 0) return -1;
        mask |= (int64_t)1 << a;
    }
    return mask;
}

static bool any_bad(int n, const int *v) {
    for (int i = 0; i < n; i++)
        if (v[i] < 0) return true;
    return false;
}

int fission_unary_ab(korch_fission_ctx *ctx, korch_ew_op op, int x, float alpha, float beta) {
    if (x < 0) return -1;
    return korch_pgraph_elementwise(ctx->pg, op, 1, &x, alpha, beta, KORCH_DTYPE_UNDEFINED);
}

int fission_unary(korch_fission_ctx *ctx, korch_ew_op op, int x) { return fission_unary_ab(ctx, op, x, 0, 0); }

int fission_binary_ab(korch_fission_ctx *ctx, korch_ew_op op, int a, int b, float alpha, float beta) {
    int ins[2] = {a, b};
    if (any_bad(2, ins)) return -1;
    return korch_pgraph_elementwise(ctx->pg, op, 2, ins, alpha, beta, KORCH_DTYPE_UNDEFINED);
}

int fission_binary(korch_fission_ctx *ctx, korch_ew_op op, int a, int b) { return fission_binary_ab(ctx, op, a, b, 0, 0); }

int fission_where(korch_fission_ctx *ctx, int cond, int a, int b) {
    int ins[3] = {cond, a, b};
    if (any_bad(3, ins)) return -1;
    return korch_pgraph_elementwise(ctx->pg, KORCH_EW_WHERE, 3, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
}

int fission_cast(korch_fission_ctx *ctx, int x, korch_dtype to) {
    if (x < 0) return -1;
    return korch_pgraph_elementwise(ctx->pg, KORCH_EW_CAST, 1, &x, 0, 0, to);
}

int fission_reduce(korch_fission_ctx *ctx, korch_reduce_op op, int x, uint32_t axes, bool keepdims) {
    if (x < 0) return -1;
    return korch_pgraph_reduce(ctx->pg, op, x, axes, keepdims);
}

/* Stores v into element i of t (rounding as a C conversion would). */
static void put(korch_tensor *t, int64_t i, double v) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = v; break;
    case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case KORCH_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case KORCH_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
    case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0.0; break;
    default: break;
    }
}

int fission_scalar(korch_fission_ctx *ctx, double v, korch_dtype dtype) {
    korch_tensor t;
    korch_shape scalar = {0};
    if (korch_tensor_alloc(&t, dtype, &scalar) != KORCH_OK) return -1;
    put(&t, 0, v);
    return fission_constant(ctx, &t);
}

int fission_constant(korch_fission_ctx *ctx, korch_tensor *t) {
    int v = korch_pgraph_add_constant(ctx->pg, t);
    if (v < 0) korch_tensor_free(t);
    return v;
}

int fission_channel_view(korch_fission_ctx *ctx, int v, int rank) {
    if (v < 0) return -1;
    const korch_shape *s = fission_shape(ctx, v);
    if (rank <= 2 || s->rank != 1) return v;
    korch_shape view = {.rank = rank - 1};
    view.dims[0] = s->dims[0];
    for (int k = 1; k < rank - 1; k++) view.dims[k] = 1;
    return korch_pgraph_reshape(ctx->pg, v, &view);
}

int fission_squeeze_axes(korch_fission_ctx *ctx, int v, uint32_t axes) {
    if (v < 0) return -1;
    const korch_shape *s = fission_shape(ctx, v);
    korch_shape out = {0};
    for (int k = 0; k < s->rank; k++)
        if (!(axes & (1u << k))) out.dims[out.rank++] = s->dims[k];
    if (out.rank == s->rank) return v;
    return korch_pgraph_reshape(ctx->pg, v, &out);
}

void fission_set_out(korch_fission_ctx *ctx, int k, int v) {
    if (k < ctx->n_outputs) ctx->out[k] = v;
}

korch_status fission_done(korch_fission_ctx *ctx) {
    for (int k = 0; k < ctx->n_outputs; k++)
        if (ctx->node->outputs[k] >= 0 && ctx->out[k] < 0) return KORCH_ERR_INTERNAL;
    return KORCH_OK;
}

korch_status fission_decline(korch_fission_ctx *ctx, const char *reason) {
    ctx->decline_reason = reason;
    return KORCH_ERR_UNSUPPORTED;
}

korch_status fission_rule_unary(korch_fission_ctx *ctx, korch_ew_op op) {
    fission_set_out(ctx, 0, fission_unary(ctx, op, fission_in(ctx, 0)));
    return fission_done(ctx);
}

korch_status fission_rule_binary(korch_fission_ctx *ctx, korch_ew_op op) {
    fission_set_out(ctx, 0, fission_binary(ctx, op, fission_in(ctx, 0), fission_in(ctx, 1)));
    return fission_done(ctx);
}

korch_status fission_rule_alias(korch_fission_ctx *ctx) {
    fission_set_out(ctx, 0, fission_in(ctx, 0));
    return fission_done(ctx);
}
