/* Phase 1 of profiling: every candidate timed with its default schedule
 * (quick mode; phase2_tune.c tunes the kernels plans use), smallest first, with
 * pruning by a lower bound.
 *
 * Candidates are timed in rounds of increasing size. Before a round, each
 * candidate C gets split(C): the cheapest known way to run the same nodes as
 * smaller kernels, found by peeling a source or sink node off C (which keeps
 * the rest convex) and splitting disconnected rests into components, using
 * the latencies already measured. If the roofline bound of C is not below
 * split(C), C cannot beat its own split and is not timed: any plan using C
 * stays valid and gets no slower when C is replaced by the split's kernels
 * (docs/orchestration.md). Candidates with equal signatures are timed once.
 * Calls go to the oracle in chunks, so one progress bar covers everything. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orchestrate/orchestrate.h"
#include "orchestrate/progress.h"

/* signature -> representative candidate (within one round and backend) */
typedef struct sig_map {
    uint64_t *keys;
    int *reps;
    size_t cap;
} sig_map;

static int sig_find_or_add(sig_map *s, uint64_t key, int ci) {
    size_t h = (key ^ (key >> 31)) & (s->cap - 1);
    while (s->reps[h] >= 0) {
        if (s->keys[h] == key) return s->reps[h];
        h = (h + 1) & (s->cap - 1);
    }
    s->keys[h] = key;
    s->reps[h] = ci;
    return ci;
}

void korch_candidate_apply_result(korch_candidate *c, const korch_profile_result *r) {
    c->profiled = true;
    c->latency_ms = r->latency_ms;
    c->untuned = r->default_only;
    c->provisional = r->provisional;
    snprintf(c->schedule, sizeof c->schedule, "%s", r->schedule);
    snprintf(c->impl, sizeof c->impl, "%s", r->impl);
    snprintf(c->key, sizeof c->key, "%s", r->key);
}

/* Rounds go by size, so every candidate smaller than the one asked about has
 * its final phase-1 answer when the memo first sees it. */
static double measured_cost(void *user, const korch_candidate *c) {
    (void)user;
    return c->profiled && !c->rejected ? c->latency_ms : INFINITY;
}

/* Results measured while the machine was disturbed (provisional: an upper
 * bound of the kernel's latency) are asked for again once every candidate
 * has its first measurement. Why within the same run and not only "the next
 * time the database is used": a disturbance on a shared vCPU comes and goes
 * in hundreds of milliseconds, and the program chooses with the numbers it
 * has. Measured (bench/buckets/RESULTS.md, 2026-11-27): in a BERT bucket
 * optimised on a quiet guest, the plain 128x768x3072 matmul read 9.3 ms
 * (provisional) where it runs 6.4 ms, so the solver fused GELU into it at
 * 9.2 ms, twelve times. The backends measure a provisional row again only
 * when the machine now reads quiet (or quieter than when it was measured);
 * otherwise they answer the stored row at no cost. A new measurement
 * replaces the old one when it is clean, or when it is lower (both are upper
 * bounds). A pass that measured nothing again (still disturbed) is followed
 * by a pause, so that the next pass sees a new machine-state probe.
 * The passes stop at a time budget: a tenth of phase 1's own time, at least
 * 2 s. On a host that stays disturbed they otherwise measured and measured
 * again to little effect (PaddleOCR's detector, 2026-11-27: 16.5 s of re-asks
 * after 82 s of phase 1, 261 kernels measured again, 50 of them clean). */
#define REMEASURE_PASSES 4
#define REMEASURE_PAUSE_MS 300
#define REMEASURE_SHARE 0.10
#define REMEASURE_MIN_MS 2000.0

typedef struct remeasure_stats {
    long asked, measured, cleaned, lowered, still;
    bool out_of_time;
} remeasure_stats;

static void copy_result(korch_candidate *to, const korch_candidate *from) {
    to->profiled = true;
    to->latency_ms = from->latency_ms;
    to->untuned = from->untuned;
    to->provisional = from->provisional;
    memcpy(to->schedule, from->schedule, sizeof to->schedule);
    memcpy(to->impl, from->impl, sizeof to->impl);
    memcpy(to->key, from->key, sizeof to->key);
}

/* the orchestrator's clock (a simulated one in tests), else the wall clock */
static double clock_now_ms(const korch_orchestrate_options *o) {
    return o->clock_ms ? o->clock_ms(o->clock_user) : korch_now_ms();
}

static korch_status remeasure_provisional(korch_candidate_set *set, const korch_kernel_oracle *oracle, sig_map *sigs,
                                          int *rep_of, int *reps, korch_kernel_spec *specs,
                                          korch_profile_result *results, int chunk,
                                          const korch_orchestrate_options *options, double deadline_ms,
                                          remeasure_stats *rs) {
    int n = set->n_candidates;
    long measured_last = 1;
    for (int pass = 0; pass < REMEASURE_PASSES && !rs->out_of_time; pass++) {
        long left = 0;
        for (int i = 0; i < n; i++) {
            const korch_candidate *c = &set->candidates[i];
            left += c->profiled && !c->rejected && c->provisional;
        }
        if (left == 0) break;
        if (measured_last == 0) {
            if (clock_now_ms(options) + REMEASURE_PAUSE_MS > deadline_ms) {
                rs->out_of_time = true;
                break;
            }
            struct timespec ts = {0, REMEASURE_PAUSE_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
        measured_last = 0;
        for (int kind = 0; kind < KORCH_BACKEND_COUNT; kind++) {
            for (size_t h = 0; h < sigs->cap; h++) sigs->reps[h] = -1;
            int n_reps = 0;
            for (int i = 0; i < n; i++) {
                korch_candidate *c = &set->candidates[i];
                rep_of[i] = -1;
                if (!c->profiled || c->rejected || !c->provisional || (int)c->backend != kind) continue;
                rep_of[i] = sig_find_or_add(sigs, c->signature, i);
                if (rep_of[i] == i) reps[n_reps++] = i;
            }
            for (int first = 0; first < n_reps && !rs->out_of_time; first += chunk) {
                if (clock_now_ms(options) > deadline_ms) {
                    rs->out_of_time = true;
                    break;
                }
                int count = n_reps - first < chunk ? n_reps - first : chunk;
                for (int j = 0; j < count; j++) specs[j] = korch_candidate_spec(set, &set->candidates[reps[first + j]]);
                KORCH_TRY(oracle->profile(oracle->user, (korch_backend_kind)kind, specs, count, 0, true, results));
                rs->asked += count;
                for (int j = 0; j < count; j++) {
                    const korch_profile_result *r = &results[j];
                    korch_candidate *c = &set->candidates[reps[first + j]];
                    if (r->status != KORCH_OK) continue; /* keeps its first measurement */
                    bool fresh = !r->from_database;
                    measured_last += fresh;
                    rs->measured += fresh;
                    if (!r->provisional) {
                        rs->cleaned++;
                        korch_candidate_apply_result(c, r);
                    } else if (r->latency_ms < c->latency_ms) {
                        rs->lowered++;
                        korch_candidate_apply_result(c, r);
                    }
                }
            }
            for (int i = 0; i < n; i++)
                if (rep_of[i] >= 0 && rep_of[i] != i) copy_result(&set->candidates[i], &set->candidates[rep_of[i]]);
        }
    }
    /* distinct kernels still provisional */
    for (size_t h = 0; h < sigs->cap; h++) sigs->reps[h] = -1;
    for (int i = 0; i < n; i++) {
        const korch_candidate *c = &set->candidates[i];
        if (c->profiled && !c->rejected && c->provisional &&
            sig_find_or_add(sigs, c->signature ^ (uint64_t)c->backend * 0x9E3779B97F4A7C15ull, i) == i)
            rs->still++;
    }
    return KORCH_OK;
}

/* Candidates a second backend may implement (korch_candidate_second_backend:
 * oneDNN's depthwise convolutions, which the generator computes as windows
 * and can fuse with the transposes around them; the generator is the only
 * second backend) are timed by it too: its default schedule first, then,
 * for a close call (under SECOND_TUNE_RATIO times oneDNN's time), tuned
 * with SECOND_TUNE_S seconds per kernel, since the default's loop order is
 * often what loses it. The faster runs the candidate; a generated winner
 * is tuned further in phase 2 like any kernel. A refusal or a failure
 * leaves the candidate as it was. Not under --estimate, whose roofline
 * cannot tell the two apart. */
#define SECOND_TUNE_RATIO 1.5
#define SECOND_TUNE_S 1.0
static korch_status second_opinion(korch_candidate_set *set, const korch_kernel_oracle *oracle, const int *batch,
                                   int n_batch, sig_map *sigs, int *rep_of, int *reps, korch_kernel_spec *specs,
                                   korch_profile_result *results, int chunk, long *timed, long *switched) {
    for (size_t h = 0; h < sigs->cap; h++) sigs->reps[h] = -1;
    int n_reps = 0;
    for (int b = 0; b < n_batch; b++) {
        int ci = batch[b];
        korch_candidate *c = &set->candidates[ci];
        rep_of[ci] = -1;
        if (korch_candidate_second_backend(set->pg, c) != KORCH_BACKEND_CGEN || !c->profiled || c->rejected) continue;
        rep_of[ci] = sig_find_or_add(sigs, c->signature ^ (uint64_t)KORCH_BACKEND_CGEN * 0x9E3779B97F4A7C15ull, ci);
        if (rep_of[ci] != ci) continue;
        char reason[256];
        korch_kernel_spec spec = korch_candidate_spec(set, c);
        /* a refused representative stays on oneDNN, and so do its duplicates */
        if (oracle->supports && oracle->supports(oracle->user, KORCH_BACKEND_CGEN, &spec, reason, sizeof reason))
            reps[n_reps++] = ci;
    }
    /* pass 0: default schedules; pass 1: the close calls of pass 0, tuned
     * (kept at the front of reps as they are found: never past an entry
     * still to be read) */
    for (int tuned = 0; tuned < 2 && n_reps > 0; tuned++) {
        int n_close = 0;
        for (int first = 0; first < n_reps; first += chunk) {
            int count = n_reps - first < chunk ? n_reps - first : chunk;
            for (int j = 0; j < count; j++) specs[j] = korch_candidate_spec(set, &set->candidates[reps[first + j]]);
            korch_status st = oracle->profile(oracle->user, KORCH_BACKEND_CGEN, specs, count,
                                              tuned ? SECOND_TUNE_S * count : 0, !tuned, results);
            if (st != KORCH_OK) return st;
            *timed += count;
            for (int j = 0; j < count; j++) {
                korch_candidate *c = &set->candidates[reps[first + j]];
                if (results[j].status != KORCH_OK) continue;
                if (results[j].latency_ms < c->latency_ms) {
                    c->backend = KORCH_BACKEND_CGEN;
                    korch_candidate_apply_result(c, &results[j]);
                    ++*switched;
                } else if (results[j].latency_ms < SECOND_TUNE_RATIO * c->latency_ms) {
                    reps[n_close++] = reps[first + j];
                }
            }
        }
        n_reps = n_close;
    }
    /* duplicates follow their representative */
    for (int b = 0; b < n_batch; b++) {
        int ci = batch[b], rep = rep_of[ci];
        if (rep < 0 || rep == ci) continue;
        korch_candidate *c = &set->candidates[ci], *r = &set->candidates[rep];
        if (r->backend == KORCH_BACKEND_CGEN && c->backend != KORCH_BACKEND_CGEN && r->latency_ms < c->latency_ms) {
            c->backend = KORCH_BACKEND_CGEN;
            copy_result(c, r);
            ++*switched;
        }
    }
    return KORCH_OK;
}

korch_status korch_profile_candidates(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                      const korch_orchestrate_options *options) {
    korch_status st = KORCH_OK;
    int n = set->n_candidates, max_size = 0;
    long remaining = 0;
    for (int i = 0; i < n; i++) {
        const korch_candidate *c = &set->candidates[i];
        if (c->n_nodes > max_size) max_size = c->n_nodes;
        remaining += !c->profiled && !c->rejected;
    }
    int chunk = options->profile_chunk > 0 ? options->profile_chunk : 48;
    korch_split_memo m;
    korch_split_init(&m, set, measured_cost, NULL);
    int *batch = malloc(((size_t)n + 1) * sizeof *batch);
    int *rep_of = malloc(((size_t)n + 1) * sizeof *rep_of);
    int *reps = malloc(((size_t)n + 1) * sizeof *reps);
    korch_kernel_spec *specs = malloc((size_t)chunk * sizeof *specs);
    korch_profile_result *results = malloc((size_t)chunk * sizeof *results);
    sig_map sigs = {0};
    sigs.cap = 16;
    while (sigs.cap < 2 * (size_t)n + 2) sigs.cap *= 2;
    sigs.keys = malloc(sigs.cap * sizeof *sigs.keys);
    sigs.reps = malloc(sigs.cap * sizeof *sigs.reps);
    if (!batch || !rep_of || !reps || !specs || !results || !sigs.keys || !sigs.reps) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "profile: out of memory");
        goto done;
    }
    korch_progress bar;
    long done_count = 0, timed = 0, from_db = 0, provisional = 0, switched = 0;
    double start_ms = korch_now_ms(), phase1_start = clock_now_ms(options);
    korch_progress_begin(&bar, options->estimated ? "estimating" : "profiling", remaining, options->progress);
    for (int size = 1; size <= max_size && st == KORCH_OK; size++) {
        for (int kind = 0; kind < KORCH_BACKEND_COUNT && st == KORCH_OK; kind++) {
            int n_batch = 0;
            for (int i = 0; i < n; i++) {
                korch_candidate *c = &set->candidates[i];
                if (c->n_nodes != size || c->profiled || c->rejected || (int)c->backend != kind) continue;
                c->lower_bound_ms = korch_candidate_lower_bound_ms(set, c, &options->machine);
                if (options->prune_by_bound && size > 1 && !c->forced) {
                    double split = korch_split_cost(&m, c->partition, c->mask);
                    if (c->lower_bound_ms >= split) {
                        c->rejected = true;
                        c->reject_reason = KORCH_REJECT_BOUND;
                        set->stats[c->partition].rejected[KORCH_REJECT_BOUND]++;
                        remaining--;
                        continue;
                    }
                }
                batch[n_batch++] = i;
            }
            /* one representative per signature */
            for (size_t h = 0; h < sigs.cap; h++) sigs.reps[h] = -1;
            int n_reps = 0;
            for (int b = 0; b < n_batch; b++) {
                int ci = batch[b];
                int rep = sig_find_or_add(&sigs, set->candidates[ci].signature, ci);
                rep_of[ci] = rep;
                if (rep == ci) reps[n_reps++] = ci;
            }
            for (int first = 0; first < n_reps && st == KORCH_OK; first += chunk) {
                int count = n_reps - first < chunk ? n_reps - first : chunk;
                for (int j = 0; j < count; j++) specs[j] = korch_candidate_spec(set, &set->candidates[reps[first + j]]);
                double budget = 0; /* quick mode tunes nothing: the budget is for phase2_tune.c */
                korch_progress_clear(&bar); /* backends may print a line of their own */
                st = oracle->profile(oracle->user, (korch_backend_kind)kind, specs, count, budget, true, results);
                for (int j = 0; j < count && st == KORCH_OK; j++) {
                    korch_candidate *c = &set->candidates[reps[first + j]];
                    if (results[j].status == KORCH_OK) {
                        korch_candidate_apply_result(c, &results[j]);
                        from_db += results[j].from_database;
                        provisional += results[j].provisional;
                        continue;
                    }
                    if (c->n_nodes == 1 && c->backend != KORCH_BACKEND_REF) {
                        /* a primitive must run somewhere: fall back to REF */
                        korch_profile_result ref;
                        korch_kernel_spec spec = korch_candidate_spec(set, c);
                        c->backend = KORCH_BACKEND_REF;
                        st = oracle->profile(oracle->user, KORCH_BACKEND_REF, &spec, 1, budget, true, &ref);
                        if (st == KORCH_OK && ref.status == KORCH_OK) {
                            korch_candidate_apply_result(c, &ref);
                            continue;
                        }
                        if (st == KORCH_OK)
                            st = korch_error(KORCH_ERR_RUNTIME, "profiling: primitive %d runs on no backend: %s",
                                             c->nodes[0], ref.reason);
                        break;
                    }
                    if (c->n_nodes == 1)
                        st = korch_error(KORCH_ERR_RUNTIME, "profiling: primitive %d runs on no backend: %s",
                                         c->nodes[0], results[j].reason);
                    c->rejected = true;
                    c->reject_reason = KORCH_REJECT_PROFILE;
                    set->stats[c->partition].rejected[KORCH_REJECT_PROFILE]++;
                }
                timed += count;
                done_count += count;
                korch_progress_update(&bar, done_count, remaining);
            }
            /* duplicates take their representative's result */
            for (int b = 0; b < n_batch && st == KORCH_OK; b++) {
                int ci = batch[b];
                korch_candidate *c = &set->candidates[ci], *r = &set->candidates[rep_of[ci]];
                if (ci == rep_of[ci]) continue;
                if (r->profiled && !r->rejected && r->backend == c->backend) {
                    copy_result(c, r);
                } else {
                    c->rejected = true;
                    c->reject_reason = KORCH_REJECT_PROFILE;
                    set->stats[c->partition].rejected[KORCH_REJECT_PROFILE]++;
                }
                done_count++;
            }
            korch_progress_update(&bar, done_count, remaining);
            if (st == KORCH_OK && kind == KORCH_BACKEND_DNNL && !options->estimated && set->force_backend < 0) {
                korch_progress_clear(&bar);
                st = second_opinion(set, oracle, batch, n_batch, &sigs, rep_of, reps, specs, results, chunk, &timed,
                                    &switched);
            }
        }
    }
    korch_progress_end(&bar);
    remeasure_stats rs = {0};
    double again_ms = clock_now_ms(options), phase1_ms = again_ms - phase1_start;
    double budget_ms = REMEASURE_SHARE * phase1_ms > REMEASURE_MIN_MS ? REMEASURE_SHARE * phase1_ms : REMEASURE_MIN_MS;
    if (st == KORCH_OK && provisional > 0 && !options->estimated)
        st = remeasure_provisional(set, oracle, &sigs, rep_of, reps, specs, results, chunk, options, again_ms + budget_ms,
                                   &rs);
    again_ms = clock_now_ms(options) - again_ms;
    for (int p = 0; p < set->n_partitions; p++) set->stats[p].kept = 0;
    for (int i = 0; i < n; i++) {
        const korch_candidate *c = &set->candidates[i];
        if (c->profiled && !c->rejected) set->stats[c->partition].kept++;
    }
    if (options->log && st == KORCH_OK && options->estimated)
        fprintf(options->log,
                "estimating: %ld distinct kernels for %ld candidates from the roofline model in %.1f s (nothing "
                "compiled or timed; kernels keep their default schedules)\n",
                timed, done_count, (korch_now_ms() - start_ms) / 1e3);
    else if (options->log && st == KORCH_OK)
        fprintf(options->log,
                "profiling: %ld distinct kernels (%ld from the profile database) for %ld candidates in %.1f s "
                "(default schedules; the kernels plans use are tuned next)\n",
                timed, from_db, done_count, (korch_now_ms() - start_ms) / 1e3);
    if (options->log && st == KORCH_OK && switched > 0)
        fprintf(options->log,
                "profiling: %ld candidates with depthwise convolutions run faster as generated code than on oneDNN\n",
                switched);
    if (options->log && st == KORCH_OK && provisional > 0)
        fprintf(options->log,
                "profiling: %ld of them provisional (measured while the machine was busy; asked for again below, and "
                "whenever the database is used on a quiet machine; 'korch db check' lists them)\n",
                provisional);
    if (options->log && st == KORCH_OK && rs.asked > 0)
        fprintf(options->log,
                "profiling: provisional kernels asked for again after the others (%.1f s): %ld measured again, %ld "
                "now clean, %ld lower; %ld still provisional%s\n",
                again_ms / 1e3, rs.measured, rs.cleaned, rs.lowered, rs.still,
                rs.out_of_time ? " (stopped at its time budget, a tenth of profiling's)" : "");
done:
    korch_split_free(&m);
    free(batch);
    free(rep_of);
    free(reps);
    free(specs);
    free(results);
    free(sigs.keys);
    free(sigs.reps);
    return st;
}
