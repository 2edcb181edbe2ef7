/* The oneDNN backend's implementation of backend.h: supports, build, and the
 * helpers tests and benchmarks use. Profiling is in dnnl_profile.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dnnl/dnnl_backend.h"
#include "backend/dnnl/dnnl_internal.h"

static int threads_of(const korch_profile_options *o) { return o && o->threads > 0 ? o->threads : omp_get_max_threads(); }

/* Whether some variant of d has an implementation dnnl_quirks.c accepts.
 * Asked only of the kernels where the answer depends on the CPU: grouped
 * convolutions with a binary post-op, bf16 convolutions with one, and
 * convolutions with one whose operand is not per tensor or per channel,
 * for which oneDNN may pick gemm:jit in every variant (quirks 2, 3 and 5).
 * On Zen 4 it does for korch-difftest seed 117 (a 4-group convolution with
 * a bias and a Min) and seed 25932 (a 5x5 convolution over a 1x1 image
 * with a full-tensor Add): without this an estimated plan chose the kernel
 * and then could not build it; elsewhere profiling finds out, at the cost
 * of a failed measurement. Only primitive descriptors are created (no
 * JIT, no weights reordered): well under a millisecond. */
static bool buildable(const dn_desc *d, char *reason, size_t size) {
    bool binary = false, positional = false;
    for (int i = 0; i < d->n_post; i++) {
        const dn_post *p = &d->post[i];
        if (p->kind != DN_POST_BINARY) continue;
        binary = true;
        for (int j = 0; j < p->operand.ndims; j++) positional = positional || (j != 1 && p->operand.dims[j] > 1);
    }
    if (d->op == KORCH_LINEAR_MATMUL || !binary || (d->params.group <= 1 && !d->params.bf16 && !positional))
        return true;
    char impl[128];
    if (dn_variant_buildable(d, omp_get_max_threads(), impl, sizeof impl) == KORCH_OK) return true;
    if (reason && size) snprintf(reason, size, "no variant oneDNN computes right here: %s", korch_last_error());
    korch_error_clear();
    return false;
}

bool korch_dnnl_supports(const korch_kernel_spec *spec, char *reason, size_t size) {
    dn_desc d;
    return dn_analyze(spec, &d, reason, size) && buildable(&d, reason, size);
}

korch_status korch_dnnl_describe(const korch_kernel_spec *spec, char *out, size_t size) {
    dn_desc d;
    char reason[256];
    if (!dn_analyze(spec, &d, reason, sizeof reason)) return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN: %s", reason);
    snprintf(out, size, "%s", d.text);
    return KORCH_OK;
}

bool korch_dnnl_variants(const korch_kernel_spec *spec, int threads, char *out, size_t size, char *reason,
                         size_t reason_size) {
    dn_desc d;
    if (!dn_analyze(spec, &d, reason, reason_size)) return false;
    dn_variant v[DN_MAX_VARIANTS];
    int n = dn_variants(&d, threads > 0 ? threads : omp_get_max_threads(), NULL, v, DN_MAX_VARIANTS);
    size_t len = 0;
    if (size) out[0] = '\0';
    for (int i = 0; i < n && len < size; i++) {
        char text[64];
        dn_variant_format(&v[i], text, sizeof text);
        len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ";" : "", text);
    }
    return true;
}

static korch_status kernel_run(korch_kernel *k, void *const *inputs, void *const *outputs) {
    return dn_kernel_run(k->state, inputs, outputs);
}

static void kernel_destroy(korch_kernel *k) {
    dn_kernel_free(k->state);
    k->state = NULL;
}


korch_status korch_dnnl_build(const korch_kernel_spec *specs, const char *const *schedules, int n,
                              const korch_profile_options *options, korch_kernel **kernels) {
    korch_status st = KORCH_OK;
    for (int i = 0; i < n; i++) kernels[i] = NULL;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        dn_desc d;
        char reason[256];
        if (!dn_analyze(&specs[i], &d, reason, sizeof reason)) {
            st = korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN kernel %d: %s", i, reason);
            break;
        }
        const char *sched = schedules ? schedules[i] : NULL;
        dn_variant v;
        if (sched && *sched && !dn_variant_parse(sched, &v)) {
            st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "oneDNN kernel %d (%s): bad schedule \"%.64s\"", i, d.text,
                             sched);
            break;
        }
        korch_kernel *k = calloc(1, sizeof *k);
        if (!k) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN backend: out of memory");
            break;
        }
        char impl[128], fmt[40];
        dn_kernel *dk = NULL;
        /* no schedule (estimated latencies): dn_kernel_create_untimed, in the
         * profiler's order of preference except that very small kernels try
         * one thread first */
        if (sched && *sched) st = dn_kernel_create(&d, &v, threads_of(options), &dk, impl, sizeof impl);
        else
            st = dn_kernel_create_untimed(&d, threads_of(options), options ? options->dnnl_variants : NULL, &v, &dk,
                                          impl, sizeof impl);
        if (st != KORCH_OK) {
            free(k);
            st = korch_error_prefix(st, "oneDNN kernel %d", i);
            break;
        }
        dn_variant_format(&v, fmt, sizeof fmt);
        k->backend = KORCH_BACKEND_DNNL;
        snprintf(k->impl, sizeof k->impl, "dnnl %.110s %.36s", impl, fmt);
        k->state = dk;
        int copied = dn_kernel_copied_weights(dk);
        if (copied >= 0 && copied < 64) k->inputs_copied = 1ull << copied;
        k->run = kernel_run;
        k->destroy = kernel_destroy;
        kernels[i] = k;
        if (dn_impl_is_reference(impl))
            fprintf(stderr, "korch dnnl: warning: %s runs oneDNN's reference implementation (%s): slow\n", d.text,
                    impl);
    }
    if (st != KORCH_OK)
        for (int i = 0; i < n; i++) {
            korch_kernel_destroy(kernels[i]);
            kernels[i] = NULL;
        }
    return st;
}

static korch_status profile(const korch_kernel_spec *specs, int n, const korch_profile_options *options,
                            korch_profile_result *results) {
    return korch_dnnl_profile(specs, n, options, results, NULL);
}

const korch_backend_ops korch_backend_ops_dnnl = {
    .name = "dnnl",
    .supports = korch_dnnl_supports,
    .profile = profile,
    .build = korch_dnnl_build,
    .identity = korch_dnnl_identity,
};
