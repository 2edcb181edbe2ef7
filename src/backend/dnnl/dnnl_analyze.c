/* Kernel spec -> dn_desc: which oneDNN primitive and which post-ops.
 *
 * A spec is accepted when it is one linear primitive whose operands come from
 * outside the kernel, followed by a chain of elementwise primitives: each
 * step either reads the chain value once (a unary function, or a binary one
 * with an operand from outside: scalar constants fold into eltwise `linear`,
 * tensors become binary post-ops), or is a fork-join sub-graph of the chain
 * value and scalar constants that is, numerically, one oneDNN eltwise
 * function (x*sigmoid(x) -> swish, 0.5x(1+erf(x/sqrt2)) -> gelu_erf, ...;
 * dnnl_match.c). Only the final value may leave the kernel: oneDNN writes
 * nothing else. Every refusal names the node and the reason. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend/dnnl/dnnl_internal.h"
#include "fission/layout.h"

#define REGION_MAX 24

typedef struct actx {
    const korch_kernel_spec *spec;
    const korch_pgraph *pg;
    dn_desc *d;
    char *reason;
    size_t size;
    int out_rank;            /* pgraph rank of the linear output */
    int perm[DN_MAX_DIMS];   /* logical dim j of the output is pgraph axis perm[j] */
    int channel_axis;        /* pgraph axis of output channels (bias) */
    bool used[64];           /* spec node i is accounted for (specs are small) */
    bool reshaped;           /* the chain passed a reshape: operands in the output's bytes */
} actx;

KORCH_PRINTF(2, 3) static bool fail(actx *c, const char *fmt, ...) {
    if (c->reason && c->size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, c->size, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* "node 12 (ew.ERF of Erf "/blk/Erf")" */
static const char *node_name(const actx *c, int node, char *buf, size_t size) {
    const korch_pnode *n = &c->pg->nodes[node];
    char kind[48];
    switch (n->kind) {
    case KORCH_PRIM_ELEMENTWISE: snprintf(kind, sizeof kind, "ew.%s", korch_ew_name(n->u.ew.op)); break;
    case KORCH_PRIM_LAYOUT: snprintf(kind, sizeof kind, "layout.%s", korch_layout_tag_name(n->u.layout.tag)); break;
    default: snprintf(kind, sizeof kind, "%s", korch_prim_kind_name(n->kind)); break;
    }
    const korch_graph *g = c->pg->source;
    if (g && n->source_node >= 0 && n->source_node < g->n_nodes && g->nodes[n->source_node].name &&
        g->nodes[n->source_node].name[0])
        snprintf(buf, size, "node %d (%s of \"%.60s\")", node, kind, g->nodes[n->source_node].name);
    else
        snprintf(buf, size, "node %d (%s)", node, kind);
    return buf;
}

static int spec_index(const actx *c, int node) {
    for (int i = 0; i < c->spec->n_nodes; i++)
        if (c->spec->nodes[i] == node) return i;
    return -1;
}

static int input_slot(const actx *c, int value) {
    for (int i = 0; i < c->spec->n_inputs; i++)
        if (c->spec->inputs[i] == value) return i;
    return -1;
}

static bool is_output(const actx *c, int value) {
    for (int i = 0; i < c->spec->n_outputs; i++)
        if (c->spec->outputs[i] == value) return true;
    return false;
}

/* Spec nodes reading `value`, each once. */
static int consumers(const actx *c, int value, int *out, int cap) {
    int n = 0;
    for (int i = 0; i < c->spec->n_nodes; i++) {
        const korch_pnode *node = &c->pg->nodes[c->spec->nodes[i]];
        for (int k = 0; k < node->n_inputs; k++)
            if (node->inputs[k] == value) {
                if (n < cap) out[n] = c->spec->nodes[i];
                n++;
                break;
            }
    }
    return n;
}

/* A reshape inside the kernel is free: the bytes stay where they are. */
static bool is_reshape(const actx *c, int node) {
    const korch_pnode *n = &c->pg->nodes[node];
    return n->kind == KORCH_PRIM_LAYOUT && n->n_inputs == 1 && korch_layout_as_reshape(c->pg, node);
}

/* The value a linear operand reads its bytes from: through reshapes inside
 * the kernel (marked used) to a kernel input. */
static int through_reshapes(actx *c, int value) {
    for (int depth = 0; depth < 8; depth++) {
        int p = c->pg->values[value].producer, i = p >= 0 ? spec_index(c, p) : -1;
        if (i < 0 || !is_reshape(c, p)) break;
        c->used[i] = true;
        value = c->pg->nodes[p].inputs[0];
    }
    return value;
}

static bool scalar_constant(const korch_pvalue *v, double *x) {
    if (!v->is_constant || korch_shape_numel(&v->shape) != 1 || !v->constant.data) return false;
    *x = korch_tensor_get_f64(&v->constant, 0);
    return true;
}

/* ---- logical tensors ----------------------------------------------------- */

static void dense(const korch_shape *s, dn_tensor *t) {
    t->ndims = s->rank;
    int64_t stride = 1;
    for (int k = s->rank - 1; k >= 0; k--) {
        t->dims[k] = s->dims[k];
        t->strides[k] = stride;
        stride *= s->dims[k] > 0 ? s->dims[k] : 1;
    }
}

/* The dense pgraph tensor of shape s (right-aligned to the output rank) in
 * the output's logical order. */
static void logical(const actx *c, const korch_shape *s, dn_tensor *t) {
    korch_shape aligned = {.rank = c->out_rank};
    int lead = c->out_rank - s->rank;
    for (int k = 0; k < c->out_rank; k++) aligned.dims[k] = k < lead ? 1 : s->dims[k - lead];
    dn_tensor p;
    dense(&aligned, &p);
    t->ndims = c->out_rank;
    for (int j = 0; j < c->out_rank; j++) {
        t->dims[j] = p.dims[c->perm[j]];
        t->strides[j] = p.strides[c->perm[j]];
    }
}

static bool setup_linear(actx *c, int node) {
    const korch_pgraph *pg = c->pg;
    const korch_pnode *n = &pg->nodes[node];
    dn_desc *d = c->d;
    char nm[160];
    d->op = n->u.linear.op;
    d->params = n->u.linear;
    d->linear_node = node;
    int x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
    d->src_slot = input_slot(c, through_reshapes(c, x));
    d->wei_slot = input_slot(c, through_reshapes(c, w));
    if (d->src_slot < 0 || d->wei_slot < 0)
        return fail(c, "%s: an operand is computed inside the kernel; oneDNN fuses no prologue",
                    node_name(c, node, nm, sizeof nm));
    const korch_pvalue *vx = &pg->values[x], *vw = &pg->values[w], *vy = &pg->values[y];
    const korch_pvalue *wsrc = &pg->values[c->spec->inputs[d->wei_slot]];
    if (vx->dtype != KORCH_DTYPE_FLOAT32 || vw->dtype != KORCH_DTYPE_FLOAT32 || vy->dtype != KORCH_DTYPE_FLOAT32)
        return fail(c, "%s: only float32 linear primitives", node_name(c, node, nm, sizeof nm));
    for (int i = 0; i < vy->shape.rank; i++)
        if (vy->shape.dims[i] <= 0 || vx->shape.dims[i < vx->shape.rank ? i : 0] <= 0)
            return fail(c, "%s: empty tensor", node_name(c, node, nm, sizeof nm));
    d->wei_constant = wsrc->is_constant && wsrc->constant.data;
    d->wei_data = d->wei_constant ? wsrc->constant.data : NULL;
    int r = vy->shape.rank;
    if (r > DN_MAX_DIMS) return fail(c, "%s: rank %d is beyond oneDNN's limit", node_name(c, node, nm, sizeof nm), r);
    c->out_rank = r;
    for (int j = 0; j < r; j++) c->perm[j] = j;
    if (d->op == KORCH_LINEAR_MATMUL) {
        c->channel_axis = r - 1;
        if (vx->shape.rank > r || vw->shape.rank > r)
            return fail(c, "%s: operand rank above the output rank", node_name(c, node, nm, sizeof nm));
        logical(c, &vx->shape, &d->src);
        logical(c, &vw->shape, &d->wei);
        logical(c, &vy->shape, &d->dst);
        double k = (double)vx->shape.dims[vx->shape.rank - 1];
        d->flops = 2.0 * (double)korch_shape_numel(&vy->shape) * k;
        return true;
    }
    int s = d->params.spatial;
    if (s < 1 || s > 3 || r != s + 2)
        return fail(c, "%s: convolution with %d spatial dimensions", node_name(c, node, nm, sizeof nm), s);
    if (d->params.channels_last) {
        /* logical (N, C, spatial...) <- pgraph (N, spatial..., C) */
        c->perm[1] = r - 1;
        for (int j = 2; j < r; j++) c->perm[j] = j - 1;
    }
    c->channel_axis = c->perm[1];
    logical(c, &vx->shape, &d->src);
    logical(c, &vy->shape, &d->dst);
    for (int k = 0; k < s; k++) {
        if (d->params.strides[k] < 1 || d->params.dilations[k] < 1)
            return fail(c, "%s: bad stride or dilation", node_name(c, node, nm, sizeof nm));
        /* a transposed convolution's negative end pad (ONNX output_shape
         * beyond the full output) is a zero extension; oneDNN takes it */
        if (d->params.pads_begin[k] < 0 || (d->params.pads_end[k] < 0 && d->op == KORCH_LINEAR_CONV))
            return fail(c, "%s: negative padding", node_name(c, node, nm, sizeof nm));
    }
    /* weights: (G, O/G, I/G, k...) with the strides of the ONNX layout */
    int64_t G = d->params.group, K = 1;
    for (int k = 2; k < vw->shape.rank; k++) K *= vw->shape.dims[k];
    int64_t a0 = vw->shape.dims[0], a1 = vw->shape.dims[1];
    bool tr = d->op == KORCH_LINEAR_CONV_TRANSPOSE;
    int64_t O = tr ? a1 * G : a0, I = tr ? a0 : a1 * G; /* total output and input channels */
    if (G < 1 || O % G || I % G) return fail(c, "%s: bad group count", node_name(c, node, nm, sizeof nm));
    int64_t Og = O / G, Ig = I / G;
    dn_tensor *t = &d->wei;
    int base = G > 1 ? 1 : 0;
    t->ndims = base + 2 + s;
    if (G > 1) {
        t->dims[0] = G;
        t->strides[0] = Og * Ig * K;
    }
    t->dims[base] = Og;
    t->dims[base + 1] = Ig;
    t->strides[base] = tr ? K : Ig * K;
    t->strides[base + 1] = tr ? Og * K : K;
    int64_t st = 1;
    for (int k = s - 1; k >= 0; k--) {
        t->dims[base + 2 + k] = vw->shape.dims[2 + k];
        t->strides[base + 2 + k] = st;
        st *= vw->shape.dims[2 + k];
    }
    /* multiply-adds: every output element sums Ig*K products; for the
     * transpose, every input element scatters into Og*K outputs */
    d->flops = tr ? 2.0 * (double)korch_shape_numel(&vx->shape) * (double)Og * (double)K
                  : 2.0 * (double)korch_shape_numel(&vy->shape) * (double)Ig * (double)K;
    return true;
}

/* ---- post-ops -------------------------------------------------------------- */

static bool push(actx *c, dn_post p) {
    if (c->d->n_post >= DN_MAX_POST) return fail(c, "more than %d post-ops", DN_MAX_POST);
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
    case KORCH_EW_LEAKY_RELU: return eltwise(c, node, dnnl_eltwise_relu, a, 0);
    case KORCH_EW_ELU: return eltwise(c, node, dnnl_eltwise_elu, a, 0);
    case KORCH_EW_CLIP:
        if (!(a <= b)) return fail(c, "%s: clip with min > max", node_name(c, node, nm, sizeof nm));
        return eltwise(c, node, dnnl_eltwise_clip, a, b);
    case KORCH_EW_AFFINE: return eltwise(c, node, dnnl_eltwise_linear, a, b);
    case KORCH_EW_POWC:
        if (a == 2.0f) return eltwise(c, node, dnnl_eltwise_square, 0, 0);
        return eltwise(c, node, dnnl_eltwise_pow, 1.0f, a);
    default:
        return fail(c, "%s: %s has no oneDNN post-op", node_name(c, node, nm, sizeof nm), korch_ew_name(op));
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
        if (v_first) {
            if (s == 0) return fail(c, "%s: division by a zero constant", node_name(c, node, nm, sizeof nm));
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
    return fail(c, "%s: %s with a constant has no oneDNN post-op", node_name(c, node, nm, sizeof nm), korch_ew_name(op));
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
    int slot = input_slot(c, value);
    if (slot < 0)
        return fail(c, "%s: its second operand is computed inside the kernel, off the post-op chain",
                    node_name(c, node, nm, sizeof nm));
    if (pv->dtype != KORCH_DTYPE_FLOAT32)
        return fail(c, "%s: %s operand of dtype %s", node_name(c, node, nm, sizeof nm), korch_ew_name(op),
                    korch_dtype_name(pv->dtype));
    if (c->reshaped && korch_shape_numel(&pv->shape) != 1 &&
        korch_shape_numel(&pv->shape) != korch_shape_numel(&c->pg->values[c->pg->nodes[node].outputs[0]].shape))
        return fail(c, "%s: a broadcast operand after a reshape of the chain value", node_name(c, node, nm, sizeof nm));
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
        alg = dnnl_binary_div;
        if (!v_first) { /* s / v = v^-1 * s */
            if (!eltwise(c, node, dnnl_eltwise_pow, 1.0f, -1.0f)) return false;
            alg = dnnl_binary_mul;
        }
        break;
    default:
        return fail(c, "%s: %s with a tensor operand has no oneDNN post-op", node_name(c, node, nm, sizeof nm),
                    korch_ew_name(op));
    }
    /* a per-channel constant added first is the primitive's own bias */
    if (alg == dnnl_binary_add && c->d->n_post == 0 && c->d->bias_slot < 0 && !c->reshaped && pv->is_constant &&
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
    else logical(c, &pv->shape, &p.operand);
    return push(c, p);
}

static bool single_step(actx *c, int node, int v) {
    char nm[160];
    const korch_pnode *n = &c->pg->nodes[node];
    const korch_pvalue *y = &c->pg->values[n->outputs[0]], *vv = &c->pg->values[v];
    if (y->dtype != KORCH_DTYPE_FLOAT32)
        return fail(c, "%s: produces %s; oneDNN post-ops produce float32", node_name(c, node, nm, sizeof nm),
                    korch_dtype_name(y->dtype));
    if (!korch_shape_equal(&y->shape, &vv->shape))
        return fail(c, "%s: broadcasting enlarges the result beyond the linear output", node_name(c, node, nm, sizeof nm));
    korch_ew_op op = n->u.ew.op;
    int arity = korch_ew_arity(op);
    if (arity == 1) return unary(c, node, op, n->u.ew.alpha, n->u.ew.beta);
    if (arity != 2) return fail(c, "%s: %s has no oneDNN post-op", node_name(c, node, nm, sizeof nm), korch_ew_name(op));
    int a = n->inputs[0], b = n->inputs[1];
    if (a == v && b == v) {
        switch (op) {
        case KORCH_EW_MUL: return eltwise(c, node, dnnl_eltwise_square, 0, 0);
        case KORCH_EW_ADD: return eltwise(c, node, dnnl_eltwise_linear, 2.0f, 0.0f);
        case KORCH_EW_MAX:
        case KORCH_EW_MIN: return true;
        default: return fail(c, "%s: %s(x, x) has no oneDNN post-op", node_name(c, node, nm, sizeof nm), korch_ew_name(op));
        }
    }
    bool v_first = a == v;
    int other = v_first ? b : a;
    double s;
    if (scalar_constant(&c->pg->values[other], &s)) return with_scalar(c, node, op, v_first, s);
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
                if (!found) scalar_constant(&c->pg->values[n->inputs[k]], &in[k]);
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
static bool region_step(actx *c, int v, int *w_out) {
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
            if (!scalar_constant(&c->pg->values[n->inputs[k]], &s)) scalar_only = false;
            else if (n_consts < 2 * REGION_MAX) consts[n_consts++] = (float)s;
        }
        if (!scalar_only) {
            if (first_closure >= 0) break; /* past a closure: the chain goes on with tensors */
            return fail(c,
                        "%s: the chain value forks and this branch reads a tensor; only a function of the value "
                        "alone can be one oneDNN eltwise post-op",
                        node_name(c, node, nm, sizeof nm));
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
            if (is_output(c, derived[j])) closed = false;
            int cons[16];
            int nc = consumers(c, derived[j], cons, 16);
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
        consumers(c, v, cons, 4);
        return fail(c,
                    "%s: the chain value is read by several nodes that do not join into one value inside the kernel; "
                    "oneDNN writes only the final result",
                    node_name(c, cons[0], nm, sizeof nm));
    }
    return fail(c,
                "the elementwise sub-graph from the linear output to %s is no oneDNN eltwise function (tried swish, "
                "gelu_erf, gelu_tanh, mish, hardswish, logsigmoid, linear, ...)",
                node_name(c, first_closure, nm, sizeof nm));
}

/* ---- signature and text ----------------------------------------------------- */

static void hash_bytes(uint64_t h[2], const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h[0] = (h[0] ^ p[i]) * 0x100000001b3ull;
        h[1] = (h[1] ^ p[i]) * 0x00000100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
}

static void hash_tensor(uint64_t h[2], const dn_tensor *t) {
    hash_bytes(h, &t->ndims, sizeof t->ndims);
    hash_bytes(h, t->dims, sizeof t->dims[0] * (size_t)t->ndims);
    hash_bytes(h, t->strides, sizeof t->strides[0] * (size_t)t->ndims);
}

static void finish(actx *c) {
    dn_desc *d = c->d;
    uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    const char *tag = "korch-dnnl-1";
    hash_bytes(h, tag, strlen(tag));
    korch_prim_linear p = d->params;
    int32_t fields[4] = {(int32_t)p.op, p.spatial, (int32_t)p.group, p.channels_last};
    hash_bytes(h, fields, sizeof fields);
    hash_bytes(h, p.strides, sizeof p.strides);
    hash_bytes(h, p.dilations, sizeof p.dilations);
    hash_bytes(h, p.pads_begin, sizeof p.pads_begin);
    hash_bytes(h, p.pads_end, sizeof p.pads_end);
    hash_bytes(h, p.output_padding, sizeof p.output_padding);
    hash_tensor(h, &d->src);
    hash_tensor(h, &d->wei);
    hash_tensor(h, &d->dst);
    int32_t flags[2] = {d->wei_constant, d->bias_slot >= 0};
    hash_bytes(h, flags, sizeof flags);
    for (int i = 0; i < d->n_post; i++) {
        const dn_post *q = &d->post[i];
        int32_t k[2] = {(int32_t)q->kind, (int32_t)q->alg};
        hash_bytes(h, k, sizeof k);
        hash_bytes(h, &q->alpha, sizeof q->alpha);
        hash_bytes(h, &q->beta, sizeof q->beta);
        if (q->kind == DN_POST_BINARY) hash_tensor(h, &q->operand);
    }
    snprintf(d->sig, sizeof d->sig, "%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);

    size_t len = 0;
    char *t = d->text;
    const size_t size = sizeof d->text;
#define APPEND(...)                                                                                                    \
    do {                                                                                                               \
        if (len < size) len += (size_t)snprintf(t + len, size - len, __VA_ARGS__);                                     \
    } while (0)
    if (d->op == KORCH_LINEAR_MATMUL) {
        int r = d->dst.ndims;
        APPEND("matmul %lldx%lldx%lld", (long long)d->dst.dims[r - 2], (long long)d->src.dims[r - 1],
               (long long)d->dst.dims[r - 1]);
        if (r > 2) APPEND(" batch %lld", (long long)(korch_shape_numel(&c->pg->values[c->pg->nodes[d->linear_node].outputs[0]].shape) /
                                                   (d->dst.dims[r - 2] * d->dst.dims[r - 1])));
        if (d->wei_constant) APPEND(" const-weights");
    } else {
        APPEND("%s%dd %s g%lld", d->op == KORCH_LINEAR_CONV ? "conv" : "deconv", p.spatial,
               p.channels_last ? "nhwc" : "nchw", (long long)p.group);
    }
    if (d->bias_slot >= 0) APPEND(" +bias");
    for (int i = 0; i < d->n_post; i++) {
        const dn_post *q = &d->post[i];
        if (q->kind == DN_POST_ELTWISE) APPEND(" +%s(%g,%g)", dn_alg_name(q->alg), q->alpha, q->beta);
        else {
            APPEND(" +%s[", dn_alg_name(q->alg));
            for (int j = 0; j < q->operand.ndims; j++) APPEND("%s%lld", j ? "x" : "", (long long)q->operand.dims[j]);
            APPEND("]");
        }
    }
#undef APPEND
}

/* Does `node`'s output reach `target` through spec nodes? */
static bool feeds(const actx *c, int node, int target, int depth) {
    if (depth > 64) return false;
    const korch_pnode *t = &c->pg->nodes[target];
    for (int k = 0; k < t->n_inputs; k++) {
        int p = c->pg->values[t->inputs[k]].producer;
        if (p == node) return true;
        if (p >= 0 && spec_index(c, p) >= 0 && feeds(c, node, p, depth + 1)) return true;
    }
    return false;
}

/* ---- entry ----------------------------------------------------------------- */

bool dn_analyze(const korch_kernel_spec *spec, dn_desc *d, char *reason, size_t size) {
    memset(d, 0, sizeof *d);
    d->bias_slot = -1;
    actx c = {.spec = spec, .pg = spec->pg, .d = d, .reason = reason, .size = size};
    if (reason && size) reason[0] = '\0';
    char nm[160];
    if (spec->n_nodes < 1) return fail(&c, "empty kernel");
    if (spec->n_nodes > 64) return fail(&c, "kernel of %d primitives is too large for a post-op chain", spec->n_nodes);
    int linear = -1, li = -1;
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &spec->pg->nodes[spec->nodes[i]];
        if (n->kind == KORCH_PRIM_LINEAR) {
            if (linear >= 0) return fail(&c, "two linear primitives (nodes %d and %d)", linear, spec->nodes[i]);
            linear = spec->nodes[i];
            li = i;
        }
    }
    if (linear < 0) return fail(&c, "no linear primitive (memory-bound kernels are the code generator's)");
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &spec->pg->nodes[spec->nodes[i]];
        if (is_reshape(&c, spec->nodes[i])) continue; /* checked where it is used */
        if (i < li && feeds(&c, spec->nodes[i], linear, 0))
            return fail(&c, "%s computes an operand of the linear primitive (a prologue); oneDNN fuses only post-ops",
                        node_name(&c, spec->nodes[i], nm, sizeof nm));
        if (i != li && n->kind != KORCH_PRIM_ELEMENTWISE)
            return fail(&c, "%s: oneDNN post-ops are elementwise; a %s primitive cannot be fused",
                        node_name(&c, spec->nodes[i], nm, sizeof nm), korch_prim_kind_name(n->kind));
    }
    if (!setup_linear(&c, linear)) return false;
    c.used[li] = true;
    int v = spec->pg->nodes[linear].outputs[0];
    for (;;) {
        int cons[8];
        int nc = consumers(&c, v, cons, 8);
        if (nc == 0) break;
        if (is_output(&c, v))
            return fail(&c,
                        "value %d (after %d post-ops) is needed outside the kernel and also feeds %s; oneDNN writes only "
                        "the final result",
                        v, d->n_post, node_name(&c, cons[0], nm, sizeof nm));
        if (nc == 1 && is_reshape(&c, cons[0])) {
            c.used[spec_index(&c, cons[0])] = true;
            c.reshaped = true;
            v = spec->pg->nodes[cons[0]].outputs[0];
            continue;
        }
        if (nc == 1) {
            int i = spec_index(&c, cons[0]);
            if (!single_step(&c, cons[0], v)) return false;
            c.used[i] = true;
            v = spec->pg->nodes[cons[0]].outputs[0];
            continue;
        }
        int w = -1;
        if (!region_step(&c, v, &w)) return false;
        v = w;
    }
    for (int i = 0; i < spec->n_nodes; i++)
        if (!c.used[i])
            return fail(&c, "%s is not on the post-op chain of the linear primitive (oneDNN fuses no side computation)",
                        node_name(&c, spec->nodes[i], nm, sizeof nm));
    if (spec->n_outputs != 1 || spec->outputs[0] != v)
        return fail(&c, "the kernel has %d outputs; oneDNN writes only the final value of the post-op chain",
                    spec->n_outputs);
    finish(&c);
    return true;
}
