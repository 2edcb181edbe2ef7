/* Property test: random small op graphs mixing elementwise maps,
 * reductions, softmax, normalisation, layout operators, MatMul, Gemm, Conv
 * and pooling. For every graph, fission (raw and cleaned) interpreted and
 * the exported ONNX model run by the reference executor equal the original.
 * Seeded: KORCH_FISSION_SEED=n reproduces one graph (n = its number), and
 * the failing graph's number is in the message. */
#include "fission_harness.h"

#define MAX_VALUES 48

typedef struct gen {
    korch_graph *g;
    int n;                  /* values available */
    char names[MAX_VALUES][16];
    korch_shape shapes[MAX_VALUES];
    int n_consts;
    char ops[512];          /* the op sequence, for messages */
} gen;

static const char *fresh(gen *s, const korch_shape *shape) {
    snprintf(s->names[s->n], sizeof s->names[0], "v%d", s->n);
    s->shapes[s->n] = *shape;
    return s->names[s->n++];
}

static const char *constant(gen *s, const korch_shape *shape, double lo, double hi) {
    static char name[32];
    snprintf(name, sizeof name, "c%d", s->n_consts++);
    fh_const_random(s->g, name, shape->rank, shape->dims, lo, hi);
    return name;
}

static const char *int_constant(gen *s, int n, const int64_t *v) {
    static char name[32];
    snprintf(name, sizeof name, "k%d", s->n_consts++);
    fh_const_i64(s->g, name, n, v);
    return name;
}

static int pick(gen *s) { return (int)fh_int(s->n > 4 ? s->n - 4 : 0, s->n - 1); } /* favour recent values */

static void note(gen *s, const char *op) {
    size_t len = strlen(s->ops);
    if (len + strlen(op) + 2 < sizeof s->ops) snprintf(s->ops + len, sizeof s->ops - len, "%s%s", len ? " " : "", op);
}

static int node2(gen *s, const char *op, const char *a, const char *b, const korch_shape *out) {
    char ins[80];
    snprintf(ins, sizeof ins, "%s%s%s", a, b ? "," : "", b ? b : "");
    const char *y = fresh(s, out);
    note(s, op);
    return fh_node(s->g, op, ins, y);
}

/* Adds one random operator reading existing values. */
static void add_op(gen *s) {
    int x = pick(s);
    korch_shape xs = s->shapes[x];
    const char *xn = s->names[x];
    int r = xs.rank;
    switch (fh_int(0, 15)) {
    case 0: {
        static const char *const un[] = {"Relu", "Tanh", "Sigmoid", "Neg", "Erf", "Softplus", "Abs", "HardSwish"};
        node2(s, un[fh_int(0, 7)], xn, NULL, &xs);
        break;
    }
    case 1:
    case 2: {
        /* binary with a broadcast partner: another value of the same shape, or a constant */
        static const char *const bin[] = {"Add", "Sub", "Mul", "Max"};
        int y = -1;
        for (int i = s->n - 1; i >= 0 && y < 0; i--)
            if (i != x && korch_shape_equal(&s->shapes[i], &xs)) y = i;
        korch_shape cs = xs;
        for (int k = 0; k < cs.rank; k++)
            if (fh_uniform() < 0.5) cs.dims[k] = 1;
        char cn[32];
        snprintf(cn, sizeof cn, "%s", y >= 0 && fh_uniform() < 0.6 ? s->names[y] : constant(s, &cs, -1, 1));
        node2(s, bin[fh_int(0, 3)], xn, cn, &xs);
        break;
    }
    case 3: {
        if (r == 0) break;
        static const char *const red[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"};
        int64_t axes[8];
        int count = 0;
        for (int k = 0; k < r; k++)
            if (fh_uniform() < 0.5) axes[count++] = k;
        if (!count) axes[count++] = r - 1;
        bool keep = fh_uniform() < 0.5;
        korch_shape out = {0};
        for (int k = 0, a = 0; k < r; k++) {
            if (a < count && axes[a] == k) {
                a++;
                if (keep) out.dims[out.rank++] = 1;
            } else {
                out.dims[out.rank++] = xs.dims[k];
            }
        }
        const char *op = red[fh_int(0, 3)];
        int n;
        if (strcmp(op, "ReduceSum") == 0) { /* axes are an input from opset 13 */
            char a[32];
            snprintf(a, sizeof a, "%s", int_constant(s, count, axes));
            n = node2(s, op, xn, a, &out);
        } else {
            n = node2(s, op, xn, NULL, &out);
            fh_attr_ints(s->g, n, "axes", count, axes);
        }
        fh_attr_int(s->g, n, "keepdims", keep);
        break;
    }
    case 4: {
        if (r == 0) break;
        int n = node2(s, fh_uniform() < 0.7 ? "Softmax" : "LogSoftmax", xn, NULL, &xs);
        fh_attr_int(s->g, n, "axis", fh_int(-r, r - 1));
        break;
    }
    case 5: {
        if (r == 0) break;
        korch_shape ps = {.rank = 1, .dims = {xs.dims[r - 1]}};
        char scale[32];
        snprintf(scale, sizeof scale, "%s", constant(s, &ps, 0.5, 1.5));
        note(s, "LayerNormalization");
        char ins[80];
        snprintf(ins, sizeof ins, "%s,%s", xn, scale);
        fh_node(s->g, "LayerNormalization", ins, fresh(s, &xs));
        break;
    }
    case 6: {
        if (r < 2) break;
        int64_t perm[8];
        for (int k = 0; k < r; k++) perm[k] = k;
        for (int k = r - 1; k > 0; k--) {
            int j = (int)fh_int(0, k);
            int64_t t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        korch_shape out = {.rank = r};
        for (int k = 0; k < r; k++) out.dims[k] = xs.dims[perm[k]];
        int n = node2(s, "Transpose", xn, NULL, &out);
        fh_attr_ints(s->g, n, "perm", r, perm);
        break;
    }
    case 7: {
        /* merge two adjacent dims, or split the last one */
        korch_shape out = xs;
        if (r >= 2 && fh_uniform() < 0.5) {
            int k = (int)fh_int(0, r - 2);
            out.dims[k] *= out.dims[k + 1];
            memmove(out.dims + k + 1, out.dims + k + 2, sizeof(int64_t) * (size_t)(r - k - 2));
            out.rank--;
        } else if (r >= 1 && r < 5 && xs.dims[r - 1] % 2 == 0) {
            out.dims[r - 1] /= 2;
            out.dims[r] = 2;
            out.rank++;
        } else {
            break;
        }
        char shape[32];
        snprintf(shape, sizeof shape, "%s", int_constant(s, out.rank, out.dims));
        node2(s, "Reshape", xn, shape, &out);
        break;
    }
    case 8: {
        if (r == 0) break;
        int k = (int)fh_int(0, r - 1);
        if (xs.dims[k] < 2) break;
        int64_t st = fh_int(0, xs.dims[k] - 2), en = fh_int(st + 1, xs.dims[k]), ax = k;
        korch_shape out = xs;
        out.dims[k] = en - st;
        char a[32], b[32], c[32];
        snprintf(a, sizeof a, "%s", int_constant(s, 1, &st));
        snprintf(b, sizeof b, "%s", int_constant(s, 1, &en));
        snprintf(c, sizeof c, "%s", int_constant(s, 1, &ax));
        char ins[128];
        snprintf(ins, sizeof ins, "%s,%s,%s,%s", xn, a, b, c);
        note(s, "Slice");
        fh_node(s->g, "Slice", ins, fresh(s, &out));
        break;
    }
    case 9: {
        if (r == 0) break;
        int k = (int)fh_int(0, r - 1);
        korch_shape out = xs;
        out.dims[k] *= 2;
        int n = node2(s, "Concat", xn, xn, &out);
        fh_attr_int(s->g, n, "axis", k);
        break;
    }
    case 10:
    case 11: {
        if (r < 2) break;
        korch_shape ws = {.rank = 2, .dims = {xs.dims[r - 1], fh_int(1, 6)}};
        korch_shape out = xs;
        out.dims[r - 1] = ws.dims[1];
        char w[32];
        snprintf(w, sizeof w, "%s", constant(s, &ws, -1, 1));
        node2(s, "MatMul", xn, w, &out);
        break;
    }
    case 12: {
        if (r != 2) break;
        int64_t N = fh_int(1, 5);
        korch_shape ws = {.rank = 2, .dims = {N, xs.dims[1]}}, bs = {.rank = 1, .dims = {N}};
        korch_shape out = {.rank = 2, .dims = {xs.dims[0], N}};
        char w[32], b[32];
        snprintf(w, sizeof w, "%s", constant(s, &ws, -1, 1));
        snprintf(b, sizeof b, "%s", constant(s, &bs, -1, 1));
        char ins[100];
        snprintf(ins, sizeof ins, "%s,%s,%s", xn, w, b);
        note(s, "Gemm");
        int n = fh_node(s->g, "Gemm", ins, fresh(s, &out));
        fh_attr_int(s->g, n, "transB", 1);
        fh_attr_float(s->g, n, "alpha", 0.75f);
        break;
    }
    case 13:
    case 14: {
        if (r != 4 || xs.dims[2] < 2 || xs.dims[3] < 2) break;
        bool conv = fh_uniform() < 0.5;
        korch_shape out = xs;
        out.dims[2] = xs.dims[2] - 1;
        out.dims[3] = xs.dims[3] - 1;
        if (conv) {
            korch_shape ws = {.rank = 4, .dims = {fh_int(1, 4), xs.dims[1], 2, 2}}, bs = {.rank = 1, .dims = {ws.dims[0]}};
            out.dims[1] = ws.dims[0];
            char w[32], b[32];
            snprintf(w, sizeof w, "%s", constant(s, &ws, -1, 1));
            snprintf(b, sizeof b, "%s", constant(s, &bs, -1, 1));
            char ins[100];
            snprintf(ins, sizeof ins, "%s,%s,%s", xn, w, b);
            note(s, "Conv");
            fh_node(s->g, "Conv", ins, fresh(s, &out));
        } else {
            int n = node2(s, fh_uniform() < 0.5 ? "MaxPool" : "AveragePool", xn, NULL, &out);
            fh_attr_ints(s->g, n, "kernel_shape", 2, (int64_t[]){2, 2});
        }
        break;
    }
    default: {
        if (r == 0) break;
        int64_t p[16] = {0};
        korch_shape out = xs;
        int k = (int)fh_int(0, r - 1);
        p[k] = fh_int(0, 2);
        p[r + k] = fh_int(0, 2);
        out.dims[k] += p[k] + p[r + k];
        char pads[32];
        snprintf(pads, sizeof pads, "%s", int_constant(s, 2 * r, p));
        node2(s, "Pad", xn, pads, &out);
        break;
    }
    }
}

static korch_graph *random_graph(int id, char *ops, size_t size) {
    fh_seed((uint64_t)id * 2654435761u + 17);
    gen *s = calloc(1, sizeof *s);
    s->g = fh_begin(17);
    int inputs = (int)fh_int(1, 2);
    korch_shape base = fh_random_shape(1, 4, 5);
    for (int i = 0; i < inputs; i++) {
        korch_shape sh = i == 0 ? base : (fh_uniform() < 0.6 ? base : fh_random_shape(1, 4, 5));
        const char *name = fresh(s, &sh);
        fh_input(s->g, name, KORCH_DTYPE_FLOAT32, sh.rank, sh.dims);
    }
    int ops_wanted = (int)fh_int(2, 10);
    for (int i = 0; i < 64 && s->n - inputs < ops_wanted && s->n < MAX_VALUES - 1; i++) add_op(s);
    if (s->n == inputs) node2(s, "Relu", s->names[0], NULL, &s->shapes[0]);
    /* the last value, and maybe an earlier one, are outputs */
    fh_output(s->g, s->names[s->n - 1]);
    int other = (int)fh_int(inputs, s->n - 1);
    if (other != s->n - 1 && fh_uniform() < 0.5) fh_output(s->g, s->names[other]);
    snprintf(ops, size, "%s", s->ops);
    korch_graph *g = s->g;
    free(s);
    return g;
}

int main(void) {
    const char *only = getenv("KORCH_FISSION_SEED");
    int first = only ? atoi(only) : 0, last = only ? atoi(only) : 599;
    for (int id = first; id <= last; id++) {
        char ops[512], label[640];
        korch_graph *g = random_graph(id, ops, sizeof ops);
        snprintf(label, sizeof label, "random graph %d [%s]", id, ops);
        fh_check(g, &(fh_options){.rtol = 2e-5, .seed = id}, label);
    }
    printf("%d random graphs checked\n", fh_checked);
    TEST_MAIN_END();
}
