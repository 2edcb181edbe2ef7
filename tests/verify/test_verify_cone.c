/* korch_verify_kernels interprets only what its checks depend on: the
 * checked kernels' nodes and everything upstream of them, never a node
 * downstream of every checked kernel (kernel_check.c). A chain of eight
 * unary primitives on a side branch and a main branch: checking a kernel at
 * the chain's third node must run exactly its three nodes; checking the
 * last one must run the chain and nothing of the other branch; a check on
 * each branch runs both. The verdicts stay "verified" throughout. */
#include <stdlib.h>

#include "ir/pgraph.h"
#include "test.h"
#include "verify/verify.h"

enum { CHAIN = 8 };

static int chain_nodes[CHAIN], other_nodes[3];

static korch_pgraph *build(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    korch_shape s = {.rank = 2, .dims = {16, 64}};
    int x = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
    static const korch_ew_op ops[] = {KORCH_EW_EXP, KORCH_EW_TANH, KORCH_EW_SIGMOID, KORCH_EW_NEG};
    int v = x;
    for (int i = 0; i < CHAIN; i++) {
        v = korch_pgraph_elementwise(pg, ops[i % 4], 1, &v, 0, 0, KORCH_DTYPE_UNDEFINED);
        chain_nodes[i] = pg->values[v].producer;
    }
    CHECK_OK(korch_pgraph_add_output(pg, v));
    int w = x;
    for (int i = 0; i < 3; i++) {
        w = korch_pgraph_elementwise(pg, ops[(i + 1) % 4], 1, &w, 0, 0, KORCH_DTYPE_UNDEFINED);
        other_nodes[i] = pg->values[w].producer;
    }
    CHECK_OK(korch_pgraph_add_output(pg, w));
    return pg;
}

/* a generated-C kernel of the one node n */
static korch_verify_item item_of(const korch_pgraph *pg, int n, int *in, int *out) {
    *in = pg->nodes[n].inputs[0];
    *out = pg->nodes[n].outputs[0];
    static int nodes[16];
    static int used;
    int *slot = &nodes[used++ % 16];
    *slot = n;
    return (korch_verify_item){.spec = {.pg = pg, .n_nodes = 1, .nodes = slot, .n_inputs = 1, .inputs = in,
                                        .n_outputs = 1, .outputs = out},
                               .backend = KORCH_BACKEND_CGEN};
}

static void expect(const korch_pgraph *pg, const int *nodes, int n, long want_run, const char *what) {
    korch_verify_item items[4];
    int ins[4], outs[4];
    for (int i = 0; i < n; i++) items[i] = item_of(pg, nodes[i], &ins[i], &outs[i]);
    korch_verify_result res[4];
    korch_verify_timing timing = {0};
    korch_profile_options build = {.threads = 1};
    korch_verify_options o = {.seed = 7, .build = &build, .timing = &timing};
    CHECK_OK(korch_verify_kernels(pg, items, n, &o, res));
    for (int i = 0; i < n; i++)
        CHECK_MSG(res[i].verdict == KORCH_VERDICT_VERIFIED, "%s: kernel %d: %s (%s)", what, i,
                  korch_verdict_name(res[i].verdict), res[i].detail);
    CHECK_MSG(timing.interpreted == want_run, "%s: %ld nodes interpreted, want %ld", what, timing.interpreted,
              want_run);
    CHECK_MSG(timing.interpreted + timing.skipped == pg->n_nodes, "%s: %ld + %ld nodes, the graph has %d", what,
              timing.interpreted, timing.skipped, pg->n_nodes);
}

int main(void) {
    korch_pgraph *pg = build();
    expect(pg, &chain_nodes[2], 1, 3, "third node of the chain");
    expect(pg, &chain_nodes[CHAIN - 1], 1, CHAIN, "last node of the chain");
    int both[2] = {chain_nodes[0], other_nodes[2]};
    expect(pg, both, 2, 1 + 3, "first of the chain and last of the branch");
    korch_pgraph_free(pg);
    TEST_MAIN_END();
}
