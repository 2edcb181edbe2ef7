/* If-conversion: a run-time If becomes straight-line code. Both branches
 * move into the main graph and one Where per output picks, by the
 * condition, the branch's value:
 *
 *     y = If(c) { then: t = f(x) } { else: e = g(x) }
 *  -> t = f(x); e = g(x); y = Where(Reshape(c, []), t, e)
 *
 * An opaque If runs its branch in the reference executor, unoptimized, and
 * keeps the plan from being exported; after the conversion the optimizer
 * sees one graph (a wake-word model's verifier MLP behind a threshold,
 * openWakeWord's hey_jarvis, fuses with the network before it).
 *
 * It is only done where computing the branch the condition does not take
 * cannot change what the model does:
 *   - every live node of both branches is an operator whose run, at the
 *     shapes inference fixed, does not depend on values in a way that can
 *     fail: float arithmetic (NaN and infinities are values, and Where
 *     drops the untaken branch's), comparisons, data movement whose
 *     offsets inference already fixed as constants, and Gathers at
 *     constant indices all within range. Other gathers and scatters
 *     (an index out of range is an error), integer division (by zero),
 *     casts to integers (undefined for NaN in C), nested control flow and
 *     other domains are not converted;
 *   - both branches infer (neither is `unusable`) and agree on every
 *     output's dtype and shape (inference checked it);
 *   - both together cost at most KORCH_IF_CONVERT_MAX_FLOPS, so computing
 *     the untaken one is cheap next to a reference-executor run;
 *   - only in the main graph: inside a Loop body, which runs in the
 *     reference executor anyway, it would only add work.
 * `korch check` says which Ifs were converted and why the others were not
 * (korch_graph_report_control_flow). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "frontend/subgraph.h"
#include "frontend/summary.h"
#include "ops/flop_count.h"
#include "ops/op.h"

#define KORCH_IF_CONVERT_MAX_FLOPS (64LL * 1000 * 1000)

/* Data movement and selection: any dtype. */
static const char *const moving_ops[] = {"Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose",
                                         "Concat",   "Slice",   "Expand",  "Split",   "Tile",      "Where",
                                         "Dropout",  "DepthToSpace", "SpaceToDepth", "Pad", NULL};
/* Comparisons and logic: bool outputs. */
static const char *const comparing_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                                            "And",   "Or",   "Xor",     "IsNaN",       "IsInf",          NULL};
/* Arithmetic: converted only when every output is floating point. */
static const char *const float_ops[] = {
    "Abs", "Acos", "Acosh", "Add", "Asin", "Asinh", "Atan", "Atanh", "AveragePool", "BatchNormalization", "Ceil",
    "Celu", "Clip", "Conv", "ConvTranspose", "Cos", "Cosh", "Div", "Elu", "Erf", "Exp", "Floor", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "InstanceNormalization", "LayerNormalization",
    "LeakyRelu", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "MeanVarianceNormalization", "Min", "Mish",
    "Mul", "Neg", "Pow", "PRelu", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Round", "Selu",
    "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan",
    "Tanh", "ThresholdedRelu", NULL};

static bool listed(const char *const *list, const char *op) {
    for (; *list; list++)
        if (strcmp(*list, op) == 0) return true;
    return false;
}

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || korch_dtype_is_half(d);
}

static bool outputs_are(const korch_graph *b, const korch_node *n, bool want_float) {
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        korch_dtype d = b->values[n->outputs[k]].dtype;
        if (want_float ? !is_float(d) : d != KORCH_DTYPE_BOOL) return false;
    }
    return true;
}

/* A Gather whose indices are constants, every one within the axis (as
 * exporters select a row of a constant table): it cannot fail. */
static bool gather_in_range(const korch_graph *b, const korch_node *n) {
    if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return false;
    const korch_value *data = &b->values[n->inputs[0]], *idx = &b->values[n->inputs[1]];
    if (!idx->is_constant) return false;
    int64_t axis = korch_node_attr_int(n, "axis", 0), rank = data->shape.rank;
    if (axis < -rank || axis >= rank) return false;
    int64_t dim = data->shape.dims[axis < 0 ? axis + rank : axis], count = korch_shape_numel(&idx->constant.shape);
    for (int64_t i = 0; i < count; i++) {
        int64_t k;
        if (idx->constant.dtype == KORCH_DTYPE_INT64) k = ((const int64_t *)idx->constant.data)[i];
        else if (idx->constant.dtype == KORCH_DTYPE_INT32) k = ((const int32_t *)idx->constant.data)[i];
        else return false;
        if (k < -dim || k >= dim) return false;
    }
    return true;
}

/* Whether live node n of branch b may run whatever the condition. */
static bool safe_to_run(const korch_graph *b, const korch_node *n) {
    if (n->domain[0] != '\0' || n->n_implicit_inputs) return false;
    if (listed(moving_ops, n->op_type)) return true;
    if (listed(comparing_ops, n->op_type)) return outputs_are(b, n, false);
    if (listed(float_ops, n->op_type)) return outputs_are(b, n, true);
    if (strcmp(n->op_type, "Gather") == 0) return gather_in_range(b, n);
    if (strcmp(n->op_type, "Cast") == 0) /* to bool or a float; never a float to an integer */
        return outputs_are(b, n, true) || outputs_are(b, n, false);
    return false;
}

const char *korch_graph_if_conversion_refusal(const korch_graph *g, int ni, char *buf, size_t len) {
    static const char *const names[2] = {"then_branch", "else_branch"};
    const korch_node *n = &g->nodes[ni];
    if (g->depth) {
        snprintf(buf, len, "it is inside a subgraph, which runs in the reference executor");
        return buf;
    }
    if (korch_graph_opset(g, "") < 9) {
        snprintf(buf, len, "the model's opset (%lld) has no Where", (long long)korch_graph_opset(g, ""));
        return buf;
    }
    int64_t flops = 0;
    for (int b = 0; b < 2; b++) {
        const korch_graph *br = korch_node_subgraph(n, names[b]);
        if (!br || br->n_outputs != n->n_outputs) {
            snprintf(buf, len, "its %s is missing or has another number of outputs", names[b]);
            return buf;
        }
        if (br->unusable) {
            snprintf(buf, len, "its %s cannot run at these input shapes", names[b]);
            return buf;
        }
        for (int i = 0; i < br->n_nodes; i++) {
            const korch_node *m = &br->nodes[i];
            if (m->dead) continue;
            if (!safe_to_run(br, m)) {
                char mbuf[96], obuf[64];
                snprintf(buf, len,
                         "its %s has node \"%s\" (%s), which could fail or be undefined on the values a branch the "
                         "condition does not take sees, so korch runs a branch only when it is taken",
                         names[b], korch_printable(m->name, mbuf, sizeof mbuf),
                         korch_printable(m->op_type, obuf, sizeof obuf));
                return buf;
            }
            flops = korch_flops_add(flops, korch_node_flops(br, m));
        }
    }
    if (flops > KORCH_IF_CONVERT_MAX_FLOPS) {
        snprintf(buf, len, "its branches take %.1f MFLOP together, more than the %lld MFLOP up to which korch computes both",
                 (double)flops / 1e6, KORCH_IF_CONVERT_MAX_FLOPS / 1000000);
        return buf;
    }
    return NULL;
}

/* The condition as a scalar (Reshape to []), so each Where keeps its
 * output's shape whatever the condition's rank (a [1, 1] condition would
 * broadcast a scalar output to [1, 1]). */
static korch_status scalar_condition(korch_graph *g, int cond, const char *if_name, int *out) {
    if (g->values[cond].shape.rank == 0) {
        *out = cond;
        return KORCH_OK;
    }
    char name[200];
    snprintf(name, sizeof name, "%.160s/condition_shape", if_name);
    korch_shape empty = {.rank = 1, .dims = {0}};
    int shape = korch_graph_add_constant(g, name, KORCH_DTYPE_INT64, NULL, empty);
    int scalar = korch_graph_fresh_value(g, if_name, "condition");
    if (shape < 0 || scalar < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int in[2] = {cond, shape};
    snprintf(name, sizeof name, "%.160s/condition", if_name);
    *out = scalar;
    return korch_graph_append_node(g, "Reshape", name, in, 2, scalar, NULL);
}

korch_status korch_graph_if_convert(korch_graph *g, int ni, bool *done) {
    *done = false;
    char why[400];
    if (g->nodes[ni].dead || strcmp(g->nodes[ni].op_type, "If") != 0 || g->nodes[ni].domain[0] != '\0') return KORCH_OK;
    if (korch_graph_if_conversion_refusal(g, ni, why, sizeof why)) return KORCH_OK;
    static const char *const names[2] = {"then_branch", "else_branch"};
    static const char *const hints[2] = {"__then", "__else"};
    korch_graph *br[2];
    int *picked[2] = {NULL, NULL};
    char *if_name = strdup(g->nodes[ni].name);
    int n_out = g->nodes[ni].n_outputs, cond = -1;
    korch_status st = if_name ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == KORCH_OK) st = scalar_condition(g, g->nodes[ni].inputs[0], if_name, &cond);
    for (int b = 0; b < 2 && st == KORCH_OK; b++) {
        br[b] = korch_node_subgraph(&g->nodes[ni], names[b]);
        int *map = malloc(((size_t)br[b]->n_values + 1) * sizeof *map);
        picked[b] = malloc(((size_t)n_out + 1) * sizeof *picked[b]);
        if (!map || !picked[b]) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        for (int v = 0; v < br[b]->n_values && st == KORCH_OK; v++) map[v] = -1;
        char prefix[200];
        snprintf(prefix, sizeof prefix, "%.160s/%s", if_name, names[b]);
        if (st == KORCH_OK) st = korch_graph_inline_subgraph(g, ni, br[b], map, prefix, hints[b]);
        for (int k = 0; k < n_out && st == KORCH_OK; k++) picked[b][k] = map[br[b]->outputs[k]];
        free(map);
    }
    for (int k = 0; k < n_out && st == KORCH_OK; k++) {
        int out = g->nodes[ni].outputs[k];
        if (out < 0) continue;
        g->values[out].producer = -1;
        char name[200];
        snprintf(name, sizeof name, "%.160s/output_%d", if_name, k);
        int in[3] = {cond, picked[0][k], picked[1][k]};
        st = korch_graph_append_node(g, "Where", name, in, 3, out, NULL);
    }
    if (st == KORCH_OK) {
        g->nodes[ni].dead = true;
        g->nodes[ni].if_converted = true;
        *done = true;
    }
    free(picked[0]);
    free(picked[1]);
    free(if_name);
    return st;
}
