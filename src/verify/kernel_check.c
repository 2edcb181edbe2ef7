/* Kernels against the primitive interpreter, on realistic data.
 *
 * The primitive graph is interpreted once, node by node in topological
 * order, on the model's seeded (or given) inputs; only the nodes upstream
 * of some checked kernel run, and the walk stops after the last check. A
 * kernel is checked as soon as the last of its nodes has run: every value
 * it reads and writes is then known. The kernel runs on copies of its inputs' values (a faulty
 * kernel must not poison the values later checks read), its outputs are
 * compared with the interpreter's, and its own nodes are interpreted once
 * more on perturbed inputs for the sensitivity term (verify.h). A value is
 * freed when no node and no pending check needs it, so memory stays close
 * to what the interpreter alone would use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "verify/verify.h"

const char *korch_verdict_name(korch_verdict v) {
    static const char *const names[] = {"unknown", "verified", "wrong"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_VERDICT_COUNT, "verdict names out of step");
    return (unsigned)v < KORCH_VERDICT_COUNT ? names[v] : "?";
}

int64_t korch_verify_reduction_length(const korch_kernel_spec *spec) {
    const korch_pgraph *pg = spec->pg;
    double r = 1;
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[spec->nodes[i]];
        double k = 1;
        if (n->kind == KORCH_PRIM_LINEAR) {
            const korch_shape *x = &pg->values[n->inputs[0]].shape, *w = &pg->values[n->inputs[1]].shape;
            const korch_prim_linear *p = &n->u.linear;
            if (p->op == KORCH_LINEAR_MATMUL) {
                k = (double)x->dims[x->rank - 1];
            } else {
                /* weights [M, C/group, k...] (conv) or [C, M/group, k...]
                 * (transpose): per output, channels per group x taps */
                k = (double)(p->op == KORCH_LINEAR_CONV ? w->dims[1] : w->dims[0] / (p->group > 0 ? p->group : 1));
                for (int d = 2; d < w->rank; d++) k *= (double)w->dims[d];
            }
        } else if (n->kind == KORCH_PRIM_REDUCE) {
            double in = (double)korch_shape_numel(&pg->values[n->inputs[0]].shape);
            double out = (double)korch_shape_numel(&pg->values[n->outputs[0]].shape);
            k = out > 0 ? in / out : 1;
        }
        if (k > 1) r *= k;
    }
    return r > 1e12 ? (int64_t)1e12 : (int64_t)r;
}

/* ---- one check --------------------------------------------------------------- */

typedef struct check {
    int item;
    int ready; /* position in the order after which every value it needs is known */
} check;

static void set_wrong(korch_verify_result *r, const char *fmt, const char *detail) {
    r->verdict = KORCH_VERDICT_WRONG;
    r->failed = true;
    r->worst_ratio = INFINITY;
    snprintf(r->detail, sizeof r->detail, fmt, detail);
}

/* The kernel's own nodes interpreted on perturbed inputs; perturbed[j] for
 * spec output j (zeroed tensors when that is impossible, which drops the
 * sensitivity term). */
static void perturbed_reference(const korch_kernel_spec *spec, const korch_tensor *vals, uint64_t seed,
                                korch_tensor *perturbed) {
    korch_pgraph *sub = NULL;
    if (korch_pgraph_extract(spec, NULL, NULL, &sub) != KORCH_OK) {
        korch_error_clear();
        return;
    }
    korch_tensor *in = calloc((size_t)sub->n_inputs + 1, sizeof *in);
    bool ok = in != NULL;
    int j = 0;
    for (int i = 0; ok && i < spec->n_inputs; i++) {
        int v = spec->inputs[i];
        if (spec->pg->values[v].is_constant) continue;
        ok = j < sub->n_inputs && korch_tensor_clone(&vals[v], &in[j]) == KORCH_OK;
        if (ok) korch_verify_perturb(&in[j], seed + (uint64_t)j);
        j++;
    }
    if (ok && korch_pgraph_interpret(sub, in, perturbed) != KORCH_OK) {
        for (int o = 0; o < spec->n_outputs; o++) korch_tensor_free(&perturbed[o]);
        memset(perturbed, 0, (size_t)spec->n_outputs * sizeof *perturbed);
    }
    korch_error_clear();
    for (int i = 0; in && i < sub->n_inputs; i++) korch_tensor_free(&in[i]);
    free(in);
    korch_pgraph_free(sub);
}

/* The node of the spec producing value v if it is elementwise `op`, else -1. */
static int spec_producer(const korch_kernel_spec *spec, int v, korch_ew_op op) {
    const korch_pgraph *pg = spec->pg;
    int p = pg->values[v].producer;
    if (p < 0 || pg->nodes[p].kind != KORCH_PRIM_ELEMENTWISE || pg->nodes[p].u.ew.op != op) return -1;
    for (int i = 0; i < spec->n_nodes; i++)
        if (spec->nodes[i] == p) return p;
    return -1;
}

/* Rounding ties (docs/verification.md, "Kernel checks"). An 8-bit output
 * the kernel quantizes, CAST(CLIP([ADD](ROUND(r)))), rounds r to an
 * integer; where r lies on a tie, within 2^-17 of its size (plus 2^-17),
 * two correct computations of r round it apart, one step: an int8
 * convolution sums exactly and multiplies by 1 / scale
 * (backend/dnnl/dnnl_dequant.c), the interpreter sums in float32 order and
 * divides. The reference's r is computed (the kernel's nodes up to the
 * ROUND, interpreted on the kernel's inputs) and the perturbed reference
 * made to differ from the reference at those elements, which exempts them
 * (compare.c). Elsewhere an integer output must be exact. */
static void exempt_rounding_ties(const korch_kernel_spec *spec, const korch_tensor *vals, korch_tensor *pert) {
    const korch_pgraph *pg = spec->pg;
    for (int o = 0; o < spec->n_outputs; o++) {
        int y = spec->outputs[o];
        korch_dtype t = pg->values[y].dtype;
        if (t != KORCH_DTYPE_UINT8 && t != KORCH_DTYPE_INT8) continue;
        int cast = spec_producer(spec, y, KORCH_EW_CAST);
        int clip = cast >= 0 ? spec_producer(spec, pg->nodes[cast].inputs[0], KORCH_EW_CLIP) : -1;
        if (clip < 0) continue;
        int v = pg->nodes[clip].inputs[0], add = spec_producer(spec, v, KORCH_EW_ADD);
        if (add >= 0) v = pg->values[pg->nodes[add].inputs[0]].is_constant ? pg->nodes[add].inputs[1]
                                                                            : pg->nodes[add].inputs[0];
        int round = spec_producer(spec, v, KORCH_EW_ROUND);
        if (round < 0) continue;
        int r = pg->nodes[round].inputs[0];
        if (pg->values[r].dtype != KORCH_DTYPE_FLOAT32 || !korch_shape_equal(&pg->values[r].shape, &pg->values[y].shape))
            continue;
        /* the kernel's nodes but the tail, r their one output */
        int *nodes = malloc((size_t)spec->n_nodes * sizeof *nodes), n = 0;
        if (!nodes) return;
        for (int i = 0; i < spec->n_nodes; i++) {
            int k = spec->nodes[i];
            if (k != cast && k != clip && k != add && k != round) nodes[n++] = k;
        }
        korch_kernel_spec head = {.pg = pg, .n_nodes = n, .nodes = nodes, .n_inputs = spec->n_inputs,
                                  .inputs = spec->inputs, .n_outputs = 1, .outputs = &r};
        korch_pgraph *sub = NULL;
        korch_tensor *in = calloc((size_t)spec->n_inputs + 1, sizeof *in), rv = {0};
        bool ok = in && n > 0 && korch_pgraph_extract(&head, NULL, NULL, &sub) == KORCH_OK;
        int j = 0;
        for (int i = 0; ok && i < spec->n_inputs; i++)
            if (!pg->values[spec->inputs[i]].is_constant) ok = korch_tensor_clone(&vals[spec->inputs[i]], &in[j++]) == KORCH_OK;
        ok = ok && korch_pgraph_interpret(sub, in, &rv) == KORCH_OK && rv.dtype == KORCH_DTYPE_FLOAT32;
        if (ok && !pert[o].data) ok = korch_tensor_clone(&vals[y], &pert[o]) == KORCH_OK;
        if (ok) {
            const float *x = rv.data;
            uint8_t *p = pert[o].data, *w = vals[y].data;
            for (int64_t e = 0, ne = korch_tensor_numel(&rv); e < ne; e++) {
                double a = fabs((double)x[e]), d = fabs(a - floor(a) - 0.5);
                if (d <= ldexp(a + 1, -17)) p[e] = (uint8_t)(w[e] + 1); /* either way: exempt */
            }
        }
        korch_error_clear();
        korch_tensor_free(&rv);
        for (int i = 0; in && i < j; i++) korch_tensor_free(&in[i]);
        free(in);
        korch_pgraph_free(sub);
        free(nodes);
    }
}

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || d == KORCH_DTYPE_FLOAT16 || d == KORCH_DTYPE_BFLOAT16;
}

/* The rounding floor's scale for kernel output `value` (compare.c): the
 * largest magnitude among the values it is computed from inside the kernel
 * (the kernel inputs and intermediates on its path, and itself), as the
 * interpreter computed them (mag[]: a kernel runs on exactly those inputs,
 * so its rounding is relative to them). Not counted: constants (what they
 * contribute is in the products and sums computed from them) and integer or
 * boolean values (no rounding; a flipped comparison is the perturbed
 * reference's business). The path stops at an exp: its output's noise is
 * relative to that output (the rtol term), and an operand far larger than
 * anything that survives it (an attention mask of -10000 or -3.4e38 before
 * a softmax) must not set the floor of every element after it. */
static double kernel_sources(const korch_kernel_spec *spec, const double *mag, int value) {
    const korch_pgraph *pg = spec->pg;
    if (!mag || !is_float(pg->values[value].dtype)) return 0;
    int cap = spec->n_nodes * KORCH_MAX_RANK + 1, n = 0;
    int *cone = malloc((size_t)cap * sizeof *cone);
    if (!cone) return 0;
    cone[n++] = value;
    double m = 0;
    for (int i = 0; i < n; i++) {
        int v = cone[i];
        if (mag[v] > m) m = mag[v];
        int p = pg->values[v].producer, in_kernel = 0;
        for (int k = 0; p >= 0 && k < spec->n_nodes && !in_kernel; k++) in_kernel = spec->nodes[k] == p;
        if (!in_kernel) continue; /* a kernel input */
        const korch_pnode *nd = &pg->nodes[p];
        if (nd->kind == KORCH_PRIM_ELEMENTWISE && nd->u.ew.op == KORCH_EW_EXP) continue;
        for (int k = 0; k < nd->n_inputs; k++) {
            int u = nd->inputs[k];
            if (u < 0 || pg->values[u].is_constant || !is_float(pg->values[u].dtype)) continue;
            bool seen = false;
            for (int j = 0; j < n && !seen; j++) seen = cone[j] == u;
            if (!seen && n < cap) cone[n++] = u;
        }
    }
    free(cone);
    return m;
}

static korch_status run_check(const korch_verify_item *item, korch_kernel *kernel, const korch_tensor *vals,
                              const double *mag, uint64_t seed, korch_verify_result *r) {
    const korch_kernel_spec *spec = &item->spec;
    const korch_pgraph *pg = spec->pg;
    int ni = spec->n_inputs, no = spec->n_outputs;
    korch_tensor *copies = calloc((size_t)ni + 1, sizeof *copies);
    korch_tensor *got = calloc((size_t)no + 1, sizeof *got), *pert = calloc((size_t)no + 1, sizeof *pert);
    void **ptrs = calloc((size_t)(ni + no) + 1, sizeof *ptrs);
    korch_status st = copies && got && pert && ptrs ? KORCH_OK
                                                    : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    for (int i = 0; i < ni && st == KORCH_OK; i++) {
        int v = spec->inputs[i];
        if (pg->values[v].is_constant) {
            ptrs[i] = pg->values[v].constant.data;
            continue;
        }
        st = korch_tensor_clone(&vals[v], &copies[i]);
        ptrs[i] = copies[i].data;
    }
    for (int o = 0; o < no && st == KORCH_OK; o++) {
        const korch_pvalue *pv = &pg->values[spec->outputs[o]];
        st = korch_tensor_alloc(&got[o], pv->dtype, &pv->shape);
        /* garbage, not zeros (NaN for floats): a kernel that reads its
         * output before writing it works on zeroed memory by luck only */
        if (st == KORCH_OK) memset(got[o].data, 0xff, korch_tensor_bytes(&got[o]));
        ptrs[ni + o] = got[o].data;
    }
    if (st == KORCH_OK) {
        korch_status rs = kernel->run(kernel, ptrs, ptrs + ni);
        if (rs != KORCH_OK) {
            set_wrong(r, "the kernel failed to run: %.200s", korch_last_error());
            korch_error_clear();
        } else {
            /* the sensitivity term only widens the tolerance: it is
             * computed (the nodes interpreted again) only when needed */
            korch_verify_tolerance tol = korch_verify_tolerance_for(korch_verify_reduction_length(spec));
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) {
                    perturbed_reference(spec, vals, seed, pert);
                    exempt_rounding_ties(spec, vals, pert);
                }
                r->verdict = KORCH_VERDICT_VERIFIED;
                r->worst_ratio = r->max_abs = 0;
                for (int o = 0; o < no; o++) {
                    korch_verify_diff d;
                    char why[160];
                    const korch_tensor *p = pert[o].data ? &pert[o] : NULL;
                    tol.sources = kernel_sources(spec, mag, spec->outputs[o]);
                    bool ok = korch_verify_compare(&got[o], &vals[spec->outputs[o]], p, &tol, &d, why, sizeof why);
                    if (d.worst_ratio > r->worst_ratio || isnan(d.worst_ratio)) r->worst_ratio = d.worst_ratio;
                    if (d.max_abs > r->max_abs) r->max_abs = d.max_abs;
                    if (!ok && r->verdict == KORCH_VERDICT_VERIFIED) {
                        char text[200];
                        korch_verify_diff_format(&d, &vals[spec->outputs[o]].shape, text, sizeof text);
                        r->verdict = KORCH_VERDICT_WRONG;
                        snprintf(r->detail, sizeof r->detail, "output %d (value %d): %s", o, spec->outputs[o], text);
                    }
                }
                if (r->verdict == KORCH_VERDICT_VERIFIED) break;
            }
        }
    }
    for (int i = 0; copies && i < ni; i++) korch_tensor_free(&copies[i]);
    for (int o = 0; got && o < no; o++) korch_tensor_free(&got[o]);
    for (int o = 0; pert && o < no; o++) korch_tensor_free(&pert[o]);
    free(copies);
    free(got);
    free(pert);
    free(ptrs);
    return st;
}

/* ---- building ------------------------------------------------------------------ */

/* Builds the kernels of every non-REF item, per backend in one batch; when a
 * batch fails, one by one, so that one bad kernel is WRONG alone. */
static korch_status build_all(const korch_verify_item *items, int n, const korch_verify_options *o,
                              korch_kernel **kernels, korch_verify_result *results) {
    korch_kernel_spec *specs = malloc(((size_t)n + 1) * sizeof *specs);
    const char **scheds = malloc(((size_t)n + 1) * sizeof *scheds);
    int *idx = malloc(((size_t)n + 1) * sizeof *idx);
    korch_kernel **built = calloc((size_t)n + 1, sizeof *built);
    if (!specs || !scheds || !idx || !built) {
        free(specs);
        free(scheds);
        free(idx);
        free(built);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    }
    for (int kind = 0; kind < KORCH_BACKEND_COUNT; kind++) {
        if (kind == KORCH_BACKEND_REF) continue;
        int m = 0;
        for (int i = 0; i < n; i++) {
            if ((int)items[i].backend != kind || results[i].verdict != KORCH_VERDICT_UNKNOWN) continue;
            specs[m] = items[i].spec;
            scheds[m] = items[i].schedule;
            idx[m++] = i;
        }
        if (m == 0) continue;
        if (korch_backend_build((korch_backend_kind)kind, specs, scheds, m, o->build, built) == KORCH_OK) {
            for (int j = 0; j < m; j++) kernels[idx[j]] = built[j];
            continue;
        }
        korch_error_clear();
        for (int j = 0; j < m; j++) {
            korch_kernel *k = NULL;
            if (korch_backend_build((korch_backend_kind)kind, &specs[j], &scheds[j], 1, o->build, &k) == KORCH_OK) {
                kernels[idx[j]] = k;
            } else {
                set_wrong(&results[idx[j]], "the kernel failed to build: %.200s", korch_last_error());
                korch_error_clear();
            }
        }
    }
    free(specs);
    free(scheds);
    free(idx);
    free(built);
    return KORCH_OK;
}

/* ---- the walk ------------------------------------------------------------------ */

static int cmp_ready(const void *a, const void *b) {
    const check *x = a, *y = b;
    return (x->ready > y->ready) - (x->ready < y->ready);
}

korch_status korch_verify_kernels(const korch_pgraph *pg, const korch_verify_item *items, int n,
                                  const korch_verify_options *options, korch_verify_result *results) {
    korch_verify_options o = options ? *options : (korch_verify_options){0};
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        if (items[i].backend == KORCH_BACKEND_REF) {
            results[i].verdict = KORCH_VERDICT_VERIFIED; /* the interpreter itself */
            snprintf(results[i].detail, sizeof results[i].detail, "the interpreter (verified by construction)");
        }
    }
    int *order = malloc(((size_t)pg->n_nodes + 1) * sizeof *order);
    int *pos = malloc(((size_t)pg->n_nodes + 1) * sizeof *pos);
    int *uses = calloc((size_t)pg->n_values + 1, sizeof *uses);
    korch_tensor *vals = calloc((size_t)pg->n_values + 1, sizeof *vals);
    check *checks = malloc(((size_t)n + 1) * sizeof *checks);
    korch_kernel **kernels = calloc((size_t)n + 1, sizeof *kernels);
    double *mag = calloc((size_t)pg->n_values + 1, sizeof *mag); /* largest |element| per value (constants 0) */
    bool *needed = calloc((size_t)pg->n_nodes + 1, sizeof *needed);
    int count = 0, n_checks = 0;
    korch_status st = order && pos && uses && vals && checks && kernels && mag && needed
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    if (st == KORCH_OK) st = korch_pgraph_toposort(pg, order, &count);
    double t_build = korch_now_s(), t_check = 0;
    if (st == KORCH_OK) st = build_all(items, n, &o, kernels, results);
    t_build = korch_now_s() - t_build;
    double t_walk = korch_now_s();
    if (st != KORCH_OK) goto done;
    for (int i = 0; i < pg->n_nodes; i++) pos[i] = -1;
    for (int i = 0; i < count; i++) pos[order[i]] = i;
    for (int i = 0; i < n; i++) {
        if (!kernels[i]) continue;
        int ready = -1;
        for (int k = 0; k < items[i].spec.n_nodes; k++)
            if (pos[items[i].spec.nodes[k]] > ready) ready = pos[items[i].spec.nodes[k]];
        checks[n_checks++] = (check){.item = i, .ready = ready};
        for (int k = 0; k < items[i].spec.n_inputs; k++) uses[items[i].spec.inputs[k]]++;
        for (int k = 0; k < items[i].spec.n_outputs; k++) uses[items[i].spec.outputs[k]]++;
    }
    qsort(checks, (size_t)n_checks, sizeof *checks, cmp_ready);
    /* Only the nodes some check depends on are interpreted: the checked
     * kernels' nodes and everything upstream of them. A warm optimise that
     * meets two new kernels early in a model used to interpret all of it. */
    if (st == KORCH_OK) {
        for (int c = 0; c < n_checks; c++) {
            const korch_kernel_spec *spec = &items[checks[c].item].spec;
            for (int k = 0; k < spec->n_nodes; k++) needed[spec->nodes[k]] = true;
        }
        for (int i = count - 1; i >= 0; i--) {
            const korch_pnode *nd = &pg->nodes[order[i]];
            if (!needed[order[i]]) continue;
            for (int k = 0; k < nd->n_inputs; k++) {
                int p = pg->values[nd->inputs[k]].producer;
                if (p >= 0) needed[p] = true;
            }
        }
    }
    for (int i = 0; i < count; i++)
        for (int k = 0; k < pg->nodes[order[i]].n_inputs; k++) uses[pg->nodes[order[i]].inputs[k]]++;
    /* constants are borrowed; graph inputs are seeded or the caller's (copied) */
    for (int v = 0; v < pg->n_values; v++)
        if (pg->values[v].is_constant)
            vals[v] = (korch_tensor){.dtype = pg->values[v].dtype, .shape = pg->values[v].shape,
                                     .data = pg->values[v].constant.data};
    /* the same seeded inputs the plan check uses (the op graph knows which
     * integer inputs are indices); a primitive graph without one (tests)
     * gets plain seeded data */
    korch_tensor *seeded = NULL;
    if (st == KORCH_OK && !o.inputs && pg->source && pg->source->n_inputs == pg->n_inputs) {
        seeded = calloc((size_t)pg->n_inputs + 1, sizeof *seeded);
        st = seeded ? korch_verify_seeded_inputs(pg->source, o.seed, seeded)
                    : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    }
    for (int i = 0; i < pg->n_inputs && st == KORCH_OK; i++) {
        const korch_pvalue *pv = &pg->values[pg->inputs[i]];
        const korch_tensor *given = o.inputs ? &o.inputs[i] : seeded ? &seeded[i] : NULL;
        if (given) {
            if (given->dtype != pv->dtype || !korch_shape_equal(&given->shape, &pv->shape))
                st = korch_error(KORCH_ERR_SHAPE, "verify: input %d does not match the primitive graph", i);
            else st = korch_tensor_clone(given, &vals[pg->inputs[i]]);
        } else {
            st = korch_tensor_alloc(&vals[pg->inputs[i]], pv->dtype, &pv->shape);
            if (st == KORCH_OK) korch_verify_fill(&vals[pg->inputs[i]], o.seed + (uint64_t)i);
        }
        if (st == KORCH_OK) mag[pg->inputs[i]] = korch_verify_max_abs(&vals[pg->inputs[i]]);
    }
    for (int i = 0; seeded && i < pg->n_inputs; i++) korch_tensor_free(&seeded[i]);
    free(seeded);
    int next_check = 0;
    /* checks whose nodes are all dead (ready -1) run first, on inputs only */
    for (int i = -1; i < count && st == KORCH_OK && next_check < n_checks; i++) {
        if (i >= 0 && !needed[order[i]]) {
            /* no check depends on it: release what it would have read */
            const korch_pnode *nd = &pg->nodes[order[i]];
            for (int k = 0; k < nd->n_inputs; k++)
                if (--uses[nd->inputs[k]] == 0) korch_tensor_free(&vals[nd->inputs[k]]);
        } else if (i >= 0) {
            const korch_pnode *nd = &pg->nodes[order[i]];
            korch_tensor *in[KORCH_MAX_RANK] = {0}, *out[KORCH_PNODE_MAX_OUTPUTS] = {0};
            for (int k = 0; k < nd->n_inputs; k++) in[k] = &vals[nd->inputs[k]];
            for (int k = 0; k < nd->n_outputs && st == KORCH_OK; k++) {
                int v = nd->outputs[k];
                if (v < 0) continue;
                st = korch_tensor_alloc(&vals[v], pg->values[v].dtype, &pg->values[v].shape);
                out[k] = &vals[v];
            }
            if (st == KORCH_OK) st = korch_pgraph_run_node(pg, order[i], in, out);
            if (st != KORCH_OK) {
                st = korch_error_prefix(st, "verify: the reference (primitive interpreter) failed at node %d",
                                        order[i]);
                break;
            }
            for (int k = 0; k < nd->n_outputs; k++)
                if (nd->outputs[k] >= 0) mag[nd->outputs[k]] = korch_verify_max_abs(&vals[nd->outputs[k]]);
            for (int k = 0; k < nd->n_inputs; k++)
                if (--uses[nd->inputs[k]] == 0) korch_tensor_free(&vals[nd->inputs[k]]);
            for (int k = 0; k < nd->n_outputs; k++)
                if (nd->outputs[k] >= 0 && uses[nd->outputs[k]] == 0) korch_tensor_free(&vals[nd->outputs[k]]);
        }
        for (; next_check < n_checks && checks[next_check].ready <= i && st == KORCH_OK; next_check++) {
            int it = checks[next_check].item;
            const korch_kernel_spec *spec = &items[it].spec;
            double t0 = korch_now_s();
            st = run_check(&items[it], kernels[it], vals, mag, o.seed ^ 0x5bd1e995u, &results[it]);
            t_check += korch_now_s() - t0;
            for (int k = 0; k < spec->n_inputs; k++)
                if (--uses[spec->inputs[k]] == 0) korch_tensor_free(&vals[spec->inputs[k]]);
            for (int k = 0; k < spec->n_outputs; k++)
                if (--uses[spec->outputs[k]] == 0) korch_tensor_free(&vals[spec->outputs[k]]);
        }
    }
    if (o.timing) {
        long ran = 0;
        for (int i = 0; i < count; i++) ran += needed[order[i]];
        o.timing->interpreted += ran;
        o.timing->skipped += count - ran;
        o.timing->build += t_build;
        o.timing->check += t_check;
        o.timing->interpret += korch_now_s() - t_walk - t_check;
    }
done:
    for (int i = 0; kernels && i < n; i++) korch_kernel_destroy(kernels[i]);
    for (int v = 0; vals && v < pg->n_values; v++) korch_tensor_free(&vals[v]);
    free(order);
    free(pos);
    free(uses);
    free(vals);
    free(checks);
    free(kernels);
    free(mag);
    free(needed);
    return st;
}
