/* Internal to the generator: the model under construction. Every value is
 * float32; the generator tracks its shape and a rough magnitude so that it
 * only emits operators whose preconditions hold (gen.c says why each
 * numerical guard exists). */
#ifndef KORCH_DIFFTEST_GEN_INTERNAL_H
#define KORCH_DIFFTEST_GEN_INTERNAL_H

#include "core/tensor.h"
#include "fission/pgraph_onnx_internal.h"
#include "gen.h"
#include "rng.h"

#define DT_MAX_VALS 160
#define DT_MAX_CONSTS 64
/* Elements of any one value: keeps a graph in the milliseconds. */
#define DT_MAX_ELEMS 12288
/* Magnitudes above this are brought back to ~1 before the next operator
 * (dt_tame): float32 keeps ~7 digits, so large intermediates turn into large
 * absolute errors after a cancellation or a normalisation downstream. */
#define DT_TAME_ABOVE 8.0

typedef struct dt_val {
    const char *name;
    korch_shape shape;
    double mag; /* rough scale of the elements (an input is uniform in [-1, 1]: 1) */
    double lower; /* > 0: every element is known to be >= lower */
    int uses;
    bool is_input;
    /* features only (gen_features.c); all zero without them */
    korch_dtype dtype; /* 0: float32; a half graph input or a half-typed value */
    bool hidden;       /* not read by the random walk (a half value before its Cast) */
    bool dequantized;  /* made by a DequantizeLinear (qdq) */
    bool exact;        /* every correct plan computes it bit for bit as the reference
                        * does (inputs, Casts of them, dequantized exact values,
                        * rounding-free operators): a QuantizeLinear of it cannot flip */
} dt_val;

typedef struct dt_const {
    const char *name;
    korch_shape shape;
    double lo, hi; /* range of its elements */
} dt_const;

typedef struct dt_gen {
    korch_onnx_writer w;
    dt_rng rng;
    int n_vals;
    dt_val vals[DT_MAX_VALS];
    int n_consts;
    dt_const consts[DT_MAX_CONSTS];
    int n_inputs;
    int inputs[4];
    dt_coverage *cov;
    unsigned features; /* DT_FEAT_* */
    dt_rng frng;       /* the features' own stream: the main one (rng) is drawn as without them */
    bool int8_weights; /* DT_FEAT_INT8: the next dequantized weights are symmetric int8 */
    bool pointwise;    /* DT_FEAT_HEAD: the next dt_conv is a 1x1 convolution */
} dt_gen;

/* ---- building blocks (gen_model.c) ---------------------------------------- */

void dt_cover(dt_gen *g, const char *what);
korch_shape dt_shape(int rank, const int64_t *dims);
int64_t dt_numel(const korch_shape *s);
/* A new value (name "vN"); -1 when out of room. */
int dt_new_val(dt_gen *g, const korch_shape *s, double mag);
/* Marks a value read (for branches and for choosing graph outputs). */
const char *dt_use(dt_gen *g, int v);
/* A random constant with elements uniform in [lo, hi): an initializer, or
 * (scalars, sometimes) a Constant node as exporters also write them. A
 * constant of the same shape and range may be reused: the same constant read
 * twice is a case of its own for the optimiser. */
const char *dt_const_rand(dt_gen *g, const korch_shape *s, double lo, double hi);
/* A constant with given data (not shared). */
const char *dt_const_data(dt_gen *g, const korch_shape *s, const float *data);
const char *dt_const_scalar(dt_gen *g, float v);
const char *dt_const_i64(dt_gen *g, const int64_t *v, int n);
Onnx__NodeProto *dt_node(dt_gen *g, const char *op, int n_in, const char *const *ins, int n_out,
                         const char *const *outs);
/* One-input, one-output node; the result has x's shape and magnitude mag. */
int dt_unary(dt_gen *g, const char *op, int x, double mag, Onnx__NodeProto **node);
/* Binary node of two names with a known result shape. */
int dt_binary_named(dt_gen *g, const char *op, const char *a, const char *b, const korch_shape *out, double mag);
korch_status dt_finish(dt_gen *g, const char *path, dt_gen_info *info);
/* A float32 (dtype 0) or `dtype` tensor value info of shape s (graph and
 * subgraph inputs and outputs). */
Onnx__ValueInfoProto *dt_value_info(korch_onnx_writer *w, const char *name, const korch_shape *s, korch_dtype dtype);

/* ---- emitters: each returns the new value, or -1 when x does not fit ------ */

/* gen_linear.c */
int dt_conv(dt_gen *g, int x);
int dt_conv_transpose(dt_gen *g, int x);
int dt_matmul(dt_gen *g, int x);
int dt_gemm(dt_gen *g, int x);

/* gen_elementwise.c */
int dt_binary_const(dt_gen *g, int x);
int dt_binary_values(dt_gen *g, int x);
int dt_activation(dt_gen *g, int x);
int dt_positive(dt_gen *g, int x, double lower); /* a value >= lower derived from x */
int dt_tame(dt_gen *g, int x); /* x brought to magnitude ~1 */

/* gen_shape.c */
int dt_reduce(dt_gen *g, int x);
int dt_softmax(dt_gen *g, int x);
int dt_normalize(dt_gen *g, int x);
int dt_layout(dt_gen *g, int x);
/* Feature "resize": a nearest Resize of x's last one or two axes, every
 * choice drawn from the features' stream; -1 when it does not fit. */
int dt_feature_resize(dt_gen *g, int x);
/* Feature "head", after the random walk: a 1x1 convolution of a channel
 * concatenation of a value and its upsampled halves (gen_shape.c). */
void dt_feature_head(dt_gen *g);
int dt_concat(dt_gen *g, int x);
int dt_split(dt_gen *g, int x);
int dt_pool(dt_gen *g, int x);

/* gen_features.c (only with g->features; see gen.h) */
void dt_feature_inputs(dt_gen *g);    /* half inputs made float, QDQ chains on exact inputs */
/* DT_FEAT_INT8, after the random walk: int8 convolutions of exact
 * dequantized values, their outputs read by nothing else (gen_features.c). */
void dt_feature_int8(dt_gen *g);
/* DT_FEAT_DYNQ, after the random walk: quantize_dynamic's MatMul of exact
 * values, read by nothing else (gen_features.c). */
void dt_feature_dynq(dt_gen *g);
/* DT_FEAT_QOP, after dynq: QuantizeLinear -> QLinearConv / QLinearMatMul ->
 * DequantizeLinear of exact values (gen_features.c). */
void dt_feature_qop(dt_gen *g);
/* DT_FEAT_INDEX, last: OneHot and ScatterElements of constant indices on
 * values of rank >= 2 (gen_index.c). */
void dt_feature_index(dt_gen *g);
/* DT_FEAT_IF, after index: run-time Ifs on a threshold of an exact value,
 * if-converted or (a Gather branch) opaque (gen_if.c). */
void dt_feature_if(dt_gen *g);
/* DT_FEAT_EINSUM, after the random walk: Einsum products, transposes and
 * sums of values of rank 2 or more (gen_einsum.c). */
void dt_feature_einsum(dt_gen *g);
/* Dequantized int8/uint8 weights (DT_FEAT_QDQ, sometimes): the name of a
 * DequantizeLinear output with elements within +-a, per tensor or per axis
 * `axis`; NULL: use float weights. */
const char *dt_feature_weights(dt_gen *g, const korch_shape *s, double a, int axis);
/* A constant stored as float16/bfloat16 and Cast to float (DT_FEAT_HALF,
 * sometimes): the Cast's output, or NULL. data is rounded to the format in
 * place, so that the caller's record of the values stays true; as_node: a
 * Constant node instead of an initializer. */
const char *dt_feature_half_const(dt_gen *g, const korch_shape *s, float *data, bool as_node);
/* A graph output wrapped (sometimes): Cast to a half type (and a
 * rounding-free half operator), or a terminal QuantizeLinear ->
 * DequantizeLinear pair; returns the value to declare as output. */
int dt_feature_output(dt_gen *g, int v);

#endif
