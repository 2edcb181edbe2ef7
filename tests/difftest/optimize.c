/* The optimize step, in one function (dt_optimize): the orchestrator alone,
 * or with --verify the product path korch optimize takes (the verified
 * driver, korch_orchestrator_solve_verified). Everything is private to the
 * run: profile database and kernel cache under work_dir. */
#include <stdio.h>
#include <string.h>

#include "driver.h"

void dt_optimizer_init(dt_optimizer *opt, const dt_options *o) {
    memset(opt, 0, sizeof *opt);
    snprintf(opt->db, sizeof opt->db, "%s/profile.db", o->work_dir);
    snprintf(opt->cache, sizeof opt->cache, "%s/kernels", o->work_dir);
    opt->profile = (korch_profile_options){.threads = o->threads, .budget_s = o->budget_s, .db_path = opt->db,
                                           .cache_dir = opt->cache};
    opt->typical = korch_machine_model_typical(o->threads);
    opt->oracle = o->measure ? korch_kernel_oracle_backends(&opt->profile) : korch_kernel_oracle_estimate(&opt->typical);
}

korch_status dt_optimize(dt_optimizer *opt, const dt_options *o, const korch_plan_model *m, korch_strategy s,
                         korch_plan **plan) {
    *plan = NULL;
    if (!opt->orch) {
        korch_strategy most = o->forced ? KORCH_STRATEGY_OPTIMAL : KORCH_STRATEGY_NONE;
        for (int k = 0; k < KORCH_STRATEGY_COUNT; k++)
            if (o->strategy[k] && (korch_strategy)k > most) most = (korch_strategy)k;
        korch_orchestrate_options oo = korch_orchestrate_options_default(o->threads);
        oo.profile_budget_s = o->budget_s;
        oo.solve_time_limit_s = 20;
        /* estimates cost nothing: time (estimate) every candidate so that the
         * forced plans can use all of them, not only the ones the bound keeps */
        oo.prune_by_bound = o->measure;
        if (o->verify) {
            korch_verify_options vo = {.seed = 20241125, .build = &opt->profile};
            KORCH_TRY(korch_verifier_create(m->pg, &vo, &opt->verifier));
            oo.verifier = korch_verifier_hook(opt->verifier);
        }
        KORCH_TRY(korch_orchestrator_create(m->pg, &opt->oracle, &oo, most, &opt->orch));
        KORCH_TRY(korch_orchestrator_profile(opt->orch));
    }
    if (!o->verify) return korch_orchestrator_solve(opt->orch, s, plan);
    korch_plan_verify_options pv = {.verify = {.seed = 20241125, .build = &opt->profile}, .graph = m->graph};
    return korch_orchestrator_solve_verified(opt->orch, s, &pv, plan);
}

korch_candidate_set *dt_optimizer_candidates(dt_optimizer *opt) {
    return opt->orch ? korch_orchestrator_candidates(opt->orch) : NULL;
}

int dt_optimizer_excluded(const dt_optimizer *opt) {
    return opt->orch ? korch_orchestrator_verify_log(opt->orch)->n_excluded : 0;
}

void dt_optimizer_free(dt_optimizer *opt) {
    korch_orchestrator_free(opt->orch);
    opt->orch = NULL;
    korch_verifier_free(opt->verifier);
    opt->verifier = NULL;
}
