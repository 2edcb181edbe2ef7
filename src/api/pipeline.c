/* The optimise pipeline shared by the CLI and the C API (pipeline.h). */
#include <stdlib.h>
#include <string.h>

#include "api/pipeline.h"
#include "core/clock.h"
#include "frontend/subgraph.h"

korch_status korch_pipeline_load(const korch_pipeline_config *c, korch_pipeline *p) {
    memset(p, 0, sizeof *p);
    p->t0 = korch_now_s();
    p->threads = c->threads > 0 ? c->threads : 1;
    p->log = c->log;
    KORCH_TRY(korch_plan_model_load_specialized(c->model_path, c->shapes, c->n_shapes, c->values, c->n_values, c->layout,
                                                &p->model));
    KORCH_TRY(korch_plan_model_set_precision(&p->model, c->precision));
    FILE *log = c->log;
    if (!log) return KORCH_OK;
    korch_graph_report_control_flow(p->model.graph, log); /* what is not optimized, and why */
    int live = 0, opaque = 0;
    for (int i = 0; i < p->model.graph->n_nodes; i++) live += !p->model.graph->nodes[i].dead;
    for (int i = 0; i < p->model.pg->n_nodes; i++)
        opaque += !p->model.pg->nodes[i].dead && p->model.pg->nodes[i].kind == KORCH_PRIM_OPAQUE;
    fprintf(log, "model: %d operators -> %d primitives (%d opaque) in %.2f s; %d threads%s\n", live,
            p->model.pg->n_nodes, opaque, korch_now_s() - p->t0, p->threads,
            p->model.precision == KORCH_PRECISION_BF16 ? "; linear primitives in bf16 (float32 sums)" : "");
    return KORCH_OK;
}

korch_status korch_pipeline_prepare(const korch_pipeline_config *c, korch_strategy most, korch_pipeline *p) {
    p->profile = c->profile;
    p->profile.threads = p->threads;
    p->typical = korch_machine_model_typical(p->threads);
    p->oracle = c->estimate ? korch_kernel_oracle_estimate(&p->typical) : korch_kernel_oracle_backends(&p->profile);
    p->options = korch_orchestrate_options_default(p->threads);
    if (c->max_kernel_nodes > 0) p->options.candidates.max_kernel_nodes = c->max_kernel_nodes;
    if (c->max_partition_nodes > 0) p->options.candidates.max_partition_nodes = c->max_partition_nodes;
    p->options.prune_by_bound = !c->no_prune;
    p->options.profile_budget_s = c->profile.budget_s;
    p->options.solve_time_limit_s = c->time_limit_s > 0 ? c->time_limit_s : 120;
    p->options.progress = c->progress;
    p->options.log = c->log;
    p->options.estimated = c->estimate;
    /* bf16 where it pays, decided before anything reads the graph's marks
     * (an estimated plan measures nothing to choose by: every primitive bf16) */
    if (p->model.precision == KORCH_PRECISION_BF16 && !c->estimate && !c->bf16_everywhere)
        KORCH_TRY(korch_choose_linear_precision(p->model.pg, &p->oracle, c->log));
    if (c->verify) {
        korch_verify_options vo = {.seed = c->verify_seed, .inputs = p->verify_inputs, .build = &p->profile};
        KORCH_TRY(korch_verifier_create(p->model.pg, &vo, &p->verifier));
        p->options.verifier = korch_verifier_hook(p->verifier);
        p->plan_verify = (korch_plan_verify_options){
            .verify = vo, .graph = p->model.graph, .model_sha256 = p->model.sha256, .log = c->log};
    }
    return korch_orchestrator_create(p->model.pg, &p->oracle, &p->options, most, &p->orch);
}

korch_status korch_pipeline_solve(korch_pipeline *p, korch_strategy strategy, int closed_loop, korch_plan **out) {
    bool verify = p->verifier != NULL;
    if (closed_loop > 0 && !p->options.estimated) {
        /* every plan the loop solves is verified like any other */
        korch_closed_loop_options loop = {.rounds = closed_loop, .graph = p->model.graph, .build = &p->profile,
                                          .log = p->log};
        KORCH_TRY(korch_orchestrator_solve_measured(p->orch, strategy, verify ? &p->plan_verify : NULL, &loop, out));
    } else if (!verify) {
        return korch_orchestrator_solve(p->orch, strategy, out);
    } else {
        KORCH_TRY(korch_orchestrator_solve_verified(p->orch, strategy, &p->plan_verify, out));
    }
    FILE *log = p->log;
    if (!verify || !log) return KORCH_OK;
    const korch_verifier_stats *vs = korch_verifier_get_stats(p->verifier);
    const korch_verify_log *vl = korch_orchestrator_verify_log(p->orch);
    fprintf(log,
            "verification: %ld kernels checked against the interpreter (%.1f s), %ld verdicts from the "
            "database, %d candidate kernel%s excluded as wrong\n",
            vs->checked, vs->seconds, vs->from_database, vl->n_excluded, vl->n_excluded == 1 ? "" : "s");
    if (vs->rounds > 0)
        fprintf(log,
                "verification: kernel checks in %ld round%s: building %.2f s, interpreting %.2f s (%ld of %ld "
                "nodes; no checked kernel depends on the rest), running and comparing %.2f s\n",
                vs->rounds, vs->rounds == 1 ? "" : "s", vs->timing.build, vs->timing.interpret,
                vs->timing.interpreted, vs->timing.interpreted + vs->timing.skipped, vs->timing.check);
    for (int i = 0; i < vl->n_excluded && i < 20; i++)
        fprintf(log, "  excluded: %s: %s\n", vl->excluded[i].impl, vl->excluded[i].detail);
    if (vl->n_excluded > 20) fprintf(log, "  ... and %d more\n", vl->n_excluded - 20);
    return KORCH_OK;
}

korch_status korch_pipeline_finish_plan(const korch_pipeline *p, const char *model_path, korch_plan *plan) {
    KORCH_TRY(korch_plan_set_model(plan, model_path, &p->model));
    plan->threads = p->threads;
    return KORCH_OK;
}

bool korch_pipeline_compare_precision(korch_precision p, bool bf16_everywhere, bool estimate,
                                      const korch_plan *chosen) {
    return chosen && p == KORCH_PRECISION_BF16 && !bf16_everywhere && !estimate && chosen->n_fp32_linear > 0;
}

bool korch_pipeline_keep_chosen_precision(const korch_plan *chosen, const korch_plan *all_bf16, FILE *log) {
    bool keep = chosen->predicted_ms <= all_bf16->predicted_ms;
    if (log)
        fprintf(log,
                "precision: the plan with %d linear primitive%s in float32 is predicted %.4f ms, with every one in "
                "bf16 %.4f ms: kept %s\n",
                chosen->n_fp32_linear, chosen->n_fp32_linear == 1 ? "" : "s", chosen->predicted_ms,
                all_bf16->predicted_ms, keep ? "the first (no slower, and closer to float32)" : "every one in bf16");
    return keep;
}

void korch_pipeline_log_plan(FILE *log, const korch_plan *plan, int n_prims, const char *plan_path, double seconds) {
    if (!log) return;
    if (plan->n_buckets > 0) {
        fprintf(log, "plan: %d shape buckets written to %s (the model's graph and weights once)\n", plan->n_buckets,
                plan_path);
        fprintf(log, "optimize time: %.1f s\n", seconds);
        return;
    }
    int fused = 0;
    for (int k = 0; k < plan->n_kernels; k++) fused += plan->kernels[k].n_nodes > 1;
    fprintf(log, "plan: %s strategy, %d kernels (%d fused) for %d primitives, predicted %.4f ms", plan->strategy,
            plan->n_kernels, fused, n_prims, plan->predicted_ms);
    if (plan->measured_ms > 0) fprintf(log, ", measured %.4f ms in place", plan->measured_ms);
    fprintf(log, "; written to %s\n", plan_path);
    fprintf(log, "optimize time: %.1f s\n", seconds);
}

void korch_pipeline_free_keep(korch_pipeline *p, korch_plan_model *keep) {
    korch_orchestrator_free(p->orch);
    korch_verifier_free(p->verifier);
    for (int i = 0; p->verify_inputs && p->model.graph && i < p->model.graph->n_inputs; i++)
        korch_tensor_free(&p->verify_inputs[i]);
    free(p->verify_inputs);
    if (keep) *keep = p->model;
    else korch_plan_model_close(&p->model);
    memset(p, 0, sizeof *p);
}

void korch_pipeline_free(korch_pipeline *p) { korch_pipeline_free_keep(p, NULL); }
