/* Resize (opsets 10-18) and Upsample (opsets 7-9): building the plan.
 *
 * Upsample-7 takes scales as an attribute, Upsample-9 and Resize-10 as an
 * input; both use asymmetric coordinates. Resize-11 adds roi, sizes and the
 * coordinate_transformation_mode / nearest_mode attributes, Resize-13 makes
 * roi and scales optional, Resize-18 adds axes, keep_aspect_ratio_policy and
 * antialias. Numerics follow the ONNX reference implementation, which
 * generated the conformance data: coordinates in double, and the
 * "resized length" of align_corners & co. is input length * scale, not the
 * rounded output length. Cubic interpolation is the reference's: Keys'
 * kernel with coefficient cubic_coeff_a over the four nearest inputs
 * (edge-clamped), exclude_outside renormalising without the outside ones. */
#include <math.h>
#include <string.h>

#include "ops/resize.h"

static korch_status parse_modes(const korch_op_ctx *ctx, bool legacy, resize_plan *p) {
    const char *mode = korch_node_attr_string(ctx->node, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0) p->mode = RESIZE_NEAREST;
    else if (strcmp(mode, "linear") == 0 || (legacy && strcmp(mode, "bilinear") == 0)) p->mode = RESIZE_LINEAR;
    else if (strcmp(mode, "cubic") == 0 && !legacy) p->mode = RESIZE_CUBIC;
    else {
        char buf[64];
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown mode \"%s\"", korch_printable(mode, buf, sizeof buf));
    }
    if (legacy) {
        p->coord = COORD_ASYMMETRIC;
        p->rounding = ROUND_LEGACY;
        p->extrapolation = 0.0f;
        return KORCH_OK;
    }
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nearest", "tf_crop_and_resize", "half_pixel_symmetric",
                                         "tf_half_pixel_for_nn"};
    static const char *const roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    int c = 0, r = 0;
    KORCH_TRY(korch_op_attr_choice(ctx, "coordinate_transformation_mode", "half_pixel", coords, 8, &c,
                                   KORCH_ERR_UNSUPPORTED));
    KORCH_TRY(korch_op_attr_choice(ctx, "nearest_mode", "round_prefer_floor", roundings, 4, &r, KORCH_ERR_UNSUPPORTED));
    /* opset 11 spelled it tf_half_pixel_for_nn; later opsets renamed it */
    p->coord = c == 7 ? COORD_TF_HALF_PIXEL_FOR_NEAREST : (resize_coord)c;
    p->rounding = (resize_rounding)r;
    p->extrapolation = korch_node_attr_float(ctx->node, "extrapolation_value", 0.0f);
    p->cubic_a = korch_node_attr_float(ctx->node, "cubic_coeff_a", -0.75f);
    p->exclude_outside = korch_node_attr_int(ctx->node, "exclude_outside", 0) != 0;
    return KORCH_OK;
}

/* Reads a float list from constant input i; absent or empty gives *count 0. */
static korch_status read_floats(const korch_op_ctx *ctx, int i, const char *role, double *out, int cap, int *count) {
    *count = 0;
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_tensor *t = ctx->inputs[i];
    int64_t n = korch_shape_numel(&t->shape);
    if (n == 0) return KORCH_OK;
    KORCH_TRY(korch_op_require_constant(ctx, i, role));
    if (t->dtype != KORCH_DTYPE_FLOAT32 && t->dtype != KORCH_DTYPE_FLOAT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s must be float, got %s", role, korch_dtype_name(t->dtype));
    if (n < 0 || n > cap)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s has %lld elements (at most %d expected)", role,
                              (long long)n, cap);
    for (int64_t k = 0; k < n; k++) out[k] = korch_tensor_get_f64(t, k);
    *count = (int)n;
    return KORCH_OK;
}

/* Where scales/sizes/roi come from, per op and opset. */
typedef struct resize_args {
    int n_axes;
    int64_t axes[KORCH_MAX_RANK];
    int n_scales, n_sizes, n_roi;
    double scales[KORCH_MAX_RANK], roi[2 * KORCH_MAX_RANK];
    int64_t sizes[KORCH_MAX_RANK];
} resize_args;

static korch_status read_args(const korch_op_ctx *ctx, bool upsample, int rank, resize_args *a) {
    int opset = ctx->node->opset;
    a->n_axes = rank;
    for (int k = 0; k < rank; k++) a->axes[k] = k;
    a->n_scales = a->n_sizes = a->n_roi = 0;
    if (upsample && opset < 9) {
        const float *f = NULL;
        int n = korch_node_attr_floats(ctx->node, "scales", &f);
        if (n < 0) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing attribute \"scales\"");
        if (n > KORCH_MAX_RANK) return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "too many scales (%d)", n);
        for (int k = 0; k < n; k++) a->scales[k] = f[k];
        a->n_scales = n;
        return KORCH_OK;
    }
    if (upsample || opset == 10) return read_floats(ctx, 1, "scales", a->scales, KORCH_MAX_RANK, &a->n_scales);
    if (opset >= 18) {
        bool present;
        KORCH_TRY(korch_layout_read_list(ctx, false, 0, "axes", a->axes, KORCH_MAX_RANK, &a->n_axes, &present));
        if (!present) a->n_axes = rank;
        KORCH_TRY(korch_layout_normalize_axes(ctx, a->axes, a->n_axes, rank));
    }
    KORCH_TRY(read_floats(ctx, 2, "scales", a->scales, KORCH_MAX_RANK, &a->n_scales));
    if (korch_op_has_input(ctx, 3) && korch_shape_numel(&ctx->inputs[3]->shape) > 0) {
        bool present;
        KORCH_TRY(korch_layout_read_list(ctx, true, 3, "sizes", a->sizes, KORCH_MAX_RANK, &a->n_sizes, &present));
    }
    /* roi matters only for tf_crop_and_resize; elsewhere it may be anything */
    const char *coord = korch_node_attr_string(ctx->node, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(coord, "tf_crop_and_resize") == 0) {
        KORCH_TRY(read_floats(ctx, 1, "roi", a->roi, 2 * KORCH_MAX_RANK, &a->n_roi));
        if (a->n_roi != 2 * a->n_axes)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "tf_crop_and_resize needs a roi of %d values, got %d",
                                  2 * a->n_axes, a->n_roi);
    }
    return KORCH_OK;
}

korch_status korch_resize_plan(const korch_op_ctx *ctx, resize_plan *p) {
    const korch_tensor *x = ctx->inputs[0];
    bool upsample = strcmp(ctx->node->op_type, "Upsample") == 0;
    bool legacy = upsample || ctx->node->opset < 11;
    int rank = x->shape.rank;
    KORCH_TRY(parse_modes(ctx, legacy, p));
    resize_args a;
    KORCH_TRY(read_args(ctx, upsample, rank, &a));
    if ((a.n_scales > 0) == (a.n_sizes > 0))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "exactly one of scales and sizes must be given");
    int given = a.n_scales > 0 ? a.n_scales : a.n_sizes;
    if (given != a.n_axes)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s has %d entries, expected %d",
                              a.n_scales > 0 ? "scales" : "sizes", given, a.n_axes);
    p->rank = rank;
    for (int d = 0; d < rank; d++) {
        p->in_dims[d] = p->out_dims[d] = x->shape.dims[d];
        p->scale[d] = 1.0;
        p->length[d] = (double)x->shape.dims[d];
        p->roi_start[d] = 0.0;
        p->roi_end[d] = 1.0;
    }
    for (int k = 0; k < a.n_roi / 2; k++) {
        p->roi_start[a.axes[k]] = a.roi[k];
        p->roi_end[a.axes[k]] = a.roi[a.n_axes + k];
    }
    if (a.n_scales > 0) {
        for (int k = 0; k < a.n_axes; k++) {
            int d = (int)a.axes[k];
            double s = a.scales[k], len = s * (double)p->in_dims[d];
            if (!(s > 0) || !(len < (double)KORCH_MAX_ELEMENTS))
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "scale %g for axis %d is not usable", s, d);
            p->scale[d] = s;
            p->length[d] = len;
            p->out_dims[d] = (int64_t)floor(len);
        }
    } else {
        const char *policy = ctx->node->opset >= 18
                                 ? korch_node_attr_string(ctx->node, "keep_aspect_ratio_policy", "stretch")
                                 : "stretch";
        bool stretch = strcmp(policy, "stretch") == 0, smaller = strcmp(policy, "not_smaller") == 0;
        if (!stretch && !smaller && strcmp(policy, "not_larger") != 0) {
            char buf[64];
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown keep_aspect_ratio_policy \"%s\"",
                                  korch_printable(policy, buf, sizeof buf));
        }
        double common = smaller ? 0.0 : INFINITY;
        for (int k = 0; k < a.n_axes; k++) {
            int d = (int)a.axes[k];
            if (a.sizes[k] < 0 || a.sizes[k] > KORCH_MAX_ELEMENTS || (a.sizes[k] > 0 && p->in_dims[d] == 0))
                return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "size %lld for axis %d is not usable",
                                      (long long)a.sizes[k], d);
            double s = p->in_dims[d] ? (double)a.sizes[k] / (double)p->in_dims[d] : 1.0;
            p->scale[d] = s;
            p->length[d] = (double)a.sizes[k];
            p->out_dims[d] = a.sizes[k];
            common = smaller ? fmax(common, s) : fmin(common, s);
        }
        if (!stretch) {
            /* one scale for every resized axis, rounded half up */
            for (int k = 0; k < a.n_axes; k++) {
                int d = (int)a.axes[k];
                p->scale[d] = common;
                p->length[d] = common * (double)p->in_dims[d];
                p->out_dims[d] = (int64_t)(p->length[d] + 0.5);
            }
        }
    }
    for (int d = 0; d < rank; d++)
        if (p->out_dims[d] > 0 && p->in_dims[d] == 0)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "cannot resize the empty axis %d", d);
    if (p->mode != RESIZE_NEAREST && ctx->node->opset >= 18 && korch_node_attr_int(ctx->node, "antialias", 0) != 0)
        for (int d = 0; d < rank; d++)
            if (p->scale[d] < 1.0)
                return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "antialiased downsampling is not supported");
    return KORCH_OK;
}

double korch_resize_source_coord(const resize_plan *p, int d, int64_t o, bool *outside) {
    double y = (double)o, s = p->scale[d], len = p->length[d], in = (double)p->in_dims[d];
    *outside = false;
    switch (p->coord) {
    case COORD_HALF_PIXEL: return (y + 0.5) / s - 0.5;
    case COORD_PYTORCH_HALF_PIXEL: return len > 1.0 ? (y + 0.5) / s - 0.5 : 0.0;
    case COORD_ALIGN_CORNERS: return len == 1.0 ? 0.0 : y * (in - 1.0) / (len - 1.0);
    case COORD_ASYMMETRIC: return y / s;
    case COORD_TF_HALF_PIXEL_FOR_NEAREST: return (y + 0.5) / s;
    case COORD_HALF_PIXEL_SYMMETRIC: {
        /* half_pixel, re-centred for the part of the length lost to rounding */
        double adjustment = (double)p->out_dims[d] / len, center = in / 2.0;
        return center * (1.0 - adjustment) + (y + 0.5) / s - 0.5;
    }
    case COORD_TF_CROP_AND_RESIZE: {
        double a = p->roi_start[d], b = p->roi_end[d], x;
        if (len == 1.0) x = (b - a) * (in - 1.0) / 2.0;
        else x = y * (b - a) * (in - 1.0) / (len - 1.0);
        x += a * (in - 1.0);
        *outside = x < 0.0 || x > in - 1.0;
        return x;
    }
    }
    return 0.0;
}

static korch_status infer_resize(korch_op_ctx *ctx) {
    KORCH_TRY(korch_layout_require_copyable(ctx, 0));
    resize_plan p;
    KORCH_TRY(korch_resize_plan(ctx, &p));
    korch_dtype t = ctx->inputs[0]->dtype;
    if (p.mode != RESIZE_NEAREST && t != KORCH_DTYPE_FLOAT32)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "%s interpolation of %s is not supported (float32 only)",
                              p.mode == RESIZE_LINEAR ? "linear" : "cubic", korch_dtype_name(t));
    korch_shape out = korch_shape_make(p.rank, p.out_dims);
    korch_op_set_output(ctx, 0, t, &out);
    return KORCH_OK;
}

static korch_status run_resize(korch_op_ctx *ctx) {
    resize_plan p;
    KORCH_TRY(korch_resize_plan(ctx, &p));
    /* an empty output needs no index maps (which are sized by the output dims) */
    if (korch_tensor_numel(ctx->outputs[0]) == 0) return KORCH_OK;
    return p.mode == RESIZE_NEAREST  ? korch_resize_run_nearest(ctx, &p)
           : p.mode == RESIZE_LINEAR ? korch_resize_run_linear(ctx, &p)
                                     : korch_resize_run_cubic(ctx, &p);
}

/* per output element and resized axis: about 3 flops (two multiplies, one
 * add) linear, 7 cubic (four multiplies, three adds) */
static int64_t resize_flops(const korch_op_ctx *ctx) {
    resize_plan p;
    if (korch_resize_plan(ctx, &p) != KORCH_OK || p.mode == RESIZE_NEAREST) return 0;
    int64_t n = korch_shape_numel(&ctx->outputs[0]->shape), axes = 0;
    for (int d = 0; d < p.rank; d++) axes += p.out_dims[d] != p.in_dims[d] || p.scale[d] != 1.0;
    return (p.mode == RESIZE_CUBIC ? 7 : 3) * n * axes;
}

const korch_op_def korch_op_def_Resize = {
    .kind = KORCH_OP_Resize, .op_type = "Resize", .opset_min = 10, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_resize, .run = run_resize, .flops = resize_flops,
};

const korch_op_def korch_op_def_Upsample = {
    .kind = KORCH_OP_Upsample, .op_type = "Upsample", .opset_min = 7, .opset_max = 9,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_resize, .run = run_resize, .flops = resize_flops,
};

/* The ONNX reference leaves an axis alone when its scale is 1 (to within
 * 1e-9) and its length and roi are unchanged, whatever the coordinate mode
 * would say (tf_half_pixel_for_nearest would otherwise shift by half a pixel). */
bool korch_resize_axis_is_identity(const resize_plan *p, int d) {
    bool roi_full = p->coord != COORD_TF_CROP_AND_RESIZE ||
                    (fabs(p->roi_start[d]) <= 1e-9 && fabs(p->roi_end[d] - 1.0) <= 1e-9);
    return fabs(p->scale[d] - 1.0) <= 1e-9 && p->out_dims[d] == p->in_dims[d] && roi_full;
}

int64_t korch_resize_clamp_index(double x, int64_t len) {
    if (!(x > 0.0)) return 0; /* also NaN */
    if (x > (double)(len - 1)) return len - 1;
    return (int64_t)x;
}

int64_t korch_resize_nearest_index(const resize_plan *p, int d, int64_t o) {
    bool outside;
    double x = korch_resize_source_coord(p, d, o, &outside);
    if (outside) return -1;
    double f = floor(x), r = x - f, pick;
    switch (p->rounding) {
    case ROUND_PREFER_FLOOR: pick = r <= 0.5 ? f : f + 1.0; break;
    case ROUND_PREFER_CEIL: pick = r < 0.5 ? f : f + 1.0; break;
    case ROUND_FLOOR: pick = f; break;
    case ROUND_CEIL: pick = ceil(x); break;
    case ROUND_LEGACY: pick = p->scale[d] < 1.0 ? ceil(x) : f; break;
    default: pick = f; break;
    }
    return korch_resize_clamp_index(pick, p->in_dims[d]);
}

/* Keys' cubic convolution weights for a position t in (0, 1] past tap 1 of
 * the four taps (-1, 0, 1, 2 relative to the base), as the ONNX reference
 * writes them. */
static void cubic_weights(double a, double t, double w[4]) {
    double u = 1.0 + t, v = 1.0 - t, z = 2.0 - t;
    w[0] = ((a * u - 5.0 * a) * u + 8.0 * a) * u - 4.0 * a;
    w[1] = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    w[2] = ((a + 2.0) * v - (a + 3.0)) * v * v + 1.0;
    w[3] = ((a * z - 5.0 * a) * z + 8.0 * a) * z - 4.0 * a;
}

bool korch_resize_cubic_taps(const resize_plan *p, int d, int64_t o, int64_t idx[4], double w[4]) {
    bool outside;
    double x = korch_resize_source_coord(p, d, o, &outside);
    if (outside) return false;
    /* the reference takes the four nearest inputs, preferring the lower on
     * ties: at an integer x the taps are x-2..x+1 with t = 1 */
    double base = floor(x);
    if (base == x) base -= 1.0;
    cubic_weights(p->cubic_a, x - base, w);
    int64_t len = p->in_dims[d];
    double sum = 0.0;
    for (int k = 0; k < 4; k++) {
        double at = base - 1.0 + k;
        if (p->exclude_outside && (at < 0.0 || at > (double)(len - 1))) w[k] = 0.0;
        sum += w[k];
        idx[k] = korch_resize_clamp_index(at, len);
    }
    if (p->exclude_outside)
        for (int k = 0; k < 4; k++) w[k] /= sum;
    return true;
}
