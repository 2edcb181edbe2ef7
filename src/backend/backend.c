/* Backend dispatch: each call goes through the table the backend of `kind`
 * registered (backend_list.h); this file names no backend. */
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "backend/backend.h"
#include "core/half.h"

/* The registered backends (backend_list.h), indexed by kind. */
#define KORCH_BACKEND_DECLARE(KIND, name) extern const korch_backend_ops korch_backend_ops_##name;
KORCH_BACKEND_LIST(KORCH_BACKEND_DECLARE)
#undef KORCH_BACKEND_DECLARE

static const korch_backend_ops *const backends[KORCH_BACKEND_COUNT] = {
#define KORCH_BACKEND_ENTRY(KIND, name) [KORCH_BACKEND_##KIND] = &korch_backend_ops_##name,
    KORCH_BACKEND_LIST(KORCH_BACKEND_ENTRY)
#undef KORCH_BACKEND_ENTRY
};

static const korch_backend_ops *backend_of(korch_backend_kind kind) {
    if ((unsigned)kind < KORCH_BACKEND_COUNT) return backends[kind];
    korch_error(KORCH_ERR_INVALID_ARGUMENT, "unknown backend kind %d", (int)kind);
    return NULL;
}

const char *korch_backend_name(korch_backend_kind kind) {
    return (unsigned)kind < KORCH_BACKEND_COUNT ? backends[kind]->name : "?";
}

bool korch_backend_from_name(const char *name, korch_backend_kind *kind) {
    for (int k = 0; name && k < KORCH_BACKEND_COUNT; k++)
        if (strcmp(backends[k]->name, name) == 0) {
            *kind = (korch_backend_kind)k;
            return true;
        }
    return false;
}

bool korch_backend_supports(korch_backend_kind kind, const korch_kernel_spec *spec, char *reason, size_t size) {
    const korch_backend_ops *b = backend_of(kind);
    if (b) return b->supports(spec, reason, size);
    if (reason && size) snprintf(reason, size, "%s", korch_last_error());
    return false;
}

korch_status korch_backend_profile(korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                   const korch_profile_options *options, korch_profile_result *results) {
    if (n < 0 || (n > 0 && (!specs || !results)))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_backend_profile: bad arguments");
    const korch_backend_ops *b = backend_of(kind);
    return b ? b->profile(specs, n, options, results) : KORCH_ERR_INVALID_ARGUMENT;
}

/* ---- fault injection (tests) ---------------------------------------------- */

static korch_fault_fn fault_fn;
static void *fault_user;

void korch_backend_set_fault(korch_fault_fn fn, void *user) {
    fault_fn = fn;
    fault_user = user;
}

typedef struct faulty {
    korch_kernel *inner;
    korch_fault fault;
    int n_outputs;
    int64_t elements; /* of output 0: float32, (bytes) uint8/int8 or (half) float16/bfloat16 */
    bool bytes;
    korch_dtype half; /* float16 / bfloat16 output, else undefined */
    float *scratch;   /* ACCUMULATE: the true result, added to the buffer (float32 and half) */
} faulty;

static korch_status faulty_run(korch_kernel *k, void *const *inputs, void *const *outputs) {
    faulty *f = k->state;
    if (f->fault == KORCH_FAULT_ACCUMULATE && f->scratch) {
        void *outs[64];
        for (int i = 1; i < f->n_outputs; i++) outs[i] = outputs[i];
        outs[0] = f->scratch;
        KORCH_TRY(f->inner->run(f->inner, inputs, outs));
        for (int64_t i = 0; i < f->elements; i++) {
            if (f->half) {
                const void *t = f->scratch;
                korch_half_store(f->half, outputs[0], i,
                                 (double)korch_half_load(f->half, outputs[0], i) + korch_half_load(f->half, t, i));
            } else {
                ((float *)outputs[0])[i] += f->scratch[i];
            }
        }
        return KORCH_OK;
    }
    KORCH_TRY(f->inner->run(f->inner, inputs, outputs));
    if (f->bytes) { /* a quantized (uint8/int8) output: the same faults, in steps */
        uint8_t *q = outputs[0];
        if (f->fault == KORCH_FAULT_SCALE)
            for (int64_t i = 0; i < f->elements; i++) q[i] = (uint8_t)(q[i] / 2 + 7);
        else if (f->elements > 0)
            q[f->elements / 2] ^= 0x10; /* one element off by 16 steps */
        return KORCH_OK;
    }
    if (f->half) { /* the same faults, through float */
        if (f->fault == KORCH_FAULT_SCALE)
            for (int64_t i = 0; i < f->elements; i++)
                korch_half_store(f->half, outputs[0], i, 1.5 * korch_half_load(f->half, outputs[0], i) + 0.25);
        else if (f->elements > 0)
            korch_half_store(f->half, outputs[0], f->elements / 2,
                             korch_half_load(f->half, outputs[0], f->elements / 2) + 1.0);
        return KORCH_OK;
    }
    float *y = outputs[0];
    if (f->fault == KORCH_FAULT_SCALE)
        for (int64_t i = 0; i < f->elements; i++) y[i] = 1.5f * y[i] + 0.25f;
    else if (f->elements > 0)
        y[f->elements / 2] += 1.0f; /* one element off */
    return KORCH_OK;
}

static void faulty_destroy(korch_kernel *k) {
    faulty *f = k->state;
    if (!f) return;
    korch_kernel_destroy(f->inner);
    free(f->scratch);
    free(f);
    k->state = NULL;
}

/* Wraps kernels the fault hook picks so that one element of their first
 * output comes out wrong. */
static korch_status inject_faults(korch_backend_kind kind, const korch_kernel_spec *specs, int n,
                                  korch_kernel **kernels) {
    for (int i = 0; i < n; i++) {
        korch_fault fault = kernels[i] ? fault_fn(fault_user, kind, &specs[i]) : KORCH_FAULT_NONE;
        if (fault == KORCH_FAULT_NONE || specs[i].n_outputs > 64) continue;
        const korch_pvalue *out = &specs[i].pg->values[specs[i].outputs[0]];
        korch_kernel *w = calloc(1, sizeof *w);
        faulty *f = calloc(1, sizeof *f);
        if (!w || !f) {
            free(w);
            free(f);
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "fault injection: out of memory");
        }
        f->inner = kernels[i];
        f->fault = fault;
        f->n_outputs = specs[i].n_outputs;
        f->bytes = out->dtype == KORCH_DTYPE_UINT8 || out->dtype == KORCH_DTYPE_INT8;
        f->half = korch_dtype_is_half(out->dtype) ? out->dtype : KORCH_DTYPE_UNDEFINED;
        f->elements = out->dtype == KORCH_DTYPE_FLOAT32 || f->bytes || f->half ? korch_shape_numel(&out->shape) : 0;
        if (fault == KORCH_FAULT_ACCUMULATE && f->bytes) f->elements = 0; /* float outputs only */
        if (fault == KORCH_FAULT_ACCUMULATE && f->elements > 0) f->scratch = calloc((size_t)f->elements, sizeof(float));
        *w = *kernels[i];
        snprintf(w->impl, sizeof w->impl, "%.140s (FAULTY)", kernels[i]->impl);
        w->state = f;
        w->run = faulty_run;
        w->destroy = faulty_destroy;
        kernels[i] = w;
    }
    return KORCH_OK;
}

korch_status korch_backend_build(korch_backend_kind kind, const korch_kernel_spec *specs, const char *const *schedules,
                                 int n, const korch_profile_options *options, korch_kernel **kernels) {
    if (n < 0 || (n > 0 && (!specs || !kernels)))
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "korch_backend_build: bad arguments");
    for (int i = 0; i < n; i++) kernels[i] = NULL;
    const korch_backend_ops *b = backend_of(kind);
    if (!b) return KORCH_ERR_INVALID_ARGUMENT; /* backend_of recorded the message */
    korch_status st = b->build(specs, schedules, n, options, kernels);
    if (st == KORCH_OK && fault_fn) st = inject_faults(kind, specs, n, kernels);
    return st;
}

bool korch_backend_untimed_schedule(korch_backend_kind kind, const korch_kernel_spec *spec, char *out, size_t size) {
    if (size) out[0] = '\0';
    const korch_backend_ops *b = backend_of(kind);
    if (!b) {
        if (size) snprintf(out, size, "%s", korch_last_error());
        return false;
    }
    return b->untimed_schedule ? b->untimed_schedule(spec, out, size) : true;
}

void korch_kernel_destroy(korch_kernel *k) {
    if (!k) return;
    if (k->destroy) k->destroy(k);
    free(k);
}

const char *korch_backend_identity(korch_backend_kind kind, const korch_profile_options *options) {
    return (unsigned)kind < KORCH_BACKEND_COUNT ? backends[kind]->identity(options) : "?";
}
