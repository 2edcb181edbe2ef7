/* Primitive graph construction and interpretation on hand-computed cases. */
#include <string.h>

#include "ir/pgraph.h"
#include "test.h"

static int input(korch_pgraph *pg, int rank, const int64_t *dims) {
    korch_shape s = korch_shape_make(rank, dims);
    return korch_pgraph_add_input(pg, KORCH_DTYPE_FLOAT32, &s);
}

static void output(korch_pgraph *pg, int v) {
    korch_pgraph_add_output(pg, v);
}

static korch_tensor make(int rank, const int64_t *dims, const float *data) {
    korch_tensor t = {.dtype = KORCH_DTYPE_FLOAT32, .shape = korch_shape_make(rank, dims), .data = (void *)data};
    return t;
}

/* relu(x @ w + b), then transpose, then a row sum */
static void test_small_chain(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t xd[2] = {2, 3}, wd[2] = {3, 2};
    int x = input(pg, 2, xd);
    int w = input(pg, 2, wd);
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &mm, x, w);
    int b = korch_pgraph_add_scalar(pg, -5.0f);
    int add_in[2] = {y, b};
    int z = korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, add_in, 0, 0, KORCH_DTYPE_UNDEFINED);
    int r = korch_pgraph_elementwise(pg, KORCH_EW_RELU, 1, &z, 0, 0, KORCH_DTYPE_UNDEFINED);
    /* transpose 2x2: in[0] = o[1], in[1] = o[0] */
    korch_index_map map = {.input_rank = 2};
    map.terms[0] = (korch_index_term){.coef = {0, 1}, .div = 1};
    map.terms[1] = (korch_index_term){.coef = {1, 0}, .div = 1};
    korch_shape ts = {.rank = 2, .dims = {2, 2}};
    int t = korch_pgraph_layout(pg, KORCH_LAYOUT_TRANSPOSE, 1, &r, &ts, &map, 0.0);
    int s = korch_pgraph_reduce(pg, KORCH_REDUCE_SUM, t, 1u << 1, false);
    CHECK(y >= 0 && z >= 0 && r >= 0 && t >= 0 && s >= 0);
    output(pg, t);
    output(pg, s);

    float xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {1, 0, 0, 1, 1, 1};
    /* x@w = [[1+3, 2+3], [4+6, 5+6]] = [[4,5],[10,11]]; -5, relu -> [[0,0],[5,6]]
     * transpose -> [[0,5],[0,6]]; row sums -> [5, 6] */
    korch_tensor in[2] = {make(2, xd, xv), make(2, wd, wv)}, out[2];
    CHECK_OK(korch_pgraph_interpret(pg, in, out));
    const float *o0 = out[0].data, *o1 = out[1].data;
    CHECK(o0[0] == 0 && o0[1] == 5 && o0[2] == 0 && o0[3] == 6);
    CHECK(out[1].shape.rank == 1 && o1[0] == 5 && o1[1] == 6);
    korch_tensor_free(&out[0]);
    korch_tensor_free(&out[1]);
    korch_pgraph_free(pg);
}

/* 3x3 max pooling with stride 1 and pad 1 as a window layout + reduce. */
static void test_window_pool(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t xd[2] = {3, 3};
    int x = input(pg, 2, xd);
    korch_index_map map = {.input_rank = 2, .may_be_out_of_bounds = true};
    /* output (oh, ow, kh, kw): in_h = oh + kh - 1, in_w = ow + kw - 1 */
    map.terms[0] = (korch_index_term){.coef = {1, 0, 1, 0}, .offset = -1, .div = 1};
    map.terms[1] = (korch_index_term){.coef = {0, 1, 0, 1}, .offset = -1, .div = 1};
    korch_shape ws = {.rank = 4, .dims = {3, 3, 3, 3}};
    int win = korch_pgraph_layout(pg, KORCH_LAYOUT_WINDOW, 1, &x, &ws, &map, -1e30);
    int y = korch_pgraph_reduce(pg, KORCH_REDUCE_MAX, win, (1u << 2) | (1u << 3), false);
    output(pg, y);
    float xv[9] = {1, 2, 3, 4, 9, 6, 7, 8, 5};
    korch_tensor in = make(2, xd, xv), out;
    CHECK_OK(korch_pgraph_interpret(pg, &in, &out));
    const float *o = out.data;
    for (int i = 0; i < 9; i++) CHECK_MSG(o[i] == 9.0f, "element %d is %g", i, o[i]);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
}

/* reshape 2x6 -> 3x4 via flat-index div/mod terms. */
static void test_reshape_divmod(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t xd[2] = {2, 6};
    int x = input(pg, 2, xd);
    korch_index_map map = {.input_rank = 2};
    /* flat = 4*o0 + o1; in0 = flat / 6; in1 = flat % 6 */
    map.terms[0] = (korch_index_term){.coef = {4, 1}, .div = 6};
    map.terms[1] = (korch_index_term){.coef = {4, 1}, .div = 1, .mod = 6};
    korch_shape rs = {.rank = 2, .dims = {3, 4}};
    int y = korch_pgraph_layout(pg, KORCH_LAYOUT_RESHAPE, 1, &x, &rs, &map, 0);
    output(pg, y);
    float xv[12];
    for (int i = 0; i < 12; i++) xv[i] = (float)i;
    korch_tensor in = make(2, xd, xv), out;
    CHECK_OK(korch_pgraph_interpret(pg, &in, &out));
    CHECK(memcmp(out.data, xv, sizeof xv) == 0);
    korch_tensor_free(&out);
    korch_pgraph_free(pg);
}

static void test_bad_operands(void) {
    korch_pgraph *pg = NULL;
    CHECK_OK(korch_pgraph_create(NULL, &pg));
    int64_t ad[2] = {2, 3}, bd[2] = {4, 2};
    int a = input(pg, 2, ad), b = input(pg, 2, bd);
    korch_prim_linear mm = {.op = KORCH_LINEAR_MATMUL};
    CHECK(korch_pgraph_linear(pg, &mm, a, b) == -1);
    CHECK(strstr(korch_last_error(), "do not multiply") != NULL);
    int ab[2] = {a, b};
    CHECK(korch_pgraph_elementwise(pg, KORCH_EW_ADD, 2, ab, 0, 0, KORCH_DTYPE_UNDEFINED) == -1);
    CHECK(korch_pgraph_elementwise(pg, KORCH_EW_ADD, 1, ab, 0, 0, KORCH_DTYPE_UNDEFINED) == -1);
    korch_pgraph_free(pg);
}

int main(void) {
    test_small_chain();
    test_window_pool();
    test_reshape_divmod();
    test_bad_operands();
    TEST_MAIN_END();
}
