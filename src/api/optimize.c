/* The public C API's korch_optimize: `korch optimize MODEL -o PLAN` as a
 * call, for programs and bindings (python/korch). It takes the path the CLI
 * takes with its default options (src/cli/cli_orchestrate.c: load, profile,
 * solve with verification, record the model, save); the CLI's expert
 * options (closed loop, estimates, verification inputs, size caps) stay in
 * the CLI. The statistics the CLI prints to stdout go, line by line, to the
 * caller's log callback. */
#define _GNU_SOURCE /* fopencookie: the orchestrator logs to a FILE * */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "orchestrate/orchestrate.h"
#include "runtime/plan.h"
#include "verify/verify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* CBC is not thread-safe, and korch_optimize sets this thread's OpenMP
 * thread count: one call at a time in a process. */
static pthread_mutex_t optimize_lock = PTHREAD_MUTEX_INITIALIZER;

korch_optimize_options korch_optimize_options_default(void) {
    korch_optimize_options o = {0};
    return o;
}

/* ---- a FILE * whose lines go to the caller's callback ------------------ */
typedef struct line_sink {
    void (*log)(void *user, const char *line);
    void *user;
    char line[1024];
    size_t len;
} line_sink;

static void sink_flush(line_sink *s) {
    s->line[s->len] = '\0';
    s->log(s->user, s->line);
    s->len = 0;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t size) {
    line_sink *s = cookie;
    for (size_t i = 0; i < size; i++) {
        if (buf[i] == '\n') sink_flush(s);
        else {
            if (s->len == sizeof s->line - 1) sink_flush(s); /* a very long line arrives in pieces */
            s->line[s->len++] = buf[i];
        }
    }
    return (ssize_t)size;
}

static int sink_close(void *cookie) {
    line_sink *s = cookie;
    if (s->len) sink_flush(s);
    return 0;
}

/* The pipeline, with the lock held and this thread's OpenMP count set. */
static korch_status optimize_locked(const char *model_path, const char *plan_path, const korch_optimize_options *o,
                                    korch_strategy strategy, int threads, FILE *log, korch_optimize_report *report) {
    double t0 = korch_now_s();
    korch_input_shape shapes[64];
    int n_shapes = 0;
    char *spec = o->input_shapes ? strdup(o->input_shapes) : NULL;
    if (o->input_shapes && !spec) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_status st = spec ? korch_input_shapes_parse(spec, shapes, 64, &n_shapes) : KORCH_OK;
    korch_plan_model model = {0};
    if (st == KORCH_OK) st = korch_plan_model_load(model_path, shapes, n_shapes, &model);
    if (st != KORCH_OK) {
        free(spec);
        return st;
    }
    if (log) {
        int live = 0, opaque = 0;
        for (int i = 0; i < model.graph->n_nodes; i++) live += !model.graph->nodes[i].dead;
        for (int i = 0; i < model.pg->n_nodes; i++)
            opaque += !model.pg->nodes[i].dead && model.pg->nodes[i].kind == KORCH_PRIM_OPAQUE;
        fprintf(log, "model: %d operators -> %d primitives (%d opaque) in %.2f s; %d threads\n", live,
                model.pg->n_nodes, opaque, korch_now_s() - t0, threads);
    }
    korch_profile_options profile = {.threads = threads, .budget_s = o->budget_s, .db_path = o->db_path};
    korch_machine_model typical = korch_machine_model_typical(threads);
    korch_kernel_oracle oracle =
        o->estimate ? korch_kernel_oracle_estimate(&typical) : korch_kernel_oracle_backends(&profile);
    korch_orchestrate_options options = korch_orchestrate_options_default(threads);
    options.profile_budget_s = o->budget_s;
    options.solve_time_limit_s = o->time_limit_s > 0 ? o->time_limit_s : 120;
    options.progress = o->progress_bar != 0;
    options.log = log;
    korch_verify_options vo = {.seed = KORCH_VERIFY_DEFAULT_SEED, .build = &profile};
    korch_verifier *verifier = NULL;
    korch_orchestrator *orch = NULL;
    korch_plan *plan = NULL;
    st = korch_verifier_create(model.pg, &vo, &verifier);
    if (st == KORCH_OK) {
        options.verifier = korch_verifier_hook(verifier);
        st = korch_orchestrator_create(model.pg, &oracle, &options, strategy, &orch);
    }
    if (st == KORCH_OK) st = korch_orchestrator_profile(orch);
    korch_plan_verify_options pv = {.verify = vo, .graph = model.graph, .model_sha256 = model.sha256, .log = log};
    if (st == KORCH_OK) st = korch_orchestrator_solve_verified(orch, strategy, &pv, &plan);
    if (st == KORCH_OK && log) {
        const korch_verifier_stats *vs = korch_verifier_get_stats(verifier);
        const korch_verify_log *vl = korch_orchestrator_verify_log(orch);
        fprintf(log,
                "verification: %ld kernels checked against the interpreter (%.1f s), %ld verdicts from the "
                "database, %d candidate kernel%s excluded as wrong\n",
                vs->checked, vs->seconds, vs->from_database, vl->n_excluded, vl->n_excluded == 1 ? "" : "s");
        for (int i = 0; i < vl->n_excluded && i < 20; i++)
            fprintf(log, "  excluded: %s: %s\n", vl->excluded[i].impl, vl->excluded[i].detail);
        if (vl->n_excluded > 20) fprintf(log, "  ... and %d more\n", vl->n_excluded - 20);
    }
    if (st == KORCH_OK) st = korch_plan_set_model(plan, model_path, &model);
    if (st == KORCH_OK) {
        plan->threads = threads;
        st = korch_plan_write(plan, plan_path, &model, model_path, !o->no_embed);
    }
    if (st == KORCH_OK) {
        korch_optimize_report r = {.predicted_ms = plan->predicted_ms, .kernels = plan->n_kernels,
                                   .primitives = model.pg->n_nodes};
        snprintf(r.strategy, sizeof r.strategy, "%s", plan->strategy);
        for (int k = 0; k < plan->n_kernels; k++) r.fused_kernels += plan->kernels[k].n_nodes > 1;
        r.seconds = korch_now_s() - t0;
        if (log) {
            fprintf(log, "plan: %s strategy, %d kernels (%d fused) for %d primitives, predicted %.4f ms; written to %s\n",
                    r.strategy, r.kernels, r.fused_kernels, r.primitives, r.predicted_ms, plan_path);
            fprintf(log, "optimize time: %.1f s\n", r.seconds);
        }
        if (report) *report = r;
    }
    korch_plan_free(plan);
    korch_orchestrator_free(orch);
    korch_verifier_free(verifier);
    korch_plan_model_close(&model);
    free(spec); /* the shapes' names point into it */
    return st;
}

korch_status korch_optimize(const char *model_path, const char *plan_path, const korch_optimize_options *options,
                            korch_optimize_report *report) {
    if (!model_path || !plan_path) return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_optimize: NULL path");
    korch_optimize_options defaults = korch_optimize_options_default();
    if (!options) options = &defaults;
    if (report) memset(report, 0, sizeof *report);
    korch_strategy strategy = KORCH_STRATEGY_OPTIMAL;
    if (options->strategy && !korch_strategy_parse(options->strategy, &strategy))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "strategy \"%.40s\": expected optimal, greedy or none",
                           options->strategy);
    if (options->threads < 0 || options->threads > 1024)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "threads %d: expected 0 (all cores) to 1024", options->threads);
    if (!(options->budget_s >= 0) || options->budget_s > 1e7)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "budget %g s: expected 0 to 1e7 seconds", options->budget_s);
    if (!(options->time_limit_s >= 0) || options->time_limit_s > 1e7)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "time limit %g s: expected 0 to 1e7 seconds",
                           options->time_limit_s);
    line_sink sink = {.log = options->log, .user = options->log_user};
    FILE *log = NULL;
    if (options->log) {
        log = fopencookie(&sink, "w", (cookie_io_functions_t){.write = sink_write, .close = sink_close});
        if (!log) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        setvbuf(log, NULL, _IOLBF, 0); /* each line as it is written */
    }
    pthread_mutex_lock(&optimize_lock);
    int threads = options->threads;
#ifdef _OPENMP
    int caller_threads = omp_get_max_threads();
    if (threads > 0) omp_set_num_threads(threads);
    else threads = caller_threads;
#endif
    if (threads < 1) threads = 1;
    korch_status st = optimize_locked(model_path, plan_path, options, strategy, threads, log, report);
#ifdef _OPENMP
    omp_set_num_threads(caller_threads);
#endif
    pthread_mutex_unlock(&optimize_lock);
    if (log) fclose(log);
    return st;
}
