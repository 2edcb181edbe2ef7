/* Fission of LSTM, GRU and RNN, the Korch way (docs/fission.md, "Recurrent
 * operators"):
 *
 *   input projection  one linear primitive for every time step at once:
 *                     Xp = X (T*B, I) x W^T (I, G*H) + biases       per direction
 *   recurrence        unrolled over the (static) sequence length; step t is
 *                     a small linear primitive h (B, H) x R^T (H, G*H), a
 *                     slice of Xp, and the gate elementwise work, which the
 *                     candidate stage fuses and the profiler tunes like any
 *                     other block. Steps are alike, so their gate kernels
 *                     share a signature and are profiled once.
 *   outputs           Y is the concatenation of the step states along time
 *                     (a layout the consumers read through), Y_h / Y_c the
 *                     last states.
 *
 * Geometry (gate order, activations, layout, clip) comes from ops/recurrent.h,
 * the reference kernel's own reader. The rule declines sequence_lens that
 * are not a constant equal to the sequence length everywhere: a shorter row
 * stops early (and runs backwards from its own end), which an unrolled
 * static graph cannot express without per-row gathers; the reference kernel
 * runs it as an opaque primitive. */
#include <stdlib.h>

#include "fission/rules.h"
#include "ops/recurrent.h"

static korch_status read_geometry(korch_fission_ctx *ctx, korch_rnn_geometry *g) {
    korch_tensor store[8];
    korch_tensor *ins[8] = {0};
    int n = ctx->n_inputs < 8 ? ctx->n_inputs : 8;
    for (int i = 0; i < n; i++) {
        if (ctx->node->inputs[i] < 0) continue;
        const korch_value *v = &ctx->g->values[ctx->node->inputs[i]];
        store[i] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->is_constant ? v->constant.data : NULL};
        ins[i] = &store[i];
    }
    korch_op_ctx octx = {.graph = ctx->g, .node = ctx->node, .n_inputs = n, .inputs = ins};
    return korch_rnn_geometry_read(&octx, g);
}

static korch_shape shape2(int64_t a, int64_t b) { return (korch_shape){.rank = 2, .dims = {a, b}}; }

/* Rows [r0, r0+rows) and columns [c0, c0+cols) of a matrix. */
static int block(korch_fission_ctx *ctx, int x, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    if (x < 0) return -1;
    const korch_shape *s = fission_shape(ctx, x);
    if (r0 == 0 && c0 == 0 && rows == s->dims[0] && cols == s->dims[1]) return x;
    int64_t starts[2] = {r0, c0}, steps[2] = {1, 1};
    korch_shape out = shape2(rows, cols);
    return korch_pgraph_slice(ctx->pg, x, starts, steps, &out);
}

static int reshape(korch_fission_ctx *ctx, int x, korch_shape s) {
    return x < 0 ? -1 : korch_pgraph_reshape(ctx->pg, x, &s);
}

static int transpose(korch_fission_ctx *ctx, int x, const int64_t *perm) {
    return x < 0 ? -1 : korch_pgraph_transpose(ctx->pg, x, perm);
}

static int matmul(korch_fission_ctx *ctx, int a, int b) {
    if (a < 0 || b < 0) return -1;
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    return korch_pgraph_linear(ctx->pg, &p, a, b);
}

static int add(korch_fission_ctx *ctx, int a, int b) { return fission_binary(ctx, KORCH_EW_ADD, a, b); }
static int mul(korch_fission_ctx *ctx, int a, int b) { return fission_binary(ctx, KORCH_EW_MUL, a, b); }

static int activate(korch_fission_ctx *ctx, const korch_rnn_act *a, int x) {
    switch (a->fn) {
    case KORCH_RNN_FN_RELU: return fission_unary(ctx, KORCH_EW_RELU, x);
    case KORCH_RNN_FN_TANH: return fission_unary(ctx, KORCH_EW_TANH, x);
    case KORCH_RNN_FN_SIGMOID: return fission_unary(ctx, KORCH_EW_SIGMOID, x);
    case KORCH_RNN_FN_AFFINE: return fission_unary_ab(ctx, KORCH_EW_AFFINE, x, a->alpha, a->beta);
    case KORCH_RNN_FN_LEAKY_RELU: return fission_unary_ab(ctx, KORCH_EW_LEAKY_RELU, x, a->alpha, 0);
    case KORCH_RNN_FN_THRESHOLDED_RELU:
        return fission_where(ctx, fission_binary(ctx, KORCH_EW_GREATER, x, fission_scalar(ctx, a->alpha, KORCH_DTYPE_FLOAT32)),
                             x, fission_scalar(ctx, 0, KORCH_DTYPE_FLOAT32));
    case KORCH_RNN_FN_SCALED_TANH:
        return fission_unary_ab(ctx, KORCH_EW_AFFINE,
                                fission_unary(ctx, KORCH_EW_TANH, fission_unary_ab(ctx, KORCH_EW_AFFINE, x, a->beta, 0)),
                                a->alpha, 0);
    case KORCH_RNN_FN_HARD_SIGMOID:
        return fission_unary_ab(ctx, KORCH_EW_CLIP, fission_unary_ab(ctx, KORCH_EW_AFFINE, x, a->alpha, a->beta), 0, 1);
    case KORCH_RNN_FN_ELU: return fission_unary_ab(ctx, KORCH_EW_ELU, x, a->alpha, 0);
    case KORCH_RNN_FN_SOFTSIGN:
        return fission_binary(ctx, KORCH_EW_DIV, x,
                              fission_unary_ab(ctx, KORCH_EW_AFFINE, fission_unary(ctx, KORCH_EW_ABS, x), 1, 1));
    case KORCH_RNN_FN_SOFTPLUS: return fission_unary(ctx, KORCH_EW_SOFTPLUS, x);
    }
    return -1;
}

/* activation(clip(x)) */
static int gate(korch_fission_ctx *ctx, const korch_rnn_geometry *g, const korch_rnn_act *a, int x) {
    if (g->has_clip) x = fission_unary_ab(ctx, KORCH_EW_CLIP, x, -g->clip, g->clip);
    return activate(ctx, a, x);
}

/* Direction d's slab of a (D, rows, cols) tensor as a (rows, cols) matrix. */
static int slab(korch_fission_ctx *ctx, int x, int d, int64_t rows, int64_t cols) {
    if (x < 0) return -1;
    const korch_shape *s = fission_shape(ctx, x);
    if (s->rank == 2) { /* B (D, 2GH), P (D, 3H) */
        x = reshape(ctx, x, (korch_shape){.rank = 3, .dims = {s->dims[0], rows, cols}});
        if (x < 0) return -1;
        s = fission_shape(ctx, x);
    }
    int64_t starts[3] = {d, 0, 0}, steps[3] = {1, 1, 1};
    korch_shape one = {.rank = 3, .dims = {1, rows, cols}};
    int v = s->dims[0] == 1 ? x : korch_pgraph_slice(ctx->pg, x, starts, steps, &one);
    return reshape(ctx, v, shape2(rows, cols));
}

/* An initial state of direction d as (B, H): from the input, or zeros. */
static int initial_state(korch_fission_ctx *ctx, const korch_rnn_geometry *g, int input, int d) {
    if (!fission_has_in(ctx, input)) {
        korch_tensor t;
        korch_shape s = shape2(g->batch, g->hidden);
        if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &s) != KORCH_OK) return -1; /* zeroed */
        return fission_constant(ctx, &t);
    }
    int x = fission_in(ctx, input);
    static const int64_t swap01[3] = {1, 0, 2};
    if (g->layout == 1) x = transpose(ctx, x, swap01); /* (B, D, H) -> (D, B, H) */
    return slab(ctx, x, d, g->batch, g->hidden);
}

typedef struct direction_out {
    int *y;   /* T step states (B, H), in time order */
    int h, c; /* last states */
} direction_out;

static void run_direction(korch_fission_ctx *ctx, const korch_rnn_geometry *g, int x2, int d, direction_out *out) {
    int64_t T = g->seq, B = g->batch, H = g->hidden, G = g->gates, GH = G * H;
    static const int64_t swap[2] = {1, 0};
    const korch_rnn_act *act = g->acts[d];
    int w = transpose(ctx, slab(ctx, fission_in(ctx, KORCH_RNN_IN_W), d, GH, g->input), swap); /* (I, GH) */
    int r = transpose(ctx, slab(ctx, fission_in(ctx, KORCH_RNN_IN_R), d, GH, H), swap);        /* (H, GH) */
    /* biases (1, GH): Wb + Rb go into the projection, except GRU's Rbh, which
     * sits inside the reset gate's product */
    int wb = -1, rb = -1, xbias = -1, rbh = -1;
    if (g->has_bias) {
        int b = slab(ctx, fission_in(ctx, KORCH_RNN_IN_B), d, 1, 2 * GH);
        wb = block(ctx, b, 0, 1, 0, GH);
        rb = block(ctx, b, 0, 1, GH, GH);
        if (g->kind == KORCH_RNN_GRU) {
            int rzr = block(ctx, rb, 0, 1, 0, 2 * H); /* Rbz Rbr, padded with zeros over the h gate */
            if (rzr >= 0) rzr = korch_pgraph_pad(ctx->pg, rzr, (int64_t[]){0, 0}, (int64_t[]){0, H}, KORCH_PAD_CONSTANT, 0.0);
            xbias = add(ctx, wb, rzr);
            rbh = block(ctx, rb, 0, 1, 2 * H, H);
        } else {
            xbias = add(ctx, wb, rb);
        }
    }
    int xp = matmul(ctx, x2, w); /* (T*B, GH): the input projection of every step */
    if (g->has_bias) xp = add(ctx, xp, xbias);
    int h = initial_state(ctx, g, KORCH_RNN_IN_H0, d);
    int c = g->kind == KORCH_RNN_LSTM ? initial_state(ctx, g, KORCH_RNN_IN_C0, d) : -1;
    int p[3] = {-1, -1, -1}; /* peepholes i o f as (1, H) */
    if (g->has_peepholes) {
        int pv = slab(ctx, fission_in(ctx, KORCH_RNN_IN_P), d, 1, 3 * H);
        for (int k = 0; k < 3; k++) p[k] = block(ctx, pv, 0, 1, k * H, H);
    }
    int one = g->kind == KORCH_RNN_GRU || g->input_forget ? fission_scalar(ctx, 1.0, KORCH_DTYPE_FLOAT32) : -1;
    /* GRU: the z and r gates read h R[zr]^T; the candidate reads h Rh^T
     * (linear_before_reset) or (r . h) Rh^T */
    bool split = g->kind == KORCH_RNN_GRU && !g->linear_before_reset;
    int r_zr = split ? block(ctx, r, 0, H, 0, 2 * H) : -1;
    int r_h = split ? block(ctx, r, 0, H, 2 * H, H) : -1;
    for (int64_t s = 0; s < T; s++) {
        int64_t t = korch_rnn_backwards(g, d) ? T - 1 - s : s;
        int xt = block(ctx, xp, t * B, B, 0, GH);
        switch (g->kind) {
        case KORCH_RNN_SIMPLE: h = gate(ctx, g, &act[0], add(ctx, xt, matmul(ctx, h, r))); break;
        case KORCH_RNN_GRU: {
            /* linear_before_reset (PyTorch's GRU): one h R^T product for all
             * three gates; otherwise the candidate's product waits for r */
            int hr_all = g->linear_before_reset ? matmul(ctx, h, r) : -1;
            int hzr = g->linear_before_reset ? block(ctx, hr_all, 0, B, 0, 2 * H) : matmul(ctx, h, r_zr);
            int pre = add(ctx, block(ctx, xt, 0, B, 0, 2 * H), hzr);
            int z = gate(ctx, g, &act[0], block(ctx, pre, 0, B, 0, H));
            int rr = gate(ctx, g, &act[0], block(ctx, pre, 0, B, H, H));
            int xh = block(ctx, xt, 0, B, 2 * H, H), n;
            if (g->linear_before_reset) {
                int hr = block(ctx, hr_all, 0, B, 2 * H, H);
                if (rbh >= 0) hr = add(ctx, hr, rbh);
                n = gate(ctx, g, &act[1], add(ctx, xh, mul(ctx, rr, hr)));
            } else {
                int hr = matmul(ctx, mul(ctx, rr, h), r_h);
                if (rbh >= 0) hr = add(ctx, hr, rbh);
                n = gate(ctx, g, &act[1], add(ctx, xh, hr));
            }
            /* (1 - z) . n + z . h */
            h = add(ctx, mul(ctx, fission_binary(ctx, KORCH_EW_SUB, one, z), n), mul(ctx, z, h));
            break;
        }
        case KORCH_RNN_LSTM: {
            int pre = add(ctx, xt, matmul(ctx, h, r));
            int pi = block(ctx, pre, 0, B, 0, H), po = block(ctx, pre, 0, B, H, H);
            int pf = block(ctx, pre, 0, B, 2 * H, H), pc = block(ctx, pre, 0, B, 3 * H, H);
            if (p[0] >= 0) pi = add(ctx, pi, mul(ctx, p[0], c));
            int i = gate(ctx, g, &act[0], pi);
            int f;
            if (g->input_forget) {
                f = fission_binary(ctx, KORCH_EW_SUB, one, i);
            } else {
                if (p[2] >= 0) pf = add(ctx, pf, mul(ctx, p[2], c));
                f = gate(ctx, g, &act[0], pf);
            }
            int cc = gate(ctx, g, &act[1], pc);
            c = add(ctx, mul(ctx, f, c), mul(ctx, i, cc));
            if (p[1] >= 0) po = add(ctx, po, mul(ctx, p[1], c));
            int o = gate(ctx, g, &act[0], po);
            h = mul(ctx, o, activate(ctx, &act[2], c));
            break;
        }
        }
        out->y[t] = h;
    }
    out->h = h;
    out->c = c;
}

/* (D, B, H) from per-direction (B, H) states; (B, D, H) for layout 1. */
static int stack_states(korch_fission_ctx *ctx, const korch_rnn_geometry *g, const int *states) {
    int parts[2];
    for (int d = 0; d < g->dirs; d++)
        parts[d] = reshape(ctx, states[d], (korch_shape){.rank = 3, .dims = {1, g->batch, g->hidden}});
    for (int d = 0; d < g->dirs; d++)
        if (parts[d] < 0) return -1;
    int v = g->dirs == 1 ? parts[0] : korch_pgraph_concat(ctx->pg, 2, parts, 0);
    static const int64_t swap01[3] = {1, 0, 2};
    return g->layout == 1 ? transpose(ctx, v, swap01) : v;
}

static korch_status rule(korch_fission_ctx *ctx) {
    korch_rnn_geometry g;
    KORCH_TRY(read_geometry(ctx, &g));
    if (g.has_seq_lens) {
        const korch_tensor *lens = fission_const_in(ctx, KORCH_RNN_IN_SEQ_LENS);
        bool full = lens != NULL;
        for (int64_t b = 0; full && b < g.batch; b++) full = korch_tensor_get_i64(lens, b) == g.seq;
        if (!full)
            return fission_decline(ctx, "recurrent operator with sequence_lens that are not constant and equal to "
                                        "the sequence length (rows of their own length)");
    }
    if (g.seq * g.dirs > 4096) return fission_decline(ctx, "recurrent operator of more than 4096 steps (unrolled)");
    int64_t T = g.seq, B = g.batch;
    int x = fission_in(ctx, KORCH_RNN_IN_X);
    static const int64_t swap01[3] = {1, 0, 2};
    if (g.layout == 1) x = transpose(ctx, x, swap01); /* (B, T, I) -> (T, B, I) */
    int x2 = reshape(ctx, x, shape2(T * B, g.input));
    int *ys = calloc((size_t)(2 * T), sizeof *ys);
    if (!ys) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    direction_out outs[2];
    for (int d = 0; d < g.dirs; d++) {
        outs[d].y = ys + d * T;
        run_direction(ctx, &g, x2, d, &outs[d]);
    }
    if (fission_has_out(ctx, KORCH_RNN_OUT_Y)) {
        /* (T, D, B, H): each step state as (1, 1, B, H), time-major */
        int *parts = calloc((size_t)(T * g.dirs), sizeof *parts);
        int y = -1;
        if (parts) {
            bool ok = true;
            for (int64_t t = 0; t < T; t++)
                for (int d = 0; d < g.dirs; d++) {
                    parts[t * g.dirs + d] =
                        reshape(ctx, outs[d].y[t], (korch_shape){.rank = 4, .dims = {1, 1, B, g.hidden}});
                    ok = ok && parts[t * g.dirs + d] >= 0;
                }
            if (ok) {
                /* per step, directions side by side (axis 1), then time (axis 0) */
                int *steps = parts;
                if (g.dirs == 2)
                    for (int64_t t = 0; t < T && ok; t++) {
                        steps[t] = korch_pgraph_concat(ctx->pg, 2, parts + 2 * t, 1);
                        ok = steps[t] >= 0;
                    }
                if (ok) y = T == 1 ? steps[0] : korch_pgraph_concat(ctx->pg, (int)T, steps, 0);
            }
            free(parts);
        }
        static const int64_t to_batch_major[4] = {2, 0, 1, 3}; /* (T, D, B, H) -> (B, T, D, H) */
        if (g.layout == 1) y = y < 0 ? -1 : korch_pgraph_transpose(ctx->pg, y, to_batch_major);
        fission_set_out(ctx, KORCH_RNN_OUT_Y, y);
    }
    int states[2];
    if (fission_has_out(ctx, KORCH_RNN_OUT_Y_H)) {
        for (int d = 0; d < g.dirs; d++) states[d] = outs[d].h;
        fission_set_out(ctx, KORCH_RNN_OUT_Y_H, stack_states(ctx, &g, states));
    }
    if (g.kind == KORCH_RNN_LSTM && fission_has_out(ctx, KORCH_RNN_OUT_Y_C)) {
        for (int d = 0; d < g.dirs; d++) states[d] = outs[d].c;
        fission_set_out(ctx, KORCH_RNN_OUT_Y_C, stack_states(ctx, &g, states));
    }
    free(ys);
    return fission_done(ctx);
}

KORCH_FISSION_RULE(LSTM) { return rule(ctx); }
KORCH_FISSION_RULE(GRU) { return rule(ctx); }
KORCH_FISSION_RULE(RNN) { return rule(ctx); }
