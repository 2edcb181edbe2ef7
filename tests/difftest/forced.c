/* Forced plans: chosen candidates plus single-primitive kernels for the rest,
 * so that every fusion korch could choose runs, not only those the cost
 * model picks. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static bool usable(const korch_candidate *c) { return c->profiled && !c->rejected; }

int dt_forced_list(const korch_candidate_set *set, int *out) {
    int n = 0;
    for (int i = 0; i < set->n_candidates; i++)
        if (set->candidates[i].n_nodes > 1 && usable(&set->candidates[i])) out[n++] = i;
    return n;
}

korch_status dt_forced_plan(const korch_candidate_set *set, const int *cands, int n, korch_plan **out) {
    *out = NULL;
    const korch_pgraph *pg = set->pg;
    int *chosen = malloc(((size_t)pg->n_nodes + 1) * sizeof *chosen);
    int *order = malloc(((size_t)pg->n_nodes + 1) * sizeof *order);
    int *idx = malloc(((size_t)pg->n_nodes + 1) * sizeof *idx);
    bool *covered = calloc((size_t)pg->n_nodes + 1, 1), *available = malloc((size_t)pg->n_values + 1);
    korch_sched_kernel *ks = malloc(((size_t)pg->n_nodes + 1) * sizeof *ks);
    korch_plan *plan = korch_plan_new();
    korch_status st = chosen && order && idx && covered && available && ks && plan
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    int nc = 0;
    for (int i = 0; i < n && st == KORCH_OK; i++) {
        const korch_candidate *c = &set->candidates[cands[i]];
        for (int k = 0; k < c->n_nodes; k++) {
            if (covered[c->nodes[k]]) st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "difftest: forced candidates overlap");
            covered[c->nodes[k]] = true;
        }
        chosen[nc++] = cands[i];
    }
    for (int v = 0; v < pg->n_values && available; v++) available[v] = true;
    for (int node = 0; node < pg->n_nodes && st == KORCH_OK; node++) {
        int p = set->partition_of[node];
        if (p < 0) continue;
        const korch_pnode *pn = &pg->nodes[node];
        for (int j = 0; j < pn->n_outputs; j++)
            if (pn->outputs[j] >= 0) available[pn->outputs[j]] = false;
        if (covered[node]) continue;
        int s = korch_candidate_find(set, p, (korch_nodemask)1 << set->local_of[node]);
        if (s < 0 || !usable(&set->candidates[s]))
            st = korch_error(KORCH_ERR_INTERNAL, "difftest: primitive %d has no usable single kernel", node);
        else chosen[nc++] = s;
    }
    for (int i = 0; i < nc && st == KORCH_OK; i++) {
        const korch_candidate *c = &set->candidates[chosen[i]];
        ks[i] = (korch_sched_kernel){c->n_inputs, c->inputs, c->n_outputs, c->outputs};
        idx[i] = i;
    }
    if (st == KORCH_OK && korch_schedule_simulate(ks, idx, nc, available, order) != nc)
        st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "difftest: forced candidates cannot be scheduled together");
    for (int i = 0; i < nc && st == KORCH_OK; i++) {
        const korch_candidate *c = &set->candidates[chosen[order[i]]];
        korch_plan_kernel *k = korch_plan_add_kernel(plan, pg, &set->uses, c->n_nodes, c->nodes);
        if (!k) {
            st = KORCH_ERR_OUT_OF_MEMORY;
            break;
        }
        k->backend = c->backend;
        k->latency_ms = c->latency_ms;
        snprintf(k->schedule, sizeof k->schedule, "%s", c->schedule);
        snprintf(k->impl, sizeof k->impl, "%s", c->impl);
        plan->predicted_ms += c->latency_ms;
    }
    if (st == KORCH_OK) {
        snprintf(plan->strategy, sizeof plan->strategy, "forced");
        plan->pgraph_hash = korch_pgraph_hash(pg);
        plan->pgraph_nodes = pg->n_nodes;
        st = korch_plan_describe_kernels(plan, pg);
    }
    if (st == KORCH_OK) st = korch_plan_validate(plan, pg);
    free(chosen);
    free(order);
    free(idx);
    free(covered);
    free(available);
    free(ks);
    if (st != KORCH_OK) korch_plan_free(plan);
    else *out = plan;
    return st;
}
