/* The memory planner: placement (korch_memory_place) on random lifetimes,
 * checked by brute force; memory plans of random execution plans (no two
 * live values share a byte unless one runs in place over the other), their
 * results against the interpreter; and hand-made cases whose arena size is
 * worked out below. */
#include <string.h>
#include <unistd.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "runtime/arena.h"
#include "runtime/executor.h"
#include "test.h"

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static bool disjoint_bytes(size_t oa, size_t na, size_t ob, size_t nb) { return oa + na <= ob || ob + nb <= oa; }

/* every pair of requests with overlapping lifetimes occupies disjoint bytes */
static void check_placement(const korch_buffer_request *r, int n, const size_t *off, size_t arena, const char *what) {
    int bad = 0;
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        if (off[i] % 64) bad++;
        if (off[i] + round64(r[i].bytes) > top) top = off[i] + round64(r[i].bytes);
        for (int j = i + 1; j < n; j++)
            if (r[i].first <= r[j].last && r[j].first <= r[i].last &&
                !disjoint_bytes(off[i], round64(r[i].bytes), off[j], round64(r[j].bytes)))
                bad++;
    }
    CHECK_MSG(bad == 0, "%s: %d overlapping or misaligned placements", what, bad);
    CHECK_MSG(top == arena, "%s: arena %zu, highest byte used %zu", what, arena, top);
}

static void test_place_hand(void) {
    /* three 100-byte values in a chain: a [0,1], b [1,2], c [2,3]. a and c
     * never live at once, so two 128-byte slots suffice. */
    korch_buffer_request r[3] = {{0, 100, 0, 1}, {1, 100, 1, 2}, {2, 100, 2, 3}};
    size_t off[3], arena = 0;
    CHECK_OK(korch_memory_place(r, 3, 64, off, &arena));
    CHECK(arena == 256);
    CHECK(off[0] == off[2] && off[0] != off[1]);
    /* best fit: a 1000-byte value [0,0] and a 200-byte value [0,3] leave,
     * after them, a 1000-byte hole at kernels 1..3; a 64-byte value [2,2] goes
     * into it rather than above */
    korch_buffer_request q[3] = {{0, 1000, 0, 0}, {1, 200, 0, 3}, {2, 64, 2, 2}};
    CHECK_OK(korch_memory_place(q, 3, 64, off, &arena));
    check_placement(q, 3, off, arena, "hole");
    CHECK(arena == round64(1000) + round64(200));
    /* refused input */
    CHECK(korch_memory_place(q, 3, 48, off, &arena) == KORCH_ERR_INVALID_ARGUMENT);
    korch_buffer_request bad = {0, 8, 3, 1};
    CHECK(korch_memory_place(&bad, 1, 64, off, &arena) == KORCH_ERR_INTERNAL);
    CHECK_OK(korch_memory_place(NULL, 0, 64, off, &arena));
    CHECK(arena == 0);
}

/* random lifetimes: always valid, never above one slot each, never below the
 * most bytes live at one time; prints how close to that bound it gets */
static void test_place_random(void) {
    gen_rng rng = {12345};
    double worst = 1.0, sum_ratio = 0;
    int cases = 300;
    for (int c = 0; c < cases; c++) {
        int n = 1 + gen_below(&rng, 120), span = 1 + gen_below(&rng, 60);
        korch_buffer_request *r = malloc((size_t)n * sizeof *r);
        size_t *off = malloc((size_t)n * sizeof *off), arena = 0, sum = 0;
        for (int i = 0; i < n; i++) {
            int first = gen_below(&rng, span), len = gen_below(&rng, 1 + span / (1 + gen_below(&rng, 4)));
            size_t bytes = gen_below(&rng, 4) ? 1 + (size_t)gen_below(&rng, 5000) : (size_t)gen_below(&rng, 1 << 20);
            r[i] = (korch_buffer_request){.value = i, .bytes = bytes, .first = first, .last = first + len};
            sum += round64(bytes);
        }
        CHECK_OK(korch_memory_place(r, n, 64, off, &arena));
        check_placement(r, n, off, arena, "random");
        size_t peak = 0;
        for (int t = 0; t < 2 * span + 2; t++) {
            size_t live = 0;
            for (int i = 0; i < n; i++)
                if (r[i].first <= t && t <= r[i].last) live += round64(r[i].bytes);
            if (live > peak) peak = live;
        }
        CHECK(arena >= peak && arena <= sum);
        double ratio = peak ? (double)arena / (double)peak : 1.0;
        sum_ratio += ratio;
        if (ratio > worst) worst = ratio;
        free(r);
        free(off);
    }
    printf("placement: %d random cases, arena / lower bound: mean %.3f, worst %.3f\n", cases, sum_ratio / cases,
           worst);
}

/* A plan's memory plan: values whose lifetimes overlap (computed here from
 * the plan, independently of arena.c) never share bytes, except a value
 * written in place over its kernel's input. */
static void check_memory_plan(const korch_pgraph *pg, const korch_plan *plan, const korch_memory_plan *mp) {
    int nv = pg->n_values;
    int *first = malloc((size_t)nv * sizeof *first), *last = malloc((size_t)nv * sizeof *last);
    for (int v = 0; v < nv; v++) first[v] = last[v] = -1;
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        for (int j = 0; j < k->n_outputs; j++) {
            if (first[k->outputs[j]] < 0) first[k->outputs[j]] = i;
            last[k->outputs[j]] = i;
        }
        for (int j = 0; j < k->n_inputs; j++)
            if (first[k->inputs[j]] >= 0 && i > last[k->inputs[j]]) last[k->inputs[j]] = i;
    }
    int bad = 0, arena_values = 0;
    for (int a = 0; a < nv; a++) {
        bool in_arena = first[a] >= 0 && pg->values[a].graph_output < 0;
        if (in_arena != (mp->offset[a] >= 0)) bad++;
        if (!in_arena) continue;
        arena_values++;
        korch_tensor ta = {.dtype = pg->values[a].dtype, .shape = pg->values[a].shape};
        if ((size_t)mp->offset[a] + korch_tensor_bytes(&ta) > mp->arena_bytes) bad++;
        for (int b = a + 1; b < nv; b++) {
            if (mp->offset[b] < 0 || first[b] < 0) continue;
            if (!(first[a] <= last[b] && first[b] <= last[a])) continue;
            /* in place: b is made by the kernel where a dies, over a (or the reverse) */
            if (mp->in_place_of[b] == a || mp->in_place_of[a] == b) {
                if (mp->offset[a] != mp->offset[b]) bad++;
                continue;
            }
            korch_tensor tb = {.dtype = pg->values[b].dtype, .shape = pg->values[b].shape};
            if (!disjoint_bytes((size_t)mp->offset[a], korch_tensor_bytes(&ta), (size_t)mp->offset[b],
                                korch_tensor_bytes(&tb)))
                bad++;
        }
    }
    CHECK_MSG(bad == 0, "memory plan: %d conflicts", bad);
    /* staggering: a kernel's large arena operands in different buffers
     * differ modulo 4 KiB */
    int aliased = 0;
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        int n = k->n_inputs + k->n_outputs;
        for (int x = 0; x < n; x++)
            for (int y = x + 1; y < n; y++) {
                int a = x < k->n_inputs ? k->inputs[x] : k->outputs[x - k->n_inputs];
                int b = y < k->n_inputs ? k->inputs[y] : k->outputs[y - k->n_inputs];
                if (a == b || mp->offset[a] < 0 || mp->offset[b] < 0 || mp->offset[a] == mp->offset[b]) continue;
                korch_tensor ta = {.dtype = pg->values[a].dtype, .shape = pg->values[a].shape};
                korch_tensor tb = {.dtype = pg->values[b].dtype, .shape = pg->values[b].shape};
                if (korch_tensor_bytes(&ta) < KORCH_ARENA_STAGGER_MIN || korch_tensor_bytes(&tb) < KORCH_ARENA_STAGGER_MIN)
                    continue;
                aliased += mp->offset[a] % 4096 == mp->offset[b] % 4096;
            }
    }
    CHECK_MSG(aliased == 0, "memory plan: %d pairs of large operands of one kernel alias modulo 4 KiB", aliased);
    CHECK(arena_values == mp->n_buffers);
    CHECK(mp->arena_bytes >= mp->peak_live_bytes && mp->arena_bytes <= mp->unshared_bytes);
    free(first);
    free(last);
}

static bool same_tensor(const korch_tensor *a, const korch_tensor *b) {
    if (korch_tensor_bytes(a) != korch_tensor_bytes(b)) return false;
    const float *x = a->data, *y = b->data;
    for (int64_t i = 0; i < korch_tensor_numel(a); i++)
        if (!(fabsf(x[i] - y[i]) <= 1e-5f * (1.0f + fabsf(y[i])))) return false;
    return true;
}

static void run_against_interpreter(const korch_pgraph *pg, const korch_plan *plan, const korch_profile_options *po,
                                    const char *what) {
    korch_executor *ex = NULL;
    CHECK_OK(korch_executor_create(plan, pg, po, &ex));
    if (!ex) return;
    korch_tensor *in = gen_inputs(pg, 7);
    korch_tensor *want = calloc((size_t)pg->n_outputs, sizeof *want), *got = calloc((size_t)pg->n_outputs, sizeof *got);
    CHECK_OK(korch_pgraph_interpret(pg, in, want));
    for (int i = 0; i < pg->n_outputs; i++)
        korch_tensor_alloc(&got[i], pg->values[pg->outputs[i]].dtype, &pg->values[pg->outputs[i]].shape);
    for (int rep = 0; rep < 2; rep++) {
        CHECK_OK(korch_executor_run(ex, in, got));
        for (int i = 0; i < pg->n_outputs; i++) CHECK_MSG(same_tensor(&got[i], &want[i]), "%s: output %d", what, i);
    }
    gen_free_tensors(in, pg->n_inputs);
    gen_free_tensors(want, pg->n_outputs);
    gen_free_tensors(got, pg->n_outputs);
    korch_executor_destroy(ex);
}

static void test_random_plans(void) {
    int plans = 0, in_place = 0;
    size_t arena = 0, unshared = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 31 + 5, 4 + (int)(seed % 9), seed % 3 != 0);
        fake_oracle f = {.seed = seed, .multi_output_factor = 0.5};
        korch_kernel_oracle oracle = fake_oracle_make(&f);
        korch_orchestrate_options o = test_orchestrate_options(1);
        o.candidates.force_backend = KORCH_BACKEND_REF;
        o.prune_by_bound = false;
        korch_orchestrator *orch = NULL;
        CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
        if (orch) CHECK_OK(korch_orchestrator_profile(orch));
        for (int s = 0; orch && s < KORCH_STRATEGY_COUNT; s++) {
            korch_plan *plan = NULL;
            CHECK_OK(korch_orchestrator_solve(orch, (korch_strategy)s, &plan));
            if (!plan) continue;
            korch_memory_plan mp;
            CHECK_OK(korch_memory_plan_build(plan, pg, &mp));
            check_memory_plan(pg, plan, &mp);
            in_place += mp.n_in_place;
            arena += mp.arena_bytes;
            unshared += mp.unshared_bytes;
            korch_memory_plan_free(&mp);
            run_against_interpreter(pg, plan, NULL, "random plan");
            plans++;
            korch_plan_free(plan);
        }
        korch_orchestrator_free(orch);
        korch_pgraph_free(pg);
    }
    printf("memory plans: %d plans, %d kernels in place, arena %zu bytes vs %zu with one slot per value\n", plans,
           in_place, arena, unshared);
    CHECK(in_place > 0 && arena < unshared);
}

/* x -> relu -> exp -> neg -> sigmoid (graph output), one kernel each, values
 * [64, 64] float (16 KiB). a = relu(x) cannot overwrite the graph input; exp
 * and neg run in place over a, so a, b and c are one 16 KiB buffer. Without
 * in-place, a and c could share but b could not: 32 KiB. */
static korch_pgraph *chain_graph(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int x = gen_input(pg, 64, 64);
    int a = gen_unary(pg, KORCH_EW_RELU, x);
    int b = gen_unary(pg, KORCH_EW_EXP, a);
    int c = gen_unary(pg, KORCH_EW_NEG, b);
    int y = gen_unary(pg, KORCH_EW_SIGMOID, c);
    gen_output(pg, y);
    return pg;
}

static korch_plan *one_kernel_per_node(const korch_pgraph *pg, korch_backend_kind backend) {
    korch_pgraph_uses uses;
    korch_pgraph_uses_build(pg, &uses);
    korch_plan *plan = korch_plan_new();
    plan->pgraph_nodes = pg->n_nodes;
    int order[64], count = 0;
    korch_pgraph_toposort(pg, order, &count);
    for (int i = 0; i < count; i++) {
        korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &uses, 1, &order[i]);
        if (k) k->backend = backend;
    }
    korch_pgraph_uses_free(&uses);
    return plan;
}

static void test_chain_in_place(void) {
    korch_pgraph *pg = chain_graph();
    korch_plan *plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
    korch_memory_plan mp;
    CHECK_OK(korch_memory_plan_build(plan, pg, &mp));
    CHECK(mp.n_in_place == 2);
    /* 16 KiB buffers are staggered: each carries the pad */
    CHECK(mp.arena_bytes == 64 * 64 * 4 + KORCH_ARENA_STAGGER_PAD);
    CHECK(mp.unshared_bytes == 3 * (64 * 64 * 4 + KORCH_ARENA_STAGGER_PAD));
    check_memory_plan(pg, plan, &mp);
    korch_memory_plan_free(&mp);
    run_against_interpreter(pg, plan, NULL, "chain (ref)");
    korch_plan_free(plan);
    /* generated C kernels running in place (compiled into a test-local cache) */
    char cache[] = "/tmp/korch_test_arena_XXXXXX";
    if (mkdtemp(cache)) {
        plan = one_kernel_per_node(pg, KORCH_BACKEND_CGEN);
        korch_profile_options po = {.threads = 2, .cache_dir = cache};
        run_against_interpreter(pg, plan, &po, "chain (cgen)");
        korch_plan_free(plan);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
        CHECK(system(cmd) == 0);
    }
    korch_pgraph_free(pg);
}

/* not in place: a broadcast input, a transpose, a reduction, an input read
 * again later, two outputs */
static void test_not_in_place(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int x = gen_input(pg, 4, 4);
    int a = gen_unary(pg, KORCH_EW_RELU, x);                            /* [4,4] */
    int r = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, a, 1u << 1, true); /* [4,1] */
    int b = gen_binary(pg, KORCH_EW_ADD, a, r);                          /* reads r broadcast, a in place is legal */
    int t = gen_transpose(pg, b);                                        /* layout: never in place */
    int c = gen_binary(pg, KORCH_EW_MUL, t, a);                          /* reads a again: b cannot overwrite a */
    gen_output(pg, c);
    korch_plan *plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
    korch_memory_plan mp;
    CHECK_OK(korch_memory_plan_build(plan, pg, &mp));
    CHECK(mp.n_in_place == 0);
    check_memory_plan(pg, plan, &mp);
    /* the rule itself, without lifetimes */
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        int j = korch_kernel_in_place_input(pg, k, NULL, NULL);
        int node = k->nodes[0];
        int out = pg->nodes[node].outputs[0];
        if (out == b) CHECK(j >= 0 && k->inputs[j] == a); /* r is [4,1]: not a candidate */
        else if (out == c) CHECK(j >= 0);                 /* t or a: same shape, elementwise */
        else CHECK(j < 0);                                /* relu of a graph input, reduce, transpose */
    }
    korch_memory_plan_free(&mp);
    run_against_interpreter(pg, plan, NULL, "not in place");
    korch_plan_free(plan);
    korch_pgraph_free(pg);
}

/* Large operands of one kernel: x -> relu, exp, neg, then add(relu, exp)
 * and mul(add, neg): every kernel reads two or three large buffers, and
 * check_memory_plan requires them to differ modulo 4 KiB. Values of 4112
 * floats (16448 bytes) padded by KORCH_ARENA_STAGGER_PAD take exactly five
 * pages, so without the slots every buffer would start on a page boundary. */
static void test_stagger(void) {
    korch_pgraph *pg = NULL;
    korch_pgraph_create(NULL, &pg);
    int x = gen_input(pg, 16, 257);
    int a = gen_unary(pg, KORCH_EW_RELU, x), b = gen_unary(pg, KORCH_EW_EXP, x), c = gen_unary(pg, KORCH_EW_NEG, x);
    int d = gen_binary(pg, KORCH_EW_ADD, a, b);
    gen_output(pg, gen_unary(pg, KORCH_EW_SIGMOID, gen_binary(pg, KORCH_EW_MUL, d, c)));
    korch_plan *plan = one_kernel_per_node(pg, KORCH_BACKEND_REF);
    korch_memory_plan mp;
    CHECK_OK(korch_memory_plan_build(plan, pg, &mp));
    check_memory_plan(pg, plan, &mp);
    int staggered = 0;
    for (int v = 0; v < pg->n_values; v++) staggered += mp.offset[v] >= 0 && mp.offset[v] % 4096 != 0;
    CHECK_MSG(staggered >= 2, "%d values off a page boundary", staggered);
    korch_memory_plan_free(&mp);
    run_against_interpreter(pg, plan, NULL, "staggered");
    korch_plan_free(plan);
    korch_pgraph_free(pg);
}

int main(void) {
    test_place_hand();
    test_place_random();
    test_random_plans();
    test_chain_in_place();
    test_not_in_place();
    test_stagger();
    TEST_MAIN_END();
}
