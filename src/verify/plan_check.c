/* A whole plan against the reference executor, before it is written.
 *
 * The plan runs through the executor exactly as `korch run` runs it (arena,
 * in-place kernels), on seeded inputs and on the caller's; the reference
 * executor runs the ONNX graph on the same inputs, and once more on
 * perturbed inputs for the sensitivity term. Every graph output is compared.
 *
 * On a mismatch the fault is localised, cheapest explanation first:
 *  1. a plan kernel whose outputs differ from the interpreter's on the same
 *     inputs (korch_verify_kernels over the plan's kernels): that kernel;
 *  2. otherwise, if the primitive graph itself disagrees with the reference
 *     executor: fission (no kernel choice can fix it);
 *  3. otherwise the executor's memory plan or the accumulation of in-
 *     tolerance differences: reported as such. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/reference.h"
#include "runtime/executor.h"
#include "verify/verify.h"

/* Inputs of the graph: the caller's, or seeded. */
static korch_status make_inputs(const korch_graph *g, const korch_verify_options *o, korch_tensor *in) {
    if (!o->inputs) return korch_verify_seeded_inputs(g, o->seed, in);
    for (int i = 0; i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (o->inputs[i].dtype != v->dtype || !korch_shape_equal(&o->inputs[i].shape, &v->shape))
            return korch_error(KORCH_ERR_SHAPE, "verify: input \"%s\" does not have the model's dtype and shape",
                               v->name);
        const korch_tensor *want = g->specialized && g->specialized[i].data ? &g->specialized[i] : NULL;
        if (want && memcmp(o->inputs[i].data, want->data, korch_tensor_bytes(want)) != 0) {
            char a[200], b[200], name[160];
            return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                               "verify: the given input \"%s\" is %s, but the model is specialized for %s=%s",
                               korch_printable(v->name, name, sizeof name),
                               korch_tensor_values_format(&o->inputs[i], a, sizeof a), name,
                               korch_tensor_values_format(want, b, sizeof b));
        }
        KORCH_TRY(korch_tensor_clone(&o->inputs[i], &in[i]));
    }
    return KORCH_OK;
}

static void free_tensors(korch_tensor *t, int n) {
    for (int i = 0; t && i < n; i++) korch_tensor_free(&t[i]);
    free(t);
}

korch_verify_tolerance korch_verify_plan_tolerance(const korch_plan *plan, const korch_pgraph *pg) {
    (void)plan;
    (void)pg;
    /* A plan is many kernels deep, each adding its rounding to its inputs':
     * ten times the kernel rules, but no reduction term (a model's outputs
     * are not one long sum; measured on the zoo, docs/verification.md). */
    korch_verify_tolerance t = korch_verify_tolerance_for(1);
    t.rtol *= 10;
    t.atol *= 10;
    t.source_atol *= 10;
    return t;
}

static void observe_magnitude(void *user, const korch_graph *g, int value, const korch_tensor *t) {
    (void)g;
    ((double *)user)[value] = korch_verify_max_abs(t);
}

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || d == KORCH_DTYPE_FLOAT16 || d == KORCH_DTYPE_BFLOAT16;
}

/* The rounding floor's scale for graph output `value` (compare.c): the
 * largest magnitude among the values it is computed from, as the reference
 * run computed them (mag[]): the graph inputs and every intermediate on its
 * paths, itself included. The whole cone and not the output's operands
 * alone, because the remnant can be several operators away from the
 * cancellation (seed 6068: Max(c, ReduceSum(Concat(x, -x)) / c7), the
 * operands 0 and c, the noise from |x|). What is left out, as for kernels
 * (kernel_check.c, kernel_sources): constants (their contributions are in
 * the values computed from them), integer and boolean values (no rounding),
 * and everything before an Exp or a Softmax (their outputs' noise is
 * relative to the outputs; an attention mask of -10000 or -3.4e38 before
 * the softmax must not set the floor of every output of the model). This
 * overestimates where a large intermediate is scaled down later (x * 1e-3),
 * by at most that factor: the floor stays 7.6e-5 of the largest value
 * (source_atol 160 epsilons x sqrt(16)), far below the errors of real
 * faults, which are of the order of the values. */
static double plan_sources(const korch_graph *g, const double *mag, int value) {
    if (value < 0 || !mag || !is_float(g->values[value].dtype)) return 0;
    char *seen = calloc((size_t)g->n_values + 1, 1);
    int *stack = malloc(((size_t)g->n_values + 1) * sizeof *stack);
    double m = 0;
    int n = 0;
    if (seen && stack) {
        stack[n++] = value;
        seen[value] = 1;
    }
    while (n > 0) {
        int v = stack[--n];
        if (mag[v] > m) m = mag[v];
        int p = g->values[v].producer;
        if (p < 0) continue;
        const korch_node *nd = &g->nodes[p];
        if (!strcmp(nd->op_type, "Exp") || !strcmp(nd->op_type, "Softmax")) continue;
        for (int k = 0; k < nd->n_inputs; k++) {
            int u = nd->inputs[k];
            if (u < 0 || seen[u] || g->values[u].is_constant || !is_float(g->values[u].dtype)) continue;
            seen[u] = 1;
            stack[n++] = u;
        }
    }
    free(seen);
    free(stack);
    return m;
}

/* Step 1 of localising: each plan kernel alone against the interpreter. */
static korch_status localise_kernels(const korch_plan *plan, const korch_pgraph *pg, const korch_verify_options *o,
                                     korch_plan_check *out) {
    int n = plan->n_kernels;
    korch_verify_item *items = calloc((size_t)n + 1, sizeof *items);
    korch_verify_result *res = calloc((size_t)n + 1, sizeof *res);
    korch_status st = items && res ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    for (int k = 0; k < n && st == KORCH_OK; k++)
        items[k] = (korch_verify_item){.spec = korch_plan_kernel_spec(pg, &plan->kernels[k]),
                                       .backend = plan->kernels[k].backend,
                                       .schedule = plan->kernels[k].schedule};
    if (st == KORCH_OK) st = korch_verify_kernels(pg, items, n, o, res);
    for (int k = 0; k < n && st == KORCH_OK; k++) {
        if (res[k].verdict != KORCH_VERDICT_WRONG) continue;
        out->bad_kernel = k;
        out->bad_result = res[k];
        break;
    }
    free(items);
    free(res);
    return st;
}

/* One quantization step of output `value` when a DequantizeLinear computes
 * it (its largest scale, per axis), else 0. A QuantizeLinear upstream rounds
 * x / scale; float32 noise in a correct plan's x (another summation order)
 * rounds an element that sits near a tie to the other integer, which moves
 * the dequantized output by one step (docs/quantization.md; found by
 * korch-difftest --features qdq, seed 89: every strategy's plan refused). */
static double dequantized_step(const korch_graph *g, int value) {
    int p = value >= 0 ? g->values[value].producer : -1;
    if (p < 0 || strcmp(g->nodes[p].op_type, "DequantizeLinear") != 0 || g->nodes[p].n_inputs < 2) return 0;
    int s = g->nodes[p].inputs[1];
    if (s < 0 || !g->values[s].is_constant) return 0;
    double step = 0;
    for (int64_t i = 0, n = korch_tensor_numel(&g->values[s].constant); i < n; i++) {
        double v = fabs(korch_tensor_get_f64(&g->values[s].constant, i));
        if (isfinite(v) && v > step) step = v;
    }
    return step;
}

/* Step 2: the primitive graph against the reference executor; a bf16
 * graph as the float32 graph it was made from (korch_pgraph_interpret_fp32).
 * pert: the perturbed reference, or NULL (no sensitivity term). */
static korch_status localise_fission(const korch_pgraph *pg, const korch_tensor *in, const korch_tensor *want,
                                     const korch_tensor *pert, const korch_verify_tolerance *tol, const double *sources,
                                     int n_out, const korch_graph *g, korch_plan_check *out) {
    korch_tensor *got = calloc((size_t)n_out + 1, sizeof *got);
    if (!got) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    korch_status st = korch_pgraph_interpret_fp32(pg, in, got);
    for (int i = 0; i < n_out && st == KORCH_OK; i++) {
        korch_verify_diff d;
        korch_verify_tolerance ti = *tol;
        ti.step = dequantized_step(g, g->outputs[i]);
        ti.sources = sources[i];
        if (korch_verify_compare(&got[i], &want[i], pert ? &pert[i] : NULL, &ti, &d, NULL, 0)) continue;
        char text[220];
        korch_verify_diff_format(&d, &want[i].shape, text, sizeof text);
        out->fission_wrong = true;
        snprintf(out->detail, sizeof out->detail,
                 "the primitive graph (fission) disagrees with the reference executor at output \"%s\": %s",
                 g->values[g->outputs[i]].name, text);
        break;
    }
    for (int i = 0; i < n_out; i++) korch_tensor_free(&got[i]);
    free(got);
    return st;
}

/* Runs the graph on inputs perturbed by a few ulps into pert (the
 * sensitivity term): the reference executor (pg NULL), with its
 * quantizers' x moved by 2^-20 too for a model that quantizes (quant), or,
 * for a bf16 plan, the bf16 interpretation with the operands of its bf16
 * primitives moved by 2^-20 too. The moved values make it the second
 * computation of the noise rules (a model whose inputs are token ids has
 * no float input to perturb, and its roundings diverge all the same). A
 * quantizing model's second computation is the reference executor's and
 * not the interpretation's: a fault in fission must stay a difference from
 * the reference, not become part of the noise it is measured against. Where it cannot run: a copy of want (no
 * sensitivity term). */
static korch_status perturbed_run(const korch_graph *g, const korch_pgraph *pg, bool quant, const korch_tensor *in,
                                  uint64_t seed, korch_tensor *pert, int n_out, const korch_tensor *want) {
    int ni = g->n_inputs;
    korch_tensor *pin = calloc((size_t)ni + 1, sizeof *pin);
    korch_status st = pin ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    for (int i = 0; i < ni && st == KORCH_OK; i++) {
        st = korch_tensor_clone(&in[i], &pin[i]);
        if (st == KORCH_OK) korch_verify_perturb(&pin[i], seed + 0x1000u + (uint64_t)i);
    }
    if (st == KORCH_OK && (pg ? korch_pgraph_interpret_jittered(pg, pin, pert, seed + 0x2000u)
                           : quant ? korch_reference_run_jittered(g, pin, pert, seed + 0x2000u)
                                   : korch_reference_run(g, pin, pert)) != KORCH_OK) {
        korch_error_clear();
        for (int i = 0; i < n_out && st == KORCH_OK; i++) {
            korch_tensor_free(&pert[i]);
            st = korch_tensor_clone(&want[i], &pert[i]);
        }
    }
    free_tensors(pin, ni);
    return st;
}

/* What bf16 costs: the plan's distance from the float32 reference, relative
 * to the reference's magnitude (korch_plan_output_check). */
static void fp32_distance(const korch_tensor *got, const korch_tensor *ref, korch_plan_output_check *oc) {
    if (got->dtype != KORCH_DTYPE_FLOAT32 || ref->dtype != KORCH_DTYPE_FLOAT32) return;
    const float *a = got->data, *b = ref->data;
    double max_diff = 0, max_ref = 0, sum_diff = 0, sum_ref = 0;
    int64_t n = korch_tensor_numel(ref), counted = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) continue;
        double diff = fabs((double)a[i] - (double)b[i]), mag = fabs((double)b[i]);
        max_diff = fmax(max_diff, diff);
        max_ref = fmax(max_ref, mag);
        sum_diff += diff;
        sum_ref += mag;
        counted++;
    }
    if (!counted) return;
    oc->fp32_max_rel = max_ref > 0 ? max_diff / max_ref : max_diff;
    oc->fp32_mean_rel = sum_ref > 0 ? sum_diff / sum_ref : sum_diff / (double)counted;
}

/* Whether the model rounds a computed value to an integer: a
 * QuantizeLinear of a computed float32 tensor, what
 * korch_reference_run_jittered moves (the quantization noise rule,
 * korch_verify_noise_compare). */
static bool quantizes(const korch_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        int x = n->n_inputs > 0 ? n->inputs[0] : -1;
        if (!strcmp(n->op_type, "QuantizeLinear") && x >= 0 && !g->values[x].is_constant &&
            g->values[x].dtype == KORCH_DTYPE_FLOAT32)
            return true;
    }
    return false;
}

void korch_plan_check_free(korch_plan_check *c) {
    for (int i = 0; c->outputs && i < c->n_outputs; i++) free(c->outputs[i].name);
    free(c->outputs);
    memset(c, 0, sizeof *c);
}

korch_status korch_verify_plan(const korch_plan *plan, const korch_graph *g, const korch_pgraph *pg,
                               const korch_verify_options *o, korch_plan_check *out) {
    memset(out, 0, sizeof *out);
    out->bad_kernel = -1;
    int ni = g->n_inputs, no = g->n_outputs;
    if (ni != pg->n_inputs || no != pg->n_outputs)
        return korch_error(KORCH_ERR_INTERNAL, "verify: the primitive graph's inputs or outputs differ from the model's");
    korch_tensor *in = calloc((size_t)ni + 1, sizeof *in);
    korch_tensor *want = calloc((size_t)no + 1, sizeof *want), *pert = calloc((size_t)no + 1, sizeof *pert);
    korch_tensor *got = calloc((size_t)no + 1, sizeof *got);
    double *mag = calloc((size_t)g->n_values + 1, sizeof *mag), *sources = calloc((size_t)no + 1, sizeof *sources);
    out->outputs = calloc((size_t)no + 1, sizeof *out->outputs);
    out->n_outputs = no;
    korch_executor *ex = NULL;
    korch_status st = in && want && pert && got && mag && sources && out->outputs
                          ? KORCH_OK
                          : korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    if (st == KORCH_OK) st = make_inputs(g, o, in);
    for (int i = 0; i < ni && st == KORCH_OK; i++) mag[g->inputs[i]] = korch_verify_max_abs(&in[i]);
    if (st == KORCH_OK) {
        st = korch_reference_run_observed(g, in, want, observe_magnitude, mag);
        if (st != KORCH_OK)
            st = korch_error_prefix(st, "verify: the reference executor cannot run the model on %s inputs",
                                    o->inputs ? "the given" : "seeded random");
    }
    for (int i = 0; i < no && st == KORCH_OK; i++) {
        const korch_value *v = &g->values[g->outputs[i]];
        st = korch_tensor_alloc(&got[i], v->dtype, &v->shape);
        out->outputs[i].name = strdup(v->name ? v->name : "");
        if (st == KORCH_OK && !out->outputs[i].name) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "verify: out of memory");
    }
    if (st == KORCH_OK) {
        korch_status es = korch_executor_create(plan, pg, o->build, &ex);
        if (es == KORCH_OK) es = korch_executor_run(ex, in, got);
        if (es != KORCH_OK) {
            out->ok = false;
            snprintf(out->detail, sizeof out->detail, "the plan failed to run: %.400s", korch_last_error());
            korch_error_clear();
            st = localise_kernels(plan, pg, o, out);
            goto done;
        }
    }
    korch_verify_tolerance tol = korch_verify_plan_tolerance(plan, pg);
    for (int i = 0; i < no && st == KORCH_OK; i++) sources[i] = plan_sources(g, mag, g->outputs[i]);
    /* A bf16 plan (docs/precision.md, "Verification"): the float32 graph it
     * was made from must match the reference executor (fission), and the plan
     * must match the bf16 graph interpreted, which rounds the linear
     * primitives' operands exactly as the kernels do; its distance from the
     * reference is measured and reported, not bounded. */
    bool bf16 = korch_pgraph_precision(pg) == KORCH_PRECISION_BF16;
    if (bf16 && st == KORCH_OK) {
        for (int pass = 0; pass < 2 && st == KORCH_OK; pass++) {
            out->fission_wrong = false;
            if (pass == 1) st = perturbed_run(g, NULL, false, in, o->seed, pert, no, want);
            if (st == KORCH_OK) st = localise_fission(pg, in, want, pass ? pert : NULL, &tol, sources, no, g, out);
            if (st != KORCH_OK || !out->fission_wrong) break;
        }
        if (st == KORCH_OK && out->fission_wrong) {
            out->ok = false;
            goto done;
        }
        for (int i = 0; i < no; i++) fp32_distance(&got[i], &want[i], &out->outputs[i]);
        for (int i = 0; i < no; i++) {
            korch_tensor_free(&want[i]);
            korch_tensor_free(&pert[i]);
        }
        if (st == KORCH_OK) st = korch_pgraph_interpret(pg, in, want);
    }
    /* the sensitivity term only widens the tolerance: the reference runs on
     * perturbed inputs only when the plan fails without it (the interpreter
     * with jitter where the model quantizes: the noise rule's computation) */
    bool quant = quantizes(g);
    for (int pass = 0; pass < 2 && st == KORCH_OK; pass++) {
        if (pass == 1)
            st = perturbed_run(g, bf16 ? pg : NULL, quant, in, o->seed, pert, no, want);
        out->ok = st == KORCH_OK;
        for (int i = 0; i < no && st == KORCH_OK; i++) {
            korch_verify_diff d;
            char why[160];
            korch_verify_tolerance ti = tol;
            ti.step = dequantized_step(g, g->outputs[i]);
            ti.sources = sources[i];
            bool ok = korch_verify_compare(&got[i], &want[i], pass ? &pert[i] : NULL, &ti, &d, why, sizeof why);
            out->outputs[i].worst_ratio = d.worst_index >= 0 ? d.worst_ratio : 0;
            out->outputs[i].max_abs = d.max_abs;
            double noise_ratio = 0;
            char noise[240] = "";
            if (!ok && pass == 1 && (bf16 || quant) &&
                korch_verify_noise_compare(&got[i], &want[i], &pert[i], bf16 ? "bf16" : "quantization", &noise_ratio,
                                           noise, sizeof noise)) {
                ok = true;
                out->outputs[i].worst_ratio = noise_ratio;
            }
            if (!ok && out->ok) {
                char text[220];
                if (d.elements) korch_verify_diff_format(&d, &want[i].shape, text, sizeof text);
                else snprintf(text, sizeof text, "%s", why);
                snprintf(out->detail, sizeof out->detail, "output \"%s\": %s%s%s", out->outputs[i].name, text,
                         noise[0] ? "; " : "", noise);
                out->ok = false;
            }
        }
        if (out->ok) break;
    }
    if (st == KORCH_OK && !out->ok) {
        char first[sizeof out->detail];
        memcpy(first, out->detail, sizeof first);
        st = localise_kernels(plan, pg, o, out);
        /* (a bf16 plan's graph was compared with the reference above) */
        if (st == KORCH_OK && out->bad_kernel < 0 && !bf16)
            st = localise_fission(pg, in, want, pert, &tol, sources, no, g, out);
        if (st == KORCH_OK && out->bad_kernel < 0 && !out->fission_wrong)
            snprintf(out->detail, sizeof out->detail,
                     "%.300s; every kernel matches the interpreter alone and the primitive graph matches the "
                     "reference%s, so the fault is in how the plan runs them (memory plan, in-place kernels) or "
                     "in accumulated rounding",
                     first, bf16 ? " (the plan is compared with the bf16 graph interpreted)" : "");
    }
done:
    korch_executor_destroy(ex);
    free_tensors(in, ni);
    free_tensors(want, no);
    free_tensors(pert, no);
    free_tensors(got, no);
    free(mag);
    free(sources);
    return st;
}
