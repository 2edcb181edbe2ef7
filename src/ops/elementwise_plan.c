/* The broadcast loop plan and the shape/dtype checks shared by elementwise ops. */
#include <string.h>

#include "ops/broadcast.h"
#include "ops/elementwise.h"

/* Work unit of one thread: long enough to amortise the index arithmetic of a
 * piece, short enough to split one long row between the cores. */
#define EW_CHUNK ((int64_t)1 << 14)

void korch_ew_plan_init(korch_ew_plan *plan, const korch_shape *out, int n_inputs, const korch_shape *const *inputs) {
    int64_t strides[KORCH_EW_MAX_INPUTS][KORCH_MAX_RANK];
    memset(plan, 0, sizeof *plan);
    plan->n_inputs = n_inputs;
    for (int k = 0; k < n_inputs; k++) korch_broadcast_strides(inputs[k], out, strides[k]);

    /* Drop size-1 dims, then merge neighbours that every input walks in step. */
    int rank = 0;
    int64_t dims[KORCH_MAX_RANK], st[KORCH_EW_MAX_INPUTS][KORCH_MAX_RANK];
    for (int i = 0; i < out->rank; i++) {
        if (out->dims[i] == 1) continue;
        bool merge = rank > 0;
        for (int k = 0; k < n_inputs && merge; k++)
            if (st[k][rank - 1] != strides[k][i] * out->dims[i]) merge = false;
        if (merge) {
            dims[rank - 1] *= out->dims[i];
            for (int k = 0; k < n_inputs; k++) st[k][rank - 1] = strides[k][i];
        } else {
            dims[rank] = out->dims[i];
            for (int k = 0; k < n_inputs; k++) st[k][rank] = strides[k][i];
            rank++;
        }
    }
    plan->inner = 1;
    int64_t rows = 1;
    if (rank > 0) {
        plan->inner = dims[rank - 1];
        for (int k = 0; k < n_inputs; k++) plan->step[k] = st[k][rank - 1];
        rank--;
    }
    plan->rank = rank;
    for (int i = 0; i < rank; i++) {
        plan->dims[i] = dims[i];
        rows *= dims[i];
        for (int k = 0; k < n_inputs; k++) plan->strides[k][i] = st[k][i];
    }
    if (plan->inner == 0 || rows == 0) return; /* empty output: no pieces */
    plan->pieces_per_row = (plan->inner + EW_CHUNK - 1) / EW_CHUNK;
    plan->chunk = (plan->inner + plan->pieces_per_row - 1) / plan->pieces_per_row;
    plan->pieces = rows * plan->pieces_per_row;
    plan->parallel = rows * plan->inner >= KORCH_EW_PARALLEL_MIN;
}

void korch_ew_plan_piece(const korch_ew_plan *plan, int64_t t, int64_t *begin, int64_t *end, int64_t *offsets) {
    int64_t row = t / plan->pieces_per_row;
    int64_t start = (t % plan->pieces_per_row) * plan->chunk;
    int64_t stop = start + plan->chunk < plan->inner ? start + plan->chunk : plan->inner;
    *begin = row * plan->inner + start;
    *end = row * plan->inner + stop;
    for (int k = 0; k < plan->n_inputs; k++) offsets[k] = start * plan->step[k];
    for (int i = plan->rank - 1; i >= 0; i--) {
        int64_t idx = row % plan->dims[i];
        row /= plan->dims[i];
        for (int k = 0; k < plan->n_inputs; k++) offsets[k] += idx * plan->strides[k][i];
    }
    for (int k = plan->n_inputs; k < KORCH_EW_MAX_INPUTS; k++) offsets[k] = 0;
}

bool korch_ew_is_float(korch_dtype d) { return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64; }

bool korch_ew_is_signed(korch_dtype d) {
    return d == KORCH_DTYPE_INT8 || d == KORCH_DTYPE_INT16 || d == KORCH_DTYPE_INT32 || d == KORCH_DTYPE_INT64;
}

bool korch_ew_is_unsigned(korch_dtype d) {
    return d == KORCH_DTYPE_UINT8 || d == KORCH_DTYPE_UINT16 || d == KORCH_DTYPE_UINT32 || d == KORCH_DTYPE_UINT64;
}

bool korch_ew_is_numeric(korch_dtype d) {
    return korch_ew_is_float(d) || korch_ew_is_signed(d) || korch_ew_is_unsigned(d);
}

korch_status korch_ew_require(const korch_op_ctx *ctx, int i, bool (*ok)(korch_dtype), const char *what) {
    char name[160];
    if (!korch_op_has_input(ctx, i)) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing input %d", i);
    korch_dtype d = ctx->inputs[i]->dtype;
    if (!ok(d))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "input %d \"%s\" has dtype %s; korch supports %s here", i,
                              korch_printable(korch_op_input_name(ctx, i), name, sizeof name), korch_dtype_name(d),
                              what);
    return KORCH_OK;
}

korch_status korch_ew_require_same_dtype(const korch_op_ctx *ctx, int first, int last) {
    char name[160];
    korch_dtype d = ctx->inputs[first]->dtype;
    for (int i = first + 1; i <= last && i < ctx->n_inputs; i++) {
        if (!korch_op_has_input(ctx, i)) continue;
        if (ctx->inputs[i]->dtype != d)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "input %d \"%s\" has dtype %s, but input %d has %s", i,
                                  korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                                  korch_dtype_name(ctx->inputs[i]->dtype), first, korch_dtype_name(d));
    }
    return KORCH_OK;
}

/* Opsets 1-6: B is broadcast onto A only if `broadcast` is set; its shape must
 * then be a contiguous run of A's dims starting at `axis` (or A's suffix). */
static korch_status legacy_shapes(const korch_op_ctx *ctx, korch_shape *a, korch_shape *b, korch_shape *out) {
    char sa[96], sb[96];
    korch_shape_format(a, sa, sizeof sa);
    korch_shape_format(b, sb, sizeof sb);
    if (korch_node_attr_int(ctx->node, "broadcast", 0) == 0) {
        if (!korch_shape_equal(a, b))
            return korch_op_error(ctx, KORCH_ERR_SHAPE,
                                  "shapes %s and %s differ and the \"broadcast\" attribute is not set", sa, sb);
        *out = *a;
        return KORCH_OK;
    }
    if (b->rank > a->rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot broadcast %s onto the lower-rank %s", sb, sa);
    int64_t axis = korch_node_attr_int(ctx->node, "axis", a->rank - b->rank);
    if (korch_shape_numel(b) == 1) axis = a->rank - b->rank; /* a scalar goes anywhere */
    if (axis < 0) axis += a->rank; /* negative axes count from the end, as in later opsets */
    if (axis < 0 || axis + b->rank > a->rank)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "axis %lld does not place %s inside %s",
                              (long long)korch_node_attr_int(ctx->node, "axis", 0), sb, sa);
    korch_shape aligned = {.rank = a->rank};
    for (int i = 0; i < a->rank; i++) aligned.dims[i] = 1;
    for (int i = 0; i < b->rank; i++) {
        int64_t d = b->dims[i], target = a->dims[axis + i];
        if (d != target && d != 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s does not match %s at axis %lld", sb, sa, (long long)axis);
        aligned.dims[axis + i] = d;
    }
    *b = aligned;
    *out = *a;
    return KORCH_OK;
}

korch_status korch_ew_binary_shapes(const korch_op_ctx *ctx, korch_shape *a, korch_shape *b, korch_shape *out) {
    *a = ctx->inputs[0]->shape;
    *b = ctx->inputs[1]->shape;
    if (ctx->node->opset < 7) return legacy_shapes(ctx, a, b, out);
    char sa[96], sb[96];
    if (!korch_shape_broadcast(a, b, out))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "shapes %s and %s do not broadcast",
                              korch_shape_format(a, sa, sizeof sa), korch_shape_format(b, sb, sizeof sb));
    return KORCH_OK;
}

korch_status korch_ew_broadcast_all(const korch_op_ctx *ctx, int first, int last, korch_shape *out) {
    char sa[96], sb[96], name[160];
    *out = ctx->inputs[first]->shape;
    for (int i = first + 1; i <= last && i < ctx->n_inputs; i++) {
        if (!korch_op_has_input(ctx, i)) continue;
        korch_shape next;
        if (!korch_shape_broadcast(out, &ctx->inputs[i]->shape, &next))
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "input %d \"%s\" of shape %s does not broadcast with %s", i,
                                  korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                                  korch_shape_format(&ctx->inputs[i]->shape, sa, sizeof sa),
                                  korch_shape_format(out, sb, sizeof sb));
        *out = next;
    }
    return KORCH_OK;
}

/* Rounds toward zero and clamps to [lo, hi]; NaN -> 0. */
static int64_t saturate_range(double v, int64_t lo, int64_t hi) {
    int64_t x = korch_ew_saturate_i64(v);
    return x < lo ? lo : x > hi ? hi : x;
}

void korch_ew_set_f64(korch_tensor *t, int64_t i, double v) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = v; break;
    case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)saturate_range(v, INT8_MIN, INT8_MAX); break;
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)saturate_range(v, 0, UINT8_MAX); break;
    case KORCH_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)saturate_range(v, INT16_MIN, INT16_MAX); break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)saturate_range(v, 0, UINT16_MAX); break;
    case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)saturate_range(v, INT32_MIN, INT32_MAX); break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)saturate_range(v, 0, UINT32_MAX); break;
    case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = korch_ew_saturate_i64(v); break;
    case KORCH_DTYPE_UINT64: ((uint64_t *)t->data)[i] = korch_ew_saturate_u64(v); break;
    default: break;
    }
}

void korch_ew_set_i64(korch_tensor *t, int64_t i, int64_t v) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case KORCH_DTYPE_FLOAT64: ((double *)t->data)[i] = (double)v; break;
    case KORCH_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    case KORCH_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case KORCH_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case KORCH_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case KORCH_DTYPE_UINT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case KORCH_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case KORCH_DTYPE_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
    case KORCH_DTYPE_INT64: ((int64_t *)t->data)[i] = v; break;
    case KORCH_DTYPE_UINT64: ((uint64_t *)t->data)[i] = (uint64_t)v; break;
    default: break;
    }
}
