/* ONNX Runtime's quantized elementwise, pooling and Gemm operators
 * (com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
 * QLinearSoftmax, QLinearGlobalAveragePool, QLinearConcat, QGemm), lowered at validation
 * to the standard ONNX they are defined as (docs/quantization.md,
 * "QOperator models"; QGemm below):
 *
 *   y = QuantizeLinear(op(DequantizeLinear(a), DequantizeLinear(b), ...),
 *                      y_scale, y_zero_point)
 *
 * onnxruntime.quantization.quantize_static writes them in its QOperator
 * format around the standard QLinearConv and QLinearMatMul. ONNX Runtime's
 * kernels compute the same formula with the scales folded into ratios
 * (a_scale / y_scale ...), so an element can round to the neighbouring
 * integer where the two float32 results straddle a half: a one-quantum
 * difference, measured in docs/quantization.md. The lowering needs what the
 * quantizer always writes: every zero point of a quantized output present
 * (its type is the output's type); otherwise the node stays and is refused
 * by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ops/op.h"

/* Input k of n, or -1 when omitted. */
static int input(const korch_node *n, int k) { return k < n->n_inputs ? n->inputs[k] : -1; }

/* A new value "<node name>::<tag>" (made unique). */
static int fresh_value(korch_graph *g, int origin, const char *tag) {
    return korch_graph_fresh_value(g, g->nodes[origin].name, tag);
}

static int default_opset(const korch_graph *g, int at_least) {
    int64_t opset = korch_graph_opset(g, "");
    return opset < at_least ? at_least : opset > 1000000 ? 1000000 : (int)opset;
}

/* Sets n's op to the default-domain `op` reading ins (the outputs stay). */
static korch_status become(korch_graph *g, korch_node *n, const char *op, const int *ins, int n_in, int min_opset) {
    char *op_type = strdup(op), *domain = strdup("");
    int *inputs = malloc((size_t)(n_in > 0 ? n_in : 1) * sizeof *inputs);
    if (!op_type || !domain || !inputs) {
        free(op_type);
        free(domain);
        free(inputs);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    free(n->op_type);
    free(n->domain);
    free(n->inputs);
    n->op_type = op_type;
    n->domain = domain;
    n->inputs = inputs;
    memcpy(inputs, ins, (size_t)n_in * sizeof *ins);
    n->n_inputs = n_in;
    while (n->n_inputs > 1 && n->inputs[n->n_inputs - 1] < 0) n->n_inputs--;
    n->opset = default_opset(g, min_opset);
    return KORCH_OK;
}

/* Drops n's attributes except those named in keep (NULL-terminated). */
static void keep_attrs(korch_node *n, const char *const *keep) {
    int w = 0;
    for (int a = 0; a < n->n_attrs; a++) {
        bool k = false;
        for (int j = 0; keep && keep[j]; j++) k |= strcmp(n->attrs[a].name, keep[j]) == 0;
        if (k) n->attrs[w++] = n->attrs[a];
        else korch_attr_free(&n->attrs[a]);
    }
    n->n_attrs = w;
}

/* Appends `op` named "<origin>/<tag>" reading ins and writing a new value,
 * with a copy of origin's INT and FLOAT attributes named in copy
 * (NULL-terminated) and, when int_name is set, int_name = int_value.
 * Returns the new value, or -1 (out of memory). */
static int append(korch_graph *g, int origin, const char *op, const char *tag, const int *ins, int n_in,
                  const char *const *copy, const char *int_name, int64_t int_value, int min_opset) {
    int out = fresh_value(g, origin, tag);
    if (out < 0) return -1;
    int ni = korch_graph_add_node(g);
    if (ni < 0) return -1;
    korch_node *n = &g->nodes[ni], *o = &g->nodes[origin];
    size_t len = strlen(o->name) + strlen(tag) + 2;
    n->name = malloc(len);
    n->op_type = strdup(op);
    n->domain = strdup("");
    n->inputs = malloc((size_t)(n_in > 0 ? n_in : 1) * sizeof *n->inputs);
    n->outputs = malloc(sizeof *n->outputs);
    n->attrs = calloc((size_t)o->n_attrs + 1, sizeof *n->attrs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) return -1;
    snprintf(n->name, len, "%s/%s", o->name, tag);
    for (int a = 0; a < o->n_attrs; a++) {
        const korch_attr *s = &o->attrs[a];
        bool k = false;
        for (int j = 0; copy && copy[j]; j++) k |= strcmp(s->name, copy[j]) == 0;
        if (!k || (s->type != KORCH_ATTR_INT && s->type != KORCH_ATTR_FLOAT)) continue;
        korch_attr *d = &n->attrs[n->n_attrs];
        if (!(d->name = strdup(s->name))) return -1;
        d->type = s->type;
        d->i = s->i;
        d->f = s->f;
        n->n_attrs++;
    }
    if (int_name) {
        korch_attr *d = &n->attrs[n->n_attrs];
        if (!(d->name = strdup(int_name))) return -1;
        d->type = KORCH_ATTR_INT;
        d->i = int_value;
        n->n_attrs++;
    }
    n->opset = default_opset(g, min_opset);
    n->def = korch_op_find(op);
    memcpy(n->inputs, ins, (size_t)n_in * sizeof *ins);
    n->n_inputs = n_in;
    while (n->n_inputs > 1 && n->inputs[n->n_inputs - 1] < 0) n->n_inputs--;
    n->n_outputs = 1;
    n->outputs[0] = out;
    g->values[out].producer = ni;
    return out;
}

/* DequantizeLinear(q, scale, zero point) of origin's inputs q, s, z (z < 0:
 * none); axis >= 0 for a per-axis scale. */
static int dequantize(korch_graph *g, int origin, const char *tag, int q, int s, int z, int axis) {
    int ins[3] = {q, s, z};
    return append(g, origin, "DequantizeLinear", tag, ins, z >= 0 ? 3 : 2, NULL, axis >= 0 ? "axis" : NULL, axis,
                  13);
}

/* The node's output becomes QuantizeLinear(v, scale, zp): origin turned
 * into that QuantizeLinear. */
static korch_status quantize_into(korch_graph *g, int origin, int v, int scale, int zp) {
    korch_node *n = &g->nodes[origin];
    keep_attrs(n, NULL);
    int ins[3] = {v, scale, zp};
    return become(g, n, "QuantizeLinear", ins, 3, 13);
}

/* Whether inputs[k] is present for every k of the -1-terminated list. */
static bool present(const korch_node *n, const int *ks) {
    for (; *ks >= 0; ks++)
        if (input(n, *ks) < 0) return false;
    return true;
}

static korch_status refuse(const korch_node *n, const char *why) {
    char nbuf[160];
    korch_printable(n->name, nbuf, sizeof nbuf);
    return korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (com.microsoft %s): %s", nbuf, n->op_type, why);
}

#define OOM(n) korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory lowering node \"%s\"", (n)->name)

/* QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp) */
static korch_status lower_binary(korch_graph *g, int ni, const char *op) {
    const korch_node *n = &g->nodes[ni];
    if (!present(n, (const int[]){0, 1, 3, 4, 6, 7, -1}))
        return refuse(n, "needs A, B, their scales, C_scale and C_zero_point");
    int a = dequantize(g, ni, "dequantize_a", input(n, 0), input(n, 1), input(n, 2), -1);
    int b = a < 0 ? -1 : dequantize(g, ni, "dequantize_b", input(&g->nodes[ni], 3), input(&g->nodes[ni], 4),
                                    input(&g->nodes[ni], 5), -1);
    int ab[2] = {a, b};
    int c = b < 0 ? -1 : append(g, ni, op, op, ab, 2, NULL, NULL, 0, 7);
    if (c < 0) return OOM(&g->nodes[ni]);
    n = &g->nodes[ni];
    return quantize_into(g, ni, c, input(n, 6), input(n, 7));
}

/* QLinearSigmoid / QLinearLeakyRelu / QLinearSoftmax / QLinearGlobalAveragePool
 * (X, X_scale, X_zp, Y_scale, Y_zp), the attributes named in copy kept on op */
static korch_status lower_unary(korch_graph *g, int ni, const char *op, const char *const *copy) {
    const korch_node *n = &g->nodes[ni];
    if (!present(n, (const int[]){0, 1, 3, 4, -1})) return refuse(n, "needs X, X_scale, Y_scale and Y_zero_point");
    if (strcmp(op, "GlobalAveragePool") == 0 && korch_node_attr_int(n, "channels_last", 0) != 0)
        return refuse(n, "channels_last=1 is not supported (korch reads it channels-first, as ONNX's "
                         "GlobalAveragePool)");
    /* QLinearSoftmax's `opset` names the Softmax semantics it follows
     * (before 13: the input coerced to 2-D at axis) */
    bool softmax_11 = strcmp(op, "Softmax") == 0 && korch_node_attr_int(n, "opset", 13) < 13;
    int x = dequantize(g, ni, "dequantize_x", input(n, 0), input(n, 1), input(n, 2), -1);
    int y = x < 0 ? -1 : append(g, ni, op, op, &x, 1, copy, NULL, 0, strcmp(op, "Softmax") == 0 ? 13 : 6);
    if (y < 0) return OOM(&g->nodes[ni]);
    if (softmax_11) g->nodes[g->values[y].producer].opset = 11;
    n = &g->nodes[ni];
    return quantize_into(g, ni, y, input(n, 3), input(n, 4));
}

/* QLinearConcat (Y_scale, Y_zp, X0, X0_scale, X0_zp, X1, ...), axis */
static korch_status lower_concat(korch_graph *g, int ni) {
    const korch_node *n = &g->nodes[ni];
    int parts = (n->n_inputs - 2) / 3;
    if (n->n_inputs < 5 || (n->n_inputs - 2) % 3 != 0 || input(n, 0) < 0 || input(n, 1) < 0)
        return refuse(n, "needs Y_scale, Y_zero_point and a (tensor, scale, zero point) triple per input");
    int *xs = malloc((size_t)parts * sizeof *xs);
    if (!xs) return OOM(n);
    for (int k = 0; k < parts; k++)
        if (input(n, 2 + 3 * k) < 0 || input(n, 3 + 3 * k) < 0)
            return refuse(n, "needs a tensor and its scale in every (tensor, scale, zero point) triple");
    for (int k = 0; k < parts; k++) {
        char tag[32];
        snprintf(tag, sizeof tag, "dequantize_%d", k);
        const korch_node *m = &g->nodes[ni];
        xs[k] = dequantize(g, ni, tag, input(m, 2 + 3 * k), input(m, 3 + 3 * k), input(m, 4 + 3 * k), -1);
        if (xs[k] < 0) {
            free(xs);
            return OOM(&g->nodes[ni]);
        }
    }
    static const char *const axis[] = {"axis", NULL};
    int y = append(g, ni, "Concat", "Concat", xs, parts, axis, NULL, 0, 13);
    free(xs);
    if (y < 0) return OOM(&g->nodes[ni]);
    n = &g->nodes[ni];
    return quantize_into(g, ni, y, input(n, 0), input(n, 1));
}

/* A float32 scalar constant "<node>::<tag>" holding v; -1 when out of memory. */
static int scalar_constant(korch_graph *g, int origin, const char *tag, float v) {
    int c = fresh_value(g, origin, tag);
    if (c < 0) return -1;
    korch_value *val = &g->values[c];
    korch_shape s = {.rank = 0};
    if (korch_tensor_alloc(&val->constant, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    *(float *)val->constant.data = v;
    val->is_constant = true;
    val->dtype = KORCH_DTYPE_FLOAT32;
    val->shape = s;
    val->has_shape = true;
    return c;
}

/* QGemm (A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp), alpha,
 * transA, transB, as ONNX Runtime's kernel computes it: an exact integer
 * matmul, C (int32, in the accumulator's units) added, then the float32
 * scale:
 *   acc = MatMulInteger(A', B', a_zp, b_zp) + C     (A', B' transposed as asked)
 *   y   = float(acc) * (a_scale * b_scale) [* alpha]
 * quantized with y_scale and y_zero_point when given, else the float32
 * result. So the integer matmul runs as oneDNN's int8 matmul (fission,
 * rules_quant.c) with int8 weights, where a dequantized float32 Gemm would
 * read four times the bytes. b's zero point and scale: per tensor or per
 * output column. */
static korch_status lower_qgemm(korch_graph *g, int ni) {
    const korch_node *n = &g->nodes[ni];
    if (!present(n, (const int[]){0, 1, 3, 4, -1})) return refuse(n, "needs A, B and their scales");
    bool quantized = input(n, 7) >= 0;
    if (quantized && input(n, 8) < 0) return refuse(n, "a quantized output (y_scale) needs y_zero_point");
    float alpha = korch_node_attr_float(n, "alpha", 1.0f);
    bool trans_a = korch_node_attr_int(n, "transA", 0) != 0, trans_b = korch_node_attr_int(n, "transB", 0) != 0;
    int a = input(n, 0), b = input(n, 3);
    if (trans_a && (a = append(g, ni, "Transpose", "transpose_a", &a, 1, NULL, NULL, 0, 1)) < 0) return OOM(n);
    if (trans_b && (b = append(g, ni, "Transpose", "transpose_b", &b, 1, NULL, NULL, 0, 1)) < 0)
        return OOM(&g->nodes[ni]);
    n = &g->nodes[ni];
    int mm_in[4] = {a, b, input(n, 2), input(n, 5)};
    int acc = append(g, ni, "MatMulInteger", "MatMulInteger", mm_in, 4, NULL, NULL, 0, 10);
    if (acc < 0) return OOM(&g->nodes[ni]);
    n = &g->nodes[ni];
    if (input(n, 6) >= 0) {
        int ac[2] = {acc, input(n, 6)};
        if ((acc = append(g, ni, "Add", "bias", ac, 2, NULL, NULL, 0, 7)) < 0) return OOM(&g->nodes[ni]);
    }
    int f = append(g, ni, "Cast", "float", &acc, 1, NULL, "to", KORCH_DTYPE_FLOAT32, 6);
    n = &g->nodes[ni];
    int scales[2] = {input(n, 1), input(n, 4)};
    int s = f < 0 ? -1 : append(g, ni, "Mul", "scale", scales, 2, NULL, NULL, 0, 7);
    if (s >= 0 && alpha != 1.0f) {
        int sa[2] = {s, scalar_constant(g, ni, "alpha", alpha)};
        s = sa[1] < 0 ? -1 : append(g, ni, "Mul", "scale_alpha", sa, 2, NULL, NULL, 0, 7);
    }
    if (s < 0) return OOM(&g->nodes[ni]);
    int fs[2] = {f, s};
    if (!quantized) {
        korch_node *m = &g->nodes[ni];
        keep_attrs(m, NULL);
        return become(g, m, "Mul", fs, 2, 7);
    }
    int y = append(g, ni, "Mul", "scaled", fs, 2, NULL, NULL, 0, 7);
    if (y < 0) return OOM(&g->nodes[ni]);
    n = &g->nodes[ni];
    return quantize_into(g, ni, y, input(n, 7), input(n, 8));
}

korch_status korch_graph_lower_qlinear_contrib(korch_graph *g, int ni, bool *lowered) {
    const char *op = g->nodes[ni].op_type;
    static const char *const leaky[] = {"alpha", NULL}, *const axis_attr[] = {"axis", NULL};
    *lowered = true;
    if (strcmp(op, "QLinearAdd") == 0) return lower_binary(g, ni, "Add");
    if (strcmp(op, "QLinearMul") == 0) return lower_binary(g, ni, "Mul");
    if (strcmp(op, "QLinearSigmoid") == 0) return lower_unary(g, ni, "Sigmoid", NULL);
    if (strcmp(op, "QLinearLeakyRelu") == 0) return lower_unary(g, ni, "LeakyRelu", leaky);
    if (strcmp(op, "QLinearGlobalAveragePool") == 0) return lower_unary(g, ni, "GlobalAveragePool", NULL);
    if (strcmp(op, "QLinearSoftmax") == 0) return lower_unary(g, ni, "Softmax", axis_attr);
    if (strcmp(op, "QLinearConcat") == 0) return lower_concat(g, ni);
    if (strcmp(op, "QGemm") == 0) return lower_qgemm(g, ni);
    *lowered = false;
    return KORCH_OK;
}
