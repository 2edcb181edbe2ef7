/* Profiling for the cgen backend: database lookup, quick timing, tuning.
 *
 * Specs with the same signature are one "job". A job whose tuned result is
 * in the profile database costs nothing. Otherwise:
 * - quick mode (options->quick): the default schedule only. Its time from
 *   the database, or all such kernels compiled together (a few translation
 *   units, cg_compile_jobs() compilers at once) and timed once each. Results
 *   say default_only: tuning may still lower them.
 * - tuning: explore, then droplet search, in rounds across all jobs
 *   (cgen_tune.c), within a time budget.
 * See docs/profiling.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cgen/cgen_profile.h"

double cg_option(double value, double fallback) { return value > 0 ? value : fallback; }

int cg_tune_log(const korch_profile_options *o) { return o && o->tune_log != 0 ? o->tune_log : 1; }

/* Quick timing: enough to rank kernels (the chosen ones are tuned and timed
 * again with the full methodology): one warm-up run (the pool's buffers are
 * touched already), the median of at least 5 runs and 2 ms (at most 30), or
 * of 3 runs of a long kernel within 5% of each other. */
static korch_timer_options quick_timer(void) {
    return (korch_timer_options){.warmup_runs = 1, .warmup_ms = 0, .min_repeats = 5, .max_repeats = 30,
                                 .target_ms = 2, .steady_repeats = 3, .steady_spread = 0.05};
}

static void set_result(korch_profile_result *r, const cg_kernel *k, const char *schedule, double ms, double spread,
                       bool from_db, bool default_only, bool provisional) {
    r->status = KORCH_OK;
    r->provisional = provisional;
    r->latency_ms = ms;
    r->spread_ms = spread;
    r->from_database = from_db;
    r->default_only = default_only;
    snprintf(r->schedule, sizeof r->schedule, "%s", schedule);
    snprintf(r->impl, sizeof r->impl, "cgen k%.16s %.100s", k->sig, schedule);
    snprintf(r->key, sizeof r->key, "%s", k->sig);
}

/* One schedule of quick mode. */
typedef struct quick_item {
    int job;
    char name[64], text[64];
    int unit;
    size_t at, len; /* its function's text in its unit's source */
    cg_library *lib; /* its own build, when its unit failed */
    bool emitted, timed;
    korch_timing t;
} quick_item;

/* Compiles every item's function, a few units at once; a unit the compiler
 * rejects is compiled again one function at a time. */
static korch_status quick_compile(cg_session *S, quick_item *items, int n, cg_unit **units_out, int *n_units_out) {
    int per = cg_unit_size(n, S->compile_jobs, 128), n_units = (n + per - 1) / per;
    cg_buf *src = calloc((size_t)n_units + 1, sizeof *src), *what = calloc((size_t)n_units + 1, sizeof *what);
    cg_unit *units = calloc((size_t)n_units + 1, sizeof *units);
    korch_status st = src && what && units ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    for (int u = 0; u < n_units && st == KORCH_OK; u++) cg_emit_prelude(&src[u]);
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        quick_item *it = &items[i];
        cg_schedule s;
        cg_schedule_parse(it->text, &s);
        /* emission can refuse (index overflow): probe before the batch */
        cg_buf probe = {0};
        char reason[256];
        korch_status es = cg_emit_kernel(&S->jobs[it->job].k, &s, it->name, &probe, reason, sizeof reason);
        it->unit = i / per;
        if (es == KORCH_OK && !probe.oom) {
            it->at = src[it->unit].len;
            it->len = probe.len;
            cg_buf_append(&src[it->unit], probe.data, probe.len);
            cg_buf_printf(&what[it->unit], "%s%s", what[it->unit].len ? ", " : "", it->name);
            it->emitted = true;
        } else {
            snprintf(S->jobs[it->job].failure, sizeof S->jobs[it->job].failure, "%s",
                     es == KORCH_OK ? "out of memory" : reason);
        }
        cg_buf_free(&probe);
    }
    for (int u = 0; u < n_units && st == KORCH_OK; u++) {
        if (src[u].oom || what[u].oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        units[u] = (cg_unit){.source = src[u].data, .len = src[u].len, .what = what[u].data ? what[u].data : ""};
    }
    if (st == KORCH_OK) st = cg_compile_units(units, n_units, S->options, S->compile_jobs);
    S->stats->compiler_runs += n_units;
    for (int u = 0; u < n_units && st == KORCH_OK; u++)
        if (units[u].status != KORCH_OK && !cg_compiler_version(S->options))
            st = korch_error(units[u].status, "%s", units[u].error); /* no compiler at all */
    /* for korch_cgen_build, should this schedule be chosen */
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        quick_item *it = &items[i];
        if (it->emitted && units[it->unit].status == KORCH_OK && !src[it->unit].oom)
            cg_registry_add(src[it->unit].data + it->at, it->len, S->options, it->name, units[it->unit].lib);
    }
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        quick_item *it = &items[i];
        if (!it->emitted || units[it->unit].status == KORCH_OK) continue;
        cg_buf one = {0};
        cg_schedule s;
        char reason[256];
        cg_schedule_parse(it->text, &s);
        cg_emit_prelude(&one);
        cg_emit_kernel(&S->jobs[it->job].k, &s, it->name, &one, reason, sizeof reason);
        korch_status cs = one.oom ? korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory")
                                  : cg_compile(one.data, one.len, S->options, it->name,
                                               &it->lib);
        S->stats->compiler_runs++;
        cg_buf_free(&one);
        if (cs == KORCH_ERR_RUNTIME) {
            it->emitted = false;
            snprintf(S->jobs[it->job].failure, sizeof S->jobs[it->job].failure, "%s", korch_last_error());
        } else if (cs != KORCH_OK) {
            st = cs;
        }
    }
    for (int u = 0; u < n_units; u++) {
        if (src) cg_buf_free(&src[u]);
        if (what) cg_buf_free(&what[u]);
    }
    free(src);
    free(what);
    *units_out = units;
    *n_units_out = n_units;
    return st;
}

/* Quick mode for the jobs left: compile their quick schedules, time each
 * once; a job's result is its fastest. */
static korch_status quick_run(cg_session *S, korch_profile_result *results) {
    if (S->n_jobs == 0) return KORCH_OK;
    quick_item *items = calloc((size_t)S->n_jobs * CG_QUICK_MAX, sizeof *items);
    if (!items) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    /* one schedule per kernel: the default, or on a machine so busy that an
     * empty parallel region takes more than busy_us its serial twin (every
     * parallel kernel would then measure the wait for the other threads;
     * the tuner still tries parallel schedules for the kernels plans use) */
    S->stats->fork_join_us = cg_fork_join_us(S->threads);
    bool busy = S->stats->fork_join_us > cg_option(S->options ? S->options->busy_us : 0, 100);
    static bool told;
    if (busy && !told && cg_tune_log(S->options) >= 1 && !(S->options && S->options->quiet)) {
        fprintf(stderr,
                "korch cgen: the machine is busy (an empty parallel region of %d threads takes %.0f us): quick "
                "profiling times serial schedules\n",
                S->threads, S->stats->fork_join_us);
        told = true;
    }
    int n = 0;
    for (int ji = 0; ji < S->n_jobs; ji++) {
        cg_schedule qs[CG_QUICK_MAX];
        int m = cg_schedule_quick(&S->jobs[ji].k, qs);
        for (int v = busy ? m - 1 : 0; v <= (busy ? m - 1 : 0); v++, n++) {
            items[n].job = ji;
            cg_schedule_format(&qs[v], items[n].text, sizeof items[n].text);
            cg_kernel_name(&S->jobs[ji].k, &qs[v], items[n].name, sizeof items[n].name);
        }
    }
    cg_unit *units = NULL;
    int n_units = 0;
    double t0 = korch_now_s();
    korch_status st = quick_compile(S, items, n, &units, &n_units);
    S->stats->compile_s += korch_now_s() - t0;
    double t1 = korch_now_s();
    /* committed only when begun: a commit without a transaction replaced the
     * compile error (a missing compiler) with a database one */
    bool began = false;
    if (st == KORCH_OK) began = (st = korch_profile_db_begin(S->db)) == KORCH_OK;
    korch_timer_options timer = quick_timer();
    timer.monitor = S->monitor;
    timer.scrub_mib = S->options ? S->options->scrub_mib : 0;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        quick_item *it = &items[i];
        if (!it->emitted) continue;
        cg_job *j = &S->jobs[it->job];
        void *sym = cg_library_symbol(it->lib ? it->lib : units[it->unit].lib, it->name);
        cg_entry fn;
        memcpy(&fn, &sym, sizeof fn);
        if (!fn) {
            st = korch_error(KORCH_ERR_RUNTIME, "compiled library lacks kernel %s", it->name);
            break;
        }
        st = cg_time_kernel(S->pool, &j->k, fn, S->threads, &timer, &it->t);
        if (st != KORCH_OK) break;
        it->timed = true;
        S->stats->trials++;
        S->stats->compiled++;
        korch_profile_record rec = {.latency_ms = it->t.median_ms, .spread_ms = it->t.spread_ms,
                                    .quality = it->t.quality};
        snprintf(rec.schedule, sizeof rec.schedule, "%s", it->text);
        st = korch_profile_db_put_trial_record(S->db, "cgen", j->k.sig, S->machine, &rec);
    }
    if (began) korch_profile_db_commit(S->db);
    S->stats->time_s += korch_now_s() - t1;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        const quick_item *it = &items[i];
        cg_job *j = &S->jobs[it->job];
        korch_profile_result *r = &results[j->spec];
        bool has = r->schedule[0] != '\0';
        if (!it->timed) {
            if (!has) {
                r->status = KORCH_ERR_UNSUPPORTED;
                snprintf(r->reason, sizeof r->reason, "no schedule compiled: %.200s", j->failure[0] ? j->failure : "?");
            }
            continue;
        }
        if (!has || it->t.median_ms < r->latency_ms) {
            if (!has) S->stats->quick++;
            set_result(r, &j->k, it->text, it->t.median_ms, it->t.spread_ms, false, true, it->t.quality.provisional);
        }
    }
    for (int u = 0; u < n_units; u++) cg_library_release(units[u].lib);
    for (int i = 0; i < n; i++) cg_library_release(items[i].lib);
    free(units);
    free(items);
    return st;
}

/* Answers spec i from the database when it can; otherwise makes it a job
 * (or points it at the job of its signature). job_of[i]: job index, or -1
 * when answered here. */
static korch_status lookup(cg_session *S, const korch_kernel_spec *spec, bool quick, korch_profile_result *r,
                           int *job_of, int i) {
    cg_kernel k;
    job_of[i] = -1;
    if (!korch_cgen_supports(spec, r->reason, sizeof r->reason) ||
        cg_kernel_from_spec(spec, &k, r->reason, sizeof r->reason) != KORCH_OK) {
        r->status = KORCH_ERR_UNSUPPORTED;
        S->stats->unsupported++;
        return KORCH_OK;
    }
    k.stream_min_bytes = S->options ? S->options->cg_stream_min_bytes : 0;
    for (int jj = 0; jj < S->n_jobs; jj++)
        if (strcmp(S->jobs[jj].k.sig, k.sig) == 0) {
            job_of[i] = jj;
            cg_kernel_free(&k);
            return KORCH_OK;
        }
    korch_profile_record rec;
    bool found = false;
    cg_schedule check;
    KORCH_TRY(korch_profile_db_get_best(S->db, "cgen", k.sig, S->machine, &rec, &found));
    if (found && cg_schedule_parse(rec.schedule, &check)) {
        set_result(r, &k, rec.schedule, rec.latency_ms, rec.spread_ms, true, false, rec.quality.provisional);
        S->stats->from_database++;
        cg_kernel_free(&k);
        return KORCH_OK;
    }
    if (quick) {
        /* a quick schedule timed before (whichever the policy picked then):
         * the fastest of those in the database */
        cg_schedule qs[CG_QUICK_MAX];
        int m = cg_schedule_quick(&k, qs), hits = 0;
        for (int v = 0; v < m; v++) {
            char text[64];
            korch_profile_record tr;
            cg_schedule_format(&qs[v], text, sizeof text);
            found = false;
            korch_status st = korch_profile_db_get_trial_record(S->db, "cgen", k.sig, text, S->machine, &tr, &found);
            if (st != KORCH_OK) {
                cg_kernel_free(&k);
                return st;
            }
            if (found && (hits++ == 0 || tr.latency_ms < r->latency_ms))
                set_result(r, &k, text, tr.latency_ms, tr.spread_ms, true, true, tr.quality.provisional);
        }
        if (hits > 0) {
            S->stats->from_database++;
            cg_kernel_free(&k);
            return KORCH_OK;
        }
    }
    cg_job *j = &S->jobs[S->n_jobs];
    memset(j, 0, sizeof *j);
    j->spec = i;
    j->k = k;
    job_of[i] = S->n_jobs++;
    return KORCH_OK;
}

korch_status korch_cgen_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                                korch_profile_result *results, korch_cgen_stats *stats) {
    double t_start = korch_now_s();
    korch_cgen_stats local;
    korch_cgen_stats *ls = stats ? stats : &local; /* what this call did, for its log line and the caller */
    memset(ls, 0, sizeof *ls);
    ls->kernels = n;
    if (n == 0) return KORCH_OK;
    bool quick = options && options->quick;
    cg_session S = {.options = options, .threads = cg_threads(options), .compile_jobs = cg_compile_jobs(options),
                    .stats = ls};
    char machine[33], machine_text[1024];
    const char *ccv = cg_compiler_version(options);
    char compiler[512];
    snprintf(compiler, sizeof compiler, "%s (%s) %s", cg_compiler(options), ccv ? ccv : "not found", cg_compiler_flags(options));
    KORCH_TRY(korch_machine_fingerprint(S.threads, compiler, options ? options->scrub_mib : 0, machine, machine_text,
                                        sizeof machine_text));
    S.machine = machine;
    KORCH_TRY(korch_profile_db_open(options ? options->db_path : NULL, options ? options->db_busy_ms : 0, &S.db));
    korch_status st = korch_profile_db_put_machine(S.db, machine, machine_text);
    if (st == KORCH_OK) st = korch_profile_db_watch(S.db, S.threads, options ? options->fresh_after : 0, &S.monitor);
    S.jobs = calloc((size_t)n, sizeof *S.jobs);
    int *job_of = calloc((size_t)n, sizeof *job_of);
    if (st == KORCH_OK && (!S.jobs || !job_of)) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    if (st == KORCH_OK) st = cg_pool_create(&S.pool);
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        memset(&results[i], 0, sizeof results[i]);
        st = lookup(&S, &specs[i], quick, &results[i], job_of, i);
    }
    int budget = (int)cg_option(options ? options->tune_trials : 0, 24);
    int explore = (int)cg_option(options ? options->tune_explore : 0, 7);
    S.trial_timer = (korch_timer_options){.warmup_runs = 1, .warmup_ms = 0.5, .min_repeats = 5, .max_repeats = 50,
                                          .target_ms = 5, .steady_repeats = 3, .steady_spread = 0.05,
                                          .monitor = S.monitor, .scrub_mib = options ? options->scrub_mib : 0};
    if (st == KORCH_OK && quick) {
        st = quick_run(&S, results);
    } else if (st == KORCH_OK) {
        for (int jj = 0; jj < S.n_jobs; jj++) cg_tune_init(&S, &S.jobs[jj], budget, explore);
        /* an explicit budget bounds every round, the first included (the
         * caller has a measurement already); the default one lets the first
         * round finish, so that every kernel gets one */
        bool explicit_budget = options && options->budget_s > 0;
        double budget_s = explicit_budget ? options->budget_s : 5.0 + 1.5 * S.n_jobs;
        if (explicit_budget) S.deadline = t_start + budget_s;
        for (int round = 0; st == KORCH_OK && S.n_jobs > 0; round++) {
            if ((round > 0 || explicit_budget) && korch_now_s() - t_start > budget_s) {
                for (int jj = 0; jj < S.n_jobs; jj++) S.jobs[jj].interrupted |= S.jobs[jj].tuner.phase != 2;
                break;
            }
            int proposed = 0;
            st = cg_tune_round(&S, &proposed);
            if (proposed == 0) break;
        }
        for (int jj = 0; jj < S.n_jobs && st == KORCH_OK; jj++) cg_tune_finish(&S, &S.jobs[jj], &results[S.jobs[jj].spec]);
    }
    for (int i = 0; i < n && st == KORCH_OK; i++)
        if (job_of[i] >= 0 && S.jobs[job_of[i]].spec != i) results[i] = results[S.jobs[job_of[i]].spec];
    ls->total_s = korch_now_s() - t_start;
    bool log = cg_tune_log(options) >= 1;
    bool quiet = options && options->quiet;
    if (st == KORCH_OK && S.n_jobs > 0 && !quick && !quiet && (log || (options && options->progress)))
        fprintf(stderr,
                "korch cgen: %d kernels (%d from the database, %d unsupported, %d tuned, %d cut short by the budget): "
                "%d schedules timed (%d stopped early), %d functions compiled in %d compiler runs (%.2f s), timing "
                "%.2f s, total %.2f s; tuned/default latency %.4f/%.4f ms (%d winners lost to the start when timed "
                "again; %d close finishes decided in alternation, %d for the runner-up)\n",
                n, ls->from_database, ls->unsupported, ls->tuned, ls->interrupted,
                ls->trials, ls->cut, ls->compiled, ls->compiler_runs,
                ls->compile_s, ls->time_s, ls->total_s, ls->best_ms_sum,
                ls->default_ms_sum, ls->kept_start, ls->duels, ls->duels_won);
    if (st == KORCH_OK && S.n_jobs > 0 && quick && cg_tune_log(options) >= 2)
        fprintf(stderr,
                "korch cgen: quick: %d kernels (%d from the database, %d unsupported): %d compiled in %d compiler "
                "runs (%.2f s), timed in %.2f s, total %.2f s; empty parallel region %.0f us\n",
                n, ls->from_database, ls->unsupported, ls->quick, ls->compiler_runs,
                ls->compile_s, ls->time_s, ls->total_s, ls->fork_join_us);
    for (int jj = 0; jj < S.n_jobs; jj++) cg_job_free(&S.jobs[jj]);
    cg_pool_free(S.pool);
    free(S.jobs);
    free(job_of);
    korch_profile_db_unwatch(S.db, S.monitor);
    korch_profile_db_close(S.db);
    return st;
}
