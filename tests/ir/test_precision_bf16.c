/* The meaning of a bf16 linear primitive (docs/precision.md, "Computing in
 * bfloat16"), which every bf16 kernel is checked against:
 *  - korch_bf16_round (the fast rounding the interpreter uses) equals the
 *    exact conversion of core/half.c, korch_bf16_from_f64, on ties, carries
 *    into the exponent, overflow, subnormals, NaN and random floats;
 *  - the interpreter's bf16 matmul and convolution are, bit for bit, the
 *    float32 ones on operands rounded beforehand, and differ from the
 *    float32 ones on the raw operands;
 *  - korch_pgraph_set_precision marks float32 linear primitives only,
 *    korch_pgraph_interpret_fp32 ignores the marks, and the precision
 *    names parse and print;
 *  - values read only by bf16 primitives are stored in bfloat16 by a
 *    precision cast, with the same numbers (storage()).
 * Runs on every CPU: nothing here needs AVX512_BF16. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "ir/nodeset.h"
#include "ir/pgraph.h"
#include "test.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static int round_mismatches;
static void check_bits(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    float fast = korch_bf16_round(f), exact = korch_bf16_to_f32(korch_bf16_from_f64(f));
    bool same = isnan(f) ? isnan(fast) && isnan(exact) : memcmp(&fast, &exact, sizeof fast) == 0;
    if (!same && round_mismatches++ < 5)
        CHECK_MSG(false, "bits %08x (%a): korch_bf16_round %a, korch_bf16_from_f64 %a", x, (double)f, (double)fast,
                  (double)exact);
}

static void rounding(void) {
    /* every high half with the low halves that decide rounding: zero, just
     * below / at / just above the tie, and all ones (carry into the exponent) */
    const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (size_t k = 0; k < sizeof lows / sizeof lows[0]; k++) check_bits(hi << 16 | lows[k]);
    for (int i = 0; i < 2000000; i++) check_bits(next32());
    CHECK_MSG(round_mismatches == 0, "%d mismatches", round_mismatches);
    /* a few by value */
    CHECK(korch_bf16_round(1.0f + 0x1p-8f) == 1.0f);                 /* tie: to even (down) */
    CHECK(korch_bf16_round(1.0f + 0x1p-7f + 0x1p-8f) == 1.0f + 0x1p-6f); /* tie: to even (up) */
    CHECK(isinf(korch_bf16_round(3.4028235e38f)));                  /* above the largest bf16: overflows */
    CHECK(korch_bf16_round(0x1p-130f) == 0x1p-130f && korch_bf16_round(0x1p-140f) == 0); /* subnormals */
}

static korch_tensor tensor(const korch_shape *s, uint32_t seed) {
    korch_tensor t = {0};
    CHECK_OK(korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, s));
    float *p = t.data;
    rng = 0x9e3779b97f4a7c15ull ^ seed;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) p[i] = (float)((int32_t)next32()) * 0x1p-31f;
    return t;
}

static void round_tensor(korch_tensor *t) {
    float *p = t->data;
    for (int64_t i = 0; i < korch_tensor_numel(t); i++) p[i] = korch_bf16_round(p[i]);
}

/* y = linear(x, w), both graph inputs; returns y computed on (x, w) */
static korch_tensor run(const korch_prim_linear *p, const korch_tensor *x, const korch_tensor *w, bool bf16,
                        bool interpret_fp32) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int a = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &x->shape);
    int b = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &w->shape);
    korch_pgraph_add_output(pg, korch_pgraph_linear(pg, p, a, b));
    CHECK_OK(korch_pgraph_set_precision(pg, bf16 ? KORCH_PRECISION_BF16 : KORCH_PRECISION_FP32));
    CHECK(korch_pgraph_precision(pg) == (bf16 ? KORCH_PRECISION_BF16 : KORCH_PRECISION_FP32));
    korch_tensor in[2] = {*x, *w}, out = {0};
    CHECK_OK(interpret_fp32 ? korch_pgraph_interpret_fp32(pg, in, &out) : korch_pgraph_interpret(pg, in, &out));
    korch_pgraph_free(pg);
    return out;
}

static bool same_bits(const korch_tensor *a, const korch_tensor *b) {
    return a->data && b->data && korch_tensor_bytes(a) == korch_tensor_bytes(b) &&
           memcmp(a->data, b->data, korch_tensor_bytes(a)) == 0;
}

static void semantics(const char *what, const korch_prim_linear *p, const korch_shape *xs, const korch_shape *ws) {
    korch_tensor x = tensor(xs, 1), w = tensor(ws, 2), xr = tensor(xs, 1), wr = tensor(ws, 2);
    round_tensor(&xr);
    round_tensor(&wr);
    korch_tensor bf = run(p, &x, &w, true, false);          /* the bf16 primitive */
    korch_tensor pre = run(p, &xr, &wr, false, false);      /* float32 on rounded operands */
    korch_tensor raw = run(p, &x, &w, false, false);        /* float32 */
    korch_tensor ignored = run(p, &x, &w, true, true);      /* bf16 marks ignored */
    CHECK_MSG(same_bits(&bf, &pre), "%s: the bf16 primitive is not float32 on rounded operands", what);
    CHECK_MSG(!same_bits(&bf, &raw), "%s: the bf16 primitive computes the float32 result", what);
    CHECK_MSG(same_bits(&ignored, &raw), "%s: korch_pgraph_interpret_fp32 does not ignore the mark", what);
    korch_tensor *all[] = {&x, &w, &xr, &wr, &bf, &pre, &raw, &ignored};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) korch_tensor_free(all[i]);
}

static void marks(void) {
    /* an int32 matmul (MatMulInteger-style operands) is not marked */
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape s = {.rank = 2, .dims = {4, 4}};
    int a = korch_pgraph_add_input(pg, KORCH_DTYPE_INT32, &s), b = korch_pgraph_add_input(pg, KORCH_DTYPE_INT32, &s);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, a, b);
    if (y >= 0) {
        CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
        CHECK_MSG(!pg->nodes[pg->values[y].producer].u.linear.bf16, "an integer matmul was marked bf16");
    } else {
        korch_error_clear();
    }
    korch_pgraph_free(pg);
    korch_precision prec;
    CHECK(korch_precision_parse("bf16", &prec) && prec == KORCH_PRECISION_BF16);
    CHECK(korch_precision_parse("bfloat16", &prec) && prec == KORCH_PRECISION_BF16);
    CHECK(korch_precision_parse("fp32", &prec) && prec == KORCH_PRECISION_FP32);
    CHECK(!korch_precision_parse("fp16", &prec) && !korch_precision_parse("", &prec) &&
          !korch_precision_parse(NULL, &prec));
    CHECK(strcmp(korch_precision_token(KORCH_PRECISION_BF16), "bf16") == 0);
    CHECK(strcmp(korch_precision_token(KORCH_PRECISION_FP32), "fp32") == 0);
}

/* Values stored in bfloat16 (docs/precision.md): with BF16, a value computed
 * at run time whose every reader is a bf16 linear primitive gets one
 * precision cast; a value with another reader, a graph output and a
 * constant get none. The numbers do not change (the bf16 primitives round
 * to the same values), the float32 interpretation skips the casts, the
 * noise rule still moves the rounded operands, and FP32 restores the graph.
 *
 *     x -> matmul(W1) -> relu -> r -> matmul(W2) -> y          (output)
 *                         \-> e = relu(h) -> matmul(W3) -> z   (output)
 *                              and e + 1 -> u                   (output)
 * x and r are read by matmuls only; e also by the ADD. */
static korch_pgraph *storage_graph(bool bf16_marks_only) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape xs = {.rank = 2, .dims = {12, 40}};
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
    korch_shape ws[3] = {{.rank = 2, .dims = {40, 24}}, {.rank = 2, .dims = {24, 8}}, {.rank = 2, .dims = {24, 8}}};
    int w[3];
    for (int i = 0; i < 3; i++) {
        korch_tensor t = tensor(&ws[i], 10 + (uint32_t)i);
        w[i] = korch_pgraph_add_constant(pg, &t);
    }
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    int h = korch_pgraph_linear(pg, &mm, x, w[0]);
    int r = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &h, 0, 0, KORCH_DTYPE_UNDEFINED);
    int e = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &h, 0, 0, KORCH_DTYPE_UNDEFINED);
    int one = korch_pgraph_add_scalar(pg, 1.0f);
    int ue[2] = {e, one};
    korch_pgraph_add_output(pg, korch_pgraph_linear(pg, &mm, r, w[1]));
    korch_pgraph_add_output(pg, korch_pgraph_linear(pg, &mm, e, w[2]));
    korch_pgraph_add_output(pg, korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ue, 0, 0, KORCH_DTYPE_UNDEFINED));
    if (bf16_marks_only) /* the bf16 primitives without the casts: the numbers to compare with */
        for (int i = 0; i < pg->n_nodes; i++)
            if (pg->nodes[i].kind == KORCH_PRIM_LINEAR) pg->nodes[i].u.linear.bf16 = true;
    return pg;
}

static void storage(void) {
    korch_pgraph *pg = storage_graph(false), *marks_only = storage_graph(true);
    uint64_t h32 = korch_pgraph_hash(pg);
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    int casts = 0, cast_of_x = 0, cast_of_r = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (!korch_pnode_is_precision_cast(pg, i)) continue;
        casts++;
        int from = pg->nodes[i].inputs[0];
        cast_of_x += from == pg->inputs[0];
        cast_of_r += pg->values[from].producer >= 0 && pg->nodes[pg->values[from].producer].kind == KORCH_PRIM_ELEMENTWISE;
    }
    CHECK_MSG(casts == 2 && cast_of_x == 1 && cast_of_r == 1,
              "%d precision casts (%d of x, %d of a relu); expected one of x and one of r, none of e", casts, cast_of_x,
              cast_of_r);
    for (int i = 0; i < pg->n_nodes; i++) /* every operand the casts feed is a bf16 matmul's */
        for (int k = 0; k < pg->nodes[i].n_inputs; k++) {
            int p = pg->values[pg->nodes[i].inputs[k]].producer;
            if (p >= 0 && korch_pnode_is_precision_cast(pg, p))
                CHECK(pg->nodes[i].kind == KORCH_PRIM_LINEAR && pg->nodes[i].u.linear.bf16 && k == 0);
        }
    uint64_t h16 = korch_pgraph_hash(pg);
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16)); /* again: the same graph */
    CHECK_MSG(korch_pgraph_hash(pg) == h16, "setting bf16 twice changes the graph");

    korch_shape xs = {.rank = 2, .dims = {12, 40}};
    korch_tensor x = tensor(&xs, 3);
    /* half of x on bfloat16 ties (1 + 2^-8 lies between 1 and 1 + 2^-7): a
     * jitter of 2^-20 decides which way they round */
    for (int64_t i = 0; i < korch_tensor_numel(&x); i += 2) ((float *)x.data)[i] = (i % 4 ? -1 : 1) * (1.0f + 0x1p-8f);
    korch_tensor got[3] = {0}, want[3] = {0}, got32[3] = {0}, want32[3] = {0}, moved[3] = {0};
    CHECK_OK(korch_pgraph_interpret(pg, &x, got));
    CHECK_OK(korch_pgraph_interpret(marks_only, &x, want));
    CHECK_OK(korch_pgraph_interpret_fp32(pg, &x, got32));
    CHECK_OK(korch_pgraph_interpret_fp32(marks_only, &x, want32));
    CHECK_OK(korch_pgraph_interpret_jittered(pg, &x, moved, 77));
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(same_bits(&got[i], &want[i]), "output %d: storing in bfloat16 changed the bf16 numbers", i);
        CHECK_MSG(same_bits(&got32[i], &want32[i]), "output %d: the float32 interpretation does not skip the casts", i);
    }
    /* y's operands are both cast outputs: only a jitter at the casts moves it */
    CHECK_MSG(!same_bits(&moved[0], &got[0]), "the noise rule no longer moves the operands the casts round");

    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_FP32));
    CHECK_MSG(korch_pgraph_hash(pg) == h32, "FP32 after BF16 does not restore the float32 graph");
    for (int i = 0; i < 3; i++) {
        korch_tensor_free(&got[i]);
        korch_tensor_free(&want[i]);
        korch_tensor_free(&got32[i]);
        korch_tensor_free(&want32[i]);
        korch_tensor_free(&moved[i]);
    }
    korch_tensor_free(&x);
    korch_pgraph_free(pg);
    korch_pgraph_free(marks_only);
}

int main(void) {
    rounding();
    storage();
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    korch_shape a = {.rank = 3, .dims = {2, 17, 70}}, b = {.rank = 3, .dims = {2, 70, 23}};
    semantics("matmul 2x17x70 @ 2x70x23", &mm, &a, &b);
    korch_prim_linear conv = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1},
                              .dilations = {1, 1}, .pads_begin = {1, 1}, .pads_end = {1, 1}};
    korch_shape x = {.rank = 4, .dims = {1, 6, 9, 7}}, w = {.rank = 4, .dims = {5, 6, 3, 3}};
    semantics("conv 1x6x9x7, 5x6x3x3, pad 1", &conv, &x, &w);
    conv.channels_last = true;
    korch_shape xl = {.rank = 4, .dims = {1, 9, 7, 6}};
    semantics("conv nhwc 1x9x7x6, 5x6x3x3, pad 1", &conv, &xl, &w);
    marks();
    TEST_MAIN_END();
}
