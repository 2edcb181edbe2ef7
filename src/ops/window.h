/* Sliding-window geometry shared by Conv, ConvTranspose and the pools:
 * reading and validating kernel_shape / strides / dilations / pads / auto_pad,
 * and the output size each implies.
 *
 * Kernels see every window op as 3-D: a 1-D op has depth and height 1, a 2-D
 * op depth 1. The leading dimensions get kernel 1, stride 1, dilation 1 and no
 * padding, so one loop nest serves all three ranks. */
#ifndef KORCH_OPS_WINDOW_H
#define KORCH_OPS_WINDOW_H

#include "ops/op.h"

#define KORCH_WINDOW_MAX_SPATIAL 3
/* Bound on kernel sizes, strides, dilations and pads: far beyond any real
 * model, and small enough that the geometry arithmetic cannot overflow. */
#define KORCH_WINDOW_MAX_ATTR ((int64_t)1 << 31)

typedef enum korch_auto_pad {
    KORCH_AUTO_PAD_NOTSET,
    KORCH_AUTO_PAD_SAME_UPPER,
    KORCH_AUTO_PAD_SAME_LOWER,
    KORCH_AUTO_PAD_VALID,
} korch_auto_pad;

typedef struct korch_window {
    int spatial; /* spatial dimensions of the op: 1, 2 or 3 */
    /* Normalised to 3-D: index 3 - spatial + i holds spatial dimension i. */
    int64_t in[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
} korch_window;

/* Reads auto_pad (default NOTSET) and rejects unknown values. */
korch_status korch_window_auto_pad(const korch_op_ctx *ctx, korch_auto_pad *out);

/* Reads an INTS attribute of exactly `count` values in [lo, KORCH_WINDOW_MAX_ATTR)
 * into out[]; fills `dflt` when absent. */
korch_status korch_window_ints(const korch_op_ctx *ctx, const char *name, int count, int64_t dflt, int64_t lo,
                               int64_t *out);

/* Fills a window for a forward sliding window (Conv and the pools) over the
 * spatial dims of `x`. `kernel` is the kernel size from W for Conv (then
 * kernel_shape is optional and must agree) or NULL for pools (then
 * kernel_shape is required). Validates every attribute and computes `out`;
 * ceil_mode rounds the output size up, dropping a last window that would
 * start inside the end padding (as PyTorch and onnxruntime do). */
korch_status korch_window_forward(const korch_op_ctx *ctx, const korch_shape *x, const int64_t *kernel,
                                  bool ceil_mode, korch_window *w);

/* Elements of the 3-D window arrays (in, out, kernel) multiplied out,
 * saturating at INT64_MAX. */
int64_t korch_window_in_size(const korch_window *w);
int64_t korch_window_out_size(const korch_window *w);
int64_t korch_window_kernel_size(const korch_window *w);

/* The t in [0, count) with 0 <= offset + t * step < limit, as [*lo, *hi)
 * (empty: *lo == *hi). step >= 1. Used both for "which output positions read
 * a valid input for this tap" and "which taps of this output are valid". */
void korch_window_valid_range(int64_t offset, int64_t step, int64_t limit, int64_t count, int64_t *lo, int64_t *hi);

#endif
