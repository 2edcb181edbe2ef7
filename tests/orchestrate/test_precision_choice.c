/* Where bf16 pays (src/orchestrate/precision_choice.c, docs/precision.md):
 * under --precision bf16 each linear primitive stays bf16 only where its
 * kernel alone takes at most 90% of its float32 time; the others are kept in
 * float32, the precision casts are placed for the marks that remain, and
 * korch_pgraph_fp32_linear lists the kept ones (what the plan records).
 *
 * The latencies come from a table (no timing: the test is about the rule
 * and the graph, not about this machine), and the oracle checks that each
 * primitive is timed in the form it would run in: bf16 marked and reading
 * the bfloat16 values the casts store, or unmarked and reading float32.
 *
 *     x -> M0(W0) -> h -> relu -> r -> M1(W1) -> y     (output)
 *                     \-> relu -> e -> M2(W2) -> z     (output)
 *                                 e + 1 -> u           (output)
 *     x -> M3(W3) -> v                                 (output) */
#include <string.h>

#include "ir/pgraph.h"
#include "orchestrate/orchestrate.h"
#include "test.h"

typedef struct table {
    int node[4];
    double bf16[4], fp32[4]; /* < 0: this backend cannot implement it */
    int asked[2], wrong_form, other_backend;
} table;

static bool supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason, size_t size) {
    (void)user;
    (void)spec;
    snprintf(reason, size, "the table has oneDNN only");
    return kind == KORCH_BACKEND_DNNL;
}

static korch_status profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                            double budget_s, bool quick, korch_profile_result *results) {
    table *t = user;
    (void)budget_s;
    (void)quick;
    t->other_backend += kind != KORCH_BACKEND_DNNL;
    for (int i = 0; i < n; i++) {
        const korch_pgraph *pg = specs[i].pg;
        memset(&results[i], 0, sizeof results[i]);
        int node = specs[i].nodes[0], row = -1;
        for (int r = 0; r < 4; r++)
            if (t->node[r] == node) row = r;
        const korch_pnode *pn = &pg->nodes[node];
        bool bf16 = pn->u.linear.bf16;
        /* the float32 twin reads float32; the bf16 one reads what the graph stores */
        if (specs[i].n_nodes != 1 || row < 0 || (!bf16 && pg->values[pn->inputs[0]].dtype != KORCH_DTYPE_FLOAT32))
            t->wrong_form++;
        t->asked[bf16 ? 0 : 1]++;
        double ms = row < 0 ? -1 : bf16 ? t->bf16[row] : t->fp32[row];
        results[i].status = ms < 0 ? KORCH_ERR_UNSUPPORTED : KORCH_OK;
        results[i].latency_ms = ms;
        snprintf(results[i].schedule, sizeof results[i].schedule, "s");
    }
    return KORCH_OK;
}

static korch_pgraph *graph(int m[4]) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape xs = {.rank = 2, .dims = {12, 40}};
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &xs);
    korch_shape ws[4] = {{.rank = 2, .dims = {40, 24}}, {.rank = 2, .dims = {24, 8}}, {.rank = 2, .dims = {24, 8}},
                         {.rank = 2, .dims = {40, 8}}};
    int w[4];
    for (int i = 0; i < 4; i++) {
        korch_tensor c;
        CHECK_OK(korch_tensor_alloc(&c, KORCH_DTYPE_FLOAT32, &ws[i]));
        for (int64_t j = 0; j < korch_tensor_numel(&c); j++) ((float *)c.data)[j] = 0.01f * (float)((j * 7 + i) % 13);
        w[i] = korch_pgraph_add_constant(pg, &c);
    }
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    int h = korch_pgraph_linear(pg, &mm, x, w[0]);
    int r = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &h, 0, 0, KORCH_DTYPE_UNDEFINED);
    int e = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &h, 0, 0, KORCH_DTYPE_UNDEFINED);
    int one = korch_pgraph_add_scalar(pg, 1.0f);
    int ue[2] = {e, one};
    int y = korch_pgraph_linear(pg, &mm, r, w[1]), z = korch_pgraph_linear(pg, &mm, e, w[2]);
    int v = korch_pgraph_linear(pg, &mm, x, w[3]);
    korch_pgraph_add_output(pg, y);
    korch_pgraph_add_output(pg, z);
    korch_pgraph_add_output(pg, korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ue, 0, 0, KORCH_DTYPE_UNDEFINED));
    korch_pgraph_add_output(pg, v);
    int outs[4] = {h, y, z, v};
    for (int i = 0; i < 4; i++) m[i] = pg->values[outs[i]].producer;
    return pg;
}

static int casts_of(const korch_pgraph *pg, int value) {
    int n = 0;
    for (int i = 0; i < pg->n_nodes; i++) n += korch_pnode_is_precision_cast(pg, i) && pg->nodes[i].inputs[0] == value;
    return n;
}

/* Marks and casts after korch_pgraph_set_precision_except, and the errors
 * for a list a plan file could carry. */
static void except(void) {
    int m[4];
    korch_pgraph *pg = graph(m);
    uint64_t h32 = korch_pgraph_hash(pg);
    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    uint64_t h16 = korch_pgraph_hash(pg);
    int r = pg->nodes[m[1]].inputs[0];
    if (pg->values[r].producer >= 0 && korch_pnode_is_precision_cast(pg, pg->values[r].producer))
        r = pg->nodes[pg->values[r].producer].inputs[0];
    CHECK_MSG(casts_of(pg, r) == 1 && casts_of(pg, pg->inputs[0]) == 1, "all bf16: r and x are stored in bfloat16");

    int keep[1] = {m[1]};
    CHECK_OK(korch_pgraph_set_precision_except(pg, KORCH_PRECISION_BF16, keep, 1));
    CHECK(!pg->nodes[m[1]].u.linear.bf16 && pg->nodes[m[0]].u.linear.bf16 && pg->nodes[m[2]].u.linear.bf16 &&
          pg->nodes[m[3]].u.linear.bf16);
    CHECK_MSG(casts_of(pg, r) == 0, "r is read by a float32 matmul only: it must stay float32");
    CHECK_MSG(casts_of(pg, pg->inputs[0]) == 1, "x is read by two bf16 matmuls: stored in bfloat16 once");
    CHECK_MSG(pg->values[pg->nodes[m[1]].inputs[0]].dtype == KORCH_DTYPE_FLOAT32, "the kept matmul reads bfloat16");
    uint64_t hk = korch_pgraph_hash(pg);
    CHECK_MSG(hk != h16 && hk != h32, "keeping one matmul in float32 must change the structural hash");
    int *list = NULL, n = 0;
    CHECK_OK(korch_pgraph_fp32_linear(pg, KORCH_PRECISION_BF16, &list, &n));
    CHECK_MSG(n == 1 && list && list[0] == m[1], "fp32_linear lists %d nodes, expected node %d", n, m[1]);
    free(list);
    CHECK_OK(korch_pgraph_set_precision_except(pg, KORCH_PRECISION_BF16, keep, 1)); /* again: the same */
    CHECK(korch_pgraph_hash(pg) == hk);

    /* every one kept: no mark is left, but the list still says which */
    int all[4] = {m[0], m[1], m[2], m[3]};
    CHECK_OK(korch_pgraph_set_precision_except(pg, KORCH_PRECISION_BF16, all, 4));
    CHECK(korch_pgraph_hash(pg) == h32 && korch_pgraph_precision(pg) == KORCH_PRECISION_FP32);
    CHECK_OK(korch_pgraph_fp32_linear(pg, KORCH_PRECISION_BF16, &list, &n));
    CHECK(n == 4);
    free(list);
    CHECK_OK(korch_pgraph_fp32_linear(pg, KORCH_PRECISION_FP32, &list, &n));
    CHECK(n == 0 && list == NULL);

    /* what a damaged plan could ask */
    int relu = pg->values[r].producer, bad[3][1] = {{relu}, {-1}, {pg->n_nodes}};
    for (int i = 0; i < 3; i++) {
        CHECK(korch_pgraph_set_precision_except(pg, KORCH_PRECISION_BF16, bad[i], 1) == KORCH_ERR_INVALID_ARGUMENT);
        CHECK(strstr(korch_last_error(), "cannot be kept in float32") != NULL);
        korch_error_clear();
    }
    CHECK(korch_pgraph_set_precision_except(pg, KORCH_PRECISION_FP32, keep, 1) == KORCH_ERR_INVALID_ARGUMENT);
    korch_error_clear();
    korch_pgraph_free(pg);
}

/* The rule: bf16 where it takes at most 90% of the float32 time. */
static void choice(void) {
    int m[4];
    korch_pgraph *pg = graph(m);
    /* M0 half the time: bf16; M1 a tie within noise: float32; M2 exactly
     * 90%: bf16; M3 not implementable in float32: nothing to weigh, bf16 */
    table t = {.node = {m[0], m[1], m[2], m[3]}, .bf16 = {0.5, 0.95, 0.9, 1.0}, .fp32 = {1.0, 1.0, 1.0, -1}};
    korch_kernel_oracle oracle = {.supports = supports, .profile = profile, .user = &t};

    CHECK_OK(korch_choose_linear_precision(pg, &oracle, NULL)); /* float32 graph: nothing asked */
    CHECK(t.asked[0] + t.asked[1] == 0);

    CHECK_OK(korch_pgraph_set_precision(pg, KORCH_PRECISION_BF16));
    FILE *log = tmpfile();
    CHECK_OK(korch_choose_linear_precision(pg, &oracle, log));
    CHECK_MSG(t.asked[0] == 4 && t.asked[1] == 4, "asked %d bf16 and %d float32 timings; expected 4 and 4",
              t.asked[0], t.asked[1]);
    CHECK_MSG(t.wrong_form == 0, "%d timings of a primitive in the wrong form", t.wrong_form);
    CHECK_MSG(t.other_backend == 0, "a backend that does not support the kernel was asked");
    CHECK_MSG(pg->nodes[m[0]].u.linear.bf16, "M0 (bf16 half the time) must stay bf16");
    CHECK_MSG(!pg->nodes[m[1]].u.linear.bf16, "M1 (bf16 95%% of float32) must be kept in float32");
    CHECK_MSG(pg->nodes[m[2]].u.linear.bf16, "M2 (bf16 90%% of float32) must stay bf16");
    CHECK_MSG(pg->nodes[m[3]].u.linear.bf16, "M3 (no float32 time) must stay bf16");
    int *list = NULL, n = 0;
    CHECK_OK(korch_pgraph_fp32_linear(pg, KORCH_PRECISION_BF16, &list, &n));
    CHECK(n == 1 && list && list[0] == m[1]);
    free(list);
    /* the casts follow the remaining marks: r is read by M1 only, now float32 */
    CHECK(pg->values[pg->nodes[m[1]].inputs[0]].dtype == KORCH_DTYPE_FLOAT32);
    CHECK(pg->values[pg->nodes[m[0]].inputs[0]].dtype == KORCH_DTYPE_BFLOAT16);
    char text[2048] = "";
    rewind(log);
    size_t got = fread(text, 1, sizeof text - 1, log);
    text[got] = '\0';
    fclose(log);
    CHECK_MSG(strstr(text, "3 of 4 linear primitives in bf16, 1 kept in float32") != NULL, "log: %s", text);
    korch_pgraph_free(pg);
}

int main(void) {
    except();
    choice();
    TEST_MAIN_END();
}
