/* GridSample (opset 16-18): Y[n, c, h, w] is image X[n, c] sampled at the
 * point grid[n, h, w] = (x, y), in coordinates normalised so that -1 and 1
 * are the image's edges (align_corners=0) or the centres of its corner
 * pixels (align_corners=1). mode is nearest, bilinear or bicubic (Keys'
 * cubic, a = -0.75); padding_mode says what a tap outside the image reads:
 * zero, the nearest border pixel, or the image reflected at its edges.
 * X is 4-D (N, C, H, W), the grid (N, Hout, Wout, 2); opset 20's N-D form
 * and renamed modes are beyond korch's opsets. Numerics follow ONNX
 * Runtime, whose algorithm the ONNX reference copies. PyTorch exports
 * F.grid_sample as this operator (spatial transformers, optical-flow
 * warping, deformable attention). */
#include <math.h>
#include <string.h>

#include "ops/elementwise.h"
#include "ops/flop_count.h"

typedef enum gs_mode { GS_BILINEAR, GS_NEAREST, GS_BICUBIC } gs_mode;
typedef enum gs_padding { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_padding;

typedef struct gs_params {
    gs_mode mode;
    gs_padding padding;
    bool align_corners;
} gs_params;

/* One image plane X[n, c] and the box a reflection folds positions into:
 * the outer pixel edges, or the corner centres with align_corners. */
typedef struct gs_plane {
    const korch_tensor *x;
    int64_t base, height, width;
    gs_padding padding;
    double x_min, x_max, y_min, y_max;
} gs_plane;

static korch_status gs_read_params(const korch_op_ctx *ctx, gs_params *p) {
    static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
    static const char *const paddings[] = {"zeros", "border", "reflection"};
    int mode = 0, padding = 0;
    KORCH_TRY(korch_op_attr_choice(ctx, "mode", "bilinear", modes, 3, &mode, KORCH_ERR_INVALID_MODEL));
    KORCH_TRY(korch_op_attr_choice(ctx, "padding_mode", "zeros", paddings, 3, &padding, KORCH_ERR_INVALID_MODEL));
    int64_t ac = korch_node_attr_int(ctx->node, "align_corners", 0);
    if (ac != 0 && ac != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "align_corners must be 0 or 1, is %lld", (long long)ac);
    p->mode = (gs_mode)mode;
    p->padding = (gs_padding)padding;
    p->align_corners = ac == 1;
    return KORCH_OK;
}

static bool gs_float(korch_dtype t) { return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64; }

static korch_status infer_grid_sample(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
    if (!gs_float(x->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "X of dtype %s (float32 and float64 only)",
                              korch_dtype_name(x->dtype));
    if (!gs_float(grid->dtype))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "grid of dtype %s (float32 and float64 only)",
                              korch_dtype_name(grid->dtype));
    if (x->shape.rank != 4)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X must be 4-D (N, C, H, W), has rank %d", x->shape.rank);
    const int64_t *xd = x->shape.dims, *gd = grid->shape.dims;
    if (grid->shape.rank != 4 || gd[0] != xd[0] || gd[3] != 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "grid must be (N, Hout, Wout, 2) with X's N = %lld",
                              (long long)xd[0]);
    gs_params p;
    KORCH_TRY(gs_read_params(ctx, &p));
    korch_shape out = {.rank = 4, .dims = {xd[0], xd[1], gd[1], gd[2]}};
    int64_t n = korch_shape_numel(&out);
    if (n < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    /* every padding mode reads some pixel of the image, or none exists */
    if (n > 0 && (xd[2] == 0 || xd[3] == 0))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has an empty image (H = %lld, W = %lld) to sample from",
                              (long long)xd[2], (long long)xd[3]);
    korch_op_set_output(ctx, 0, x->dtype, &out);
    return KORCH_OK;
}

/* The pixel coordinate of normalised coordinate v. A float32 grid is
 * denormalised in float, as ONNX Runtime and the ONNX reference do: nearest
 * rounds the result, and a half-pixel must fall on the same side. */
static double gs_denormalize(double v, int64_t len, bool align_corners, bool f32) {
    if (f32) {
        float fv = (float)v, fl = (float)len;
        return align_corners ? (fv + 1.0f) / 2.0f * (fl - 1.0f) : ((fv + 1.0f) * fl - 1.0f) / 2.0f;
    }
    return align_corners ? (v + 1.0) / 2.0 * (double)(len - 1) : ((v + 1.0) * (double)len - 1.0) / 2.0;
}

/* Keeps NaN (no comparison holds), so a NaN position stays NaN. */
static double gs_clamp(double v, double lo, double hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

/* Folds v into [lo, hi] by reflecting at both ends as often as it takes. */
static double gs_reflect(double v, double lo, double hi) {
    double range = hi - lo;
    /* one pixel with align_corners: the box is a point, every position
     * reflects onto it (ONNX Runtime divides by zero here) */
    if (!(range > 0.0)) return lo;
    if (v < lo) {
        double d = lo - v, k = floor(d / range), r = d - k * range;
        v = fmod(k, 2.0) == 0.0 ? lo + r : hi - r;
    } else if (v > hi) {
        double d = v - hi, k = floor(d / range), r = d - k * range;
        v = fmod(k, 2.0) == 0.0 ? hi - r : lo + r;
    }
    return v;
}

/* The value a tap at whole-pixel position (row, col) reads. Positions stay
 * doubles until they are known to lie inside the image: a far-off finite
 * point of a zeros-padded grid must not overflow an integer. */
static double gs_pixel(const gs_plane *pl, double row, double col) {
    switch (pl->padding) {
    case GS_ZEROS:
        if (!(row >= 0.0 && row < (double)pl->height && col >= 0.0 && col < (double)pl->width)) return 0.0;
        break;
    case GS_BORDER:
        row = gs_clamp(row, 0.0, (double)(pl->height - 1));
        col = gs_clamp(col, 0.0, (double)(pl->width - 1));
        break;
    case GS_REFLECTION:
        /* the reflection of a whole position is whole; the clamp only
         * absorbs rounding of far-off positions */
        row = gs_clamp(trunc(gs_reflect(row, pl->y_min, pl->y_max)), 0.0, (double)(pl->height - 1));
        col = gs_clamp(trunc(gs_reflect(col, pl->x_min, pl->x_max)), 0.0, (double)(pl->width - 1));
        break;
    }
    return korch_tensor_get_f64(pl->x, pl->base + (int64_t)row * pl->width + (int64_t)col);
}

/* Keys' cubic convolution weights (a = -0.75, as ONNX Runtime and PyTorch)
 * of the four taps around a point at fraction t past the second one. */
static void gs_cubic_coeffs(double t, double c[4]) {
    const double a = -0.75;
    t = fabs(t);
    double t1 = t + 1.0, t2 = 1.0 - t, t3 = 2.0 - t;
    c[0] = ((a * t1 - 5.0 * a) * t1 + 8.0 * a) * t1 - 4.0 * a;
    c[1] = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    c[2] = ((a + 2.0) * t2 - (a + 3.0)) * t2 * t2 + 1.0;
    c[3] = ((a * t3 - 5.0 * a) * t3 + 8.0 * a) * t3 - 4.0 * a;
}

static double gs_sample(const gs_plane *pl, const gs_params *p, double x, double y) {
    if (p->mode == GS_NEAREST) {
        /* round half to even, as nearbyint in ONNX Runtime and np.rint in
         * the ONNX reference */
        x = nearbyint(x);
        y = nearbyint(y);
    }
    if (x < pl->x_min || x > pl->x_max || y < pl->y_min || y > pl->y_max) {
        if (p->padding == GS_BORDER) {
            /* the pixel centres, whatever align_corners says */
            x = gs_clamp(x, 0.0, (double)(pl->width - 1));
            y = gs_clamp(y, 0.0, (double)(pl->height - 1));
        } else if (p->padding == GS_REFLECTION) {
            x = gs_reflect(x, pl->x_min, pl->x_max);
            y = gs_reflect(y, pl->y_min, pl->y_max);
        }
    }
    /* NaN or infinite grid values (after border clamping) name no point;
     * ONNX Runtime's integer conversion of them is undefined */
    if (!isfinite(x) || !isfinite(y)) return NAN;
    if (p->mode == GS_NEAREST) return gs_pixel(pl, y, x);
    if (p->mode == GS_BILINEAR) {
        double x1 = floor(x), y1 = floor(y), dx1 = x - x1, dx2 = x1 + 1.0 - x, dy1 = y - y1, dy2 = y1 + 1.0 - y;
        return dy2 * (dx2 * gs_pixel(pl, y1, x1) + dx1 * gs_pixel(pl, y1, x1 + 1.0)) +
               dy1 * (dx2 * gs_pixel(pl, y1 + 1.0, x1) + dx1 * gs_pixel(pl, y1 + 1.0, x1 + 1.0));
    }
    double x0 = floor(x) - 1.0, y0 = floor(y) - 1.0, cx[4], cy[4], v = 0.0;
    gs_cubic_coeffs(x - x0 - 1.0, cx);
    gs_cubic_coeffs(y - y0 - 1.0, cy);
    for (int h = 0; h < 4; h++) {
        double row = 0.0;
        for (int w = 0; w < 4; w++) row += cx[w] * gs_pixel(pl, y0 + h, x0 + w);
        v += cy[h] * row;
    }
    return v;
}

static korch_status run_grid_sample(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    gs_params p;
    KORCH_TRY(gs_read_params(ctx, &p));
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3];
    int64_t Ho = grid->shape.dims[1], Wo = grid->shape.dims[2];
    bool f32 = grid->dtype == KORCH_DTYPE_FLOAT32;
    gs_plane pl = {.x = x, .height = H, .width = W, .padding = p.padding};
    if (p.align_corners) {
        pl.x_min = pl.y_min = 0.0;
        pl.x_max = (double)(W - 1);
        pl.y_max = (double)(H - 1);
    } else {
        pl.x_min = pl.y_min = -0.5;
        pl.x_max = (double)W - 0.5;
        pl.y_max = (double)H - 0.5;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            pl.base = (n * C + c) * H * W;
            for (int64_t oy = 0; oy < Ho; oy++)
                for (int64_t ox = 0; ox < Wo; ox++) {
                    int64_t g = ((n * Ho + oy) * Wo + ox) * 2;
                    double sx = gs_denormalize(korch_tensor_get_f64(grid, g), W, p.align_corners, f32);
                    double sy = gs_denormalize(korch_tensor_get_f64(grid, g + 1), H, p.align_corners, f32);
                    korch_ew_set_f64(y, ((n * C + c) * Ho + oy) * Wo + ox, gs_sample(&pl, &p, sx, sy));
                }
        }
    return KORCH_OK;
}

/* Per output element: bilinear weighs 4 taps and 2 rows (about 9 flops),
 * bicubic 16 taps and 4 rows (20 multiply-adds); nearest is a gather. */
static int64_t grid_sample_flops(const korch_op_ctx *ctx) {
    gs_params p;
    if (gs_read_params(ctx, &p) != KORCH_OK || p.mode == GS_NEAREST) return 0;
    return korch_flops_mul(p.mode == GS_BICUBIC ? 40 : 9, korch_shape_numel(&ctx->outputs[0]->shape));
}

const korch_op_def korch_op_def_GridSample = {
    .kind = KORCH_OP_GridSample, .op_type = "GridSample", .opset_min = 16, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_grid_sample, .run = run_grid_sample, .flops = grid_sample_flops,
};
