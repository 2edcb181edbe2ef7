/* The post-op chain of a oneDNN kernel: each elementwise step after the
 * linear primitive becomes oneDNN eltwise or binary post-ops, or is refused
 * with a reason (see dnnl_analyze.c for the whole picture). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/dnnl/dnnl_analyze.h"

#define REGION_MAX 24

/* ---- post-ops -------------------------------------------------------------- */

static bool push(actx *c, dn_post p) {
    if (c->d->n_post >= DN_MAX_POST) return an_fail(c, "more than %d post-ops", DN_MAX_POST);
    c->d->post[c->d->n_post++] = p;
    return true;
}

static bool eltwise(actx *c, int node, dnnl_alg_kind_t alg, float alpha, float beta) {
    return push(c, (dn_post){.kind = DN_POST_ELTWISE, .alg = alg, .alpha = alpha, .beta = beta, .slot = -1, .node = node});
}

static bool unary(actx *c, int node, korch_ew_op op, float a, float b) {
    char nm[160];
    switch (op) {
    case KORCH_EW_COPY: return true;
    case KORCH_EW_CAST: return true; /* float32 -> float32 (checked by the caller) */
    case KORCH_EW_NEG: return eltwise(c, node, dnnl_eltwise_linear, -1.0f, 0.0f);
    case KORCH_EW_ABS: return eltwise(c, node, dnnl_eltwise_abs, 0, 0);
    case KORCH_EW_EXP: return eltwise(c, node, dnnl_eltwise_exp, 0, 0);
    case KORCH_EW_LOG: return eltwise(c, node, dnnl_eltwise_log, 0, 0);
    case KORCH_EW_SQRT: return eltwise(c, node, dnnl_eltwise_sqrt, 0, 0);
    case KORCH_EW_RSQRT: return eltwise(c, node, dnnl_eltwise_pow, 1.0f, -0.5f);
    case KORCH_EW_RECIP: return eltwise(c, node, dnnl_eltwise_pow, 1.0f, -1.0f);
    case KORCH_EW_TANH: return eltwise(c, node, dnnl_eltwise_tanh, 0, 0);
    case KORCH_EW_SIGMOID: return eltwise(c, node, dnnl_eltwise_logistic, 0, 0);
    case KORCH_EW_RELU: return eltwise(c, node, dnnl_eltwise_relu, 0, 0);
    case KORCH_EW_SOFTPLUS: return eltwise(c, node, dnnl_eltwise_soft_relu, 0, 0);
    case KORCH_EW_ROUND: return eltwise(c, node, dnnl_eltwise_round, 0, 0); /* half to even, like ONNX */
    case KORCH_EW_LEAKY_RELU: return eltwise(c, node, dnnl_eltwise_relu, a, 0);
    case KORCH_EW_ELU: return eltwise(c, node, dnnl_eltwise_elu, a, 0);
    case KORCH_EW_CLIP:
        if (!(a <= b)) return an_fail(c, "%s: clip with min > max", an_node_name(c, node, nm, sizeof nm));
        return eltwise(c, node, dnnl_eltwise_clip, a, b);
    case KORCH_EW_AFFINE: return eltwise(c, node, dnnl_eltwise_linear, a, b);
    case KORCH_EW_POWC:
        if (a == 2.0f) return eltwise(c, node, dnnl_eltwise_square, 0, 0);
        return eltwise(c, node, dnnl_eltwise_pow, 1.0f, a);
    default:
        return an_fail(c, "%s: %s has no oneDNN post-op", an_node_name(c, node, nm, sizeof nm), korch_ew_name(op));
    }
}

/* op(v, s) or op(s, v) with s a scalar constant. */
static bool with_scalar(actx *c, int node, korch_ew_op op, bool v_first, double s) {
    char nm[160];
    float f = (float)s;
    switch (op) {
    case KORCH_EW_ADD: return eltwise(c, node, dnnl_eltwise_linear, 1.0f, f);
    case KORCH_EW_SUB: return eltwise(c, node, dnnl_eltwise_linear, v_first ? 1.0f : -1.0f, v_first ? -f : f);
    case KORCH_EW_MUL: return eltwise(c, node, dnnl_eltwise_linear, f, 0.0f);
    case KORCH_EW_DIV:
        if (c->pg->nodes[node].u.ew.alpha != 0) /* linear(1/s) and pow(s,-1) are not x / s to the last bit */
            return an_fail(c, "%s: an exact division (QuantizeLinear's) has no oneDNN eltwise post-op",
                           an_node_name(c, node, nm, sizeof nm));
        if (v_first) {
            if (s == 0) return an_fail(c, "%s: division by a zero constant", an_node_name(c, node, nm, sizeof nm));
            return eltwise(c, node, dnnl_eltwise_linear, (float)(1.0 / s), 0.0f);
        }
        return eltwise(c, node, dnnl_eltwise_pow, f, -1.0f);
    case KORCH_EW_MAX:
        if (f == 0.0f) return eltwise(c, node, dnnl_eltwise_relu, 0, 0);
        return eltwise(c, node, dnnl_eltwise_clip, f, FLT_MAX);
    case KORCH_EW_MIN: return eltwise(c, node, dnnl_eltwise_clip, -FLT_MAX, f);
    case KORCH_EW_POW:
        if (!v_first) break;
        if (f == 2.0f) return eltwise(c, node, dnnl_eltwise_square, 0, 0);
        return eltwise(c, node, dnnl_eltwise_pow, 1.0f, f);
    case KORCH_EW_PRELU:
        if (!v_first) break;
        return eltwise(c, node, dnnl_eltwise_relu, f, 0);
    default: break;
    }
    return an_fail(c, "%s: %s with a constant has no oneDNN post-op", an_node_name(c, node, nm, sizeof nm), korch_ew_name(op));
}

static bool is_per_channel(const actx *c, const korch_shape *s) {
    int lead = c->out_rank - s->rank;
    for (int k = 0; k < s->rank; k++) {
        int axis = lead + k;
        if (axis != c->channel_axis && s->dims[k] != 1) return false;
    }
    return true;
}

/* op(v, s) or op(s, v) with s a tensor (or a run-time scalar) from outside. */
static bool with_tensor(actx *c, int node, korch_ew_op op, bool v_first, int value) {
    char nm[160];
    const korch_pvalue *pv = &c->pg->values[value];
    int slot = an_input_slot(c, value);
    if (slot < 0)
        return an_fail(c, "%s: its second operand is computed inside the kernel, off the post-op chain",
                    an_node_name(c, node, nm, sizeof nm));
    if (pv->dtype != KORCH_DTYPE_FLOAT32)
        return an_fail(c, "%s: %s operand of dtype %s", an_node_name(c, node, nm, sizeof nm), korch_ew_name(op),
                    korch_dtype_name(pv->dtype));
    if (c->reshaped && korch_shape_numel(&pv->shape) != 1 &&
        korch_shape_numel(&pv->shape) != korch_shape_numel(&c->pg->values[c->pg->nodes[node].outputs[0]].shape))
        return an_fail(c, "%s: a broadcast operand after a reshape of the chain value", an_node_name(c, node, nm, sizeof nm));
    dnnl_alg_kind_t alg;
    switch (op) {
    case KORCH_EW_ADD: alg = dnnl_binary_add; break;
    case KORCH_EW_MUL: alg = dnnl_binary_mul; break;
    case KORCH_EW_MAX: alg = dnnl_binary_max; break;
    case KORCH_EW_MIN: alg = dnnl_binary_min; break;
    case KORCH_EW_SUB:
        alg = dnnl_binary_sub;
        if (!v_first) { /* s - v = -v + s */
            if (!eltwise(c, node, dnnl_eltwise_linear, -1.0f, 0.0f)) return false;
            alg = dnnl_binary_add;
        }
        break;
    case KORCH_EW_DIV:
        alg = dnnl_binary_div; /* a true division: exact (alpha 1) too */
        if (!v_first) { /* s / v = v^-1 * s, which is not s / v to the last bit */
            if (c->pg->nodes[node].u.ew.alpha != 0)
                return an_fail(c, "%s: an exact division of a tensor by the chain value has no oneDNN post-op",
                               an_node_name(c, node, nm, sizeof nm));
            if (!eltwise(c, node, dnnl_eltwise_pow, 1.0f, -1.0f)) return false;
            alg = dnnl_binary_mul;
        }
        break;
    default:
        return an_fail(c, "%s: %s with a tensor operand has no oneDNN post-op", an_node_name(c, node, nm, sizeof nm),
                    korch_ew_name(op));
    }
    /* a per-channel constant added first is the primitive's own bias; not
     * in int8, where oneDNN 2.6 scales the bias with the sum (dst = scale *
     * (acc + bias)): it stays a binary post-op, after the scale */
    if (alg == dnnl_binary_add && c->d->n_post == 0 && c->d->bias_slot < 0 && !c->reshaped && !c->d->src_q &&
        pv->is_constant &&
        pv->constant.data &&
        pv->shape.rank <= c->out_rank && is_per_channel(c, &pv->shape)) {
        c->d->bias_slot = slot;
        c->d->bias_data = pv->constant.data;
        int64_t channels = c->d->dst.dims[c->d->op == KORCH_LINEAR_MATMUL ? c->out_rank - 1 : 1];
        if (c->d->op == KORCH_LINEAR_MATMUL) {
            dn_tensor *b = &c->d->bias;
            b->ndims = c->out_rank;
            for (int j = 0; j < c->out_rank; j++) {
                b->dims[j] = j == c->out_rank - 1 ? channels : 1;
                b->strides[j] = j == c->out_rank - 1 ? 1 : channels;
            }
        } else {
            c->d->bias = (dn_tensor){.ndims = 1, .dims = {channels}, .strides = {1}};
        }
        if (korch_shape_numel(&pv->shape) == channels) return true;
        c->d->bias_slot = -1; /* a broadcast of a single value: not a bias */
        c->d->bias_data = NULL;
    }
    dn_post p = {.kind = DN_POST_BINARY, .alg = alg, .slot = slot, .node = node};
    if (c->reshaped && korch_shape_numel(&pv->shape) != 1) p.operand = c->d->dst; /* the same bytes as the output */
    else an_logical(c, &pv->shape, &p.operand);
    return push(c, p);
}

bool an_single_step(actx *c, int node, int v) {
    char nm[160];
    const korch_pnode *n = &c->pg->nodes[node];
    const korch_pvalue *y = &c->pg->values[n->outputs[0]], *vv = &c->pg->values[v];
    if (y->dtype != KORCH_DTYPE_FLOAT32)
        return an_fail(c, "%s: produces %s; oneDNN post-ops produce float32", an_node_name(c, node, nm, sizeof nm),
                    korch_dtype_name(y->dtype));
    if (!korch_shape_equal(&y->shape, &vv->shape))
        return an_fail(c, "%s: broadcasting enlarges the result beyond the linear output", an_node_name(c, node, nm, sizeof nm));
    korch_ew_op op = n->u.ew.op;
    int arity = korch_ew_arity(op);
    if (arity == 1) return unary(c, node, op, n->u.ew.alpha, n->u.ew.beta);
    if (arity != 2) return an_fail(c, "%s: %s has no oneDNN post-op", an_node_name(c, node, nm, sizeof nm), korch_ew_name(op));
    int a = n->inputs[0], b = n->inputs[1];
    if (a == v && b == v) {
        switch (op) {
        case KORCH_EW_MUL: return eltwise(c, node, dnnl_eltwise_square, 0, 0);
        case KORCH_EW_ADD: return eltwise(c, node, dnnl_eltwise_linear, 2.0f, 0.0f);
        case KORCH_EW_MAX:
        case KORCH_EW_MIN: return true;
        default: return an_fail(c, "%s: %s(x, x) has no oneDNN post-op", an_node_name(c, node, nm, sizeof nm), korch_ew_name(op));
        }
    }
    bool v_first = a == v;
    int other = v_first ? b : a;
    double s;
    if (an_scalar_constant(&c->pg->values[other], &s)) return with_scalar(c, node, op, v_first, s);
    return with_tensor(c, node, op, v_first, other);
}

/* Evaluates the region (spec node indices region[0..n)) at the sample
 * points: ys[p] = value of derived[n] when derived[0] = xs[p]. */
static void region_eval(const actx *c, const int *region, int n_region, const int *derived, const double *xs,
                        double *ys, int n_points) {
    double vals[REGION_MAX + 1];
    for (int p = 0; p < n_points; p++) {
        vals[0] = xs[p];
        for (int r = 0; r < n_region; r++) {
            const korch_pnode *n = &c->pg->nodes[c->spec->nodes[region[r]]];
            double in[3] = {0, 0, 0};
            for (int k = 0; k < n->n_inputs && k < 3; k++) {
                bool found = false;
                for (int j = 0; j <= r && !found; j++)
                    if (n->inputs[k] == derived[j]) {
                        in[k] = vals[j];
                        found = true;
                    }
                if (!found) an_scalar_constant(&c->pg->values[n->inputs[k]], &in[k]);
            }
            double y = korch_ew_apply(n->u.ew.op, in[0], in[1], in[2], n->u.ew.alpha, n->u.ew.beta);
            if (c->pg->values[n->outputs[0]].dtype == KORCH_DTYPE_FLOAT32) y = (double)(float)y;
            vals[r + 1] = y;
        }
        ys[p] = vals[n_region];
    }
}

/* A fork-join region starting at v: nodes reading v or region values and
 * otherwise only scalar constants. At every point where a single region
 * value remains that all others feed (a closure), the region so far is a
 * scalar function of v; the first closure that is a oneDNN eltwise function
 * wins (GELU closes first at x*(1+erf(x/sqrt2)), which is no oneDNN
 * function, then at the final *0.5, which is gelu_erf). */
bool an_region_step(actx *c, int v, int *w_out) {
    char nm[160];
    int region[REGION_MAX], n_region = 0;
    int derived[REGION_MAX + 1], n_derived = 0;
    derived[n_derived++] = v;
    float consts[2 * REGION_MAX];
    int n_consts = 0;
    int first_closure = -1; /* node of the first closure, for the message */
    double xs[96], ys[96];
    int n_points = dn_match_points(xs, 96);
    for (int i = 0; i < c->spec->n_nodes; i++) {
        int node = c->spec->nodes[i];
        if (c->used[i]) continue;
        const korch_pnode *n = &c->pg->nodes[node];
        bool touches = false;
        for (int k = 0; k < n->n_inputs; k++)
            for (int j = 0; j < n_derived; j++) touches |= n->inputs[k] == derived[j];
        if (!touches) continue;
        if (n->kind != KORCH_PRIM_ELEMENTWISE) break;
        bool scalar_only = true;
        for (int k = 0; k < n->n_inputs; k++) {
            bool in_region = false;
            for (int j = 0; j < n_derived; j++) in_region |= n->inputs[k] == derived[j];
            double s;
            if (in_region) continue;
            if (!an_scalar_constant(&c->pg->values[n->inputs[k]], &s)) scalar_only = false;
            else if (n_consts < 2 * REGION_MAX) consts[n_consts++] = (float)s;
        }
        if (!scalar_only) {
            if (first_closure >= 0) break; /* past a closure: the chain goes on with tensors */
            return an_fail(c,
                        "%s: the chain value forks and this branch reads a tensor; only a function of the value "
                        "alone can be one oneDNN eltwise post-op",
                        an_node_name(c, node, nm, sizeof nm));
        }
        if (n->u.ew.op == KORCH_EW_AFFINE || n->u.ew.op == KORCH_EW_LEAKY_RELU || n->u.ew.op == KORCH_EW_POWC) {
            if (n_consts < 2 * REGION_MAX) consts[n_consts++] = n->u.ew.alpha;
        }
        if (n_region == REGION_MAX) break;
        region[n_region++] = i;
        derived[n_derived++] = n->outputs[0];
        /* closed: every other derived value is consumed inside the region only */
        bool closed = true;
        for (int j = 0; j < n_derived - 1 && closed; j++) {
            if (an_is_output(c, derived[j])) closed = false;
            int cons[16];
            int nc = an_consumers(c, derived[j], cons, 16);
            if (nc > 16) closed = false;
            for (int q = 0; q < nc && q < 16 && closed; q++) {
                bool inside = false;
                for (int r = 0; r < n_region; r++) inside |= c->spec->nodes[region[r]] == cons[q];
                closed = inside;
            }
        }
        if (!closed) continue;
        int w = n->outputs[0];
        if (first_closure < 0) first_closure = node;
        if (c->pg->values[w].dtype != KORCH_DTYPE_FLOAT32 ||
            !korch_shape_equal(&c->pg->values[w].shape, &c->pg->values[v].shape))
            continue;
        region_eval(c, region, n_region, derived, xs, ys, n_points);
        dn_post post = {.kind = DN_POST_ELTWISE, .slot = -1, .node = node};
        if (!dn_match_function(xs, ys, n_points, consts, n_consts, &post.alg, &post.alpha, &post.beta)) continue;
        for (int r = 0; r < n_region; r++) c->used[region[r]] = true;
        *w_out = w;
        return push(c, post);
    }
    if (first_closure < 0) {
        int cons[4];
        an_consumers(c, v, cons, 4);
        return an_fail(c,
                    "%s: the chain value is read by several nodes that do not join into one value inside the kernel; "
                    "oneDNN writes only the final result",
                    an_node_name(c, cons[0], nm, sizeof nm));
    }
    return an_fail(c,
                "the elementwise sub-graph from the linear output to %s is no oneDNN eltwise function (tried swish, "
                "gelu_erf, gelu_tanh, mish, hardswish, logsigmoid, linear, ...)",
                an_node_name(c, first_closure, nm, sizeof nm));
}
