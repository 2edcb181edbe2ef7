/* Profiling oneDNN kernels: variants, the reference-implementation policy,
 * timing and the profile database (shared with cgen: src/profile/).
 *
 * Per distinct signature: look up the database; otherwise build every
 * variant (layout choice, dn_variants), read the implementation oneDNN
 * picked, time the non-reference ones with the trial timer, re-time the
 * winner with the full methodology (docs/profiling.md) and store it.
 *
 * Reference implementations (impl "ref:...") are never profiled as if they
 * were a fast path: a variant that gets one is dropped when another variant
 * has a real kernel. When none has, a fused chain or absorbed transposes
 * are rejected (the orchestrator runs them elsewhere), and a bare linear primitive is
 * timed (its true, slow latency), marked "REFERENCE" in impl and reported on
 * stderr. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dnnl/dnnl_backend.h"
#include "backend/dnnl/dnnl_internal.h"
#include "core/memory.h"
#include "profile/profile.h"

/* Timing buffers: copies of the non-constant inputs and the output, as many
 * as korch_profile_buffer_sets says (the rule both profilers share), so each
 * run finds its operands in L3 or DRAM as inside a plan. */
typedef struct bufset {
    int n_sets, per;
    void **ptrs; /* n_sets * per: inputs then the output */
    void **owned;
    int n_owned;
} bufset;

static void bufset_free(bufset *b) {
    for (int i = 0; i < b->n_owned; i++) free(b->owned[i]);
    free(b->owned);
    free(b->ptrs);
    memset(b, 0, sizeof *b);
}

static korch_status bufset_alloc(const korch_kernel_spec *spec, bufset *b) {
    memset(b, 0, sizeof *b);
    const korch_pgraph *pg = spec->pg;
    size_t footprint = 0, input_bytes = 0;
    for (int i = 0; i < spec->n_inputs + spec->n_outputs; i++) {
        const korch_pvalue *v = &pg->values[i < spec->n_inputs ? spec->inputs[i] : spec->outputs[i - spec->n_inputs]];
        if (i < spec->n_inputs && v->is_constant) continue;
        size_t bytes = (size_t)korch_shape_numel(&v->shape) * korch_dtype_size(v->dtype);
        footprint += bytes;
        if (i < spec->n_inputs) input_bytes += bytes;
    }
    b->n_sets = korch_profile_buffer_sets(footprint, input_bytes);
    b->per = spec->n_inputs + spec->n_outputs;
    b->ptrs = calloc((size_t)(b->n_sets * b->per), sizeof *b->ptrs);
    b->owned = calloc((size_t)(b->n_sets * b->per), sizeof *b->owned);
    if (!b->ptrs || !b->owned) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN profiling buffers: out of memory");
    uint64_t rng = 0x853c49e6748fea9bull;
    for (int s = 0; s < b->n_sets; s++)
        for (int i = 0; i < b->per; i++) {
            const korch_pvalue *v =
                &pg->values[i < spec->n_inputs ? spec->inputs[i] : spec->outputs[i - spec->n_inputs]];
            if (i < spec->n_inputs && v->is_constant) {
                b->ptrs[s * b->per + i] = v->constant.data;
                continue;
            }
            int64_t n = korch_shape_numel(&v->shape);
            size_t bytes = (size_t)n * korch_dtype_size(v->dtype);
            float *p = korch_buffer_alloc(bytes + 64);
            if (!p) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN profiling buffers: out of memory");
            b->owned[b->n_owned++] = p;
            b->ptrs[s * b->per + i] = p;
            /* first touch here; [0.5, 1.5] keeps logs and roots finite; the
             * 8-bit sources of int8 kernels: zeros (their time does not
             * depend on the values) */
            if (v->dtype != KORCH_DTYPE_FLOAT32) memset(p, 0, bytes);
            for (int64_t e = 0; e < n && v->dtype == KORCH_DTYPE_FLOAT32; e++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                p[e] = 0.5f + (float)(rng >> 40) / (float)(1u << 24);
            }
        }
    return KORCH_OK;
}

typedef struct timed {
    dn_kernel *k;
    bufset *b;
    const korch_kernel_spec *spec;
} timed;

static korch_status run_once(void *ctx, int iteration) {
    timed *t = ctx;
    void **set = t->b->ptrs + (size_t)(iteration % t->b->n_sets) * (size_t)t->b->per;
    return dn_kernel_run(t->k, set, set + t->spec->n_inputs);
}

/* Cold constants: before every timed run the kernel's weights (its own
 * reordered copy, or the constant it reads in place), bias and post-op
 * operands leave the caches. Timed back to back they would stay in L2/L3,
 * but inside a plan every other kernel of the model runs between two runs
 * of this one: `korch run --profile` measured MobileNetV2's classifier
 * (5 MB of weights) at 232 us in the plan against 32 us profiled warm
 * (docs/profiling.md, "Cache state"). Non-constant operands already rotate
 * through buffer sets larger than L2 (bufset). */
static void evict_constants(void *ctx) {
    timed *t = ctx;
    dn_kernel_evict_owned_weights(t->k);
    int copied = dn_kernel_copied_weights(t->k);
    const korch_pgraph *pg = t->spec->pg;
    for (int i = 0; i < t->spec->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[t->spec->inputs[i]];
        if (!v->is_constant || i == copied || !v->constant.data) continue;
        korch_cache_evict(v->constant.data, (size_t)korch_shape_numel(&v->shape) * korch_dtype_size(v->dtype));
    }
}

/* ---- one spec ----------------------------------------------------------------- */

typedef struct session {
    korch_profile_db *db;
    korch_profile_monitor *monitor; /* the machine state around every measurement */
    const char *machine;
    int threads;
    const korch_profile_options *options; /* dnnl_variants, dnnl_log, scrub_mib (may be NULL) */
    korch_dnnl_stats *stats; /* what this call did */
} session;

static korch_status profile_one(session *S, const korch_kernel_spec *spec, const dn_desc *d, korch_profile_result *r) {
    dn_variant vs[DN_MAX_VARIANTS];
    int nv = dn_variants(d, S->threads, S->options ? S->options->dnnl_variants : NULL, vs, DN_MAX_VARIANTS);
    int scrub_mib = S->options ? S->options->scrub_mib : 0;
    bufset b = {0};
    korch_status st = bufset_alloc(spec, &b);
    korch_timer_options trial = {.warmup_runs = 2, .warmup_ms = 2, .min_repeats = 5, .max_repeats = 50, .target_ms = 15,
                                 .before_run = evict_constants, .monitor = S->monitor, .scrub_mib = scrub_mib};
    int best = -1, ref_variant = -1;
    double best_ms = 0, first_ms = 0; /* first_ms: the default (first timed) variant */
    char impls[DN_MAX_VARIANTS][128] = {{0}}, why[256] = "";
    for (int i = 0; i < nv && st == KORCH_OK; i++) {
        dn_kernel *k = NULL;
        S->stats->variants_tried++;
        korch_status cs = dn_kernel_create(d, &vs[i], S->threads, &k, impls[i], sizeof impls[i]);
        if (cs != KORCH_OK) {
            if (cs == KORCH_ERR_OUT_OF_MEMORY) st = cs;
            snprintf(why, sizeof why, "%s", korch_last_error());
            continue;
        }
        if (dn_impl_is_reference(impls[i])) {
            S->stats->reference_rejected++;
            if (ref_variant < 0) ref_variant = i;
            dn_kernel_free(k);
            continue;
        }
        timed t = {.k = k, .b = &b, .spec = spec};
        korch_timing tm;
        st = korch_profile_time(run_once, &t, &trial, &tm);
        dn_kernel_free(k);
        if (st != KORCH_OK) break;
        S->stats->timed++;
        char sched[40];
        dn_variant_format(&vs[i], sched, sizeof sched);
        if (S->options && S->options->dnnl_log)
            fprintf(stderr, "korch dnnl: %s [%s] %s: median %.4f ms, min %.4f ms, %d runs\n", d->text, sched, impls[i],
                    tm.median_ms, tm.min_ms, tm.repeats);
        korch_profile_record trec = {.latency_ms = tm.median_ms, .spread_ms = tm.spread_ms, .quality = tm.quality};
        snprintf(trec.schedule, sizeof trec.schedule, "%s", sched);
        korch_profile_db_put_trial_record(S->db, "dnnl", d->sig, S->machine, &trec);
        /* one thread must win clearly: mistaking a parallel kernel for a
         * one-thread one costs up to the thread count, the other way round
         * only a wake-up */
        if (first_ms == 0) first_ms = tm.median_ms;
        double ms = vs[i].threads == 1 ? tm.median_ms / 0.9 : tm.median_ms;
        if (best < 0 || ms < best_ms) {
            best = i;
            best_ms = ms;
        }
    }
    bool reference = false;
    if (st == KORCH_OK && best < 0 && ref_variant >= 0) {
        /* the chain, or the transposes, then run as separate kernels */
        if (d->n_post > 0 || d->bias_slot >= 0 || d->strided_io) {
            r->status = KORCH_ERR_UNSUPPORTED;
            snprintf(r->reason, sizeof r->reason,
                     "oneDNN has only its reference implementation (%.30s) for %.150s: not fused", impls[ref_variant],
                     d->text);
            bufset_free(&b);
            return KORCH_OK;
        }
        best = ref_variant;
        reference = true;
        S->stats->reference_kept++;
    }
    if (st == KORCH_OK && best < 0) {
        bufset_free(&b);
        r->status = KORCH_ERR_UNSUPPORTED;
        snprintf(r->reason, sizeof r->reason, "no oneDNN primitive for %.100s: %.120s", d->text, why);
        return KORCH_OK;
    }
    /* the winner, with the full methodology */
    dn_kernel *k = NULL;
    char impl[128];
    if (st == KORCH_OK) st = dn_kernel_create(d, &vs[best], S->threads, &k, impl, sizeof impl);
    korch_timing tm = {0};
    if (st == KORCH_OK) {
        timed t = {.k = k, .b = &b, .spec = spec};
        korch_timer_options o = korch_timer_defaults();
        o.before_run = evict_constants;
        o.monitor = S->monitor;
        o.scrub_mib = scrub_mib;
        st = korch_profile_time(run_once, &t, &o, &tm);
    }
    dn_kernel_free(k);
    bufset_free(&b);
    if (st != KORCH_OK) return st;
    char sched[40];
    dn_variant_format(&vs[best], sched, sizeof sched);
    r->status = KORCH_OK;
    r->latency_ms = tm.median_ms;
    r->spread_ms = tm.spread_ms;
    r->provisional = tm.quality.provisional;
    snprintf(r->schedule, sizeof r->schedule, "%s impl=%s%s", sched, impl, reference ? " REFERENCE" : "");
    snprintf(r->impl, sizeof r->impl, "dnnl %.100s %.36s%s", impl, sched, reference ? " REFERENCE (slow)" : "");
    snprintf(r->key, sizeof r->key, "%s", d->sig);
    if (reference)
        fprintf(stderr,
                "korch dnnl: warning: %s: oneDNN offers only its reference implementation (%s), %.3f ms; profiled "
                "with its true latency and marked REFERENCE\n",
                d->text, impl, tm.median_ms);
    korch_profile_record rec = {.latency_ms = tm.median_ms, .spread_ms = tm.spread_ms, .default_ms = first_ms,
                                .trials = nv, .quality = tm.quality};
    snprintf(rec.schedule, sizeof rec.schedule, "%s", r->schedule);
    return korch_profile_db_put_best(S->db, "dnnl", d->sig, S->machine, &rec);
}

korch_status korch_dnnl_profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                                korch_profile_result *results, korch_dnnl_stats *stats) {
    double t0 = korch_now_s();
    korch_dnnl_stats local;
    korch_dnnl_stats *ls = stats ? stats : &local;
    memset(ls, 0, sizeof *ls);
    ls->kernels = n;
    if (n == 0) return KORCH_OK;
    session S = {.threads = options && options->threads > 0 ? options->threads : omp_get_max_threads(),
                 .options = options, .stats = ls};
    char machine[33], machine_text[1024];
    /* timed with cold constants since 2026-11-25, and matmul weights with
     * padded rows since 2026-11-27 (dnnl_weights_pad.inc): new
     * methodologies, never mixed with the timings of older databases */
    char methodology[96];
    snprintf(methodology, sizeof methodology, "%s; cold constants; padded matmul weights", dn_version());
    KORCH_TRY(korch_machine_fingerprint(S.threads, methodology, options ? options->scrub_mib : 0, machine, machine_text,
                                        sizeof machine_text));
    S.machine = machine;
    KORCH_TRY(korch_profile_db_open(options ? options->db_path : NULL, options ? options->db_busy_ms : 0, &S.db));
    korch_status st = korch_profile_db_put_machine(S.db, machine, machine_text);
    if (st == KORCH_OK) st = korch_profile_db_watch(S.db, S.threads, options ? options->fresh_after : 0, &S.monitor);
    dn_desc *descs = calloc((size_t)n, sizeof *descs);
    if (!descs) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN profiling: out of memory");
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        korch_profile_result *r = &results[i];
        memset(r, 0, sizeof *r);
        if (!dn_analyze(&specs[i], &descs[i], r->reason, sizeof r->reason)) {
            r->status = KORCH_ERR_UNSUPPORTED;
            ls->unsupported++;
            continue;
        }
        int same = -1;
        for (int j = 0; j < i && same < 0; j++)
            if (results[j].status == KORCH_OK && strcmp(descs[j].sig, descs[i].sig) == 0) same = j;
        if (same >= 0) {
            *r = results[same];
            continue;
        }
        korch_profile_record rec;
        bool found = false;
        dn_variant v;
        st = korch_profile_db_get_best(S.db, "dnnl", descs[i].sig, machine, &rec, &found);
        if (st == KORCH_OK && found && dn_variant_parse(rec.schedule, &v)) {
            r->status = KORCH_OK;
            r->latency_ms = rec.latency_ms;
            r->spread_ms = rec.spread_ms;
            r->from_database = true;
            r->provisional = rec.quality.provisional;
            snprintf(r->schedule, sizeof r->schedule, "%s", rec.schedule);
            const char *impl = strstr(rec.schedule, "impl=");
            char fmt[40];
            dn_variant_format(&v, fmt, sizeof fmt);
            snprintf(r->impl, sizeof r->impl, "dnnl %.100s %s", impl ? impl + 5 : "?", fmt);
            snprintf(r->key, sizeof r->key, "%s", descs[i].sig);
            ls->from_database++;
            continue;
        }
        if (st == KORCH_OK) st = profile_one(&S, &specs[i], &descs[i], r);
    }
    free(descs);
    korch_profile_db_unwatch(S.db, S.monitor);
    korch_profile_db_close(S.db);
    ls->total_s = korch_now_s() - t0;
    return st;
}
