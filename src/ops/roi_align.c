/* RoiAlign (opset 10-18): Y[r, c] pools region r of image
 * X[batch_indices[r], c] into an output_height x output_width grid of bins.
 * A region is a box [x1, y1, x2, y2] of rois, scaled by spatial_scale;
 * each bin pools a grid of bilinearly interpolated samples, sampling_ratio
 * per side (0: ceil of the bin's size in pixels), by their average (mode
 * avg) or their maximum (mode max). coordinate_transformation_mode (opset
 * 16, default half_pixel) shifts the box by half a pixel; output_half_pixel,
 * the only behaviour before opset 16, does not, and grows a box thinner
 * than a pixel to one pixel. Numerics follow ONNX Runtime, whose loop the
 * ONNX reference copies. Detection heads (Mask R-CNN, torchvision's
 * roi_align) export as this operator. */
#include <math.h>
#include <string.h>

#include "ops/elementwise.h"
#include "ops/flop_count.h"

/* More samples than this on a side of one bin (sampling_ratio, or the
 * adaptive grid of a box of thousands of pixels per bin) is no model's
 * intent: the loop would run for hours. */
#define ROI_MAX_SIDE_SAMPLES 4096

typedef struct roi_params {
    bool max_mode, half_pixel;
    int64_t out_h, out_w, sampling_ratio;
    double spatial_scale;
} roi_params;

static korch_status roi_read_params(const korch_op_ctx *ctx, roi_params *p) {
    char buf[64];
    const char *mode = korch_node_attr_string(ctx->node, "mode", "avg");
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown mode \"%s\"",
                              korch_printable(mode, buf, sizeof buf));
    p->max_mode = strcmp(mode, "max") == 0;
    p->half_pixel = false;
    if (ctx->node->opset >= 16) {
        const char *ctm = korch_node_attr_string(ctx->node, "coordinate_transformation_mode", "half_pixel");
        if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "unknown coordinate_transformation_mode \"%s\"",
                                  korch_printable(ctm, buf, sizeof buf));
        p->half_pixel = strcmp(ctm, "half_pixel") == 0;
    }
    p->out_h = korch_node_attr_int(ctx->node, "output_height", 1);
    p->out_w = korch_node_attr_int(ctx->node, "output_width", 1);
    if (p->out_h < 1 || p->out_w < 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "output_height %lld and output_width %lld must be >= 1",
                              (long long)p->out_h, (long long)p->out_w);
    p->sampling_ratio = korch_node_attr_int(ctx->node, "sampling_ratio", 0);
    if (p->sampling_ratio < 0 || p->sampling_ratio > ROI_MAX_SIDE_SAMPLES)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "sampling_ratio %lld is outside [0, %d]",
                              (long long)p->sampling_ratio, ROI_MAX_SIDE_SAMPLES);
    p->spatial_scale = korch_node_attr_float(ctx->node, "spatial_scale", 1.0f);
    if (!isfinite(p->spatial_scale))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "spatial_scale %g is not finite", p->spatial_scale);
    return KORCH_OK;
}

/* Checks every batch index against X's batch: at inference for constant
 * indices (a model error), at run time for computed ones (bad data). */
static korch_status roi_check_batch_indices(const korch_op_ctx *ctx, korch_status status) {
    const korch_tensor *bi = ctx->inputs[2];
    int64_t batch = ctx->inputs[0]->shape.dims[0], n = korch_tensor_numel(bi);
    for (int64_t r = 0; r < n; r++) {
        int64_t b = korch_tensor_get_i64(bi, r);
        if (b < 0 || b >= batch)
            return korch_op_error(ctx, status, "batch index %lld of roi %lld is outside [0, %lld)", (long long)b,
                                  (long long)r, (long long)batch);
    }
    return KORCH_OK;
}

static bool roi_float(korch_dtype t) { return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64; }

static korch_status infer_roi_align(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1], *bi = ctx->inputs[2];
    if (!roi_float(x->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "X of dtype %s (float32 and float64 only)",
                              korch_dtype_name(x->dtype));
    if (rois->dtype != x->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "rois are %s, X is %s: they must be equal",
                              korch_dtype_name(rois->dtype), korch_dtype_name(x->dtype));
    if (bi->dtype != KORCH_DTYPE_INT64)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "batch_indices must be int64, got %s",
                              korch_dtype_name(bi->dtype));
    if (x->shape.rank != 4)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X must be 4-D (N, C, H, W), has rank %d", x->shape.rank);
    if (rois->shape.rank != 2 || rois->shape.dims[1] != 4)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "rois must be (num_rois, 4)");
    int64_t num_rois = rois->shape.dims[0];
    if (bi->shape.rank != 1 || bi->shape.dims[0] != num_rois)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "batch_indices must be (num_rois) = (%lld)", (long long)num_rois);
    roi_params p;
    KORCH_TRY(roi_read_params(ctx, &p));
    const int64_t *xd = x->shape.dims;
    korch_shape out = {.rank = 4, .dims = {num_rois, xd[1], p.out_h, p.out_w}};
    int64_t n = korch_shape_numel(&out);
    if (n < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    /* a sample inside the map reads a pixel, and an empty map has none */
    if (n > 0 && (xd[2] == 0 || xd[3] == 0))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has an empty image (H = %lld, W = %lld) to sample from",
                              (long long)xd[2], (long long)xd[3]);
    if (bi->data) KORCH_TRY(roi_check_batch_indices(ctx, KORCH_ERR_INVALID_MODEL));
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

/* One arithmetic result in the data's precision. ONNX Runtime computes the
 * box geometry in the data type: the adaptive grid (a ceil), the test for
 * samples off the map and the pixel a sample falls in must see the numbers
 * it sees, or a float32 box a rounding away from a whole size gets one
 * sample row more or less. */
static double roi_t(double v, bool f32) { return f32 ? (double)(float)v : v; }

/* The bilinear taps of one sample: four pixel offsets within the plane and
 * their weights. A sample more than a pixel off the map has no taps. */
typedef struct roi_taps {
    bool inside;
    int64_t pos[4];
    double w[4];
} roi_taps;

static roi_taps roi_sample_taps(double y, double x, int64_t height, int64_t width) {
    roi_taps t = {.inside = false};
    /* NaN (from an infinite bin) is off the map too */
    if (!(y >= -1.0 && y <= (double)height && x >= -1.0 && x <= (double)width)) return t;
    if (y <= 0.0) y = 0.0;
    if (x <= 0.0) x = 0.0;
    int64_t y_lo = (int64_t)y, x_lo = (int64_t)x, y_hi, x_hi;
    if (y_lo >= height - 1) {
        y_hi = y_lo = height - 1;
        y = (double)y_lo;
    } else {
        y_hi = y_lo + 1;
    }
    if (x_lo >= width - 1) {
        x_hi = x_lo = width - 1;
        x = (double)x_lo;
    } else {
        x_hi = x_lo + 1;
    }
    double ly = y - (double)y_lo, lx = x - (double)x_lo, hy = 1.0 - ly, hx = 1.0 - lx;
    t.inside = true;
    t.pos[0] = y_lo * width + x_lo;
    t.pos[1] = y_lo * width + x_hi;
    t.pos[2] = y_hi * width + x_lo;
    t.pos[3] = y_hi * width + x_hi;
    t.w[0] = hy * hx;
    t.w[1] = hy * lx;
    t.w[2] = ly * hx;
    t.w[3] = ly * lx;
    return t;
}

static korch_status run_roi_align(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *rois = ctx->inputs[1], *bi = ctx->inputs[2];
    korch_tensor *y = ctx->outputs[0];
    roi_params p;
    KORCH_TRY(roi_read_params(ctx, &p));
    KORCH_TRY(roi_check_batch_indices(ctx, KORCH_ERR_INVALID_ARGUMENT));
    bool f32 = x->dtype == KORCH_DTYPE_FLOAT32;
    int64_t C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3], num_rois = rois->shape.dims[0];
    double scale = p.spatial_scale, offset = p.half_pixel ? 0.5 : 0.0;
    for (int64_t r = 0; r < num_rois; r++) {
        double box[4];
        for (int k = 0; k < 4; k++) {
            box[k] = roi_t(roi_t(korch_tensor_get_f64(rois, r * 4 + k) * scale, f32) - offset, f32);
            if (!isfinite(box[k]))
                return korch_op_error(ctx, KORCH_ERR_INVALID_ARGUMENT, "roi %lld has a non-finite coordinate",
                                      (long long)r);
        }
        double start_w = box[0], start_h = box[1];
        double roi_w = roi_t(box[2] - start_w, f32), roi_h = roi_t(box[3] - start_h, f32);
        if (!p.half_pixel) {
            roi_w = fmax(roi_w, 1.0);
            roi_h = fmax(roi_h, 1.0);
        }
        double bin_h = roi_t(roi_h / (double)p.out_h, f32), bin_w = roi_t(roi_w / (double)p.out_w, f32);
        double grid_h = (double)p.sampling_ratio, grid_w = grid_h;
        if (p.sampling_ratio == 0) {
            /* a negative (half_pixel) box has no samples: its bins are 0 */
            grid_h = fmax(ceil(bin_h), 0.0);
            grid_w = fmax(ceil(bin_w), 0.0);
        }
        if (!(grid_h <= ROI_MAX_SIDE_SAMPLES && grid_w <= ROI_MAX_SIDE_SAMPLES))
            return korch_op_error(ctx, KORCH_ERR_INVALID_ARGUMENT,
                                  "roi %lld would take %g x %g samples per bin (at most %d a side)", (long long)r,
                                  grid_h, grid_w, ROI_MAX_SIDE_SAMPLES);
        int64_t gh = (int64_t)grid_h, gw = (int64_t)grid_w;
        double count = gh * gw > 0 ? (double)(gh * gw) : 1.0;
        int64_t base = korch_tensor_get_i64(bi, r) * C * H * W;
        for (int64_t c = 0; c < C; c++)
            for (int64_t ph = 0; ph < p.out_h; ph++)
                for (int64_t pw = 0; pw < p.out_w; pw++) {
                    const int64_t plane = base + c * H * W;
                    double acc = 0.0;
                    bool any = false;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double sy = roi_t(roi_t(start_h + roi_t((double)ph * bin_h, f32), f32) +
                                              roi_t(roi_t(((double)iy + 0.5) * bin_h, f32) / (double)gh, f32),
                                          f32);
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double sx = roi_t(roi_t(start_w + roi_t((double)pw * bin_w, f32), f32) +
                                                  roi_t(roi_t(((double)ix + 0.5) * bin_w, f32) / (double)gw, f32),
                                              f32);
                            roi_taps t = roi_sample_taps(sy, sx, H, W);
                            double v[4] = {0.0, 0.0, 0.0, 0.0};
                            if (t.inside)
                                for (int k = 0; k < 4; k++) v[k] = t.w[k] * korch_tensor_get_f64(x, plane + t.pos[k]);
                            if (!p.max_mode) {
                                acc += v[0] + v[1] + v[2] + v[3];
                                continue;
                            }
                            /* ONNX Runtime's max: the largest weighted tap
                             * w * x, not the largest interpolated sample the
                             * spec's wording suggests (ONNX Runtime issue
                             * 6146). The ONNX reference does the same, and
                             * models exported for ONNX Runtime expect it. A
                             * sample off the map counts as 0. */
                            for (int k = 0; k < 4; k++)
                                if (!any || v[k] > acc) {
                                    acc = v[k];
                                    any = true;
                                }
                        }
                    }
                    korch_ew_set_f64(y, ((r * C + c) * p.out_h + ph) * p.out_w + pw, p.max_mode ? acc : acc / count);
                }
    }
    return KORCH_OK;
}

/* Per output element and sample, four multiply-adds. An adaptive grid
 * depends on the boxes, known only at run time: one sample per bin then. */
static int64_t roi_align_flops(const korch_op_ctx *ctx) {
    roi_params p;
    if (roi_read_params(ctx, &p) != KORCH_OK) return 0;
    int64_t samples = p.sampling_ratio > 0 ? p.sampling_ratio * p.sampling_ratio : 1;
    return korch_flops_mul(korch_flops_mul(8, samples), korch_shape_numel(&ctx->outputs[0]->shape));
}

const korch_op_def korch_op_def_RoiAlign = {
    .kind = KORCH_OP_RoiAlign, .op_type = "RoiAlign", .opset_min = 10, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_roi_align, .run = run_roi_align, .flops = roi_align_flops,
};
