/* Reference kernel of LSTM, GRU and RNN: the ONNX equations written out, one
 * batch row and one time step at a time, accumulated in double.
 *
 *   RNN   H = f(X W^T + H R^T + Wb + Rb)
 *   GRU   z = f(X Wz^T + H Rz^T + Wbz + Rbz),  r = f(... r ...)
 *         n = g(X Wh^T + (r . H) Rh^T + Rbh + Wbh)         linear_before_reset = 0
 *         n = g(X Wh^T + r . (H Rh^T + Rbh) + Wbh)         linear_before_reset = 1
 *         H = (1 - z) . n + z . H
 *   LSTM  i = f(X Wi^T + H Ri^T + Pi . C + Wbi + Rbi)     f likewise with Pf (f = 1 - i with input_forget)
 *         c = g(X Wc^T + H Rc^T + Wbc + Rbc),  C = f . C + i . c
 *         o = f(X Wo^T + H Ro^T + Po . C_new + Wbo + Rbo),  H = o . h(C)
 *
 * `clip` bounds every gate pre-activation. With sequence_lens, batch row b
 * runs its first len[b] steps (backwards from len[b]-1 for the reverse
 * direction), Y is zero past them, and Y_h / Y_c hold the state after the
 * last step the row ran (zero when len[b] is 0, as in ONNX Runtime; the
 * spec does not say). */
#include <stdlib.h>
#include <string.h>

#include "ops/recurrent.h"

static double clip_to(const korch_rnn_geometry *g, double v) {
    if (!g->has_clip) return v;
    return v < -g->clip ? -g->clip : v > g->clip ? g->clip : v;
}

/* sum_k a[k] * w[row * n + k] */
static double dot(const float *a, const float *w, int64_t row, int64_t n) {
    double s = 0;
    for (int64_t k = 0; k < n; k++) s += (double)a[k] * w[row * n + k];
    return s;
}

typedef struct step_args {
    const korch_rnn_geometry *g;
    int d;
    const float *x;           /* X row, I */
    const float *w, *r;       /* this direction's W (G*H, I), R (G*H, H) */
    const float *wb, *rb;     /* biases (G*H each), or NULL */
    const float *p;           /* peepholes (3H), or NULL */
    float *h, *c;             /* state of this row, updated in place */
    double *tmp;              /* 3 * G * H scratch */
    float *rh;                /* H scratch: r . H for GRU */
} step_args;

static double bias(const float *b, int64_t k) { return b ? b[k] : 0.0; }

static void step(const step_args *a) {
    const korch_rnn_geometry *g = a->g;
    const korch_rnn_act *act = g->acts[a->d];
    int64_t H = g->hidden, I = g->input, GH = g->gates * H;
    double *xw = a->tmp, *hr = a->tmp + GH, *out = a->tmp + 2 * GH;
    for (int64_t k = 0; k < GH; k++) {
        xw[k] = dot(a->x, a->w, k, I) + bias(a->wb, k);
        hr[k] = dot(a->h, a->r, k, H) + bias(a->rb, k);
    }
    switch (g->kind) {
    case KORCH_RNN_SIMPLE:
        for (int64_t j = 0; j < H; j++) out[j] = korch_rnn_activate(&act[0], clip_to(g, xw[j] + hr[j]));
        for (int64_t j = 0; j < H; j++) a->h[j] = (float)out[j];
        break;
    case KORCH_RNN_GRU: {
        /* gates z r h: offsets 0, H, 2H */
        double *n = out;
        for (int64_t j = 0; j < H; j++) {
            double r = korch_rnn_activate(&act[0], clip_to(g, xw[H + j] + hr[H + j]));
            double pre;
            if (g->linear_before_reset) {
                pre = xw[2 * H + j] + r * hr[2 * H + j];
            } else {
                /* (r . H) Rh^T + Rbh: needs every r first; stash r in n */
                n[j] = r;
                continue;
            }
            n[j] = korch_rnn_activate(&act[1], clip_to(g, pre));
        }
        if (!g->linear_before_reset) {
            float *rh = a->rh;
            for (int64_t j = 0; j < H; j++) rh[j] = (float)(n[j] * a->h[j]);
            for (int64_t j = 0; j < H; j++) {
                double pre = xw[2 * H + j] + dot(rh, a->r, 2 * H + j, H) + bias(a->rb, 2 * H + j);
                n[j] = korch_rnn_activate(&act[1], clip_to(g, pre));
            }
        }
        for (int64_t j = 0; j < H; j++) {
            double z = korch_rnn_activate(&act[0], clip_to(g, xw[j] + hr[j]));
            a->h[j] = (float)((1.0 - z) * n[j] + z * a->h[j]);
        }
        break;
    }
    case KORCH_RNN_LSTM:
        /* gates i o f c: offsets 0, H, 2H, 3H; peepholes i o f */
        for (int64_t j = 0; j < H; j++) {
            double c_prev = a->c[j];
            double pi = a->p ? a->p[j] : 0, po = a->p ? a->p[H + j] : 0, pf = a->p ? a->p[2 * H + j] : 0;
            double i = korch_rnn_activate(&act[0], clip_to(g, xw[j] + hr[j] + pi * c_prev));
            double f = g->input_forget ? 1.0 - i
                                       : korch_rnn_activate(&act[0], clip_to(g, xw[2 * H + j] + hr[2 * H + j] + pf * c_prev));
            double cc = korch_rnn_activate(&act[1], clip_to(g, xw[3 * H + j] + hr[3 * H + j]));
            double c_new = f * c_prev + i * cc;
            double o = korch_rnn_activate(&act[0], clip_to(g, xw[H + j] + hr[H + j] + po * c_new));
            a->c[j] = (float)c_new;
            out[j] = o * korch_rnn_activate(&act[2], c_new);
        }
        for (int64_t j = 0; j < H; j++) a->h[j] = (float)out[j];
        break;
    }
}

korch_status korch_rnn_run(korch_op_ctx *ctx) {
    korch_rnn_geometry g;
    KORCH_TRY(korch_rnn_geometry_read(ctx, &g));
    const float *X = ctx->inputs[KORCH_RNN_IN_X]->data, *W = ctx->inputs[KORCH_RNN_IN_W]->data,
                *R = ctx->inputs[KORCH_RNN_IN_R]->data;
    const float *B = g.has_bias ? ctx->inputs[KORCH_RNN_IN_B]->data : NULL;
    const int32_t *lens = g.has_seq_lens ? ctx->inputs[KORCH_RNN_IN_SEQ_LENS]->data : NULL;
    const float *H0 = g.has_h0 ? ctx->inputs[KORCH_RNN_IN_H0]->data : NULL;
    const float *C0 = g.has_c0 ? ctx->inputs[KORCH_RNN_IN_C0]->data : NULL;
    const float *P = g.has_peepholes ? ctx->inputs[KORCH_RNN_IN_P]->data : NULL;
    korch_tensor *Y = ctx->n_outputs > 0 ? ctx->outputs[0] : NULL;
    korch_tensor *YH = ctx->n_outputs > 1 ? ctx->outputs[1] : NULL;
    korch_tensor *YC = ctx->n_outputs > 2 ? ctx->outputs[2] : NULL;
    int64_t H = g.hidden, GH = g.gates * H;
    for (int64_t b = 0; b < g.batch && lens; b++)
        if (lens[b] < 0 || lens[b] > g.seq)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "sequence_lens[%lld] is %d; expected 0..%lld",
                                  (long long)b, (int)lens[b], (long long)g.seq);
    float *h = malloc((size_t)(3 * H) * sizeof *h);
    double *tmp = malloc((size_t)(3 * GH) * sizeof *tmp);
    if (!h || !tmp) {
        free(h);
        free(tmp);
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    float *c = h + H;
    if (Y) memset(Y->data, 0, korch_tensor_bytes(Y)); /* steps past sequence_lens stay zero */
    for (int d = 0; d < g.dirs; d++)
        for (int64_t b = 0; b < g.batch; b++) {
            int64_t so = korch_rnn_state_offset(&g, d, b);
            for (int64_t j = 0; j < H; j++) {
                h[j] = H0 ? H0[so + j] : 0.0f;
                c[j] = C0 ? C0[so + j] : 0.0f;
            }
            step_args a = {
                .g = &g, .d = d, .w = W + d * GH * g.input, .r = R + d * GH * H,
                .wb = B ? B + d * 2 * GH : NULL, .rb = B ? B + d * 2 * GH + GH : NULL,
                .p = P ? P + d * 3 * H : NULL, .h = h, .c = c, .tmp = tmp, .rh = h + 2 * H,
            };
            int64_t len = lens ? lens[b] : g.seq;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = korch_rnn_backwards(&g, d) ? len - 1 - s : s;
                a.x = X + korch_rnn_x_offset(&g, t, b);
                step(&a);
                if (Y) memcpy((float *)Y->data + korch_rnn_y_offset(&g, t, d, b), h, (size_t)H * sizeof *h);
            }
            /* a row of length 0 has no last step: zero, as ONNX Runtime writes it */
            if (len == 0) memset(h, 0, (size_t)(2 * H) * sizeof *h);
            if (YH) memcpy((float *)YH->data + so, h, (size_t)H * sizeof *h);
            if (YC) memcpy((float *)YC->data + so, c, (size_t)H * sizeof *c);
        }
    free(h);
    free(tmp);
    return KORCH_OK;
}
