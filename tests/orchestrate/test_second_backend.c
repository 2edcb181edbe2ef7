/* Two backends for one candidate (korch_candidate_second_backend, phase 1's
 * second opinion): oneDNN candidates holding depthwise convolutions are
 * timed by the generator too, tuned when it is a close call, and run by the
 * faster; a channels-last convolution over a channels-last tensor is never
 * offered, one fed by a transpose inside the candidate is. The latencies
 * are made up (no timing: the generator's default is a close call, its
 * tuned kernel wins), the support answers are the real backends', and the
 * chosen plan is then built with the real backends and run against the
 * interpreter. */
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "ir/indexmap.h"
#include "orchestrate/fake_oracle.h"
#include "runtime/executor.h"
#include "test.h"

typedef struct second_stats {
    long asked_quick, asked_tuned, asked_bad;
} second_stats;

static bool has_linear(const korch_kernel_spec *s) {
    for (int i = 0; i < s->n_nodes; i++)
        if (s->pg->nodes[s->nodes[i]].kind == KORCH_PRIM_LINEAR) return true;
    return false;
}

/* a channels-last convolution asked of the generator without the layout
 * primitive that feeds it */
static bool offered_wrongly(const korch_kernel_spec *s) {
    for (int i = 0; i < s->n_nodes; i++) {
        const korch_pnode *n = &s->pg->nodes[s->nodes[i]];
        if (n->kind != KORCH_PRIM_LINEAR || !n->u.linear.channels_last) continue;
        int from = s->pg->values[n->inputs[0]].producer;
        bool inside = false;
        for (int j = 0; j < s->n_nodes; j++) inside |= s->nodes[j] == from;
        if (!inside || s->pg->nodes[from].kind != KORCH_PRIM_LAYOUT) return true;
    }
    return false;
}

static bool real_supports(void *user, korch_backend_kind kind, const korch_kernel_spec *spec, char *reason,
                          size_t size) {
    (void)user;
    return korch_backend_supports(kind, spec, reason, size);
}

static korch_status made_up_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                    double budget_s, bool quick, korch_profile_result *results) {
    second_stats *st = user;
    (void)budget_s;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].status = KORCH_OK;
        double ms = kind == KORCH_BACKEND_REF ? 10.0 : 1.0;
        if (kind == KORCH_BACKEND_CGEN && has_linear(&specs[i])) {
            /* the second opinion: a close call by default, a win tuned */
            ms = quick ? 1.2 : 0.5;
            st->asked_quick += quick;
            st->asked_tuned += !quick;
            st->asked_bad += offered_wrongly(&specs[i]);
        }
        results[i].latency_ms = ms;
        results[i].default_only = false;
        snprintf(results[i].impl, sizeof results[i].impl, "made up");
    }
    return KORCH_OK;
}

static int transpose(korch_pgraph *pg, int x, bool to_last) {
    int r = pg->values[x].shape.rank;
    int64_t perm[KORCH_MAX_RANK] = {0};
    for (int j = 1; j < r; j++) perm[j] = to_last ? (j == r - 1 ? 1 : j + 1) : (j == 1 ? r - 1 : j - 1);
    return korch_pgraph_transpose(pg, x, perm);
}

static int constant(korch_pgraph *pg, int rank, const int64_t *dims, uint64_t seed) {
    korch_tensor t;
    korch_shape s = korch_shape_make(rank, dims);
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1;
    for (int64_t i = 0; i < korch_tensor_numel(&t); i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        ((float *)t.data)[i] = (float)((double)(seed >> 40) / (double)(1ull << 24)) - 0.5f;
    }
    return korch_pgraph_add_constant(pg, &t);
}

/* conv (depthwise 3x3, pad 1) + bias + ReLU over x in the given layout */
static int dw_block(korch_pgraph *pg, int x, bool channels_last, uint64_t seed) {
    int64_t c = pg->values[x].shape.dims[channels_last ? 3 : 1];
    int64_t wd[4] = {c, 1, 3, 3}, bd[4] = {1, 1, 1, 1};
    bd[channels_last ? 3 : 1] = c;
    korch_prim_linear p = {.op = KORCH_LINEAR_CONV, .spatial = 2, .group = c, .channels_last = channels_last};
    for (int d = 0; d < 2; d++) {
        p.strides[d] = p.dilations[d] = 1;
        p.pads_begin[d] = p.pads_end[d] = 1;
    }
    int y = korch_pgraph_linear(pg, &p, x, constant(pg, 4, wd, seed));
    int add[2] = {y, constant(pg, 4, bd, seed + 1)};
    y = korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, add, 0, 0, KORCH_DTYPE_UNDEFINED);
    return korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &y, 0, 0, KORCH_DTYPE_UNDEFINED);
}

/* Which backend the plan kernel holding primitive `node` uses, or -1. */
static int backend_of(const korch_plan *plan, int node) {
    for (int k = 0; k < plan->n_kernels; k++)
        for (int i = 0; i < plan->kernels[k].n_nodes; i++)
            if (plan->kernels[k].nodes[i] == node) return (int)plan->kernels[k].backend;
    return -1;
}

static int conv_node(const korch_pgraph *pg, int nth) {
    for (int i = 0; i < pg->n_nodes; i++)
        if (pg->nodes[i].kind == KORCH_PRIM_LINEAR && nth-- == 0) return i;
    return -1;
}

static void test_second_opinion(bool estimated) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t nchw[4] = {1, 8, 12, 12}, nhwc[4] = {1, 12, 12, 8};
    korch_shape s1 = korch_shape_make(4, nchw), s2 = korch_shape_make(4, nhwc);
    int x1 = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s1);
    int x2 = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s2);
    int x3 = korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s1);
    korch_pgraph_add_output(pg, dw_block(pg, x1, false, 11));                     /* channels-first */
    korch_pgraph_add_output(pg, dw_block(pg, x2, true, 21));                      /* channels-last tensor */
    korch_pgraph_add_output(pg, transpose(pg, dw_block(pg, transpose(pg, x3, true), true, 31), false)); /* fed by a transpose */

    second_stats st = {0};
    korch_kernel_oracle oracle = {.supports = real_supports, .profile = made_up_profile, .user = &st};
    korch_orchestrate_options o = test_orchestrate_options(2);
    o.estimated = estimated;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &plan));
    CHECK_MSG(st.asked_bad == 0, "%ld candidates with a channels-last convolution over a channels-last tensor were "
              "offered to the generator", st.asked_bad);
    if (estimated) {
        CHECK_MSG(st.asked_quick == 0 && st.asked_tuned == 0, "--estimate asked the generator for a second opinion");
    } else {
        CHECK_MSG(st.asked_quick > 0, "no second opinion was asked");
        CHECK_MSG(st.asked_tuned > 0, "the close calls were not tuned");
    }
    if (plan) {
        int want = estimated ? KORCH_BACKEND_DNNL : KORCH_BACKEND_CGEN;
        CHECK_MSG(backend_of(plan, conv_node(pg, 0)) == want, "channels-first convolution: backend %d, want %d",
                  backend_of(plan, conv_node(pg, 0)), want);
        CHECK_MSG(backend_of(plan, conv_node(pg, 1)) == KORCH_BACKEND_DNNL,
                  "channels-last convolution over a channels-last tensor left oneDNN");
        CHECK_MSG(backend_of(plan, conv_node(pg, 2)) == want, "transposed convolution: backend %d, want %d",
                  backend_of(plan, conv_node(pg, 2)), want);

        /* the plan, built with the real backends, against the interpreter */
        korch_profile_options po = {.threads = 2};
        korch_executor *ex = NULL;
        CHECK_OK(korch_executor_create(plan, pg, &po, &ex));
        korch_tensor in[3] = {0}, want_t[3] = {0}, got[3] = {0};
        for (int i = 0; i < 3; i++) {
            const korch_pvalue *v = &pg->values[pg->inputs[i]];
            korch_tensor_alloc(&in[i], v->dtype, &v->shape);
            for (int64_t j = 0; j < korch_tensor_numel(&in[i]); j++)
                ((float *)in[i].data)[j] = (float)((j * 7919 + i * 131) % 2001) / 1000.0f - 1.0f;
        }
        CHECK_OK(korch_pgraph_interpret(pg, in, want_t));
        for (int i = 0; i < 3; i++)
            korch_tensor_alloc(&got[i], KORCH_DTYPE_FLOAT32, &pg->values[pg->outputs[i]].shape);
        if (ex) {
            CHECK_OK(korch_executor_run(ex, in, got));
            for (int i = 0; i < 3; i++) {
                const float *g = got[i].data, *w = want_t[i].data;
                int bad = 0;
                for (int64_t j = 0; j < korch_tensor_numel(&got[i]); j++)
                    bad += !(fabsf(g[j] - w[j]) <= 1e-5f * (1.0f + fabsf(w[j])));
                CHECK_MSG(bad == 0, "output %d: %d elements differ from the interpreter", i, bad);
            }
        }
        korch_executor_destroy(ex);
        for (int i = 0; i < 3; i++) {
            korch_tensor_free(&in[i]);
            korch_tensor_free(&want_t[i]);
            korch_tensor_free(&got[i]);
        }
    }
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_pgraph_free(pg);
}

int main(void) {
    test_second_opinion(false);
    test_second_opinion(true);
    TEST_MAIN_END();
}
