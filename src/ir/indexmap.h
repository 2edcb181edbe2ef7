/* Constructors for the common layout primitives, and recognisers that read a
 * layout node's index map back as a standard operation.
 *
 * Every constructor builds the index map (see korch_index_map in pgraph.h),
 * adds the node and returns its output value, or -1 with the error set. They
 * propagate failure: an operand of -1 returns -1 at once, without touching
 * the error message, so a chain of constructors can be checked once at the
 * end. */
#ifndef KORCH_IR_INDEXMAP_H
#define KORCH_IR_INDEXMAP_H

#include "ir/pgraph.h"

typedef enum korch_pad_mode { KORCH_PAD_CONSTANT, KORCH_PAD_REFLECT, KORCH_PAD_EDGE, KORCH_PAD_WRAP } korch_pad_mode;

/* y = transpose(x, perm): y.dims[j] = x.dims[perm[j]]. */
int korch_pgraph_transpose(korch_pgraph *pg, int x, const int64_t *perm);
/* Same elements in row-major order, new shape (element counts must match). */
int korch_pgraph_reshape(korch_pgraph *pg, int x, const korch_shape *shape);
/* y[o] = x[start + step * o] per dimension; out_shape gives the counts. */
int korch_pgraph_slice(korch_pgraph *pg, int x, const int64_t *starts, const int64_t *steps,
                       const korch_shape *out_shape);
/* Pads (or crops, with negative amounts) every dimension. Negative amounts
 * crop first; reflect, edge and wrap then extend the kept window (ONNX
 * Runtime's reading of mixed pads, and the reference kernel's). */
int korch_pgraph_pad(korch_pgraph *pg, int x, const int64_t *begins, const int64_t *ends, korch_pad_mode mode,
                     double value);
/* Concatenation along axis; more than 8 inputs become a tree of concats. */
int korch_pgraph_concat(korch_pgraph *pg, int n, const int *xs, int axis);
/* numpy broadcast of x to shape (right-aligned; shape must be a broadcast of x). */
int korch_pgraph_expand(korch_pgraph *pg, int x, const korch_shape *shape);
/* Repeats x `repeats[k]` times along each dimension. */
int korch_pgraph_tile(korch_pgraph *pg, int x, const int64_t *repeats);
/* numpy take along axis with constant in-range indices (already
 * non-negative) of shape idx_shape: y.shape = x[:axis] + idx_shape + x[axis+1:]. */
int korch_pgraph_gather(korch_pgraph *pg, int x, int axis, const int64_t *indices, const korch_shape *idx_shape);
/* Per-dimension lookup: y[o] = x[t_0[o_0], ..., t_r[o_r]] where tables[k]
 * (length out_shape.dims[k]) may be NULL for the identity. Entries < 0 are
 * out of bounds (pad value). Tag as given (e.g. RESIZE_NEAREST, PAD). */
int korch_pgraph_remap(korch_pgraph *pg, korch_layout_tag tag, int x, const korch_shape *out_shape,
                       int64_t *const *tables, double pad_value);
/* Pooling windows over the last `spatial` dimensions of x:
 * y.shape = x[:-spatial] + out_spatial + kernel, with
 * in = stride * o + dilation * k - pad_begin (out of bounds: pad_value). */
int korch_pgraph_window(korch_pgraph *pg, int x, int spatial, const int64_t *kernel, const int64_t *strides,
                        const int64_t *dilations, const int64_t *pads_begin, const int64_t *out_spatial,
                        double pad_value);

/* Index-map building blocks. */
korch_index_term korch_index_term_var(int j);        /* o_j */
korch_index_term korch_index_term_const(int64_t c); /* c */
/* The map of a reshape from `in` to `out`, factored into groups of dimensions
 * with equal products so that most terms are plain copies of one coordinate. */
void korch_index_map_reshape(const korch_shape *in, const korch_shape *out, korch_index_map *map);

/* ---- recognisers (on a live layout node) --------------------------------
 * Each inspects the exact meaning of the map, whatever the tag says. */

/* Every output element is the input element with the same coordinates. */
bool korch_layout_is_identity(const korch_pgraph *pg, int node);
/* A transpose; fills perm. */
bool korch_layout_as_transpose(const korch_pgraph *pg, int node, int64_t *perm);
/* A reshape: the row-major element order is unchanged. */
bool korch_layout_as_reshape(const korch_pgraph *pg, int node);
/* A strided slice with no bounds checks: in_k = start_k + step_k * o_k. */
bool korch_layout_as_slice(const korch_pgraph *pg, int node, int64_t *starts, int64_t *steps);
/* A constant pad/crop: in_k = o_k - begin_k, out of bounds -> pad value. */
bool korch_layout_as_pad(const korch_pgraph *pg, int node, int64_t *begins, int64_t *ends);
/* numpy broadcast of the input to the output shape. */
bool korch_layout_as_expand(const korch_pgraph *pg, int node);
/* Concatenation of all inputs along *axis. */
bool korch_layout_as_concat(const korch_pgraph *pg, int node, int *axis);
/* Single input and every output coordinate maps in bounds (no pad value). */
bool korch_layout_is_pure(const korch_pgraph *pg, int node);

/* Flat source of output element `flat` of a layout node: sets *input to the
 * map index and returns the row-major element offset in that input, or
 * returns -1 for the pad value. */
int64_t korch_layout_source(const korch_pgraph *pg, int node, int64_t flat, int *input);

#endif
