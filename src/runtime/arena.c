/* The memory plan of an execution plan (arena.h): lifetimes, in-place pairs,
 * then one call to korch_memory_place. */
#include "runtime/arena.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/executor.h"

static size_t value_bytes(const korch_pgraph *pg, int v) {
    korch_tensor t = {.dtype = pg->values[v].dtype, .shape = pg->values[v].shape};
    return korch_tensor_bytes(&t);
}

int korch_kernel_in_place_input(const korch_pgraph *pg, const korch_plan_kernel *k,
                                int (*usable)(void *ctx, int value), void *ctx) {
    if (k->n_outputs != 1) return -1;
    const korch_pvalue *out = &pg->values[k->outputs[0]];
    for (int i = 0; i < k->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[k->nodes[i]];
        if (n->kind != KORCH_PRIM_ELEMENTWISE || n->n_outputs != 1) return -1;
        if (!korch_shape_equal(&pg->values[n->outputs[0]].shape, &out->shape)) return -1;
    }
    for (int j = 0; j < k->n_inputs; j++) {
        const korch_pvalue *x = &pg->values[k->inputs[j]];
        if (x->is_constant || x->graph_input >= 0 || x->graph_output >= 0) continue;
        if (x->dtype != out->dtype || !korch_shape_equal(&x->shape, &out->shape)) continue;
        if (usable && !usable(ctx, k->inputs[j])) continue;
        return j;
    }
    return -1;
}

typedef struct lifetimes {
    int *first, *last;
    int kernel; /* the kernel being considered for in-place */
} lifetimes;

/* an input may be overwritten by kernel `kernel` when its life ends there */
static int ends_here(void *ctx, int v) {
    const lifetimes *lt = ctx;
    return lt->first[v] >= 0 && lt->first[v] < lt->kernel && lt->last[v] == lt->kernel;
}

/* Staggering (arena.h). */
#define STAGGER_MIN KORCH_ARENA_STAGGER_MIN
#define STAGGER_SLOTS 64
#define STAGGER_PAD KORCH_ARENA_STAGGER_PAD
_Static_assert(STAGGER_PAD == (size_t)(STAGGER_SLOTS - 1) * KORCH_ARENA_ALIGNMENT, "one pad spans every slot");

/* Greedy colouring: requests in order of first use; each takes the first
 * slot, from a rotating start, that no request sharing a kernel with it has
 * taken. A kernel has far fewer than STAGGER_SLOTS operands in practice; if
 * one ever had more, slots repeat (slower, never wrong). */
static korch_status stagger(const korch_plan *plan, const korch_pgraph *pg, const int *parent, const int *req_of,
                            const korch_buffer_request *req, int n_req, int *slot) {
    int *order = malloc(((size_t)n_req + 1) * sizeof *order);
    if (!order) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
    for (int r = 0; r < n_req; r++) slot[r] = req[r].bytes >= STAGGER_MIN ? -1 : 0;
    int n = 0;
    for (int r = 0; r < n_req; r++)
        if (slot[r] < 0) order[n++] = r;
    /* requests come in value order; first use is what the greedy wants */
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && req[order[b]].first < req[order[b - 1]].first; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int a = 0; a < n; a++) {
        int r = order[a];
        uint64_t used = 0;
        for (int i = req[r].first; i <= req[r].last; i++) {
            const korch_plan_kernel *k = &plan->kernels[i];
            bool touches = false;
            for (int j = 0; j < k->n_inputs + k->n_outputs && !touches; j++) {
                int v = j < k->n_inputs ? k->inputs[j] : k->outputs[j - k->n_inputs];
                touches = v >= 0 && v < pg->n_values && req_of[parent[v]] == r;
            }
            if (!touches) continue;
            for (int j = 0; j < k->n_inputs + k->n_outputs; j++) {
                int v = j < k->n_inputs ? k->inputs[j] : k->outputs[j - k->n_inputs];
                if (v < 0 || v >= pg->n_values) continue;
                int q = req_of[parent[v]];
                if (q >= 0 && q != r && slot[q] >= 0 && req[q].bytes >= STAGGER_MIN) used |= (uint64_t)1 << slot[q];
            }
        }
        int pick = (a * 37) % STAGGER_SLOTS;
        for (int t = 0; t < STAGGER_SLOTS && (used >> pick & 1); t++) pick = (pick + 1) % STAGGER_SLOTS;
        slot[r] = pick;
    }
    free(order);
    return KORCH_OK;
}

static int find(int *parent, int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
}

void korch_memory_plan_free(korch_memory_plan *mp) {
    if (!mp) return;
    free(mp->offset);
    free(mp->in_place_of);
    memset(mp, 0, sizeof *mp);
}

korch_status korch_memory_plan_build(const korch_plan *plan, const korch_pgraph *pg, korch_memory_plan *out) {
    memset(out, 0, sizeof *out);
    size_t nv = (size_t)pg->n_values + 1;
    out->n_values = pg->n_values;
    out->offset = malloc(nv * sizeof *out->offset);
    out->in_place_of = malloc(nv * sizeof *out->in_place_of);
    lifetimes lt = {.first = malloc(nv * sizeof(int)), .last = malloc(nv * sizeof(int))};
    int *parent = malloc(nv * sizeof *parent);
    int *req_of = malloc(nv * sizeof *req_of);
    korch_buffer_request *req = malloc(nv * sizeof *req);
    size_t *offsets = malloc(nv * sizeof *offsets);
    int64_t *live = calloc((size_t)plan->n_kernels + 1, sizeof *live);
    int *slot = NULL;
    korch_status st = KORCH_OK;
    if (!out->offset || !out->in_place_of || !lt.first || !lt.last || !parent || !req_of || !req || !offsets || !live) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        goto done;
    }
    for (int v = 0; v < pg->n_values; v++) {
        lt.first[v] = lt.last[v] = -1;
        out->offset[v] = -1;
        out->in_place_of[v] = -1;
        parent[v] = v;
        req_of[v] = -1;
    }
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        /* a recomputed value is written twice: it lives until its last writer too */
        for (int j = 0; j < k->n_outputs; j++) {
            int v = k->outputs[j];
            if (lt.first[v] < 0) lt.first[v] = i;
            lt.last[v] = i;
        }
        for (int j = 0; j < k->n_inputs; j++)
            if (lt.first[k->inputs[j]] >= 0) lt.last[k->inputs[j]] = i;
    }
    /* in-place pairs: output 0 of kernel i joins the buffer of an input whose
     * life ends at i, if the output is first written at i (a value written
     * earlier would clobber the input while it is still live) */
    for (int i = 0; i < plan->n_kernels; i++) {
        const korch_plan_kernel *k = &plan->kernels[i];
        if (k->n_outputs != 1) continue;
        int o = k->outputs[0];
        if (lt.first[o] != i || pg->values[o].graph_output >= 0) continue;
        lt.kernel = i;
        int j = korch_kernel_in_place_input(pg, k, ends_here, &lt);
        if (j < 0) continue;
        int x = k->inputs[j];
        if (find(parent, x) == find(parent, o)) continue;
        parent[find(parent, o)] = find(parent, x);
        out->in_place_of[o] = x;
        out->n_in_place++;
    }
    /* one request per buffer (a group of in-place values), covering the union
     * of its members' lifetimes */
    int n_req = 0;
    for (int v = 0; v < pg->n_values; v++) {
        if (lt.first[v] < 0 || pg->values[v].graph_output >= 0) continue;
        size_t bytes = value_bytes(pg, v);
        size_t rounded = (bytes + KORCH_ARENA_ALIGNMENT - 1) & ~(size_t)(KORCH_ARENA_ALIGNMENT - 1);
        out->unshared_bytes += rounded + (bytes >= STAGGER_MIN ? STAGGER_PAD : 0);
        out->n_buffers++;
        int r = find(parent, v);
        if (req_of[r] < 0) {
            req_of[r] = n_req;
            req[n_req++] = (korch_buffer_request){.value = r, .bytes = bytes, .first = lt.first[v], .last = lt.last[v]};
        } else {
            korch_buffer_request *q = &req[req_of[r]];
            if (bytes > q->bytes) q->bytes = bytes;
            if (lt.first[v] < q->first) q->first = lt.first[v];
            if (lt.last[v] > q->last) q->last = lt.last[v];
        }
    }
    /* the lower bound is over buffers: an in-place pair is one buffer */
    for (int r = 0; r < n_req; r++) {
        size_t rounded = (req[r].bytes + KORCH_ARENA_ALIGNMENT - 1) & ~(size_t)(KORCH_ARENA_ALIGNMENT - 1);
        for (int i = req[r].first; i <= req[r].last; i++) live[i] += (int64_t)rounded;
    }
    for (int i = 0; i < plan->n_kernels; i++)
        if ((size_t)live[i] > out->peak_live_bytes) out->peak_live_bytes = (size_t)live[i];
    /* parent[] flattened so stagger() can look groups up without find() */
    for (int v = 0; v < pg->n_values; v++) parent[v] = find(parent, v);
    slot = malloc(((size_t)n_req + 1) * sizeof *slot);
    if (!slot) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "memory plan: out of memory");
        goto done;
    }
    st = stagger(plan, pg, parent, req_of, req, n_req, slot);
    if (st != KORCH_OK) goto done;
    for (int r = 0; r < n_req; r++)
        if (req[r].bytes >= STAGGER_MIN) req[r].bytes += STAGGER_PAD;
    st = korch_memory_place(req, n_req, KORCH_ARENA_ALIGNMENT, offsets, &out->arena_bytes);
    if (st != KORCH_OK) goto done;
    for (int v = 0; v < pg->n_values; v++) {
        if (lt.first[v] < 0 || pg->values[v].graph_output >= 0) continue;
        int r = req_of[parent[v]];
        out->offset[v] = (int64_t)(offsets[r] + (size_t)slot[r] * KORCH_ARENA_ALIGNMENT);
    }
done:
    free(lt.first);
    free(lt.last);
    free(parent);
    free(req_of);
    free(req);
    free(offsets);
    free(live);
    free(slot);
    if (st != KORCH_OK) korch_memory_plan_free(out);
    return st;
}
