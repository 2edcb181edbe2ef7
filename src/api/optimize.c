/* The public C API's korch_optimize: `korch optimize MODEL -o PLAN` as a
 * call, for programs and bindings (python/korch). It runs the pipeline the
 * CLI runs (api/pipeline.h: load, profile, solve with verification, record
 * the model, save) with the CLI's default options, and for input_shapes
 * with braces the CLI's loop over shape buckets (api/buckets.h); the CLI's
 * expert options (closed loop, verification inputs, size caps, --layout
 * auto) stay in the CLI. The statistics the CLI prints to stdout go, line
 * by line, to the caller's log callback. */
#define _GNU_SOURCE /* fopencookie: the orchestrator logs to a FILE * */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/buckets.h"
#include "api/pipeline.h"
#include "core/clock.h"

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

/* What one plan needs besides its shapes (optimize_shapes' user data). */
typedef struct optimize_job {
    const char *model_path;
    const korch_optimize_options *o;
    korch_strategy strategy;
    korch_precision precision;
    bool bf16_everywhere;
    int threads;
    FILE *log;
} optimize_job;

/* The pipeline `korch optimize` runs (api/pipeline.h), with its default
 * options, for the model specialized to `shapes`: one plan, recorded but
 * not written (korch_bucket_optimize_fn: a bucket of a plan with shape
 * buckets, or the whole plan). */
static korch_status optimize_once(void *user, const korch_input_shape *shapes, int n_shapes, korch_plan **out,
                                  int *n_prims, korch_plan_model *keep) {
    const optimize_job *job = user;
    const korch_optimize_options *o = job->o;
    /* no environment here: a C API caller gets the defaults (docs/architecture.md) */
    korch_pipeline_config c = {
        .model_path = job->model_path, .shapes = shapes, .n_shapes = n_shapes, .layout = KORCH_LAYOUT_DEFAULT,
        .precision = job->precision, .bf16_everywhere = job->bf16_everywhere,
        .threads = job->threads, .profile = {.budget_s = o->budget_s, .db_path = o->db_path},
        .time_limit_s = o->time_limit_s, .estimate = o->estimate != 0, .verify = true,
        .verify_seed = KORCH_VERIFY_DEFAULT_SEED, .progress = o->progress_bar != 0, .log = job->log};
    korch_pipeline p = {0};
    korch_status st = korch_pipeline_load(&c, &p);
    if (st == KORCH_OK) st = korch_pipeline_prepare(&c, job->strategy, &p);
    if (st == KORCH_OK) st = korch_orchestrator_profile(p.orch);
    if (st == KORCH_OK) st = korch_pipeline_solve(&p, job->strategy, 0, out);
    if (st == KORCH_OK) st = korch_pipeline_finish_plan(&p, job->model_path, *out);
    if (p.model.pg) *n_prims = p.model.pg->n_nodes;
    if (st != KORCH_OK) {
        korch_plan_free(*out);
        *out = NULL;
    }
    korch_pipeline_free_keep(&p, st == KORCH_OK ? keep : NULL); /* the model the plan file carries */
    return st;
}

/* optimize_once, and under precision bf16, when the per-primitive choice
 * kept some linear primitives in float32, the every-primitive-bf16 plan too:
 * the faster predicted is kept (as `korch optimize` does). */
static korch_status optimize_shapes(void *user, const korch_input_shape *shapes, int n_shapes, korch_plan **out,
                                    int *n_prims, korch_plan_model *keep) {
    const optimize_job *job = user;
    korch_status st = optimize_once(user, shapes, n_shapes, out, n_prims, keep);
    if (st != KORCH_OK ||
        !korch_pipeline_compare_precision(job->precision, job->bf16_everywhere, job->o->estimate != 0, *out))
        return st;
    if (job->log) fprintf(job->log, "precision: optimising again with every linear primitive in bf16, to compare\n");
    optimize_job all = *job;
    all.bf16_everywhere = true;
    korch_plan *other = NULL;
    int n_other = 0;
    st = optimize_once(&all, shapes, n_shapes, &other, &n_other, NULL);
    if (st != KORCH_OK) {
        korch_plan_free(*out);
        *out = NULL;
        return st;
    }
    bool chosen = korch_pipeline_keep_chosen_precision(*out, other, job->log);
    korch_plan_free(chosen ? other : *out);
    if (!chosen) {
        *out = other;
        *n_prims = n_other;
    }
    return KORCH_OK;
}

/* input_shapes with braces (`x=1x{4,8,16}`): a plan per shape in one file,
 * as `korch optimize --input-shape` makes it (api/buckets.h); without, the
 * one plan of those shapes. */
static korch_status optimize_plan(const optimize_job *job, korch_plan **plan, int *n_prims, korch_plan_model *keep) {
    const char *spec = job->o->input_shapes;
    if (korch_buckets_spec_is_list(spec)) {
        korch_buckets *b = NULL;
        korch_status st = korch_buckets_create("input shape", &b);
        if (st == KORCH_OK) st = korch_buckets_add_list(b, spec);
        korch_buckets_optimize_options bo = {.optimize = optimize_shapes, .user = (void *)job, .log = job->log};
        if (st == KORCH_OK) st = korch_buckets_optimize(b, &bo, plan, n_prims, keep);
        korch_buckets_free(b);
        return st;
    }
    korch_input_shape shapes[64];
    int n_shapes = 0;
    char *copy = spec ? strdup(spec) : NULL;
    if (spec && !copy) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_status st = copy ? korch_input_shapes_parse(copy, shapes, 64, &n_shapes) : KORCH_OK;
    if (st == KORCH_OK) st = optimize_shapes((void *)job, shapes, n_shapes, plan, n_prims, keep);
    free(copy); /* the shapes' names point into it */
    return st;
}

/* The plan (or plans) made, written and summed up in the report; the lock
 * held and this thread's OpenMP count set. */
static korch_status optimize_locked(const char *model_path, const char *plan_path, const korch_optimize_options *o,
                                    korch_strategy strategy, korch_precision precision, bool bf16_everywhere,
                                    int threads, FILE *log,
                                    korch_optimize_report *report) {
    double t0 = korch_now_s();
    optimize_job job = {.model_path = model_path, .o = o, .strategy = strategy, .precision = precision,
                        .bf16_everywhere = bf16_everywhere,
                        .threads = threads, .log = log};
    korch_plan *plan = NULL;
    korch_plan_model keep;
    memset(&keep, 0, sizeof keep);
    int n_prims = 0;
    korch_status st = optimize_plan(&job, &plan, &n_prims, &keep);
    if (st == KORCH_OK) st = korch_plan_write(plan, plan_path, &keep, model_path, !o->no_embed);
    if (st == KORCH_OK) korch_pipeline_log_plan(log, plan, n_prims, plan_path, korch_now_s() - t0);
    if (st == KORCH_OK && report) {
        /* a plan with shape buckets: its buckets' kernels and latencies summed */
        korch_optimize_report r = {.primitives = n_prims};
        snprintf(r.strategy, sizeof r.strategy, "%s", plan->strategy);
        int n = plan->n_buckets ? plan->n_buckets : 1;
        for (int b = 0; b < n; b++) {
            const korch_plan *one = plan->n_buckets ? plan->buckets[b] : plan;
            r.predicted_ms += one->predicted_ms;
            r.kernels += one->n_kernels;
            for (int k = 0; k < one->n_kernels; k++) r.fused_kernels += one->kernels[k].n_nodes > 1;
        }
        r.seconds = korch_now_s() - t0;
        *report = r;
    }
    korch_plan_free(plan);
    korch_plan_model_close(&keep);
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
    korch_precision precision = KORCH_PRECISION_FP32;
    bool bf16_everywhere = false;
    if (options->precision && !korch_precision_parse_choice(options->precision, &precision, &bf16_everywhere))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "precision \"%.40s\": expected fp32, bf16 or bf16-all",
                           options->precision);
    /* (whether this CPU computes it: korch_pipeline_load, as for the CLI) */
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
    korch_status st =
        optimize_locked(model_path, plan_path, options, strategy, precision, bf16_everywhere, threads, log, report);
#ifdef _OPENMP
    omp_set_num_threads(caller_threads);
#endif
    pthread_mutex_unlock(&optimize_lock);
    if (log) fclose(log);
    return st;
}
