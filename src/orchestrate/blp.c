/* The binary program through COIN-OR CBC's C interface. A fresh CBC model is
 * built for every solve (a solved model must not be reused, and the cut
 * loop changes the rows). CBC is not thread-safe: one solve at a time. */
#include <stdlib.h>
#include <string.h>

#include <coin/Cbc_C_Interface.h>

#include "orchestrate/orchestrate.h"
#include "orchestrate/progress.h"

void korch_blp_init(korch_blp *b, int n_vars, const double *cost) {
    memset(b, 0, sizeof *b);
    b->n_vars = n_vars;
    b->cost = (double *)cost;
}

void korch_blp_free(korch_blp *b) {
    free(b->row_start);
    free(b->cols);
    free(b->coefs);
    free(b->sense);
    free(b->rhs);
    memset(b, 0, sizeof *b);
}

bool korch_blp_add_row(korch_blp *b, int nz, const int *cols, const double *coefs, char sense, double rhs) {
    if (b->n_rows + 1 >= b->cap_rows) {
        int cap = b->cap_rows ? b->cap_rows * 2 : 256;
        int *rs = realloc(b->row_start, ((size_t)cap + 1) * sizeof *rs);
        if (!rs) return false;
        b->row_start = rs;
        char *se = realloc(b->sense, (size_t)cap);
        if (!se) return false;
        b->sense = se;
        double *rh = realloc(b->rhs, (size_t)cap * sizeof *rh);
        if (!rh) return false;
        b->rhs = rh;
        b->cap_rows = cap;
        if (b->n_rows == 0) b->row_start[0] = 0;
    }
    if (b->n_nz + nz > b->cap_nz) {
        int cap = b->cap_nz ? b->cap_nz * 2 : 1024;
        while (cap < b->n_nz + nz) cap *= 2;
        int *c = realloc(b->cols, (size_t)cap * sizeof *c);
        if (!c) return false;
        b->cols = c;
        double *v = realloc(b->coefs, (size_t)cap * sizeof *v);
        if (!v) return false;
        b->coefs = v;
        b->cap_nz = cap;
    }
    memcpy(b->cols + b->n_nz, cols, (size_t)nz * sizeof *cols);
    memcpy(b->coefs + b->n_nz, coefs, (size_t)nz * sizeof *coefs);
    b->n_nz += nz;
    b->sense[b->n_rows] = sense;
    b->rhs[b->n_rows] = rhs;
    b->row_start[++b->n_rows] = b->n_nz;
    return true;
}

korch_status korch_blp_solve(const korch_blp *b, const int *start, int n_start, double time_limit_s, bool *x,
                             korch_blp_result *result) {
    memset(result, 0, sizeof *result);
    /* latencies are milliseconds, often tiny: scale so the largest cost is
     * about 1000, keeping CBC's absolute tolerances meaningless */
    double max_cost = 0;
    for (int i = 0; i < b->n_vars; i++)
        if (b->cost[i] > max_cost) max_cost = b->cost[i];
    double scale = max_cost > 0 ? 1000.0 / max_cost : 1.0;
    Cbc_Model *m = Cbc_newModel();
    if (!m) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "solver: cannot create a CBC model");
    Cbc_setLogLevel(m, 0);
    Cbc_setParameter(m, "timeMode", "elapsed");
    Cbc_setAllowableGap(m, 1e-7);
    Cbc_setAllowableFractionGap(m, 1e-9);
    Cbc_setMaximumSeconds(m, time_limit_s > 0.01 ? time_limit_s : 0.01);
    for (int i = 0; i < b->n_vars; i++) {
        char name[24];
        snprintf(name, sizeof name, "x%d", i);
        Cbc_addCol(m, name, 0.0, 1.0, b->cost[i] * scale, 1, 0, NULL, NULL);
    }
    for (int r = 0; r < b->n_rows; r++) {
        char name[24];
        snprintf(name, sizeof name, "r%d", r);
        int s = b->row_start[r];
        Cbc_addRow(m, name, b->row_start[r + 1] - s, b->cols + s, b->coefs + s, b->sense[r], b->rhs[r]);
    }
    if (n_start > 0) {
        double *ones = malloc((size_t)n_start * sizeof *ones);
        if (!ones) {
            Cbc_deleteModel(m);
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "solver: out of memory");
        }
        for (int i = 0; i < n_start; i++) ones[i] = 1.0;
        Cbc_setMIPStartI(m, n_start, start, ones);
        free(ones);
    }
    double t0 = korch_now_ms();
    Cbc_solve(m);
    result->seconds = (korch_now_ms() - t0) / 1e3;
    const double *sol = Cbc_bestSolution(m);
    result->feasible = sol != NULL;
    result->optimal = Cbc_isProvenOptimal(m) != 0;
    result->time_limit = Cbc_isSecondsLimitReached(m) != 0;
    if (sol) {
        result->objective = 0;
        for (int i = 0; i < b->n_vars; i++) {
            x[i] = sol[i] > 0.5;
            if (x[i]) result->objective += b->cost[i];
        }
    }
    /* CBC reports +-huge when it proved nothing */
    double bound = Cbc_getBestPossibleObjValue(m) / scale;
    if (!(bound > -1e30 && bound < 1e30) || bound < 0) bound = 0;
    if (sol && (result->optimal || bound > result->objective)) bound = result->objective;
    result->bound = bound;
    Cbc_deleteModel(m);
    return KORCH_OK;
}
