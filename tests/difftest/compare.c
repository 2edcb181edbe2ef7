#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_float(korch_dtype d) {
    return d == KORCH_DTYPE_FLOAT32 || d == KORCH_DTYPE_FLOAT64 || d == KORCH_DTYPE_FLOAT16 || d == KORCH_DTYPE_BFLOAT16;
}

bool dt_compare(const korch_tensor *got, const korch_tensor *want, double terms, double scale_floor, dt_mismatch *m) {
    return dt_compare_q(got, want, terms, scale_floor, NULL, m);
}

bool dt_compare_q(const korch_tensor *got, const korch_tensor *want, double terms, double scale_floor,
                  const dt_qstep *q, dt_mismatch *m) {
    memset(m, 0, sizeof *m);
    m->index = -1;
    char a[64], b[64];
    if (got->dtype != want->dtype) {
        snprintf(m->what, sizeof m->what, "dtype %s, reference %s", korch_dtype_name(got->dtype),
                 korch_dtype_name(want->dtype));
        return false;
    }
    if (!korch_shape_equal(&got->shape, &want->shape)) {
        snprintf(m->what, sizeof m->what, "shape %s, reference %s", korch_shape_format(&got->shape, a, sizeof a),
                 korch_shape_format(&want->shape, b, sizeof b));
        return false;
    }
    int64_t n = korch_tensor_numel(want);
    if (!is_float(want->dtype)) {
        for (int64_t i = 0; i < n; i++) {
            int64_t x = korch_tensor_get_i64(got, i), y = korch_tensor_get_i64(want, i);
            if (x == y) continue;
            if (m->count++ == 0) m->index = i, m->got = (double)x, m->want = (double)y, m->err = fabs((double)(x - y));
        }
        m->worst_ratio = m->count ? INFINITY : 0;
        return m->count == 0;
    }
    double scale = scale_floor > 0 && isfinite(scale_floor) ? scale_floor : 0;
    for (int64_t i = 0; i < n; i++) {
        double y = korch_tensor_get_f64(want, i);
        if (isfinite(y) && fabs(y) > scale) scale = fabs(y);
    }
    double abs_part = scale * (DT_ATOL + DT_PER_TERM * terms);
    /* a half output: one step of its format (relative), the smallest subnormal near 0 */
    double step = want->dtype == KORCH_DTYPE_FLOAT16 ? ldexp(1.0, -10) : want->dtype == KORCH_DTYPE_BFLOAT16 ? ldexp(1.0, -7) : 0;
    double step_floor = want->dtype == KORCH_DTYPE_FLOAT16 ? ldexp(1.0, -24) : want->dtype == KORCH_DTYPE_BFLOAT16 ? ldexp(1.0, -133) : 0;
    bool quant = q && q->n > 0 && q->scale && q->inner > 0;
    for (int64_t i = 0; i < n; i++) {
        double x = korch_tensor_get_f64(got, i), y = korch_tensor_get_f64(want, i);
        double err, bound = DT_RTOL * fabs(y) + abs_part, ratio;
        if (step > 0) bound += step * fabs(y) + step_floor;
        if (quant) bound += fabs(q->scale[(i / q->inner) % q->n]);
        if (isnan(y) || isnan(x) || isinf(y) || isinf(x)) {
            bool same = (isnan(x) && isnan(y)) || x == y;
            err = same ? 0 : INFINITY;
            ratio = same ? 0 : INFINITY;
        } else {
            err = fabs(x - y);
            ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
        }
        if (ratio > 1) m->count++;
        if (ratio > m->worst_ratio || m->index < 0) {
            m->worst_ratio = ratio;
            m->index = i, m->got = x, m->want = y, m->err = err, m->bound = bound;
        }
    }
    return m->count == 0;
}

static int64_t numel_of(const korch_graph *g, int v) {
    return v >= 0 && g->values[v].has_shape ? korch_shape_numel(&g->values[v].shape) : 1;
}

/* Terms one node adds up per output element (1 for a pure elementwise op). */
static double node_terms(const korch_graph *g, const korch_node *n) {
    const char *op = n->op_type;
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1, in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    const korch_shape *s0 = in0 >= 0 ? &g->values[in0].shape : NULL, *s1 = in1 >= 0 ? &g->values[in1].shape : NULL;
    if ((!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose")) && s1 && s1->rank >= 2) {
        /* Conv: weights (Cout, Cin/g, k...): Cin/g * k...; ConvTranspose: (Cin, Cout/g, k...): at most Cin * k... */
        return (double)korch_shape_numel(s1) / (double)s1->dims[!strcmp(op, "Conv") ? 0 : 1];
    }
    if (!strcmp(op, "MatMul") && s0 && s0->rank >= 1) return (double)s0->dims[s0->rank - 1];
    if (!strcmp(op, "Gemm") && s0 && s0->rank == 2)
        return (double)s0->dims[korch_node_attr_int(n, "transA", 0) ? 0 : 1];
    if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
        int r = s0 ? s0->rank : 0, a = (int)korch_node_attr_int(n, "axis", -1);
        return r ? (double)s0->dims[a < 0 ? a + r : a] : 1;
    }
    if (!strcmp(op, "LayerNormalization") && s0) {
        int a = (int)korch_node_attr_int(n, "axis", -1), r = s0->rank;
        double t = 1;
        for (int i = a < 0 ? a + r : a; i < r; i++) t *= (double)s0->dims[i];
        return 2 * t; /* mean, then variance */
    }
    if ((!strcmp(op, "InstanceNormalization") || !strcmp(op, "MeanVarianceNormalization")) && s0 && s0->rank >= 2)
        return 2.0 * (double)korch_shape_numel(s0) / (double)(s0->dims[0] * s0->dims[1]);
    /* reductions and pooling: input elements per output element */
    double ratio = (double)numel_of(g, in0) / (double)(n->n_outputs ? numel_of(g, n->outputs[0]) : 1);
    return ratio > 1 ? ratio : 1;
}

void dt_reduction_terms(const korch_graph *g, double *terms) {
    double *acc = calloc((size_t)g->n_values + 1, sizeof *acc);
    if (!acc) {
        for (int i = 0; i < g->n_outputs; i++) terms[i] = 1e4; /* lenient rather than wrong */
        return;
    }
    /* to a fixpoint: no assumption on the node order */
    for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        double in = 0;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && acc[n->inputs[k]] > in) in = acc[n->inputs[k]];
        double t = in + node_terms(g, n);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && acc[n->outputs[k]] < t) acc[n->outputs[k]] = t, changed = true;
    }
    }
    for (int i = 0; i < g->n_outputs; i++) terms[i] = acc[g->outputs[i]];
    free(acc);
}

void dt_bf16_terms(const korch_graph *g, double *terms) {
    int linear = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const char *op = g->nodes[i].op_type;
        linear += !g->nodes[i].dead && (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") ||
                                        !strcmp(op, "MatMul") || !strcmp(op, "Gemm"));
    }
    for (int i = 0; i < g->n_outputs; i++) terms[i] += linear * DT_BF16_PER_LINEAR / DT_PER_TERM;
}

void dt_observe_magnitude(void *user, const korch_graph *g, int value, const korch_tensor *t) {
    double *mag = user, m = 0;
    (void)g;
    if (!is_float(t->dtype)) return;
    int64_t n = korch_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double y = fabs(korch_tensor_get_f64(t, i));
        if (isfinite(y) && y > m) m = y;
    }
    if (m > mag[value]) mag[value] = m;
}

void dt_output_scales(const korch_graph *g, const double *magnitude, double *scales) {
    double *up = calloc((size_t)g->n_values + 1, sizeof *up);
    if (!up) {
        for (int i = 0; i < g->n_outputs; i++) scales[i] = 0;
        return;
    }
    for (int v = 0; v < g->n_values; v++) up[v] = g->values[v].is_constant ? 0 : magnitude[v];
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < g->n_nodes; i++) {
            const korch_node *n = &g->nodes[i];
            if (n->dead) continue;
            double in = 0;
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] >= 0 && up[n->inputs[k]] > in) in = up[n->inputs[k]];
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0 && up[n->outputs[k]] < in) up[n->outputs[k]] = in, changed = true;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) scales[i] = up[g->outputs[i]];
    free(up);
}

void dt_qstep_of(const korch_graph *g, int value, dt_qstep *q) {
    memset(q, 0, sizeof *q);
    int p = value >= 0 ? g->values[value].producer : -1;
    if (p < 0 || strcmp(g->nodes[p].op_type, "DequantizeLinear") != 0 || g->nodes[p].n_inputs < 2) return;
    const korch_node *n = &g->nodes[p];
    int sv = n->inputs[1];
    if (sv < 0 || !g->values[sv].is_constant) return;
    const korch_tensor *s = &g->values[sv].constant;
    int64_t count = korch_tensor_numel(s);
    const korch_shape *shape = &g->values[value].shape;
    if (count < 1) return;
    int64_t inner = 1;
    if (count > 1) { /* per axis: the axis attribute (default 1) */
        int axis = (int)korch_node_attr_int(n, "axis", 1);
        if (axis < 0) axis += shape->rank;
        if (axis < 0 || axis >= shape->rank || shape->dims[axis] != count) return;
        for (int k = axis + 1; k < shape->rank; k++) inner *= shape->dims[k];
    }
    q->scale = malloc(sizeof *q->scale * (size_t)count);
    if (!q->scale) return;
    for (int64_t i = 0; i < count; i++) q->scale[i] = korch_tensor_get_f64(s, i);
    q->n = (int)count;
    q->inner = inner;
}

void dt_qstep_free(dt_qstep *q) {
    free(q->scale);
    memset(q, 0, sizeof *q);
}
