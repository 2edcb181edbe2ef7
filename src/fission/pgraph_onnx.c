/* pgraph -> ONNX ModelProto (protobuf-c), see pgraph_onnx.h: the
 * non-layout primitives and the graph. Layouts are in pgraph_onnx_layout.c, the
 * writer's building blocks in pgraph_onnx_writer.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fission/pgraph_onnx_internal.h"
#include "ir/indexmap.h"
#include "ops/op.h"
#include "ops/quant.h"

/* ---- primitives ----------------------------------------------------------- */

static const char *in_name(korch_onnx_writer *w, const korch_pnode *n, int k) { return w->names[n->inputs[k]]; }
static const char *out_name(korch_onnx_writer *w, const korch_pnode *n) { return w->names[n->outputs[0]]; }

static Onnx__NodeProto *simple(korch_onnx_writer *w, const char *op, const korch_pnode *n) {
    const char *ins[3];
    for (int k = 0; k < n->n_inputs; k++) ins[k] = in_name(w, n, k);
    const char *out = out_name(w, n);
    return korch_onnx_node(w, op, n->n_inputs, ins, 1, &out);
}

static void emit_elementwise(korch_onnx_writer *w, const korch_pnode *n) {
    static const char *const direct[KORCH_EW_COUNT] = {
        [KORCH_EW_COPY] = "Identity", [KORCH_EW_NEG] = "Neg",         [KORCH_EW_ABS] = "Abs",
        [KORCH_EW_EXP] = "Exp",       [KORCH_EW_LOG] = "Log",         [KORCH_EW_SQRT] = "Sqrt",
        [KORCH_EW_RECIP] = "Reciprocal", [KORCH_EW_TANH] = "Tanh",    [KORCH_EW_ERF] = "Erf",
        [KORCH_EW_SIGMOID] = "Sigmoid", [KORCH_EW_RELU] = "Relu",     [KORCH_EW_FLOOR] = "Floor",
        [KORCH_EW_CEIL] = "Ceil",     [KORCH_EW_SIN] = "Sin",         [KORCH_EW_COS] = "Cos",
        [KORCH_EW_SOFTPLUS] = "Softplus", [KORCH_EW_NOT] = "Not",     [KORCH_EW_ADD] = "Add",
        [KORCH_EW_SUB] = "Sub",       [KORCH_EW_MUL] = "Mul",         [KORCH_EW_DIV] = "Div",
        [KORCH_EW_POW] = "Pow",       [KORCH_EW_MAX] = "Max",         [KORCH_EW_MIN] = "Min",
        [KORCH_EW_EQUAL] = "Equal",   [KORCH_EW_LESS] = "Less",       [KORCH_EW_LESS_EQUAL] = "LessOrEqual",
        [KORCH_EW_GREATER] = "Greater", [KORCH_EW_GREATER_EQUAL] = "GreaterOrEqual",
        [KORCH_EW_AND] = "And",       [KORCH_EW_OR] = "Or",           [KORCH_EW_WHERE] = "Where",
        [KORCH_EW_TAN] = "Tan",       [KORCH_EW_ASIN] = "Asin",       [KORCH_EW_ACOS] = "Acos",
        [KORCH_EW_ATAN] = "Atan",     [KORCH_EW_SINH] = "Sinh",       [KORCH_EW_COSH] = "Cosh",
        [KORCH_EW_ASINH] = "Asinh",   [KORCH_EW_ACOSH] = "Acosh",     [KORCH_EW_ATANH] = "Atanh",
        [KORCH_EW_ROUND] = "Round",   [KORCH_EW_SIGN] = "Sign",
    };
    const korch_prim_elementwise *e = &n->u.ew;
    korch_dtype dt = w->pg->values[n->inputs[0]].dtype;
    const char *x = in_name(w, n, 0), *y = out_name(w, n);
    if (direct[e->op]) {
        simple(w, direct[e->op], n);
        return;
    }
    switch (e->op) {
    case KORCH_EW_RSQRT: {
        const char *s = korch_onnx_temp(w);
        korch_onnx_node(w, "Sqrt", 1, &x, 1, &s);
        korch_onnx_node(w, "Reciprocal", 1, &s, 1, &y);
        break;
    }
    case KORCH_EW_CAST: korch_onnx_attr_int(w, simple(w, "Cast", n), "to", w->pg->values[n->outputs[0]].dtype); break;
    case KORCH_EW_LEAKY_RELU: korch_onnx_attr_float(w, simple(w, "LeakyRelu", n), "alpha", e->alpha); break;
    case KORCH_EW_MOD: korch_onnx_attr_int(w, simple(w, "Mod", n), "fmod", e->alpha != 0.0f); break;
    case KORCH_EW_ELU: korch_onnx_attr_float(w, simple(w, "Elu", n), "alpha", e->alpha); break;
    case KORCH_EW_CLIP: {
        const char *ins[3] = {x, isinf(e->alpha) ? "" : korch_onnx_const_scalar(w, dt, e->alpha),
                              isinf(e->beta) ? "" : korch_onnx_const_scalar(w, dt, e->beta)};
        korch_onnx_node(w, "Clip", 3, ins, 1, &y);
        break;
    }
    case KORCH_EW_AFFINE: {
        const char *m = korch_onnx_temp(w);
        const char *mul[2] = {x, korch_onnx_const_scalar(w, dt, e->alpha)};
        korch_onnx_node(w, "Mul", 2, mul, 1, &m);
        const char *add[2] = {m, korch_onnx_const_scalar(w, dt, e->beta)};
        korch_onnx_node(w, "Add", 2, add, 1, &y);
        break;
    }
    case KORCH_EW_POWC: {
        const char *ins[2] = {x, korch_onnx_const_scalar(w, dt, e->alpha)};
        korch_onnx_node(w, "Pow", 2, ins, 1, &y);
        break;
    }
    case KORCH_EW_PRELU: {
        /* ONNX PRelu broadcasts the slope to x only: expand x first if needed */
        const korch_shape *ys = &w->pg->values[n->outputs[0]].shape;
        if (!korch_shape_equal(ys, &w->pg->values[n->inputs[0]].shape)) {
            const char *e_out = korch_onnx_temp(w);
            const char *ins[2] = {x, korch_onnx_const_i64(w, ys->dims, ys->rank)};
            korch_onnx_node(w, "Expand", 2, ins, 1, &e_out);
            x = e_out;
        }
        const char *ins[2] = {x, in_name(w, n, 1)};
        korch_onnx_node(w, "PRelu", 2, ins, 1, &y);
        break;
    }
    default:
        if (w->status == KORCH_OK)
            w->status = korch_error(KORCH_ERR_INTERNAL, "ONNX export: elementwise %s has no ONNX form", korch_ew_name(e->op));
    }
}

static void emit_reduce(korch_onnx_writer *w, const korch_pnode *n) {
    static const char *const ops[] = {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"};
    const korch_prim_reduce *r = &n->u.reduce;
    int rank = w->pg->values[n->inputs[0]].shape.rank;
    int64_t axes[32];
    int count = 0;
    for (int k = 0; k < rank; k++)
        if (r->axes & (1u << k)) axes[count++] = k;
    const char *x = in_name(w, n, 0), *y = out_name(w, n);
    Onnx__NodeProto *node;
    if (count == 0) {
        node = korch_onnx_node(w, "Identity", 1, &x, 1, &y);
        return;
    }
    bool axes_input = r->op == KORCH_REDUCE_SUM ? w->opset >= 13 : w->opset >= 18;
    if (axes_input) {
        const char *ins[2] = {x, korch_onnx_const_i64(w, axes, count)};
        node = korch_onnx_node(w, ops[r->op], 2, ins, 1, &y);
    } else {
        node = korch_onnx_node(w, ops[r->op], 1, &x, 1, &y);
        korch_onnx_attr_ints(w, node, "axes", axes, count);
    }
    korch_onnx_attr_int(w, node, "keepdims", r->keepdims);
}

static void conv_attrs(korch_onnx_writer *w, Onnx__NodeProto *node, const korch_pnode *n, const int64_t *pads) {
    const korch_prim_linear *p = &n->u.linear;
    int s = p->spatial;
    const korch_shape *ws = &w->pg->values[n->inputs[1]].shape;
    korch_onnx_attr_ints(w, node, "kernel_shape", ws->dims + 2, s);
    korch_onnx_attr_ints(w, node, "strides", p->strides, s);
    korch_onnx_attr_ints(w, node, "dilations", p->dilations, s);
    korch_onnx_attr_ints(w, node, "pads", pads, 2 * s);
    korch_onnx_attr_int(w, node, "group", p->group);
}

static bool eight_bit(korch_dtype t) { return t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_INT8; }

static bool elementwise(const korch_pgraph *pg, int node, korch_ew_op op) {
    return node >= 0 && pg->nodes[node].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[node].u.ew.op == op;
}

/* The name of an 8-bit zero point of type dt (a scalar, or one value per
 * leading index: [M]) behind the int32 subtrahend z of an integer operand:
 * CAST of an 8-bit value (through a reshape: fission views a per-channel
 * zero point [M] as [M, 1, ...]), or an int32 constant of dt's values
 * (the clean-up folds a constant zero point's cast) written as an
 * initializer; NULL if it is neither. */
static const char *zero_point_8bit(korch_onnx_writer *w, int z, korch_dtype dt) {
    const korch_pgraph *pg = w->pg;
    const korch_pvalue *zv = &pg->values[z];
    int cast = zv->producer;
    if (elementwise(pg, cast, KORCH_EW_CAST)) {
        int q = pg->nodes[cast].inputs[0], r = pg->values[q].producer;
        if (r >= 0 && pg->nodes[r].kind == KORCH_PRIM_LAYOUT && pg->nodes[r].n_inputs == 1 &&
            korch_layout_as_reshape(pg, r) && pg->values[pg->nodes[r].inputs[0]].shape.rank <= 1)
            q = pg->nodes[r].inputs[0];
        bool shaped = pg->values[q].shape.rank == 0 || pg->values[q].shape.rank == 1;
        return pg->values[q].dtype == dt && shaped ? w->names[q] : NULL;
    }
    if (!zv->is_constant || zv->dtype != KORCH_DTYPE_INT32) return NULL;
    int64_t n = korch_tensor_numel(&zv->constant);
    korch_shape s = {.rank = n == 1 ? 0 : 1, .dims = {n}};
    korch_tensor t = {.dtype = dt, .shape = s};
    t.data = korch_onnx_alloc(w, (size_t)n + 1);
    if (!t.data) return NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = korch_tensor_get_i64(&zv->constant, i);
        if (v < korch_quant_min(dt) || v > korch_quant_max(dt)) return NULL;
        if (dt == KORCH_DTYPE_UINT8) ((uint8_t *)t.data)[i] = (uint8_t)v;
        else ((int8_t *)t.data)[i] = (int8_t)v;
    }
    return korch_onnx_add_initializer(w, &t, korch_onnx_temp(w));
}

/* The 8-bit q and zero point z of an integer operand v: v itself (z NULL),
 * or v = SUB(CAST(q), zero point) as the integer fission rules write it
 * for a source, or for weights computed at run time. */
static bool integer_operand(korch_onnx_writer *w, int v, const char **q, const char **z) {
    const korch_pgraph *pg = w->pg;
    *z = NULL;
    if (eight_bit(pg->values[v].dtype)) {
        *q = w->names[v];
        return true;
    }
    int sub = pg->values[v].producer;
    if (!elementwise(pg, sub, KORCH_EW_SUB)) return false;
    int a = pg->values[pg->nodes[sub].inputs[0]].producer;
    if (!elementwise(pg, a, KORCH_EW_CAST)) return false;
    int qa = pg->nodes[a].inputs[0];
    if (!eight_bit(pg->values[qa].dtype)) return false;
    *q = w->names[qa];
    *z = zero_point_8bit(w, pg->nodes[sub].inputs[1], pg->values[qa].dtype);
    return *z != NULL;
}

/* An 8-bit initializer of the int32 constant c where sign * c >= 0 (the
 * rest 0), as uint8; all of c as int8 when sign is 0. */
static const char *weights_8bit(korch_onnx_writer *w, const korch_tensor *c, int sign) {
    /* in the writer's arena: an initializer refers to its data until the model is written */
    korch_tensor t = {.dtype = sign ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8, .shape = c->shape};
    t.data = korch_onnx_alloc(w, (size_t)korch_tensor_numel(c) + 1);
    if (!t.data) return "";
    for (int64_t i = 0; i < korch_tensor_numel(c); i++) {
        int64_t v = korch_tensor_get_i64(c, i);
        if (sign) ((uint8_t *)t.data)[i] = (uint8_t)(sign * v > 0 ? sign * v : 0);
        else ((int8_t *)t.data)[i] = (int8_t)v;
    }
    return korch_onnx_add_initializer(w, &t, korch_onnx_temp(w));
}

/* A channels-last convolution as ONNX's channels-first one: the source
 * transposed to N, C, spatial... (the name returned), and the convolution's
 * channels-first result y_first transposed back into y. */
static const char *channels_first_source(korch_onnx_writer *w, int spatial, const char *x) {
    int64_t to_first[KORCH_MAX_RANK];
    for (int k = 0; k < spatial + 2; k++) to_first[k] = k == 0 ? 0 : k == 1 ? spatial + 1 : k - 1;
    const char *xt = korch_onnx_temp(w);
    Onnx__NodeProto *t = korch_onnx_node(w, "Transpose", 1, &x, 1, &xt);
    korch_onnx_attr_ints(w, t, "perm", to_first, spatial + 2);
    return xt;
}

static void channels_last_output(korch_onnx_writer *w, int spatial, const char *y_first, const char *y) {
    int64_t to_last[KORCH_MAX_RANK];
    for (int k = 0; k < spatial + 2; k++) to_last[k] = k == 0 ? 0 : k == spatial + 1 ? 1 : k + 1;
    Onnx__NodeProto *t = korch_onnx_node(w, "Transpose", 1, &y_first, 1, &y);
    korch_onnx_attr_ints(w, t, "perm", to_last, spatial + 2);
}

/* An integer convolution as ONNX ConvInteger: the 8-bit source with its
 * zero point; weights 8-bit as they are, an int32 constant that fits in
 * int8 as int8, or else (uint8 weights minus a zero point, in [-255, 255])
 * as the difference of two ConvIntegers of its positive and negative parts
 * (uint8 each): exact, and standard ONNX. */
static void emit_integer_conv(korch_onnx_writer *w, const korch_pnode *n) {
    const korch_prim_linear *p = &n->u.linear;
    const korch_pvalue *wv = &w->pg->values[n->inputs[1]];
    const char *xq, *xz, *wq = NULL, *wz = NULL;
    int64_t pads[6];
    for (int d = 0; d < p->spatial; d++) {
        pads[d] = p->pads_begin[d];
        pads[p->spatial + d] = p->pads_end[d];
    }
    bool fits = eight_bit(wv->dtype), in_range = wv->is_constant;
    for (int64_t i = 0; !fits && in_range && i < korch_tensor_numel(&wv->constant); i++) {
        int64_t v = korch_tensor_get_i64(&wv->constant, i);
        in_range = v >= -255 && v <= 255;
    }
    /* weights computed at run time: 8-bit, or 8-bit minus a zero point */
    if (!fits && !wv->is_constant && integer_operand(w, n->inputs[1], &wq, &wz)) fits = true;
    if (!integer_operand(w, n->inputs[0], &xq, &xz) || (!fits && !in_range)) {
        if (w->status == KORCH_OK)
            w->status = korch_error(KORCH_ERR_UNSUPPORTED, "ONNX export: an integer convolution whose operands are not "
                                                           "8-bit tensors with zero points or constant weights");
        return;
    }
    bool int8_fits = !fits;
    for (int64_t i = 0; int8_fits && i < korch_tensor_numel(&wv->constant); i++) {
        int64_t v = korch_tensor_get_i64(&wv->constant, i);
        int8_fits = v >= -128 && v <= 127;
    }
    const char *parts[2] = {wq ? wq : fits ? w->names[n->inputs[1]] : int8_fits ? weights_8bit(w, &wv->constant, 0)
                                                                       : weights_8bit(w, &wv->constant, 1),
                            fits || int8_fits ? NULL : weights_8bit(w, &wv->constant, -1)};
    /* channels-last (the layout pass's, an 8-bit source): ONNX's
     * ConvInteger is channels-first, so transpose around it */
    if (p->channels_last) xq = channels_first_source(w, p->spatial, xq);
    const char *y_out = p->channels_last ? korch_onnx_temp(w) : w->names[n->outputs[0]];
    const char *ys[2] = {parts[1] ? korch_onnx_temp(w) : y_out, korch_onnx_temp(w)};
    for (int k = 0; k < 2 && parts[k]; k++) {
        if (wz && !xz) { /* ConvInteger's x_zero_point comes before w's: a zero one */
            korch_tensor zero = {.dtype = w->pg->values[n->inputs[0]].dtype, .shape = {.rank = 0}}; /* x is 8-bit */
            zero.data = korch_onnx_alloc(w, 1);
            if (!zero.data) return;
            xz = korch_onnx_add_initializer(w, &zero, korch_onnx_temp(w));
        }
        const char *ins[4] = {xq, parts[k], xz, wz};
        Onnx__NodeProto *node = korch_onnx_node(w, "ConvInteger", wz ? 4 : xz ? 3 : 2, ins, 1, &ys[k]);
        conv_attrs(w, node, n, pads);
    }
    if (parts[1]) korch_onnx_node(w, "Sub", 2, ys, 1, &y_out);
    if (p->channels_last) channels_last_output(w, p->spatial, y_out, w->names[n->outputs[0]]);
}

static void emit_linear(korch_onnx_writer *w, const korch_pnode *n) {
    const korch_prim_linear *p = &n->u.linear;
    if (korch_pnode_is_integer_linear(w->pg, n) && n->u.linear.op == KORCH_LINEAR_CONV) {
        emit_integer_conv(w, n);
        return;
    }
    if (korch_pnode_is_integer_matmul(w->pg, n)) {
        /* two 8-bit operands: MatMulInteger without zero points; else an
         * int32 MatMul of the operands widened to int32 */
        korch_dtype ta = w->pg->values[n->inputs[0]].dtype, tb = w->pg->values[n->inputs[1]].dtype;
        if (ta != KORCH_DTYPE_INT32 && tb != KORCH_DTYPE_INT32) {
            simple(w, "MatMulInteger", n);
            return;
        }
        const char *ins[2] = {in_name(w, n, 0), in_name(w, n, 1)}, *y = out_name(w, n);
        for (int k = 0; k < 2; k++) {
            if (w->pg->values[n->inputs[k]].dtype == KORCH_DTYPE_INT32) continue;
            const char *wide = korch_onnx_temp(w);
            Onnx__NodeProto *c = korch_onnx_node(w, "Cast", 1, &ins[k], 1, &wide);
            korch_onnx_attr_int(w, c, "to", KORCH_DTYPE_INT32);
            ins[k] = wide;
        }
        korch_onnx_node(w, "MatMul", 2, ins, 1, &y);
        return;
    }
    if (p->op == KORCH_LINEAR_MATMUL) {
        simple(w, "MatMul", n);
        return;
    }
    int s = p->spatial;
    int64_t pads[6], extend[2 * KORCH_MAX_RANK] = {0};
    bool negative = false;
    for (int d = 0; d < s; d++) {
        pads[d] = p->pads_begin[d];
        pads[s + d] = p->pads_end[d];
        /* a negative end pad (output_shape beyond the full output) is a
         * zero extension after the convolution: ONNX pads must be >= 0 */
        if (p->pads_end[d] < 0) {
            extend[2 + s + 2 + d] = -p->pads_end[d];
            pads[s + d] = 0;
            negative = true;
        }
    }
    const char *ins[2] = {in_name(w, n, 0), in_name(w, n, 1)};
    /* channels_last: ONNX convolutions are channels-first, so transpose the
     * input to N,C,spatial and the result back */
    if (p->channels_last) ins[0] = channels_first_source(w, s, ins[0]);
    const char *y = negative || p->channels_last ? korch_onnx_temp(w) : out_name(w, n);
    Onnx__NodeProto *node = korch_onnx_node(w, p->op == KORCH_LINEAR_CONV ? "Conv" : "ConvTranspose", 2, ins, 1, &y);
    if (negative) {
        const char *pad_ins[2] = {y, korch_onnx_const_i64(w, extend, 2 * (s + 2))};
        const char *z = p->channels_last ? korch_onnx_temp(w) : out_name(w, n);
        korch_onnx_node(w, "Pad", 2, pad_ins, 1, &z);
        y = z;
    }
    if (p->channels_last) channels_last_output(w, s, y, out_name(w, n));
    const korch_shape *ws = &w->pg->values[n->inputs[1]].shape;
    korch_onnx_attr_ints(w, node, "kernel_shape", ws->dims + 2, s);
    korch_onnx_attr_ints(w, node, "strides", p->strides, s);
    korch_onnx_attr_ints(w, node, "dilations", p->dilations, s);
    korch_onnx_attr_ints(w, node, "pads", pads, 2 * s);
    korch_onnx_attr_int(w, node, "group", p->group);
    if (p->op == KORCH_LINEAR_CONV_TRANSPOSE) {
        bool any = false;
        for (int d = 0; d < s; d++) any = any || p->output_padding[d];
        if (any) korch_onnx_attr_ints(w, node, "output_padding", p->output_padding, s);
    }
}

/* The exported model has one opset (at least 14, export_opset): an opaque
 * operator from an older opset is written in its form at that opset.
 * Scatter (opset 9-10) is ScatterElements without a reduction; TopK before
 * opset 10 has K as its attribute `k`, since then as input 1. */
static const char *opaque_op_type(const korch_node *src, bool *k_to_input) {
    *k_to_input = !strcmp(src->op_type, "TopK") && src->opset < 10;
    return !strcmp(src->op_type, "Scatter") ? "ScatterElements" : src->op_type;
}

static void emit_opaque(korch_onnx_writer *w, const korch_pnode *n) {
    const korch_node *src = &w->pg->source->nodes[n->u.opaque.source_node];
    bool k_to_input;
    const char *op_type = opaque_op_type(src, &k_to_input);
    const char **ins = korch_onnx_alloc(w, sizeof(char *) * (size_t)(src->n_inputs + 2));
    const char **outs = korch_onnx_alloc(w, sizeof(char *) * (size_t)(src->n_outputs + 1));
    if (!ins || !outs) return;
    for (int k = 0; k < src->n_inputs; k++) {
        const korch_tensor *c = NULL;
        int j = korch_opaque_input(w->pg, n, k, &c);
        ins[k] = j >= 0 ? in_name(w, n, j)
                 : c    ? korch_onnx_add_initializer(w, c, korch_onnx_unique(w, w->pg->source->values[src->inputs[k]].name))
                        : "";
        if (!ins[k]) return;
    }
    int n_ins = src->n_inputs;
    if (k_to_input) {
        int64_t k = korch_node_attr_int(src, "k", -1);
        ins[n_ins++] = korch_onnx_const_i64(w, &k, 1);
    }
    for (int k = 0; k < src->n_outputs; k++) outs[k] = n->outputs[k] < 0 ? "" : w->names[n->outputs[k]];
    Onnx__NodeProto *node = korch_onnx_node(w, op_type, n_ins, ins, src->n_outputs, outs);
    if (!node) return;
    node->name = korch_onnx_str(w, "%s", src->name);
    for (int i = 0; i < src->n_attrs; i++) {
        const korch_attr *a = &src->attrs[i];
        if (k_to_input && !strcmp(a->name, "k")) continue;
        switch (a->type) {
        case KORCH_ATTR_INT: korch_onnx_attr_int(w, node, a->name, a->i); break;
        case KORCH_ATTR_FLOAT: korch_onnx_attr_float(w, node, a->name, a->f); break;
        case KORCH_ATTR_STRING: korch_onnx_attr_string(w, node, a->name, a->s ? a->s : ""); break;
        case KORCH_ATTR_INTS: korch_onnx_attr_ints(w, node, a->name, a->ints, a->count); break;
        case KORCH_ATTR_FLOATS: {
            Onnx__AttributeProto *ap = korch_onnx_add_attr(w, node, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
            float *copy = korch_onnx_alloc(w, sizeof *copy * (size_t)(a->count + 1));
            if (!ap || !copy) return;
            memcpy(copy, a->floats, sizeof *copy * (size_t)a->count);
            ap->n_floats = (size_t)a->count;
            ap->floats = copy;
            break;
        }
        case KORCH_ATTR_STRINGS: {
            Onnx__AttributeProto *ap = korch_onnx_add_attr(w, node, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
            ProtobufCBinaryData *copy = korch_onnx_alloc(w, sizeof *copy * (size_t)(a->count + 1));
            if (!ap || !copy) return;
            for (int k = 0; k < a->count; k++) {
                copy[k].data = (uint8_t *)korch_onnx_str(w, "%s", a->strings[k]);
                copy[k].len = copy[k].data ? strlen(a->strings[k]) : 0;
            }
            ap->n_strings = (size_t)a->count;
            ap->strings = copy;
            break;
        }
        case KORCH_ATTR_TENSOR: {
            Onnx__AttributeProto *ap = korch_onnx_add_attr(w, node, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
            if (ap) ap->t = korch_onnx_tensor_proto(w, a->tensor, "");
            break;
        }
        default:
            if (w->status == KORCH_OK)
                w->status = korch_error(KORCH_ERR_UNSUPPORTED, "ONNX export: attribute \"%s\" of node \"%s\" has an unsupported type",
                                        a->name, src->name);
        }
    }
}

/* ---- graph ----------------------------------------------------------------- */

static Onnx__ValueInfoProto *value_info(korch_onnx_writer *w, int v) {
    const korch_pvalue *pv = &w->pg->values[v];
    Onnx__ValueInfoProto *vi = korch_onnx_alloc(w, sizeof *vi);
    Onnx__TypeProto *tp = korch_onnx_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = korch_onnx_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = korch_onnx_alloc(w, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = korch_onnx_alloc(w, sizeof *dims * (size_t)(pv->shape.rank + 1));
    if (!vi || !tp || !tt || !sp || !dims) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int k = 0; k < pv->shape.rank; k++) {
        dims[k] = korch_onnx_alloc(w, sizeof **dims);
        if (!dims[k]) return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[k]);
        dims[k]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[k]->dim_value = pv->shape.dims[k];
    }
    sp->n_dim = (size_t)pv->shape.rank;
    sp->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)pv->dtype;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = w->names[v];
    vi->type = tp;
    return vi;
}

static const char *source_name(const korch_pgraph *pg, int source_value) {
    return pg->source && source_value >= 0 ? pg->source->values[source_value].name : NULL;
}

/* Graph inputs and outputs keep their op-graph names; other values keep the
 * name of the op-graph value they equal where that is still free. */
static void name_values(korch_onnx_writer *w) {
    const korch_pgraph *pg = w->pg;
    for (int i = 0; i < pg->n_inputs; i++) {
        int v = pg->inputs[i];
        const char *s = source_name(pg, pg->values[v].source_value);
        w->names[v] = (char *)korch_onnx_unique(w, s ? s : korch_onnx_str(w, "input_%d", i));
    }
    for (int i = 0; i < pg->n_outputs; i++) {
        int v = pg->outputs[i];
        const char *s = pg->source ? source_name(pg, pg->source->outputs[i]) : NULL;
        if (!w->names[v]) w->names[v] = (char *)korch_onnx_unique(w, s ? s : korch_onnx_str(w, "output_%d", i));
    }
    for (int v = 0; v < pg->n_values; v++) {
        if (w->names[v]) continue;
        const char *s = source_name(pg, pg->values[v].source_value);
        w->names[v] = (char *)korch_onnx_unique(w, s && korch_strmap_get(&w->used, s) < 0
                                                       ? s
                                                       : korch_onnx_str(w, "fission/v%d", v));
    }
}

static int export_opset(const korch_pgraph *pg) {
    int64_t v = pg->source ? korch_graph_opset(pg->source, "") : 13;
    if (v < 14) v = 14; /* Reshape's allowzero (empty tensors) */
    if (v > KORCH_OPSET_MAX) v = KORCH_OPSET_MAX;
    return (int)v;
}

static korch_status build(korch_onnx_writer *w, Onnx__ModelProto *model) {
    const korch_pgraph *pg = w->pg;
    w->names = korch_onnx_alloc(w, sizeof(char *) * (size_t)(pg->n_values + 1));
    if (!w->names) return w->status;
    name_values(w);
    int *order = malloc(((size_t)pg->n_nodes + 1) * sizeof *order), count = 0;
    bool *used = calloc((size_t)pg->n_values + 1, 1);
    if (!order || !used) {
        free(order);
        free(used);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
    }
    korch_status st = korch_pgraph_toposort(pg, order, &count);
    for (int i = 0; i < count && st == KORCH_OK && w->status == KORCH_OK; i++) {
        const korch_pnode *n = &pg->nodes[order[i]];
        for (int k = 0; k < n->n_inputs; k++) used[n->inputs[k]] = true;
        const korch_node *src = n->source_node >= 0 && pg->source ? &pg->source->nodes[n->source_node] : NULL;
        w->node_base = src ? src->name : "fission";
        switch (n->kind) {
        case KORCH_PRIM_ELEMENTWISE: emit_elementwise(w, n); break;
        case KORCH_PRIM_REDUCE: emit_reduce(w, n); break;
        case KORCH_PRIM_LAYOUT: korch_onnx_emit_layout(w, order[i]); break;
        case KORCH_PRIM_LINEAR: emit_linear(w, n); break;
        case KORCH_PRIM_OPAQUE: emit_opaque(w, n); break;
        default: st = korch_error(KORCH_ERR_INTERNAL, "ONNX export: unknown primitive kind");
        }
    }
    free(order);
    for (int v = 0; v < pg->n_values && st == KORCH_OK; v++)
        if (used[v] && pg->values[v].is_constant) korch_onnx_add_initializer(w, &pg->values[v].constant, w->names[v]);
    if (st == KORCH_OK) st = w->status;
    if (st != KORCH_OK) {
        free(used);
        return st;
    }

    Onnx__GraphProto *g = korch_onnx_alloc(w, sizeof *g);
    Onnx__ValueInfoProto **ins = korch_onnx_alloc(w, sizeof *ins * (size_t)(pg->n_inputs + 1));
    Onnx__ValueInfoProto **outs = korch_onnx_alloc(w, sizeof *outs * (size_t)(pg->n_outputs + 1));
    Onnx__ValueInfoProto **infos = korch_onnx_alloc(w, sizeof *infos * (size_t)(pg->n_values + 1));
    Onnx__OperatorSetIdProto *opset = korch_onnx_alloc(w, sizeof *opset);
    Onnx__OperatorSetIdProto **opsets = korch_onnx_alloc(w, sizeof *opsets);
    if (!g || !ins || !outs || !infos || !opset || !opsets) {
        free(used);
        return w->status;
    }
    onnx__graph_proto__init(g);
    for (int i = 0; i < pg->n_inputs; i++) ins[i] = value_info(w, pg->inputs[i]);
    bool *is_io = calloc((size_t)pg->n_values + 1, 1);
    if (!is_io) {
        free(used);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
    }
    for (int i = 0; i < pg->n_inputs; i++) is_io[pg->inputs[i]] = true;
    for (int i = 0; i < pg->n_outputs; i++) {
        outs[i] = value_info(w, pg->outputs[i]);
        is_io[pg->outputs[i]] = true;
    }
    size_t n_infos = 0;
    for (int v = 0; v < pg->n_values; v++) {
        const korch_pvalue *pv = &pg->values[v];
        if (is_io[v] || pv->is_constant || pv->producer < 0 || pg->nodes[pv->producer].dead) continue;
        infos[n_infos++] = value_info(w, v);
    }
    free(is_io);
    free(used);
    g->name = korch_onnx_str(w, "%s", pg->source && pg->source->name && *pg->source->name ? pg->source->name : "korch_fission");
    g->n_node = w->n_nodes;
    g->node = w->nodes;
    g->n_initializer = w->n_inits;
    g->initializer = w->inits;
    g->n_input = (size_t)pg->n_inputs;
    g->input = ins;
    g->n_output = (size_t)pg->n_outputs;
    g->output = outs;
    g->n_value_info = n_infos;
    g->value_info = infos;
    g->doc_string = (char *)"primitive graph written by korch fission";
    onnx__operator_set_id_proto__init(opset);
    opset->domain = (char *)"";
    opset->has_version = 1;
    opset->version = w->opset;
    opsets[0] = opset;
    model->has_ir_version = 1;
    model->ir_version = 8;
    model->n_opset_import = 1;
    model->opset_import = opsets;
    model->producer_name = (char *)"korch-fission";
    model->producer_version = (char *)korch_version();
    model->graph = g;
    return w->status;
}

static void writer_free(korch_onnx_writer *w) {
    for (size_t i = 0; i < w->n_blocks; i++) free(w->blocks[i]);
    free(w->blocks);
    free(w->nodes);
    free(w->inits);
    free(w->infos);
    korch_strmap_free(&w->used);
}

korch_status korch_pgraph_export_onnx_buffer(const korch_pgraph *pg, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    korch_onnx_writer w = {.pg = pg, .opset = export_opset(pg)};
    korch_strmap_init(&w.used);
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    korch_status st = build(&w, &model);
    if (st == KORCH_OK) {
        size_t n = onnx__model_proto__get_packed_size(&model);
        if (n > ((size_t)2 << 30) - 1) {
            st = korch_error(KORCH_ERR_UNSUPPORTED, "ONNX export: the model would be %zu bytes (protobuf's limit is 2 GiB)", n);
        } else {
            *data = malloc(n ? n : 1);
            if (!*data) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
            else *size = onnx__model_proto__pack(&model, *data);
        }
    }
    writer_free(&w);
    return st;
}

korch_status korch_pgraph_export_onnx(const korch_pgraph *pg, const char *path) {
    uint8_t *data = NULL;
    size_t size = 0;
    KORCH_TRY(korch_pgraph_export_onnx_buffer(pg, &data, &size));
    char pbuf[256];
    FILE *f = fopen(path, "wb");
    korch_status st = KORCH_OK;
    /* every failure says why (errno: no such folder, permission, disk full) */
    bool ok = f && fwrite(data, 1, size, f) == size;
    int err = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok)
        st = korch_error(KORCH_ERR_IO, "cannot write \"%s\": %s", korch_printable(path, pbuf, sizeof pbuf),
                         strerror(err));
    free(data);
    return st;
}
