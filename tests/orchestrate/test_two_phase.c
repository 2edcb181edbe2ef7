/* Two-phase profiling (orchestrate/phase2_tune.c, orchestrate.c) against full
 * tuning, with a fake backend whose tuning lowers kernels by known factors.
 *
 * Every kernel has a default latency D (what quick profiling measures) and
 * a tuned one T = g * D with a gain g in [g_min, 1] (a third of the kernels
 * gain nothing). Latencies depend only on the kernel signature, as real ones
 * do. The fake remembers what it tuned (a profile database). References:
 *  - OPT_T, full tuning: quick calls answer T for everything;
 *  - OPT_M, the measured latencies at the end of a two-phase run: T for what
 *    it tuned, D for the rest, solved once without tuning.
 * Checked, on random graphs:
 *  - the two-phase plan is optimal for the measured latencies (= OPT_M) and
 *    every kernel in it is tuned;
 *  - OPT_T <= plan <= OPT_T / g_min;
 *  - plan = OPT_T whenever a fully tuned optimum uses only kernels the run
 *    tuned or that gain nothing (the condition under which the argument in
 *    docs/orchestration.md says it must), and always with the margin g_min;
 *  - uniform gains: plan = OPT_T;
 *  - a second run tunes nothing and returns the same plan;
 *  - a budget stops tuning (kernels left untuned keep D) after exactly the
 *    kernels it allows, and the plan is still valid and optimal for its
 *    measured latencies, with and without the margin; a budget that phase 1
 *    already used up tunes nothing.
 * Nothing here depends on the machine's speed (issue 16): the budget is
 * counted on a simulated clock that only the fake advances (tuning a kernel
 * takes tune_ms, timing a default schedule quick_ms), and the binary
 * programs have no wall-clock limit (test_orchestrate_options). */
#include <math.h>
#include <string.h>

#include "orchestrate/fake_oracle.h"
#include "orchestrate/pgraph_gen.h"
#include "test.h"

typedef struct tuning_fake {
    uint64_t seed;
    double g_min;
    bool uniform; /* every kernel gains exactly g_min */
    bool all_tuned; /* quick calls answer tuned latencies: full tuning */
    bool frozen; /* tuning calls tune nothing: they return what quick would */
    double tune_ms; /* simulated time to tune one kernel */
    double quick_ms; /* simulated time to time one default schedule */
    double clock_ms; /* the simulated clock (the orchestrator's budget clock) */
    uint64_t db[4096]; /* signatures tuned so far */
    int n_db;
    long tuned_specs; /* kernels tuned (not answered from db) */
} tuning_fake;

static double kind_cost(const korch_pnode *n) {
    int op = n->kind == KORCH_PRIM_ELEMENTWISE ? (int)n->u.ew.op : 0;
    return 0.2 + 0.15 * (double)(((int)n->kind * 7 + op * 3) % 9);
}

static double tf_default(const tuning_fake *f, const korch_kernel_spec *s, uint64_t sig) {
    double base = 0;
    for (int i = 0; i < s->n_nodes; i++) base += kind_cost(&s->pg->nodes[s->nodes[i]]);
    if (s->n_nodes == 1) return base;
    uint64_t h = fake_hash(f->seed, sig);
    return base * (0.35 + 0.9 * (double)(h % 1000) / 1000.0);
}

static double tf_gain(const tuning_fake *f, uint64_t sig) {
    if (f->uniform) return f->g_min;
    uint64_t h = fake_hash(f->seed ^ 0x5bd1e995u, sig);
    if (h % 3 == 0) return 1.0;
    return f->g_min + (1.0 - f->g_min) * (double)((h >> 8) % 1000) / 1000.0;
}

static bool tf_known(const tuning_fake *f, uint64_t sig) {
    for (int i = 0; i < f->n_db; i++)
        if (f->db[i] == sig) return true;
    return false;
}

/* starts far from 0: the orchestrator takes a start time of 0 as "not started" */
#define SIM_EPOCH_MS 1e6

static double sim_clock(void *user) { return ((tuning_fake *)user)->clock_ms; }

/* Like a backend: tuning stops within a call once the call's budget is
 * spent, and the rest keep their default measurement. */
static korch_status tf_profile(void *user, korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                               double budget_s, bool quick, korch_profile_result *results) {
    tuning_fake *f = user;
    double t0 = f->clock_ms;
    for (int i = 0; i < n; i++) {
        korch_profile_result *r = &results[i];
        memset(r, 0, sizeof *r);
        uint64_t sig = korch_kernel_signature(&specs[i]);
        double d = tf_default(f, &specs[i], sig), t = d * tf_gain(f, sig);
        bool known = tf_known(f, sig);
        r->status = KORCH_OK;
        if (quick || f->frozen) {
            bool tuned = f->all_tuned || known;
            r->latency_ms = tuned ? t : d;
            r->default_only = quick && !tuned;
            if (quick) f->clock_ms += f->quick_ms;
        } else if (known) {
            r->latency_ms = t;
            r->from_database = true;
        } else if (f->clock_ms - t0 > budget_s * 1e3) {
            r->latency_ms = d; /* out of time: the default measurement */
            r->default_only = true;
        } else {
            f->clock_ms += f->tune_ms;
            if (f->n_db < 4096) f->db[f->n_db++] = sig;
            f->tuned_specs++;
            r->latency_ms = t;
        }
        snprintf(r->schedule, sizeof r->schedule, "fake");
        snprintf(r->impl, sizeof r->impl, "fake %s", korch_backend_name(kind));
    }
    return KORCH_OK;
}

typedef struct run_result {
    double predicted; /* the plan's predicted latency (its measured latencies) */
    int untuned; /* plan kernels the fake never tuned although tuning would help */
    int rounds;
    long skipped;
    korch_plan *plan;
} run_result;

static run_result run(const korch_pgraph *pg, tuning_fake *f, double margin, double budget_s) {
    run_result out = {.predicted = NAN};
    korch_kernel_oracle oracle = {.supports = fake_supports, .profile = tf_profile, .user = f};
    korch_orchestrate_options o = test_orchestrate_options(1);
    o.candidates.max_kernel_nodes = 12;
    o.tune_margin = margin;
    o.profile_budget_s = budget_s;
    o.clock_ms = sim_clock;
    o.clock_user = f;
    if (f->clock_ms < SIM_EPOCH_MS) f->clock_ms = SIM_EPOCH_MS;
    korch_orchestrator *orch = NULL;
    CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
    if (!orch) return out;
    CHECK_OK(korch_orchestrator_profile(orch));
    CHECK_OK(korch_orchestrator_solve(orch, KORCH_STRATEGY_OPTIMAL, &out.plan));
    const korch_tune_state *ts = korch_orchestrator_tuning(orch);
    out.rounds = korch_orchestrator_tune_rounds(orch);
    out.skipped = ts->skipped;
    if (out.plan) {
        out.predicted = out.plan->predicted_ms;
        korch_candidate_set *set = korch_orchestrator_candidates(orch);
        for (int i = 0; i < set->n_candidates; i++) {
            const korch_candidate *c = &set->candidates[i];
            if (!c->profiled || c->rejected || !c->untuned) continue;
            /* is it in the plan? */
            for (int k = 0; k < out.plan->n_kernels; k++) {
                const korch_plan_kernel *pk = &out.plan->kernels[k];
                if (pk->n_nodes != c->n_nodes || memcmp(pk->nodes, c->nodes, (size_t)c->n_nodes * sizeof(int)) != 0)
                    continue;
                out.untuned += tf_gain(f, c->signature) < 1.0;
            }
        }
    }
    korch_orchestrator_free(orch);
    return out;
}

/* The optimum with latencies fixed: tuned where f says so (or everywhere). */
static double reference(const korch_pgraph *pg, const tuning_fake *f, bool all_tuned, korch_plan **plan_out) {
    tuning_fake ref = *f;
    ref.all_tuned = all_tuned;
    ref.frozen = true;
    run_result r = run(pg, &ref, 1.0, 0);
    if (plan_out) *plan_out = r.plan;
    else korch_plan_free(r.plan);
    return r.predicted;
}

/* Every kernel of plan tuned by f, or gaining nothing. */
static bool all_tuned_in(const korch_pgraph *pg, const korch_plan *plan, const tuning_fake *f) {
    for (int k = 0; k < plan->n_kernels; k++) {
        const korch_plan_kernel *pk = &plan->kernels[k];
        korch_kernel_spec spec = {.pg = pg, .n_nodes = pk->n_nodes, .nodes = pk->nodes, .n_inputs = pk->n_inputs,
                                  .inputs = pk->inputs, .n_outputs = pk->n_outputs, .outputs = pk->outputs};
        uint64_t sig = korch_kernel_signature(&spec);
        if (!tf_known(f, sig) && tf_gain(f, sig) < 1.0) return false;
    }
    return true;
}

static bool same(double a, double b) { return fabs(a - b) <= 1e-9 * (1.0 + fabs(b)); }

int main(void) {
    int instances = 0, condition_held = 0, equal_without_margin = 0, total_rounds = 0, max_rounds = 0;
    long tuned_two_phase = 0, tuned_margin = 0, distinct = 0;
    double worst_ratio = 1.0;
    for (uint64_t seed = 1; seed <= 80; seed++) {
        korch_pgraph *pg = gen_random_pgraph(seed * 31 + 5, 5 + (int)(seed % 8), true);
        const double g_min = 0.5;
        tuning_fake base = {.seed = seed, .g_min = g_min};

        korch_plan *full_plan = NULL;
        double opt_t = reference(pg, &base, true, &full_plan);

        tuning_fake f = base;
        run_result a = run(pg, &f, 1.0, 0);
        double opt_m = reference(pg, &f, false, NULL);
        CHECK_MSG(same(a.predicted, opt_m), "seed %llu: two-phase %.9f, optimum of its measured latencies %.9f",
                  (unsigned long long)seed, a.predicted, opt_m);
        CHECK_MSG(a.untuned == 0, "seed %llu: %d plan kernels untuned", (unsigned long long)seed, a.untuned);
        CHECK_MSG(a.predicted >= opt_t - 1e-9 && a.predicted <= opt_t / g_min + 1e-9,
                  "seed %llu: two-phase %.9f outside [%.9f, %.9f]", (unsigned long long)seed, a.predicted, opt_t,
                  opt_t / g_min);
        if (full_plan && all_tuned_in(pg, full_plan, &f)) {
            condition_held++;
            CHECK_MSG(same(a.predicted, opt_t), "seed %llu: a fully tuned optimum uses only tuned kernels, yet "
                      "two-phase %.9f != %.9f", (unsigned long long)seed, a.predicted, opt_t);
        }
        equal_without_margin += same(a.predicted, opt_t);
        if (a.predicted / opt_t > worst_ratio) worst_ratio = a.predicted / opt_t;
        total_rounds += a.rounds;
        if (a.rounds > max_rounds) max_rounds = a.rounds;
        CHECK(a.rounds <= f.tuned_specs);
        tuned_two_phase += f.tuned_specs;

        /* the second run: everything from the "database" */
        long before = f.tuned_specs;
        run_result again = run(pg, &f, 1.0, 0);
        CHECK_MSG(f.tuned_specs == before, "seed %llu: a second run tuned %ld kernels", (unsigned long long)seed,
                  f.tuned_specs - before);
        CHECK(same(again.predicted, a.predicted));

        /* with the margin g_min: the fully tuned optimum, always */
        tuning_fake fm = base;
        run_result m = run(pg, &fm, g_min, 0);
        CHECK_MSG(same(m.predicted, opt_t), "seed %llu: margin run %.9f, full tuning %.9f", (unsigned long long)seed,
                  m.predicted, opt_t);
        tuned_margin += fm.tuned_specs;

        /* uniform gains: phase 1's optimum stays optimal */
        tuning_fake fu = base;
        fu.uniform = true;
        run_result u = run(pg, &fu, 1.0, 0);
        double opt_u = reference(pg, &fu, true, NULL);
        CHECK_MSG(same(u.predicted, opt_u), "seed %llu: uniform gains, two-phase %.9f, full %.9f",
                  (unsigned long long)seed, u.predicted, opt_u);

        /* how many kernels full tuning would tune */
        tuning_fake all = base;
        all.frozen = false;
        {
            korch_kernel_oracle oracle = {.supports = fake_supports, .profile = tf_profile, .user = &all};
            korch_orchestrate_options o = test_orchestrate_options(1);
            o.candidates.max_kernel_nodes = 12;
            korch_orchestrator *orch = NULL;
            CHECK_OK(korch_orchestrator_create(pg, &oracle, &o, KORCH_STRATEGY_OPTIMAL, &orch));
            CHECK_OK(korch_orchestrator_profile(orch));
            korch_candidate_set *set = korch_orchestrator_candidates(orch);
            uint64_t *sigs = calloc((size_t)set->n_candidates + 1, sizeof *sigs);
            int n_sigs = 0;
            for (int i = 0; i < set->n_candidates; i++) {
                bool dup = false;
                for (int j = 0; j < n_sigs && !dup; j++) dup = sigs[j] == set->candidates[i].signature;
                if (!dup && set->candidates[i].profiled && !set->candidates[i].rejected)
                    sigs[n_sigs++] = set->candidates[i].signature;
            }
            distinct += n_sigs;
            free(sigs);
            korch_orchestrator_free(orch);
        }

        korch_plan_free(a.plan);
        korch_plan_free(again.plan);
        korch_plan_free(m.plan);
        korch_plan_free(u.plan);
        korch_plan_free(full_plan);
        korch_pgraph_free(pg);
        instances++;
    }
    printf("two-phase: %d instances, %ld distinct kernels; tuned %ld (margin 1) and %ld (margin 0.5); rounds %.2f on "
           "average, at most %d; equal to full tuning in %d (the sufficient condition held in %d); worst ratio %.3f\n",
           instances, distinct, tuned_two_phase, tuned_margin, (double)total_rounds / instances, max_rounds,
           equal_without_margin, condition_held, worst_ratio);
    CHECK(condition_held >= 10);
    CHECK(tuned_two_phase < distinct);

    /* The budget: tuning one kernel takes 20 ms, the budget is 0.1 s, on the
     * simulated clock. A tuning call starts only while budget is left, and
     * the fake starts a kernel only while its call's share is not spent, so
     * every tuned kernel starts within the first 100 ms: at most 6 of them,
     * and exactly 6 when a run without a budget tunes at least that many
     * (until the budget bites, both runs make the same choices). */
    korch_pgraph *pg = gen_random_pgraph(4242, 12, true);
    const double budget_s = 0.1, tune_ms = 20;
    const long allowed = (long)(budget_s * 1e3 / tune_ms) + 1;
    for (int with_margin = 0; with_margin < 2; with_margin++) {
        double margin = with_margin ? 0.5 : 1.0;
        tuning_fake unlimited = {.seed = 7, .g_min = 0.5, .tune_ms = tune_ms};
        run_result u = run(pg, &unlimited, margin, 0);
        long wanted = unlimited.tuned_specs;
        korch_plan_free(u.plan);
        tuning_fake slow = {.seed = 7, .g_min = 0.5, .tune_ms = tune_ms};
        run_result b = run(pg, &slow, margin, budget_s);
        double spent_ms = slow.clock_ms - SIM_EPOCH_MS;
        tuning_fake slow_ref = slow;
        double opt_b = reference(pg, &slow_ref, false, NULL);
        printf("budget %.1f s (margin %.1f): %ld of %ld kernels tuned, %ld left untuned, %.0f ms spent, plan %.4f ms\n",
               budget_s, margin, slow.tuned_specs, wanted, b.skipped, spent_ms, b.predicted);
        CHECK(b.plan != NULL);
        CHECK_MSG(slow.tuned_specs == (wanted < allowed ? wanted : allowed), "%ld kernels tuned, %ld allowed, %ld wanted",
                  slow.tuned_specs, allowed, wanted);
        CHECK_MSG(spent_ms <= budget_s * 1e3 + tune_ms, "%.0f ms spent with a budget of %.0f ms", spent_ms,
                  budget_s * 1e3);
        CHECK_MSG(wanted > allowed, "the budget case needs more than %ld kernels to tune, has %ld", allowed, wanted);
        /* the orchestrator itself stopped asking (the fake's own stop aside) */
        CHECK_MSG(b.skipped > 0, "the budget stopped nothing");
        CHECK_MSG(same(b.predicted, opt_b), "budget: plan %.9f, optimum of its measured latencies %.9f", b.predicted,
                  opt_b);
        korch_plan_free(b.plan);
    }

    /* phase 1 always completes, and here it spends the whole budget (1 ms
     * per default schedule): nothing is tuned, the plan keeps the defaults */
    tuning_fake spent = {.seed = 7, .g_min = 0.5, .tune_ms = tune_ms, .quick_ms = 1};
    run_result e = run(pg, &spent, 1.0, 0.01);
    tuning_fake spent_ref = spent;
    double opt_e = reference(pg, &spent_ref, false, NULL);
    CHECK_MSG(spent.tuned_specs == 0 && e.skipped > 0, "phase 1 spent the budget, yet %ld tuned, %ld skipped",
              spent.tuned_specs, e.skipped);
    CHECK_MSG(e.plan && same(e.predicted, opt_e), "spent budget: plan %.9f, optimum of the defaults %.9f", e.predicted,
              opt_e);
    korch_plan_free(e.plan);
    korch_pgraph_free(pg);
    TEST_MAIN_END();
}
