/* The generator's optional features (--features half,qdq; gen.h):
 *
 * - half: graph inputs declared float16/bfloat16, made float32 by a Cast or
 *   first read by a rounding-free half-typed operator; graph outputs rounded
 *   to a half type by a Cast (and sometimes a rounding-free half operator
 *   after it); constants stored as half initializers or Constant nodes and
 *   Cast to float. korch computes float32 inside (docs/precision.md), so
 *   the only rounding to 16 bits that plans and the reference may do
 *   differently is the final one of a half output: one step of the format,
 *   which is what the comparison allows (compare.c).
 * - qdq: QuantizeLinear -> DequantizeLinear pairs (uint8/int8, per tensor or
 *   per axis, random scales and zero points, uint8 without a zero point)
 *   and int8/uint8 weights dequantized in front of Conv, ConvTranspose,
 *   MatMul and Gemm. A QuantizeLinear whose input carries float noise (any
 *   rounding operator upstream) can round an element the other way in a
 *   correct plan: one step. Such a pair is only written at a graph output,
 *   where the comparison allows one step of its scale (docs/quantization.md);
 *   followed by further operators, the step would be amplified by a gain
 *   this tester does not bound. Pairs on exact values (graph inputs, their
 *   Casts, dequantized exact values and rounding-free operators of them)
 *   cannot flip, so those chain: Q -> DQ -> Relu/Neg/Abs/Transpose/MaxPool
 *   -> Q -> DQ ...
 *
 * Every choice here is drawn from g->frng, the features' own stream; the
 * main stream decides the graph as without features, as far as the new
 * values leave its choices the same. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "gen_internal.h"

static const int64_t FLOAT_TYPE = KORCH_DTYPE_FLOAT32;

static korch_dtype half_type(dt_gen *g) {
    return dt_chance(&g->frng, 0.5) ? KORCH_DTYPE_FLOAT16 : KORCH_DTYPE_BFLOAT16;
}

/* An initializer of any dtype (the data copied into the writer's arena). */
static const char *init_raw(dt_gen *g, korch_dtype dt, const korch_shape *s, const void *data) {
    korch_tensor t = {.dtype = dt, .shape = *s};
    size_t bytes = korch_tensor_bytes(&t);
    t.data = korch_onnx_alloc(&g->w, bytes + 1);
    if (!t.data) return "";
    if (bytes) memcpy(t.data, data, bytes);
    const char *name = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "c%d", g->w.counter++));
    return korch_onnx_add_initializer(&g->w, &t, name);
}

/* A half-typed initializer of the given values (already representable). */
static const char *init_half(dt_gen *g, korch_dtype dt, const korch_shape *s, const float *v) {
    int64_t n = dt_numel(s);
    uint16_t *bits = malloc(sizeof *bits * (size_t)(n + 1));
    if (!bits) return "";
    for (int64_t i = 0; i < n; i++) korch_half_store(dt, bits, i, v[i]);
    const char *name = init_raw(g, dt, s, bits);
    free(bits);
    return name;
}

static Onnx__NodeProto *cast(dt_gen *g, const char *in, const char *out, int64_t to) {
    const char *ins[] = {in}, *outs[] = {out};
    Onnx__NodeProto *n = dt_node(g, "Cast", 1, ins, 1, outs);
    korch_onnx_attr_int(&g->w, n, "to", to);
    return n;
}

/* ---- half ------------------------------------------------------------------ */

const char *dt_feature_half_const(dt_gen *g, const korch_shape *s, float *data, bool as_node) {
    if (!(g->features & DT_FEAT_HALF) || !dt_chance(&g->frng, 0.15)) return NULL;
    korch_dtype dt = half_type(g);
    int64_t n = dt_numel(s);
    uint16_t *bits = malloc(sizeof *bits * (size_t)(n + 1));
    if (!bits) return NULL;
    for (int64_t i = 0; i < n; i++) {
        korch_half_store(dt, bits, i, data[i]);
        data[i] = korch_half_load(dt, bits, i); /* the caller's values are the model's */
    }
    korch_tensor t = {.dtype = dt, .shape = *s};
    size_t bytes = korch_tensor_bytes(&t);
    t.data = korch_onnx_alloc(&g->w, bytes + 1);
    const char *name = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "c%d", g->w.counter++));
    const char *out = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "%s_f32", name));
    if (t.data) memcpy(t.data, bits, bytes);
    free(bits);
    if (!t.data) return NULL;
    if (as_node) { /* a half Constant node */
        const char *outs[] = {name};
        Onnx__NodeProto *c = dt_node(g, "Constant", 0, NULL, 1, outs);
        Onnx__AttributeProto *a = korch_onnx_add_attr(&g->w, c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
        if (a) a->t = korch_onnx_tensor_proto(&g->w, &t, "value");
        dt_cover(g, "half Constant node + Cast");
    } else {
        korch_onnx_add_initializer(&g->w, &t, name);
        dt_cover(g, dt == KORCH_DTYPE_FLOAT16 ? "float16 initializer + Cast" : "bfloat16 initializer + Cast");
    }
    cast(g, name, out, FLOAT_TYPE);
    return out;
}

/* A half-typed operator that rounds nothing (its float32 result is a half
 * value, or is rounded once at the output it feeds): Relu, Neg, Abs,
 * Max/Min with a half scalar, Mul by a power of two or -1. Returns the new
 * value (dtype dt), or -1. */
static int half_exact_op(dt_gen *g, int x, korch_dtype dt, bool *exact) {
    dt_rng *r = &g->frng;
    int kind = dt_int(r, 0, 5);
    int y = dt_new_val(g, &g->vals[x].shape, g->vals[x].mag);
    if (y < 0) return -1;
    g->vals[y].dtype = dt;
    *exact = true;
    const char *outs[] = {g->vals[y].name};
    if (kind <= 2) {
        static const char *const ops[] = {"Relu", "Neg", "Abs"};
        const char *ins[] = {dt_use(g, x)};
        dt_node(g, ops[kind], 1, ins, 1, outs);
        dt_cover(g, "half Relu/Neg/Abs");
        return y;
    }
    korch_shape sc = {0};
    float c;
    const char *op;
    if (kind == 3) {
        static const float pow2[] = {2, 0.5f, -1};
        c = DT_PICK(r, pow2), op = "Mul";
    } else {
        c = (float)dt_unif(r, -0.5, 0.5), op = kind == 4 ? "Max" : "Min";
        uint16_t b;
        korch_half_store(dt, &b, 0, c);
        c = korch_half_load(dt, &b, 0);
    }
    const char *ins[] = {dt_use(g, x), init_half(g, dt, &sc, &c)};
    dt_node(g, op, 2, ins, 1, outs);
    dt_cover(g, "half Mul/Max/Min with a half scalar");
    return y;
}

/* Input v declared half; the walk reads a float value made from it. */
static int half_input(dt_gen *g, int v) {
    dt_rng *r = &g->frng;
    korch_dtype dt = half_type(g);
    g->vals[v].dtype = dt;
    g->vals[v].hidden = true;
    dt_cover(g, dt == KORCH_DTYPE_FLOAT16 ? "float16 graph input" : "bfloat16 graph input");
    int src = v;
    bool exact = true;
    int form = dt_int(r, 0, 3);
    if (form == 2) { /* a half operator first: widen_half casts the input for it */
        int h = half_exact_op(g, v, dt, &exact);
        if (h >= 0) src = h, g->vals[h].hidden = true;
    } else if (form == 3) { /* a half Add with a half initializer of the input's shape */
        korch_shape s = g->vals[v].shape;
        int64_t n = dt_numel(&s);
        float *c = malloc(sizeof *c * (size_t)(n + 1));
        int h = c ? dt_new_val(g, &s, 1.5) : -1;
        if (h >= 0) {
            for (int64_t i = 0; i < n; i++) {
                uint16_t b;
                korch_half_store(dt, &b, 0, dt_unif(r, -0.5, 0.5));
                c[i] = korch_half_load(dt, &b, 0);
            }
            g->vals[h].dtype = dt;
            g->vals[h].hidden = true;
            const char *ins[] = {dt_use(g, v), init_half(g, dt, &s, c)}, *outs[] = {g->vals[h].name};
            dt_node(g, "Add", 2, ins, 1, outs);
            dt_cover(g, "half Add with a half initializer");
            src = h, exact = false;
        }
        free(c);
    }
    int y = dt_new_val(g, &g->vals[src].shape, g->vals[src].mag);
    if (y < 0) return v;
    cast(g, dt_use(g, src), g->vals[y].name, FLOAT_TYPE);
    g->vals[y].exact = exact;
    return y;
}

static int half_output(dt_gen *g, int v) {
    korch_dtype dt = half_type(g);
    int h = dt_new_val(g, &g->vals[v].shape, g->vals[v].mag);
    if (h < 0) return v;
    g->vals[h].dtype = dt;
    cast(g, dt_use(g, v), g->vals[h].name, dt);
    dt_cover(g, dt == KORCH_DTYPE_FLOAT16 ? "float16 graph output" : "bfloat16 graph output");
    bool exact;
    if (dt_chance(&g->frng, 0.4)) {
        int y = half_exact_op(g, h, dt, &exact);
        if (y >= 0) return y;
    }
    return h;
}

/* ---- QDQ ------------------------------------------------------------------- */

/* Q -> DQ of value x: the DequantizeLinear output (float, x's shape), or -1.
 * Scales put x's rough range over 30-120 steps (sometimes a little past the
 * type's range: saturation is part of the semantics). */
static int qdq_pair(dt_gen *g, int x, bool terminal) {
    dt_rng *r = &g->frng;
    korch_shape s = g->vals[x].shape;
    double mag = g->vals[x].mag > 0 ? g->vals[x].mag : 1;
    int y = dt_new_val(g, &s, mag);
    if (y < 0) return -1;
    bool u8 = dt_chance(r, 0.5);
    int axis = s.rank >= 1 && dt_chance(r, 0.35) ? dt_int(r, 0, s.rank - 1) : -1;
    int nc = axis < 0 ? 1 : (int)s.dims[axis];
    bool no_zp = u8 && axis < 0 && dt_chance(r, 0.15); /* uint8 by default: negatives saturate to 0 */
    float *scale = malloc(sizeof *scale * (size_t)(nc + 1));
    uint8_t *zp = malloc((size_t)nc + 1);
    if (!scale || !zp) {
        free(scale), free(zp);
        return -1;
    }
    bool zero = !u8 && dt_chance(r, 0.5);
    for (int c = 0; c < nc; c++) {
        scale[c] = (float)(mag * dt_unif(r, 0.8, 1.3) / dt_unif(r, 30, 120));
        int z = no_zp ? 0 : u8 ? dt_int(r, 100, 155) : zero ? 0 : dt_int(r, -20, 20);
        zp[c] = (uint8_t)(int8_t)z;
        if (u8) zp[c] = (uint8_t)z;
    }
    korch_shape ps = axis < 0 ? dt_shape(0, NULL) : dt_shape(1, (int64_t[]){nc});
    korch_dtype qt = u8 ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
    const char *sname = init_raw(g, KORCH_DTYPE_FLOAT32, &ps, scale);
    const char *zname = no_zp ? NULL : init_raw(g, qt, &ps, zp);
    const char *q = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "q%d", g->n_vals));
    const char *qin[] = {dt_use(g, x), sname, zname}, *qout[] = {q};
    Onnx__NodeProto *qn = dt_node(g, "QuantizeLinear", no_zp ? 2 : 3, qin, 1, qout);
    const char *din[] = {q, sname, zname}, *dout[] = {g->vals[y].name};
    Onnx__NodeProto *dn = dt_node(g, "DequantizeLinear", no_zp ? 2 : 3, din, 1, dout);
    if (axis >= 0) {
        int64_t a = dt_chance(r, 0.3) ? axis - s.rank : axis; /* negative axes too */
        korch_onnx_attr_int(&g->w, qn, "axis", a);
        korch_onnx_attr_int(&g->w, dn, "axis", a);
    }
    free(scale), free(zp);
    g->vals[y].exact = !terminal && g->vals[x].exact;
    g->vals[y].dequantized = true;
    dt_cover(g, u8 ? (no_zp ? "QDQ uint8 no zero point" : "QDQ uint8") : "QDQ int8");
    if (axis >= 0) dt_cover(g, "QDQ per axis");
    dt_cover(g, terminal ? "QDQ at a graph output" : "QDQ of an exact value");
    return y;
}

/* A rounding-free float operator of an exact value: Relu, Neg, Abs, the last
 * two axes transposed, or a 2x2 MaxPool; -1 when none fits. */
static int exact_op(dt_gen *g, int x) {
    dt_rng *r = &g->frng;
    korch_shape s = g->vals[x].shape;
    int kind = dt_int(r, 0, 4), y;
    if (kind == 4 && s.rank == 4 && s.dims[2] >= 2 && s.dims[3] >= 2) {
        korch_shape o = dt_shape(4, (int64_t[]){s.dims[0], s.dims[1], s.dims[2] / 2, s.dims[3] / 2});
        if ((y = dt_new_val(g, &o, g->vals[x].mag)) < 0) return -1;
        const char *ins[] = {dt_use(g, x)}, *outs[] = {g->vals[y].name};
        Onnx__NodeProto *n = dt_node(g, "MaxPool", 1, ins, 1, outs);
        korch_onnx_attr_ints(&g->w, n, "kernel_shape", (int64_t[]){2, 2}, 2);
        korch_onnx_attr_ints(&g->w, n, "strides", (int64_t[]){2, 2}, 2);
        dt_cover(g, "QDQ chain MaxPool");
    } else if (kind == 3 && s.rank >= 2) {
        int64_t perm[KORCH_MAX_RANK];
        for (int i = 0; i < s.rank; i++) perm[i] = i;
        perm[s.rank - 2] = s.rank - 1, perm[s.rank - 1] = s.rank - 2;
        korch_shape o = s;
        o.dims[s.rank - 2] = s.dims[s.rank - 1], o.dims[s.rank - 1] = s.dims[s.rank - 2];
        if ((y = dt_new_val(g, &o, g->vals[x].mag)) < 0) return -1;
        const char *ins[] = {dt_use(g, x)}, *outs[] = {g->vals[y].name};
        Onnx__NodeProto *n = dt_node(g, "Transpose", 1, ins, 1, outs);
        korch_onnx_attr_ints(&g->w, n, "perm", perm, s.rank);
        dt_cover(g, "QDQ chain Transpose");
    } else {
        static const char *const ops[] = {"Relu", "Neg", "Abs"};
        if ((y = dt_unary(g, ops[kind % 3], x, g->vals[x].mag, NULL)) < 0) return -1;
        dt_cover(g, "QDQ chain Relu/Neg/Abs");
    }
    g->vals[y].exact = true;
    return y;
}

static int qdq_chain(dt_gen *g, int x) {
    int y = qdq_pair(g, x, false);
    if (y < 0) return x;
    for (int k = dt_int(&g->frng, 0, 2); k > 0; k--) {
        int z = exact_op(g, y);
        if (z < 0) break;
        int w = qdq_pair(g, z, false);
        y = w < 0 ? z : w;
    }
    return y;
}

const char *dt_feature_weights(dt_gen *g, const korch_shape *s, double a, int axis) {
    dt_rng *r = &g->frng;
    bool forced = g->int8_weights; /* symmetric int8 (DT_FEAT_INT8); the draws below as before otherwise */
    if (!forced && (!(g->features & DT_FEAT_QDQ) || !dt_chance(r, 0.5))) return NULL;
    bool u8 = !forced && dt_chance(r, 0.3), per_axis = axis < s->rank && s->dims[axis] > 1 && dt_chance(r, 0.5);
    int nc = per_axis ? (int)s->dims[axis] : 1;
    int64_t n = dt_numel(s), inner = 1;
    for (int k = axis + 1; per_axis && k < s->rank; k++) inner *= s->dims[k];
    float *scale = malloc(sizeof *scale * (size_t)(nc + 1));
    uint8_t *zp = malloc((size_t)nc + 1), *q = malloc((size_t)n + 1);
    int *lim = malloc(sizeof *lim * (size_t)(nc + 1));
    const char *out = NULL;
    if (scale && zp && q && lim) {
        bool zero = forced || (!u8 && dt_chance(r, 0.6));
        for (int c = 0; c < nc; c++) {
            /* |q - zp| <= lim, scale = a / lim: elements within +-a, as float weights */
            lim[c] = dt_int(r, 20, 127);
            scale[c] = (float)(a / lim[c]);
            int z = u8 ? dt_int(r, 118, 137) : zero ? 0 : dt_int(r, -8, 8);
            zp[c] = u8 ? (uint8_t)z : (uint8_t)(int8_t)z;
        }
        for (int64_t i = 0; i < n; i++) {
            int c = per_axis ? (int)((i / inner) % nc) : 0;
            int z = u8 ? zp[c] : (int8_t)zp[c];
            int v = z + dt_int(r, -lim[c], lim[c]);
            if (u8) q[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            else q[i] = (uint8_t)(int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
        }
        korch_dtype qt = u8 ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
        korch_shape ps = per_axis ? dt_shape(1, (int64_t[]){nc}) : dt_shape(0, NULL);
        bool omit_zp = zero && dt_chance(r, 0.4);
        const char *ins[] = {init_raw(g, qt, s, q), init_raw(g, KORCH_DTYPE_FLOAT32, &ps, scale),
                             omit_zp ? NULL : init_raw(g, qt, &ps, zp)};
        out = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "dqw%d", g->w.counter++));
        const char *outs[] = {out};
        Onnx__NodeProto *dn = dt_node(g, "DequantizeLinear", omit_zp ? 2 : 3, ins, 1, outs);
        if (per_axis) korch_onnx_attr_int(&g->w, dn, "axis", dt_chance(r, 0.3) ? axis - s->rank : axis);
        dt_cover(g, u8 ? "DQ weights uint8" : "DQ weights int8");
        if (per_axis) dt_cover(g, "DQ weights per axis");
    }
    free(scale), free(zp), free(q), free(lim);
    return out;
}

/* ---- int8 convolutions ------------------------------------------------------- */

/* DT_FEAT_INT8: up to two convolutions (of 4-D values) or matmuls (x @ W,
 * batched weights; values of rank 2 and more) reading exact values made by
 * a DequantizeLinear (the QDQ chains of the graph inputs), with symmetric
 * int8 weights (per tensor or per output channel: a matmul's columns),
 * each quantized and dequantized at a graph output (or left float32): the
 * pattern korch runs as an int8 convolution or matmul with an 8-bit source,
 * weights recovered from the float32 constants and, with the quantizer, an
 * 8-bit destination. Made after the random walk, so nothing else reads them (a
 * quantizer of a computed value may flip a step: only at a graph output,
 * where the comparison allows it). The convolution's own choices come
 * from the features' stream. */
void dt_feature_int8(dt_gen *g) {
    if (!(g->features & DT_FEAT_INT8)) return;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        int rank = g->vals[v].shape.rank;
        if (!g->vals[v].exact || !g->vals[v].dequantized || rank < 2 || g->vals[v].dtype || !dt_chance(&g->frng, 0.7))
            continue;
        bool conv = rank == 4 && dt_chance(&g->frng, 0.6);
        dt_rng main = g->rng;
        g->rng = g->frng;
        g->int8_weights = true;
        int y = conv ? dt_conv(g, v) : dt_matmul(g, v);
        g->int8_weights = false;
        g->frng = g->rng;
        g->rng = main;
        if (y < 0) continue;
        made++;
        if (dt_chance(&g->frng, 0.75)) {
            int z = qdq_pair(g, y, true);
            if (z >= 0) dt_cover(g, conv ? "int8 convolution quantized at an output" : "int8 matmul quantized at an output");
        }
        dt_cover(g, conv ? "int8 convolution" : "int8 matmul");
    }
}

/* ---- dynamic quantization ---------------------------------------------------- */

/* DT_FEAT_DYNQ: up to two exact values (so that every correct plan
 * quantizes them alike) of rank >= 2 go through a MatMul as
 * onnxruntime.quantization.quantize_dynamic writes it:
 * DynamicQuantizeLinear -> MatMulInteger with constant weights [K, N]
 * (int8 with a zero point of 0, given or omitted; sometimes uint8 with a
 * zero point near 128, which takes them out of int8's range: no oneDNN
 * candidate) -> Cast to float -> Mul by the product of the two scales. The
 * result is read by nothing else. Every choice from the features' stream. */
void dt_feature_dynq(dt_gen *g) {
    if (!(g->features & DT_FEAT_DYNQ)) return;
    dt_rng *r = &g->frng;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (!x->exact || x->dtype || x->hidden || x->shape.rank < 2 || !dt_chance(r, 0.6)) continue;
        int64_t K = x->shape.dims[x->shape.rank - 1], N = dt_int(r, 2, 24);
        korch_shape ws = dt_shape(2, (int64_t[]){K, N}), out = x->shape;
        out.dims[out.rank - 1] = N;
        if (K < 1 || K > 512 || dt_numel(&out) > DT_MAX_ELEMS) continue;
        bool u8 = dt_chance(r, 0.25), omit_zp = !u8 && dt_chance(r, 0.5);
        uint8_t *w = malloc((size_t)(K * N) + 1), zp = u8 ? (uint8_t)dt_int(r, 100, 155) : 0;
        if (!w) return;
        for (int64_t i = 0; i < K * N; i++)
            w[i] = u8 ? (uint8_t)dt_int(r, 0, 255) : (uint8_t)(int8_t)dt_int(r, -127, 127);
        korch_dtype wt = u8 ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8;
        korch_shape scalar = dt_shape(0, NULL);
        const char *wname = init_raw(g, wt, &ws, w), *zname = omit_zp ? NULL : init_raw(g, wt, &scalar, &zp);
        free(w);
        const char *q = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "dq%d", g->w.counter++));
        const char *sx = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "dqs%d", g->w.counter++));
        const char *zx = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "dqz%d", g->w.counter++));
        const char *acc = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "acc%d", g->w.counter++));
        const char *accf = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "accf%d", g->w.counter++));
        const char *scale = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "dqss%d", g->w.counter++));
        const char *in[] = {dt_use(g, v)}, *qouts[] = {q, sx, zx};
        dt_node(g, "DynamicQuantizeLinear", 1, in, 3, qouts);
        const char *mins[] = {q, wname, zx, zname};
        dt_node(g, "MatMulInteger", omit_zp ? 3 : 4, mins, 1, &acc);
        Onnx__NodeProto *c = dt_node(g, "Cast", 1, &acc, 1, &accf);
        korch_onnx_attr_int(&g->w, c, "to", KORCH_DTYPE_FLOAT32);
        /* the weights' scale: y about as large as x */
        const char *sw = dt_const_scalar(g, (float)(1.0 / (127.0 * sqrt((double)K))));
        const char *sins[] = {sx, sw};
        dt_node(g, "Mul", 2, sins, 1, &scale);
        int y = dt_binary_named(g, "Mul", accf, scale, &out, x->mag);
        if (y < 0) return;
        made++;
        dt_cover(g, u8 ? "dynamic quantization, uint8 weights" : "dynamic quantization, int8 weights");
    }
}

/* ---- QOperator form ---------------------------------------------------------- */

/* An 8-bit scalar initializer (uint8 or int8). */
static const char *init_8bit(dt_gen *g, bool u8, int v) {
    uint8_t b = u8 ? (uint8_t)v : (uint8_t)(int8_t)v;
    korch_shape scalar = dt_shape(0, NULL);
    return init_raw(g, u8 ? KORCH_DTYPE_UINT8 : KORCH_DTYPE_INT8, &scalar, &b);
}

/* n float32 scales around base (one value: a scalar). */
static const char *init_scales(dt_gen *g, dt_rng *r, int64_t n, double base) {
    float *v = malloc(sizeof *v * (size_t)(n + 1));
    if (!v) return "";
    for (int64_t i = 0; i < n; i++) v[i] = (float)(base * dt_unif(r, 0.6, 1.4));
    korch_shape s = n == 1 ? dt_shape(0, NULL) : dt_shape(1, (int64_t[]){n});
    const char *name = init_raw(g, KORCH_DTYPE_FLOAT32, &s, v);
    free(v);
    return name;
}

static const char *fresh(dt_gen *g, const char *stem) {
    return korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "%s%d", stem, g->w.counter++));
}

/* DT_FEAT_QOP: up to two exact values (so that every correct plan quantizes
 * them alike) go through quantize_static's QOperator form: QuantizeLinear
 * -> QLinearConv (rank 4: 1x1 or 3x3, padded or not, stride 1 or 2, dense
 * or depthwise, per-channel or per-tensor weight scales, an int32 bias or
 * none) or QLinearMatMul (per-tensor or per-column weight scales) with
 * int8 weights -> DequantizeLinear. uint8 or int8 activations; the output
 * scale lets some values saturate. Bit for bit in every correct plan
 * (integer sums, the reference's float32 requantization), so the result is
 * exact. Every choice from the features' stream. */
void dt_feature_qop(dt_gen *g) {
    if (!(g->features & DT_FEAT_QOP)) return;
    dt_rng *r = &g->frng;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (!x->exact || x->dtype || x->hidden || x->shape.rank < 2 || !dt_chance(r, 0.6)) continue;
        bool conv = x->shape.rank == 4 && dt_chance(r, 0.7);
        korch_shape out = x->shape, ws;
        int64_t K, M, k = 1, pad = 0, stride = 1, group = 1;
        if (conv) {
            int64_t C = x->shape.dims[1];
            k = dt_chance(r, 0.5) ? 3 : 1;
            pad = k == 3 ? dt_int(r, 0, 1) : 0;
            stride = dt_chance(r, 0.3) ? 2 : 1;
            group = k == 3 && C > 1 && dt_chance(r, 0.3) ? C : 1;
            M = group == C ? C : dt_int(r, 2, 16);
            bool fits = true; /* the window inside the padded input (C's division truncates toward 0) */
            for (int d = 2; d < 4; d++) {
                fits &= x->shape.dims[d] + 2 * pad >= k;
                out.dims[d] = (x->shape.dims[d] + 2 * pad - k) / stride + 1;
            }
            if (!fits || C > 256) continue;
            out.dims[1] = M;
            K = C / group * k * k;
            ws = dt_shape(4, (int64_t[]){M, C / group, k, k});
        } else {
            K = x->shape.dims[x->shape.rank - 1];
            M = dt_int(r, 2, 24);
            out.dims[out.rank - 1] = M;
            ws = dt_shape(2, (int64_t[]){K, M});
        }
        if (K < 1 || K > 2304 || dt_numel(&out) > DT_MAX_ELEMS || dt_numel(&ws) > 65536) continue;
        bool u8 = dt_chance(r, 0.7), per_channel = dt_chance(r, 0.6), bias = conv && dt_chance(r, 0.5);
        double sx = (x->mag > 0 ? x->mag : 1) / 100.0;
        int zx = u8 ? dt_int(r, 118, 137) : dt_int(r, -8, 8), zy = u8 ? dt_int(r, 118, 137) : dt_int(r, -8, 8);
        int8_t *w = malloc((size_t)dt_numel(&ws) + 1);
        int32_t *b = malloc(sizeof *b * (size_t)(M + 1));
        if (!w || !b) {
            free(w), free(b);
            return;
        }
        for (int64_t i = 0; i < dt_numel(&ws); i++) w[i] = (int8_t)dt_int(r, -127, 127);
        for (int64_t i = 0; i < M; i++) b[i] = (int32_t)dt_int(r, -3000, 3000);
        /* y about as large as x, so that a few values saturate */
        const char *x_scale = init_scales(g, r, 1, sx), *x_zp = init_8bit(g, u8, zx);
        const char *w_name = init_raw(g, KORCH_DTYPE_INT8, &ws, w);
        int64_t nw = per_channel ? M : 1;
        const char *w_scale = init_scales(g, r, nw, 1.0 / (127.0 * sqrt((double)K)));
        korch_shape zs = nw == 1 ? dt_shape(0, NULL) : dt_shape(1, (int64_t[]){nw});
        int8_t *zeros = calloc((size_t)nw + 1, 1);
        const char *w_zp = zeros ? init_raw(g, KORCH_DTYPE_INT8, &zs, zeros) : "";
        free(zeros);
        const char *y_scale = init_scales(g, r, 1, sx * 0.8), *y_zp = init_8bit(g, u8, zy);
        korch_shape bs = dt_shape(1, (int64_t[]){M});
        const char *b_name = bias ? init_raw(g, KORCH_DTYPE_INT32, &bs, b) : NULL;
        free(w), free(b);
        const char *q = fresh(g, "qx"), *qy = fresh(g, "qy");
        const char *qins[] = {dt_use(g, v), x_scale, x_zp};
        dt_node(g, "QuantizeLinear", 3, qins, 1, &q);
        const char *lins[] = {q, x_scale, x_zp, w_name, w_scale, w_zp, y_scale, y_zp, b_name};
        Onnx__NodeProto *ln = dt_node(g, conv ? "QLinearConv" : "QLinearMatMul", bias ? 9 : 8, lins, 1, &qy);
        if (conv) {
            korch_onnx_attr_ints(&g->w, ln, "kernel_shape", (int64_t[]){k, k}, 2);
            korch_onnx_attr_ints(&g->w, ln, "pads", (int64_t[]){pad, pad, pad, pad}, 4);
            korch_onnx_attr_ints(&g->w, ln, "strides", (int64_t[]){stride, stride}, 2);
            korch_onnx_attr_int(&g->w, ln, "group", group);
        }
        int y = dt_new_val(g, &out, x->mag);
        if (y < 0) return;
        const char *dins[] = {qy, y_scale, y_zp}, *douts[] = {g->vals[y].name};
        dt_node(g, "DequantizeLinear", 3, dins, 1, douts);
        g->vals[y].exact = true;
        g->vals[y].dequantized = true;
        made++;
        dt_cover(g, conv ? (group > 1 ? "QLinearConv depthwise" : pad ? "QLinearConv padded" : "QLinearConv unpadded")
                         : "QLinearMatMul");
        dt_cover(g, u8 ? "QOperator uint8 activations" : "QOperator int8 activations");
    }
}

/* ---- inputs and outputs ---------------------------------------------------- */

void dt_feature_inputs(dt_gen *g) {
    int n = g->n_inputs;
    for (int i = 0; i < n; i++) {
        int v = g->inputs[i];
        g->vals[v].exact = true;
        if ((g->features & DT_FEAT_HALF) && dt_chance(&g->frng, 0.5)) v = half_input(g, v);
        if ((g->features & DT_FEAT_QDQ) && g->vals[v].exact && dt_chance(&g->frng, 0.6)) v = qdq_chain(g, v);
    }
}

int dt_feature_output(dt_gen *g, int v) {
    if (g->vals[v].dtype) return v; /* already half */
    if ((g->features & DT_FEAT_HALF) && dt_chance(&g->frng, 0.4)) return half_output(g, v);
    if ((g->features & DT_FEAT_QDQ) && dt_chance(&g->frng, 0.5)) {
        int y = qdq_pair(g, v, !g->vals[v].exact);
        if (y >= 0) return y;
    }
    return v;
}

/* ---- names ----------------------------------------------------------------- */

static const struct {
    const char *name;
    unsigned bit;
} feature_names[] = {{"half", DT_FEAT_HALF}, {"qdq", DT_FEAT_QDQ}, {"layout", DT_FEAT_LAYOUT},
                     {"resize", DT_FEAT_RESIZE}, {"int8", DT_FEAT_INT8}, {"head", DT_FEAT_HEAD},
                     {"dynq", DT_FEAT_DYNQ}, {"qop", DT_FEAT_QOP}, {"index", DT_FEAT_INDEX}, {"if", DT_FEAT_IF},
                     {"einsum", DT_FEAT_EINSUM}};

bool dt_features_parse(const char *text, unsigned *mask) {
    *mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "all")) {
            *mask |= DT_FEAT_GENERATOR | DT_FEAT_LAYOUT; /* every feature there is */
            continue;
        }
        if (!strcmp(t, "none")) continue;
        bool found = false;
        for (size_t k = 0; k < sizeof feature_names / sizeof feature_names[0]; k++)
            if (!strcmp(t, feature_names[k].name)) *mask |= feature_names[k].bit, found = true;
        if (!found) return false;
    }
    if (*mask & DT_FEAT_INT8) *mask |= DT_FEAT_QDQ; /* it reads the exact values QDQ chains make */
    return true;
}

const char *dt_features_name(unsigned mask, char *buf, size_t size) {
    buf[0] = 0;
    size_t used = 0;
    for (size_t k = 0; k < sizeof feature_names / sizeof feature_names[0]; k++)
        if (mask & feature_names[k].bit)
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s", used ? "," : "",
                                     feature_names[k].name);
    if (!used) snprintf(buf, size, "none");
    return buf;
}
