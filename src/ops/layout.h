/* Shared pieces of the layout operators (Transpose, Slice, Concat, Pad,
 * Resize, ...): two copy kernels that every data-movement op reduces to, and
 * the argument readers that hide the ONNX attribute-vs-input history.
 *
 * The kernels move bytes, so they serve every dtype with a nonzero
 * korch_dtype_size. */
#ifndef KORCH_OPS_LAYOUT_H
#define KORCH_OPS_LAYOUT_H

#include "ops/op.h"

/* Views have up to twice the tensor rank: Tile splits every output dim into
 * (repeat, input dim), DepthToSpace reshapes 4-D into 6-D. */
#define KORCH_LAYOUT_MAX_RANK (2 * KORCH_MAX_RANK)

/* A strided view of a source buffer, laid out in the order of a dense
 * destination: destination element (i0, ..., in) is source element
 * offset + sum(ik * strides[k]). Strides are in elements and may be zero
 * (broadcast) or negative (reversed slices). */
typedef struct korch_strided_view {
    int rank;
    int64_t dims[KORCH_LAYOUT_MAX_RANK];
    int64_t strides[KORCH_LAYOUT_MAX_RANK];
    int64_t offset;
} korch_strided_view;

/* Copies the view into dst (dense, row-major, prod(dims) elements). */
void korch_layout_copy_view(void *dst, const void *src, size_t esize, const korch_strided_view *view);

/* View of a dense tensor of `shape` permuted by perm: output dim k reads
 * input dim perm[k]. */
void korch_layout_permuted_view(const korch_shape *shape, const int *perm, korch_strided_view *view);

/* Gather through per-dimension index maps: destination element (i0..in)
 * is source element (maps[0][i0], ..., maps[n][in]), or the element at
 * `fill` when any map entry is -1. Source is dense with dims in_dims. */
void korch_layout_gather_maps(void *dst, const void *src, size_t esize, int rank, const int64_t *out_dims,
                              const int64_t *in_dims, int64_t *const *maps, const void *fill);

/* Run function of ops that only change the shape (Squeeze, Flatten, ...):
 * copies input 0 to output 0 byte for byte. */
korch_status korch_layout_run_copy(korch_op_ctx *ctx);

/* ---- argument helpers (for infer) ---------------------------------------- */

/* Input i's dtype must be a fixed-size dtype the byte-moving kernels can copy. */
korch_status korch_layout_require_copyable(const korch_op_ctx *ctx, int i);

/* Reads an integer list that is the attribute `attr` when `from_input` is
 * false, or the constant input `input` otherwise. *present is false (and
 * *count 0) when the list is absent, which callers treat as "default". */
korch_status korch_layout_read_list(const korch_op_ctx *ctx, bool from_input, int input, const char *attr,
                                    int64_t *out, int cap, int *count, bool *present);

/* Normalises `count` axes in place against `rank` (negative axes count from
 * the end) and rejects out-of-range and repeated axes. */
korch_status korch_layout_normalize_axes(const korch_op_ctx *ctx, int64_t *axes, int count, int rank);

/* Every element of the indices (input 1) lies in [-dim, dim), dim the size
 * of the data's (input 0) axis `axis`; else an error of `status` naming the
 * first index out of range (a model error for constant indices at
 * inference, bad data at run time). Gather, GatherElements, ScatterElements. */
korch_status korch_layout_check_indices(const korch_op_ctx *ctx, int axis, korch_status status);

/* Number of flops of a pure data-movement op. */
int64_t korch_layout_no_flops(const korch_op_ctx *ctx);

#endif
