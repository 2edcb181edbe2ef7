/* Verdicts of whole-plan checks, remembered in the profile database.
 *
 * A plan check is deterministic in what it reads: the model's bytes, the
 * primitive graph, the seeded inputs, the thread count, and each kernel's
 * code, which is fixed by (backend, nodes, schedule) under one korch
 * version, one compiler and one oneDNN. So a passing check of the same plan
 * under the same fingerprint need not be run again: a warm `korch optimize`
 * that chooses the plan it chose before would otherwise pay one reference
 * run of the whole model (most of its time on conv-heavy models, bench/
 * verify/RESULTS.md). Only passes are stored, only for seeded inputs (the
 * caller's inputs are checked every time), and a plan that fails is always
 * checked afresh, so that the fault is localised. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "verify/verify.h"

/* The key of a check: everything the check's outcome depends on. */
static bool check_key(const korch_plan *plan, const korch_graph *g, const char *model_sha256,
                      const korch_verify_options *o, char key[65], char machine[65]) {
    char *text = NULL;
    size_t len = 0;
    FILE *t = open_memstream(&text, &len); /* the key is the SHA-256 of this text */
    if (!t) return false;
    int threads = o->build && o->build->threads > 0 ? o->build->threads : 0;
    fprintf(t, "plan check %s; model %s; seed %" PRIu64 "; threads %d; inputs", KORCH_VERIFY_RULES, model_sha256,
            o->seed, threads);
    for (int i = 0; i < g->n_inputs; i++) { /* the shapes the model was fixed to (--input-shape) */
        char dims[160];
        const korch_value *v = &g->values[g->inputs[i]];
        korch_shape_format(&v->shape, dims, sizeof dims);
        fprintf(t, " %d:%s", (int)v->dtype, dims);
    }
    fputc('\n', t);
    for (int k = 0; k < plan->n_kernels; k++) {
        const korch_plan_kernel *pk = &plan->kernels[k];
        fprintf(t, "%s|%s|%s|", korch_backend_name(pk->backend), pk->impl, pk->schedule);
        for (int i = 0; i < pk->n_nodes; i++) fprintf(t, "%d,", pk->nodes[i]);
        fputc('\n', t);
    }
    bool ok = !ferror(t);
    if (fclose(t) != 0 || !text) ok = false;
    if (ok) korch_sha256_hex(text, len, key);
    free(text);
    return ok && korch_plan_verdict_machine(threads > 0 ? threads : 1, o->build, machine);
}

bool korch_plan_verdict_machine(int threads, const korch_profile_options *build, char machine[65]) {
    /* every backend's fingerprint (compiler, oneDNN, CPU, korch version, rules) */
    char text[KORCH_BACKEND_COUNT * 34 + 1];
    size_t len = 0;
    for (int b = 0; b < KORCH_BACKEND_COUNT; b++) {
        char fp[33];
        if (korch_verify_fingerprint((korch_backend_kind)b, threads, build, fp) != KORCH_OK) {
            korch_error_clear();
            return false;
        }
        len += (size_t)snprintf(text + len, sizeof text - len, "%s;", fp);
    }
    korch_sha256_hex(text, len, machine);
    return true;
}

/* detail holds the per-output numbers: "worst max_abs;" in graph-output order */
bool korch_plan_verdict_lookup(const korch_plan *plan, const korch_graph *g, const char *model_sha256,
                               const korch_verify_options *o, korch_plan_check *out) {
    memset(out, 0, sizeof *out);
    out->bad_kernel = -1;
    char key[65], machine[65];
    if (!model_sha256 || !*model_sha256 || o->inputs || !check_key(plan, g, model_sha256, o, key, machine))
        return false;
    korch_profile_db *db = NULL;
    if (korch_profile_db_open(o->build ? o->build->db_path : NULL, o->build ? o->build->db_busy_ms : 0, &db) != KORCH_OK) {
        korch_error_clear();
        return false;
    }
    korch_verdict_record rec;
    bool found = false;
    if (korch_profile_db_get_verdict(db, "plan", key, "", machine, &rec, &found) != KORCH_OK) {
        korch_error_clear();
        found = false;
    }
    korch_profile_db_close(db);
    if (!found || strcmp(rec.verdict, "verified") != 0) return false;
    int no = g->n_outputs;
    out->outputs = calloc((size_t)no + 1, sizeof *out->outputs);
    if (!out->outputs) return false;
    out->n_outputs = no;
    const char *p = rec.detail;
    for (int i = 0; i < no; i++) {
        int used = 0;
        const korch_value *v = &g->values[g->outputs[i]];
        out->outputs[i].name = strdup(v->name ? v->name : "");
        if (!out->outputs[i].name ||
            sscanf(p, "%lg %lg;%n", &out->outputs[i].worst_ratio, &out->outputs[i].max_abs, &used) != 2 || !used) {
            korch_plan_check_free(out);
            memset(out, 0, sizeof *out);
            out->bad_kernel = -1;
            return false; /* a record that does not parse is no record */
        }
        p += used;
    }
    out->ok = true;
    snprintf(out->detail, sizeof out->detail, "the recorded check of this same plan");
    return true;
}

void korch_plan_verdict_store(const korch_plan *plan, const korch_graph *g, const char *model_sha256,
                              const korch_verify_options *o, const korch_plan_check *c) {
    char key[65], machine[65];
    if (!c->ok || !model_sha256 || !*model_sha256 || o->inputs || !check_key(plan, g, model_sha256, o, key, machine))
        return;
    korch_verdict_record rec = {.worst_ratio = 0};
    snprintf(rec.verdict, sizeof rec.verdict, "verified");
    size_t len = 0;
    for (int i = 0; i < c->n_outputs; i++) {
        const korch_plan_output_check *oc = &c->outputs[i];
        int n = snprintf(rec.detail + len, sizeof rec.detail - len, "%.6g %.6g;", oc->worst_ratio, oc->max_abs);
        if (n < 0 || (size_t)n >= sizeof rec.detail - len) return; /* too many outputs to record: check next time */
        len += (size_t)n;
        if (oc->worst_ratio > rec.worst_ratio) rec.worst_ratio = oc->worst_ratio;
        if (oc->max_abs > rec.max_abs) rec.max_abs = oc->max_abs;
    }
    korch_profile_db *db = NULL;
    if (korch_profile_db_open(o->build ? o->build->db_path : NULL, o->build ? o->build->db_busy_ms : 0, &db) != KORCH_OK) {
        korch_error_clear();
        return;
    }
    if (korch_profile_db_put_verdict(db, "plan", key, "", machine, &rec) != KORCH_OK) korch_error_clear();
    korch_profile_db_close(db);
}
