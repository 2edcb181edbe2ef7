/* The clean-up passes: each must remove exactly what it claims, keep the
 * numbers, and keep the graph's outputs. Expected structures are worked out
 * by hand from the op graphs below. */
#include "ir/indexmap.h"
#include "fission_harness.h"

static int count_live(const korch_pgraph *pg, korch_prim_kind kind) { return fh_count_kind(pg, kind); }

/* Fissions + cleans g, interprets it on random inputs against the reference,
 * and returns the pgraph (caller frees it and g). */
static korch_pgraph *clean(korch_graph *g, korch_fission_stats *stats, const char *label) {
    CHECK_OK(korch_graph_validate(g));
    CHECK_OK(korch_graph_infer(g, NULL, 0));
    korch_pgraph *pg = NULL;
    korch_status st = korch_fission(g, &pg, stats);
    CHECK_MSG(st == KORCH_OK, "%s: %s", label, korch_last_error());
    if (st != KORCH_OK) return NULL;
    korch_tensor in[8], want[8], got[8];
    for (int i = 0; i < g->n_inputs; i++)
        fh_random_tensor(&in[i], g->values[g->inputs[i]].dtype, &g->values[g->inputs[i]].shape, &(fh_options){0});
    CHECK_OK(korch_reference_run(g, in, want));
    CHECK_OK(korch_pgraph_interpret(pg, in, got));
    for (int k = 0; k < g->n_outputs; k++) {
        double e = fh_error(&got[k], &want[k]);
        CHECK_MSG(e >= 0 && e <= 1e-6, "%s: output %d error %g", label, k, e);
        korch_tensor_free(&got[k]);
        korch_tensor_free(&want[k]);
    }
    for (int i = 0; i < g->n_inputs; i++) korch_tensor_free(&in[i]);
    return pg;
}

/* Transpose twice with the inverse permutation, then Relu: the transposes
 * cancel and only the Relu is left. */
static void transpose_pair_cancels(void) {
    int64_t d[3] = {2, 3, 4};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    int a = fh_node(g, "Transpose", "x", "t1");
    fh_attr_ints(g, a, "perm", 3, (int64_t[]){1, 2, 0});
    int b = fh_node(g, "Transpose", "t1", "t2");
    fh_attr_ints(g, b, "perm", 3, (int64_t[]){2, 0, 1});
    fh_node(g, "Relu", "t2", "y");
    fh_output(g, "y");
    korch_pgraph *pg = clean(g, NULL, "transpose pair");
    if (pg) {
        CHECK_MSG(korch_pgraph_live_nodes(pg) == 1, "transpose pair: %d nodes left", korch_pgraph_live_nodes(pg));
        CHECK(count_live(pg, KORCH_PRIM_LAYOUT) == 0);
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* Two transposes that do not cancel become one with the composed
 * permutation: (1,2,0) then (1,2,0) is (2,0,1). */
static void transposes_compose(void) {
    int64_t d[3] = {2, 3, 4};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    for (int i = 0; i < 2; i++) {
        int n = fh_node(g, "Transpose", i ? "t1" : "x", i ? "t2" : "t1");
        fh_attr_ints(g, n, "perm", 3, (int64_t[]){1, 2, 0});
    }
    fh_node(g, "Relu", "t2", "y");
    fh_output(g, "y");
    korch_pgraph *pg = clean(g, NULL, "transposes compose");
    if (pg) {
        CHECK(count_live(pg, KORCH_PRIM_LAYOUT) == 1);
        for (int i = 0; i < pg->n_nodes; i++) {
            int64_t perm[8];
            if (pg->nodes[i].kind != KORCH_PRIM_LAYOUT) continue;
            CHECK(korch_layout_as_transpose(pg, i, perm));
            CHECK(perm[0] == 2 && perm[1] == 0 && perm[2] == 1);
            CHECK(pg->nodes[i].u.layout.tag == KORCH_LAYOUT_TRANSPOSE);
        }
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* Reshape chains merge into one reshape; a chain back to the input shape
 * vanishes; a transpose that only moves a unit dimension is a reshape and
 * merges with its neighbours. */
static void reshapes_merge(void) {
    int64_t d[3] = {2, 3, 4};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, d);
    fh_const_i64(g, "s1", 2, (int64_t[]){6, 4});
    fh_const_i64(g, "s2", 4, (int64_t[]){6, 1, 2, 2});
    fh_node(g, "Reshape", "x,s1", "r1");
    fh_node(g, "Reshape", "r1,s2", "r2");
    int t = fh_node(g, "Transpose", "r2", "r3"); /* (6,1,2,2) -> (1,6,2,2): moves only the unit dim */
    fh_attr_ints(g, t, "perm", 4, (int64_t[]){1, 0, 2, 3});
    fh_node(g, "Exp", "r3", "y");
    fh_const_i64(g, "s3", 3, (int64_t[]){2, 3, 4});
    fh_node(g, "Reshape", "r3,s3", "back"); /* x's shape again: the whole chain is the identity */
    fh_node(g, "Neg", "back", "z");
    fh_output(g, "y");
    fh_output(g, "z");
    korch_pgraph *pg = clean(g, NULL, "reshapes merge");
    if (pg) {
        /* exp(reshape(x)) and neg(x): one layout left, a reshape */
        CHECK_MSG(count_live(pg, KORCH_PRIM_LAYOUT) == 1, "%d layouts left", count_live(pg, KORCH_PRIM_LAYOUT));
        for (int i = 0; i < pg->n_nodes; i++)
            if (pg->nodes[i].kind == KORCH_PRIM_LAYOUT) {
                CHECK(korch_layout_as_reshape(pg, i));
                CHECK(pg->nodes[i].u.layout.tag == KORCH_LAYOUT_RESHAPE);
            }
        CHECK(korch_pgraph_live_nodes(pg) == 3);
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* SpaceToDepth then DepthToSpace (DCR) is the identity: six layout nodes
 * (reshape, transpose, reshape twice) cancel as a chain. The output is then
 * the graph input itself, so one copy computes it. */
static void depth_space_round_trip(void) {
    int64_t d[4] = {1, 2, 4, 6};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 4, d);
    int a = fh_node(g, "SpaceToDepth", "x", "s");
    fh_attr_int(g, a, "blocksize", 2);
    int b = fh_node(g, "DepthToSpace", "s", "y");
    fh_attr_int(g, b, "blocksize", 2);
    fh_output(g, "y");
    korch_fission_stats stats;
    korch_pgraph *pg = clean(g, &stats, "depth/space round trip");
    if (pg) {
        CHECK_MSG(stats.fissioned == 6, "%d primitives after fission", stats.fissioned);
        CHECK_MSG(korch_pgraph_live_nodes(pg) == 1, "%d nodes left", korch_pgraph_live_nodes(pg));
        CHECK(pg->nodes[0].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[0].u.ew.op == KORCH_EW_COPY);
        CHECK(pg->outputs[0] != pg->inputs[0]);
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* Gemm with transB and a constant B: the transpose is folded into the
 * weights, and two Gemms sharing B and C fold to one constant each (CSE of
 * equal constants). The scalars 0.5 from two Mul nodes merge too, and so do
 * two identical Exp nodes. */
static void constants_and_cse(void) {
    int64_t a[2] = {3, 4}, b[2] = {5, 4}, c[1] = {5};
    korch_graph *g = fh_begin(13);
    fh_input(g, "a", KORCH_DTYPE_FLOAT32, 2, a);
    fh_const_random(g, "w", 2, b, -1, 1);
    fh_const_random(g, "bias", 1, c, -1, 1);
    for (int i = 0; i < 2; i++) {
        int n = fh_node(g, "Gemm", "a,w,bias", i ? "g2" : "g1");
        fh_attr_int(g, n, "transB", 1);
    }
    float half = 0.5f;
    fh_const_f32(g, "h1", 0, NULL, &half);
    fh_const_f32(g, "h2", 0, NULL, &half);
    fh_node(g, "Mul", "g1,h1", "m1");
    fh_node(g, "Mul", "g2,h2", "m2");
    fh_node(g, "Exp", "m1", "e1");
    fh_node(g, "Exp", "m2", "e2");
    fh_node(g, "Sub", "e1,e2", "y");
    fh_output(g, "y");
    korch_fission_stats stats;
    korch_pgraph *pg = clean(g, &stats, "constants and CSE");
    if (pg) {
        /* matmul, add, mul, exp, sub: one of each */
        CHECK_MSG(korch_pgraph_live_nodes(pg) == 5, "%d nodes left", korch_pgraph_live_nodes(pg));
        CHECK(count_live(pg, KORCH_PRIM_LAYOUT) == 0);
        CHECK(count_live(pg, KORCH_PRIM_LINEAR) == 1);
        int weights = 0;
        for (int v = 0; v < pg->n_values; v++)
            if (pg->values[v].is_constant && pg->values[v].shape.rank == 2) {
                weights++;
                CHECK(pg->values[v].shape.dims[0] == 4 && pg->values[v].shape.dims[1] == 5); /* transposed */
            }
        CHECK(weights == 1);
        CHECK(stats.n_passes >= 4);
        for (int p = 0; p < stats.n_passes; p++) CHECK(stats.passes[p].after <= stats.passes[p].before);
        CHECK(stats.passes[stats.n_passes - 1].after == korch_pgraph_live_nodes(pg));
        CHECK(stats.prims == korch_pgraph_live_nodes(pg));
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* Folding stops where it would grow the model: an Expand of a constant
 * scalar to 1M elements stays a layout node, a small one is folded. */
static void folding_limit(void) {
    int64_t big[2] = {1024, 1024}, small[2] = {4, 4};
    for (int t = 0; t < 2; t++) {
        korch_pgraph *pg = NULL;
        CHECK_OK(korch_pgraph_create(NULL, &pg));
        int s = korch_pgraph_add_scalar(pg, 1.0f);
        korch_shape shape = korch_shape_make(2, t ? small : big);
        int e = korch_pgraph_expand(pg, s, &shape);
        int x = korch_pgraph_add_value(pg, KORCH_DTYPE_FLOAT32, &shape);
        pg->inputs = malloc(sizeof(int));
        pg->inputs[pg->n_inputs++] = x;
        pg->values[x].graph_input = 0;
        int ins[2] = {x, e};
        int y = korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ins, 0, 0, KORCH_DTYPE_UNDEFINED);
        pg->outputs = malloc(sizeof(int));
        pg->outputs[pg->n_outputs++] = y;
        korch_cleanup_options o = korch_cleanup_options_default();
        CHECK_OK(korch_pgraph_cleanup(pg, &o, NULL));
        CHECK_MSG(count_live(pg, KORCH_PRIM_LAYOUT) == (t ? 0 : 1), "expand %s: %d layouts",
                  t ? "small" : "big", count_live(pg, KORCH_PRIM_LAYOUT));
        korch_pgraph_free(pg);
    }
}

/* Outputs keep a node of their own: an output that is an input, two equal
 * outputs, and a dead branch that is dropped. */
static void outputs_and_dead_code(void) {
    int64_t d[2] = {3, 4};
    korch_graph *g = fh_begin(13);
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 2, d);
    fh_node(g, "Identity", "x", "y1");
    fh_node(g, "Exp", "x", "e1");
    fh_node(g, "Exp", "x", "e2");
    fh_node(g, "Log", "x", "unused");
    fh_node(g, "Dropout", "e1", "d,mask");
    fh_output(g, "y1");
    fh_output(g, "d");
    fh_output(g, "e2");
    korch_fission_stats stats;
    korch_pgraph *pg = clean(g, &stats, "outputs and dead code");
    if (pg) {
        CHECK(pg->n_outputs == 3 && pg->n_inputs == 1);
        for (int i = 0; i < 3; i++) {
            const korch_pvalue *v = &pg->values[pg->outputs[i]];
            CHECK(v->producer >= 0 && v->graph_output == i);
            CHECK(v->source_value == g->outputs[i]);
            for (int j = 0; j < i; j++) CHECK(pg->outputs[i] != pg->outputs[j]);
        }
        CHECK(pg->values[pg->inputs[0]].source_value == g->inputs[0]);
        /* copy(x) and the two exps (each computes an output, so CSE keeps both); no log */
        CHECK_MSG(korch_pgraph_live_nodes(pg) == 3, "%d nodes", korch_pgraph_live_nodes(pg));
        for (int i = 0; i < pg->n_nodes; i++)
            CHECK(pg->nodes[i].kind != KORCH_PRIM_ELEMENTWISE || pg->nodes[i].u.ew.op != KORCH_EW_LOG);
    }
    korch_pgraph_free(pg);
    korch_graph_free(g);
}

/* The passes one by one on a pgraph built by hand. */
static void passes_individually(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape s = {.rank = 2, .dims = {2, 3}};
    int x = korch_pgraph_add_value(pg, KORCH_DTYPE_FLOAT32, &s);
    pg->inputs = malloc(sizeof(int));
    pg->inputs[pg->n_inputs++] = x;
    int a = korch_pgraph_elementwise(pg, KORCH_EW_EXP, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
    int b = korch_pgraph_elementwise(pg, KORCH_EW_EXP, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
    int ab[2] = {a, b};
    int y = korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ab, 0, 0, KORCH_DTYPE_UNDEFINED);
    korch_pgraph_elementwise(pg, KORCH_EW_LOG, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED); /* dead */
    int c1 = korch_pgraph_add_scalar(pg, 2.0f), c2 = korch_pgraph_add_scalar(pg, 3.0f);
    int cc[2] = {c1, c2};
    int c3 = korch_pgraph_elementwise(pg, KORCH_EW_MUL, 2, cc, 0, 0, KORCH_DTYPE_UNDEFINED); /* constant 6 */
    int yc[2] = {y, c3};
    int z = korch_pgraph_elementwise(pg, KORCH_EW_MUL, 2, yc, 0, 0, KORCH_DTYPE_UNDEFINED);
    pg->outputs = malloc(sizeof(int));
    pg->outputs[pg->n_outputs++] = z;
    int changed = 0;
    CHECK_OK(korch_cleanup_constants(pg, 1 << 20, &changed));
    CHECK(changed == 1 && pg->values[c3].is_constant && *(float *)pg->values[c3].constant.data == 6.0f);
    CHECK_OK(korch_cleanup_cse(pg, &changed));
    CHECK(changed == 1);
    CHECK(pg->nodes[pg->values[y].producer].inputs[0] == pg->nodes[pg->values[y].producer].inputs[1]);
    CHECK_OK(korch_cleanup_dead_code(pg, &changed));
    CHECK(changed == 1); /* the log (CSE already dropped the second exp) */
    CHECK_OK(korch_cleanup_layouts(pg, &changed));
    CHECK(changed == 0);
    CHECK(korch_pgraph_live_nodes(pg) == 3);
    float xv[6] = {0, 1, -1, 0.5f, 2, -2}, expect[6];
    for (int i = 0; i < 6; i++) expect[i] = (float)(2.0 * exp((double)xv[i]) * 6.0);
    korch_tensor in = {.dtype = KORCH_DTYPE_FLOAT32, .shape = s, .data = xv}, out;
    CHECK_OK(korch_pgraph_interpret(pg, &in, &out));
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], expect[i], 1e-5 * fabs(expect[i]));
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
}

int main(void) {
    fh_seed(5);
    transpose_pair_cancels();
    transposes_compose();
    reshapes_merge();
    depth_space_round_trip();
    constants_and_cse();
    folding_limit();
    outputs_and_dead_code();
    passes_individually();
    TEST_MAIN_END();
}
