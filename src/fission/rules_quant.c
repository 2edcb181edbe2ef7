/* The quantization operators. DequantizeLinear and QuantizeLinear become
 * elementwise primitives (exactly, see each rule); a dequantized source of
 * a convolution can then run as oneDNN's int8 convolution
 * (backend/dnnl/dnnl_dequant.c). DynamicQuantizeLinear becomes reductions
 * and elementwise primitives, MatMulInteger and ConvInteger integer linear
 * primitives, QLinearMatMul and QLinearConv integer linear primitives and
 * the elementwise steps of their requantization. Each rule reproduces its
 * reference kernel bit for bit; what a rule declines stays whole, an
 * opaque primitive running the reference kernel inside the plan
 * (docs/quantization.md). */
#include <math.h>
#include <string.h>

#include "fission/rules.h"
#include "ops/quant.h"

/* A per-axis parameter [D] viewed so that it broadcasts along `axis` of a
 * rank-`rank` operand: [D, 1, ..., 1] with rank - axis dims; a [1] one as a
 * scalar. */
static int axis_view(korch_fission_ctx *ctx, int v, int axis, int rank) {
    if (v < 0) return -1;
    const korch_shape *s = fission_shape(ctx, v);
    if (s->rank == 1 && s->dims[0] == 1) { /* per tensor: a scalar, so x's shape is kept even at rank 0 */
        korch_shape scalar = {.rank = 0};
        return korch_pgraph_reshape(ctx->pg, v, &scalar);
    }
    if (s->rank != 1 || rank - axis <= 1) return v;
    korch_shape view = {.rank = rank - axis};
    view.dims[0] = s->dims[0];
    for (int k = 1; k < view.rank; k++) view.dims[k] = 1;
    return korch_pgraph_reshape(ctx->pg, v, &view);
}

static bool all_zero(const korch_tensor *t) {
    for (int64_t i = 0, n = korch_tensor_numel(t); i < n; i++)
        if (korch_tensor_get_i64(t, i) != 0) return false;
    return true;
}

/* y = (float(x) - float(zero_point)) * scale: CAST, SUB, MUL, bit-exact with
 * the reference kernel's float((int)x - zero_point) * scale because the
 * difference of two 8-bit values is exact in float32. That is what lets
 * constant propagation turn dequantized weights into plain float32 weights
 * and the dequantization of activations fuse into neighbouring kernels. */
KORCH_FISSION_RULE(DequantizeLinear) {
    korch_dtype dt = fission_in_dtype(ctx, 0);
    const korch_shape *xs = fission_in_shape(ctx, 0), *ss = fission_in_shape(ctx, 1);
    const korch_tensor *zp = fission_const_in(ctx, 2);
    bool zero_zp = !fission_has_in(ctx, 2) || (zp && all_zero(zp));
    /* int32 above 2^24 is not exact in float32: the reference subtracts in
     * integers first. A constant x (a bias) is folded by the reference anyway. */
    if (dt == KORCH_DTYPE_INT32 && !zero_zp && !fission_const_in(ctx, 0))
        return fission_decline(ctx, "DequantizeLinear of a run-time int32 tensor with a zero point (the reference "
                                    "subtracts in int32 before converting)");
    if (korch_node_attr_int(ctx->node, "block_size", 0) > 0)
        return fission_decline(ctx, "DequantizeLinear with block_size (blocked scales are not a broadcast)");
    int axis = 0;
    if (ss->rank == 1 && ss->dims[0] != 1) {
        axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 1), xs->rank);
        if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    }
    int x = fission_cast(ctx, fission_in(ctx, 0), KORCH_DTYPE_FLOAT32);
    if (!zero_zp) {
        int z = fission_cast(ctx, axis_view(ctx, fission_in(ctx, 2), axis, xs->rank), KORCH_DTYPE_FLOAT32);
        x = fission_binary(ctx, KORCH_EW_SUB, x, z);
    }
    fission_set_out(ctx, 0, fission_binary(ctx, KORCH_EW_MUL, x, axis_view(ctx, fission_in(ctx, 1), axis, xs->rank)));
    return fission_done(ctx);
}

/* y = saturate(rint(x / scale) + zero_point) as elementwise primitives,
 * bit-exact with the reference kernel (ops/quant.h):
 *   - DIV with alpha 1, an exact float32 division: the code generator
 *     would otherwise multiply by a hoisted reciprocal, which differs in
 *     the last bit and flips rounding ties (and oneDNN refuses it);
 *   - NaN becomes 0 (WHERE x/s == x/s), so that it quantizes to the zero
 *     point as the reference does;
 *   - ROUND (halves to even), ADD of the zero point in float32 (exact below
 *     2^24; beyond, the clip saturates either way), CLIP to the type's
 *     range, CAST to uint8/int8.
 * So a QDQ model's QuantizeLinear fuses with its producer and the
 * DequantizeLinear after it, instead of a reference pass of its own. */
KORCH_FISSION_RULE(QuantizeLinear) {
    korch_dtype dt = fission_in_dtype(ctx, 0), out = fission_out_dtype(ctx, 0);
    const korch_shape *xs = fission_in_shape(ctx, 0), *ss = fission_in_shape(ctx, 1);
    if (dt != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "QuantizeLinear of a non-float32 tensor (runs its reference kernel)");
    if (korch_node_attr_int(ctx->node, "block_size", 0) > 0)
        return fission_decline(ctx, "QuantizeLinear with block_size (blocked scales are not a broadcast)");
    if (out != KORCH_DTYPE_UINT8 && out != KORCH_DTYPE_INT8)
        return fission_decline(ctx, "QuantizeLinear to a type other than uint8/int8");
    const korch_tensor *zp = fission_const_in(ctx, 2);
    bool zero_zp = !fission_has_in(ctx, 2) || (zp && all_zero(zp));
    int axis = 0;
    if (ss->rank == 1 && ss->dims[0] != 1) {
        axis = fission_axis(ctx, korch_node_attr_int(ctx->node, "axis", 1), xs->rank);
        if (axis < 0) return KORCH_ERR_INVALID_MODEL;
    }
    int q = fission_binary_ab(ctx, KORCH_EW_DIV, fission_in(ctx, 0), axis_view(ctx, fission_in(ctx, 1), axis, xs->rank),
                              1, 0); /* alpha 1: exact */
    q = fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, q, q), q, fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32));
    q = fission_unary(ctx, KORCH_EW_ROUND, q);
    if (!zero_zp)
        q = fission_binary(ctx, KORCH_EW_ADD, q,
                           fission_cast(ctx, axis_view(ctx, fission_in(ctx, 2), axis, xs->rank), KORCH_DTYPE_FLOAT32));
    q = fission_unary_ab(ctx, KORCH_EW_CLIP, q, (float)korch_quant_min(out), (float)korch_quant_max(out));
    fission_set_out(ctx, 0, fission_cast(ctx, q, out));
    return fission_done(ctx);
}

/* saturate(rint(q) + zp) to uint8 of a float32 q (NaN to 0, so to zp; zp a
 * float32 integer or -1 for none), as korch_quant_round_saturate: the
 * steps of the QuantizeLinear rule above */
static int round_saturate_u8(korch_fission_ctx *ctx, int q, int zp) {
    q = fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, q, q), q, fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32));
    q = fission_unary(ctx, KORCH_EW_ROUND, q);
    if (zp >= 0) q = fission_binary(ctx, KORCH_EW_ADD, q, zp);
    return fission_unary_ab(ctx, KORCH_EW_CLIP, q, 0.0f, 255.0f);
}

/* min(0, min(x)) or max(0, max(x)) over every element, NaN skipped (the
 * reference's comparisons never take one; the primitives' propagate it, so
 * a NaN becomes the reduction's identity first) */
static int range_end(korch_fission_ctx *ctx, int x, bool max) {
    int rank = fission_shape(ctx, x)->rank;
    int id = fission_scalar(ctx, max ? -INFINITY : INFINITY, KORCH_DTYPE_FLOAT32);
    int clean = fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, x, x), x, id);
    int r = fission_reduce(ctx, max ? KORCH_REDUCE_MAX : KORCH_REDUCE_MIN, clean, (1u << rank) - 1u, false);
    return fission_binary(ctx, max ? KORCH_EW_MAX : KORCH_EW_MIN, r, fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32));
}

/* The reference kernel's arithmetic (ops/quantize_dynamic.c), bit for bit,
 * as primitives: two whole-tensor reductions, a few scalar steps, and a
 * quantizer like QuantizeLinear's (exact divisions, DIV alpha 1):
 *   lo = min(0, min x), hi = max(0, max x)    (NaN skipped)
 *   s  = hi == lo ? 1 : (hi - lo) / 255
 *   zp = saturate(rint(0 - lo / s))
 *   y  = saturate(rint(x / s) + zp)
 * So the quantization of a dynamically quantized model's activations fuses
 * with its producer (the LayerNorm before a projection) and its scale with
 * the products after the integer matmul, where the opaque kernel was a
 * reference pass of its own (0.9 ms for BERT-base's [128, 3072] input of
 * the FFN down-projection). */
KORCH_FISSION_RULE(DynamicQuantizeLinear) {
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "DynamicQuantizeLinear of a non-float32 tensor");
    int x = fission_in(ctx, 0);
    if (fission_shape(ctx, x)->rank < 1 || korch_shape_numel(fission_shape(ctx, x)) < 1)
        return fission_decline(ctx, "DynamicQuantizeLinear of a scalar or an empty tensor");
    int lo = range_end(ctx, x, false), hi = range_end(ctx, x, true);
    int width = fission_binary_ab(ctx, KORCH_EW_DIV, fission_binary(ctx, KORCH_EW_SUB, hi, lo),
                                  fission_scalar(ctx, 255, KORCH_DTYPE_FLOAT32), 1, 0); /* alpha 1: exact */
    int s = fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, hi, lo), fission_scalar(ctx, 1, KORCH_DTYPE_FLOAT32),
                          width);
    int zq = fission_binary(ctx, KORCH_EW_SUB, fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32),
                            fission_binary_ab(ctx, KORCH_EW_DIV, lo, s, 1, 0));
    int zp = round_saturate_u8(ctx, zq, -1);
    int y = round_saturate_u8(ctx, fission_binary_ab(ctx, KORCH_EW_DIV, x, s, 1, 0), zp);
    fission_set_out(ctx, 0, fission_cast(ctx, y, KORCH_DTYPE_UINT8));
    fission_set_out(ctx, 1, s);
    fission_set_out(ctx, 2, fission_cast(ctx, zp, KORCH_DTYPE_UINT8));
    return fission_done(ctx);
}

/* Whether every element of the constant [K, N] b minus its zero point (NULL:
 * 0; one value or one per column) fits in int8. */
static bool columns_fit_int8(const korch_tensor *b, const korch_tensor *zp) {
    int64_t n = korch_tensor_numel(b), cols = b->shape.dims[1];
    for (int64_t i = 0; i < n; i++) {
        int64_t z = !zp ? 0 : korch_tensor_numel(zp) == 1 ? korch_tensor_get_i64(zp, 0) : korch_tensor_get_i64(zp, i % cols);
        int64_t v = korch_tensor_get_i64(b, i) - z;
        if (v < -128 || v > 127) return false;
    }
    return true;
}

/* A - a_zero_point as an integer matmul operand: the 8-bit tensor itself
 * without a zero point (or a constant zero one), else int32 A - zp, the
 * per-row zero point [M] viewed as [M, 1]. */
static int imatmul_operand(korch_fission_ctx *ctx, int x, int zp_input, bool per_row) {
    const korch_tensor *zp = fission_const_in(ctx, zp_input);
    if (!fission_has_in(ctx, zp_input) || (zp && all_zero(zp))) return x;
    int z = fission_in(ctx, zp_input);
    const korch_shape *zs = fission_shape(ctx, z);
    if (korch_shape_numel(zs) == 1) {
        korch_shape scalar = {.rank = 0};
        z = korch_pgraph_reshape(ctx->pg, z, &scalar);
    } else if (per_row) {
        korch_shape column = {.rank = 2, .dims = {zs->dims[0], 1}};
        z = korch_pgraph_reshape(ctx->pg, z, &column);
    }
    return fission_binary(ctx, KORCH_EW_SUB, fission_cast(ctx, x, KORCH_DTYPE_INT32), fission_cast(ctx, z, KORCH_DTYPE_INT32));
}

/* Which node inputs hold the operands and their zero points: MatMulInteger
 * and ConvInteger are (x, w, x_zp, w_zp); QLinearMatMul and QLinearConv
 * (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]). */
typedef struct integer_io {
    int x, w, zx, zw;
} integer_io;

static const integer_io INTEGER_IO = {0, 1, 2, 3}, QLINEAR_IO = {0, 3, 2, 5};

/* Y = (A - a_zp) @ (B - b_zp), exactly, as an integer matmul primitive
 * (int32 sums; ir/pgraph.h): the zero points are subtracted in int32 (a
 * constant B's folds into int32 weights), per tensor, per row of A ([M] as
 * [M, 1]) or per column of B ([N], which broadcasts along the last axis).
 * oneDNN computes it with int8 kernels where A is 8-bit with one zero point
 * and B fits int8 (backend/dnnl/dnnl_imatmul.c); otherwise the reference
 * backend's exact loop runs it. */
static korch_status integer_matmul(korch_fission_ctx *ctx, const integer_io *io, int *out) {
    const korch_shape *as = fission_in_shape(ctx, io->x);
    if (as->rank < 1 || fission_in_shape(ctx, io->w)->rank < 1)
        return fission_decline(ctx, "an integer matmul of a scalar operand");
    bool per_row_a = fission_has_in(ctx, io->zx) && korch_shape_numel(fission_in_shape(ctx, io->zx)) > 1;
    if (per_row_a && as->rank != 2)
        return fission_decline(ctx, "an integer matmul with a per-row zero point of a batched A");
    const korch_tensor *bc = fission_const_in(ctx, io->w), *bz = fission_const_in(ctx, io->zw);
    const korch_tensor *az = fission_const_in(ctx, io->zx);
    bool has_zb = fission_has_in(ctx, io->zw) && !(bz && all_zero(bz));
    bool has_za = fission_has_in(ctx, io->zx) && !(az && all_zero(az));
    if (!bc || bc->shape.rank != 2 || (has_zb && !bz)) { /* B computed at run time: both zero points subtracted */
        int a = imatmul_operand(ctx, fission_in(ctx, io->x), io->zx, true);
        int b = imatmul_operand(ctx, fission_in(ctx, io->w), io->zw, false);
        /* Each operand minus its zero point lies in [-255, 255]: with
         * K * 255^2 < 2^24 every product and every partial sum, in any
         * order, is an integer float32 holds exactly, so a float32 matmul
         * of the same integers is the exact result (an attention's
         * Q K^T and P V in a QOperator transformer: K = 64 or 128), and
         * runs as oneDNN's or the code generator's float32 kernels where an
         * integer matmul of run-time weights has only the reference loop. */
        int64_t K = as->dims[as->rank - 1];
        if (K * 255 * 255 < ((int64_t)1 << 24)) {
            int y = fission_matmul(ctx, fission_cast(ctx, a, KORCH_DTYPE_FLOAT32), fission_cast(ctx, b, KORCH_DTYPE_FLOAT32),
                                   fission_out_shape(ctx, 0));
            *out = fission_cast(ctx, y, KORCH_DTYPE_INT32);
            return KORCH_OK;
        }
        *out = fission_matmul(ctx, a, b, fission_out_shape(ctx, 0));
        return KORCH_OK;
    }
    /* constant weights: the matmul reads the 8-bit A itself, so that one
     * oneDNN int8 kernel computes it with nothing before it:
     *   (A - za) B' = A B' - za colsum(B'),  B' = B - zb
     * and uint8 weights whose zero point leaves them outside int8
     * (asymmetric uint8 quantization) as B' = B - 128 plus a row sum:
     *   (A - za)(B - zb) = (A - za)(B - 128) + rowsum(A - za) (128 - zb)
     * colsum(B') folds to a constant; everything is int32 and exact */
    bool split = bc->dtype == KORCH_DTYPE_UINT8 && !columns_fit_int8(bc, has_zb ? bz : NULL);
    int b = fission_cast(ctx, fission_in(ctx, io->w), KORCH_DTYPE_INT32);
    if (split) b = fission_binary(ctx, KORCH_EW_SUB, b, fission_scalar(ctx, 128, KORCH_DTYPE_INT32));
    else if (has_zb) b = fission_binary(ctx, KORCH_EW_SUB, b, fission_cast(ctx, fission_in(ctx, io->zw), KORCH_DTYPE_INT32));
    int y = fission_matmul(ctx, fission_in(ctx, io->x), b, fission_out_shape(ctx, 0));
    if (has_za) {
        int za = fission_in(ctx, io->zx);
        const korch_shape *zs = fission_shape(ctx, za);
        korch_shape view = korch_shape_numel(zs) == 1 ? (korch_shape){.rank = 0}
                                                       : (korch_shape){.rank = 2, .dims = {zs->dims[0], 1}};
        za = fission_cast(ctx, korch_pgraph_reshape(ctx->pg, za, &view), KORCH_DTYPE_INT32);
        int colsum = fission_reduce(ctx, KORCH_REDUCE_SUM, b, 1u, false); /* [N] */
        y = fission_binary(ctx, KORCH_EW_SUB, y, fission_binary(ctx, KORCH_EW_MUL, za, colsum));
    }
    if (split) {
        int a = fission_cast(ctx, imatmul_operand(ctx, fission_in(ctx, io->x), io->zx, true), KORCH_DTYPE_INT32);
        int ar = fission_shape(ctx, a)->rank;
        int rows = fission_reduce(ctx, KORCH_REDUCE_SUM, a, 1u << (ar - 1), true);
        int c = fission_binary(ctx, KORCH_EW_SUB, fission_scalar(ctx, 128, KORCH_DTYPE_INT32),
                               has_zb ? fission_cast(ctx, fission_in(ctx, io->zw), KORCH_DTYPE_INT32)
                                      : fission_scalar(ctx, 0, KORCH_DTYPE_INT32));
        y = fission_binary(ctx, KORCH_EW_ADD, y, fission_binary(ctx, KORCH_EW_MUL, rows, c));
    }
    *out = y;
    return KORCH_OK;
}

KORCH_FISSION_RULE(MatMulInteger) {
    int y;
    KORCH_TRY(integer_matmul(ctx, &INTEGER_IO, &y));
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* w's zero point as an int32 value viewed [M, 1, ...] (per output channel)
 * or a scalar */
static int channel_zero_point(korch_fission_ctx *ctx, int z, int rank) {
    const korch_shape *zs = fission_shape(ctx, z);
    korch_shape view = {.rank = korch_shape_numel(zs) == 1 ? 0 : rank};
    if (view.rank) {
        view.dims[0] = zs->dims[0];
        for (int k = 1; k < rank; k++) view.dims[k] = 1;
    }
    return fission_cast(ctx, korch_pgraph_reshape(ctx->pg, z, &view), KORCH_DTYPE_INT32);
}

/* Whether every element of the constant w minus the zero point zp (NULL:
 * 0; one value or one per output channel) fits in int8. */
static bool fits_int8(const korch_tensor *w, const korch_tensor *zp) {
    int64_t n = korch_tensor_numel(w), per = w->shape.dims[0] > 0 ? n / w->shape.dims[0] : 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t z = !zp ? 0 : korch_tensor_numel(zp) == 1 ? korch_tensor_get_i64(zp, 0) : korch_tensor_get_i64(zp, i / per);
        int64_t v = korch_tensor_get_i64(w, i) - z;
        if (v < -128 || v > 127) return false;
    }
    return true;
}

/* A constant of ones of x's shape with batch 1, 8-bit: convolved with
 * weights it gives, per output channel and position, the sum of the
 * weights over the taps that land inside the image (padding reads the zero
 * point, zero after the subtraction). */
static int ones_like_image(korch_fission_ctx *ctx, int x) {
    korch_shape s = *fission_shape(ctx, x);
    s.dims[0] = 1;
    korch_tensor t;
    if (korch_tensor_alloc(&t, KORCH_DTYPE_UINT8, &s) != KORCH_OK) return -1;
    memset(t.data, 1, korch_tensor_bytes(&t));
    return fission_constant(ctx, &t);
}

/* conv(x - zx, w') for the 8-bit x, the convolution reading x itself (zx
 * < 0: no zero point):
 *   - no padding: conv(x, w') - zx * S, S[m] the sum of w' over its input
 *     channels and taps, a constant [M, 1, ...];
 *   - padding and a constant zx: x padded with zx explicitly (a layout
 *     primitive: a padded tap then adds (zx - zx) w' = 0, as ONNX's padding
 *     with the zero point does), the convolution unpadded, minus zx * S;
 *   - padding and a zx computed at run time (DynamicQuantizeLinear's):
 *     conv(x, w') - zx * conv(ones, w'), the second term a constant map
 *     [1, M, O...] of the weight sums over the taps inside the image.
 * The first two keep the correction per channel, where the map is the
 * size of the output (and, past the folding limit, a second convolution
 * at every run). */
static int conv_minus_zp(korch_fission_ctx *ctx, const korch_prim_linear *p, int x, int w, int zx,
                         const korch_tensor *zx_const, int bias, bool *bias_used) {
    *bias_used = false;
    if (zx < 0) return korch_pgraph_linear(ctx->pg, p, x, w);
    korch_shape scalar = {.rank = 0};
    int z = fission_cast(ctx, korch_pgraph_reshape(ctx->pg, zx, &scalar), KORCH_DTYPE_INT32);
    bool padded = false;
    for (int d = 0; d < p->spatial; d++) padded |= p->pads_begin[d] != 0 || p->pads_end[d] != 0;
    if (padded && !zx_const) {
        int y = korch_pgraph_linear(ctx->pg, p, x, w);
        int map = korch_pgraph_linear(ctx->pg, p, ones_like_image(ctx, x), w);
        return fission_binary(ctx, KORCH_EW_SUB, y, fission_binary(ctx, KORCH_EW_MUL, z, map));
    }
    korch_prim_linear q = *p;
    if (padded) {
        int64_t begins[KORCH_MAX_RANK] = {0}, ends[KORCH_MAX_RANK] = {0};
        for (int d = 0; d < p->spatial; d++) {
            begins[2 + d] = p->pads_begin[d];
            ends[2 + d] = p->pads_end[d];
            q.pads_begin[d] = q.pads_end[d] = 0;
        }
        x = korch_pgraph_pad(ctx->pg, x, begins, ends, KORCH_PAD_CONSTANT, (double)korch_tensor_get_i64(zx_const, 0));
    }
    int y = korch_pgraph_linear(ctx->pg, &q, x, w);
    const korch_shape *ws = fission_shape(ctx, w);
    korch_shape per_channel = {.rank = ws->rank - 1, .dims = {ws->dims[0]}};
    for (int k = 1; k < per_channel.rank; k++) per_channel.dims[k] = 1;
    int sums = fission_reduce(ctx, KORCH_REDUCE_SUM, fission_cast(ctx, w, KORCH_DTYPE_INT32),
                              ((1u << ws->rank) - 1u) & ~1u, false);
    sums = korch_pgraph_reshape(ctx->pg, sums, &per_channel);
    int correction = fission_binary(ctx, KORCH_EW_MUL, z, sums);
    if (bias < 0) return fission_binary(ctx, KORCH_EW_SUB, y, correction);
    /* QLinearConv's bias and the correction: one per-channel constant */
    *bias_used = true;
    return fission_binary(ctx, KORCH_EW_ADD, y, fission_binary(ctx, KORCH_EW_SUB, bias, correction));
}

/* y = conv(x - x_zp, w - w_zp), exactly, as integer convolution primitives
 * (channels-first; ir/pgraph.h). With constant weights the convolution
 * reads the 8-bit x itself, so that one oneDNN int8 kernel computes it
 * with nothing before it (backend/dnnl/dnnl_imatmul.c):
 *   conv(x - zx, W') = conv(x, W') - zx * conv(ones, W'),  W' = w - zw
 * (ONNX pads x with zx, zero after the subtraction; conv(ones, W') sums the
 * weights over the taps inside the image: a constant map). uint8 weights
 * whose zero point leaves int8's range (asymmetric uint8 quantization) are
 * W' = w - 128 plus a window sum, each term an int8 convolution:
 *   conv(x', w - zw) = conv(x', w - 128) + (128 - zw) * conv(x', ones)
 * the window sum with one output channel per group, broadcast over the
 * group's output channels ([N, G, 1, O...] x [G, M/G, 1...]). All int32,
 * exact. Weights computed at run time: both zero points subtracted before
 * one integer convolution (the reference backend's exact loop). */
/* The integer convolution of io's operands, plus the int32 value bias
 * ([M, 1, ...]; -1: none), folded into the zero point's correction where
 * both are per-channel constants. */
static korch_status integer_conv(korch_fission_ctx *ctx, const integer_io *io, int bias, int *out) {
    int rank = fission_in_shape(ctx, 0)->rank;
    if (fission_has_in(ctx, io->zx) && korch_shape_numel(fission_in_shape(ctx, io->zx)) != 1)
        return fission_decline(ctx, "an integer convolution with a zero point of x that is not per tensor");
    korch_prim_linear p;
    KORCH_TRY(fission_conv_params_w(ctx, false, io->w, &p));
    const korch_tensor *wc = fission_const_in(ctx, io->w), *wz = fission_const_in(ctx, io->zw), *xz = fission_const_in(ctx, io->zx);
    bool has_zw = fission_has_in(ctx, io->zw) && !(wz && all_zero(wz));
    bool has_zx = fission_has_in(ctx, io->zx) && !(xz && all_zero(xz));
    int y;
    if (!wc || (has_zw && !wz)) {
        int x = imatmul_operand(ctx, fission_in(ctx, io->x), io->zx, false), w = fission_in(ctx, io->w);
        if (has_zw)
            w = fission_binary(ctx, KORCH_EW_SUB, fission_cast(ctx, w, KORCH_DTYPE_INT32),
                               channel_zero_point(ctx, fission_in(ctx, io->zw), rank));
        *out = x < 0 || w < 0 ? -1 : korch_pgraph_linear(ctx->pg, &p, x, w);
        if (bias >= 0 && *out >= 0) *out = fission_binary(ctx, KORCH_EW_ADD, *out, bias);
        return KORCH_OK;
    }
    int x = fission_in(ctx, io->x), zx = has_zx ? fission_in(ctx, io->zx) : -1;
    bool split = wc->dtype == KORCH_DTYPE_UINT8 && !fits_int8(wc, has_zw ? wz : NULL);
    int w = fission_cast(ctx, fission_in(ctx, io->w), KORCH_DTYPE_INT32);
    if (split) w = fission_binary(ctx, KORCH_EW_SUB, w, fission_scalar(ctx, 128, KORCH_DTYPE_INT32));
    else if (has_zw) w = fission_binary(ctx, KORCH_EW_SUB, w, channel_zero_point(ctx, fission_in(ctx, io->zw), rank));
    bool bias_used;
    y = conv_minus_zp(ctx, &p, x, w, zx, has_zx ? xz : NULL, split ? -1 : bias, &bias_used);
    if (split && y >= 0) {
        const korch_shape ws = *fission_shape(ctx, fission_in(ctx, io->w)), ys = *fission_out_shape(ctx, 0);
        int64_t G = p.group, M = ws.dims[0], Mg = M / G;
        korch_tensor ones;
        korch_shape os = ws;
        os.dims[0] = G;
        if (korch_tensor_alloc(&ones, KORCH_DTYPE_INT8, &os) != KORCH_OK) return KORCH_ERR_OUT_OF_MEMORY;
        memset(ones.data, 1, korch_tensor_bytes(&ones));
        bool unused;
        int sum = conv_minus_zp(ctx, &p, x, fission_constant(ctx, &ones), zx, has_zx ? xz : NULL, -1,
                                &unused); /* [N, G, O...] */
        int c = fission_binary(ctx, KORCH_EW_SUB, fission_scalar(ctx, 128, KORCH_DTYPE_INT32),
                               has_zw ? fission_cast(ctx, fission_in(ctx, io->zw), KORCH_DTYPE_INT32)
                                      : fission_scalar(ctx, 0, KORCH_DTYPE_INT32));
        int64_t nz = has_zw ? korch_shape_numel(fission_shape(ctx, fission_in(ctx, io->zw))) : 1;
        int t;
        if (G == 1) {
            if (nz > 1) { /* [M] -> [M, 1, ...] */
                korch_shape v = {.rank = rank - 1, .dims = {M}};
                for (int k = 1; k < v.rank; k++) v.dims[k] = 1;
                c = korch_pgraph_reshape(ctx->pg, c, &v);
            }
            t = fission_binary(ctx, KORCH_EW_MUL, sum, c);
        } else {
            korch_shape s5 = {.rank = rank + 1, .dims = {ys.dims[0], G, 1}}, c5 = {.rank = rank, .dims = {G, Mg}};
            for (int k = 2; k < rank; k++) s5.dims[k + 1] = ys.dims[k];
            for (int k = 2; k < rank; k++) c5.dims[k] = 1;
            t = korch_pgraph_reshape(ctx->pg, sum, &s5);
            if (nz > 1) c = korch_pgraph_reshape(ctx->pg, c, &c5);
            t = korch_pgraph_reshape(ctx->pg, fission_binary(ctx, KORCH_EW_MUL, t, c), &ys);
        }
        y = fission_binary(ctx, KORCH_EW_ADD, y, t);
    }
    if (bias >= 0 && !bias_used && y >= 0) y = fission_binary(ctx, KORCH_EW_ADD, y, bias);
    *out = y;
    return KORCH_OK;
}

KORCH_FISSION_RULE(ConvInteger) {
    int y;
    KORCH_TRY(integer_conv(ctx, &INTEGER_IO, -1, &y));
    fission_set_out(ctx, 0, y);
    return fission_done(ctx);
}

/* The requantization of QLinearMatMul and QLinearConv, the reference
 * kernels' float32 arithmetic step for step (ops/matmul_integer.c,
 * ops/conv_integer.c):
 *   m = x_scale * w_scale / y_scale     (float32, in that order; constants
 *                                        fold)
 *   y = saturate(rint(float(acc) * m) + y_zp)
 * the division exact (DIV alpha 1), NaN to the zero point (a step left out
 * when every multiplier is a finite constant: float(acc) * m is then never
 * NaN), ROUND (halves to even), the zero point added in float32 (exact
 * below 2^24; beyond, the clip saturates either way), CLIP and CAST to y's
 * type. xs and ws are already viewed to broadcast against acc. */
static float max_abs(const korch_tensor *t) {
    float m = 0;
    for (int64_t i = 0, n = korch_tensor_numel(t); i < n; i++) {
        float v = fabsf(((const float *)t->data)[i]);
        m = v > m || isnan(v) ? v : m;
    }
    return m;
}

/* Whether every multiplier x_scale * w_scale / y_scale is a finite float32
 * (constant scales): then float(acc) * m is never NaN, and the NaN step is
 * the identity. float32 products and quotients are monotonic in the
 * operands' magnitudes, so the largest is the one to check. */
static bool finite_multipliers(korch_fission_ctx *ctx) {
    const korch_tensor *xs = fission_const_in(ctx, 1), *ws = fission_const_in(ctx, 4), *ys = fission_const_in(ctx, 6);
    if (!xs || !ws || !ys || korch_tensor_numel(ys) != 1) return false;
    float y = fabsf(((const float *)ys->data)[0]);
    float m = max_abs(xs) * max_abs(ws); /* float32, as the folded constant */
    m /= y;
    return isfinite(m) && y > 0;
}

static int requantize(korch_fission_ctx *ctx, int acc, int xs, int ws) {
    const korch_shape *ys = fission_in_shape(ctx, 6);
    korch_shape scalar = {.rank = 0};
    int y_scale = fission_in(ctx, 6);
    if (ys->rank) y_scale = korch_pgraph_reshape(ctx->pg, y_scale, &scalar);
    int m = fission_binary_ab(ctx, KORCH_EW_DIV, fission_binary(ctx, KORCH_EW_MUL, xs, ws), y_scale, 1, 0);
    int v = fission_binary(ctx, KORCH_EW_MUL, fission_cast(ctx, acc, KORCH_DTYPE_FLOAT32), m);
    if (!finite_multipliers(ctx))
        v = fission_where(ctx, fission_binary(ctx, KORCH_EW_EQUAL, v, v), v,
                          fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32));
    v = fission_unary(ctx, KORCH_EW_ROUND, v);
    const korch_tensor *zc = fission_const_in(ctx, 7);
    if (fission_has_in(ctx, 7) && !(zc && all_zero(zc))) {
        int z = fission_in(ctx, 7);
        if (fission_shape(ctx, z)->rank) z = korch_pgraph_reshape(ctx->pg, z, &scalar);
        v = fission_binary(ctx, KORCH_EW_ADD, v, fission_cast(ctx, z, KORCH_DTYPE_FLOAT32));
    }
    korch_dtype out = fission_out_dtype(ctx, 0);
    v = fission_unary_ab(ctx, KORCH_EW_CLIP, v, (float)korch_quant_min(out), (float)korch_quant_max(out));
    return fission_cast(ctx, v, out);
}

/* y = requantize((a - a_zp) @ (b - b_zp)): the integer matmul of
 * MatMulInteger's rule, then the reference's float32 requantization; a's
 * scale per tensor or per row ([M] viewed [M, 1]), b's per tensor or per
 * column ([N], broadcast along the last axis). Bit for bit the reference
 * kernel; oneDNN runs the matmul as an int8 matmul with the requantization
 * inside where that is provably exact (backend/dnnl/dnnl_imatmul.c), else
 * it fuses into the generated kernel after it. */
KORCH_FISSION_RULE(QLinearMatMul) {
    int acc, rank = fission_out_shape(ctx, 0)->rank;
    KORCH_TRY(integer_matmul(ctx, &QLINEAR_IO, &acc));
    int xs = axis_view(ctx, fission_in(ctx, 1), rank >= 2 ? rank - 2 : 0, rank);
    int ws = axis_view(ctx, fission_in(ctx, 4), rank - 1, rank);
    fission_set_out(ctx, 0, requantize(ctx, acc, xs, ws));
    return fission_done(ctx);
}

/* y = requantize(conv(x - x_zp, w - w_zp) + B): the integer convolution of
 * ConvInteger's rule, the int32 bias per output channel ([M] viewed [M, 1,
 * ...]) added in int32 (folded into the zero point's correction), then the
 * reference's float32 requantization, w's scale per tensor or per output
 * channel. Bit for bit the reference kernel. */
KORCH_FISSION_RULE(QLinearConv) {
    int acc, rank = fission_in_shape(ctx, 0)->rank;
    int bias = fission_has_in(ctx, 8) ? axis_view(ctx, fission_in(ctx, 8), 1, rank) : -1;
    KORCH_TRY(integer_conv(ctx, &QLINEAR_IO, bias, &acc));
    int xs = axis_view(ctx, fission_in(ctx, 1), 1, rank), ws = axis_view(ctx, fission_in(ctx, 4), 1, rank);
    fission_set_out(ctx, 0, requantize(ctx, acc, xs, ws));
    return fission_done(ctx);
}
