/* Fission of LSTM, GRU and RNN against the reference kernel on random
 * configurations: every direction, layout 0 and 1, biases, initial states,
 * peepholes, clip, linear_before_reset, input_forget, every activation the
 * spec allows, omitted outputs, constant and run-time weights. sequence_lens
 * equal to the length everywhere fission; shorter ones must decline to an
 * opaque primitive, which still computes the right thing. */
#include "fission/fission_harness.h"

static const char *const ACTS[] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                   "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};

static void attr_strings(korch_graph *g, int ni, const char *name, int count, const char *const *v) {
    korch_attr *a = fh_attr(g, ni, name, KORCH_ATTR_STRINGS);
    a->strings = calloc((size_t)count + 1, sizeof *a->strings);
    for (int k = 0; k < count; k++) a->strings[k] = strdup(v[k]);
    a->count = count;
}

static void weight(korch_graph *g, const char *name, int rank, const int64_t *dims, bool constant) {
    if (constant) fh_const_random(g, name, rank, dims, -0.6, 0.6);
    else fh_input(g, name, KORCH_DTYPE_FLOAT32, rank, dims);
}

static void one(int t, int kind, bool short_lens) {
    static const char *const OPS[] = {"RNN", "GRU", "LSTM"};
    const char *op = OPS[kind];
    int G = kind == 2 ? 4 : kind == 1 ? 3 : 1, n_acts = kind + 1;
    int64_t T = fh_int(1, 6), B = fh_int(1, 3), I = fh_int(1, 6), H = fh_int(1, 6);
    int dir = (int)fh_int(0, 2), D = dir == 2 ? 2 : 1;
    int layout = (int)fh_int(0, 1);
    bool constant = fh_uniform() < 0.6;
    char label[160], ins[160] = "x,w,r";
    korch_graph *g = fh_begin(14);
    int64_t xd[3] = {T, B, I}, sd[3] = {D, B, H};
    if (layout) xd[0] = B, xd[1] = T, sd[0] = B, sd[1] = D;
    fh_input(g, "x", KORCH_DTYPE_FLOAT32, 3, xd);
    weight(g, "w", 3, (int64_t[]){D, G * H, I}, constant);
    weight(g, "r", 3, (int64_t[]){D, G * H, H}, constant);
    bool bias = fh_uniform() < 0.7, lens = short_lens || fh_uniform() < 0.2, h0 = fh_uniform() < 0.5;
    bool c0 = kind == 2 && fh_uniform() < 0.5, peep = kind == 2 && fh_uniform() < 0.4;
    if (bias) weight(g, "b", 2, (int64_t[]){D, 2 * G * H}, constant);
    if (lens) {
        korch_tensor l;
        korch_shape ls = {.rank = 1, .dims = {B}};
        if (korch_tensor_alloc(&l, KORCH_DTYPE_INT32, &ls) != KORCH_OK) abort();
        for (int64_t b = 0; b < B; b++) ((int32_t *)l.data)[b] = (int32_t)(short_lens ? fh_int(0, T) : T);
        if (short_lens) ((int32_t *)l.data)[0] = (int32_t)(T - 1); /* at least one row stops early */
        fh_const(g, "lens", &l);
    }
    if (h0) fh_input(g, "h0", KORCH_DTYPE_FLOAT32, 3, sd);
    if (c0) fh_input(g, "c0", KORCH_DTYPE_FLOAT32, 3, sd);
    if (peep) weight(g, "p", 2, (int64_t[]){D, 3 * H}, constant);
    int last = peep ? 7 : c0 ? 6 : h0 ? 5 : lens ? 4 : bias ? 3 : 2;
    const char *names[8] = {"x", "w", "r", bias ? "b" : "", lens ? "lens" : "", h0 ? "h0" : "", c0 ? "c0" : "",
                            peep ? "p" : ""};
    for (int i = 3; i <= last; i++) {
        strcat(ins, ",");
        strcat(ins, names[i]);
    }
    /* outputs: Y always kept in one case of three, else each with p = 0.7 */
    bool oy = t % 3 == 0 || fh_uniform() < 0.7, oh = fh_uniform() < 0.7, oc = kind == 2 && fh_uniform() < 0.7;
    if (!oy && !oh && !oc) oy = true;
    char outs[64];
    snprintf(outs, sizeof outs, "%s,%s%s%s", oy ? "y" : "", oh ? "yh" : "", kind == 2 ? "," : "",
             kind == 2 ? (oc ? "yc" : "") : "");
    int n = fh_node(g, op, ins, outs);
    fh_attr_int(g, n, "hidden_size", H);
    fh_attr_string(g, n, "direction", dir == 0 ? "forward" : dir == 1 ? "reverse" : "bidirectional");
    if (layout) fh_attr_int(g, n, "layout", 1);
    bool clip = fh_uniform() < 0.25;
    if (clip) fh_attr_float(g, n, "clip", (float)(0.5 + fh_uniform() * 2));
    if (kind == 1 && fh_uniform() < 0.5) fh_attr_int(g, n, "linear_before_reset", 1);
    if (kind == 2 && fh_uniform() < 0.2) fh_attr_int(g, n, "input_forget", 1);
    bool custom = fh_uniform() < 0.5;
    if (custom) {
        const char *acts[6];
        float alphas[12], betas[12];
        int na = 0, nb = 0;
        for (int k = 0; k < n_acts * D; k++) {
            acts[k] = ACTS[fh_int(0, 10)];
            alphas[na++] = (float)(0.2 + fh_uniform());
            betas[nb++] = (float)(fh_uniform() - 0.5);
        }
        attr_strings(g, n, "activations", n_acts * D, acts);
        if (fh_uniform() < 0.7) fh_attr_floats(g, n, "activation_alpha", na, alphas);
        if (fh_uniform() < 0.7) fh_attr_floats(g, n, "activation_beta", nb, betas);
    }
    if (oy) fh_output(g, "y");
    if (oh) fh_output(g, "yh");
    if (oc) fh_output(g, "yc");
    snprintf(label, sizeof label, "%s #%d T%lld B%lld I%lld H%lld dir %d layout %d%s%s%s%s%s%s%s", op, t, (long long)T,
             (long long)B, (long long)I, (long long)H, dir, layout, constant ? " const" : "", bias ? " bias" : "",
             lens ? (short_lens ? " short-lens" : " lens") : "", h0 ? " h0" : "", c0 ? " c0" : "", peep ? " peep" : "",
             custom ? " custom-acts" : "");
    /* inputs in [-1, 1): unbounded activations then stay moderate over 6 steps */
    fh_check(g, &(fh_options){.rtol = 2e-5, .lo = -1, .hi = 1, .allow_opaque = short_lens, .min_primitives = 1}, label);
}

int main(void) {
    fh_seed(18);
    for (int t = 0; t < 240; t++) one(t, t % 3, false);
    for (int t = 0; t < 12; t++) one(t, t % 3, true);
    printf("%d graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
