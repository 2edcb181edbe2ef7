/* Internals of the spec analysis, shared by dnnl_analyze.c (the linear
 * primitive, signature, entry) and dnnl_epilogue.c (the post-op chain). */
#ifndef KORCH_BACKEND_DNNL_DNNL_ANALYZE_H
#define KORCH_BACKEND_DNNL_DNNL_ANALYZE_H

#include "backend/dnnl/dnnl_internal.h"

typedef struct actx {
    const korch_kernel_spec *spec;
    const korch_pgraph *pg;
    dn_desc *d;
    char *reason;
    size_t size;
    int out_rank;            /* pgraph rank of the linear output */
    int perm[DN_MAX_DIMS];   /* logical dim j of the output is pgraph axis perm[j] */
    int channel_axis;        /* pgraph axis of output channels (bias) */
    bool used[64];           /* spec node i is accounted for (specs are small) */
    bool reshaped;           /* the chain passed a reshape: operands in the output's bytes */
    int src_transpose;       /* spec node transposing the source, absorbed (dnnl_transpose.c), or -1 */
    int64_t src_perm[KORCH_MAX_RANK];
    bool src_transposed, dst_transposed;
    bool width_swapped; /* an H x 1 convolution described to oneDNN as 1 x H (swap_unit_width) */
    int dequant_q;           /* the 8-bit kernel input of an absorbed dequantization (dnnl_dequant.c), or -1 */
    int operand_cast[2];     /* spec nodes converting the source / weights to bfloat16 (dnnl_bf16.c), or -1 */
} actx;

KORCH_PRINTF(2, 3) bool an_fail(actx *c, const char *fmt, ...);
/* "node 12 (ew.ERF of "/blk/Erf")" */
const char *an_node_name(const actx *c, int node, char *buf, size_t size);
int an_spec_index(const actx *c, int node);      /* position in the spec, or -1 */
int an_input_slot(const actx *c, int value);     /* spec input index, or -1 */
bool an_is_output(const actx *c, int value);
int an_consumers(const actx *c, int value, int *out, int cap); /* spec nodes reading value */
bool an_is_reshape(const actx *c, int node);
/* The one spec node reading value, or -1 (none, several, or value leaves
 * the kernel). */
int an_sole_consumer(const actx *c, int value);
/* node >= 0 is the elementwise op */
bool an_is_ew(const actx *c, int node, korch_ew_op op);
int an_through_reshapes(actx *c, int value);
bool an_scalar_constant(const korch_pvalue *v, double *x);
/* the row-major (dense) dims and strides of shape s */
void an_dense(const korch_shape *s, dn_tensor *t);
/* the dense pgraph tensor of shape s (right-aligned to the output rank) in
 * the output's logical order */
void an_logical(const actx *c, const korch_shape *s, dn_tensor *t);

/* dnnl_epilogue.c: one step of the chain from value v: a node read once
 * (appends post-ops), or a fork-join region identified as one eltwise
 * function (sets *w_out to the value it ends at). */
bool an_single_step(actx *c, int node, int v);
bool an_region_step(actx *c, int v, int *w_out);

/* dnnl_transpose.c: transposes around a convolution as strides of its
 * source and destination descriptors. an_src_transpose: the absorbable
 * transpose producing the linear primitive's source (perm filled), or -1;
 * an_absorb_src_transpose sets the source strides and slot once the source
 * descriptor is laid out; an_absorb_dst_transpose: the kernel's final value
 * when the chain's value v is transposed into it, else -1. */
int an_src_transpose(const actx *c, int linear, int64_t *perm);
bool an_absorb_src_transpose(actx *c, int node, const int64_t *perm);
int an_absorb_dst_transpose(actx *c, int v);

/* dnnl_dequant.c: a dequantization CAST -> [SUB] -> MUL of an 8-bit
 * kernel input producing the convolution's source (or, through a transpose,
 * then left in c->src_transpose for setup_linear to absorb), absorbed (the
 * number of its nodes, listed in nodes[3], and d's src_q/src_zp/src_scale
 * set), or 0. an_int8_check: once the linear primitive is set up, can the int8
 * kernel be made (a VNNI CPU; weights on an int8 grid)? */
int an_src_dequant(actx *c, int linear, int *nodes);
bool an_int8_check(actx *c);
/* dnnl_dequant.c: with an int8 source, the QuantizeLinear chain (exact DIV,
 * NaN to 0, ROUND, [ADD zp], CLIP, CAST to 8 bits) reading the chain value
 * v and writing the kernel's output, absorbed as a u8/s8 destination (its
 * nodes marked used, d's dst_q/dst_zp set, 1 / s appended as a post-op):
 * returns the kernel's final value, else -1 (nothing changed). */
int an_requant_tail(actx *c, int v);

/* dnnl_imatmul.c: the source of an integer matmul: the 8-bit kernel input
 * A, or SUB(CAST(A), zero point) with the zero point a constant or the CAST
 * of a scalar 8-bit kernel input; sets d's imatmul, src_q and zero point
 * and c->dequant_q, lists the absorbed nodes (at most 6) and returns their
 * number, or -1 when the source is none of these. an_imatmul_check: once
 * set up, can oneDNN compute it exactly (VNNI, constant int8 weights)? */
int an_imatmul_src(actx *c, int linear, int *nodes);
bool an_imatmul_check(actx *c);
/* The requantization after an integer convolution or matmul with constant
 * weights (QLinearConv's and QLinearMatMul's fission):
 * the kernel's output value, its nodes marked used, or -1 (not the pattern,
 * or not provably exact). */
int an_imatmul_requant(actx *c, int v);

/* dnnl_bf16.c: the precision cast (float32 -> bfloat16) inside the kernel
 * producing operand k (0 source, 1 weights) of a bf16 linear primitive from
 * a kernel input, absorbed as the kernel's conversion; else -1.
 * an_bf16_tail: the cast reading the chain value v and writing the kernel's
 * output, absorbed as a bfloat16 destination (marked used, d->dst_bf16
 * set): returns the kernel's final value, else -1 (nothing changed). */
int an_operand_cast(const actx *c, int linear, int k);
int an_bf16_tail(actx *c, int v);

/* dnnl_quirks.c: rewrites the finished chain into an equivalent one that
 * oneDNN 2.6 computes correctly (composes consecutive affine and clip steps,
 * renames repeated eltwise algorithms), or fails with the reason. */
bool an_legalize(actx *c);
/* dnnl_quirks.c, 4: a deconvolution with a fused bias or post-ops, refused
 * on oneDNN 2.x (slow, not wrong), with the reason. */
bool an_deconv_fusion(actx *c);

#endif
