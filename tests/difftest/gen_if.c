/* Feature "if" (DT_FEAT_IF): run-time Ifs, as exporters write a threshold
 * test on a score (openWakeWord's hey_jarvis: If(score >= 0.5)).
 *
 * After the other features, up to two Ifs whose condition is
 * `ReduceMax|ReduceMin(x) >= t` of an exact value x (every correct plan
 * computes the reduction bit for bit, so no plan takes the other branch),
 * kept at rank (a [1, ..., 1] condition, as exporters write it) or reduced
 * to a scalar; t is drawn so that both branches are taken across seeds.
 * The branches read values of the main graph (captures) of one shape:
 *   - elementwise branches (an activation times a constant; Neg, Tanh or
 *     Abs plus a constant): if-converted (frontend/if_convert.c), so the
 *     branches and the Where fuse with the graph;
 *   - sometimes a then-branch that gathers along axis 0 at reversed
 *     indices computed at run time: a Gather the conversion cannot prove
 *     in range keeps the If opaque (its branch runs in the reference
 *     executor), and the plan must still be right around it.
 * The If's output is read by one Add, a neighbour to fuse with. */
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

static const char *fresh(dt_gen *g, const char *stem) {
    return korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "%s%d", stem, g->w.counter++));
}

/* The nodes written since `from` become a branch graph with output `out`
 * (shape s): removed from the main graph's list. */
static Onnx__GraphProto *branch(dt_gen *g, size_t from, const char *name, const char *out, const korch_shape *s) {
    korch_onnx_writer *w = &g->w;
    Onnx__GraphProto *gp = korch_onnx_alloc(w, sizeof *gp);
    size_t n = w->n_nodes - from;
    Onnx__NodeProto **nodes = korch_onnx_alloc(w, sizeof *nodes * (n + 1));
    Onnx__ValueInfoProto **outs = korch_onnx_alloc(w, sizeof *outs);
    if (!gp || !nodes || !outs) return NULL;
    memcpy(nodes, w->nodes + from, sizeof *nodes * n);
    w->n_nodes = from;
    outs[0] = dt_value_info(w, out, s, 0);
    if (!outs[0]) return NULL;
    onnx__graph_proto__init(gp);
    gp->name = (char *)name;
    gp->n_node = n;
    gp->node = nodes;
    gp->n_output = 1;
    gp->output = outs;
    return gp;
}

/* A branch of elementwise nodes on value v: returns its output's name and
 * sets *mag to its magnitude. */
static const char *elementwise_branch(dt_gen *g, int v, bool then_side, double *mag) {
    dt_rng *r = &g->frng;
    static const char *const acts[] = {"Relu", "Sigmoid", "Tanh"};
    static const char *const others[] = {"Neg", "Tanh", "Abs"};
    const char *op = then_side ? acts[dt_int(r, 0, 2)] : others[dt_int(r, 0, 2)];
    const char *a = fresh(g, "br"), *in0[] = {dt_use(g, v)};
    dt_node(g, op, 1, in0, 1, &a);
    double m = strcmp(op, "Sigmoid") == 0 || strcmp(op, "Tanh") == 0 ? 1.0 : g->vals[v].mag;
    float k = (float)dt_unif(r, 0.5, 2.0);
    const char *y = fresh(g, "br"), *ins[] = {a, dt_const_scalar(g, k)};
    dt_node(g, then_side ? "Mul" : "Add", 2, ins, 1, &y);
    *mag = then_side ? m * k : m + k;
    return y;
}

/* Gather(v, reversed 0..n-1 + zero, axis 0): v's shape, its rows
 * reversed, at indices computed at run time (zero is Cast(ReduceMax(x) <
 * -1e30) of the exact value x: always 0, but not a constant), so the
 * conversion cannot prove them in range and the If stays opaque. */
static const char *gather_branch(dt_gen *g, int v, int xv, double *mag) {
    const dt_val *x = &g->vals[v];
    int64_t n = x->shape.dims[0];
    int64_t *idx = malloc(sizeof *idx * (size_t)(n + 1));
    if (!idx) return "";
    for (int64_t i = 0; i < n; i++) idx[i] = n - 1 - i;
    const char *rev = dt_const_i64(g, idx, (int)n);
    free(idx);
    const char *mx = fresh(g, "br"), *in0[] = {dt_use(g, xv)};
    korch_onnx_attr_int(&g->w, dt_node(g, "ReduceMax", 1, in0, 1, &mx), "keepdims", 0);
    const char *never = fresh(g, "br"), *lins[] = {mx, dt_const_scalar(g, -1e30f)};
    dt_node(g, "Less", 2, lins, 1, &never);
    const char *zero = fresh(g, "br");
    korch_onnx_attr_int(&g->w, dt_node(g, "Cast", 1, &never, 1, &zero), "to", KORCH_DTYPE_INT64);
    const char *at = fresh(g, "br"), *ains[] = {rev, zero};
    dt_node(g, "Add", 2, ains, 1, &at);
    const char *ins[] = {dt_use(g, v), at}, *y = fresh(g, "br");
    Onnx__NodeProto *node = dt_node(g, "Gather", 2, ins, 1, &y);
    korch_onnx_attr_int(&g->w, node, "axis", 0);
    *mag = x->mag;
    return y;
}

static bool if_on(dt_gen *g, int xv, int a, int b) {
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[xv];
    bool is_max = dt_chance(r, 0.5), keep = dt_chance(r, 0.7);
    const char *red = fresh(g, "score"), *in0[] = {dt_use(g, xv)};
    Onnx__NodeProto *rn = dt_node(g, is_max ? "ReduceMax" : "ReduceMin", 1, in0, 1, &red);
    korch_onnx_attr_int(&g->w, rn, "keepdims", keep);
    /* the max of many uniform elements is near +mag, the min near -mag:
     * a threshold anywhere in [-mag, mag] takes either branch */
    float t = (float)(dt_unif(r, -1.0, 1.0) * x->mag);
    const char *cond = fresh(g, "cond"), *cins[] = {red, dt_const_scalar(g, t)};
    dt_node(g, "GreaterOrEqual", 2, cins, 1, &cond);
    korch_shape s = g->vals[a].shape;
    bool opaque = s.rank >= 1 && dt_chance(r, 0.25);
    double mt = 0, me = 0;
    size_t from = g->w.n_nodes;
    const char *tout = opaque ? gather_branch(g, a, xv, &mt) : elementwise_branch(g, a, true, &mt);
    Onnx__GraphProto *then_g = branch(g, from, "then", tout, &s);
    from = g->w.n_nodes;
    const char *eout = elementwise_branch(g, b, false, &me);
    Onnx__GraphProto *else_g = branch(g, from, "else", eout, &s);
    if (!then_g || !else_g) return false;
    const char *y = fresh(g, "ify");
    Onnx__NodeProto *node = dt_node(g, "If", 1, &cond, 1, &y);
    Onnx__AttributeProto *ta = korch_onnx_add_attr(&g->w, node, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    Onnx__AttributeProto *ea = korch_onnx_add_attr(&g->w, node, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    if (!ta || !ea) return false;
    ta->g = then_g;
    ea->g = else_g;
    double mag = mt > me ? mt : me;
    if (dt_binary_named(g, "Add", y, dt_const_scalar(g, 0.25f), &s, mag + 0.25) < 0) return false;
    dt_cover(g, opaque ? "If with a Gather branch (opaque)" : "If, both branches elementwise (if-converted)");
    dt_cover(g, keep ? "If on a [1, ..., 1] condition" : "If on a scalar condition");
    return true;
}

void dt_feature_if(dt_gen *g) {
    if (!(g->features & DT_FEAT_IF)) return;
    dt_rng *r = &g->frng;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (x->dtype || x->hidden || !x->exact || x->shape.rank < 1 || !dt_chance(r, 0.6)) continue;
        /* branches on two values of one shape (or one value twice) */
        int a = (int)dt_int(r, 0, n - 1), b = -1;
        const dt_val *va = &g->vals[a];
        if (va->dtype || va->hidden || dt_numel(&va->shape) > DT_MAX_ELEMS / 2) continue;
        for (int k = 0; k < n && b < 0; k++) {
            int c = (k + (int)dt_int(r, 0, n - 1)) % n;
            if (!g->vals[c].dtype && !g->vals[c].hidden && korch_shape_equal(&g->vals[c].shape, &va->shape)) b = c;
        }
        if (b < 0) b = a;
        if (if_on(g, v, a, b)) made++;
    }
}
