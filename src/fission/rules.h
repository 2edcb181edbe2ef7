/* Internal to fission: the context a fission rule sees, and the helpers rules
 * are written with.
 *
 * A rule reads its op-graph node (attributes, inferred shapes, constant
 * inputs) and adds primitives to the pgraph, then sets one pvalue per present
 * output. Helpers return a value index or -1 and propagate -1 operands
 * without touching the error, so a rule builds a whole chain and returns
 * fission_done(ctx) once. A rule that cannot decompose its operator returns
 * fission_decline(ctx, reason): the driver discards what the rule added and
 * keeps the operator as an opaque primitive with that reason. */
#ifndef KORCH_FISSION_RULES_H
#define KORCH_FISSION_RULES_H

#include "fission/fission.h"
#include "ir/indexmap.h"

typedef struct korch_fission_ctx {
    korch_pgraph *pg;
    const korch_graph *g;
    int node_index;
    const korch_node *node;
    int n_inputs;
    const int *in;   /* pvalue of each input position, -1 when omitted */
    int n_outputs;
    int *out;        /* set by the rule; -1 for omitted outputs */
    const char *decline_reason;
    /* pvalue of every op-graph value fissioned so far (-1: not yet, or a
     * constant not used yet): for rules that look past their own inputs */
    const int *vmap;
} korch_fission_ctx;

typedef korch_status (*korch_fission_rule)(korch_fission_ctx *ctx);

#define KORCH_FISSION_RULE(name) korch_status korch_fission_rule_##name(korch_fission_ctx *ctx)

/* The rule of each operator, indexed by korch_op_kind (fission_table.c). */
extern const korch_fission_rule korch_fission_rules[KORCH_OP_COUNT];

/* ---- reading the node ----------------------------------------------------- */

int fission_in(const korch_fission_ctx *ctx, int i); /* pvalue or -1 */
bool fission_has_in(const korch_fission_ctx *ctx, int i);
/* Constant data of input i in the op graph, or NULL. */
const korch_tensor *fission_const_in(const korch_fission_ctx *ctx, int i);
const korch_shape *fission_in_shape(const korch_fission_ctx *ctx, int i);
korch_dtype fission_in_dtype(const korch_fission_ctx *ctx, int i);
const korch_shape *fission_out_shape(const korch_fission_ctx *ctx, int k);
korch_dtype fission_out_dtype(const korch_fission_ctx *ctx, int k);
bool fission_has_out(const korch_fission_ctx *ctx, int k);
const korch_shape *fission_shape(const korch_fission_ctx *ctx, int v); /* of a pvalue */
/* Normalised axis attribute / value; -1 when out of range (error set). */
int fission_axis(const korch_fission_ctx *ctx, int64_t axis, int rank);
/* Bit mask of a list of axes (negative ones counted from the end); -1 with
 * the error set when one is out of range. */
int64_t fission_axes_mask(const korch_fission_ctx *ctx, const int64_t *axes, int count, int rank);

/* ---- building -------------------------------------------------------------- */

int fission_unary(korch_fission_ctx *ctx, korch_ew_op op, int x);
int fission_unary_ab(korch_fission_ctx *ctx, korch_ew_op op, int x, float alpha, float beta);
int fission_binary(korch_fission_ctx *ctx, korch_ew_op op, int a, int b);
int fission_binary_ab(korch_fission_ctx *ctx, korch_ew_op op, int a, int b, float alpha, float beta);
int fission_where(korch_fission_ctx *ctx, int cond, int a, int b);
int fission_cast(korch_fission_ctx *ctx, int x, korch_dtype to);
/* A MatMul with numpy semantics of a and b (rank-1 operands as matrices),
 * reshaped to out_shape (rules_linear.c). */
int fission_matmul(korch_fission_ctx *ctx, int a, int b, const korch_shape *out_shape);
/* The convolution parameters of the node's attributes (Conv, ConvTranspose,
 * ConvInteger: pads, auto_pad, strides, dilations, group), as the reference
 * kernels derive them (rules_linear.c). */
korch_status fission_conv_params(korch_fission_ctx *ctx, bool transpose, korch_prim_linear *p);
/* The same with the weights at input w_input (QLinearConv's are input 3). */
korch_status fission_conv_params_w(korch_fission_ctx *ctx, bool transpose, int w_input, korch_prim_linear *p);
int fission_reduce(korch_fission_ctx *ctx, korch_reduce_op op, int x, uint32_t axes, bool keepdims);
/* A scalar constant of dtype. */
int fission_scalar(korch_fission_ctx *ctx, double v, korch_dtype dtype);
/* A constant taking ownership of t. */
int fission_constant(korch_fission_ctx *ctx, korch_tensor *t);
/* Per-channel vector (C) viewed as (C, 1, ..., 1) for a rank-`rank` NCHW
 * operand (a reshape layout; constant propagation folds it for weights). */
int fission_channel_view(korch_fission_ctx *ctx, int v, int rank);
/* Drops (keepdims=0) or keeps the reduced axes of a keepdims=1 result. */
int fission_squeeze_axes(korch_fission_ctx *ctx, int v, uint32_t axes);

/* ---- finishing -------------------------------------------------------------- */

void fission_set_out(korch_fission_ctx *ctx, int k, int v);
/* Success if every present output was set; else the error of the failed step. */
korch_status fission_done(korch_fission_ctx *ctx);
korch_status fission_decline(korch_fission_ctx *ctx, const char *reason);

/* rules_resize.c: op-graph node `resize` (Resize or Upsample) applied to
 * pvalue x instead of its own input, when its map is the same for every
 * index of the axes it does not resize (those of x may differ in length):
 * the resized value, or -1 with the error set. korch_fission_resize_linear_map:
 * is the node such a map, linear in its input (no extrapolated constant:
 * not tf_crop_and_resize) and identity on axes 0 and 1? Then *in_elems and
 * *out_elems are the sizes of one (N, C) plane before and after. */
bool korch_fission_resize_linear_map(const korch_graph *g, const korch_node *resize, int64_t *in_elems,
                                     int64_t *out_elems);
int korch_fission_resize_value(korch_fission_ctx *ctx, const korch_node *resize, int x);

/* Shared rule bodies. */
korch_status fission_rule_unary(korch_fission_ctx *ctx, korch_ew_op op);
korch_status fission_rule_binary(korch_fission_ctx *ctx, korch_ew_op op);
korch_status fission_rule_alias(korch_fission_ctx *ctx); /* output = input 0 */

#endif
