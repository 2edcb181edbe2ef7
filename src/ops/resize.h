/* Resize and Upsample share one plan: output shape plus, per axis, how an
 * output coordinate maps back to the input. resize.c builds the plan from
 * the node (the attribute/input forms of Upsample-7/9 and Resize-10/11/13/18);
 * resize_kernel.c runs it. */
#ifndef KORCH_OPS_RESIZE_H
#define KORCH_OPS_RESIZE_H

#include "ops/layout.h"

typedef enum resize_mode { RESIZE_NEAREST, RESIZE_LINEAR, RESIZE_CUBIC } resize_mode;

typedef enum resize_coord {
    COORD_HALF_PIXEL,
    COORD_PYTORCH_HALF_PIXEL,
    COORD_ALIGN_CORNERS,
    COORD_ASYMMETRIC,
    COORD_TF_HALF_PIXEL_FOR_NEAREST,
    COORD_TF_CROP_AND_RESIZE,
    COORD_HALF_PIXEL_SYMMETRIC, /* Resize-19; accepted at any opset */
} resize_coord;

typedef enum resize_rounding {
    ROUND_PREFER_FLOOR,
    ROUND_PREFER_CEIL,
    ROUND_FLOOR,
    ROUND_CEIL,
    /* Upsample and Resize-10 (no nearest_mode yet): floor when upsampling,
     * ceil when downsampling, as ONNX Runtime does */
    ROUND_LEGACY,
} resize_rounding;

typedef struct resize_plan {
    resize_mode mode;
    resize_coord coord;
    resize_rounding rounding;
    float extrapolation;
    int rank;
    int64_t in_dims[KORCH_MAX_RANK], out_dims[KORCH_MAX_RANK];
    double scale[KORCH_MAX_RANK];
    /* the fractional output length (input length * scale) that
     * align_corners, pytorch_half_pixel and tf_crop_and_resize divide by */
    double length[KORCH_MAX_RANK];
    double roi_start[KORCH_MAX_RANK], roi_end[KORCH_MAX_RANK];
    double cubic_a;       /* cubic: the Keys kernel's coefficient (cubic_coeff_a) */
    bool exclude_outside; /* cubic: taps outside the input weigh 0, the rest renormalised */
} resize_plan;

korch_status korch_resize_plan(const korch_op_ctx *ctx, resize_plan *plan);

/* Source coordinate of output index o along axis d. Sets *outside for
 * tf_crop_and_resize coordinates outside the input (extrapolated). */
double korch_resize_source_coord(const resize_plan *plan, int d, int64_t o, bool *outside);
/* Shared by the reference kernel and the fission rule, so both pick the same
 * source elements: the ONNX reference's identity axes, index clamping and
 * nearest rounding. */
bool korch_resize_axis_is_identity(const resize_plan *plan, int d);
int64_t korch_resize_clamp_index(double x, int64_t len);
int64_t korch_resize_nearest_index(const resize_plan *plan, int d, int64_t o);

/* Cubic: the four input indices (clamped, as the reference's edge padding
 * reads them) and weights of output index o along axis d; false when o is
 * extrapolated (tf_crop_and_resize outside the input). */
bool korch_resize_cubic_taps(const resize_plan *plan, int d, int64_t o, int64_t idx[4], double w[4]);

korch_status korch_resize_run_nearest(const korch_op_ctx *ctx, const resize_plan *plan);
korch_status korch_resize_run_linear(const korch_op_ctx *ctx, const resize_plan *plan);
korch_status korch_resize_run_cubic(const korch_op_ctx *ctx, const resize_plan *plan);

#endif
