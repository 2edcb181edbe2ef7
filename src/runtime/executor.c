/* The plan executor. */
#include "runtime/executor.h"

#include "core/clock.h"
#include "core/memory.h"
#include "runtime/arena.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

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
    /* releasing constants while kernels are built (korch_executor_create_owned) */
    korch_pgraph *own_pg;
    korch_graph *own_graph;
    int *rep;          /* per value: the first constant value with the same data, or -1 */
    int *refs;         /* per representative: kernel input references */
    int *copied_refs;  /* per representative: references whose kernel copied the data */
    bool *pinned;      /* per representative: read outside kernels (graph output, opaque node) */
    size_t released;
    double *kernel_ms; /* korch_executor_time_kernels: each kernel's time in the last run */
    bool guarded; /* the plan was specialized for input values: every run checks them */
};

/* A plan's guards name its inputs in pg's input order (both are the graph's
 * inputs in model order); anything else is a plan for another graph. */
static korch_status check_guard_inputs(const korch_plan *plan, const korch_pgraph *pg) {
    if (korch_plan_guard_count(plan) == 0) return KORCH_OK;
    bool same = plan->n_input_shapes == pg->n_inputs;
    for (int i = 0; same && i < pg->n_inputs; i++) {
        int sv = pg->values[pg->inputs[i]].source_value;
        same = pg->source && sv >= 0 && strcmp(pg->source->values[sv].name, plan->input_shapes[i].name) == 0;
    }
    return same ? KORCH_OK
                : korch_error(KORCH_ERR_INVALID_MODEL,
                              "the plan's specialized inputs do not match the model's inputs; re-run korch optimize");
}

static void release_setup(korch_executor *ex) {
    const korch_pgraph *pg = ex->pg;
    size_t n = (size_t)pg->n_values + 1;
    ex->rep = malloc(n * sizeof *ex->rep);
    ex->refs = calloc(n, sizeof *ex->refs);
    ex->copied_refs = calloc(n, sizeof *ex->copied_refs);
    ex->pinned = calloc(n, sizeof *ex->pinned);
    if (!ex->rep || !ex->refs || !ex->copied_refs || !ex->pinned) {
        ex->own_pg = NULL; /* no release: correct, only more memory */
        return;
    }
    for (int v = 0; v < pg->n_values; v++) {
        ex->rep[v] = -1;
        const void *d = pg->values[v].is_constant ? pg->values[v].constant.data : NULL;
        for (int w = 0; w <= v && d; w++)
            if (pg->values[w].is_constant && pg->values[w].constant.data == d) {
                ex->rep[v] = w;
                break;
            }
    }
    for (int i = 0; i < ex->plan->n_kernels; i++)
        for (int j = 0; j < ex->plan->kernels[i].n_inputs; j++) {
            int r = ex->rep[ex->plan->kernels[i].inputs[j]];
            if (r >= 0) ex->refs[r]++;
        }
    for (int v = 0; v < pg->n_values; v++)
        if (pg->values[v].graph_output >= 0 && ex->rep[v] >= 0) ex->pinned[ex->rep[v]] = true;
    /* opaque primitives run op-graph nodes, which may read the graph's
     * constants directly */
    const korch_graph *g = ex->own_graph;
    for (int n = 0; n < pg->n_nodes && g; n++) {
        const korch_pnode *p = &pg->nodes[n];
        if (p->dead || p->kind != KORCH_PRIM_OPAQUE) continue;
        const korch_node *src = &g->nodes[p->u.opaque.source_node];
        for (int j = 0; j < src->n_inputs; j++) {
            const void *d = src->inputs[j] >= 0 ? g->values[src->inputs[j]].constant.data : NULL;
            for (int v = 0; v < pg->n_values && d; v++)
                if (ex->rep[v] >= 0 && pg->values[v].constant.data == d) ex->pinned[ex->rep[v]] = true;
        }
    }
}

/* Frees constant r's data once every kernel reading it holds its own copy. */
static void release_if_copied(korch_executor *ex, int r) {
    if (ex->pinned[r] || ex->copied_refs[r] < ex->refs[r]) return;
    korch_pgraph *pg = ex->own_pg;
    void *data = pg->values[r].constant.data;
    if (!data) return;
    size_t bytes = korch_tensor_bytes(&pg->values[r].constant);
    bool freed = false;
    for (int v = 0; v < pg->n_values && !freed; v++)
        if (ex->rep[v] == r && pg->values[v].constant.owns_data) {
            free(data);
            freed = true;
        }
    korch_graph *g = ex->own_graph;
    for (int v = 0; g && v < g->n_values && !freed; v++)
        if (g->values[v].constant.data == data && g->values[v].constant.owns_data) {
            free(data);
            g->values[v].constant.data = NULL;
            g->values[v].constant.owns_data = false;
            freed = true;
        }
    if (!freed) return; /* not ours to free */
    ex->released += bytes;
    for (int v = 0; v < pg->n_values; v++)
        if (ex->rep[v] == r) {
            pg->values[v].constant.data = NULL;
            pg->values[v].constant.owns_data = false;
            ex->value_ptr[v] = NULL;
        }
}

static void release_after_build(korch_executor *ex, int kernel) {
    const korch_plan_kernel *k = &ex->plan->kernels[kernel];
    uint64_t bits = ex->kernels[kernel] ? ex->kernels[kernel]->inputs_copied : 0;
    for (int j = 0; j < k->n_inputs && j < 64; j++) {
        int r = ex->rep[k->inputs[j]];
        if (r < 0 || !((bits >> j) & 1u)) continue;
        ex->copied_refs[r]++;
        release_if_copied(ex, r);
    }
}

/* The first word of a dnnl kernel's impl after "dnnl ": oneDNN's name. */
static void onednn_name(const char *impl, char *out, size_t size) {
    if (strncmp(impl, "dnnl ", 5) == 0) impl += 5;
    size_t n = strcspn(impl, " ");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), impl);
}

/* The oneDNN implementation a plan's kernel was profiled with and the one
 * oneDNN picks now should be the same: its latency in the plan is the
 * profiled one only then. A plan moved to another CPU or oneDNN, or a
 * lowering that differs between optimize and load (a one-channel
 * convolution got oneDNN's reference implementation at load, 1000x its
 * profile: dnnl_primitive.c, convolution_strides), is named here. */
static void check_implementation(const korch_plan_kernel *pk, const korch_kernel *k, int index) {
    if (!k || pk->backend != KORCH_BACKEND_DNNL || !pk->impl[0]) return;
    char want[64], got[64];
    onednn_name(pk->impl, want, sizeof want);
    onednn_name(k->impl, got, sizeof got);
    if (!strcmp(want, got) || want[0] == '(') return; /* "(estimated)": nothing was profiled */
    fprintf(stderr,
            "korch: warning: kernel %d: oneDNN picks %s here, the plan was profiled with %s: its time will differ "
            "from the plan's prediction\n",
            index, got, want);
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
        if (ex->own_pg && kind == KORCH_BACKEND_DNNL) {
            /* one at a time, so that weights are released as soon as their
             * reordered copies exist: the peak then holds about one copy */
            for (int j = 0; j < n && st == KORCH_OK; j++) {
                st = korch_backend_build((korch_backend_kind)kind, &specs[j], &schedules[j], 1, options, &built[j]);
                if (st != KORCH_OK) break;
                ex->kernels[which[j]] = built[j];
                check_implementation(&plan->kernels[which[j]], built[j], which[j]);
                release_after_build(ex, which[j]);
            }
            if (st != KORCH_OK) {
                korch_error_prefix(st, "building a %s kernel", korch_backend_name((korch_backend_kind)kind));
                break;
            }
            continue;
        }
        st = korch_backend_build((korch_backend_kind)kind, specs, schedules, n, options, built);
        if (st != KORCH_OK) {
            korch_error_prefix(st, "building %d %s kernels", n, korch_backend_name((korch_backend_kind)kind));
            break;
        }
        for (int j = 0; j < n; j++) {
            ex->kernels[which[j]] = built[j];
            check_implementation(&plan->kernels[which[j]], built[j], which[j]);
        }
    }
    free(specs);
    free(schedules);
    free(which);
    free(built);
    return st;
}

static korch_status create(const korch_plan *plan, const korch_pgraph *pg, korch_pgraph *own_pg, korch_graph *own_graph,
                           const korch_profile_options *options, korch_executor **out);

korch_status korch_executor_create(const korch_plan *plan, const korch_pgraph *pg, const korch_profile_options *options,
                                   korch_executor **out) {
    return create(plan, pg, NULL, NULL, options, out);
}

korch_status korch_executor_create_owned(const korch_plan *plan, korch_pgraph *pg, korch_graph *graph,
                                         const korch_profile_options *options, korch_executor **out) {
    return create(plan, pg, pg, graph, options, out);
}

static korch_status create(const korch_plan *plan, const korch_pgraph *pg, korch_pgraph *own_pg, korch_graph *own_graph,
                           const korch_profile_options *options, korch_executor **out) {
    *out = NULL;
    KORCH_TRY(korch_plan_validate(plan, pg));
    KORCH_TRY(check_guard_inputs(plan, pg));
    korch_executor *ex = calloc(1, sizeof *ex);
    if (!ex) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    ex->plan = plan;
    ex->guarded = korch_plan_guard_count(plan) > 0;
    ex->pg = pg;
    ex->threads = options ? options->threads : 0;
    ex->kernels = calloc((size_t)plan->n_kernels + 1, sizeof *ex->kernels);
    ex->value_ptr = calloc((size_t)pg->n_values + 1, sizeof *ex->value_ptr);
    int io_max = 0;
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        if (k->n_inputs + k->n_outputs > io_max) io_max = k->n_inputs + k->n_outputs;
    }
    korch_memory_plan mp = {0};
    korch_status st = ex->kernels && ex->value_ptr ? KORCH_OK
                                                   : korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    /* intermediate values: one arena, offsets from the memory plan (arena.h) */
    if (st == KORCH_OK) st = korch_memory_plan_build(plan, pg, &mp);
    if (st == KORCH_OK) {
        ex->arena_bytes = mp.arena_bytes;
        if (ex->arena_bytes > 0) {
            ex->arena = korch_buffer_alloc(ex->arena_bytes); /* >= KORCH_ARENA_ALIGNMENT */
            if (!ex->arena)
                st =
                    korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: cannot allocate a %zu-byte arena", ex->arena_bytes);
        }
        for (int v = 0; v < pg->n_values && st == KORCH_OK; v++) {
            if (mp.offset[v] >= 0) ex->value_ptr[v] = (char *)ex->arena + mp.offset[v];
            else if (pg->values[v].is_constant) ex->value_ptr[v] = pg->values[v].constant.data;
        }
        ex->scratch_cap = io_max + 1;
        ex->scratch = malloc((size_t)ex->scratch_cap * sizeof *ex->scratch);
        if (st == KORCH_OK && !ex->scratch) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "executor: out of memory");
    }
    korch_memory_plan_free(&mp);
    if (st == KORCH_OK && own_pg) {
        ex->own_pg = own_pg;
        ex->own_graph = own_graph;
        release_setup(ex);
    }
    if (st == KORCH_OK) st = build_kernels(ex, options);
    /* the release bookkeeping is needed only while kernels are built */
    free(ex->rep);
    free(ex->refs);
    free(ex->copied_refs);
    free(ex->pinned);
    ex->rep = ex->refs = ex->copied_refs = NULL;
    ex->pinned = NULL;
    ex->own_pg = NULL;
    ex->own_graph = NULL;
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
    /* the guard: a plan specialized for an input value is wrong for others */
    if (ex->guarded) KORCH_TRY(korch_plan_guard_check(ex->plan, inputs));
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
        double t0 = ex->kernel_ms ? korch_now_ms() : 0;
        korch_status st = kernel->run(kernel, ex->scratch, ex->scratch + k->n_inputs);
        if (ex->kernel_ms) ex->kernel_ms[i] = korch_now_ms() - t0;
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

size_t korch_executor_released_bytes(const korch_executor *ex) { return ex ? ex->released : 0; }

void korch_executor_time_kernels(korch_executor *ex, double *kernel_ms) { ex->kernel_ms = kernel_ms; }
