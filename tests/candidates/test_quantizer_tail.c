/* The quantizer tail (src/candidates/quantizer.c): a QuantizeLinear as
 * fission writes it is found whole after a value; enumeration, with a
 * backend that takes a linear set with a quantizer only whole (as oneDNN's
 * int8 convolution does), still offers the convolution with its whole
 * quantizer, which growth one node at a time cannot reach; and the
 * partitioner keeps the quantizer with the value it reads when a cut of the
 * same width exists after it. */
#include <string.h>

#include "candidates/candidates.h"
#include "test.h"

static int scalar(korch_pgraph *pg, float v) { return korch_pgraph_add_scalar(pg, v); }

static int ew1(korch_pgraph *pg, korch_ew_op op, int a, float alpha, float beta) {
    return korch_pgraph_elementwise(pg, op, 1, &a, alpha, beta, KORCH_DTYPE_UNDEFINED);
}

static int ew2(korch_pgraph *pg, korch_ew_op op, int a, int b, float alpha) {
    int in[2] = {a, b};
    return korch_pgraph_elementwise(pg, op, 2, in, alpha, 0, KORCH_DTYPE_UNDEFINED);
}

/* float input -> `prefix` ReLUs -> CAST u8 -> CAST -> MUL -> conv -> ADD
 * bias -> quantizer; returns the conv node */
static int build(korch_pgraph *pg, bool zero_point, bool div_read_twice, int prefix) {
    int64_t xs[4] = {1, 8, 6, 6}, ws[4] = {8, 8, 1, 1}, bs[4] = {1, 8, 1, 1};
    korch_shape s = korch_shape_make(4, xs);
    int q = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
    for (int i = 0; i < prefix; i++) q = ew1(pg, KORCH_EW_RELU, q, 0, 0);
    q = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &q, 0, 0, KORCH_DTYPE_UINT8);
    int x = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &q, 0, 0, KORCH_DTYPE_FLOAT32);
    x = ew2(pg, KORCH_EW_MUL, x, scalar(pg, 0.02f), 0);
    korch_tensor w, b;
    korch_shape wsh = korch_shape_make(4, ws), bsh = korch_shape_make(4, bs);
    CHECK_OK(korch_tensor_alloc(&w, KORCH_DTYPE_FLOAT32, &wsh));
    CHECK_OK(korch_tensor_alloc(&b, KORCH_DTYPE_FLOAT32, &bsh));
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = 1, .strides = {1, 1}, .dilations = {1, 1}};
    int y = korch_pgraph_linear(pg, &p, x, korch_pgraph_add_constant(pg, &w));
    int conv = pg->values[y].producer;
    y = ew2(pg, KORCH_EW_ADD, y, korch_pgraph_add_constant(pg, &b), 0);
    int d = ew2(pg, KORCH_EW_DIV, y, scalar(pg, 0.1f), 1);
    int eq = ew2(pg, KORCH_EW_EQUAL, d, d, 0);
    int wi[3] = {eq, d, scalar(pg, 0)};
    int r = korch_pgraph_elementwise(pg, KORCH_EW_WHERE, 3, wi, 0, 0, KORCH_DTYPE_UNDEFINED);
    r = ew1(pg, KORCH_EW_ROUND, r, 0, 0);
    if (zero_point) r = ew2(pg, KORCH_EW_ADD, r, scalar(pg, 128), 0);
    r = ew1(pg, KORCH_EW_CLIP, r, 0, 255);
    r = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &r, 0, 0, KORCH_DTYPE_UINT8);
    if (div_read_twice) korch_pgraph_add_output(pg, d);
    korch_pgraph_add_output(pg, r);
    return conv;
}

static bool is_ew(const korch_pgraph *pg, int node, korch_ew_op op) {
    return pg->nodes[node].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[node].u.ew.op == op;
}

/* the quantizer's nodes but its ADD: DIV, EQUAL, WHERE, ROUND, CLIP and the
 * CAST to 8 bits after the convolution */
static bool is_quantizer_node(const korch_pgraph *pg, int node) {
    if (is_ew(pg, node, KORCH_EW_CAST))
        return pg->values[pg->nodes[node].outputs[0]].dtype == KORCH_DTYPE_UINT8 &&
               pg->values[pg->nodes[node].inputs[0]].dtype == KORCH_DTYPE_FLOAT32 &&
               pg->values[pg->nodes[node].inputs[0]].producer >= 0 &&
               is_ew(pg, pg->values[pg->nodes[node].inputs[0]].producer, KORCH_EW_CLIP);
    return is_ew(pg, node, KORCH_EW_DIV) || is_ew(pg, node, KORCH_EW_EQUAL) || is_ew(pg, node, KORCH_EW_WHERE) ||
           is_ew(pg, node, KORCH_EW_ROUND) || is_ew(pg, node, KORCH_EW_CLIP);
}

/* A backend like oneDNN's int8 convolution: a set with the linear
 * primitive holds its dequantizing CAST and MUL, and takes the quantizer
 * after it all or nothing. */
static bool fake_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                          size_t size) {
    (void)user;
    (void)kind;
    int linear = 0, quant = 0, prologue = 0;
    for (int i = 0; i < spec->n_nodes; i++) {
        int node = spec->nodes[i];
        linear += spec->pg->nodes[node].kind == KORCH_PRIM_LINEAR;
        quant += is_quantizer_node(spec->pg, node);
        prologue += is_ew(spec->pg, node, KORCH_EW_MUL) ||
                    (is_ew(spec->pg, node, KORCH_EW_CAST) &&
                     spec->pg->values[spec->pg->nodes[node].outputs[0]].dtype == KORCH_DTYPE_FLOAT32);
    }
    if (linear && (prologue != 2 || (quant && quant != 6))) {
        snprintf(reason, size, "not an int8 kernel");
        return false;
    }
    return true;
}

/* Is there a candidate holding the conv and every quantizer node? */
static bool whole_candidate(const korch_candidate_set *set, int conv) {
    for (int i = 0; i < set->n_candidates; i++) {
        korch_kernel_spec spec = korch_candidate_spec(set, &set->candidates[i]);
        bool has_conv = false;
        int quant = 0;
        for (int k = 0; k < spec.n_nodes; k++) {
            has_conv |= spec.nodes[k] == conv;
            quant += is_quantizer_node(set->pg, spec.nodes[k]);
        }
        if (has_conv && quant == 6) return true;
    }
    return false;
}

int main(void) {
    for (int zp = 0; zp < 2; zp++) {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        int conv = build(pg, zp, false, 1);
        korch_pgraph_uses u;
        CHECK_OK(korch_pgraph_uses_build(pg, &u));
        int nodes[8], add = pg->nodes[conv].outputs[0];
        add = u.consumers[u.consumer_start[add]]; /* the bias ADD */
        int n = korch_quantizer_tail(pg, &u, pg->nodes[add].outputs[0], nodes);
        CHECK_MSG(n == (zp ? 7 : 6), "zero point %d: quantizer of %d nodes", zp, n);
        CHECK_MSG(korch_quantizer_tail(pg, &u, pg->nodes[conv].outputs[0], nodes) == 0,
                  "a quantizer found after the convolution (the bias ADD reads it)");
        korch_pgraph_uses_free(&u);

        korch_candidate_options o = korch_candidate_options_default();
        o.supports = fake_supports;
        korch_candidate_set *set = NULL;
        CHECK_OK(korch_candidates_build(pg, &o, &set));
        if (set) {
            CHECK_MSG(whole_candidate(set, conv), "zero point %d: no candidate holds the convolution and its quantizer",
                      zp);
            korch_candidates_free(set);
        }
        korch_pgraph_free(pg);
        /* 3 + 11 or 12 nodes in partitions of at most 12: one cut of width
         * 1, which could fall anywhere in the chain (the latest such cut
         * would split the kernel) but is taken before the CAST that
         * dequantizes */
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        conv = build(pg, zp, false, 2);
        o.max_partition_nodes = 12;
        CHECK_OK(korch_candidates_build(pg, &o, &set));
        if (set) {
            int mul = -1, last = -1;
            for (int i = 0; i < pg->n_nodes; i++) {
                if (is_ew(pg, i, KORCH_EW_MUL)) mul = i;
                if (is_quantizer_node(pg, i) && is_ew(pg, i, KORCH_EW_CAST)) last = i;
            }
            CHECK_MSG(set->n_partitions == 2, "%d partitions", set->n_partitions);
            CHECK_MSG(set->partition_of[mul] == set->partition_of[conv] &&
                          set->partition_of[last] == set->partition_of[conv],
                      "zero point %d: the partitioner cut the int8 kernel", zp);
            korch_candidates_free(set);
        }
        korch_pgraph_free(pg);
    }
    /* the quantizer's division read by something else too: not a tail */
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int conv = build(pg, true, true, 1);
    korch_pgraph_uses u;
    CHECK_OK(korch_pgraph_uses_build(pg, &u));
    int add = u.consumers[u.consumer_start[pg->nodes[conv].outputs[0]]], nodes[8];
    CHECK_MSG(korch_quantizer_tail(pg, &u, pg->nodes[add].outputs[0], nodes) == 0,
              "a quantizer whose division is also a graph output was taken whole");
    korch_pgraph_uses_free(&u);
    korch_pgraph_free(pg);
    TEST_MAIN_END();
}
