/* Recurrent operators LSTM, GRU and RNN (ONNX opsets 7-18): the geometry
 * every consumer reads the same way -- the reference kernel
 * (ops/recurrent_kernel.c) and the fission rules (fission/rules_recurrent.c)
 * -- so the two cannot disagree on gate order, activations or layout.
 *
 * Layout 0: X (T, B, I), Y (T, D, B, H), Y_h / Y_c / initial states (D, B, H).
 * Layout 1: X (B, T, I), Y (B, T, D, H), Y_h / Y_c / initial states (B, D, H).
 * W (D, G*H, I), R (D, G*H, H), B (D, 2*G*H) = [Wb | Rb], P (D, 3H).
 * Gate order in W, R and B: LSTM i o f c, GRU z r h, RNN the one gate. */
#ifndef KORCH_OPS_RECURRENT_H
#define KORCH_OPS_RECURRENT_H

#include "ops/op.h"

typedef enum korch_rnn_kind { KORCH_RNN_SIMPLE, KORCH_RNN_GRU, KORCH_RNN_LSTM } korch_rnn_kind;

/* The activation functions the spec allows in `activations`. */
typedef enum korch_rnn_fn {
    KORCH_RNN_FN_RELU,
    KORCH_RNN_FN_TANH,
    KORCH_RNN_FN_SIGMOID,
    KORCH_RNN_FN_AFFINE,           /* alpha * x + beta */
    KORCH_RNN_FN_LEAKY_RELU,       /* x >= 0 ? x : alpha * x */
    KORCH_RNN_FN_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
    KORCH_RNN_FN_SCALED_TANH,      /* alpha * tanh(beta * x) */
    KORCH_RNN_FN_HARD_SIGMOID,     /* clamp(alpha * x + beta, 0, 1) */
    KORCH_RNN_FN_ELU,              /* x >= 0 ? x : alpha * (exp(x) - 1) */
    KORCH_RNN_FN_SOFTSIGN,         /* x / (1 + |x|) */
    KORCH_RNN_FN_SOFTPLUS,         /* log(1 + exp(x)) */
} korch_rnn_fn;

typedef struct korch_rnn_act {
    korch_rnn_fn fn;
    float alpha, beta;
} korch_rnn_act;

/* Input and output positions. */
enum { KORCH_RNN_IN_X, KORCH_RNN_IN_W, KORCH_RNN_IN_R, KORCH_RNN_IN_B, KORCH_RNN_IN_SEQ_LENS, KORCH_RNN_IN_H0,
       KORCH_RNN_IN_C0, KORCH_RNN_IN_P };
enum { KORCH_RNN_OUT_Y, KORCH_RNN_OUT_Y_H, KORCH_RNN_OUT_Y_C };

typedef struct korch_rnn_geometry {
    korch_rnn_kind kind;
    int64_t seq, batch, input, hidden; /* T, B, I, H */
    int dirs;                          /* D: 1, or 2 when bidirectional */
    bool reverse;                      /* direction "reverse" (one direction, run backwards) */
    int gates;                         /* G: 1 (RNN), 3 (GRU), 4 (LSTM) */
    int n_acts;                        /* activations per direction: 1, 2, 3 */
    int layout;                        /* 0 or 1 */
    bool has_clip;
    float clip;                        /* gate pre-activations are clipped to [-clip, clip] */
    bool linear_before_reset;          /* GRU */
    bool input_forget;                 /* LSTM: f = 1 - i */
    bool has_bias, has_seq_lens, has_h0, has_c0, has_peepholes;
    korch_rnn_act acts[2][3];          /* [direction][f, g, h] */
} korch_rnn_geometry;

/* Reads and checks attributes and input shapes (ctx as in shape inference). */
korch_status korch_rnn_geometry_read(const korch_op_ctx *ctx, korch_rnn_geometry *g);

/* Whether direction d runs backwards in time. */
static inline bool korch_rnn_backwards(const korch_rnn_geometry *g, int d) { return g->reverse || d == 1; }

/* Applies an activation in double (the reference kernel's precision). */
double korch_rnn_activate(const korch_rnn_act *a, double x);

/* Element offsets, by layout, of Y[t, d, b, :] and of a state [d, b, :]. */
static inline int64_t korch_rnn_y_offset(const korch_rnn_geometry *g, int64_t t, int d, int64_t b) {
    return g->layout == 0 ? ((t * g->dirs + d) * g->batch + b) * g->hidden
                          : ((b * g->seq + t) * g->dirs + d) * g->hidden;
}
static inline int64_t korch_rnn_state_offset(const korch_rnn_geometry *g, int d, int64_t b) {
    return g->layout == 0 ? ((int64_t)d * g->batch + b) * g->hidden : (b * g->dirs + d) * g->hidden;
}
static inline int64_t korch_rnn_x_offset(const korch_rnn_geometry *g, int64_t t, int64_t b) {
    return g->layout == 0 ? (t * g->batch + b) * g->input : (b * g->seq + t) * g->input;
}

#endif
