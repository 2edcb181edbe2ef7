/* The reference backend: a kernel is its nodes' sub-graph, run by the
 * primitive interpreter. Timing follows the same rules as the real backends
 * (a warm-up run, then the median of repeats) so that REF kernels can sit in
 * a plan beside generated ones with comparable latencies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ref/ref_backend.h"
#include "ir/nodeset.h"
#include "profile/profile.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* bump when the interpreter's speed changes enough to invalidate timings */
#define KORCH_REF_VERSION 2 /* 2: linear primitives through the reference SGEMM */

typedef struct ref_state {
    korch_pgraph *sub;
    korch_tensor *inputs; /* views of the sub-graph inputs, rebound per run */
    korch_tensor *outputs; /* filled by the interpreter */
    /* run() gets one buffer per spec input, constants included; the
     * sub-graph borrows constants, so its input i is spec input slot[i] */
    int *slot;
} ref_state;

bool korch_ref_supports(const korch_kernel_spec *spec, char *reason, size_t size) {
    (void)spec;
    if (reason && size) reason[0] = '\0';
    return true;
}

static korch_status ref_run(korch_kernel *k, void *const *inputs, void *const *outputs) {
    ref_state *s = k->state;
    for (int i = 0; i < s->sub->n_inputs; i++) s->inputs[i].data = inputs[s->slot[i]];
    korch_status st = korch_pgraph_interpret(s->sub, s->inputs, s->outputs);
    for (int i = 0; i < s->sub->n_outputs; i++) {
        if (st == KORCH_OK) memcpy(outputs[i], s->outputs[i].data, korch_tensor_bytes(&s->outputs[i]));
        korch_tensor_free(&s->outputs[i]);
    }
    return st;
}

static void ref_destroy(korch_kernel *k) {
    ref_state *s = k->state;
    if (!s) return;
    korch_pgraph_free(s->sub);
    free(s->inputs);
    free(s->outputs);
    free(s->slot);
    free(s);
    k->state = NULL;
}

static korch_status build_one(const korch_kernel_spec *spec, korch_kernel **out) {
    *out = NULL;
    korch_kernel *k = calloc(1, sizeof *k);
    ref_state *s = calloc(1, sizeof *s);
    if (!k || !s) {
        free(k);
        free(s);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "reference backend: out of memory");
    }
    k->backend = KORCH_BACKEND_REF;
    snprintf(k->impl, sizeof k->impl, "ref interpreter (%d primitives)", spec->n_nodes);
    k->state = s;
    k->run = ref_run;
    k->destroy = ref_destroy;
    korch_status st = korch_pgraph_extract(spec, NULL, NULL, &s->sub);
    if (st == KORCH_OK) {
        s->inputs = calloc((size_t)s->sub->n_inputs + 1, sizeof *s->inputs);
        s->outputs = calloc((size_t)s->sub->n_outputs + 1, sizeof *s->outputs);
        s->slot = calloc((size_t)s->sub->n_inputs + 1, sizeof *s->slot);
        if (!s->inputs || !s->outputs || !s->slot)
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "reference backend: out of memory");
    }
    if (st == KORCH_OK) {
        for (int i = 0; i < s->sub->n_inputs; i++) {
            const korch_pvalue *v = &s->sub->values[s->sub->inputs[i]];
            s->inputs[i] = (korch_tensor){.dtype = v->dtype, .shape = v->shape};
        }
        /* korch_pgraph_extract adds the non-constant spec inputs in order */
        int j = 0;
        for (int in = 0; in < spec->n_inputs; in++)
            if (!spec->pg->values[spec->inputs[in]].is_constant) s->slot[j++] = in;
    }
    if (st != KORCH_OK) {
        ref_destroy(k);
        free(k);
        return st;
    }
    *out = k;
    return KORCH_OK;
}

korch_status korch_ref_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                             const korch_profile_options *options, korch_kernel **kernels) {
    (void)schedules; /* one implementation, nothing to choose */
    (void)options;
    for (int i = 0; i < n; i++) kernels[i] = NULL;
    for (int i = 0; i < n; i++) {
        korch_status st = build_one(&specs[i], &kernels[i]);
        if (st != KORCH_OK) {
            for (int j = 0; j < i; j++) {
                ref_destroy(kernels[j]);
                free(kernels[j]);
                kernels[j] = NULL;
            }
            return korch_error_prefix(st, "reference backend: kernel %d", i);
        }
    }
    return KORCH_OK;
}

/* Benign data: floats in [0.5, 1.5) (no NaN from log or sqrt), integers and
 * booleans zero (always valid as indices). */
static void fill(korch_tensor *t, uint64_t seed) {
    int64_t n = korch_tensor_numel(t);
    if (t->dtype != KORCH_DTYPE_FLOAT32) return; /* calloc'd zeros */
    float *f = t->data;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f[i] = 0.5f + (float)(seed >> 40) / (float)(1u << 24);
    }
}

typedef struct timed_kernel {
    korch_kernel *k;
    void **ptrs;
    int n_inputs;
} timed_kernel;

static korch_status run_timed(void *ctx, int iteration) {
    (void)iteration;
    timed_kernel *t = ctx;
    return t->k->run(t->k, t->ptrs, t->ptrs + t->n_inputs);
}

/* Times one kernel with the shared methodology (docs/profiling.md). */
static korch_status time_one(const korch_kernel_spec *spec, korch_profile_monitor *monitor, int scrub_mib, korch_profile_result *r,
                             korch_profile_quality *quality) {
    korch_kernel *k = NULL;
    KORCH_TRY(build_one(spec, &k));
    int ni = spec->n_inputs, no = spec->n_outputs;
    korch_tensor *bufs = calloc((size_t)(ni + no) + 1, sizeof *bufs);
    void **ptrs = calloc((size_t)(ni + no) + 1, sizeof *ptrs);
    korch_status st =
        bufs && ptrs ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "reference backend: out of memory");
    for (int i = 0; i < ni + no && st == KORCH_OK; i++) {
        int v = i < ni ? spec->inputs[i] : spec->outputs[i - ni];
        const korch_pvalue *pv = &spec->pg->values[v];
        if (i < ni && pv->is_constant) {
            ptrs[i] = pv->constant.data;
            continue;
        }
        st = korch_tensor_alloc(&bufs[i], pv->dtype, &pv->shape);
        if (st == KORCH_OK) {
            fill(&bufs[i], 0x1234u + (uint64_t)i);
            ptrs[i] = bufs[i].data;
        }
    }
    korch_timing timing;
    timed_kernel t = {.k = k, .ptrs = ptrs, .n_inputs = ni};
    /* REF kernels are the slow fallback (naive convolutions can take a
     * second): fewer repeats than the generated kernels get, same median */
    korch_timer_options o = {.warmup_runs = 1, .warmup_ms = 0, .min_repeats = 3, .max_repeats = 50, .target_ms = 20,
                             .monitor = monitor, .scrub_mib = scrub_mib};
    if (st == KORCH_OK) st = korch_profile_time(run_timed, &t, &o, &timing);
    if (st == KORCH_OK) {
        r->latency_ms = timing.median_ms;
        r->spread_ms = timing.spread_ms;
        r->provisional = timing.quality.provisional;
        *quality = timing.quality;
    }
    for (int i = 0; bufs && i < ni + no; i++) korch_tensor_free(&bufs[i]);
    free(bufs);
    free(ptrs);
    ref_destroy(k);
    free(k);
    return st;
}

korch_status korch_ref_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                               korch_profile_result *results) {
    /* measurements go to the profile database like everyone else's; without
     * a usable database REF just times again next time */
    int threads = options && options->threads > 0 ? options->threads : 1;
#ifdef _OPENMP
    if (!(options && options->threads > 0)) threads = omp_get_max_threads();
#endif
    char machine[33], machine_text[1024];
    korch_profile_db *db = NULL;
    korch_profile_monitor *monitor = NULL;
    if (n > 0 &&
        korch_machine_fingerprint(threads, "none", options ? options->scrub_mib : 0, machine, machine_text,
                                  sizeof machine_text) == KORCH_OK &&
        korch_profile_db_open(options ? options->db_path : NULL, options ? options->db_busy_ms : 0, &db) == KORCH_OK) {
        korch_profile_db_put_machine(db, machine, machine_text);
        if (korch_profile_db_watch(db, threads, options ? options->fresh_after : 0, &monitor) != KORCH_OK)
            monitor = NULL;
    }
    korch_error_clear();
    for (int i = 0; i < n; i++) {
        korch_profile_result *r = &results[i];
        memset(r, 0, sizeof *r);
        snprintf(r->schedule, sizeof r->schedule, "ref");
        snprintf(r->impl, sizeof r->impl, "ref interpreter (%d primitives)", specs[i].n_nodes);
        char sig[40];
        snprintf(sig, sizeof sig, "ref%d-%016llx", KORCH_REF_VERSION,
                 (unsigned long long)korch_kernel_signature(&specs[i]));
        korch_profile_record rec;
        bool found = false;
        if (db && korch_profile_db_get_best(db, "ref", sig, machine, &rec, &found) == KORCH_OK && found) {
            r->latency_ms = rec.latency_ms;
            r->spread_ms = rec.spread_ms;
            r->from_database = true;
            r->provisional = rec.quality.provisional;
            continue;
        }
        korch_profile_quality quality = {.wait = -1};
        r->status = time_one(&specs[i], monitor, options ? options->scrub_mib : 0, r, &quality);
        if (r->status != KORCH_OK) {
            snprintf(r->reason, sizeof r->reason, "%s", korch_last_error());
            continue;
        }
        rec = (korch_profile_record){.latency_ms = r->latency_ms,
                                     .spread_ms = r->spread_ms,
                                     .default_ms = r->latency_ms,
                                     .trials = 1,
                                     .quality = quality};
        snprintf(rec.schedule, sizeof rec.schedule, "ref");
        if (db) korch_profile_db_put_best(db, "ref", sig, machine, &rec);
    }
    korch_profile_db_unwatch(db, monitor);
    korch_profile_db_close(db);
    return KORCH_OK;
}

static const char *identity(const korch_profile_options *options) {
    (void)options;
    return "interpreter";
}

const korch_backend_ops korch_backend_ops_ref = {
    .name = "ref",
    .supports = korch_ref_supports,
    .profile = korch_ref_profile,
    .build = korch_ref_build,
    .identity = identity,
};
