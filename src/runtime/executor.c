/* The plan executor. */
#include "runtime/executor.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#define ARENA_ALIGNMENT 64

struct korch_executor {
    const korch_plan *plan;
    const korch_pgraph *pg;
    int threads;
    korch_kernel **kernels; /* one per plan kernel */
    void *arena;
    size_t arena_bytes;
    void **value_ptr; /* per pgraph value: where it lives (inputs/outputs rebound per run) */
    void **scratch; /* pointer tables for one kernel call */
    int scratch_cap;
};

static size_t value_bytes(const korch_pgraph *pg, int v) {
    korch_tensor t = {.dtype = pg->values[v].dtype, .shape = pg->values[v].shape};
    return korch_tensor_bytes(&t);
}

static korch_status build_kernels(korch_executor *ex, const korch_profile_options *options) {
    const korch_plan *plan = ex->plan;
    korch_kernel_spec *specs = malloc(((size_t)plan->n_kernels + 1) * sizeof *specs);
    const char **schedules = malloc(((size_t)plan->n_kernels + 1) * sizeof *schedules);
    int *which = malloc(((size_t)plan->n_kernels + 1) * sizeof *which);
    korch_kernel **built = malloc(((size_t)plan->n_kernels + 1) * sizeof *built);
    korch_status st = specs && schedules && which && built
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    /* one batched build call per backend */
    for (int kind = 0; kind < KORCH_BACKEND_COUNT && st == KORCH_OK; kind++) {
        int n = 0;
        for (int i = 0; i < plan->n_kernels; i++) {
            if ((int)plan->kernels[i].backend != kind) continue;
            specs[n] = korch_plan_kernel_spec(ex->pg, &plan->kernels[i]);
            schedules[n] = plan->kernels[i].schedule;
            which[n++] = i;
        }
        if (n == 0) continue;
        st = korch_backend_build((korch_backend_kind)kind, specs, schedules, n, options, built);
        if (st != KORCH_OK) {
            korch_error_prefix(st, "building %d %s kernels", n, korch_backend_name((korch_backend_kind)kind));
            break;
        }
        for (int j = 0; j < n; j++) ex->kernels[which[j]] = built[j];
    }
    free(specs);
    free(schedules);
    free(which);
    free(built);
    return st;
}

korch_status korch_executor_create(const korch_plan *plan, const korch_pgraph *pg, const korch_profile_options *options,
                                   korch_executor **out) {
    *out = NULL;
    KORCH_TRY(korch_plan_validate(plan, pg));
    korch_executor *ex = calloc(1, sizeof *ex);
    if (!ex) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    ex->plan = plan;
    ex->pg = pg;
    ex->threads = options ? options->threads : 0;
    ex->kernels = calloc((size_t)plan->n_kernels + 1, sizeof *ex->kernels);
    ex->value_ptr = calloc((size_t)pg->n_values + 1, sizeof *ex->value_ptr);
    int *first = malloc(((size_t)pg->n_values + 1) * sizeof *first);
    int *last = malloc(((size_t)pg->n_values + 1) * sizeof *last);
    korch_buffer_request *req = malloc(((size_t)pg->n_values + 1) * sizeof *req);
    size_t *offsets = malloc(((size_t)pg->n_values + 1) * sizeof *offsets);
    korch_status st = ex->kernels && ex->value_ptr && first && last && req && offsets
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    if (st == KORCH_OK) {
        /* lifetimes of the values kernels write */
        for (int v = 0; v < pg->n_values; v++) first[v] = last[v] = -1;
        int io_max = 0;
        for (int i = 0; i < plan->n_kernels; i++) {
            const korch_plan_kernel *k = &plan->kernels[i];
            if (k->n_inputs + k->n_outputs > io_max) io_max = k->n_inputs + k->n_outputs;
            /* a value two kernels make (recomputation) is written twice: its
             * lifetime runs to the last writer as well as the last reader */
            for (int j = 0; j < k->n_outputs; j++) {
                if (first[k->outputs[j]] < 0) first[k->outputs[j]] = i;
                last[k->outputs[j]] = i;
            }
            for (int j = 0; j < k->n_inputs; j++)
                if (first[k->inputs[j]] >= 0) last[k->inputs[j]] = i;
        }
        int n_req = 0;
        for (int v = 0; v < pg->n_values; v++)
            if (first[v] >= 0 && pg->values[v].graph_output < 0)
                req[n_req++] =
                    (korch_buffer_request){.value = v, .bytes = value_bytes(pg, v), .first = first[v], .last = last[v]};
        st = korch_memory_place(req, n_req, ARENA_ALIGNMENT, offsets, &ex->arena_bytes);
        if (st == KORCH_OK && ex->arena_bytes > 0) {
            ex->arena = aligned_alloc(ARENA_ALIGNMENT, ex->arena_bytes);
            if (!ex->arena)
                st =
                    korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: cannot allocate a %zu-byte arena", ex->arena_bytes);
        }
        for (int i = 0; i < n_req && st == KORCH_OK; i++) ex->value_ptr[req[i].value] = (char *)ex->arena + offsets[i];
        for (int v = 0; v < pg->n_values && st == KORCH_OK; v++)
            if (pg->values[v].is_constant) ex->value_ptr[v] = pg->values[v].constant.data;
        ex->scratch_cap = io_max + 1;
        ex->scratch = malloc((size_t)ex->scratch_cap * sizeof *ex->scratch);
        if (st == KORCH_OK && !ex->scratch) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    }
    if (st == KORCH_OK) st = build_kernels(ex, options);
    free(first);
    free(last);
    free(req);
    free(offsets);
    if (st != KORCH_OK) {
        korch_executor_destroy(ex);
        return st;
    }
    *out = ex;
    return KORCH_OK;
}

void korch_executor_destroy(korch_executor *ex) {
    if (!ex) return;
    for (int i = 0; ex->kernels && i < ex->plan->n_kernels; i++) korch_kernel_destroy(ex->kernels[i]);
    free(ex->kernels);
    free(ex->arena);
    free(ex->value_ptr);
    free(ex->scratch);
    free(ex);
}

size_t korch_executor_arena_bytes(const korch_executor *ex) { return ex->arena_bytes; }

korch_status korch_executor_run(korch_executor *ex, const korch_tensor *inputs, korch_tensor *outputs) {
    const korch_pgraph *pg = ex->pg;
    char a[96], b[96];
    for (int i = 0; i < pg->n_inputs; i++) {
        const korch_pvalue *v = &pg->values[pg->inputs[i]];
        if (inputs[i].dtype != v->dtype || !korch_shape_equal(&inputs[i].shape, &v->shape))
            return korch_error(KORCH_ERR_SHAPE, "plan input %d: got %s %s, the plan expects %s %s", i,
                               korch_dtype_name(inputs[i].dtype), korch_shape_format(&inputs[i].shape, a, sizeof a),
                               korch_dtype_name(v->dtype), korch_shape_format(&v->shape, b, sizeof b));
        ex->value_ptr[pg->inputs[i]] = inputs[i].data;
    }
    for (int i = 0; i < pg->n_outputs; i++) {
        const korch_pvalue *v = &pg->values[pg->outputs[i]];
        if (outputs[i].dtype != v->dtype || !korch_shape_equal(&outputs[i].shape, &v->shape) || !outputs[i].data)
            return korch_error(KORCH_ERR_SHAPE, "plan output %d: storage is not a %s %s tensor", i,
                               korch_dtype_name(v->dtype), korch_shape_format(&v->shape, b, sizeof b));
        /* an output that is also an input or a constant keeps its source pointer */
        if (v->producer >= 0) ex->value_ptr[pg->outputs[i]] = outputs[i].data;
    }
#ifdef _OPENMP
    if (ex->threads > 0) omp_set_num_threads(ex->threads);
#endif
    for (int i = 0; i < ex->plan->n_kernels; i++) {
        const korch_plan_kernel *k = &ex->plan->kernels[i];
        for (int j = 0; j < k->n_inputs; j++) ex->scratch[j] = ex->value_ptr[k->inputs[j]];
        for (int j = 0; j < k->n_outputs; j++) ex->scratch[k->n_inputs + j] = ex->value_ptr[k->outputs[j]];
        korch_kernel *kernel = ex->kernels[i];
        korch_status st = kernel->run(kernel, ex->scratch, ex->scratch + k->n_inputs);
        if (st != KORCH_OK)
            return korch_error_prefix(st, "kernel %d (%s, %s)", i, korch_backend_name(k->backend), kernel->impl);
    }
    for (int i = 0; i < pg->n_outputs; i++) {
        const korch_pvalue *v = &pg->values[pg->outputs[i]];
        if (v->producer >= 0) continue;
        const void *src = v->is_constant ? v->constant.data : ex->value_ptr[pg->outputs[i]];
        memcpy(outputs[i].data, src, korch_tensor_bytes(&outputs[i]));
    }
    return KORCH_OK;
}
