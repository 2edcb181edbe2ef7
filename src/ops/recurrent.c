/* LSTM, GRU, RNN: attributes, shapes and the op rows. The kernel is in
 * recurrent_kernel.c, the fission rule in fission/rules_recurrent.c.
 *
 * Opsets 7 and 14 (and GRU 7, the first with linear_before_reset as it is
 * today); 14 adds `layout`. Opset 1-6 forms (output_sequence, GRU 3) are not
 * accepted: their exporters are long gone. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "ops/recurrent.h"

typedef struct fn_info {
    const char *name;
    korch_rnn_fn fn;
    int n_alpha, n_beta;   /* parameters the function consumes */
    float alpha, beta;     /* their defaults: those of the ONNX operator of the same name */
} fn_info;

static const fn_info FNS[] = {
    {"relu", KORCH_RNN_FN_RELU, 0, 0, 0, 0},
    {"tanh", KORCH_RNN_FN_TANH, 0, 0, 0, 0},
    {"sigmoid", KORCH_RNN_FN_SIGMOID, 0, 0, 0, 0},
    {"affine", KORCH_RNN_FN_AFFINE, 1, 1, 1.0f, 0.0f},
    {"leakyrelu", KORCH_RNN_FN_LEAKY_RELU, 1, 0, 0.01f, 0},
    {"thresholdedrelu", KORCH_RNN_FN_THRESHOLDED_RELU, 1, 0, 1.0f, 0},
    {"scaledtanh", KORCH_RNN_FN_SCALED_TANH, 1, 1, 1.0f, 1.0f},
    {"hardsigmoid", KORCH_RNN_FN_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"elu", KORCH_RNN_FN_ELU, 1, 0, 1.0f, 0},
    {"softsign", KORCH_RNN_FN_SOFTSIGN, 0, 0, 0, 0},
    {"softplus", KORCH_RNN_FN_SOFTPLUS, 0, 0, 0, 0},
};

/* Case-insensitive, as ONNX Runtime reads them (exporters write "Tanh"). */
static const fn_info *find_fn(const char *name) {
    for (size_t k = 0; k < sizeof FNS / sizeof FNS[0]; k++) {
        const char *a = FNS[k].name, *b = name;
        while (*a && *b && *a == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return &FNS[k];
    }
    return NULL;
}

double korch_rnn_activate(const korch_rnn_act *a, double x) {
    switch (a->fn) {
    case KORCH_RNN_FN_RELU: return x > 0 ? x : 0;
    case KORCH_RNN_FN_TANH: return tanh(x);
    case KORCH_RNN_FN_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case KORCH_RNN_FN_AFFINE: return (double)a->alpha * x + a->beta;
    case KORCH_RNN_FN_LEAKY_RELU: return x >= 0 ? x : (double)a->alpha * x;
    case KORCH_RNN_FN_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case KORCH_RNN_FN_SCALED_TANH: return (double)a->alpha * tanh((double)a->beta * x);
    case KORCH_RNN_FN_HARD_SIGMOID: return fmin(fmax((double)a->alpha * x + a->beta, 0.0), 1.0);
    case KORCH_RNN_FN_ELU: return x >= 0 ? x : (double)a->alpha * (exp(x) - 1.0);
    case KORCH_RNN_FN_SOFTSIGN: return x / (1.0 + fabs(x));
    case KORCH_RNN_FN_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    }
    return x;
}

static korch_status read_activations(const korch_op_ctx *ctx, korch_rnn_geometry *g) {
    static const korch_rnn_fn defaults[3][3] = {
        [KORCH_RNN_SIMPLE] = {KORCH_RNN_FN_TANH},
        [KORCH_RNN_GRU] = {KORCH_RNN_FN_SIGMOID, KORCH_RNN_FN_TANH},
        [KORCH_RNN_LSTM] = {KORCH_RNN_FN_SIGMOID, KORCH_RNN_FN_TANH, KORCH_RNN_FN_TANH},
    };
    char *const *names = NULL;
    const float *alphas = NULL, *betas = NULL;
    int n = korch_node_attr_strings(ctx->node, "activations", &names);
    int na = korch_node_attr_floats(ctx->node, "activation_alpha", &alphas);
    int nb = korch_node_attr_floats(ctx->node, "activation_beta", &betas);
    int ia = 0, ib = 0;
    if (n < 0) {
        for (int d = 0; d < g->dirs; d++)
            for (int k = 0; k < g->n_acts; k++) g->acts[d][k] = (korch_rnn_act){.fn = defaults[g->kind][k]};
        return KORCH_OK;
    }
    /* one list per direction, or (as ONNX Runtime accepts) one list for both */
    if (n != g->n_acts * g->dirs && n != g->n_acts)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "activations lists %d functions; expected %d (%d per direction)",
                              n, g->n_acts * g->dirs, g->n_acts);
    for (int d = 0; d < g->dirs; d++)
        for (int k = 0; k < g->n_acts; k++) {
            int idx = n == g->n_acts ? k : d * g->n_acts + k;
            const fn_info *f = find_fn(names[idx]);
            char buf[64];
            if (!f)
                return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "activation \"%s\" is not one the ONNX spec allows",
                                      korch_printable(names[idx], buf, sizeof buf));
            korch_rnn_act a = {.fn = f->fn, .alpha = f->alpha, .beta = f->beta};
            /* alphas and betas are consumed in order by the functions that
             * take them; with a shared list they are read once */
            if (f->n_alpha && (d == 0 || n != g->n_acts) && ia < na) a.alpha = alphas[ia++];
            if (f->n_beta && (d == 0 || n != g->n_acts) && ib < nb) a.beta = betas[ib++];
            if (d == 1 && n == g->n_acts) a = g->acts[0][k];
            g->acts[d][k] = a;
        }
    return KORCH_OK;
}

static korch_status check_shape(const korch_op_ctx *ctx, int i, const char *role, int rank, const int64_t *want) {
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_shape *s = &ctx->inputs[i]->shape;
    bool ok = s->rank == rank;
    for (int k = 0; ok && k < rank; k++) ok = s->dims[k] == want[k];
    if (ok) return KORCH_OK;
    korch_shape w = {.rank = rank};
    for (int k = 0; k < rank; k++) w.dims[k] = want[k];
    char a[96], b[96];
    return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s has shape %s, expected %s", role,
                          korch_shape_format(s, a, sizeof a), korch_shape_format(&w, b, sizeof b));
}

korch_status korch_rnn_geometry_read(const korch_op_ctx *ctx, korch_rnn_geometry *g) {
    memset(g, 0, sizeof *g);
    const char *op = ctx->node->op_type;
    g->kind = strcmp(op, "LSTM") == 0 ? KORCH_RNN_LSTM : strcmp(op, "GRU") == 0 ? KORCH_RNN_GRU : KORCH_RNN_SIMPLE;
    g->gates = g->kind == KORCH_RNN_LSTM ? 4 : g->kind == KORCH_RNN_GRU ? 3 : 1;
    g->n_acts = g->kind == KORCH_RNN_LSTM ? 3 : g->kind == KORCH_RNN_GRU ? 2 : 1;
    for (int i = 0; i < 3; i++) {
        if (!korch_op_has_input(ctx, i))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "missing input %s", i == 0 ? "X" : i == 1 ? "W" : "R");
        KORCH_TRY(korch_op_require_dtype(ctx, i, KORCH_DTYPE_FLOAT32));
    }
    const char *dir = korch_node_attr_string(ctx->node, "direction", "forward");
    char buf[64];
    if (strcmp(dir, "forward") == 0) g->dirs = 1;
    else if (strcmp(dir, "reverse") == 0) g->dirs = 1, g->reverse = true;
    else if (strcmp(dir, "bidirectional") == 0) g->dirs = 2;
    else
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "direction \"%s\"; expected forward, reverse or bidirectional",
                              korch_printable(dir, buf, sizeof buf));
    g->layout = (int)korch_node_attr_int(ctx->node, "layout", 0);
    if (g->layout != 0 && g->layout != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "layout is %d; expected 0 or 1", g->layout);
    const korch_shape *x = &ctx->inputs[KORCH_RNN_IN_X]->shape, *w = &ctx->inputs[KORCH_RNN_IN_W]->shape;
    char xs[96];
    if (x->rank != 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "X has shape %s; expected rank 3", korch_shape_format(x, xs, sizeof xs));
    g->seq = x->dims[g->layout == 0 ? 0 : 1];
    g->batch = x->dims[g->layout == 0 ? 1 : 0];
    g->input = x->dims[2];
    if (w->rank != 3 || w->dims[1] % g->gates != 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "W has shape %s; expected (%d, %d*hidden_size, %lld)",
                              korch_shape_format(w, xs, sizeof xs), g->dirs, g->gates, (long long)g->input);
    g->hidden = korch_node_attr_int(ctx->node, "hidden_size", w->dims[1] / g->gates);
    if (g->hidden <= 0 || g->hidden > (1 << 20))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "hidden_size is %lld", (long long)g->hidden);
    int64_t gh = g->gates * g->hidden;
    KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_W, "W", 3, (int64_t[]){g->dirs, gh, g->input}));
    KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_R, "R", 3, (int64_t[]){g->dirs, gh, g->hidden}));
    g->has_bias = korch_op_has_input(ctx, KORCH_RNN_IN_B);
    g->has_seq_lens = korch_op_has_input(ctx, KORCH_RNN_IN_SEQ_LENS);
    g->has_h0 = korch_op_has_input(ctx, KORCH_RNN_IN_H0);
    g->has_c0 = g->kind == KORCH_RNN_LSTM && korch_op_has_input(ctx, KORCH_RNN_IN_C0);
    g->has_peepholes = g->kind == KORCH_RNN_LSTM && korch_op_has_input(ctx, KORCH_RNN_IN_P);
    if (g->has_bias) KORCH_TRY(korch_op_require_dtype(ctx, KORCH_RNN_IN_B, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_B, "B", 2, (int64_t[]){g->dirs, 2 * gh}));
    if (g->has_seq_lens) {
        KORCH_TRY(korch_op_require_dtype(ctx, KORCH_RNN_IN_SEQ_LENS, KORCH_DTYPE_INT32));
        KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_SEQ_LENS, "sequence_lens", 1, (int64_t[]){g->batch}));
    }
    int64_t state[3] = {g->dirs, g->batch, g->hidden};
    if (g->layout == 1) state[0] = g->batch, state[1] = g->dirs;
    if (g->has_h0) {
        KORCH_TRY(korch_op_require_dtype(ctx, KORCH_RNN_IN_H0, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_H0, "initial_h", 3, state));
    }
    if (g->has_c0) {
        KORCH_TRY(korch_op_require_dtype(ctx, KORCH_RNN_IN_C0, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_C0, "initial_c", 3, state));
    }
    if (g->has_peepholes) {
        KORCH_TRY(korch_op_require_dtype(ctx, KORCH_RNN_IN_P, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(check_shape(ctx, KORCH_RNN_IN_P, "P", 2, (int64_t[]){g->dirs, 3 * g->hidden}));
    }
    const korch_attr *clip = korch_node_attr(ctx->node, "clip");
    if (clip) {
        g->has_clip = true;
        g->clip = clip->f;
        if (!(g->clip > 0))
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "clip is %g; expected a positive threshold", (double)g->clip);
    }
    g->linear_before_reset = g->kind == KORCH_RNN_GRU && korch_node_attr_int(ctx->node, "linear_before_reset", 0) != 0;
    g->input_forget = g->kind == KORCH_RNN_LSTM && korch_node_attr_int(ctx->node, "input_forget", 0) != 0;
    return read_activations(ctx, g);
}

static korch_status infer_rnn(korch_op_ctx *ctx) {
    korch_rnn_geometry g;
    KORCH_TRY(korch_rnn_geometry_read(ctx, &g));
    korch_shape y = {.rank = 4, .dims = {g.seq, g.dirs, g.batch, g.hidden}};
    korch_shape h = {.rank = 3, .dims = {g.dirs, g.batch, g.hidden}};
    if (g.layout == 1) {
        y = (korch_shape){.rank = 4, .dims = {g.batch, g.seq, g.dirs, g.hidden}};
        h = (korch_shape){.rank = 3, .dims = {g.batch, g.dirs, g.hidden}};
    }
    korch_op_set_output(ctx, KORCH_RNN_OUT_Y, KORCH_DTYPE_FLOAT32, &y);
    korch_op_set_output(ctx, KORCH_RNN_OUT_Y_H, KORCH_DTYPE_FLOAT32, &h);
    korch_op_set_output(ctx, KORCH_RNN_OUT_Y_C, KORCH_DTYPE_FLOAT32, &h);
    return KORCH_OK;
}

/* Two per multiply-add of the input and recurrent projections; the gate
 * arithmetic is a few flops per element and not counted. */
static int64_t flops_rnn(const korch_op_ctx *ctx) {
    korch_rnn_geometry g;
    if (korch_rnn_geometry_read(ctx, &g) != KORCH_OK) return 0;
    return 2 * g.dirs * g.seq * g.batch * g.gates * g.hidden * (g.input + g.hidden);
}

korch_status korch_rnn_run(korch_op_ctx *ctx); /* recurrent_kernel.c */

const korch_op_def korch_op_def_LSTM = {
    .kind = KORCH_OP_LSTM, .op_type = "LSTM", .opset_min = 7, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 8, .min_outputs = 0, .max_outputs = 3,
    .infer = infer_rnn, .run = korch_rnn_run, .flops = flops_rnn,
};
const korch_op_def korch_op_def_GRU = {
    .kind = KORCH_OP_GRU, .op_type = "GRU", .opset_min = 7, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
    .infer = infer_rnn, .run = korch_rnn_run, .flops = flops_rnn,
};
const korch_op_def korch_op_def_RNN = {
    .kind = KORCH_OP_RNN, .op_type = "RNN", .opset_min = 7, .opset_max = 18,
    .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
    .infer = infer_rnn, .run = korch_rnn_run, .flops = flops_rnn,
};
