/* A dynamically quantized model's operators in primitives (src/fission/
 * rules_quant.c; docs/quantization.md):
 *
 * DynamicQuantizeLinear becomes two whole-tensor reductions, scalar steps
 * and a quantizer, bit for bit the reference kernel's arithmetic: against
 * the reference executor exactly (the uint8 output, the float32 scale and
 * the zero point), on random tensors of several shapes, an all-zero one
 * (the scale 1 case), an all-positive and an all-negative one, one with NaN
 * elements (skipped by the range, quantized to the zero point), and the
 * chain quantize_dynamic writes (DynamicQuantizeLinear -> MatMulInteger ->
 * Cast -> Mul by the scales); no opaque primitive left.
 *
 * MatMulInteger becomes an integer matmul primitive (src/fission/
 * rules_quant.c; docs/quantization.md, "Integer matmuls"): the zero points
 * subtracted in int32, the products summed exactly into int32. Against the
 * reference executor through fh_check (raw and cleaned graphs interpreted,
 * the cleaned graph exported to ONNX and run again), exactly (integers
 * compare bit for bit):
 *  - uint8 and int8 A and B, with no zero points, constant ones, run-time
 *    ones (a DynamicQuantizeLinear's), per row of A and per column of B;
 *  - constant B (the weights of a dynamically quantized model) and B
 *    computed at run time (a float32 matmul of the same integers while
 *    K * 255^2 < 2^24, exact; an integer matmul past it); batched A;
 *    one-dimensional operands;
 *  - sums far beyond 2^24 (K = 3072, every product -128 * 255): a float32
 *    matmul of the same integers rounds them, the integer matmul does not;
 * and the result's form: no opaque primitive, one integer matmul. A per-row
 * zero point of a batched A keeps the operator whole (declined). */
#include <stdio.h>

#include "fission_harness.h"

static int integer_matmuls(korch_graph *g, bool conv) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_graph_validate(g));
    CHECK_OK(korch_graph_infer(g, NULL, 0));
    CHECK_OK(korch_fission(g, &pg, NULL));
    int n = 0;
    for (int i = 0; pg && i < pg->n_nodes; i++)
        n += conv ? korch_pnode_is_integer_linear(pg, &pg->nodes[i]) && !korch_pnode_is_integer_matmul(pg, &pg->nodes[i])
                  : korch_pnode_is_integer_matmul(pg, &pg->nodes[i]);
    korch_pgraph_free(pg);
    return n;
}

/* an 8-bit constant uniform over its type, or (fill) uniform over
 * [value, value + 31]: one sign, odd values, so that the sums are large and
 * not multiples of a power of two (which float32 would hold exactly) */
static void const_8bit(korch_graph *g, const char *name, korch_dtype dt, int rank, const int64_t *dims, bool fill,
                       int value) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, dt, &s) != KORCH_OK) abort();
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) {
        int v = fill ? (int)fh_int(value, value + 31)
                     : dt == KORCH_DTYPE_UINT8 ? (int)fh_int(0, 255) : (int)fh_int(-128, 127);
        if (dt == KORCH_DTYPE_UINT8) ((uint8_t *)t.data)[i] = (uint8_t)v;
        else ((int8_t *)t.data)[i] = (int8_t)v;
    }
    fh_const(g, name, &t);
}

typedef enum zp_kind { ZP_NONE, ZP_CONST, ZP_INPUT, ZP_VECTOR_CONST, ZP_VECTOR_INPUT } zp_kind;

typedef struct mm_case {
    const char *label;
    korch_dtype ta, tb;
    int rank_a;
    int64_t a[4];
    int64_t k, n;
    bool b_const;
    zp_kind za, zb;
    bool declined;
} mm_case;

static korch_graph *build(const mm_case *c, bool big) {
    korch_graph *g = fh_begin(13);
    fh_input(g, "A", c->ta, c->rank_a, c->a);
    int64_t bd[2] = {c->k, c->n};
    if (c->b_const) const_8bit(g, "B", c->tb, 2, bd, big, c->tb == KORCH_DTYPE_INT8 ? -128 : 255);
    else fh_input(g, "B", c->tb, 2, bd);
    int64_t one[1] = {1}, rows[1] = {c->rank_a >= 2 ? c->a[c->rank_a - 2] : 1}, cols[1] = {c->n};
    char ins[64] = "A,B";
    switch (c->za) {
    case ZP_NONE: break;
    case ZP_CONST: const_8bit(g, "za", c->ta, 0, one, false, 0); break;
    case ZP_INPUT: fh_input(g, "za", c->ta, 0, one); break;
    case ZP_VECTOR_CONST: const_8bit(g, "za", c->ta, 1, rows, false, 0); break;
    case ZP_VECTOR_INPUT: fh_input(g, "za", c->ta, 1, rows); break;
    }
    switch (c->zb) {
    case ZP_NONE: break;
    case ZP_CONST: const_8bit(g, "zb", c->tb, 0, one, false, 0); break;
    case ZP_INPUT: fh_input(g, "zb", c->tb, 0, one); break;
    case ZP_VECTOR_CONST: const_8bit(g, "zb", c->tb, 1, cols, false, 0); break;
    case ZP_VECTOR_INPUT: fh_input(g, "zb", c->tb, 1, cols); break;
    }
    if (c->za != ZP_NONE || c->zb != ZP_NONE) strcat(ins, c->za != ZP_NONE ? ",za" : ",");
    if (c->zb != ZP_NONE) strcat(ins, ",zb");
    fh_node(g, "MatMulInteger", ins, "Y");
    fh_output(g, "Y");
    return g;
}

static void run_case(const mm_case *c, bool big) {
    char label[200];
    snprintf(label, sizeof label, "%s%s", c->label, big ? " (sums beyond 2^24)" : "");
    korch_graph *g = build(c, big);
    int found = integer_matmuls(g, false);
    /* B computed at run time with K * 255^2 < 2^24: an exact float32 matmul */
    int want = c->declined || (!c->b_const && c->k * 255 * 255 < (1 << 24)) ? 0 : 1;
    CHECK_MSG(found == want, "%s: %d integer matmuls, want %d", label, found, want);
    korch_graph_free(g);
    fh_check(build(c, big), &(fh_options){.allow_opaque = c->declined, .seed = 7}, label);
}

/* DynamicQuantizeLinear of pre(x), x of shape dims; the three outputs */
static void dql_case(const char *pre, int rank, const int64_t *dims, const char *label) {
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, rank, dims);
    const char *src = "x";
    if (!strcmp(pre, "zero")) {
        float zero = 0;
        fh_const_f32(g, "zero", 0, NULL, &zero);
        fh_node(g, "Mul", "x,zero", "p");
        src = "p";
    } else if (!strcmp(pre, "Neg")) {
        fh_node(g, "Abs", "x", "a");
        fh_node(g, "Neg", "a", "p");
        src = "p";
    } else if (*pre) {
        fh_node(g, pre, "x", "p");
        src = "p";
    }
    char ins[8];
    snprintf(ins, sizeof ins, "%s", src);
    fh_node(g, "DynamicQuantizeLinear", ins, "y,s,z");
    fh_output(g, "y");
    fh_output(g, "s");
    fh_output(g, "z");
    fh_check(g, &(fh_options){.lo = -3, .hi = 3, .seed = 11}, label);
}

/* quantize_dynamic's pattern: y = float(MatMulInteger(q(x), W, zx, 0)) * (sx * sw) */
static void dynamic_chain(void) {
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, (int64_t[]){1, 6, 32});
    const_8bit(g, "W", KORCH_DTYPE_INT8, 2, (int64_t[]){32, 10}, false, 0);
    int64_t one[1] = {1};
    const_8bit(g, "zw", KORCH_DTYPE_INT8, 0, one, true, 0); /* fill [0, 31]: a nonzero zero point */
    float sw = 0.0123f;
    fh_const_f32(g, "sw", 0, NULL, &sw);
    fh_node(g, "DynamicQuantizeLinear", "x", "q,sx,zx");
    fh_node(g, "MatMulInteger", "q,W,zx,zw", "acc");
    int c = fh_node(g, "Cast", "acc", "accf");
    fh_attr_int(g, c, "to", KORCH_DTYPE_FLOAT32);
    fh_node(g, "Mul", "sx,sw", "s");
    fh_node(g, "Mul", "accf,s", "y");
    fh_output(g, "y");
    fh_check(g, &(fh_options){.lo = -4, .hi = 4, .seed = 13}, "DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul");
}

/* ConvInteger of x [1, C, 9, 11] (input, zero point an input or none) and
 * constant weights [M, C/g, k, k] of type tw with a zero point zw (-1: none,
 * -2: per output channel); want_linear integer convolutions after fission
 * (2 when uint8 weights are split) */
static void conv_case(korch_dtype tx, korch_dtype tw, int64_t C, int64_t M, int64_t k, int64_t g, int64_t pad,
                      int64_t stride, bool zx, int zw, int want_linear, const char *label) {
    for (int round = 0; round < 2; round++) {
        korch_graph *g_ = fh_begin(13);
        fh_input(g_, "x", tx, 4, (int64_t[]){1, C, 9, 11});
        const_8bit(g_, "W", tw, 4, (int64_t[]){M, C / g, k, k}, false, 0);
        char ins[32] = "x,W";
        if (zx) {
            fh_input(g_, "zx", tx, 0, NULL);
            strcat(ins, ",zx");
        }
        if (zw != -1) {
            if (!zx) strcat(ins, ",");
            if (zw == -2) const_8bit(g_, "zw", tw, 1, (int64_t[]){M}, false, 0);
            else {
                korch_tensor t;
                korch_shape s0 = {.rank = 0};
                if (korch_tensor_alloc(&t, tw, &s0) != KORCH_OK) abort();
                *(uint8_t *)t.data = (uint8_t)zw;
                fh_const(g_, "zw", &t);
            }
            strcat(ins, ",zw");
        }
        int n = fh_node(g_, "ConvInteger", ins, "y");
        fh_attr_ints(g_, n, "pads", 4, (int64_t[]){pad, pad, pad, pad});
        fh_attr_ints(g_, n, "strides", 2, (int64_t[]){stride, stride});
        fh_attr_int(g_, n, "group", g);
        fh_output(g_, "y");
        if (round == 0) {
            int found = integer_matmuls(g_, true);
            CHECK_MSG(found == want_linear, "%s: %d integer convolutions, want %d", label, found, want_linear);
            korch_graph_free(g_);
        } else {
            fh_check(g_, &(fh_options){.seed = 17}, label);
        }
        fh_seed(99); /* the same weights in both rounds */
    }
}

int main(void) {
    fh_seed(99);
    conv_case(KORCH_DTYPE_UINT8, KORCH_DTYPE_INT8, 6, 5, 3, 1, 1, 1, true, -1, 1, "ConvInteger u8 x s8, zp of x");
    fh_seed(99);
    conv_case(KORCH_DTYPE_UINT8, KORCH_DTYPE_UINT8, 6, 8, 3, 1, 1, 2, true, 121, 2,
              "ConvInteger u8 x u8 with a zero point (split into two int8 convolutions)");
    fh_seed(99);
    conv_case(KORCH_DTYPE_UINT8, KORCH_DTYPE_UINT8, 6, 6, 3, 6, 1, 1, true, 178, 2,
              "ConvInteger u8 x u8, depthwise, split");
    fh_seed(99);
    conv_case(KORCH_DTYPE_UINT8, KORCH_DTYPE_UINT8, 8, 6, 1, 2, 0, 1, false, -2, 2,
              "ConvInteger u8 x u8, 2 groups, per-channel zero point, split");
    fh_seed(99);
    conv_case(KORCH_DTYPE_INT8, KORCH_DTYPE_UINT8, 4, 3, 3, 1, 2, 1, true, 128, 1,
              "ConvInteger s8 x u8 with zero point 128 (fits int8: no split)");

    dql_case("", 2, (int64_t[]){7, 13}, "DynamicQuantizeLinear, random [7, 13]");
    dql_case("", 3, (int64_t[]){2, 64, 96}, "DynamicQuantizeLinear, random [2, 64, 96]");
    dql_case("", 1, (int64_t[]){1}, "DynamicQuantizeLinear, one element");
    dql_case("zero", 2, (int64_t[]){4, 5}, "DynamicQuantizeLinear, all zero (scale 1)");
    dql_case("Abs", 2, (int64_t[]){4, 9}, "DynamicQuantizeLinear, all positive");
    dql_case("Neg", 2, (int64_t[]){4, 9}, "DynamicQuantizeLinear, all negative");
    dql_case("Sqrt", 2, (int64_t[]){6, 11}, "DynamicQuantizeLinear, NaN elements (sqrt of negatives)");
    dynamic_chain();

    const korch_dtype U8 = KORCH_DTYPE_UINT8, S8 = KORCH_DTYPE_INT8;
    const mm_case cases[] = {
        {"u8 x s8, no zero points", U8, S8, 2, {5, 12}, 12, 7, true, ZP_NONE, ZP_NONE, false},
        {"u8 x s8, run-time zp of A, zp 0 of B (quantize_dynamic)", U8, S8, 3, {1, 9, 16}, 16, 11, true, ZP_INPUT,
         ZP_CONST, false},
        {"s8 x u8, constant zp of A, per-column zp of B", S8, U8, 2, {6, 10}, 10, 5, true, ZP_CONST, ZP_VECTOR_CONST,
         false},
        {"u8 x u8, per-row zp of A (input), zp of B (input), B computed (an exact float32 matmul)", U8, U8, 2,
         {4, 8}, 8, 6, false, ZP_VECTOR_INPUT, ZP_INPUT, false},
        {"s8 x u8, zp of B (input), B computed, K = 300 (past float32's exact range: integer)", S8, U8, 2, {3, 300},
         300, 5, false, ZP_NONE, ZP_INPUT, false},
        {"s8 x s8, batched A [2,3,4,9], run-time zp", S8, S8, 4, {2, 3, 4, 9}, 9, 3, true, ZP_INPUT, ZP_NONE, false},
        {"u8 A of rank 1", U8, S8, 1, {13}, 13, 4, true, ZP_INPUT, ZP_NONE, false},
        {"per-row zp of a batched A: declined", U8, S8, 3, {2, 4, 6}, 6, 3, true, ZP_VECTOR_INPUT, ZP_NONE, true},
        {"u8 x u8 weights with a zp outside int8 (split: int8 matmul + row sum)", U8, U8, 2, {5, 24}, 24, 7, true,
         ZP_INPUT, ZP_CONST, false},
        {"u8 x u8, per-column zp, batched A (split)", U8, U8, 3, {2, 3, 10}, 10, 6, true, ZP_CONST, ZP_VECTOR_CONST,
         false},
        {"u8 A of rank 1 x u8 weights with a zp (split)", U8, U8, 1, {9}, 9, 4, true, ZP_INPUT, ZP_CONST, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], false);
    /* K = 3072: A uniform u8, B in [-128, -97]: sums near -4e7, beyond
     * 2^24 (checked to fail when the interpreter sums in float32) */
    const mm_case big = {"u8 x s8 K=3072", U8, S8, 2, {3, 3072}, 3072, 4, true, ZP_NONE, ZP_NONE, false};
    run_case(&big, true);
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
