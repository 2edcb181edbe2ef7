/* Layout constructors (ir/indexmap.h) and the recognisers that read an
 * index map back as a standard operation; hand-computed small cases, then
 * random shapes checked element by element against a direct computation. */
#include "ir/indexmap.h"
#include "fission_harness.h"

static korch_pgraph *new_graph(void) {
    korch_pgraph *pg = NULL;
    if (korch_pgraph_create(NULL, &pg) != KORCH_OK) abort();
    return pg;
}

static int input(korch_pgraph *pg, const korch_shape *s) {
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, s);
}

/* Interprets a one-output pgraph on x = 0, 1, 2, ... and returns the output. */
static korch_tensor run_iota(korch_pgraph *pg, int y) {
    pg->outputs = realloc(pg->outputs, sizeof(int));
    pg->outputs[0] = y;
    pg->n_outputs = 1;
    korch_tensor in, out = {0};
    const korch_shape *s = &pg->values[pg->inputs[0]].shape;
    korch_tensor_alloc(&in, KORCH_DTYPE_FLOAT32, s);
    for (int64_t i = 0; i < korch_tensor_numel(&in); i++) ((float *)in.data)[i] = (float)i;
    CHECK_OK(korch_pgraph_interpret(pg, &in, &out));
    korch_tensor_free(&in);
    return out;
}

static int producer(const korch_pgraph *pg, int v) { return pg->values[v].producer; }

static void hand_cases(void) {
    /* pad of [0 1 2] by (2, 3): reflect 2 1 | 0 1 2 | 1 0 1, edge 0 0 | 0 1 2 | 2 2 2, wrap 1 2 | 0 1 2 | 0 1 2 */
    const float want[3][8] = {{2, 1, 0, 1, 2, 1, 0, 1}, {0, 0, 0, 1, 2, 2, 2, 2}, {1, 2, 0, 1, 2, 0, 1, 2}};
    const korch_pad_mode modes[3] = {KORCH_PAD_REFLECT, KORCH_PAD_EDGE, KORCH_PAD_WRAP};
    for (int m = 0; m < 3; m++) {
        korch_pgraph *pg = new_graph();
        korch_shape s = {.rank = 1, .dims = {3}};
        int x = input(pg, &s);
        int64_t b = 2, e = 3;
        int y = korch_pgraph_pad(pg, x, &b, &e, modes[m], 0);
        korch_tensor out = run_iota(pg, y);
        CHECK(out.shape.dims[0] == 8);
        for (int i = 0; i < 8; i++) CHECK_MSG(((float *)out.data)[i] == want[m][i], "pad mode %d element %d", m, i);
        CHECK(!korch_layout_as_pad(pg, producer(pg, y), &b, &e));
        korch_tensor_free(&out);
        korch_pgraph_free(pg);
    }
    /* crop one from the front, then reflect two at the end: kept window [1 2 3] of [0 1 2 3] -> 1 2 3 2 1 */
    korch_pgraph *pg = new_graph();
    korch_shape s = {.rank = 1, .dims = {4}};
    int x = input(pg, &s);
    int64_t b = -1, e = 2;
    korch_tensor out = run_iota(pg, korch_pgraph_pad(pg, x, &b, &e, KORCH_PAD_REFLECT, 0));
    const float crop_reflect[5] = {1, 2, 3, 2, 1};
    CHECK(out.shape.dims[0] == 5 && memcmp(out.data, crop_reflect, sizeof crop_reflect) == 0);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    /* constant pad: recognised, with its amounts */
    pg = new_graph();
    s = (korch_shape){.rank = 2, .dims = {2, 3}};
    x = input(pg, &s);
    int64_t pb[2] = {1, 0}, pe[2] = {0, 2}, gb[2], ge[2];
    int y = korch_pgraph_pad(pg, x, pb, pe, KORCH_PAD_CONSTANT, -1.0);
    CHECK(korch_layout_as_pad(pg, producer(pg, y), gb, ge));
    CHECK(gb[0] == 1 && gb[1] == 0 && ge[0] == 0 && ge[1] == 2);
    out = run_iota(pg, y);
    /* row 0 all -1; rows 1-2: 0 1 2 -1 -1 / 3 4 5 -1 -1 */
    const float padded[15] = {-1, -1, -1, -1, -1, 0, 1, 2, -1, -1, 3, 4, 5, -1, -1};
    CHECK(memcmp(out.data, padded, sizeof padded) == 0);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    /* gather rows [2, 0, 2] of a 3x2 iota: 4 5 0 1 4 5; not a slice */
    pg = new_graph();
    s = (korch_shape){.rank = 2, .dims = {3, 2}};
    x = input(pg, &s);
    int64_t idx[3] = {2, 0, 2}, st[2], sp[2];
    korch_shape is = {.rank = 1, .dims = {3}};
    y = korch_pgraph_gather(pg, x, 0, idx, &is);
    CHECK(!korch_layout_as_slice(pg, producer(pg, y), st, sp));
    CHECK(!korch_layout_as_reshape(pg, producer(pg, y)));
    out = run_iota(pg, y);
    const float gathered[6] = {4, 5, 0, 1, 4, 5};
    CHECK(memcmp(out.data, gathered, sizeof gathered) == 0);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
    /* a transpose of (2,1,3) by (1,0,2) moves only the unit dim: it is a reshape too */
    pg = new_graph();
    s = (korch_shape){.rank = 3, .dims = {2, 1, 3}};
    x = input(pg, &s);
    int64_t perm[3] = {1, 0, 2}, got[3];
    y = korch_pgraph_transpose(pg, x, perm);
    CHECK(korch_layout_as_transpose(pg, producer(pg, y), got) && got[0] == 1 && got[1] == 0 && got[2] == 2);
    CHECK(korch_layout_as_reshape(pg, producer(pg, y)));
    int64_t perm2[3] = {2, 1, 0};
    y = korch_pgraph_transpose(pg, x, perm2);
    CHECK(!korch_layout_as_reshape(pg, producer(pg, y)));
    korch_pgraph_free(pg);
}

/* Random transposes, reshapes, slices, expands and concats: the recogniser
 * must say yes with the right parameters, and the interpreted result must be
 * what a direct loop gives. */
static void random_cases(void) {
    for (int t = 0; t < 40; t++) {
        korch_pgraph *pg = new_graph();
        korch_shape s = fh_random_shape(1, 4, 4);
        int x = input(pg, &s);
        int64_t n = korch_shape_numel(&s);
        int64_t strides[8];
        korch_shape_strides(&s, strides);
        /* transpose */
        int64_t perm[8], back[8];
        for (int k = 0; k < s.rank; k++) perm[k] = k;
        for (int k = s.rank - 1; k > 0; k--) {
            int j = (int)fh_int(0, k);
            int64_t tmp = perm[k];
            perm[k] = perm[j];
            perm[j] = tmp;
        }
        int y = korch_pgraph_transpose(pg, x, perm);
        CHECK(korch_layout_as_transpose(pg, producer(pg, y), back));
        bool moves = false;
        for (int k = 0; k < s.rank; k++) moves = moves || (back[k] != perm[k] && s.dims[perm[k]] != 1);
        CHECK_MSG(!moves, "transpose #%d recognised with another permutation", t);
        korch_tensor out = run_iota(pg, y);
        int64_t o[8] = {0};
        for (int64_t i = 0; i < n; i++) {
            int64_t src = 0;
            for (int j = 0; j < s.rank; j++) src += o[j] * strides[perm[j]];
            CHECK(((float *)out.data)[i] == (float)src);
            for (int j = s.rank - 1; j >= 0; j--) {
                if (++o[j] < out.shape.dims[j]) break;
                o[j] = 0;
            }
        }
        korch_tensor_free(&out);
        /* reshape to a random factorisation: the same flat order */
        korch_shape r = {.rank = 0};
        int64_t rest = n;
        while (rest > 1 && r.rank < 5) {
            int64_t f = fh_int(1, rest);
            while (rest % f) f--;
            r.dims[r.rank++] = f;
            rest /= f;
        }
        r.dims[r.rank++] = rest;
        y = korch_pgraph_reshape(pg, x, &r);
        CHECK(korch_layout_as_reshape(pg, producer(pg, y)));
        CHECK(korch_layout_is_identity(pg, producer(pg, y)) == korch_shape_equal(&r, &s));
        out = run_iota(pg, y);
        for (int64_t i = 0; i < n; i++) CHECK(((float *)out.data)[i] == (float)i);
        korch_tensor_free(&out);
        /* slice with random start/step per dim */
        int64_t st[8], sp[8], gst[8], gsp[8];
        korch_shape ss = s;
        for (int k = 0; k < s.rank; k++) {
            sp[k] = fh_uniform() < 0.3 ? -1 : fh_int(1, 2);
            st[k] = sp[k] > 0 ? fh_int(0, s.dims[k] - 1) : fh_int(0, s.dims[k] - 1);
            int64_t room = sp[k] > 0 ? (s.dims[k] - 1 - st[k]) / sp[k] + 1 : st[k] + 1;
            ss.dims[k] = fh_int(1, room);
        }
        y = korch_pgraph_slice(pg, x, st, sp, &ss);
        CHECK(korch_layout_as_slice(pg, producer(pg, y), gst, gsp));
        for (int k = 0; k < s.rank; k++) CHECK(gst[k] == st[k] && (ss.dims[k] == 1 || gsp[k] == sp[k]));
        out = run_iota(pg, y);
        memset(o, 0, sizeof o);
        for (int64_t i = 0; i < korch_tensor_numel(&out); i++) {
            int64_t src = 0;
            for (int k = 0; k < s.rank; k++) src += (st[k] + sp[k] * o[k]) * strides[k];
            CHECK(((float *)out.data)[i] == (float)src);
            for (int k = s.rank - 1; k >= 0; k--) {
                if (++o[k] < ss.dims[k]) break;
                o[k] = 0;
            }
        }
        korch_tensor_free(&out);
        /* expand a (unit dims) view to s with extra leading dims */
        korch_shape e = {.rank = s.rank + 1};
        e.dims[0] = 2;
        for (int k = 0; k < s.rank; k++) e.dims[k + 1] = s.dims[k];
        y = korch_pgraph_expand(pg, x, &e);
        CHECK(korch_layout_as_expand(pg, producer(pg, y)));
        CHECK(!korch_layout_as_reshape(pg, producer(pg, y)));
        /* concat of x with itself along a random axis */
        int axis = (int)fh_int(0, s.rank - 1), ca;
        int two[2] = {x, x};
        y = korch_pgraph_concat(pg, 2, two, axis);
        CHECK(korch_layout_as_concat(pg, producer(pg, y), &ca) && ca == axis);
        out = run_iota(pg, y);
        int64_t seen = 0;
        for (int64_t i = 0; i < korch_tensor_numel(&out); i++) seen += (int64_t)((float *)out.data)[i];
        CHECK(seen == n * (n - 1)); /* every element twice */
        korch_tensor_free(&out);
        korch_pgraph_free(pg);
    }
}

/* Compaction drops dead nodes and orphan values and renumbers consistently. */
static void compaction(void) {
    korch_pgraph *pg = new_graph();
    korch_shape s = {.rank = 1, .dims = {4}};
    int x = input(pg, &s);
    int a = korch_pgraph_elementwise(pg, KORCH_EW_EXP, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
    int b = korch_pgraph_elementwise(pg, KORCH_EW_NEG, 1, &x, 0, 0, KORCH_DTYPE_UNDEFINED);
    int c = korch_pgraph_elementwise(pg, KORCH_EW_ABS, 1, &a, 0, 0, KORCH_DTYPE_UNDEFINED);
    pg->nodes[pg->values[b].producer].dead = true;
    pg->outputs = malloc(sizeof(int));
    pg->outputs[pg->n_outputs++] = c;
    CHECK_OK(korch_pgraph_compact(pg));
    CHECK(pg->n_nodes == 2 && pg->n_values == 3);
    CHECK(pg->nodes[1].inputs[0] == pg->nodes[0].outputs[0]);
    CHECK(pg->values[pg->outputs[0]].producer == 1);
    korch_tensor out = run_iota(pg, pg->outputs[0]);
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], exp(i), 1e-5 * exp(i));
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
}

int main(void) {
    fh_seed(6);
    hand_cases();
    random_cases();
    compaction();
    TEST_MAIN_END();
}
