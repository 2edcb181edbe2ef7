/* ONNX Runtime's contrib operators that quantization tools write, lowered
 * to standard ONNX at validation (docs/quantization.md, "ONNX Runtime's
 * DynamicQuantizeLSTM"; the QOperator format's in contrib_qlinear.c).
 *
 * com.microsoft DynamicQuantizeLSTM is what
 * onnxruntime.quantization.quantize_dynamic makes of an LSTM: the ONNX LSTM
 * with its weights W and R stored as int8/uint8, transposed ([D, I, 4H] and
 * [D, H, 4H] where LSTM has [D, 4H, I] and [D, 4H, H]), each with a scale
 * and a zero point per direction ([D]) or per gate column ([D, 4H]):
 *
 *   X, W_q, R_q, B, sequence_lens, initial_h, initial_c, P,
 *   W_scale, W_zero_point, R_scale, R_zero_point -> Y, Y_h, Y_c
 *
 * korch computes it as what it stands for: the LSTM of the dequantized
 * weights, W = transpose((W_q - zp) * scale) in float32 as DequantizeLinear
 * defines it, with the node's attributes. ONNX Runtime's kernel also
 * quantizes X and the hidden state per step (its int8 GEMMs), so the two
 * differ by that activation rounding: a stated approximation, measured on
 * a real model in docs/quantization.md. Only with constant weights,
 * scales and zero points (as the quantizer writes them); otherwise the
 * node stays and is refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ops/op.h"

static const korch_tensor *const_input(const korch_graph *g, const korch_node *n, int k) {
    if (k >= n->n_inputs || n->inputs[k] < 0) return NULL;
    const korch_value *v = &g->values[n->inputs[k]];
    return v->is_constant && v->constant.data ? &v->constant : NULL;
}

/* The dequantized, transposed weights [D, 4H, I] of q [D, I, 4H]; scale and
 * zero point [D] or [D, 4H] (zero point optional). */
static korch_status dequantize_transposed(const korch_tensor *q, const korch_tensor *scale, const korch_tensor *zp,
                                          const char *what, const char *node, korch_tensor *out) {
    if (q->shape.rank != 3 || (q->dtype != KORCH_DTYPE_INT8 && q->dtype != KORCH_DTYPE_UINT8) ||
        scale->dtype != KORCH_DTYPE_FLOAT32)
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "node \"%s\" (DynamicQuantizeLSTM): %s must be a 3-D int8/uint8 tensor with a float32 "
                           "scale",
                           node, what);
    int64_t D = q->shape.dims[0], I = q->shape.dims[1], G = q->shape.dims[2];
    int64_t ns = korch_tensor_numel(scale), nz = zp ? korch_tensor_numel(zp) : 0;
    bool scale_ok = ns == D || ns == D * G, zp_ok = !zp || ((nz == D || nz == D * G) && zp->dtype == q->dtype);
    if (!scale_ok || !zp_ok)
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "node \"%s\" (DynamicQuantizeLSTM): %s's scale or zero point is neither per direction "
                           "(%lld values) nor per gate column (%lld), or the zero point's type differs",
                           node, what, (long long)D, (long long)(D * G));
    korch_shape s = {.rank = 3, .dims = {D, G, I}};
    KORCH_TRY(korch_tensor_alloc(out, KORCH_DTYPE_FLOAT32, &s));
    const float *sc = scale->data;
    float *w = out->data;
    for (int64_t d = 0; d < D; d++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t c = 0; c < G; c++) {
                int64_t p = ns == D ? d : d * G + c, pz = nz == D ? d : d * G + c;
                int64_t v = korch_tensor_get_i64(q, (d * I + i) * G + c) - (zp ? korch_tensor_get_i64(zp, pz) : 0);
                w[(d * G + c) * I + i] = (float)v * sc[p];
            }
    return KORCH_OK;
}

/* A new constant value named "<base>::dequantized" holding t (taken). */
static int add_constant(korch_graph *g, const char *base, korch_tensor *t) {
    size_t len = strlen(base) + 48;
    char *name = malloc(len);
    if (!name) return -1;
    snprintf(name, len, "%s::dequantized", base);
    for (int k = 1; korch_graph_find_value(g, name) >= 0; k++) snprintf(name, len, "%s::dequantized.%d", base, k);
    int v = korch_graph_intern_value(g, name);
    free(name);
    if (v < 0) return -1;
    korch_value *val = &g->values[v];
    val->is_constant = true;
    val->constant = *t;
    val->dtype = t->dtype;
    val->shape = t->shape;
    val->has_shape = true;
    t->data = NULL;
    t->owns_data = false;
    return v;
}

static korch_status lower_dynamic_quantize_lstm(korch_graph *g, int ni) {
    korch_node *n = &g->nodes[ni];
    char nbuf[160];
    korch_printable(n->name, nbuf, sizeof nbuf);
    const korch_tensor *wq = const_input(g, n, 1), *rq = const_input(g, n, 2);
    const korch_tensor *ws = const_input(g, n, 8), *wz = const_input(g, n, 9);
    const korch_tensor *rs = const_input(g, n, 10), *rz = const_input(g, n, 11);
    if (n->n_inputs < 11 || !wq || !rq || !ws || !rs || (n->n_inputs > 9 && n->inputs[9] >= 0 && !wz) ||
        (n->n_inputs > 11 && n->inputs[11] >= 0 && !rz))
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "node \"%s\" (com.microsoft DynamicQuantizeLSTM): korch computes it as an LSTM of its "
                           "dequantized weights, which needs W, R, their scales and zero points as initializers",
                           nbuf);
    korch_tensor w = {0}, r = {0};
    korch_status st = dequantize_transposed(wq, ws, wz, "W", nbuf, &w);
    if (st == KORCH_OK) st = dequantize_transposed(rq, rs, rz, "R", nbuf, &r);
    if (st != KORCH_OK) {
        korch_tensor_free(&w);
        korch_tensor_free(&r);
        return st;
    }
    char *wname = strdup(g->values[n->inputs[1]].name), *rname = strdup(g->values[n->inputs[2]].name);
    int wv = wname ? add_constant(g, wname, &w) : -1;
    int rv = rname && wv >= 0 ? add_constant(g, rname, &r) : -1;
    free(wname);
    free(rname);
    korch_tensor_free(&w);
    korch_tensor_free(&r);
    if (wv < 0 || rv < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory lowering node \"%s\"", nbuf);
    n = &g->nodes[ni]; /* interning adds values, never nodes: n is unchanged, re-read for plainness */
    n->inputs[1] = wv;
    n->inputs[2] = rv;
    if (n->n_inputs > 8) n->n_inputs = 8; /* X, W, R, B, sequence_lens, initial_h, initial_c, P */
    while (n->n_inputs > 3 && n->inputs[n->n_inputs - 1] < 0) n->n_inputs--;
    char *op = strdup("LSTM"), *domain = strdup("");
    if (!op || !domain) {
        free(op);
        free(domain);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory lowering node \"%s\"", nbuf);
    }
    free(n->op_type);
    free(n->domain);
    n->op_type = op;
    n->domain = domain;
    int64_t opset = korch_graph_opset(g, "");
    n->opset = opset < 7 ? 7 : (int)opset;
    return KORCH_OK;
}

korch_status korch_graph_lower_contrib(korch_graph *g, int node) {
    const korch_node *n = &g->nodes[node];
    if (n->dead || strcmp(n->domain, "com.microsoft") != 0) return KORCH_OK;
    if (strcmp(n->op_type, "DynamicQuantizeLSTM") == 0) return lower_dynamic_quantize_lstm(g, node);
    bool lowered;
    KORCH_TRY(korch_graph_lower_qlinear_contrib(g, node, &lowered)); /* contrib_qlinear.c */
    return KORCH_OK; /* what is not lowered is refused by name in validation */
}
