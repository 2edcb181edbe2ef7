/* The primitive graph (pgraph): the IR every stage after fission works on.
 *
 * Operator fission splits compound ONNX operators into five kinds of
 * primitives. Each primitive has exactly one output (opaque nodes may have
 * several). Values are tensors; constants (weights, folded tables) are values
 * with data.
 *
 *   elementwise  y = f(x0, x1, x2) with numpy broadcasting of the inputs to
 *                the output shape (unary, binary, ternary scalar maps)
 *   reduce       y = reduce_{axes}(x) (sum, max, min, mean), keepdims or not
 *   layout       a pure index map: every output element is one input element
 *                (or a pad value). See korch_index_map below.
 *   linear       batched matmul or convolution (no bias: bias is an add)
 *   opaque       an ONNX operator kept whole; always a kernel of its own
 *
 * The layout index map is the point of having layout primitives: a code
 * generator folds it into the load addresses of whatever kernel consumes it,
 * so transposes, slices, pads, pooling windows and nearest resizes cost no
 * memory traffic of their own once fused.
 */
#ifndef KORCH_IR_PGRAPH_H
#define KORCH_IR_PGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"
#include "ir/graph.h"

typedef enum korch_prim_kind {
    KORCH_PRIM_ELEMENTWISE,
    KORCH_PRIM_REDUCE,
    KORCH_PRIM_LAYOUT,
    KORCH_PRIM_LINEAR,
    KORCH_PRIM_OPAQUE,
    KORCH_PRIM_KIND_COUNT
} korch_prim_kind;

/* ---- elementwise ------------------------------------------------------- */

/* Scalar functions. `alpha`/`beta` parameters are listed where used. The
 * arity is fixed per function (korch_ew_arity). */
#define KORCH_EW_LIST(X)                                                                           \
    /* unary */                                                                                    \
    X(COPY, 1)                                                                                     \
    X(NEG, 1)                                                                                      \
    X(ABS, 1)                                                                                      \
    X(EXP, 1)                                                                                      \
    X(LOG, 1)                                                                                      \
    X(SQRT, 1)                                                                                     \
    X(RSQRT, 1)                                                                                    \
    X(RECIP, 1)                                                                                    \
    X(TANH, 1)                                                                                     \
    X(ERF, 1)                                                                                      \
    X(SIGMOID, 1)                                                                                  \
    X(RELU, 1)                                                                                     \
    X(FLOOR, 1)                                                                                    \
    X(CEIL, 1)                                                                                     \
    X(SIN, 1)                                                                                      \
    X(COS, 1)                                                                                      \
    X(SOFTPLUS, 1)    /* log(1 + exp(x)), computed stably */                                       \
    X(NOT, 1)         /* bool */                                                                   \
    X(CAST, 1)        /* to the output value's dtype; alpha 1: bf16 precision's (ir/precision.c) */ \
    X(LEAKY_RELU, 1)  /* x >= 0 ? x : alpha * x */                                                 \
    X(ELU, 1)         /* x >= 0 ? x : alpha * (exp(x) - 1) */                                      \
    X(CLIP, 1)        /* min(max(x, alpha), beta) */                                               \
    X(AFFINE, 1)      /* alpha * x + beta */                                                       \
    X(POWC, 1)        /* pow(x, alpha) */                                                          \
    /* binary */                                                                                   \
    X(ADD, 2)                                                                                      \
    X(SUB, 2)                                                                                      \
    X(MUL, 2)                                                                                      \
    X(DIV, 2)         /* alpha 1: exact (QuantizeLinear), never a product by the reciprocal */     \
    X(POW, 2)                                                                                      \
    X(MAX, 2)                                                                                      \
    X(MIN, 2)                                                                                      \
    X(PRELU, 2)       /* x >= 0 ? x : slope * x */                                                 \
    X(EQUAL, 2)                                                                                    \
    X(LESS, 2)                                                                                     \
    X(LESS_EQUAL, 2)                                                                               \
    X(GREATER, 2)                                                                                  \
    X(GREATER_EQUAL, 2)                                                                            \
    X(AND, 2)                                                                                      \
    X(OR, 2)                                                                                       \
    /* ternary */                                                                                  \
    X(WHERE, 3)       /* cond ? a : b */                                                           \
    /* appended later (existing values stay put): more unary maths, and Mod */                     \
    X(TAN, 1)                                                                                      \
    X(ASIN, 1)                                                                                     \
    X(ACOS, 1)                                                                                     \
    X(ATAN, 1)                                                                                     \
    X(SINH, 1)                                                                                     \
    X(COSH, 1)                                                                                     \
    X(ASINH, 1)                                                                                    \
    X(ACOSH, 1)                                                                                    \
    X(ATANH, 1)                                                                                    \
    X(ROUND, 1)       /* to nearest, halves to even (nearbyint) */                                 \
    X(SIGN, 1)        /* -1, 0 or 1; NaN stays NaN */                                              \
    X(MOD, 2)         /* alpha 1: C fmod (sign of a); alpha 0: Python % (sign of b); x mod 0 = NaN, \
                         stored as 0 in integer dtypes */

typedef enum korch_ew_op {
#define KORCH_EW_ENUM(name, arity) KORCH_EW_##name,
    KORCH_EW_LIST(KORCH_EW_ENUM)
#undef KORCH_EW_ENUM
    KORCH_EW_COUNT
} korch_ew_op;

int korch_ew_arity(korch_ew_op op);
const char *korch_ew_name(korch_ew_op op);

typedef struct korch_prim_elementwise {
    korch_ew_op op;
    float alpha, beta;
} korch_prim_elementwise;

/* ---- reduce ------------------------------------------------------------ */

typedef enum korch_reduce_op { KORCH_REDUCE_SUM, KORCH_REDUCE_MAX, KORCH_REDUCE_MIN, KORCH_REDUCE_MEAN } korch_reduce_op;

typedef struct korch_prim_reduce {
    korch_reduce_op op;
    uint32_t axes; /* bit k set: input axis k is reduced */
    bool keepdims;
} korch_prim_reduce;

/* ---- layout ------------------------------------------------------------ */

/* How one input coordinate is computed from the output coordinates o[]:
 *
 *     t    = sum_j coef[j] * o[j] + offset
 *     t    = div > 1 ? floor(t / div) : t        (div >= 1)
 *     t    = mod > 0 ? t mod mod : t             (mod >= 0; 0 means none)
 *     in_k = table ? table[t] : t                (table has table_size entries)
 *
 * Affine terms cover transpose, slice (with steps), broadcast/expand (coef 0),
 * squeeze/unsqueeze, constant pad (offset -pad; bounds checked) and pooling
 * windows (in_h = stride*o_oh + dilation*o_kh - pad). div/mod cover reshape
 * (split and merge of dimensions). Tables cover gather with constant indices,
 * nearest resize, reflect and edge pads. A table entry < 0 means "out of
 * bounds" (the pad value is used). */
typedef struct korch_index_term {
    int64_t coef[KORCH_MAX_RANK];
    int64_t offset;
    int64_t div;
    int64_t mod;
    int64_t *table; /* owned; NULL when unused */
    int64_t table_size;
} korch_index_term;

/* The map from the output to one input of a layout node. */
typedef struct korch_index_map {
    int input_rank;
    korch_index_term terms[KORCH_MAX_RANK]; /* one per input dimension */
    /* false when every output coordinate maps in bounds (no checks needed) */
    bool may_be_out_of_bounds;
} korch_index_map;

/* Where a layout node came from; the map alone defines its meaning, the tag
 * only helps export (native ONNX ops) and humans. */
typedef enum korch_layout_tag {
    KORCH_LAYOUT_GENERIC,
    KORCH_LAYOUT_TRANSPOSE,
    KORCH_LAYOUT_RESHAPE,
    KORCH_LAYOUT_SLICE,
    KORCH_LAYOUT_CONCAT,
    KORCH_LAYOUT_PAD,
    KORCH_LAYOUT_EXPAND,
    KORCH_LAYOUT_GATHER,
    KORCH_LAYOUT_RESIZE_NEAREST,
    KORCH_LAYOUT_WINDOW, /* pooling windows: (..., oh, ow, kh, kw) */
    KORCH_LAYOUT_DEPTH_SPACE,
    KORCH_LAYOUT_TAG_COUNT
} korch_layout_tag;

/* Output element at coordinates o is input p's element at map[p](o) for the
 * first p whose map is in bounds; if none is, it is pad_value. Concat is one
 * map per input with an offset along the axis; everything else has one input. */
typedef struct korch_prim_layout {
    korch_layout_tag tag;
    int n_maps;              /* == node's n_inputs */
    korch_index_map *maps;   /* owned */
    double pad_value;        /* in the output dtype */
    /* Tag-specific parameters kept for export and explain (informative). */
    int64_t perm[KORCH_MAX_RANK]; /* TRANSPOSE */
    int axis;                     /* CONCAT, GATHER */
} korch_prim_layout;

/* ---- linear ------------------------------------------------------------ */

typedef enum korch_linear_op {
    KORCH_LINEAR_MATMUL,         /* y[b,m,n] = sum_k a[b,m,k] b[b,k,n]; numpy batch broadcasting */
    KORCH_LINEAR_CONV,           /* NC(D)HW input, (M, C/group, k...) weight */
    KORCH_LINEAR_CONV_TRANSPOSE, /* NC(D)HW input, (C, M/group, k...) weight */
} korch_linear_op;

/* Convolutions with channels_last read an N(D)HWC input and write an N(D)HWC
 * output; the weight keeps its ONNX layout (backends reorder constant weights
 * once). The layout pass (src/relayout/, docs/layout.md) sets it. */

typedef struct korch_prim_linear {
    korch_linear_op op;
    /* convolution parameters (spatial rank = input rank - 2) */
    int spatial;
    int64_t group;
    int64_t strides[3], dilations[3];
    int64_t pads_begin[3], pads_end[3];
    int64_t output_padding[3]; /* conv transpose */
    bool channels_last;        /* conv / conv transpose: N(D)HWC input and output */
    /* Both operands rounded to bfloat16 (ties to even), products summed in
     * float32; the output stays float32, an operand is float32 or the
     * bfloat16 output of a precision cast. Set by korch_pgraph_set_precision
     * (`korch optimize --precision bf16`, docs/precision.md): the primitive's
     * meaning, so the interpreter rounds too and every kernel is checked
     * against it exactly as a float32 one. */
    bool bf16;
} korch_prim_linear;

/* ---- opaque ------------------------------------------------------------ */

/* Outputs of a primitive (opaque nodes: the operator's, index for index).
 * At most 8 of them have values (read by something or a graph output):
 * kernels' interfaces are sized by 8 per node; an operator with more
 * outputs (a Loop carrying 23 values, SLANet) keeps values for the ones
 * read only. */
#define KORCH_PNODE_MAX_OUTPUTS 32
#define KORCH_PNODE_MAX_LIVE_OUTPUTS 8

typedef struct korch_prim_opaque {
    int source_node; /* index into the source op graph; run with its reference kernel */
    const char *reason; /* static string: why the operator was not decomposed (docs/fission.md) */
    /* Bit k: the source node's input k is a constant of the op graph, read
     * from there and not a primitive input. Set only for operators with
     * more inputs than a primitive holds (QLinearConv with a bias has 9),
     * so that they can still run opaque; korch_opaque_input() maps. */
    uint32_t from_source;
} korch_prim_opaque;

/* ---- graph ------------------------------------------------------------- */

typedef struct korch_pvalue {
    korch_dtype dtype;
    korch_shape shape;
    int producer;        /* node index or -1 */
    bool is_constant;
    korch_tensor constant; /* when is_constant (owned) */
    int graph_input;     /* index into pgraph inputs, or -1 */
    int graph_output;    /* index into pgraph outputs, or -1 */
    int source_value;    /* op-graph value this equals, or -1 (for names) */
} korch_pvalue;

typedef struct korch_pnode {
    korch_prim_kind kind;
    union {
        korch_prim_elementwise ew;
        korch_prim_reduce reduce;
        korch_prim_layout layout;
        korch_prim_linear linear;
        korch_prim_opaque opaque;
    } u;
    int n_inputs;
    int inputs[KORCH_MAX_RANK]; /* value indices (at most 8; concat with more inputs is split) */
    int n_outputs;               /* 1 except for opaque nodes */
    int outputs[KORCH_PNODE_MAX_OUTPUTS]; /* -1: an output nothing reads (opaque nodes) */
    int source_node;             /* op-graph node this primitive came from (for explain), -1 if none */
    bool dead;
} korch_pnode;

typedef struct korch_pgraph {
    const korch_graph *source; /* the op graph (names, opaque nodes); not owned */
    int n_values, cap_values;
    korch_pvalue *values;
    int n_nodes, cap_nodes;
    korch_pnode *nodes;
    int n_inputs;
    int *inputs;  /* value indices, in op-graph input order */
    int n_outputs;
    int *outputs; /* value indices, in op-graph output order */
} korch_pgraph;

korch_status korch_pgraph_create(const korch_graph *source, korch_pgraph **out);
void korch_pgraph_free(korch_pgraph *pg);

/* Adds a non-constant value (its producer is set by the node constructors). */
int korch_pgraph_add_value(korch_pgraph *pg, korch_dtype dtype, const korch_shape *shape);
/* A new graph input (appended to pg->inputs), or -1. */
int korch_pgraph_add_input(korch_pgraph *pg, korch_dtype dtype, const korch_shape *shape);
/* Appends value v to the graph outputs. */
korch_status korch_pgraph_add_output(korch_pgraph *pg, int v);
/* Adds a constant; takes ownership of t's data. */
int korch_pgraph_add_constant(korch_pgraph *pg, korch_tensor *t);
int korch_pgraph_add_scalar(korch_pgraph *pg, float v);

/* Node constructors: check operands, infer the output dtype and shape, add
 * the output value, and return its index (or -1 with the error set). */
int korch_pgraph_elementwise(korch_pgraph *pg, korch_ew_op op, int n, const int *inputs, float alpha, float beta,
                             korch_dtype cast_to);
int korch_pgraph_reduce(korch_pgraph *pg, korch_reduce_op op, int x, uint32_t axes, bool keepdims);
/* Takes ownership of the maps' tables. */
int korch_pgraph_layout(korch_pgraph *pg, korch_layout_tag tag, int n, const int *inputs, const korch_shape *out_shape,
                        const korch_index_map *maps, double pad_value);
int korch_pgraph_linear(korch_pgraph *pg, const korch_prim_linear *params, int x, int w);
/* Opaque: outputs get the source node's inferred dtypes/shapes. Returns the
 * node index. */
int korch_pgraph_opaque(korch_pgraph *pg, int source_node, int n, const int *inputs);
/* The outputs of op-graph node source_node an opaque primitive gives values
 * (all present ones, or, past KORCH_PNODE_MAX_LIVE_OUTPUTS, the ones read). */
int korch_opaque_live_outputs(const korch_graph *g, int source_node);

/* The primitive input index of an opaque node's source input k: -1 when
 * the input is absent (optional, omitted) or read from the op graph's
 * constant (u.opaque.from_source; then *constant is set). */
int korch_opaque_input(const korch_pgraph *pg, const korch_pnode *n, int k, const korch_tensor **constant);

/* Evaluates one layout map at output coordinates o: writes the input
 * coordinates and returns false when they are out of bounds. */
bool korch_index_map_eval(const korch_index_map *map, const korch_shape *input_shape, const int64_t *o,
                          int64_t *in_coords);

korch_status korch_pgraph_toposort(const korch_pgraph *pg, int *order, int *count);

/* Numerical reference for primitives: runs the pgraph node by node. inputs
 * and outputs are as for korch_reference_run. */
korch_status korch_pgraph_interpret(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *outputs);
/* The same with the bf16 marks ignored: the float32 graph a bf16 one was
 * made from, which must match the reference executor (verify/plan_check.c). */
korch_status korch_pgraph_interpret_fp32(const korch_pgraph *pg, const korch_tensor *inputs, korch_tensor *outputs);
/* The graph with the values it rounds chaotically moved by a relative
 * 2^-20 (a seeded random sign per element) first: the operands of its bf16
 * primitives that are not constants, before they are rounded to bfloat16,
 * and the dividends of its exact divisions (QuantizeLinear's x / scale),
 * before they are rounded to integers. A second correct computation, for
 * the noise rules of plan verification (docs/precision.md, bf16; docs/
 * quantization.md, quantization). */
korch_status korch_pgraph_interpret_jittered(const korch_pgraph *pg, const korch_tensor *inputs,
                                             korch_tensor *outputs, uint64_t seed);

/* The scalar meaning of an elementwise function (float maths in double). */
double korch_ew_apply(korch_ew_op op, double a, double b, double c, float alpha, float beta);

/* Human-readable dump, one node per line. */
void korch_pgraph_dump(const korch_pgraph *pg, void *file /* FILE* */);

/* ---- additions (fission stage) ------------------------------------------ */

/* Adds a constant that borrows t's data (not copied, not freed). The data
 * must outlive the pgraph; used for op-graph initializers, since the source
 * op graph must outlive the pgraph anyway (opaque nodes run from it). */
int korch_pgraph_add_constant_ref(korch_pgraph *pg, const korch_tensor *t);

/* Runs one node on given tensors (outputs preallocated with the node's output
 * dtypes and shapes). The interpreter's kernels, for constant propagation and
 * for checking generated kernels one node at a time. */
korch_status korch_pgraph_run_node(const korch_pgraph *pg, int node, korch_tensor *const *inputs,
                                   korch_tensor *const *outputs);

/* Number of live (not dead) nodes. */
int korch_pgraph_live_nodes(const korch_pgraph *pg);

/* Drops dead nodes and values nothing refers to, renumbering the rest (graph
 * inputs are always kept, in order). Indices held outside are invalidated. */
korch_status korch_pgraph_compact(korch_pgraph *pg);

/* An integer linear primitive: a MATMUL (MatMulInteger's) or a channels-
 * first CONV (ConvInteger's) of integer operands (uint8, int8, or int32: an
 * 8-bit tensor minus its zero point) with an int32 output, the exact sum
 * the operator defines (docs/quantization.md, "Integer matmuls and
 * convolutions"). Every other linear primitive is float32 (or bf16). */
static inline bool korch_dtype_is_imatmul_operand(korch_dtype d) {
    return d == KORCH_DTYPE_UINT8 || d == KORCH_DTYPE_INT8 || d == KORCH_DTYPE_INT32;
}
bool korch_pnode_is_integer_linear(const korch_pgraph *pg, const korch_pnode *n);
/* ... and a MATMUL one. */
bool korch_pnode_is_integer_matmul(const korch_pgraph *pg, const korch_pnode *n);

/* ---- precision (ir/precision.c) ------------------------------------------ */

/* The arithmetic of the linear primitives, chosen at optimize time and
 * recorded in the plan (docs/precision.md, "Computing in bfloat16"). */
typedef enum korch_precision {
    KORCH_PRECISION_FP32, /* the model's own: float32 throughout */
    KORCH_PRECISION_BF16, /* linear primitives on bfloat16 operands, float32 sums */
} korch_precision;

/* "fp32"/"f32"/"float32" or "bf16"/"bfloat16"; false otherwise. */
bool korch_precision_parse(const char *text, korch_precision *out);
const char *korch_precision_token(korch_precision p); /* "fp32", "bf16" */
/* What --precision accepts: korch_precision_parse's names, and "bf16-all"
 * (BF16 with *everywhere set: every linear primitive bf16, no per-primitive
 * choice; docs/precision.md "Where bf16 pays"). */
bool korch_precision_parse_choice(const char *text, korch_precision *out, bool *everywhere);
/* Marks every float32 linear primitive for precision p (FP32: none). With
 * BF16, a value read only by bf16 linear primitives gets a precision cast to
 * bfloat16 (stored in 16 bits; the same numbers); FP32 removes those casts. */
korch_status korch_pgraph_set_precision(korch_pgraph *pg, korch_precision p);
/* The same, with the linear primitives fp32_nodes kept in float32 under
 * BF16 (the optimiser's per-primitive choice, docs/precision.md "Where bf16
 * pays"). Every listed node must be a live linear primitive on float32
 * operands and p must be BF16, else KORCH_ERR_INVALID_ARGUMENT naming it. */
korch_status korch_pgraph_set_precision_except(korch_pgraph *pg, korch_precision p, const int *fp32_nodes,
                                               int n_fp32);
/* The linear primitives on float32 operands left unmarked in a graph
 * lowered for p, ascending (malloc'd; NULL when none, or p is FP32). */
korch_status korch_pgraph_fp32_linear(const korch_pgraph *pg, korch_precision p, int **nodes, int *n);
/* A live linear primitive whose two operands are float32. */
bool korch_pnode_is_float_linear(const korch_pgraph *pg, int node);
/* A CAST to bfloat16 that korch_pgraph_set_precision added (alpha 1). */
bool korch_pnode_is_precision_cast(const korch_pgraph *pg, int node);
/* The precision pg was lowered with: BF16 when any linear primitive is. */
korch_precision korch_pgraph_precision(const korch_pgraph *pg);
/* KORCH_OK when this CPU computes precision p natively; else
 * KORCH_ERR_UNSUPPORTED saying which instructions are missing. */
korch_status korch_precision_check_cpu(korch_precision p);

const char *korch_layout_tag_name(korch_layout_tag tag);
const char *korch_prim_kind_name(korch_prim_kind kind);
const char *korch_reduce_op_name(korch_reduce_op op);

#endif
