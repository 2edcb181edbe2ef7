/* Schedule tuning for generated kernels, in rounds across kernels.
 *
 * Every round collects the tuner's proposals of all jobs, compiles the new
 * schedules in a few translation units (up to cg_compile_jobs() compilers at
 * once), times them and reports back. Schedules already in the profile
 * database, or whose generated code is identical to one already timed
 * (knobs that do not apply), cost nothing. A trial whose first runs are all
 * far slower than the job's best so far is cut short (racing): the tuner
 * only needs to know that it lost. See docs/profiling.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen_profile.h"

static cg_schedule point_schedule(const korch_tune_point *p) {
    cg_schedule s = {0};
    for (int knob = 0; knob < CG_KNOBS; knob++) {
        const int *values;
        cg_schedule_domain(knob, &values);
        *cg_schedule_knob(&s, knob) = values[p->k[knob]];
    }
    return s;
}

static korch_tune_point schedule_point(const cg_schedule *s) {
    korch_tune_point p = {{0}};
    cg_schedule copy = *s;
    for (int knob = 0; knob < CG_KNOBS; knob++) {
        const int *values;
        int n = cg_schedule_domain(knob, &values);
        for (int i = 0; i < n; i++)
            if (values[i] == *cg_schedule_knob(&copy, knob)) p.k[knob] = (int8_t)i;
    }
    return p;
}

/* The fastest of the job's quick schedules in the database (phase 1). */
static bool best_quick(cg_session *S, cg_job *j, cg_schedule *s, double *ms, double *spread) {
    cg_schedule qs[CG_QUICK_MAX];
    int m = cg_schedule_quick(&j->k, qs);
    bool any = false;
    for (int v = 0; v < m; v++) {
        char text[64];
        double t, sp;
        bool found = false;
        cg_schedule_format(&qs[v], text, sizeof text);
        if (korch_profile_db_get_trial(S->db, "cgen", j->k.sig, text, S->machine, &t, &sp, &found) == KORCH_OK &&
            found && (!any || t < *ms)) {
            *s = qs[v];
            *ms = t;
            *spread = sp;
            any = true;
        }
    }
    return any;
}

void cg_tune_init(cg_session *S, cg_job *j, int budget, int explore) {
    int size[CG_KNOBS];
    for (int knob = 0; knob < CG_KNOBS; knob++) {
        const int *values;
        size[knob] = cg_schedule_domain(knob, &values);
    }
    /* start from the best quick schedule timed before, else the default */
    cg_schedule start_s;
    double ms, spread;
    if (!best_quick(S, j, &start_s, &ms, &spread)) start_s = cg_schedule_default(&j->k);
    korch_tune_point start = schedule_point(&start_s);
    uint64_t seed = strtoull(j->k.sig + 16, NULL, 16);
    korch_tuner_init(&j->tuner, CG_KNOBS, size, &start, budget, explore, seed);
    /* fetch is a choice among three strategies (burst, none, chunked), not a
     * scale: each is a neighbour of the others */
    j->tuner.categorical = 1u << CG_KNOB_FETCH;
}

void cg_job_free(cg_job *j) {
    cg_kernel_free(&j->k);
    korch_tuner_free(&j->tuner);
    free(j->codes);
    cg_library_release(j->best.lib);
    cg_library_release(j->second.lib);
    memset(j, 0, sizeof *j);
}

int cg_unit_size(int n_functions, int compile_jobs, int max_per_unit) {
    if (compile_jobs < 1) compile_jobs = 1;
    int size = (n_functions + compile_jobs - 1) / compile_jobs;
    if (size > max_per_unit) size = max_per_unit;
    return size < 1 ? 1 : size;
}

typedef struct item {
    int job;
    korch_tune_point p;
    char name[64], code[33], sched[64];
    int unit;
    size_t at, len; /* its function's text in its unit's source */
    cg_library *lib; /* NULL: this schedule did not compile */
} item;

static cg_code_seen *code_lookup(cg_job *j, const char *hash) {
    for (int i = 0; i < j->n_codes; i++)
        if (strcmp(j->codes[i].hash, hash) == 0) return &j->codes[i];
    return NULL;
}

static void code_add(cg_job *j, const char *hash, double ms, double spread) {
    cg_code_seen *c = realloc(j->codes, (size_t)(j->n_codes + 1) * sizeof *c);
    if (!c) return; /* only a cache */
    j->codes = c;
    snprintf(c[j->n_codes].hash, sizeof c[j->n_codes].hash, "%s", hash);
    c[j->n_codes].ms = ms;
    c[j->n_codes++].spread = spread;
}

/* Compiles the items in units; a unit the compiler rejects is retried one
 * function per unit, so only the culprits lose their schedule. */
static korch_status compile_items(cg_session *S, item *items, int n) {
    int per = cg_unit_size(n, S->compile_jobs, 96);
    int n_units = (n + per - 1) / per;
    cg_buf *src = calloc((size_t)n_units, sizeof *src), *what = calloc((size_t)n_units, sizeof *what);
    cg_unit *units = calloc((size_t)n_units, sizeof *units);
    korch_status st = src && what && units ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    for (int u = 0; u < n_units && st == KORCH_OK; u++) cg_emit_prelude(&src[u]);
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        item *it = &items[i];
        cg_schedule s = point_schedule(&it->p);
        char reason[256];
        it->unit = i / per;
        it->at = src[it->unit].len;
        st = cg_emit_kernel(&S->jobs[it->job].k, &s, it->name, &src[it->unit], reason, sizeof reason);
        it->len = src[it->unit].len - it->at;
        cg_buf_printf(&what[it->unit], "%s%s", what[it->unit].len ? ", " : "", it->name);
    }
    for (int u = 0; u < n_units && st == KORCH_OK; u++) {
        if (src[u].oom || what[u].oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        units[u] = (cg_unit){.source = src[u].data, .len = src[u].len, .what = what[u].data};
    }
    if (st == KORCH_OK) st = cg_compile_units(units, n_units, S->options, S->compile_jobs);
    S->stats->compiler_runs += n_units;
    bool retry = false;
    for (int u = 0; u < n_units && st == KORCH_OK; u++) {
        if (units[u].status == KORCH_OK) continue;
        /* the compiler does not even start: nothing will compile */
        if (!cg_compiler_version(S->options)) return korch_error(units[u].status, "%s", units[u].error);
        fprintf(stderr, "korch cgen: warning: %s; retrying kernels one by one\n", units[u].error);
        retry = true;
    }
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        cg_unit *u = &units[items[i].unit];
        if (u->status == KORCH_OK) {
            items[i].lib = u->lib;
            cg_library_retain(u->lib);
            /* for korch_cgen_build, should this schedule be chosen */
            if (!src[items[i].unit].oom)
                cg_registry_add(src[items[i].unit].data + items[i].at, items[i].len, S->options, items[i].name, u->lib);
        }
    }
    if (st == KORCH_OK && retry) {
        /* one unit per function of every failed unit */
        int n_single = 0;
        for (int i = 0; i < n; i++) n_single += units[items[i].unit].status != KORCH_OK;
        cg_buf *one = calloc((size_t)n_single + 1, sizeof *one);
        cg_unit *singles = calloc((size_t)n_single + 1, sizeof *singles);
        int *which = calloc((size_t)n_single + 1, sizeof *which);
        if (!one || !singles || !which) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        int m = 0;
        for (int i = 0; i < n && st == KORCH_OK; i++) {
            if (units[items[i].unit].status == KORCH_OK) continue;
            cg_schedule s = point_schedule(&items[i].p);
            char reason[256];
            cg_emit_prelude(&one[m]);
            st = cg_emit_kernel(&S->jobs[items[i].job].k, &s, items[i].name, &one[m], reason, sizeof reason);
            if (one[m].oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
            singles[m] = (cg_unit){.source = one[m].data, .len = one[m].len, .what = items[i].name};
            which[m++] = i;
        }
        if (st == KORCH_OK)
            st = cg_compile_units(singles, m, S->options, S->compile_jobs);
        S->stats->compiler_runs += m;
        for (int q = 0; q < m && st == KORCH_OK; q++) {
            item *it = &items[which[q]];
            if (singles[q].status == KORCH_OK) it->lib = singles[q].lib;
            else snprintf(S->jobs[it->job].failure, sizeof S->jobs[it->job].failure, "%.*s",
                          (int)sizeof S->jobs[it->job].failure - 1, singles[q].error);
        }
        for (int q = 0; q < m && st != KORCH_OK; q++) cg_library_release(singles[q].lib);
        for (int q = 0; q < n_single && one; q++) cg_buf_free(&one[q]);
        free(one);
        free(singles);
        free(which);
    }
    for (int u = 0; u < n_units; u++) {
        if (units) cg_library_release(units[u].lib);
        if (src) cg_buf_free(&src[u]);
        if (what) cg_buf_free(&what[u]);
    }
    free(src);
    free(what);
    free(units);
    return st;
}

/* Proposals of one job: those answered by the database or by identical code
 * are reported at once; the rest become items. */
static korch_status collect(cg_session *S, int ji, item **items, int *n_items, int *cap, int *proposed) {
    cg_job *j = &S->jobs[ji];
    korch_tune_point pts[64];
    int n = korch_tuner_propose(&j->tuner, pts, 64);
    *proposed += n;
    for (int i = 0; i < n; i++) {
        cg_schedule s = point_schedule(&pts[i]);
        char text[64], reason[256];
        cg_schedule_format(&s, text, sizeof text);
        double ms, spread;
        bool found = false;
        KORCH_TRY(korch_profile_db_get_trial(S->db, "cgen", j->k.sig, text, S->machine, &ms, &spread, &found));
        if (found) {
            korch_tuner_report(&j->tuner, &pts[i], ms);
            continue;
        }
        /* identical code under another schedule: reuse its time */
        cg_buf probe = {0};
        korch_status es = cg_emit_kernel(&j->k, &s, "korch_probe", &probe, reason, sizeof reason);
        if (es != KORCH_OK || probe.oom) {
            cg_buf_free(&probe);
            korch_tuner_report(&j->tuner, &pts[i], 1e30);
            continue;
        }
        char code[33];
        cg_hash_hex(probe.data, probe.len, code);
        cg_buf_free(&probe);
        cg_code_seen *seen = code_lookup(j, code);
        if (seen) {
            korch_tuner_report(&j->tuner, &pts[i], seen->ms);
            continue;
        }
        if (*n_items == *cap) {
            int grown_cap = *cap ? 2 * *cap : 64;
            item *grown = realloc(*items, (size_t)grown_cap * sizeof *grown);
            if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
            *items = grown;
            *cap = grown_cap;
        }
        item *it = &(*items)[(*n_items)++];
        memset(it, 0, sizeof *it);
        it->job = ji;
        it->p = pts[i];
        snprintf(it->code, sizeof it->code, "%s", code);
        snprintf(it->sched, sizeof it->sched, "%s", text);
        cg_kernel_name(&j->k, &s, it->name, sizeof it->name);
    }
    return KORCH_OK;
}

korch_status cg_tune_round(cg_session *S, int *proposed) {
    int cap = 0, n_items = 0;
    item *items = NULL;
    korch_status st = KORCH_OK;
    *proposed = 0;
    for (int ji = 0; ji < S->n_jobs && st == KORCH_OK; ji++) st = collect(S, ji, &items, &n_items, &cap, proposed);
    if (st == KORCH_OK && n_items > 0) {
        double t0 = korch_now_s();
        st = compile_items(S, items, n_items);
        S->stats->compile_s += korch_now_s() - t0;
        S->stats->compiled += n_items;
    }
    double t1 = korch_now_s();
    if (st == KORCH_OK && n_items > 0) st = korch_profile_db_begin(S->db);
    for (int i = 0; i < n_items && st == KORCH_OK; i++) {
        item *it = &items[i];
        cg_job *j = &S->jobs[it->job];
        bool late = S->deadline > 0 && korch_now_s() > S->deadline;
        if (!it->lib || late) {
            /* no build, or no time left: this schedule is out of the race */
            j->interrupted |= late;
            korch_tuner_report(&j->tuner, &it->p, 1e30);
            continue;
        }
        cg_entry fn;
        void *sym = cg_library_symbol(it->lib, it->name);
        memcpy(&fn, &sym, sizeof fn);
        if (!fn) {
            st = korch_error(KORCH_ERR_RUNTIME, "compiled library lacks kernel %s", it->name);
            break;
        }
        korch_timing t;
        korch_timer_options o = S->trial_timer;
        korch_tune_point bp;
        double best_known;
        if (korch_tuner_best(&j->tuner, &bp, &best_known) && best_known < 1e29) {
            o.cutoff_ms = 2.0 * best_known;
            o.cutoff_runs = 2;
        }
        st = cg_time_kernel(S->pool, &j->k, fn, S->threads, &o, &t);
        if (st != KORCH_OK) break;
        S->stats->trials++;
        S->stats->cut += t.cut;
        j->trials++;
        korch_tuner_report(&j->tuner, &it->p, t.median_ms);
        code_add(j, it->code, t.median_ms, t.spread_ms);
        korch_profile_record rec = {.latency_ms = t.median_ms, .spread_ms = t.spread_ms, .quality = t.quality};
        snprintf(rec.schedule, sizeof rec.schedule, "%s", it->sched);
        st = korch_profile_db_put_trial_record(S->db, "cgen", j->k.sig, S->machine, &rec);
        if (!t.cut && (!j->second.fn || t.median_ms < j->second.ms)) {
            /* a new best (the old one the runner-up) or a new runner-up */
            cg_library_retain(it->lib);
            cg_library_release(j->second.lib);
            cg_timed now = {.lib = it->lib, .fn = fn, .ms = t.median_ms, .spread = t.spread_ms, .p = it->p};
            if (!j->best.fn || now.ms < j->best.ms) {
                j->second = j->best;
                j->best = now;
            } else {
                j->second = now;
            }
        }
    }
    if (n_items > 0 && st == KORCH_OK) st = korch_profile_db_commit(S->db);
    else if (n_items > 0) korch_profile_db_commit(S->db);
    S->stats->time_s += korch_now_s() - t1;
    for (int i = 0; i < n_items; i++) cg_library_release(items[i].lib);
    free(items);
    return st;
}

/* The final duel: when the runner-up's trial is within the two trials'
 * spreads of the best's (on a shared host a 1.7 ms kernel's trials spread
 * by 0.3-0.7 ms: bench/kernels/RESULTS.md, 2026-11-28), both are timed
 * again in alternation, DUEL_ROUNDS pairs, and the runner-up wins if it
 * was faster in most pairs: what one trial each could not tell apart,
 * conditions shared pair by pair can. True when the runner-up won. */
enum { DUEL_ROUNDS = 5 };

static bool runner_up_wins(cg_session *S, cg_job *j) {
    if (!j->best.fn || !j->second.fn) return false;
    double noise = j->best.spread > j->second.spread ? j->best.spread : j->second.spread;
    if (j->second.ms - j->best.ms > noise) return false;
    korch_timer_options o = S->trial_timer;
    int wins = 0;
    for (int r = 0; r < DUEL_ROUNDS; r++) {
        korch_timing a, b;
        if (cg_time_kernel(S->pool, &j->k, j->best.fn, S->threads, &o, &a) != KORCH_OK ||
            cg_time_kernel(S->pool, &j->k, j->second.fn, S->threads, &o, &b) != KORCH_OK) {
            korch_error_clear();
            return false;
        }
        wins += b.median_ms < a.median_ms;
    }
    S->stats->duels++;
    return wins * 2 > DUEL_ROUNDS;
}

/* The stored trial of a schedule into t (latency, spread, quality), when
 * there is one. */
static void read_trial(cg_session *S, cg_job *j, const char *schedule, korch_timing *t) {
    korch_profile_record rec;
    bool found = false;
    if (korch_profile_db_get_trial_record(S->db, "cgen", j->k.sig, schedule, S->machine, &rec, &found) != KORCH_OK ||
        !found) {
        korch_error_clear();
        return;
    }
    t->median_ms = rec.latency_ms;
    t->spread_ms = rec.spread_ms;
    t->quality = rec.quality;
}

void cg_tune_finish(cg_session *S, cg_job *j, korch_profile_result *r) {
    korch_tune_point p;
    double ms;
    if (!korch_tuner_best(&j->tuner, &p, &ms) && j->interrupted) {
        /* the budget ran out before the first round: the time of its best
         * quick schedule (phase 1 put it in the database), still untuned */
        cg_schedule qs;
        char text[64];
        r->status = KORCH_ERR_UNSUPPORTED;
        snprintf(r->reason, sizeof r->reason, "the tuning budget ran out before kernel %.16s was timed", j->k.sig);
        if (best_quick(S, j, &qs, &r->latency_ms, &r->spread_ms)) {
            cg_schedule_format(&qs, text, sizeof text);
            r->status = KORCH_OK;
            r->default_only = true;
            r->from_database = true;
            snprintf(r->schedule, sizeof r->schedule, "%s", text);
            snprintf(r->impl, sizeof r->impl, "cgen k%.16s %s", j->k.sig, text);
            snprintf(r->key, sizeof r->key, "%s", j->k.sig);
        }
        S->stats->interrupted++;
        return;
    }
    if (!korch_tuner_best(&j->tuner, &p, &ms) || ms >= 1e29) {
        r->status = KORCH_ERR_UNSUPPORTED;
        snprintf(r->reason, sizeof r->reason, "no schedule compiled: %.200s", j->failure[0] ? j->failure : "?");
        return;
    }
    /* (only when the tuner's best is the schedule timed in this call) */
    if (j->best.fn && j->best.ms <= ms && runner_up_wins(S, j)) { /* the runner-up is the best from here on */
        cg_timed was = j->best;
        j->best = j->second;
        j->second = was;
        p = j->best.p;
        ms = j->best.ms;
        S->stats->duels_won++;
    }
    cg_schedule s = point_schedule(&p);
    char text[64];
    cg_schedule_format(&s, text, sizeof text);
    /* quality unknown until measured or read: provisional */
    korch_timing t = {.median_ms = ms, .spread_ms = 0, .quality = {.wait = -1, .provisional = true}};
    /* re-time the winner with the full methodology (more repeats) */
    if (j->best.fn && j->best.ms <= ms) {
        korch_timer_options o = korch_timer_defaults();
        o.monitor = S->monitor;
        o.scrub_mib = S->trial_timer.scrub_mib;
        if (cg_time_kernel(S->pool, &j->k, j->best.fn, S->threads, &o, &t) != KORCH_OK)
            t = (korch_timing){.median_ms = j->best.ms, .quality = {.wait = -1, .provisional = true}};
    } else {
        read_trial(S, j, text, &t);
    }
    double start_ms = korch_tuner_start_ms(&j->tuner);
    if (start_ms > 0 && t.median_ms > start_ms) {
        /* the winner's trial was lucky (a parallel schedule on a busy machine
         * is fast only when every thread happens to be scheduled): keep the
         * start point, so that tuning never makes a kernel slower than the
         * latency it had before (docs/orchestration.md relies on that) */
        s = point_schedule(&j->tuner.start);
        cg_schedule_format(&s, text, sizeof text);
        t = (korch_timing){.median_ms = start_ms, .quality = {.wait = -1, .provisional = true}};
        read_trial(S, j, text, &t);
        S->stats->kept_start++;
    }
    r->status = KORCH_OK;
    r->latency_ms = t.median_ms;
    r->spread_ms = t.spread_ms;
    snprintf(r->schedule, sizeof r->schedule, "%s", text);
    snprintf(r->impl, sizeof r->impl, "cgen k%.16s %s", j->k.sig, text);
            snprintf(r->key, sizeof r->key, "%s", j->k.sig);
    r->from_database = false;
    r->default_only = false;
    r->provisional = t.quality.provisional;
    /* only a finished search is "the best": an interrupted one resumes next
     * time, its trials already in the database */
    if (!j->interrupted) {
        korch_profile_record rec = {.latency_ms = t.median_ms, .spread_ms = t.spread_ms, .default_ms = start_ms,
                                    .trials = j->tuner.n_seen, .quality = t.quality};
        snprintf(rec.schedule, sizeof rec.schedule, "%s", text);
        korch_profile_db_put_best(S->db, "cgen", j->k.sig, S->machine, &rec);
    }
    S->stats->tuned += !j->interrupted;
    S->stats->interrupted += j->interrupted;
    S->stats->default_ms_sum += start_ms;
    S->stats->best_ms_sum += t.median_ms < start_ms ? t.median_ms : start_ms;
    if (cg_tune_log(S->options) >= 2)
        fprintf(stderr, "korch cgen: k%.16s: default %.4f ms -> best %.4f ms (%s) after %d schedules, %d timed%s\n",
                j->k.sig, start_ms, t.median_ms, text, j->tuner.n_seen, j->trials,
                j->interrupted ? ", interrupted by the budget" : "");
}
