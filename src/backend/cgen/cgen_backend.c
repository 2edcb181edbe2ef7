/* The cgen backend: supports / build / source. Profiling (tuning, timing and
 * the profile database) is in cgen_profile.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cgen/cgen.h"
#include "backend/cgen/cgen_backend.h"

bool korch_cgen_supports(const korch_kernel_spec *spec, char *reason, size_t size) {
    cg_kernel k;
    if (cg_kernel_from_spec(spec, &k, reason, size) != KORCH_OK) return false;
    /* emission can still refuse (index overflow, huge tables): try the default */
    cg_schedule s = cg_schedule_default(&k);
    cg_buf b = {0};
    korch_status st = cg_emit_kernel(&k, &s, "probe", &b, reason, size);
    cg_buf_free(&b);
    cg_kernel_free(&k);
    return st == KORCH_OK;
}

void cg_kernel_name(const cg_kernel *k, const cg_schedule *s, char *buf, size_t size);
void cg_kernel_name(const cg_kernel *k, const cg_schedule *s, char *buf, size_t size) {
    char text[64], h[33];
    cg_schedule_format(s, text, sizeof text);
    cg_hash_hex(text, strlen(text), h);
    snprintf(buf, size, "korch_k%.16s_%.8s", k->sig, h);
}

int cg_threads(const korch_profile_options *o);
int cg_threads(const korch_profile_options *o) {
    if (o && o->threads > 0) return o->threads;
    return omp_get_max_threads();
}

korch_status korch_cgen_source(const korch_kernel_spec *spec, const char *schedule, const korch_profile_options *options,
                               char **source) {
    *source = NULL;
    cg_kernel k;
    char reason[256];
    KORCH_TRY(cg_kernel_from_spec(spec, &k, reason, sizeof reason));
    k.stream_min_bytes = options ? options->cg_stream_min_bytes : 0;
    cg_schedule s = cg_schedule_default(&k);
    if (schedule && *schedule && !cg_schedule_parse(schedule, &s)) {
        cg_kernel_free(&k);
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "bad cgen schedule \"%.64s\"", schedule);
    }
    char name[64];
    cg_kernel_name(&k, &s, name, sizeof name);
    cg_buf b = {0};
    cg_emit_prelude(&b);
    korch_status st = cg_emit_kernel(&k, &s, name, &b, reason, sizeof reason);
    cg_kernel_free(&k);
    if (st == KORCH_OK && b.oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    if (st != KORCH_OK) {
        cg_buf_free(&b);
        return st;
    }
    *source = b.data;
    return KORCH_OK;
}

korch_status korch_cgen_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                              const korch_profile_options *options, korch_kernel **kernels) {
    if (n == 0) return KORCH_OK;
    cg_kernel *ks = calloc((size_t)n, sizeof *ks);
    cg_schedule *ss = calloc((size_t)n, sizeof *ss);
    char (*names)[64] = calloc((size_t)n, sizeof *names);
    cg_buf src = {0}, what = {0};
    cg_library *lib = NULL, **found = calloc((size_t)n, sizeof *found);
    size_t *at = calloc((size_t)n, sizeof *at), *len = calloc((size_t)n, sizeof *len);
    int *order = NULL;
    korch_status st = KORCH_OK;
    if (!ks || !ss || !names || !found || !at || !len) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        goto done;
    }
    cg_emit_prelude(&src);
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        char reason[256];
        st = cg_kernel_from_spec(&specs[i], &ks[i], reason, sizeof reason);
        if (st != KORCH_OK) {
            st = korch_error_prefix(st, "kernel spec %d", i);
            break;
        }
        ks[i].stream_min_bytes = options ? options->cg_stream_min_bytes : 0;
        ss[i] = cg_schedule_default(&ks[i]);
        const char *sched = schedules ? schedules[i] : NULL;
        if (sched && *sched && !cg_schedule_parse(sched, &ss[i])) {
            st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "bad cgen schedule \"%.64s\" for kernel %.16s", sched,
                             ks[i].sig);
            break;
        }
        cg_kernel_name(&ks[i], &ss[i], names[i], sizeof names[i]);
    }
    if (st != KORCH_OK) goto done;
    /* Each function once, in the order of their names: the source (hence
     * the object cache key, compile.c) depends on the set of kernels only,
     * not on the order the caller lists them in. Verification builds the
     * kernels a plan chooses before the plan exists, the executor builds
     * the plan's kernels in plan order; the same set then compiles once. */
    order = malloc(((size_t)n + 1) * sizeof *order);
    if (!order) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) { /* insertion sort: a plan has at most a few hundred kernels */
        int x = order[i], j = i;
        for (; j > 0 && strcmp(names[order[j - 1]], names[x]) > 0; j--) order[j] = order[j - 1];
        order[j] = x;
    }
    /* A function the tuner compiled from the same text with the same
     * command is taken from its library (registry.c), or, in another
     * process, from the cached object a link names (links.c); the others
     * compile in one unit, and are recorded in turn (the plan check builds
     * the same kernels again). Every function gets its link, so the first
     * `korch run` of a plan `korch optimize` wrote compiles nothing. */
    int missing = 0;
    for (int r = 0; r < n && st == KORCH_OK; r++) {
        int i = order[r];
        if (r > 0 && strcmp(names[order[r - 1]], names[i]) == 0) continue; /* the same function */
        char reason[256];
        cg_buf one = {0};
        st = cg_emit_kernel(&ks[i], &ss[i], names[i], &one, reason, sizeof reason);
        if (st == KORCH_OK && one.oom) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
        if (st == KORCH_OK) found[i] = cg_registry_find(one.data, one.len, options, names[i]);
        if (st == KORCH_OK && !found[i] && (found[i] = cg_link_find(one.data, one.len, options, names[i])))
            cg_registry_add(one.data, one.len, options, names[i], found[i]);
        if (st == KORCH_OK && found[i]) cg_link_keep(one.data, one.len, options, names[i], found[i]);
        if (st == KORCH_OK && !found[i]) {
            at[i] = src.len;
            len[i] = one.len;
            cg_buf_append(&src, one.data, one.len);
            cg_buf_printf(&what, "%s%s", what.len ? ", " : "", names[i]);
            missing++;
        }
        cg_buf_free(&one);
    }
    if (st == KORCH_OK && (src.oom || what.oom)) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "cgen: out of memory");
    if (st == KORCH_OK && missing) st = cg_compile(src.data, src.len, options, what.data, &lib);
    for (int i = 0; i < n && st == KORCH_OK && missing; i++)
        if (len[i]) {
            cg_registry_add(src.data + at[i], len[i], options, names[i], lib);
            cg_link_keep(src.data + at[i], len[i], options, names[i], lib);
        }
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        /* a duplicate name takes the library of its first occurrence */
        cg_library *from = lib;
        for (int j = 0; j < n; j++)
            if (found[j] && strcmp(names[j], names[i]) == 0) from = found[j];
        cg_entry fn;
        void *sym = cg_library_symbol(from, names[i]);
        memcpy(&fn, &sym, sizeof fn);
        if (!fn) {
            st = korch_error(KORCH_ERR_RUNTIME, "compiled library lacks kernel %s", names[i]);
            break;
        }
        char impl[160], text[64];
        cg_schedule_format(&ss[i], text, sizeof text);
        snprintf(impl, sizeof impl, "cgen k%.16s %s", ks[i].sig, text);
        st = cg_kernel_wrap(&ks[i], from, fn, cg_threads(options), impl, &kernels[i]);
    }
    if (st != KORCH_OK)
        for (int i = 0; i < n; i++) {
            korch_kernel_destroy(kernels[i]);
            kernels[i] = NULL;
        }
done:
    cg_library_release(lib);
    for (int i = 0; found && i < n; i++) cg_library_release(found[i]);
    free(found);
    free(at);
    free(len);
    if (ks)
        for (int i = 0; i < n; i++) cg_kernel_free(&ks[i]);
    free(ks);
    free(ss);
    free(names);
    free(order);
    cg_buf_free(&src);
    cg_buf_free(&what);
    return st;
}

static korch_status profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                            korch_profile_result *results) {
    return korch_cgen_profile(specs, n, options, results, NULL);
}

/* The default schedule, fixed when a plan is made rather than when it is
 * loaded (it follows OMP_WAIT_POLICY: schedule_space.c). */
static bool untimed_schedule(const korch_kernel_spec *spec, char *out, size_t size) {
    cg_kernel k;
    char reason[256];
    if (cg_kernel_from_spec(spec, &k, reason, sizeof reason) != KORCH_OK) {
        if (size) snprintf(out, size, "%s", reason);
        return false;
    }
    cg_schedule s = cg_schedule_default(&k);
    cg_kernel_free(&k);
    cg_schedule_format(&s, out, size);
    return true;
}

const korch_backend_ops korch_backend_ops_cgen = {
    .name = "cgen",
    .supports = korch_cgen_supports,
    .profile = profile,
    .build = korch_cgen_build,
    .identity = korch_cgen_identity,
    .untimed_schedule = untimed_schedule,
};
