/* Profiling for the cgen backend: database lookup, tuning, timing.
 *
 * Specs with the same signature are one "job", tuned once. Jobs answered by
 * the profile database cost nothing. The rest are tuned together in rounds:
 * every round collects the tuner's proposals of all jobs, compiles all new
 * schedules in ONE translation unit, times them and reports back. Schedules
 * that generate identical code are timed once. See docs/profiling.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cgen/cgen.h"
#include "backend/cgen/cgen_backend.h"
#include "profile/profile.h"

void cg_kernel_name(const cg_kernel *k, const cg_schedule *s, char *buf, size_t size);
int cg_threads(const korch_profile_options *o);

static korch_cgen_stats last_stats;
korch_cgen_stats korch_cgen_last_stats(void) { return last_stats; }

typedef struct code_seen {
    char hash[33];
    double ms, spread;
} code_seen;

typedef struct job {
    int spec;
    cg_kernel k;
    korch_tuner tuner;
    code_seen *codes;
    int n_codes;
    cg_library *best_lib;
    cg_entry best_fn;
    double best_ms, best_spread;
    int trials;
    char failure[256]; /* last compiler error of one of its schedules */
    /* timing buffers: n_sets copies of every input and output */
    int n_sets;
    void **bufs; /* n_sets * (n_inputs + n_outputs) */
} job;

typedef struct item {
    int job;
    korch_tune_point p;
    char name[64], code[33], sched[64];
    cg_library *lib; /* NULL: this schedule did not compile */
} item;

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    int x = atoi(v);
    return x > 0 ? x : fallback;
}

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

/* ---- buffers and timing ------------------------------------------------------ */

static size_t value_bytes(const cg_value *v) {
    return (size_t)korch_shape_numel(&v->shape) * korch_dtype_size(v->dtype);
}

static void free_buffers(job *j) {
    int per = j->k.n_inputs + j->k.n_outputs;
    for (int i = 0; j->bufs && i < j->n_sets * per; i++) free(j->bufs[i]);
    free(j->bufs);
    j->bufs = NULL;
    j->n_sets = 0;
}

/* Enough copies that one sweep over them exceeds the L2 caches: each timed
 * run then finds its inputs in L3 (or DRAM when one copy is already larger),
 * as a kernel does whose producer ran a little earlier in the plan. */
static korch_status alloc_buffers(job *j) {
    if (j->bufs) return KORCH_OK;
    const cg_kernel *k = &j->k;
    size_t footprint = 0;
    for (int v = 0; v < k->n_values; v++)
        if (k->values[v].input_slot >= 0 || k->values[v].output_slot >= 0) footprint += value_bytes(&k->values[v]);
    size_t target = (size_t)4 << 20;
    j->n_sets = footprint >= target ? 1 : (int)((target + footprint - 1) / (footprint ? footprint : 1));
    if (j->n_sets > 64) j->n_sets = 64;
    int per = k->n_inputs + k->n_outputs;
    j->bufs = calloc((size_t)(j->n_sets * per), sizeof *j->bufs);
    if (!j->bufs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory");
    uint64_t rng = 0x853c49e6748fea9bull;
    for (int s = 0; s < j->n_sets; s++)
        for (int v = 0; v < k->n_values; v++) {
            const cg_value *val = &k->values[v];
            int idx = val->input_slot >= 0 ? val->input_slot : val->output_slot >= 0 ? k->n_inputs + val->output_slot : -1;
            if (idx < 0 || j->bufs[s * per + idx]) continue;
            size_t bytes = value_bytes(val);
            void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
            if (!p) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "profiling buffers: out of memory");
            j->bufs[s * per + idx] = p;
            /* first touch by this thread; values in [0.5, 1.5] keep logs,
             * roots and divisions finite, so timing sees no NaN slow paths */
            int64_t n = korch_shape_numel(&val->shape);
            for (int64_t i = 0; i < n; i++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                double x = 0.5 + (double)(rng >> 11) / 9007199254740992.0;
                switch (val->dtype) {
                case KORCH_DTYPE_FLOAT32: ((float *)p)[i] = (float)x; break;
                case KORCH_DTYPE_FLOAT64: ((double *)p)[i] = x; break;
                case KORCH_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)(rng & 3); break;
                case KORCH_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(rng & 3); break;
                default: ((uint8_t *)p)[i] = (uint8_t)(rng & 1); break;
                }
            }
        }
    for (int q = 0; q < k->n_outputs; q++) /* an output listed twice shares nothing */
        for (int s = 0; s < j->n_sets; s++)
            if (!j->bufs[s * per + k->n_inputs + q]) {
                const cg_value *val = &k->values[k->output_value[q]];
                j->bufs[s * per + k->n_inputs + q] = calloc(1, value_bytes(val) + 64);
                if (!j->bufs[s * per + k->n_inputs + q]) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            }
    return KORCH_OK;
}

typedef struct timed {
    job *j;
    cg_entry fn;
    int threads;
} timed;

static korch_status run_once(void *ctx, int iteration) {
    timed *t = ctx;
    int per = t->j->k.n_inputs + t->j->k.n_outputs;
    void **set = t->j->bufs + (size_t)(iteration % t->j->n_sets) * (size_t)per;
    if (t->fn(set, set + t->j->k.n_inputs, t->threads) != 0)
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "kernel %.16s: out of scratch memory", t->j->k.sig);
    return KORCH_OK;
}

static korch_status time_kernel(job *j, cg_entry fn, int threads, const korch_timer_options *o, korch_timing *out) {
    KORCH_TRY(alloc_buffers(j));
    timed t = {.j = j, .fn = fn, .threads = threads};
    return korch_profile_time(run_once, &t, o, out);
}

/* ---- tuning rounds ------------------------------------------------------------ */

typedef struct session {
    job *jobs;
    int n_jobs;
    korch_profile_db *db;
    const char *machine;
    const korch_profile_options *options;
    int threads;
    korch_timer_options trial_timer;
} session;

static code_seen *code_lookup(job *j, const char *hash) {
    for (int i = 0; i < j->n_codes; i++)
        if (strcmp(j->codes[i].hash, hash) == 0) return &j->codes[i];
    return NULL;
}

static void code_add(job *j, const char *hash, double ms, double spread) {
    code_seen *c = realloc(j->codes, (size_t)(j->n_codes + 1) * sizeof *c);
    if (!c) return; /* only a cache */
    j->codes = c;
    snprintf(c[j->n_codes].hash, sizeof c[j->n_codes].hash, "%s", hash);
    c[j->n_codes].ms = ms;
    c[j->n_codes++].spread = spread;
}

/* Compiles every item on its own; failures leave item->lib NULL. */
static korch_status compile_each(session *S, item *items, int n) {
    for (int i = 0; i < n; i++) {
        job *j = &S->jobs[items[i].job];
        cg_schedule s = point_schedule(&items[i].p);
        cg_buf src = {0};
        char reason[256];
        cg_emit_prelude(&src);
        korch_status st = cg_emit_kernel(&j->k, &s, items[i].name, &src, reason, sizeof reason);
        if (st == KORCH_OK && src.oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        if (st == KORCH_OK) {
            st = cg_compile(src.data, src.len, S->options ? S->options->cache_dir : NULL, items[i].name, &items[i].lib);
            last_stats.compiler_runs++;
            if (st == KORCH_ERR_RUNTIME) {
                snprintf(j->failure, sizeof j->failure, "%s", korch_last_error());
                st = KORCH_OK;
            }
        }
        cg_buf_free(&src);
        if (st != KORCH_OK) return st;
    }
    return KORCH_OK;
}

/* One round: proposals of every active job; returns the number proposed. */
static korch_status round_run(session *S, int *proposed) {
    int cap = 64, n_items = 0;
    item *items = NULL;
    cg_buf src = {0}, what = {0};
    cg_library *lib = NULL;
    korch_status st = KORCH_OK;
    *proposed = 0;
    cg_emit_prelude(&src);
    for (int ji = 0; ji < S->n_jobs && st == KORCH_OK; ji++) {
        job *j = &S->jobs[ji];
        korch_tune_point pts[64];
        int n = korch_tuner_propose(&j->tuner, pts, 64);
        *proposed += n;
        for (int i = 0; i < n && st == KORCH_OK; i++) {
            cg_schedule s = point_schedule(&pts[i]);
            char text[64], reason[256];
            cg_schedule_format(&s, text, sizeof text);
            double ms, spread;
            bool found = false;
            st = korch_profile_db_get_trial(S->db, "cgen", j->k.sig, text, S->machine, &ms, &spread, &found);
            if (st != KORCH_OK) break;
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
            code_seen *seen = code_lookup(j, code);
            if (seen) {
                korch_tuner_report(&j->tuner, &pts[i], seen->ms);
                continue;
            }
            if (n_items == 0 || n_items == cap) {
                item *grown = realloc(items, (size_t)(cap = n_items ? cap * 2 : cap) * sizeof *items);
                if (!grown) {
                    st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
                    break;
                }
                items = grown;
            }
            item *it = &items[n_items++];
            it->job = ji;
            it->p = pts[i];
            snprintf(it->code, sizeof it->code, "%s", code);
            snprintf(it->sched, sizeof it->sched, "%s", text);
            it->lib = NULL;
            cg_kernel_name(&j->k, &s, it->name, sizeof it->name);
            st = cg_emit_kernel(&j->k, &s, it->name, &src, reason, sizeof reason);
            cg_buf_printf(&what, "%s%s", what.len ? ", " : "", it->name);
        }
    }
    if (st == KORCH_OK && n_items > 0) {
        if (src.oom || what.oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        double t0 = korch_now_s();
        if (st == KORCH_OK) st = cg_compile(src.data, src.len, S->options ? S->options->cache_dir : NULL, what.data, &lib);
        last_stats.compiler_runs++;
        if (st == KORCH_OK) {
            for (int i = 0; i < n_items; i++) {
                items[i].lib = lib;
                cg_library_retain(lib);
            }
        } else if (st == KORCH_ERR_RUNTIME && cg_compiler_version()) {
            /* the compiler runs but rejected the batch: isolate the culprits,
             * which lose their schedule; everything else is still tuned */
            fprintf(stderr, "korch cgen: warning: %s; retrying kernels one by one\n", korch_last_error());
            st = compile_each(S, items, n_items);
        }
        last_stats.compile_s += korch_now_s() - t0;
        last_stats.compiled += n_items;
    }
    double t1 = korch_now_s();
    if (st == KORCH_OK && n_items > 0) st = korch_profile_db_begin(S->db);
    for (int i = 0; i < n_items && st == KORCH_OK; i++) {
        item *it = &items[i];
        job *j = &S->jobs[it->job];
        cg_entry fn;
        if (!it->lib) {
            korch_tuner_report(&j->tuner, &it->p, 1e30);
            continue;
        }
        void *sym = cg_library_symbol(it->lib, it->name);
        memcpy(&fn, &sym, sizeof fn);
        if (!fn) {
            st = korch_error(KORCH_ERR_RUNTIME, "compiled library lacks kernel %s", it->name);
            break;
        }
        korch_timing t;
        st = time_kernel(j, fn, S->threads, &S->trial_timer, &t);
        if (st != KORCH_OK) break;
        last_stats.trials++;
        j->trials++;
        korch_tuner_report(&j->tuner, &it->p, t.median_ms);
        code_add(j, it->code, t.median_ms, t.spread_ms);
        st = korch_profile_db_put_trial(S->db, "cgen", j->k.sig, it->sched, S->machine, t.median_ms, t.spread_ms);
        if (!j->best_fn || t.median_ms < j->best_ms) {
            cg_library_retain(it->lib);
            cg_library_release(j->best_lib);
            j->best_lib = it->lib;
            j->best_fn = fn;
            j->best_ms = t.median_ms;
            j->best_spread = t.spread_ms;
        }
    }
    if (n_items > 0 && st == KORCH_OK) st = korch_profile_db_commit(S->db);
    else if (n_items > 0) korch_profile_db_commit(S->db);
    for (int ji = 0; ji < S->n_jobs; ji++) free_buffers(&S->jobs[ji]);
    last_stats.time_s += korch_now_s() - t1;
    cg_library_release(lib);
    for (int i = 0; i < n_items; i++) cg_library_release(items[i].lib);
    cg_buf_free(&src);
    cg_buf_free(&what);
    free(items);
    return st;
}

/* ---- entry point ------------------------------------------------------------- */

static void finish_job(session *S, job *j, korch_profile_result *r) {
    korch_tune_point p;
    double ms;
    if (!korch_tuner_best(&j->tuner, &p, &ms) || ms >= 1e29) {
        r->status = KORCH_ERR_UNSUPPORTED;
        snprintf(r->reason, sizeof r->reason, "no schedule compiled: %.200s", j->failure[0] ? j->failure : "?");
        return;
    }
    cg_schedule s = point_schedule(&p);
    char text[64];
    cg_schedule_format(&s, text, sizeof text);
    korch_timing t = {.median_ms = ms, .spread_ms = 0};
    /* re-time the winner with the full methodology (more repeats) */
    if (j->best_fn && j->best_ms <= ms) {
        korch_timer_options o = korch_timer_defaults();
        if (time_kernel(j, j->best_fn, S->threads, &o, &t) != KORCH_OK) t = (korch_timing){.median_ms = j->best_ms};
        free_buffers(j);
    } else {
        bool found = false;
        korch_profile_db_get_trial(S->db, "cgen", j->k.sig, text, S->machine, &t.median_ms, &t.spread_ms, &found);
    }
    r->status = KORCH_OK;
    r->latency_ms = t.median_ms;
    r->spread_ms = t.spread_ms;
    snprintf(r->schedule, sizeof r->schedule, "%s", text);
    snprintf(r->impl, sizeof r->impl, "cgen k%.16s %s", j->k.sig, text);
    r->from_database = false;
    double start_ms = korch_tuner_start_ms(&j->tuner);
    korch_profile_record rec = {.latency_ms = t.median_ms, .spread_ms = t.spread_ms, .default_ms = start_ms,
                                .trials = j->tuner.n_seen};
    snprintf(rec.schedule, sizeof rec.schedule, "%s", text);
    korch_profile_db_put_best(S->db, "cgen", j->k.sig, S->machine, &rec);
    last_stats.default_ms_sum += start_ms;
    last_stats.best_ms_sum += t.median_ms < start_ms ? t.median_ms : start_ms;
    if (env_int("KORCH_TUNE_LOG", 1) >= 2)
        fprintf(stderr, "korch cgen: k%.16s: default %.4f ms -> best %.4f ms (%s) after %d schedules, %d timed\n",
                j->k.sig, start_ms, t.median_ms, text, j->tuner.n_seen, j->trials);
}

korch_status korch_cgen_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                                korch_profile_result *results) {
    double t_start = korch_now_s();
    memset(&last_stats, 0, sizeof last_stats);
    last_stats.kernels = n;
    if (n == 0) return KORCH_OK;
    session S = {.options = options, .threads = cg_threads(options)};
    char machine[33], machine_text[1024];
    const char *ccv = cg_compiler_version();
    char compiler[512];
    snprintf(compiler, sizeof compiler, "%s (%s) %s", cg_compiler(), ccv ? ccv : "not found", cg_compiler_flags());
    KORCH_TRY(korch_machine_fingerprint(S.threads, compiler, machine, machine_text, sizeof machine_text));
    S.machine = machine;
    KORCH_TRY(korch_profile_db_open(options ? options->db_path : NULL, &S.db));
    korch_status st = korch_profile_db_put_machine(S.db, machine, machine_text);
    S.jobs = calloc((size_t)n, sizeof *S.jobs);
    int *job_of = calloc((size_t)n, sizeof *job_of);
    if (!S.jobs || !job_of) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    int budget = env_int("KORCH_TUNE_TRIALS", 24), explore = env_int("KORCH_TUNE_EXPLORE", 7);
    S.trial_timer = (korch_timer_options){.warmup_runs = 1, .warmup_ms = 1, .min_repeats = 5, .max_repeats = 50,
                                          .target_ms = 10};
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        korch_profile_result *r = &results[i];
        memset(r, 0, sizeof *r);
        job_of[i] = -1;
        cg_kernel k;
        if (!korch_cgen_supports(&specs[i], r->reason, sizeof r->reason) ||
            cg_kernel_from_spec(&specs[i], &k, r->reason, sizeof r->reason) != KORCH_OK) {
            r->status = KORCH_ERR_UNSUPPORTED;
            last_stats.unsupported++;
            continue;
        }
        for (int jj = 0; jj < S.n_jobs && job_of[i] < 0; jj++)
            if (strcmp(S.jobs[jj].k.sig, k.sig) == 0) job_of[i] = jj;
        if (job_of[i] >= 0) {
            cg_kernel_free(&k);
            continue;
        }
        korch_profile_record rec;
        bool found = false;
        st = korch_profile_db_get_best(S.db, "cgen", k.sig, machine, &rec, &found);
        cg_schedule check;
        if (st == KORCH_OK && found && cg_schedule_parse(rec.schedule, &check)) {
            r->status = KORCH_OK;
            r->latency_ms = rec.latency_ms;
            r->spread_ms = rec.spread_ms;
            r->from_database = true;
            snprintf(r->schedule, sizeof r->schedule, "%s", rec.schedule);
            snprintf(r->impl, sizeof r->impl, "cgen k%.16s %.100s", k.sig, rec.schedule);
            last_stats.from_database++;
            cg_kernel_free(&k);
            job_of[i] = -2 - i; /* answered; copies point here */
            continue;
        }
        job *j = &S.jobs[S.n_jobs];
        j->spec = i;
        j->k = k;
        int size[CG_KNOBS];
        for (int knob = 0; knob < CG_KNOBS; knob++) {
            const int *values;
            size[knob] = cg_schedule_domain(knob, &values);
        }
        cg_schedule def = cg_schedule_default(&k);
        korch_tune_point start = schedule_point(&def);
        uint64_t seed = strtoull(k.sig + 16, NULL, 16);
        korch_tuner_init(&j->tuner, CG_KNOBS, size, &start, budget, explore, seed);
        job_of[i] = S.n_jobs++;
    }
    double budget_s = options && options->budget_s > 0 ? options->budget_s : 5.0 + 1.5 * S.n_jobs;
    for (int round = 0; st == KORCH_OK && S.n_jobs > 0; round++) {
        if (round > 0 && korch_now_s() - t_start > budget_s) break;
        int proposed = 0;
        st = round_run(&S, &proposed);
        if (proposed == 0) break;
    }
    for (int jj = 0; jj < S.n_jobs && st == KORCH_OK; jj++) finish_job(&S, &S.jobs[jj], &results[S.jobs[jj].spec]);
    for (int i = 0; i < n && st == KORCH_OK; i++)
        if (job_of[i] >= 0 && S.jobs[job_of[i]].spec != i) results[i] = results[S.jobs[job_of[i]].spec];
    last_stats.total_s = korch_now_s() - t_start;
    int tuned = S.n_jobs;
    const char *lv = getenv("KORCH_TUNE_LOG");
    bool log = !(lv && strcmp(lv, "0") == 0);
    if (st == KORCH_OK && tuned > 0 && (log || (options && options->progress)))
        fprintf(stderr,
                "korch cgen: %d kernels (%d from the database, %d unsupported, %d tuned): %d schedules timed, "
                "%d functions compiled in %d compiler runs (%.2f s), timing %.2f s, total %.2f s; "
                "tuned/default latency %.4f/%.4f ms\n",
                n, last_stats.from_database, last_stats.unsupported, tuned, last_stats.trials, last_stats.compiled,
                last_stats.compiler_runs, last_stats.compile_s, last_stats.time_s, last_stats.total_s,
                last_stats.best_ms_sum, last_stats.default_ms_sum);
    for (int jj = 0; jj < S.n_jobs; jj++) {
        cg_kernel_free(&S.jobs[jj].k);
        korch_tuner_free(&S.jobs[jj].tuner);
        free(S.jobs[jj].codes);
        free_buffers(&S.jobs[jj]);
        cg_library_release(S.jobs[jj].best_lib);
    }
    free(S.jobs);
    free(job_of);
    korch_profile_db_close(S.db);
    return st;
}
