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
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend/dnnl/dnnl_analyze.h"
#include "ir/indexmap.h"

KORCH_PRINTF(2, 3) bool an_fail(actx *c, const char *fmt, ...) {
    if (c->reason && c->size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, c->size, fmt, ap);
        va_end(ap);
    }
    return false;
}

const char *an_node_name(const actx *c, int node, char *buf, size_t size) {
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

int an_spec_index(const actx *c, int node) {
    for (int i = 0; i < c->spec->n_nodes; i++)
        if (c->spec->nodes[i] == node) return i;
    return -1;
}

int an_input_slot(const actx *c, int value) {
    for (int i = 0; i < c->spec->n_inputs; i++)
        if (c->spec->inputs[i] == value) return i;
    return -1;
}

bool an_is_output(const actx *c, int value) {
    for (int i = 0; i < c->spec->n_outputs; i++)
        if (c->spec->outputs[i] == value) return true;
    return false;
}

/* Spec nodes reading `value`, each once. */
int an_consumers(const actx *c, int value, int *out, int cap) {
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

int an_sole_consumer(const actx *c, int value) {
    int cons[2];
    if (an_is_output(c, value) || an_consumers(c, value, cons, 2) != 1) return -1;
    return cons[0];
}

bool an_is_ew(const actx *c, int node, korch_ew_op op) {
    return node >= 0 && c->pg->nodes[node].kind == KORCH_PRIM_ELEMENTWISE && c->pg->nodes[node].u.ew.op == op;
}

/* A reshape inside the kernel is free: the bytes stay where they are. */
bool an_is_reshape(const actx *c, int node) {
    const korch_pnode *n = &c->pg->nodes[node];
    return n->kind == KORCH_PRIM_LAYOUT && n->n_inputs == 1 && korch_layout_as_reshape(c->pg, node);
}

/* The value a linear operand reads its bytes from: through reshapes inside
 * the kernel (marked used) to a kernel input. */
int an_through_reshapes(actx *c, int value) {
    for (int depth = 0; depth < 8; depth++) {
        int p = c->pg->values[value].producer, i = p >= 0 ? an_spec_index(c, p) : -1;
        if (i < 0 || !an_is_reshape(c, p)) break;
        c->used[i] = true;
        value = c->pg->nodes[p].inputs[0];
    }
    return value;
}

bool an_scalar_constant(const korch_pvalue *v, double *x) {
    if (!v->is_constant || korch_shape_numel(&v->shape) != 1 || !v->constant.data) return false;
    *x = korch_tensor_get_f64(&v->constant, 0);
    return true;
}

/* ---- logical tensors ----------------------------------------------------- */

void an_dense(const korch_shape *s, dn_tensor *t) {
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
void an_logical(const actx *c, const korch_shape *s, dn_tensor *t) {
    korch_shape aligned = {.rank = c->out_rank};
    int lead = c->out_rank - s->rank;
    for (int k = 0; k < c->out_rank; k++) aligned.dims[k] = k < lead ? 1 : s->dims[k - lead];
    dn_tensor p;
    an_dense(&aligned, &p);
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
    d->src_slot = an_input_slot(c, an_through_reshapes(c, x));
    if (d->src_slot < 0 && c->src_transpose >= 0) d->src_slot = an_input_slot(c, pg->nodes[c->src_transpose].inputs[0]);
    if (d->src_slot < 0 && c->dequant_q >= 0) d->src_slot = an_input_slot(c, c->dequant_q);
    if (d->src_slot < 0 && c->operand_cast[0] >= 0) d->src_slot = an_input_slot(c, pg->nodes[c->operand_cast[0]].inputs[0]);
    d->wei_slot = an_input_slot(c, an_through_reshapes(c, w));
    if (d->wei_slot < 0 && c->operand_cast[1] >= 0) d->wei_slot = an_input_slot(c, pg->nodes[c->operand_cast[1]].inputs[0]);
    if (d->src_slot < 0 || d->wei_slot < 0)
        return an_fail(c, "%s: an operand is computed inside the kernel; oneDNN fuses no prologue",
                    an_node_name(c, node, nm, sizeof nm));
    const korch_pvalue *vx = &pg->values[x], *vw = &pg->values[w], *vy = &pg->values[y];
    const korch_pvalue *wsrc = &pg->values[c->spec->inputs[d->wei_slot]];
    /* a bf16 primitive's operand may be stored in bfloat16 (dnnl_bf16.c) */
    d->src_bf16 = vx->dtype == KORCH_DTYPE_BFLOAT16 && c->operand_cast[0] < 0;
    d->wei_bf16 = vw->dtype == KORCH_DTYPE_BFLOAT16 && c->operand_cast[1] < 0;
    bool x_ok = vx->dtype == KORCH_DTYPE_FLOAT32 || (d->params.bf16 && vx->dtype == KORCH_DTYPE_BFLOAT16);
    bool w_ok = vw->dtype == KORCH_DTYPE_FLOAT32 || (d->params.bf16 && vw->dtype == KORCH_DTYPE_BFLOAT16);
    if (d->imatmul) /* dnnl_imatmul.c: the 8-bit source and integer weights checked there */
        x_ok = w_ok = vy->dtype == KORCH_DTYPE_INT32;
    if (!x_ok || !w_ok || (vy->dtype != KORCH_DTYPE_FLOAT32 && !d->imatmul))
        return an_fail(c, "%s: only float32 linear primitives (or bf16 ones on bfloat16 operands)",
                       an_node_name(c, node, nm, sizeof nm));
    for (int i = 0; i < vy->shape.rank; i++)
        if (vy->shape.dims[i] <= 0 || vx->shape.dims[i < vx->shape.rank ? i : 0] <= 0)
            return an_fail(c, "%s: empty tensor", an_node_name(c, node, nm, sizeof nm));
    d->wei_constant = wsrc->is_constant && wsrc->constant.data;
    d->wei_data = d->wei_constant ? wsrc->constant.data : NULL;
    d->wei_tensor = d->wei_constant ? &wsrc->constant : NULL;
    int r = vy->shape.rank;
    if (r > DN_MAX_DIMS) return an_fail(c, "%s: rank %d is beyond oneDNN's limit", an_node_name(c, node, nm, sizeof nm), r);
    c->out_rank = r;
    for (int j = 0; j < r; j++) c->perm[j] = j;
    if (d->op == KORCH_LINEAR_MATMUL) {
        c->channel_axis = r - 1;
        if (vx->shape.rank > r || vw->shape.rank > r)
            return an_fail(c, "%s: operand rank above the output rank", an_node_name(c, node, nm, sizeof nm));
        an_logical(c, &vx->shape, &d->src);
        an_logical(c, &vw->shape, &d->wei);
        an_logical(c, &vy->shape, &d->dst);
        double k = (double)vx->shape.dims[vx->shape.rank - 1];
        d->flops = 2.0 * (double)korch_shape_numel(&vy->shape) * k;
        return true;
    }
    int s = d->params.spatial;
    if (s < 1 || s > 3 || r != s + 2)
        return an_fail(c, "%s: convolution with %d spatial dimensions", an_node_name(c, node, nm, sizeof nm), s);
    if (d->params.channels_last) {
        /* logical (N, C, spatial...) <- pgraph (N, spatial..., C) */
        c->perm[1] = r - 1;
        for (int j = 2; j < r; j++) c->perm[j] = j - 1;
    }
    c->channel_axis = c->perm[1];
    an_logical(c, &vx->shape, &d->src);
    an_logical(c, &vy->shape, &d->dst);
    if (c->src_transpose >= 0 && !an_absorb_src_transpose(c, c->src_transpose, c->src_perm))
        return an_fail(c, "%s: the transposed source is not a kernel input", an_node_name(c, node, nm, sizeof nm));
    for (int k = 0; k < s; k++) {
        if (d->params.strides[k] < 1 || d->params.dilations[k] < 1)
            return an_fail(c, "%s: bad stride or dilation", an_node_name(c, node, nm, sizeof nm));
        /* a transposed convolution's negative end pad (ONNX output_shape
         * beyond the full output) is a zero extension; oneDNN takes it */
        if (d->params.pads_begin[k] < 0 || (d->params.pads_end[k] < 0 && d->op == KORCH_LINEAR_CONV))
            return an_fail(c, "%s: negative padding", an_node_name(c, node, nm, sizeof nm));
    }
    /* weights: (G, O/G, I/G, k...) with the strides of the ONNX layout */
    int64_t G = d->params.group, K = 1;
    for (int k = 2; k < vw->shape.rank; k++) K *= vw->shape.dims[k];
    int64_t a0 = vw->shape.dims[0], a1 = vw->shape.dims[1];
    bool tr = d->op == KORCH_LINEAR_CONV_TRANSPOSE;
    int64_t O = tr ? a1 * G : a0, I = tr ? a0 : a1 * G; /* total output and input channels */
    if (G < 1 || O % G || I % G) return an_fail(c, "%s: bad group count", an_node_name(c, node, nm, sizeof nm));
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
    /* the tag names the lowering: "korch-dnnl-2" since post-op chains are
     * legalised for oneDNN 2.6's defects (dnnl_quirks.c), so profiles of
     * kernels that computed wrong results are never reused */
    const char *tag = "korch-dnnl-2";
    hash_bytes(h, tag, strlen(tag));
    korch_prim_linear p = d->params;
    int32_t fields[4] = {(int32_t)p.op, p.spatial, (int32_t)p.group, p.channels_last};
    hash_bytes(h, fields, sizeof fields);
    hash_bytes(h, p.strides, sizeof p.strides);
    hash_bytes(h, p.dilations, sizeof p.dilations);
    hash_bytes(h, p.pads_begin, sizeof p.pads_begin);
    hash_bytes(h, p.pads_end, sizeof p.pads_end);
    hash_bytes(h, p.output_padding, sizeof p.output_padding);
    if (p.bf16) hash_bytes(h, "bf16", 4); /* only when set: float32 profiles keep their keys */
    if (d->src_q) { /* the same: int8 kernels only */
        int32_t q[4] = {(int32_t)d->src_q, d->src_zp != 0, (int32_t)d->dst_q, d->dst_zp != 0};
        hash_bytes(h, q, sizeof q);
    }
    if (d->imatmul) { /* the same: integer matmuls only */
        int32_t q[3] = {(int32_t)d->src_q, d->src_zp != 0, d->src_zp_slot >= 0 ? 1 + d->src_zp_u8 : 0};
        hash_bytes(h, "imatmul", 7);
        hash_bytes(h, q, sizeof q);
        if (d->dst_q) { /* the fused requantization: the 8-bit destination */
            int32_t r[2] = {(int32_t)d->dst_q, d->n_iq_terms > 0};
            hash_bytes(h, "requant", 7);
            hash_bytes(h, r, sizeof r);
        }
    }
    if (d->src_bf16 || d->wei_bf16 || d->dst_bf16) { /* the same: bfloat16 storage only */
        int32_t b[3] = {d->src_bf16, d->wei_bf16, d->dst_bf16};
        hash_bytes(h, b, sizeof b);
    }
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
    if (p.bf16) APPEND(" bf16");
    if (d->src_bf16 || d->wei_bf16) APPEND(" %s-bf16", d->src_bf16 && d->wei_bf16 ? "operands" : d->src_bf16 ? "src" : "wei");
    if (d->src_q) APPEND(" %s%s", d->src_q == dnnl_u8 ? "u8" : "s8", d->src_zp || d->src_zp_slot >= 0 ? " zp" : "");
    if (d->imatmul) APPEND(d->dst_q ? " x s8 ->%s requantized" : " x s8 ->s32", d->dst_q == dnnl_u8 ? "u8" : "s8");
    if (c->src_transposed) APPEND(" src-strided");
    if (c->width_swapped) APPEND(" Hx1-as-1xH");
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
    if (c->dst_transposed) APPEND(" dst-strided");
    if (d->dst_q) APPEND(" ->%s%s", d->dst_q == dnnl_u8 ? "u8" : "s8", d->dst_zp ? " zp" : "");
    if (d->dst_bf16) APPEND(" ->bf16");
#undef APPEND
}

/* Are dims [0, upto] of t laid out densely (each stride the product of the
 * dims and stride after it)? */
static bool dense_prefix(const dn_tensor *t, int upto) {
    for (int i = 0; i < upto; i++)
        if (t->dims[i] != 1 && t->strides[i] != t->strides[i + 1] * t->dims[i + 1]) return false;
    return true;
}

/* Collapses dims [0, r-2] of t to one: full (equal to dst's) or all 1. */
static bool collapse_rows(dn_tensor *t, const dn_tensor *dst) {
    int r = dst->ndims;
    bool full = true, ones = true;
    for (int i = 0; i < r - 1; i++) {
        full = full && t->dims[i] == dst->dims[i];
        ones = ones && t->dims[i] == 1;
    }
    if (!ones && !(full && dense_prefix(t, r - 2))) return false;
    int64_t rows = 1;
    for (int i = 0; i < r - 1; i++) rows *= t->dims[i];
    dn_tensor c = {.ndims = 2, .dims = {rows, t->dims[r - 1]}, .strides = {t->strides[r - 2], t->strides[r - 1]}};
    *t = c;
    return true;
}

/* Exchanges dims h and h + 1 (H and W) of a tensor whose W has size 1. The
 * new H, of size 1, gets the stride it has in a dense tensor (W's times
 * W's size: H lies just outside W in both NCHW and NHWC): a size-1 dim's
 * stride does not move any address, but oneDNN matches formats on every
 * stride, and its x64:gemm:jit convolution read a full-shape binary
 * post-op operand with a stray one wrongly (tests/dnnl/test_dnnl_linear.c,
 * the unit-width cases with a residual). */
static void swap_hw(dn_tensor *t, int h) {
    int64_t d = t->dims[h];
    t->dims[h] = t->dims[h + 1], t->dims[h + 1] = d;
    t->strides[h + 1] = t->strides[h];
    t->strides[h] = t->strides[h + 1] * t->dims[h + 1];
}

static void swap_pair(int64_t *v) {
    int64_t t = v[0];
    v[0] = v[1], v[1] = t;
}

/* A 2-D convolution over an H x 1 image with an h x 1 kernel (a 1-D
 * convolution along H, as tf2onnx writes Conv1D) is the same convolution
 * over a 1 x H image with a 1 x h kernel, and the same bytes: with W = 1
 * the two layouts differ only in the stride of a size-1 dim. oneDNN 2.6's
 * brgconv blocks its GEMMs along the output's rows (ow), so with ow = 1
 * each call computes one output pixel: Magika's 256 -> 512 channel, 5 x 1
 * convolution over 512 x 1 ran 6.4 ms, the same convolution along W 2.9 ms
 * (230 GFLOP/s, this CPU's float32 peak; bench/RESULTS.md). Swapped
 * before the signature, so profiles of the old form are not reused. */
static bool swap_unit_width(dn_desc *d) {
    korch_prim_linear *p = &d->params;
    if (d->op != KORCH_LINEAR_CONV || p->spatial != 2 || d->src.ndims != 4 || d->dst.ndims != 4) return false;
    int kw = d->wei.ndims - 1; /* (G,) O, I, kh, kw */
    if (d->src.dims[3] != 1 || d->dst.dims[3] != 1 || d->wei.dims[kw] != 1 || p->pads_begin[1] != 0 ||
        p->pads_end[1] != 0 || d->src.dims[2] <= 1)
        return false;
    swap_hw(&d->src, 2);
    swap_hw(&d->dst, 2);
    swap_hw(&d->wei, kw - 1);
    for (int i = 0; i < d->n_post; i++)
        if (d->post[i].kind == DN_POST_BINARY && d->post[i].operand.ndims == 4) swap_hw(&d->post[i].operand, 2);
    swap_pair(p->strides);
    swap_pair(p->dilations);
    swap_pair(p->pads_begin);
    swap_pair(p->pads_end);
    swap_pair(p->output_padding);
    return true;
}

/* A batched matmul whose weights are the same matrix for every batch
 * ([B..., M, K] x [K, N]) is one [B*M, K] x [K, N] product: oneDNN then runs
 * one GEMM instead of B small ones. With M = 1 (ViT's [197, 1, 768] x
 * [768, 2304] after PyTorch's attention transposes) the batched form is 197
 * matrix-vector products that each stream the whole weight matrix: 5x
 * slower. Applied only when every tensor of the kernel collapses densely. */
static void fold_batch_into_rows(dn_desc *d) {
    int r = d->dst.ndims;
    if (d->op != KORCH_LINEAR_MATMUL || r <= 2) return;
    for (int i = 0; i < r - 2; i++)
        if (d->wei.dims[i] != 1) return;
    dn_tensor src = d->src, dst = d->dst, bias = d->bias, ops[DN_MAX_POST];
    /* src rows must be dst's rows (a broadcast src batch does not fold) */
    for (int i = 0; i < r - 1; i++)
        if (src.dims[i] != dst.dims[i]) return;
    if (!dense_prefix(&src, r - 2) || !dense_prefix(&dst, r - 2)) return;
    if (!collapse_rows(&src, &d->dst)) return;
    if (bias.ndims && !collapse_rows(&bias, &d->dst)) return;
    for (int i = 0; i < d->n_post; i++) {
        ops[i] = d->post[i].operand;
        if (d->post[i].kind == DN_POST_BINARY && !collapse_rows(&ops[i], &d->dst)) return;
    }
    if (!collapse_rows(&dst, &d->dst)) return;
    dn_tensor wei = {.ndims = 2,
                     .dims = {d->wei.dims[r - 2], d->wei.dims[r - 1]},
                     .strides = {d->wei.strides[r - 2], d->wei.strides[r - 1]}};
    d->src = src;
    d->dst = dst;
    d->wei = wei;
    if (bias.ndims) d->bias = bias;
    for (int i = 0; i < d->n_post; i++)
        if (d->post[i].kind == DN_POST_BINARY) d->post[i].operand = ops[i];
}

/* Does `node`'s output reach `target` through spec nodes? */
static bool feeds(const actx *c, int node, int target, int depth) {
    if (depth > 64) return false;
    const korch_pnode *t = &c->pg->nodes[target];
    for (int k = 0; k < t->n_inputs; k++) {
        int p = c->pg->values[t->inputs[k]].producer;
        if (p == node) return true;
        if (p >= 0 && an_spec_index(c, p) >= 0 && feeds(c, node, p, depth + 1)) return true;
    }
    return false;
}

/* ---- entry ----------------------------------------------------------------- */

bool dn_analyze(const korch_kernel_spec *spec, dn_desc *d, char *reason, size_t size) {
    memset(d, 0, sizeof *d);
    d->bias_slot = -1;
    d->src_zp_slot = -1;
    actx c = {.spec = spec, .pg = spec->pg, .d = d, .reason = reason, .size = size, .src_transpose = -1,
              .dequant_q = -1, .operand_cast = {-1, -1}};
    if (reason && size) reason[0] = '\0';
    char nm[160];
    if (spec->n_nodes < 1) return an_fail(&c, "empty kernel");
    if (spec->n_nodes > 64) return an_fail(&c, "kernel of %d primitives is too large for a post-op chain", spec->n_nodes);
    int linear = -1, li = -1;
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &spec->pg->nodes[spec->nodes[i]];
        if (n->kind == KORCH_PRIM_LINEAR) {
            if (linear >= 0) return an_fail(&c, "two linear primitives (nodes %d and %d)", linear, spec->nodes[i]);
            linear = spec->nodes[i];
            li = i;
        }
    }
    if (linear < 0) return an_fail(&c, "no linear primitive (memory-bound kernels are the code generator's)");
    bool imatmul = korch_pnode_is_integer_linear(spec->pg, &spec->pg->nodes[linear]); /* a matmul or a convolution */
    int deq[6], n_deq = 0;
    if (imatmul) {
        n_deq = an_imatmul_src(&c, linear, deq);
        if (n_deq < 0)
            return an_fail(&c, "an integer matmul whose source is not an 8-bit kernel input minus a scalar zero point");
    } else {
        c.src_transpose = an_src_transpose(&c, linear, c.src_perm);
        n_deq = c.src_transpose < 0 ? an_src_dequant(&c, linear, deq) : 0;
    }
    for (int k = 0; k < 2; k++) c.operand_cast[k] = an_operand_cast(&c, linear, k);
    for (int i = 0; i < spec->n_nodes; i++) {
        const korch_pnode *n = &spec->pg->nodes[spec->nodes[i]];
        if (an_is_reshape(&c, spec->nodes[i])) continue; /* checked where it is used */
        if (spec->nodes[i] == c.src_transpose) continue; /* absorbed into the source's strides */
        if (spec->nodes[i] == c.operand_cast[0] || spec->nodes[i] == c.operand_cast[1]) continue; /* the conversion */
        bool dequant = false; /* absorbed into an int8 source */
        for (int k = 0; k < n_deq; k++) dequant |= spec->nodes[i] == deq[k];
        if (dequant) continue;
        /* a transpose after the chain may be absorbed into the destination's
         * strides; one that is not is reported as off the chain */
        if (i > li && n->kind == KORCH_PRIM_LAYOUT && spec->pg->nodes[linear].u.linear.op != KORCH_LINEAR_MATMUL &&
            korch_layout_as_transpose(spec->pg, spec->nodes[i], (int64_t[KORCH_MAX_RANK]){0}))
            continue;
        if (i < li && feeds(&c, spec->nodes[i], linear, 0))
            return an_fail(&c, "%s computes an operand of the linear primitive (a prologue); oneDNN fuses only post-ops",
                        an_node_name(&c, spec->nodes[i], nm, sizeof nm));
        if (i != li && n->kind != KORCH_PRIM_ELEMENTWISE)
            return an_fail(&c, "%s: oneDNN post-ops are elementwise; a %s primitive cannot be fused",
                        an_node_name(&c, spec->nodes[i], nm, sizeof nm), korch_prim_kind_name(n->kind));
    }
    if (!setup_linear(&c, linear)) return false;
    c.used[li] = true;
    for (int k = 0; k < n_deq; k++) c.used[an_spec_index(&c, deq[k])] = true;
    for (int k = 0; k < 2; k++)
        if (c.operand_cast[k] >= 0) c.used[an_spec_index(&c, c.operand_cast[k])] = true;
    if (imatmul ? !an_imatmul_check(&c) : !an_int8_check(&c)) return false;
    int v = spec->pg->nodes[linear].outputs[0];
    if (imatmul && an_consumers(&c, v, (int[1]){0}, 1) > 0) {
        /* oneDNN writes the int32 result, or a QLinearConv's or
         * QLinearMatMul's whole requantization where that is exact
         * (dnnl_imatmul.c) */
        int y = an_imatmul_requant(&c, v);
        if (y < 0)
            return an_fail(&c, "an integer matmul's int32 result is read inside the kernel (oneDNN writes it; a "
                               "requantization only where provably exact)");
        v = y;
    }
    for (;;) {
        int cons[8];
        int nc = an_consumers(&c, v, cons, 8);
        if (nc == 0) break;
        int z = an_absorb_dst_transpose(&c, v);
        if (z < 0) z = an_requant_tail(&c, v);
        if (z < 0) z = an_bf16_tail(&c, v);
        if (z >= 0) {
            v = z;
            break;
        }
        if (an_is_output(&c, v))
            return an_fail(&c,
                        "value %d (after %d post-ops) is needed outside the kernel and also feeds %s; oneDNN writes only "
                        "the final result",
                        v, d->n_post, an_node_name(&c, cons[0], nm, sizeof nm));
        if (nc == 1 && an_is_reshape(&c, cons[0])) {
            c.used[an_spec_index(&c, cons[0])] = true;
            c.reshaped = true;
            v = spec->pg->nodes[cons[0]].outputs[0];
            continue;
        }
        if (nc == 1 && spec->pg->nodes[cons[0]].kind == KORCH_PRIM_LAYOUT)
            return an_fail(&c,
                           "%s: oneDNN post-ops are elementwise; a layout primitive cannot be fused (a transpose "
                           "only as the last step, writing the kernel's output)",
                           an_node_name(&c, cons[0], nm, sizeof nm));
        if (nc == 1) {
            int i = an_spec_index(&c, cons[0]);
            if (!an_single_step(&c, cons[0], v)) return false;
            c.used[i] = true;
            v = spec->pg->nodes[cons[0]].outputs[0];
            continue;
        }
        int w = -1;
        if (!an_region_step(&c, v, &w)) return false;
        v = w;
    }
    for (int i = 0; i < spec->n_nodes; i++)
        if (!c.used[i])
            return an_fail(&c, "%s is not on the post-op chain of the linear primitive (oneDNN fuses no side computation)",
                        an_node_name(&c, spec->nodes[i], nm, sizeof nm));
    if (spec->n_outputs != 1 || spec->outputs[0] != v)
        return an_fail(&c, "the kernel has %d outputs; oneDNN writes only the final value of the post-op chain",
                    spec->n_outputs);
    if (!an_legalize(&c)) return false;
    if (!an_deconv_fusion(&c)) return false;
    fold_batch_into_rows(d);
    c.width_swapped = swap_unit_width(d);
    finish(&c);
    return true;
}
