/* The analytic lower bound of a candidate's latency: a roofline with
 * optimistic machine constants. Pruning compares it with the best way to run
 * the same nodes as two or more smaller kernels (orchestrate/phase1_profile.c); as
 * long as the bound is below the real latency, pruning never loses the
 * optimum (docs/orchestration.md). */
#include "candidates/candidates.h"

korch_machine_model korch_machine_model_default(int threads) {
    if (threads < 1) threads = 1;
    /* measured here: ~250 GFLOP/s FMA peak per core, STREAM ~40-63 GB/s;
     * these are deliberately above what any kernel reaches */
    korch_machine_model m = {
        .peak_gflops = 300.0 * threads,
        .cache_gbps = 600.0 * threads,
        .dram_gbps = 100.0,
        .cache_bytes = 32.0 * 1024 * 1024,
    };
    return m;
}

static double numel(const korch_pvalue *v) {
    double n = 1;
    for (int k = 0; k < v->shape.rank; k++) n *= (double)v->shape.dims[k];
    return n;
}

static double bytes_of(const korch_pvalue *v) { return numel(v) * (double)korch_dtype_size(v->dtype); }

static double node_flops(const korch_pgraph *pg, const korch_pnode *n) {
    if (n->n_outputs < 1 || n->outputs[0] < 0) return 0;
    const korch_pvalue *y = &pg->values[n->outputs[0]];
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE: return numel(y);
    case KORCH_PRIM_REDUCE: return numel(&pg->values[n->inputs[0]]);
    case KORCH_PRIM_LINEAR: {
        const korch_pvalue *x = &pg->values[n->inputs[0]], *w = &pg->values[n->inputs[1]];
        const korch_prim_linear *l = &n->u.linear;
        if (l->op == KORCH_LINEAR_MATMUL) return 2.0 * numel(y) * (double)x->shape.dims[x->shape.rank - 1];
        double window = 1;
        for (int d = 2; d < w->shape.rank; d++) window *= (double)w->shape.dims[d];
        if (l->op == KORCH_LINEAR_CONV) return 2.0 * numel(y) * (double)w->shape.dims[1] * window;
        return 2.0 * numel(x) * (double)w->shape.dims[1] * window; /* transpose: per input element */
    }
    default: return 0;
    }
}

static double spec_flops(const korch_kernel_spec *spec) {
    double f = 0;
    for (int i = 0; i < spec->n_nodes; i++) f += node_flops(spec->pg, &spec->pg->nodes[spec->nodes[i]]);
    return f;
}

double korch_candidate_flops(const korch_candidate_set *set, const korch_candidate *c) {
    korch_kernel_spec spec = korch_candidate_spec(set, c);
    return spec_flops(&spec);
}

double korch_kernel_lower_bound_ms(const korch_kernel_spec *spec, const korch_machine_model *machine) {
    double bytes = 0;
    for (int i = 0; i < spec->n_inputs; i++) bytes += bytes_of(&spec->pg->values[spec->inputs[i]]);
    for (int i = 0; i < spec->n_outputs; i++) bytes += bytes_of(&spec->pg->values[spec->outputs[i]]);
    /* what fits in cache may move at cache speed; the rest crosses DRAM */
    double cached = bytes < machine->cache_bytes ? bytes : machine->cache_bytes;
    double t_mem = cached / (machine->cache_gbps * 1e9) + (bytes - cached) / (machine->dram_gbps * 1e9);
    double t_flop = spec_flops(spec) / (machine->peak_gflops * 1e9);
    return 1e3 * (t_mem > t_flop ? t_mem : t_flop);
}

double korch_candidate_lower_bound_ms(const korch_candidate_set *set, const korch_candidate *c,
                                      const korch_machine_model *machine) {
    korch_kernel_spec spec = korch_candidate_spec(set, c);
    return korch_kernel_lower_bound_ms(&spec, machine);
}
