/* Products of one row by a matrix as generated code (backend/cgen/expand.c):
 * [1, K] x [K, N] written as the sum over k of x[k] * w[k, n], checked
 * against the interpreter's matmul under contrasting schedules: weights as
 * constants and as computed values, odd sizes, N in blocks of 128 columns
 * (the blocked form) and not, an LSTM step's size with its
 * epilogue (the projected input added, a sigmoid) fused; and what stays
 * refused (two rows, bf16). */
#include "cgen_check.h"

static void check_case(int64_t k, int64_t n, bool weights_computed, bool epilogue, const char *what) {
    korch_pgraph *pg = cc_graph();
    int64_t xd[2] = {1, k}, wd[2] = {k, n}, gd[2] = {1, n};
    int x = cc_input(pg, KORCH_DTYPE_FLOAT32, 2, xd);
    int w = weights_computed ? cc_ew1(pg, KORCH_EW_NEG, cc_input(pg, KORCH_DTYPE_FLOAT32, 2, wd))
                             : cc_constant(pg, 2, wd, -1, 1);
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL};
    int y = korch_pgraph_linear(pg, &p, x, w);
    CHECK_MSG(y >= 0, "%s: linear: %s", what, korch_last_error());
    if (epilogue) y = cc_ew1(pg, KORCH_EW_SIGMOID, cc_ew2(pg, KORCH_EW_ADD, y, cc_input(pg, KORCH_DTYPE_FLOAT32, 2, gd)));
    cc_output(pg, y);
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    bool ok = korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason);
    CHECK_MSG(ok, "%s: refused: %s", what, reason);
    cc_spec_free(&spec);
    if (ok) cc_check(pg, cc_schedules, CC_N_SCHED, -1, 1, what);
    korch_pgraph_free(pg);
}

static void refused(int64_t m, bool bf16, const char *what) {
    korch_pgraph *pg = cc_graph();
    int64_t xd[2] = {m, 6}, wd[2] = {6, 5};
    korch_prim_linear p = {.op = KORCH_LINEAR_MATMUL, .bf16 = bf16};
    cc_output(pg, korch_pgraph_linear(pg, &p, cc_input(pg, KORCH_DTYPE_FLOAT32, 2, xd), cc_constant(pg, 2, wd, -1, 1)));
    korch_kernel_spec spec;
    cc_spec_all(pg, &spec);
    char reason[256] = "";
    CHECK_MSG(!korch_backend_supports(KORCH_BACKEND_CGEN, &spec, reason, sizeof reason), "%s: accepted", what);
    CHECK_MSG(strstr(reason, "one-row matmul") != NULL, "%s: reason \"%s\"", what, reason);
    cc_spec_free(&spec);
    korch_pgraph_free(pg);
}

int main(void) {
    check_case(7, 5, false, false, "row product 1x7 x 7x5");
    check_case(1, 3, false, false, "row product 1x1 x 1x3");
    check_case(33, 17, true, false, "row product 1x33 x 33x17, computed weights");
    check_case(512, 2048, false, true, "LSTM step 1x512 x 512x2048 + projected input, sigmoid");
    check_case(100, 257, true, true, "row product 1x100 x 100x257, computed weights, epilogue");
    check_case(64, 384, true, true, "row product 1x64 x 64x384 in blocks of 128 columns, computed weights, epilogue");
    check_case(3, 128, false, false, "row product 1x3 x 3x128: one block, written unblocked");
    refused(2, false, "two rows");
    refused(1, true, "bf16 row product");
    TEST_MAIN_END();
}
