/* A minimal plan runner for the forced-candidate plans: every kernel any of
 * them uses is built once per graph, in one batched build per backend (one
 * compiler run for all cgen kernels), instead of one executor (and one
 * compiler run) per plan. A failure it finds is confirmed with the real
 * executor (driver.c), which the strategy plans always use. */
#include <stdlib.h>
#include <string.h>

#include "runner.h"

static int candidate_of(const korch_candidate_set *set, const korch_plan_kernel *k) {
    int p = set->partition_of[k->nodes[0]];
    korch_nodemask mask = 0;
    for (int i = 0; i < k->n_nodes; i++) {
        if (set->partition_of[k->nodes[i]] != p) return -1;
        mask |= (korch_nodemask)1 << set->local_of[k->nodes[i]];
    }
    return korch_candidate_find(set, p, mask);
}

korch_status dt_runner_build(dt_runner *r, const korch_candidate_set *set, const int *cands, int n,
                             const korch_profile_options *po) {
    memset(r, 0, sizeof *r);
    r->set = set;
    const korch_pgraph *pg = set->pg;
    r->kernel_of = calloc((size_t)set->n_candidates + 1, sizeof *r->kernel_of);
    r->ptr = calloc((size_t)pg->n_values + 1, sizeof *r->ptr);
    r->owned = calloc((size_t)pg->n_values + 1, sizeof *r->owned);
    int *want = malloc(((size_t)set->n_candidates + 1) * sizeof *want), nw = 0;
    korch_kernel_spec *specs = malloc(((size_t)set->n_candidates + 1) * sizeof *specs);
    const char **scheds = malloc(((size_t)set->n_candidates + 1) * sizeof *scheds);
    korch_kernel **built = calloc((size_t)set->n_candidates + 1, sizeof *built);
    korch_status st = r->kernel_of && r->ptr && r->owned && want && specs && scheds && built
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    /* the given candidates and every single-primitive kernel */
    for (int i = 0; i < n && st == KORCH_OK; i++) want[nw++] = cands[i];
    for (int node = 0; node < pg->n_nodes && st == KORCH_OK; node++) {
        int p = set->partition_of[node];
        if (p < 0) continue;
        int s = korch_candidate_find(set, p, (korch_nodemask)1 << set->local_of[node]);
        if (s >= 0) want[nw++] = s;
    }
    for (int kind = 0; kind < KORCH_BACKEND_COUNT && st == KORCH_OK; kind++) {
        int m = 0;
        for (int i = 0; i < nw; i++) {
            const korch_candidate *c = &set->candidates[want[i]];
            if ((int)c->backend != kind || r->kernel_of[want[i]]) continue;
            bool dup = false;
            for (int j = 0; j < i && !dup; j++) dup = want[j] == want[i];
            if (dup) continue;
            specs[m] = korch_candidate_spec(set, c);
            scheds[m] = c->schedule;
            built[m] = NULL;
            m++;
        }
        if (m == 0) continue;
        st = korch_backend_build((korch_backend_kind)kind, specs, scheds, m, po, built);
        if (st != KORCH_OK) {
            korch_error_prefix(st, "building %d %s kernels", m, korch_backend_name((korch_backend_kind)kind));
            break;
        }
        m = 0;
        for (int i = 0; i < nw; i++) {
            const korch_candidate *c = &set->candidates[want[i]];
            if ((int)c->backend != kind || r->kernel_of[want[i]]) continue;
            bool dup = false;
            for (int j = 0; j < i && !dup; j++) dup = want[j] == want[i];
            if (!dup) r->kernel_of[want[i]] = built[m++];
        }
    }
    /* storage for every value a live node produces */
    for (int node = 0; node < pg->n_nodes && st == KORCH_OK; node++) {
        if (set->partition_of[node] < 0) continue;
        const korch_pnode *pn = &pg->nodes[node];
        for (int j = 0; j < pn->n_outputs && st == KORCH_OK; j++) {
            int v = pn->outputs[j];
            if (v < 0 || r->owned[v]) continue;
            korch_tensor t = {.dtype = pg->values[v].dtype, .shape = pg->values[v].shape};
            size_t bytes = korch_tensor_bytes(&t);
            r->owned[v] = aligned_alloc(64, (bytes + 64) / 64 * 64);
            if (!r->owned[v]) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
            r->ptr[v] = r->owned[v];
        }
    }
    for (int v = 0; v < pg->n_values && st == KORCH_OK; v++)
        if (pg->values[v].is_constant) r->ptr[v] = pg->values[v].constant.data;
    free(want);
    free(specs);
    free(scheds);
    free(built);
    return st;
}

korch_status dt_runner_run(dt_runner *r, const korch_plan *plan, const korch_tensor *inputs, korch_tensor *outputs) {
    const korch_candidate_set *set = r->set;
    const korch_pgraph *pg = set->pg;
    for (int i = 0; i < pg->n_inputs; i++) r->ptr[pg->inputs[i]] = inputs[i].data;
    /* poison: a kernel that leaves part of its output unwritten must not
     * inherit the previous plan's correct values (0xff bytes: NaN floats) */
    for (int v = 0; v < pg->n_values; v++)
        if (r->owned[v]) {
            korch_tensor t = {.dtype = pg->values[v].dtype, .shape = pg->values[v].shape};
            memset(r->owned[v], 0xff, korch_tensor_bytes(&t));
        }
    void *io[2 * 64 * 8 + 2];
    for (int i = 0; i < plan->n_kernels; i++) {
        int ci = candidate_of(set, &plan->kernels[i]);
        korch_kernel *k = ci >= 0 ? r->kernel_of[ci] : NULL;
        if (!k) return korch_error(KORCH_ERR_INTERNAL, "difftest runner: plan kernel %d was not built", i);
        const korch_candidate *c = &set->candidates[ci];
        if (c->n_inputs + c->n_outputs > (int)(sizeof io / sizeof io[0]))
            return korch_error(KORCH_ERR_INTERNAL, "difftest runner: too many operands");
        for (int j = 0; j < c->n_inputs; j++) io[j] = r->ptr[c->inputs[j]];
        for (int j = 0; j < c->n_outputs; j++) io[c->n_inputs + j] = r->ptr[c->outputs[j]];
        for (int j = 0; j < c->n_inputs + c->n_outputs; j++)
            if (!io[j])
                return korch_error(KORCH_ERR_INTERNAL, "difftest runner: kernel %d (candidate %d): operand %d (value %d) has no storage",
                                   i, ci, j, j < c->n_inputs ? c->inputs[j] : c->outputs[j - c->n_inputs]);
        KORCH_TRY(k->run(k, io, io + c->n_inputs));
    }
    for (int i = 0; i < pg->n_outputs; i++) {
        const void *src = r->ptr[pg->outputs[i]];
        if (!src) return korch_error(KORCH_ERR_INTERNAL, "difftest runner: output %d not computed", i);
        memcpy(outputs[i].data, src, korch_tensor_bytes(&outputs[i]));
    }
    return KORCH_OK;
}

void dt_runner_free(dt_runner *r) {
    if (!r->set) return;
    for (int i = 0; r->kernel_of && i < r->set->n_candidates; i++)
        if (r->kernel_of[i]) korch_kernel_destroy(r->kernel_of[i]);
    for (int v = 0; r->owned && v < r->set->pg->n_values; v++) free(r->owned[v]);
    free(r->kernel_of);
    free(r->ptr);
    free(r->owned);
    memset(r, 0, sizeof *r);
}
