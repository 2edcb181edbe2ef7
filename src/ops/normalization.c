/* Normalisation: LayerNormalization (opset 17), InstanceNormalization,
 * MeanVarianceNormalization and BatchNormalization (inference only).
 * Statistics are computed in double, two-pass (mean, then the mean of squared
 * deviations), so they do not suffer the cancellation of E[x^2] - E[x]^2. */
#include <stdlib.h>

#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/reduce_layout.h"

/* Reads a float tensor (any float dtype) into doubles. */
static void load_doubles(const korch_tensor *t, double *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = korch_tensor_get_f64(t, i);
}

/* y[i] = (x[i] - mean) * inv_std * scale[i * step] + bias[i * step] over one
 * row of n: step 1 for per-element parameters, 0 for one per row. bias may be NULL. */
#define NORMALIZE_ROW(T)                                                                                       \
    static void normalize_row_##T(const T *x, T *y, int64_t n, double eps, const double *scale,                \
                                  const double *bias, int64_t step, double *mean_out,                          \
                                  double *inv_std_out) {                                                       \
        double sum = 0, sq = 0;                                                                                \
        for (int64_t i = 0; i < n; i++) sum += x[i];                                                           \
        double mean = n ? sum / (double)n : 0;                                                                 \
        for (int64_t i = 0; i < n; i++) sq += ((double)x[i] - mean) * ((double)x[i] - mean);                   \
        double inv_std = 1.0 / sqrt((n ? sq / (double)n : 0) + eps);                                           \
        for (int64_t i = 0; i < n; i++)                                                                        \
            y[i] = (T)(((double)x[i] - mean) * inv_std * scale[i * step] + (bias ? bias[i * step] : 0.0));     \
        *mean_out = mean;                                                                                      \
        *inv_std_out = inv_std;                                                                                \
    }
NORMALIZE_ROW(float)
NORMALIZE_ROW(double)

/* ---- LayerNormalization ---- */

static korch_status layer_norm_axis(const korch_op_ctx *ctx, int *axis) {
    int rank = ctx->inputs[0]->shape.rank;
    int64_t attr = korch_node_attr_int(ctx->node, "axis", -1);
    *axis = korch_axis_normalize(attr, rank);
    if (*axis < 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d", (long long)attr,
                              rank);
    return KORCH_OK;
}

/* Scale and B must vary only over the normalised dims X[axis:]. */
static korch_status check_affine(const korch_op_ctx *ctx, int i, int axis, const char *role) {
    char sx[96], sp[96];
    const korch_shape *x = &ctx->inputs[0]->shape, *p = &ctx->inputs[i]->shape;
    korch_shape out;
    if (!korch_shape_broadcast(x, p, &out) || !korch_shape_equal(&out, x))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s of shape %s does not broadcast to input shape %s", role,
                              korch_shape_format(p, sp, sizeof sp), korch_shape_format(x, sx, sizeof sx));
    for (int d = 0; d < p->rank; d++)
        if (x->rank - p->rank + d < axis && p->dims[d] != 1)
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                  "%s of shape %s varies over dims before axis %d; korch supports %s over X[axis:]",
                                  role, korch_shape_format(p, sp, sizeof sp), axis, role);
    return KORCH_OK;
}

static korch_status infer_layer_norm(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    KORCH_TRY(korch_ew_require_same_dtype(ctx, 0, 2));
    int axis;
    KORCH_TRY(layer_norm_axis(ctx, &axis));
    KORCH_TRY(check_affine(ctx, 1, axis, "Scale"));
    if (korch_op_has_input(ctx, 2)) KORCH_TRY(check_affine(ctx, 2, axis, "B"));
    int64_t stash = korch_node_attr_int(ctx->node, "stash_type", 1);
    if (stash != KORCH_DTYPE_FLOAT32 && stash != KORCH_DTYPE_FLOAT64)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "stash_type %lld is not supported (float32 or float64)",
                              (long long)stash);
    const korch_shape *x = &ctx->inputs[0]->shape;
    korch_shape stats = *x;
    for (int d = axis; d < x->rank; d++) stats.dims[d] = 1;
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, x);
    korch_op_set_output(ctx, 1, (korch_dtype)stash, &stats);
    korch_op_set_output(ctx, 2, (korch_dtype)stash, &stats);
    return KORCH_OK;
}

/* Expands Scale or B (broadcast over X[axis:]) into n doubles. */
static void expand_affine(const korch_tensor *p, const korch_shape *x, int axis, double *out, int64_t n) {
    korch_shape norm = {.rank = x->rank - axis};
    for (int d = axis; d < x->rank; d++) norm.dims[d - axis] = x->dims[d];
    korch_shape pshape = p->shape; /* drop leading dims (all 1, checked) beyond norm's rank */
    if (pshape.rank > norm.rank) {
        int drop = pshape.rank - norm.rank;
        for (int d = 0; d < norm.rank; d++) pshape.dims[d] = pshape.dims[d + drop];
        pshape.rank = norm.rank;
    }
    const korch_shape *shapes[1] = {&pshape};
    korch_broadcast_iter it;
    korch_broadcast_iter_init(&it, &norm, 1, shapes);
    for (int64_t i = 0; i < n; i++) {
        out[i] = korch_tensor_get_f64(p, it.offset[0]);
        korch_broadcast_iter_next(&it);
    }
}

static korch_status run_layer_norm(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    int axis;
    KORCH_TRY(layer_norm_axis(ctx, &axis));
    int64_t rows = 1, n = 1;
    for (int d = 0; d < axis; d++) rows *= x->shape.dims[d];
    for (int d = axis; d < x->shape.rank; d++) n *= x->shape.dims[d];
    double eps = korch_node_attr_float(ctx->node, "epsilon", 1e-5f);
    double *affine = malloc(2 * (size_t)(n ? n : 1) * sizeof *affine);
    if (!affine) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    double *scale = affine, *bias = NULL;
    expand_affine(ctx->inputs[1], &x->shape, axis, scale, n);
    if (korch_op_has_input(ctx, 2)) {
        bias = affine + n;
        expand_affine(ctx->inputs[2], &x->shape, axis, bias, n);
    }
    korch_tensor *y = ctx->outputs[0];
    korch_tensor *mean_t = ctx->n_outputs > 1 ? ctx->outputs[1] : NULL;
    korch_tensor *inv_t = ctx->n_outputs > 2 ? ctx->outputs[2] : NULL;
#pragma omp parallel for schedule(static) if (rows * n >= KORCH_EW_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++) {
        double mean, inv_std;
        if (x->dtype == KORCH_DTYPE_FLOAT32)
            normalize_row_float((const float *)x->data + r * n, (float *)y->data + r * n, n, eps, scale, bias, 1, &mean,
                                &inv_std);
        else
            normalize_row_double((const double *)x->data + r * n, (double *)y->data + r * n, n, eps, scale, bias,
                                 1, &mean, &inv_std);
        if (mean_t) korch_ew_set_f64(mean_t, r, mean);
        if (inv_t) korch_ew_set_f64(inv_t, r, inv_std);
    }
    free(affine);
    return KORCH_OK;
}

/* mean 1, variance 3, normalise 2, scale and shift 2 per element. */
static int64_t norm_flops(const korch_op_ctx *ctx) { return 8 * korch_tensor_numel(ctx->inputs[0]); }

const korch_op_def korch_op_def_LayerNormalization = {
    .kind = KORCH_OP_LayerNormalization, .op_type = "LayerNormalization", .opset_min = 17, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 3,
    .infer = infer_layer_norm, .run = run_layer_norm, .flops = norm_flops,
};

/* ---- per-channel parameters: InstanceNormalization, BatchNormalization ---- */

/* Input i must be a float vector of `count` elements (`role` names it). */
static korch_status check_param(const korch_op_ctx *ctx, int i, int64_t count, const char *role) {
    char name[160], sp[96];
    KORCH_TRY(korch_ew_require(ctx, i, korch_ew_is_float, "float32 and float64"));
    const korch_tensor *t = ctx->inputs[i];
    if (korch_tensor_numel(t) != count || t->shape.rank > 1)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s input \"%s\" has shape %s; expected [%lld] (one per channel)",
                              role, korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                              korch_shape_format(&t->shape, sp, sizeof sp), (long long)count);
    return KORCH_OK;
}

static korch_status require_channels(const korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    if (ctx->inputs[0]->shape.rank < 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "input has rank %d; expected N x C x ...",
                              ctx->inputs[0]->shape.rank);
    return KORCH_OK;
}

static korch_status infer_instance_norm(korch_op_ctx *ctx) {
    KORCH_TRY(require_channels(ctx));
    int64_t c = ctx->inputs[0]->shape.dims[1];
    KORCH_TRY(check_param(ctx, 1, c, "scale"));
    KORCH_TRY(check_param(ctx, 2, c, "B"));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status run_instance_norm(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t n = x->shape.dims[0], c = x->shape.dims[1], spatial = 1;
    for (int d = 2; d < x->shape.rank; d++) spatial *= x->shape.dims[d];
    double eps = korch_node_attr_float(ctx->node, "epsilon", 1e-5f);
    double *params = malloc(2 * (size_t)(c ? c : 1) * sizeof *params);
    if (!params) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    load_doubles(ctx->inputs[1], params, c);
    load_doubles(ctx->inputs[2], params + c, c);
#pragma omp parallel for schedule(static) if (n * c * spatial >= KORCH_EW_PARALLEL_MIN)
    for (int64_t r = 0; r < n * c; r++) {
        const double *scale = params + r % c, *bias = params + c + r % c;
        double mean, inv_std;
        if (x->dtype == KORCH_DTYPE_FLOAT32)
            normalize_row_float((const float *)x->data + r * spatial, (float *)y->data + r * spatial, spatial, eps,
                                scale, bias, 0, &mean, &inv_std);
        else
            normalize_row_double((const double *)x->data + r * spatial, (double *)y->data + r * spatial, spatial, eps,
                                 scale, bias, 0, &mean, &inv_std);
    }
    free(params);
    return KORCH_OK;
}

const korch_op_def korch_op_def_InstanceNormalization = {
    .kind = KORCH_OP_InstanceNormalization, .op_type = "InstanceNormalization", .opset_min = 1, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_instance_norm, .run = run_instance_norm, .flops = norm_flops,
};

/* ---- MeanVarianceNormalization: y = (x - mean) / (std + 1e-9) over `axes`
 * (default [0, 2, 3]), as the ONNX function body defines it ---- */

static korch_status mvn_mask(const korch_op_ctx *ctx, bool *mask) {
    static const int64_t default_axes[3] = {0, 2, 3};
    const int64_t *axes = default_axes;
    int rank = ctx->inputs[0]->shape.rank, count = korch_node_attr_ints(ctx->node, "axes", &axes);
    if (count < 0) count = 3, axes = default_axes;
    for (int d = 0; d < rank; d++) mask[d] = false;
    for (int i = 0; i < count; i++) {
        int d = korch_axis_normalize(axes[i], rank);
        if (d < 0 || mask[d])
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d or repeated",
                                  (long long)axes[i], rank);
        mask[d] = true;
    }
    return KORCH_OK;
}

static korch_status infer_mvn(korch_op_ctx *ctx) {
    KORCH_TRY(korch_ew_require(ctx, 0, korch_ew_is_float, "float32 and float64"));
    bool mask[KORCH_MAX_RANK];
    KORCH_TRY(mvn_mask(ctx, mask));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

#define MVN_GROUP(T)                                                                                           \
    static void mvn_##T(const T *x, T *y, const korch_reduce_layout *L, int64_t base) {                        \
        double sum = 0, sq = 0, n = (double)L->red_count;                                                      \
        KORCH_REDUCE_VISIT(T, x, L, base, sum += v);                                                           \
        double mean = sum / n;                                                                                 \
        KORCH_REDUCE_VISIT(T, x, L, base, sq += ((double)v - mean) * ((double)v - mean));                      \
        double scale = 1.0 / (sqrt(sq / n) + 1e-9);                                                            \
        KORCH_REDUCE_VISIT(T, x, L, base, y[at] = (T)(((double)v - mean) * scale));                            \
    }
MVN_GROUP(float)
MVN_GROUP(double)

static korch_status run_mvn(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    bool mask[KORCH_MAX_RANK];
    KORCH_TRY(mvn_mask(ctx, mask));
    korch_reduce_layout L;
    korch_reduce_layout_init(&L, &x->shape, mask);
    void *y = ctx->outputs[0]->data;
#pragma omp parallel for schedule(static) if (L.out_count > 1 && L.out_count * L.red_count >= KORCH_EW_PARALLEL_MIN)
    for (int64_t o = 0; o < L.out_count; o++) {
        int64_t base = korch_reduce_base(&L, o);
        if (x->dtype == KORCH_DTYPE_FLOAT32) mvn_float(x->data, y, &L, base);
        else mvn_double(x->data, y, &L, base);
    }
    return KORCH_OK;
}

const korch_op_def korch_op_def_MeanVarianceNormalization = {
    .kind = KORCH_OP_MeanVarianceNormalization, .op_type = "MeanVarianceNormalization", .opset_min = 9,
    .opset_max = 18, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_mvn, .run = run_mvn, .flops = norm_flops,
};

/* ---- BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + B ---- */

/* Training mode (opset 14+ `training_mode`, or any of the running-statistics
 * outputs before) updates statistics; korch only runs inference. Opsets < 7
 * also carry `is_test`, which korch ignores as onnxruntime does: with only Y
 * requested, inference with the stored statistics is the meaning in practice. */
static korch_status check_inference_mode(const korch_op_ctx *ctx) {
    if (korch_node_attr_int(ctx->node, "training_mode", 0) != 0)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    for (int k = 1; k < ctx->n_outputs; k++)
        if (ctx->outputs[k])
            return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                                  "output %d (running statistics) is a training output; korch runs inference only", k);
    return KORCH_OK;
}

/* Per-channel parameters, or per-feature ones (C x D1 x ... x Dn) when a
 * pre-opset-9 node sets spatial=0. Returns the element count expected. */
static int64_t batch_norm_param_count(const korch_op_ctx *ctx) {
    const korch_shape *x = &ctx->inputs[0]->shape;
    if (ctx->node->opset < 9 && korch_node_attr_int(ctx->node, "spatial", 1) == 0) {
        int64_t count = 1;
        for (int d = 1; d < x->rank; d++) count *= x->dims[d];
        return count;
    }
    return x->dims[1];
}

static korch_status infer_batch_norm(korch_op_ctx *ctx) {
    KORCH_TRY(require_channels(ctx));
    KORCH_TRY(check_inference_mode(ctx));
    int64_t count = batch_norm_param_count(ctx);
    static const char *const roles[] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 1; i <= 4; i++) {
        if (!korch_op_has_input(ctx, i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing %s input", roles[i - 1]);
        KORCH_TRY(korch_ew_require(ctx, i, korch_ew_is_float, "float32 and float64"));
        if (korch_tensor_numel(ctx->inputs[i]) != count) {
            char name[160], sp[96];
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s input \"%s\" has shape %s; expected %lld elements",
                                  roles[i - 1], korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                                  korch_shape_format(&ctx->inputs[i]->shape, sp, sizeof sp), (long long)count);
        }
    }
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &ctx->inputs[0]->shape);
    return KORCH_OK;
}

static korch_status run_batch_norm(korch_op_ctx *ctx) {
    KORCH_TRY(check_inference_mode(ctx));
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    int64_t count = batch_norm_param_count(ctx), total = korch_tensor_numel(x);
    int64_t per_param = 1; /* consecutive elements sharing one parameter: a block */
    for (int d = 2; d < x->shape.rank; d++) per_param *= x->shape.dims[d];
    if (count != x->shape.dims[1]) per_param = 1; /* spatial=0: one parameter per element of a sample */
    double eps = korch_node_attr_float(ctx->node, "epsilon", 1e-5f);
    double *p = malloc(4 * (size_t)(count ? count : 1) * sizeof *p);
    if (!p) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    double *mul = p, *add = p + count, *tmp = p + 2 * count;
    /* y = x * mul + add with mul = scale / sqrt(var + eps), add = B - mean * mul */
    load_doubles(ctx->inputs[1], mul, count);
    load_doubles(ctx->inputs[2], add, count);
    load_doubles(ctx->inputs[3], tmp, count);
    load_doubles(ctx->inputs[4], tmp + count, count);
    for (int64_t c = 0; c < count; c++) {
        mul[c] /= sqrt(tmp[count + c] + eps);
        add[c] -= tmp[c] * mul[c];
    }
    int64_t blocks = per_param ? total / per_param : 0;
#pragma omp parallel for schedule(static) if (total >= KORCH_EW_PARALLEL_MIN)
    for (int64_t b = 0; b < blocks; b++) {
        double m = mul[b % count], a = add[b % count];
        int64_t begin = b * per_param;
        if (x->dtype == KORCH_DTYPE_FLOAT32) {
            const float *xs = (const float *)x->data + begin;
            float *ys = (float *)y->data + begin;
            for (int64_t i = 0; i < per_param; i++) ys[i] = (float)(xs[i] * m + a);
        } else {
            const double *xs = (const double *)x->data + begin;
            double *ys = (double *)y->data + begin;
            for (int64_t i = 0; i < per_param; i++) ys[i] = xs[i] * m + a;
        }
    }
    free(p);
    return KORCH_OK;
}

static int64_t batch_norm_flops(const korch_op_ctx *ctx) { return 2 * korch_tensor_numel(ctx->inputs[0]); }

const korch_op_def korch_op_def_BatchNormalization = {
    .kind = KORCH_OP_BatchNormalization, .op_type = "BatchNormalization", .opset_min = 1, .opset_max = 18,
    .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 5,
    .infer = infer_batch_norm, .run = run_batch_norm, .flops = batch_norm_flops,
};
