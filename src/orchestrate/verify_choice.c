/* Verification inside orchestration: a kernel a plan chooses is checked
 * against the interpreter before the plan is final (src/verify).
 *
 * Checking every candidate would run thousands of kernels that no plan
 * uses, so the check is lazy, like tuning: the strategy chooses, the chosen
 * kernels whose verdict is not yet known are checked, and a wrong one is
 * rejected (with every candidate of the same kernel and schedule) and the
 * strategy chooses again, until everything chosen is verified. The final
 * choice is then optimal over the candidates not known to be wrong: it is
 * optimal over a superset of the correct candidates and uses only verified
 * ones. Verdicts already stored are applied to every candidate right after
 * phase-1 profiling, so a kernel known to be wrong never becomes a variable
 * of the binary program at all.
 *
 * A single primitive whose kernel is wrong runs on REF, the interpreter
 * itself, so every graph keeps a correct plan. */
#include <stdlib.h>
#include <string.h>

#include "orchestrate/orchestrate.h"

static bool usable(const korch_candidate *c) { return c->profiled && !c->rejected; }

static korch_verify_item item_of(const korch_candidate_set *set, const korch_candidate *c) {
    return (korch_verify_item){.spec = korch_candidate_spec(set, c), .backend = c->backend, .schedule = c->schedule};
}

static bool same_kernel(const korch_candidate *a, const korch_candidate *b) {
    return a->backend == b->backend && a->signature == b->signature && strcmp(a->schedule, b->schedule) == 0;
}

static korch_status note_excluded(korch_verify_log *log, const korch_candidate_set *set, int ci,
                                  const korch_verify_result *r) {
    if (!log) return KORCH_OK;
    for (int i = 0; i < log->n_excluded; i++)
        if (log->excluded[i].candidate == ci) return KORCH_OK;
    if (log->n_excluded == log->cap_excluded) {
        int cap = log->cap_excluded ? 2 * log->cap_excluded : 16;
        korch_excluded_kernel *e = realloc(log->excluded, (size_t)cap * sizeof *e);
        if (!e) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
        log->excluded = e;
        log->cap_excluded = cap;
    }
    const korch_candidate *c = &set->candidates[ci];
    korch_excluded_kernel *e = &log->excluded[log->n_excluded++];
    memset(e, 0, sizeof *e);
    e->candidate = ci;
    e->backend = c->backend;
    e->worst_ratio = r->worst_ratio;
    snprintf(e->impl, sizeof e->impl, "%s", c->impl);
    snprintf(e->detail, sizeof e->detail, "%s", r->detail);
    return KORCH_OK;
}

/* Rejects candidate ci as wrong and every candidate of the same kernel. A
 * single primitive moves to REF instead (re-profiled with the oracle). */
static korch_status reject_wrong(korch_candidate_set *set, const korch_kernel_oracle *oracle, int ci,
                                 const korch_verify_result *r, bool *dirty, korch_verify_log *log) {
    KORCH_TRY(note_excluded(log, set, ci, r));
    korch_candidate ref = set->candidates[ci];
    for (int j = 0; j < set->n_candidates; j++) {
        korch_candidate *c = &set->candidates[j];
        if (!usable(c) || !same_kernel(c, &ref)) continue;
        if (dirty) dirty[c->partition] = true;
        if (c->n_nodes > 1 || c->backend == KORCH_BACKEND_REF) {
            c->rejected = true;
            c->reject_reason = KORCH_REJECT_WRONG;
            c->verdict = KORCH_VERDICT_WRONG;
            c->verify_ratio = r->worst_ratio;
            set->stats[c->partition].rejected[KORCH_REJECT_WRONG]++;
            if (set->stats[c->partition].kept > 0) set->stats[c->partition].kept--;
            continue;
        }
        korch_kernel_spec spec = korch_candidate_spec(set, c);
        korch_profile_result pr;
        KORCH_TRY(oracle->profile(oracle->user, KORCH_BACKEND_REF, &spec, 1, 0, true, &pr));
        if (pr.status != KORCH_OK)
            return korch_error(KORCH_ERR_RUNTIME, "primitive %d: its kernel is wrong (%s) and the interpreter failed: %s",
                               c->nodes[0], r->detail, pr.reason);
        c->backend = KORCH_BACKEND_REF;
        korch_candidate_apply_result(c, &pr);
        c->untuned = false;
        c->verdict = KORCH_VERDICT_VERIFIED;
        set->ref_fallbacks++;
    }
    return KORCH_OK;
}

static void apply_verdict(korch_candidate *c, const korch_verify_result *r) {
    c->verdict = (int)r->verdict;
    c->verify_ratio = r->worst_ratio;
}

korch_status korch_verify_stored(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                 const korch_kernel_verifier *vf, korch_verify_log *log) {
    if (!vf || !vf->check) return KORCH_OK;
    int n = 0;
    int *idx = malloc(((size_t)set->n_candidates + 1) * sizeof *idx);
    korch_verify_item *items = malloc(((size_t)set->n_candidates + 1) * sizeof *items);
    const char **keys = malloc(((size_t)set->n_candidates + 1) * sizeof *keys);
    korch_verify_result *res = malloc(((size_t)set->n_candidates + 1) * sizeof *res);
    korch_status st = idx && items && keys && res ? KORCH_OK
                                                  : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    for (int i = 0; i < set->n_candidates && st == KORCH_OK; i++) {
        korch_candidate *c = &set->candidates[i];
        if (!usable(c) || c->backend == KORCH_BACKEND_REF || !c->key[0]) continue;
        idx[n] = i;
        items[n] = item_of(set, c);
        keys[n++] = c->key;
    }
    if (st == KORCH_OK && n > 0) st = vf->check(vf->user, items, keys, n, true, res);
    for (int j = 0; j < n && st == KORCH_OK; j++) {
        korch_candidate *c = &set->candidates[idx[j]];
        if (res[j].verdict == KORCH_VERDICT_UNKNOWN || c->rejected) continue;
        if (res[j].verdict == KORCH_VERDICT_WRONG) st = reject_wrong(set, oracle, idx[j], &res[j], NULL, log);
        else apply_verdict(c, &res[j]);
    }
    free(idx);
    free(items);
    free(keys);
    free(res);
    return st;
}

korch_status korch_verify_chosen(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                 const korch_kernel_verifier *vf, const int *cands, int n_cands, bool *dirty,
                                 korch_verify_log *log, int *n_wrong) {
    *n_wrong = 0;
    if (!vf || !vf->check) return KORCH_OK;
    int n = 0;
    int *idx = malloc(((size_t)n_cands + 1) * sizeof *idx);
    korch_verify_item *items = malloc(((size_t)n_cands + 1) * sizeof *items);
    const char **keys = malloc(((size_t)n_cands + 1) * sizeof *keys);
    korch_verify_result *res = malloc(((size_t)n_cands + 1) * sizeof *res);
    korch_status st = idx && items && keys && res ? KORCH_OK
                                                  : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    for (int i = 0; i < n_cands && st == KORCH_OK; i++) {
        korch_candidate *c = &set->candidates[cands[i]];
        if (c->verdict == KORCH_VERDICT_VERIFIED || c->backend == KORCH_BACKEND_REF) continue;
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = idx[j] == cands[i];
        if (seen) continue;
        idx[n] = cands[i];
        items[n] = item_of(set, c);
        keys[n++] = c->key;
    }
    if (st == KORCH_OK && n > 0) {
        if (log) log->checked += n;
        st = vf->check(vf->user, items, keys, n, false, res);
    }
    for (int j = 0; j < n && st == KORCH_OK; j++) {
        korch_candidate *c = &set->candidates[idx[j]];
        if (res[j].verdict == KORCH_VERDICT_WRONG) {
            if (!c->rejected && c->backend == items[j].backend) {
                (*n_wrong)++;
                st = reject_wrong(set, oracle, idx[j], &res[j], dirty, log);
            }
            continue;
        }
        apply_verdict(c, &res[j]);
        /* the same kernel elsewhere shares the verdict */
        for (int k = 0; k < set->n_candidates; k++)
            if (same_kernel(&set->candidates[k], c)) apply_verdict(&set->candidates[k], &res[j]);
    }
    free(idx);
    free(items);
    free(keys);
    free(res);
    return st;
}

void korch_verify_log_free(korch_verify_log *log) {
    free(log->excluded);
    memset(log, 0, sizeof *log);
}

korch_status korch_orchestrator_exclude_kernel(korch_candidate_set *set, const korch_kernel_oracle *oracle,
                                               const korch_kernel_verifier *vf, const korch_plan_kernel *k,
                                               const korch_verify_result *r, bool *dirty, korch_verify_log *log) {
    int p = set->partition_of[k->nodes[0]];
    korch_nodemask mask = 0;
    for (int i = 0; i < k->n_nodes; i++) {
        if (set->partition_of[k->nodes[i]] != p)
            return korch_error(KORCH_ERR_INTERNAL, "verify: plan kernel spans partitions");
        mask |= (korch_nodemask)1 << set->local_of[k->nodes[i]];
    }
    int ci = korch_candidate_find(set, p, mask);
    if (ci < 0) return korch_error(KORCH_ERR_INTERNAL, "verify: plan kernel is no candidate");
    korch_candidate *c = &set->candidates[ci];
    if (vf && vf->record) {
        korch_verify_item item = item_of(set, c);
        KORCH_TRY(vf->record(vf->user, &item, c->key, r));
    }
    return reject_wrong(set, oracle, ci, r, dirty, log);
}
