/* A plan is never handed out unchecked: solve, run the whole plan against
 * the reference executor, and while a kernel is found at fault, exclude it
 * and solve again (docs/verification.md). */
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"
#include "orchestrate/progress.h"

/* Moves a check's per-output numbers into the plan, keeping the worst of
 * several checks (seeded inputs, then the caller's). */
static korch_status record_outputs(korch_plan *plan, korch_plan_check *c) {
    if (plan->n_output_checks == 0) {
        plan->output_checks = c->outputs;
        plan->n_output_checks = c->n_outputs;
        c->outputs = NULL;
        c->n_outputs = 0;
        return KORCH_OK;
    }
    for (int i = 0; i < plan->n_output_checks && i < c->n_outputs; i++) {
        korch_plan_output_check *p = &plan->output_checks[i];
        if (c->outputs[i].worst_ratio > p->worst_ratio) p->worst_ratio = c->outputs[i].worst_ratio;
        if (c->outputs[i].max_abs > p->max_abs) p->max_abs = c->outputs[i].max_abs;
        if (c->outputs[i].fp32_max_rel > p->fp32_max_rel) p->fp32_max_rel = c->outputs[i].fp32_max_rel;
        if (c->outputs[i].fp32_mean_rel > p->fp32_mean_rel) p->fp32_mean_rel = c->outputs[i].fp32_mean_rel;
    }
    return KORCH_OK;
}

korch_status korch_orchestrator_solve_verified(korch_orchestrator *o, korch_strategy strategy,
                                               const korch_plan_verify_options *options, korch_plan **out) {
    *out = NULL;
    const korch_pgraph *pg = korch_orchestrator_candidates(o)->pg;
    int max_rounds = options->max_rounds > 0 ? options->max_rounds : 8;
    FILE *log = options->log;
    /* a bf16 plan's check also measures what bf16 costs, which a recorded
     * verdict does not keep: it is always checked afresh */
    bool bf16 = korch_pgraph_precision(pg) == KORCH_PRECISION_BF16;
    for (int round = 0;; round++) {
        korch_plan *plan = NULL;
        KORCH_TRY(korch_orchestrator_solve(o, strategy, &plan));
        korch_plan_check c;
        korch_status st = KORCH_OK;
        double t0 = korch_now_ms();
        bool ok = true;
        int n_recorded = 0; /* checks answered by a recorded verdict of the same plan */
        /* seeded inputs always; the caller's as well when given */
        for (int pass = 0; pass < (options->verify.inputs ? 2 : 1) && ok && st == KORCH_OK; pass++) {
            korch_verify_options vo = options->verify;
            if (pass == 0) vo.inputs = NULL;
            bool recorded = !bf16 && korch_plan_verdict_lookup(plan, options->graph, options->model_sha256, &vo, &c);
            if (recorded) {
                n_recorded++;
            } else {
                st = korch_verify_plan(plan, options->graph, pg, &vo, &c);
                if (st != KORCH_OK) break;
                if (!bf16) korch_plan_verdict_store(plan, options->graph, options->model_sha256, &vo, &c);
            }
            ok = c.ok;
            if (ok) {
                record_outputs(plan, &c);
                korch_plan_check_free(&c);
            }
        }
        if (st != KORCH_OK) {
            korch_plan_free(plan);
            return st;
        }
        if (ok) {
            plan->verified = true;
            plan->verify_seed = options->verify.seed;
            plan->verify_given = options->verify.inputs ? 1 : 0;
            const korch_verify_log *vl = korch_orchestrator_verify_log(o);
            plan->excluded = vl->n_excluded;
            int keep = vl->n_excluded < KORCH_PLAN_MAX_EXCLUDED ? vl->n_excluded : KORCH_PLAN_MAX_EXCLUDED;
            plan->excluded_kernels = calloc((size_t)keep + 1, sizeof *plan->excluded_kernels);
            for (int i = 0; plan->excluded_kernels && i < keep; i++) {
                korch_plan_excluded *e = &plan->excluded_kernels[plan->n_excluded_kernels++];
                e->impl = strdup(vl->excluded[i].impl);
                e->detail = strdup(vl->excluded[i].detail);
                e->worst_ratio = vl->excluded[i].worst_ratio;
            }
            if (log) {
                double worst = 0;
                for (int i = 0; i < plan->n_output_checks; i++)
                    if (plan->output_checks[i].worst_ratio > worst) worst = plan->output_checks[i].worst_ratio;
                fprintf(log,
                        "verification: the %s plan matches the reference executor (%d output%s, worst "
                        "error/tolerance %.3g, inputs: seed %llu%s%s; %.1f s)\n",
                        korch_strategy_name(strategy), plan->n_output_checks, plan->n_output_checks == 1 ? "" : "s",
                        worst, (unsigned long long)options->verify.seed,
                        options->verify.inputs ? " and the given inputs" : "",
                        n_recorded ? ", seeded check recorded for this same plan" : "",
                        (korch_now_ms() - t0) / 1e3);
                for (int i = 0; bf16 && i < plan->n_output_checks; i++)
                    fprintf(log,
                            "verification: bf16 plan (compared with the bf16 primitive graph; its float32 graph "
                            "matches the reference): output \"%s\" is %.3g%% (max) and %.3g%% (mean) off the float32 "
                            "reference, relative to its magnitude\n",
                            plan->output_checks[i].name, plan->output_checks[i].fp32_max_rel * 100,
                            plan->output_checks[i].fp32_mean_rel * 100);
            }
            *out = plan;
            return KORCH_OK;
        }
        if (c.bad_kernel >= 0 && round + 1 < max_rounds) {
            const korch_plan_kernel *k = &plan->kernels[c.bad_kernel];
            if (log)
                fprintf(log, "verification: the plan differs from the reference (%s); kernel %d (%s, %s) is at fault: "
                             "%s; excluded, choosing again\n",
                        c.detail, c.bad_kernel, k->primitives ? k->primitives : "?", k->impl, c.bad_result.detail);
            st = korch_orchestrator_exclude(o, k, &c.bad_result);
            korch_plan_check_free(&c);
            korch_plan_free(plan);
            if (st != KORCH_OK) return st;
            continue;
        }
        if (c.bad_kernel >= 0)
            st = korch_error(KORCH_ERR_RUNTIME,
                             "verification: the %s plan still differs from the reference after %d rounds: kernel %d "
                             "(%s): %s",
                             korch_strategy_name(strategy), max_rounds, c.bad_kernel, plan->kernels[c.bad_kernel].impl,
                             c.bad_result.detail);
        else
            st = korch_error(KORCH_ERR_RUNTIME, "verification: the %s plan differs from the reference: %s",
                             korch_strategy_name(strategy), c.detail);
        korch_plan_check_free(&c);
        korch_plan_free(plan);
        return st;
    }
}
