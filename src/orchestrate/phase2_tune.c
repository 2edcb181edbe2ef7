/* Phase 2 of profiling: tune the kernels that plans use.
 *
 * Phase 1 (phase1_profile.c) timed every candidate with its default schedule. The
 * strategies then choose with those latencies, and the kernels they choose
 * are tuned here (explore + droplet search in the backend); the optimal
 * strategy solves again with the tuned latencies, and repeats while its
 * choice contains untuned kernels (orchestrate.c). Kernels are tuned once per
 * signature, most expensive first, so a short --budget goes where the time
 * is; what the budget leaves untuned keeps its measured default latency.
 * docs/orchestration.md ("Two-phase profiling") has the argument. */
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"
#include "orchestrate/progress.h"

static const korch_candidate_set *sort_set; /* qsort has no context argument */

static int cmp_sig(const void *a, const void *b) {
    const korch_candidate *x = &sort_set->candidates[*(const int *)a], *y = &sort_set->candidates[*(const int *)b];
    if (x->backend != y->backend) return (int)x->backend - (int)y->backend;
    if (x->signature != y->signature) return x->signature < y->signature ? -1 : 1;
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static int cmp_latency_desc(const void *a, const void *b) {
    const korch_candidate *x = &sort_set->candidates[*(const int *)a], *y = &sort_set->candidates[*(const int *)b];
    return (y->latency_ms > x->latency_ms) - (y->latency_ms < x->latency_ms);
}

void korch_tune_state_free(korch_tune_state *ts) {
    free(ts->by_sig);
    memset(ts, 0, sizeof *ts);
}

/* Candidates sorted by (backend, signature): [*first, *first + n) share c's. */
static int same_kernel(const korch_candidate_set *set, const korch_tune_state *ts, const korch_candidate *c,
                       int *first) {
    int lo = 0, hi = ts->n_by_sig;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const korch_candidate *m = &set->candidates[ts->by_sig[mid]];
        if (m->backend < c->backend || (m->backend == c->backend && m->signature < c->signature)) lo = mid + 1;
        else hi = mid;
    }
    *first = lo;
    int n = 0;
    while (lo + n < ts->n_by_sig) {
        const korch_candidate *m = &set->candidates[ts->by_sig[lo + n]];
        if (m->backend != c->backend || m->signature != c->signature) break;
        n++;
    }
    return n;
}

static korch_status index_signatures(korch_candidate_set *set, korch_tune_state *ts) {
    if (ts->by_sig) return KORCH_OK;
    ts->by_sig = malloc(((size_t)set->n_candidates + 1) * sizeof *ts->by_sig);
    if (!ts->by_sig) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "tuning: out of memory");
    ts->n_by_sig = 0;
    for (int i = 0; i < set->n_candidates; i++)
        if (set->candidates[i].profiled && !set->candidates[i].rejected) ts->by_sig[ts->n_by_sig++] = i;
    sort_set = set;
    qsort(ts->by_sig, (size_t)ts->n_by_sig, sizeof *ts->by_sig, cmp_sig);
    return KORCH_OK;
}

double korch_tune_budget_left(const korch_tune_state *ts) {
    if (ts->budget_s <= 0) return 1e9;
    double now = ts->clock_ms ? ts->clock_ms(ts->clock_user) : korch_now_ms();
    return ts->budget_s - (now - ts->start_ms) / 1e3;
}

korch_status korch_tune_candidates(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                   const korch_orchestrate_options *options, korch_tune_state *ts, const int *cands,
                                   int n, bool *dirty, int *submitted) {
    *submitted = 0;
    KORCH_TRY(index_signatures(set, ts));
    /* one representative per kernel that is still untuned */
    int *reps = malloc(((size_t)n + 1) * sizeof *reps);
    if (!reps) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "tuning: out of memory");
    int n_reps = 0;
    for (int i = 0; i < n; i++) {
        korch_candidate *c = &set->candidates[cands[i]];
        if (!c->profiled || c->rejected || !c->untuned || c->tune_tried) continue;
        int first, m = same_kernel(set, ts, c, &first);
        for (int j = 0; j < m; j++) set->candidates[ts->by_sig[first + j]].tune_tried = true;
        c->tune_tried = true;
        reps[n_reps++] = cands[i];
    }
    sort_set = set;
    qsort(reps, (size_t)n_reps, sizeof *reps, cmp_latency_desc);
    korch_status st = KORCH_OK;
    int chunk = options->tune_chunk > 0 ? options->tune_chunk : 32;
    korch_kernel_spec *specs = malloc((size_t)chunk * sizeof *specs);
    korch_profile_result *results = malloc((size_t)chunk * sizeof *results);
    int *batch = malloc((size_t)chunk * sizeof *batch);
    if (!specs || !results || !batch) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "tuning: out of memory");
    korch_progress bar;
    korch_progress_begin(&bar, "tuning", n_reps, options->progress && n_reps > 0);
    int done = 0;
    for (int kind = 0; kind < KORCH_BACKEND_COUNT && st == KORCH_OK; kind++) {
        int at = 0;
        while (st == KORCH_OK) {
            int count = 0;
            for (; at < n_reps && count < chunk; at++)
                if ((int)set->candidates[reps[at]].backend == kind) batch[count++] = reps[at];
            if (count == 0) break;
            double left = korch_tune_budget_left(ts);
            if (left <= 0) {
                /* out of time: these keep their default latency */
                ts->out_of_budget = true;
                for (int b = 0; b < count; b++) ts->skipped++;
                for (; at < n_reps; at++) ts->skipped += (int)set->candidates[reps[at]].backend == kind;
                break;
            }
            for (int b = 0; b < count; b++) specs[b] = korch_candidate_spec(set, &set->candidates[batch[b]]);
            korch_progress_clear(&bar); /* backends print a line of their own */
            double t0 = korch_now_ms();
            st = oracle->profile(oracle->user, (korch_backend_kind)kind, specs, count, left, false, results);
            ts->seconds += (korch_now_ms() - t0) / 1e3;
            for (int b = 0; b < count && st == KORCH_OK; b++) {
                const korch_profile_result *r = &results[b];
                korch_candidate *rep = &set->candidates[batch[b]];
                ts->submitted++;
                int first, m = same_kernel(set, ts, rep, &first);
                if (dirty && ts->scaled) /* its cost was scaled while it could still be tuned */
                    for (int j = 0; j < m; j++) dirty[set->candidates[ts->by_sig[first + j]].partition] = true;
                if (r->status != KORCH_OK) continue; /* keeps its default measurement */
                ts->tuned += !r->default_only;
                ts->default_ms += rep->latency_ms;
                ts->tuned_ms += r->latency_ms;
                for (int j = 0; j < m; j++) {
                    korch_candidate *c = &set->candidates[ts->by_sig[first + j]];
                    if (c->latency_ms != r->latency_ms && dirty) dirty[c->partition] = true;
                    korch_candidate_apply_result(c, r);
                }
            }
            done += count;
            *submitted += count;
            korch_progress_update(&bar, done, n_reps);
        }
    }
    korch_progress_end(&bar);
    free(reps);
    free(specs);
    free(results);
    free(batch);
    return st;
}
