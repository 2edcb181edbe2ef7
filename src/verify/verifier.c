/* The verifier the orchestrator asks before a plan may use a kernel:
 * remembered verdicts first (this process, then the profile database), the
 * reference for the rest (kernel_check.c), every new numeric verdict stored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "profile/profile.h"
#include "verify/verify.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct memo_entry {
    char *key; /* "backend|kernel key|schedule" */
    korch_verify_result result;
} memo_entry;

struct korch_verifier {
    const korch_pgraph *pg;
    korch_verify_options options;
    korch_profile_db *db; /* NULL: nothing stored (the database could not be opened) */
    char machine[KORCH_BACKEND_COUNT][33];
    memo_entry *memo;
    int n_memo, cap_memo;
    korch_strmap memo_index; /* key -> memo entry (keys owned by the entries) */
    korch_verifier_stats stats;
};

korch_status korch_verify_fingerprint(korch_backend_kind kind, int threads, const korch_profile_options *build,
                                      char hash[33]) {
    char what[1400], text[2048];
    snprintf(what, sizeof what, "verification %s; korch %s; %s", KORCH_VERIFY_RULES, korch_version(),
             korch_backend_identity(kind, build));
    /* no cache scrub: a verdict does not depend on how latencies were measured */
    return korch_machine_fingerprint(threads, what, 0, hash, text, sizeof text);
}

korch_status korch_verifier_create(const korch_pgraph *pg, const korch_verify_options *options,
                                   korch_verifier **out) {
    *out = NULL;
    korch_verifier *v = calloc(1, sizeof *v);
    if (!v) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    v->pg = pg;
    v->options = *options;
    korch_strmap_init(&v->memo_index);
    int threads = options->build && options->build->threads > 0 ? options->build->threads : 1;
#ifdef _OPENMP
    if (!(options->build && options->build->threads > 0)) threads = omp_get_max_threads();
#endif
    for (int k = 0; k < KORCH_BACKEND_COUNT; k++) {
        korch_status st = korch_verify_fingerprint((korch_backend_kind)k, threads, options->build, v->machine[k]);
        if (st != KORCH_OK) {
            free(v);
            return st;
        }
    }
    /* without a database verdicts live for this process only */
    if (korch_profile_db_open(options->build ? options->build->db_path : NULL,
                              options->build ? options->build->db_busy_ms : 0, &v->db) != KORCH_OK) {
        fprintf(stderr, "korch: warning: verdicts of kernel verification will not be kept: %s\n", korch_last_error());
        korch_error_clear();
        v->db = NULL;
    }
    *out = v;
    return KORCH_OK;
}

void korch_verifier_free(korch_verifier *v) {
    if (!v) return;
    korch_strmap_free(&v->memo_index);
    for (int i = 0; i < v->n_memo; i++) free(v->memo[i].key);
    free(v->memo);
    korch_profile_db_close(v->db);
    free(v);
}

const korch_verifier_stats *korch_verifier_get_stats(const korch_verifier *v) { return &v->stats; }

static char *memo_key(const korch_verify_item *item, const char *key) {
    char sig[40];
    if (!key || !*key) { /* no backend key (estimated latencies): the structure's */
        snprintf(sig, sizeof sig, "s%016llx", (unsigned long long)korch_kernel_signature(&item->spec));
        key = sig;
    }
    const char *sched = item->schedule ? item->schedule : "";
    size_t len = strlen(key) + strlen(sched) + 16;
    char *s = malloc(len);
    if (s) snprintf(s, len, "%s|%s|%s", korch_backend_name(item->backend), key, sched);
    return s;
}

static korch_verify_result *memo_find(korch_verifier *v, const char *k) {
    int i = k ? korch_strmap_get(&v->memo_index, k) : -1;
    return i >= 0 ? &v->memo[i].result : NULL;
}

static void memo_add(korch_verifier *v, char *k, const korch_verify_result *r) {
    if (!k) return;
    if (v->n_memo == v->cap_memo) {
        int cap = v->cap_memo ? 2 * v->cap_memo : 64;
        memo_entry *m = realloc(v->memo, (size_t)cap * sizeof *m);
        if (!m) {
            free(k);
            return;
        }
        v->memo = m;
        v->cap_memo = cap;
    }
    if (!korch_strmap_put(&v->memo_index, k, v->n_memo)) {
        free(k);
        return;
    }
    v->memo[v->n_memo++] = (memo_entry){.key = k, .result = *r};
}

static bool db_lookup(korch_verifier *v, const korch_verify_item *item, const char *key, korch_verify_result *r) {
    if (!v->db || !key || !*key) return false;
    korch_verdict_record rec;
    bool found = false;
    const char *sched = item->schedule ? item->schedule : "";
    if (korch_profile_db_get_verdict(v->db, korch_backend_name(item->backend), key, sched,
                                     v->machine[item->backend], &rec, &found) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    if (!found) return false;
    memset(r, 0, sizeof *r);
    r->verdict = strcmp(rec.verdict, "verified") == 0 ? KORCH_VERDICT_VERIFIED : KORCH_VERDICT_WRONG;
    r->worst_ratio = rec.worst_ratio;
    r->max_abs = rec.max_abs;
    snprintf(r->detail, sizeof r->detail, "%s", rec.detail);
    return true;
}

static void db_store(korch_verifier *v, const korch_verify_item *item, const char *key, const korch_verify_result *r) {
    if (!v->db || !key || !*key || r->failed || r->verdict == KORCH_VERDICT_UNKNOWN) return;
    if (item->backend == KORCH_BACKEND_REF) return; /* nothing to remember */
    korch_verdict_record rec = {.worst_ratio = r->worst_ratio, .max_abs = r->max_abs};
    snprintf(rec.verdict, sizeof rec.verdict, "%s", korch_verdict_name(r->verdict));
    snprintf(rec.detail, sizeof rec.detail, "%s", r->detail);
    if (korch_profile_db_put_verdict(v->db, korch_backend_name(item->backend), key,
                                     item->schedule ? item->schedule : "", v->machine[item->backend],
                                     &rec) != KORCH_OK)
        korch_error_clear();
}

korch_status korch_verifier_check(korch_verifier *v, const korch_verify_item *items, const char *const *keys, int n,
                                  bool lookup_only, korch_verify_result *results) {
    int *todo = malloc(((size_t)n + 1) * sizeof *todo);
    korch_verify_item *batch = malloc(((size_t)n + 1) * sizeof *batch);
    korch_verify_result *out = malloc(((size_t)n + 1) * sizeof *out);
    char **mkeys = calloc((size_t)n + 1, sizeof *mkeys);
    korch_status st = todo && batch && out && mkeys ? KORCH_OK
                                                    : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    int n_todo = 0;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        const char *key = keys ? keys[i] : NULL;
        memset(&results[i], 0, sizeof results[i]);
        mkeys[i] = memo_key(&items[i], key);
        const korch_verify_result *m = memo_find(v, mkeys[i]);
        if (m) {
            results[i] = *m;
            continue;
        }
        if (db_lookup(v, &items[i], key, &results[i])) {
            v->stats.from_database++;
            memo_add(v, mkeys[i], &results[i]);
            mkeys[i] = NULL;
            continue;
        }
        if (lookup_only) continue;
        /* the same kernel twice in one call is checked once */
        bool dup = false;
        for (int j = 0; j < n_todo && !dup; j++) dup = mkeys[todo[j]] && mkeys[i] && strcmp(mkeys[todo[j]], mkeys[i]) == 0;
        if (!dup) {
            batch[n_todo] = items[i];
            todo[n_todo++] = i;
        }
    }
    if (st == KORCH_OK && n_todo > 0) {
        double t0 = korch_now_s();
        korch_verify_options vo = v->options;
        vo.timing = &v->stats.timing;
        st = korch_verify_kernels(v->pg, batch, n_todo, &vo, out);
        v->stats.seconds += korch_now_s() - t0;
        v->stats.rounds++;
        for (int j = 0; j < n_todo && st == KORCH_OK; j++) {
            int i = todo[j];
            results[i] = out[j];
            v->stats.checked++;
            v->stats.verified += out[j].verdict == KORCH_VERDICT_VERIFIED;
            v->stats.wrong += out[j].verdict == KORCH_VERDICT_WRONG;
            db_store(v, &items[i], keys ? keys[i] : NULL, &out[j]);
            memo_add(v, mkeys[i], &out[j]);
            mkeys[i] = NULL;
        }
        /* duplicates take their first's verdict */
        for (int i = 0; i < n && st == KORCH_OK; i++) {
            if (results[i].verdict != KORCH_VERDICT_UNKNOWN || !mkeys[i]) continue;
            const korch_verify_result *m = memo_find(v, mkeys[i]);
            if (m) results[i] = *m;
        }
    }
    for (int i = 0; mkeys && i < n; i++) free(mkeys[i]);
    free(mkeys);
    free(todo);
    free(batch);
    free(out);
    return st;
}

korch_status korch_verifier_record(korch_verifier *v, const korch_verify_item *item, const char *key,
                                   const korch_verify_result *result) {
    korch_verify_result r = *result;
    db_store(v, item, key, &r);
    char *k = memo_key(item, key);
    korch_verify_result *m = memo_find(v, k);
    if (m) {
        *m = r;
        free(k);
        return KORCH_OK;
    }
    memo_add(v, k, &r);
    return KORCH_OK;
}

static korch_status hook_record(void *user, const korch_verify_item *item, const char *key,
                                const korch_verify_result *result) {
    return korch_verifier_record(user, item, key, result);
}

static korch_status hook_check(void *user, const korch_verify_item *items, const char *const *keys, int n,
                               bool lookup_only, korch_verify_result *results) {
    return korch_verifier_check(user, items, keys, n, lookup_only, results);
}

korch_kernel_verifier korch_verifier_hook(korch_verifier *v) {
    return (korch_kernel_verifier){.check = v ? hook_check : NULL, .record = v ? hook_record : NULL, .user = v};
}
