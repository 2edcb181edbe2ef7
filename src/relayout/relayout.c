/* The layout pass driver: convolutions to channels-last, then transposes
 * sunk (relayout_sink.c) and cancelled until nothing moves, then the fission
 * clean-ups. See relayout.h and docs/layout.md. */
#include <stdlib.h>
#include <string.h>

#include "fission/fission.h"
#include "ir/indexmap.h"
#include "relayout/relayout_internal.h"

bool korch_layout_strategy_parse(const char *text, korch_layout_strategy *out) {
    if (!text) return false;
    if (strcmp(text, "nchw") == 0 || strcmp(text, "keep") == 0 || strcmp(text, "none") == 0) *out = KORCH_LAYOUT_KEEP;
    else if (strcmp(text, "nhwc") == 0 || strcmp(text, "channels_last") == 0 || strcmp(text, "channels-last") == 0)
        *out = KORCH_LAYOUT_CHANNELS_LAST;
    else return false;
    return true;
}

const char *korch_layout_strategy_name(korch_layout_strategy s) {
    return s == KORCH_LAYOUT_KEEP ? "nchw (unchanged)" : "channels-last";
}

const char *korch_layout_strategy_token(korch_layout_strategy s) {
    return s == KORCH_LAYOUT_KEEP ? "nchw" : "channels-last";
}

static bool grow_mine(lp_state *s) {
    if (s->pg->n_nodes <= s->cap_mine) return true;
    int cap = s->pg->n_nodes * 2 + 16;
    bool *m = realloc(s->mine, (size_t)cap * sizeof *m);
    if (!m) return false;
    memset(m + s->cap_mine, 0, (size_t)(cap - s->cap_mine) * sizeof *m);
    s->mine = m;
    s->cap_mine = cap;
    return true;
}

int lp_transpose(lp_state *s, int x, const int64_t *perm, int source_node) {
    int y = korch_pgraph_transpose(s->pg, x, perm);
    if (y < 0) return -1;
    if (!grow_mine(s)) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "layout pass: out of memory");
        return -1;
    }
    int node = s->pg->values[y].producer;
    s->mine[node] = true;
    s->pg->nodes[node].source_node = source_node;
    return y;
}

void lp_replace_uses(korch_pgraph *pg, int from, int to) {
    for (int i = 0; i < pg->n_nodes; i++) {
        korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from) n->inputs[k] = to;
    }
    for (int i = 0; i < pg->n_outputs; i++)
        if (pg->outputs[i] == from) {
            /* the output keeps its name; finalize_outputs (clean-up) copies
             * it if `to` is an input, a constant or another output */
            pg->outputs[i] = to;
            pg->values[from].graph_output = -1;
            if (pg->values[to].graph_output < 0) pg->values[to].graph_output = i;
            if (pg->values[to].source_value < 0) pg->values[to].source_value = pg->values[from].source_value;
        }
}

bool lp_transpose_perm(const korch_pgraph *pg, int node, int64_t *perm) {
    const korch_pnode *n = &pg->nodes[node];
    if (n->dead || n->kind != KORCH_PRIM_LAYOUT || n->n_inputs != 1) return false;
    if (pg->values[n->inputs[0]].shape.rank < 2) return false;
    return korch_layout_as_transpose(pg, node, perm);
}

static int count_transposes(const korch_pgraph *pg) {
    int n = 0;
    int64_t perm[KORCH_MAX_RANK];
    for (int i = 0; i < pg->n_nodes; i++)
        if (!pg->nodes[i].dead && pg->values[pg->nodes[i].outputs[0]].shape.rank >= 3 && lp_transpose_perm(pg, i, perm) &&
            !korch_layout_as_reshape(pg, i))
            n++;
    return n;
}

/* conv(x) -> T_first(conv_nhwc(T_last(x))) */
static korch_status rewrite_convs(lp_state *s) {
    korch_pgraph *pg = s->pg;
    int n0 = pg->n_nodes;
    for (int i = 0; i < n0; i++) {
        korch_pnode *n = &pg->nodes[i];
        if (n->dead || n->kind != KORCH_PRIM_LINEAR || n->u.linear.op == KORCH_LINEAR_MATMUL ||
            n->u.linear.channels_last)
            continue;
        korch_prim_linear p = n->u.linear;
        int x = n->inputs[0], w = n->inputs[1], y = n->outputs[0], src = n->source_node;
        int r = pg->values[x].shape.rank;
        /* float32, or an integer convolution reading an 8-bit source
         * directly (QLinearConv's and ConvInteger's with constant weights;
         * a source minus a run-time zero point stays channels-first) */
        korch_dtype dx = pg->values[x].dtype;
        bool integer = dx == KORCH_DTYPE_UINT8 || dx == KORCH_DTYPE_INT8;
        if (r != p.spatial + 2 || (dx != KORCH_DTYPE_FLOAT32 && !(integer && p.op == KORCH_LINEAR_CONV))) continue;
        int64_t to_last[KORCH_MAX_RANK], to_first[KORCH_MAX_RANK];
        to_last[0] = to_first[0] = 0;
        for (int k = 1; k < r - 1; k++) to_last[k] = k + 1;
        to_last[r - 1] = 1;
        to_first[1] = r - 1;
        for (int k = 2; k < r; k++) to_first[k] = k - 1;
        int xt = lp_transpose(s, x, to_last, src);
        if (xt < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "layout pass");
        p.channels_last = true;
        int yl = korch_pgraph_linear(pg, &p, xt, w);
        if (yl < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "layout pass: channels-last convolution");
        pg->nodes[pg->values[yl].producer].source_node = src;
        int yt = lp_transpose(s, yl, to_first, src);
        if (yt < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "layout pass");
        pg->nodes[i].dead = true;
        lp_replace_uses(pg, y, yt);
        if (s->stats) s->stats->convs_rewritten++;
    }
    return KORCH_OK;
}

/* T2(T1(a)) that is the identity reads a. */
static bool try_cancel(lp_state *s, int node, const int64_t *perm) {
    korch_pgraph *pg = s->pg;
    int t = pg->nodes[node].inputs[0];
    int p = pg->values[t].producer;
    int64_t pp[KORCH_MAX_RANK];
    if (p < 0 || !lp_transpose_perm(pg, p, pp)) return false;
    int a = pg->nodes[p].inputs[0], out = pg->nodes[node].outputs[0];
    const korch_shape *sa = &pg->values[a].shape, *so = &pg->values[out].shape;
    if (!korch_shape_equal(sa, so)) return false;
    for (int j = 0; j < so->rank; j++)
        if (so->dims[j] != 1 && pp[perm[j]] != j) return false;
    lp_replace_uses(pg, out, a);
    pg->nodes[node].dead = true;
    if (s->stats) s->stats->cancelled++;
    return true;
}

/* Is the chain chain[0] (last) ... chain[len-1] (first) of pure layouts a
 * reshape, i.e. does every output element come from the input element with
 * the same row-major position? Single-axis probes reject most chains
 * cheaply; the answer is then checked on every element (exact). */
#define COLLAPSE_MAX_ELEMENTS ((int64_t)1 << 24)

static int64_t composite_source(const korch_pgraph *pg, const int *chain, int len, int64_t f) {
    for (int c = 0; c < len && f >= 0; c++) {
        int input;
        f = korch_layout_source(pg, chain[c], f, &input);
    }
    return f;
}

static bool chain_is_reshape(const korch_pgraph *pg, const int *chain, int len) {
    const korch_shape *out = &pg->values[pg->nodes[chain[0]].outputs[0]].shape;
    const korch_shape *in = &pg->values[pg->nodes[chain[len - 1]].inputs[0]].shape;
    int64_t n = korch_shape_numel(out);
    if (n != korch_shape_numel(in) || n > COLLAPSE_MAX_ELEMENTS) return false;
    int64_t stride = 1;
    for (int j = out->rank - 1; j >= 0; j--) {
        for (int64_t v = 1; v < out->dims[j]; v++)
            if (composite_source(pg, chain, len, v * stride) != v * stride) return false;
        stride *= out->dims[j];
    }
    for (int64_t f = 0; f < n; f++)
        if (composite_source(pg, chain, len, f) != f) return false;
    return true;
}

/* The pass's own transposes often end chains of pure layouts that together
 * only reshape (SegFormer: x.transpose(1, 2).view(N, C, H, W), then the
 * convolution's T_last, is the (N, HW, C) tensor viewed as (N, H, W, C)).
 * Such a chain becomes one reshape, which the backends treat as free. */
static bool try_collapse(lp_state *s, int node) {
    korch_pgraph *pg = s->pg;
    int chain[5] = {node}, len = 1, best = 0;
    while (len < 5) {
        int p = pg->values[pg->nodes[chain[len - 1]].inputs[0]].producer;
        if (p < 0 || pg->nodes[p].dead || pg->nodes[p].kind != KORCH_PRIM_LAYOUT || pg->nodes[p].n_inputs != 1 ||
            !korch_layout_is_pure(pg, p))
            break;
        chain[len++] = p;
    }
    for (int l = len; l >= 2 && !best; l--)
        if (chain_is_reshape(pg, chain, l)) best = l;
    if (!best) return false;
    int x = pg->nodes[chain[best - 1]].inputs[0], y = pg->nodes[node].outputs[0];
    korch_shape shape = pg->values[y].shape;
    int r = korch_shape_equal(&pg->values[x].shape, &shape) ? x : korch_pgraph_reshape(pg, x, &shape);
    if (r < 0) return false;
    if (r != x) pg->nodes[pg->values[r].producer].source_node = pg->nodes[node].source_node;
    lp_replace_uses(pg, y, r);
    pg->nodes[node].dead = true;
    if (s->stats) s->stats->collapsed++;
    return true;
}

static bool has_uses(const korch_pgraph *pg, int v) {
    if (pg->values[v].graph_output >= 0) return true;
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v) return true;
    }
    return false;
}

static korch_status sweep(lp_state *s, int *changed) {
    korch_pgraph *pg = s->pg;
    int *consumers = NULL, cap = 0;
    korch_status st = KORCH_OK;
    for (int i = 0; i < pg->n_nodes && st == KORCH_OK; i++) {
        int64_t perm[KORCH_MAX_RANK];
        if (!lp_transpose_perm(pg, i, perm)) continue;
        if (try_cancel(s, i, perm)) {
            (*changed)++;
            continue;
        }
        if (i >= s->cap_mine || !s->mine[i]) continue;
        if (try_collapse(s, i)) {
            (*changed)++;
            continue;
        }
        int t = pg->nodes[i].outputs[0], n = 0;
        for (int c = 0; c < pg->n_nodes; c++) {
            const korch_pnode *cn = &pg->nodes[c];
            if (cn->dead || c == i) continue;
            bool reads = false;
            for (int k = 0; k < cn->n_inputs; k++) reads |= cn->inputs[k] == t;
            if (!reads) continue;
            if (n == cap) {
                int *grown = realloc(consumers, (size_t)(cap = cap * 2 + 8) * sizeof *grown);
                if (!grown) {
                    st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "layout pass: out of memory");
                    break;
                }
                consumers = grown;
            }
            consumers[n++] = c;
        }
        for (int c = 0; c < n && st == KORCH_OK; c++) {
            int r = lp_sink(s, i, consumers[c]);
            if (r < 0) st = KORCH_ERR_INTERNAL;
            else *changed += r;
        }
        if (st == KORCH_OK && !has_uses(pg, t)) pg->nodes[i].dead = true;
    }
    free(consumers);
    return st;
}

korch_status korch_layout_pass(korch_pgraph *pg, korch_layout_strategy strategy, korch_layout_stats *stats) {
    korch_layout_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->transposes_before = count_transposes(pg);
    if (strategy == KORCH_LAYOUT_KEEP) {
        stats->transposes_after = stats->transposes_before;
        return KORCH_OK;
    }
    lp_state s = {.pg = pg, .stats = stats};
    korch_status st = rewrite_convs(&s);
    /* each sweep moves every own transpose at least one node downstream or
     * removes it; the graph's depth bounds the sweeps */
    for (int round = 0; st == KORCH_OK && round < 4 * pg->n_nodes + 8; round++) {
        int changed = 0;
        st = sweep(&s, &changed);
        if (!changed) break;
    }
    free(s.mine);
    if (st != KORCH_OK) return korch_error_prefix(st, "layout pass");
    korch_cleanup_options o = korch_cleanup_options_default();
    KORCH_TRY(korch_pgraph_cleanup(pg, &o, NULL));
    stats->transposes_after = count_transposes(pg);
    return KORCH_OK;
}
