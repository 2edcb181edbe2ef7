/* Einsum as primitives, for the forms exporters write (attention's
 * "bhqd,bhkd->bhqk", projections "bsd,df->bsf", transposes "ij->ji", sums
 * "ij->i"): one operand is a red SUM over the labels the output drops and a
 * transpose; two operands become
 *   A: red SUM of the labels only A has and the output drops,
 *      transpose to (batch, A's kept, contracted), reshape to (batch, M, K)
 *   B: the same to (batch, K, N)
 *   lin MATMUL, reshape to (batch, A's kept, B's kept), transpose to the
 *   output's order,
 * batch labels being in both operands and the output, contracted ones in
 * both and not the output. The matmul then has its candidates and fusions
 * like any other. Diagonals (a label twice in one operand), broadcast
 * ellipsis dimensions, three or more operands and non-float32 products stay
 * with the reference kernel. */
#include "fission/rules.h"
#include "ops/einsum.h"

/* A value with `rank` dims labelled lab[], transposed so its labels follow
 * want[] (a permutation of lab[]). */
static int arrange(korch_fission_ctx *ctx, int x, const int *lab, int rank, const int *want) {
    int64_t perm[KORCH_MAX_RANK];
    bool identity = true;
    for (int d = 0; d < rank; d++) {
        for (int s = 0; s < rank; s++)
            if (lab[s] == want[d]) perm[d] = s;
        identity &= perm[d] == d;
    }
    return identity || x < 0 ? x : korch_pgraph_transpose(ctx->pg, x, perm);
}

static bool has_label(const int *lab, int rank, int l) {
    for (int d = 0; d < rank; d++)
        if (lab[d] == l) return true;
    return false;
}

/* Sums away the dimensions of x (labels lab, updated) whose label is in
 * neither `keep1` nor `keep2`. */
static int sum_unused(korch_fission_ctx *ctx, int x, int *lab, int *rank, const int *keep1, int n1, const int *keep2,
                      int n2) {
    uint32_t axes = 0;
    int r = 0;
    for (int d = 0; d < *rank; d++) {
        if (has_label(keep1, n1, lab[d]) || has_label(keep2, n2, lab[d])) lab[r++] = lab[d];
        else axes |= 1u << d;
    }
    if (!axes) return x;
    *rank = r;
    return fission_reduce(ctx, KORCH_REDUCE_SUM, x, axes, false);
}

static int product(const korch_einsum *e, const int *lab, int n) {
    int64_t p = 1;
    for (int k = 0; k < n; k++) p *= e->size[lab[k]];
    return (int)p;
}

KORCH_FISSION_RULE(Einsum) {
    int n = ctx->n_inputs;
    if (n > 2) return fission_decline(ctx, "Einsum of more than two operands (run by the reference executor)");
    const char *eq = korch_node_attr_string(ctx->node, "equation", "");
    const korch_shape *shapes[2] = {fission_in_shape(ctx, 0), n > 1 ? fission_in_shape(ctx, 1) : NULL};
    korch_einsum e;
    char err[200];
    if (!korch_einsum_parse(eq, n, shapes, &e, err, sizeof err))
        return korch_error(KORCH_ERR_INVALID_MODEL, "Einsum \"%.80s\": %s", eq, err);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < e.rank[i]; d++) {
            if (shapes[i]->dims[d] != e.size[e.label[i][d]])
                return fission_decline(ctx, "Einsum with broadcast ellipsis dimensions (run by the reference executor)");
            for (int q = 0; q < d; q++)
                if (e.label[i][q] == e.label[i][d])
                    return fission_decline(ctx, "Einsum of a diagonal (run by the reference executor)");
        }
    int la[KORCH_MAX_RANK], lb[KORCH_MAX_RANK], ra = e.rank[0], rb = n > 1 ? e.rank[1] : 0;
    for (int d = 0; d < ra; d++) la[d] = e.label[0][d];
    for (int d = 0; d < rb; d++) lb[d] = e.label[1][d];
    if (n == 1) {
        int x = sum_unused(ctx, fission_in(ctx, 0), la, &ra, e.out_label, e.out_rank, NULL, 0);
        fission_set_out(ctx, 0, arrange(ctx, x, la, ra, e.out_label));
        return fission_done(ctx);
    }
    if (fission_in_dtype(ctx, 0) != KORCH_DTYPE_FLOAT32)
        return fission_decline(ctx, "Einsum of a non-float32 dtype (linear primitives are float32)");
    int a = sum_unused(ctx, fission_in(ctx, 0), la, &ra, e.out_label, e.out_rank, lb, rb);
    int b = sum_unused(ctx, fission_in(ctx, 1), lb, &rb, e.out_label, e.out_rank, la, ra);
    int batch[KORCH_MAX_RANK], con[KORCH_MAX_RANK], akeep[KORCH_MAX_RANK], bkeep[KORCH_MAX_RANK];
    int nb = 0, nc = 0, na = 0, nk = 0;
    for (int d = 0; d < e.out_rank; d++) {
        int l = e.out_label[d];
        if (has_label(la, ra, l) && has_label(lb, rb, l)) batch[nb++] = l;
    }
    for (int d = 0; d < ra; d++) {
        int l = la[d];
        bool in_b = has_label(lb, rb, l), in_out = has_label(e.out_label, e.out_rank, l);
        if (in_b && !in_out) con[nc++] = l;
        else if (!in_b) akeep[na++] = l;
    }
    for (int d = 0; d < rb; d++)
        if (!has_label(la, ra, lb[d])) bkeep[nk++] = lb[d];
    if (nb + 2 > KORCH_MAX_RANK || nb + na + nk > KORCH_MAX_RANK)
        return fission_decline(ctx, "Einsum whose matmul form would exceed rank 8 (run by the reference executor)");
    int want[KORCH_MAX_RANK], w = 0;
    /* A as (batch, A's kept, contracted) -> (batch, M, K) */
    for (int k = 0; k < nb; k++) want[w++] = batch[k];
    for (int k = 0; k < na; k++) want[w++] = akeep[k];
    for (int k = 0; k < nc; k++) want[w++] = con[k];
    a = arrange(ctx, a, la, ra, want);
    korch_shape sa = {.rank = nb + 2};
    for (int k = 0; k < nb; k++) sa.dims[k] = e.size[batch[k]];
    sa.dims[nb] = product(&e, akeep, na);
    sa.dims[nb + 1] = product(&e, con, nc);
    if (a >= 0) a = korch_pgraph_reshape(ctx->pg, a, &sa);
    /* B as (batch, contracted, B's kept) -> (batch, K, N) */
    w = 0;
    for (int k = 0; k < nb; k++) want[w++] = batch[k];
    for (int k = 0; k < nc; k++) want[w++] = con[k];
    for (int k = 0; k < nk; k++) want[w++] = bkeep[k];
    b = arrange(ctx, b, lb, rb, want);
    korch_shape sb = sa;
    sb.dims[nb] = sa.dims[nb + 1];
    sb.dims[nb + 1] = product(&e, bkeep, nk);
    if (b >= 0) b = korch_pgraph_reshape(ctx->pg, b, &sb);
    /* (batch, M, N) -> (batch, A's kept, B's kept) -> the output's order */
    int lc[KORCH_MAX_RANK], rc = 0;
    korch_shape sc = {.rank = nb + na + nk};
    for (int k = 0; k < nb; k++) lc[rc++] = batch[k];
    for (int k = 0; k < na; k++) lc[rc++] = akeep[k];
    for (int k = 0; k < nk; k++) lc[rc++] = bkeep[k];
    for (int k = 0; k < rc; k++) sc.dims[k] = e.size[lc[k]];
    int y = fission_matmul(ctx, a, b, &sc);
    fission_set_out(ctx, 0, arrange(ctx, y, lc, rc, e.out_label));
    return fission_done(ctx);
}
