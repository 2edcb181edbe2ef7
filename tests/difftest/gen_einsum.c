/* Feature "einsum" (DT_FEAT_EINSUM): Einsum in the forms exporters write,
 * after the other features, on float32 values of rank 2 to 4. Fission
 * turns them into sums, transposes and a MatMul (rules_einsum.c), so what
 * is tested is that decomposition inside fused plans:
 *
 * - x @ W over the last axis, W a constant ("abc,cz->abz");
 * - x times itself over the last axis, batch axes kept, the output's last
 *   two axes swapped ("abc,adc->abd" written as "...->adb"-like orders);
 * - a label only x has, summed before the product ("abc,bz->za": c summed,
 *   b contracted, a kept, the output transposed);
 * - one operand: a transpose with one axis summed away ("abc->cb").
 *
 * Each result gets a neighbour (+ 0.5) to be fused with. Every choice from
 * the features' stream. */
#include <math.h>
#include <string.h>

#include "gen_internal.h"

static const char letters[] = "abcd";

static bool einsum_into(dt_gen *g, int v) {
    dt_rng *r = &g->frng;
    const dt_val *x = &g->vals[v];
    const korch_shape xs = x->shape;
    int rank = xs.rank, form = (int)dt_int(r, 0, 3);
    if (form == 2 && rank < 2) return false;
    char eq[64], lx[8];
    memcpy(lx, letters, (size_t)rank);
    lx[rank] = '\0';
    korch_shape out = {0};
    const char *ins[2] = {dt_use(g, v), NULL};
    int n_in = 2;
    double mag = x->mag;
    const char *what;
    int64_t k = xs.dims[rank - 1], nn = dt_int(r, 1, 16);
    if (form == 0) { /* x @ W */
        korch_shape ws = dt_shape(2, (int64_t[]){k, nn});
        ins[1] = dt_const_rand(g, &ws, -1.0 / sqrt((double)k), 1.0 / sqrt((double)k));
        snprintf(eq, sizeof eq, "%s,%cz->%.*sz", lx, lx[rank - 1], rank - 1, lx);
        out = xs;
        out.dims[rank - 1] = nn;
        mag *= sqrt((double)k);
        what = "Einsum x@W";
    } else if (form == 1) { /* x x^T over the last axis, the two free axes swapped */
        if (rank < 2) return false;
        ins[1] = dt_use(g, v);
        /* second operand: the same labels, its second-to-last one renamed y */
        snprintf(eq, sizeof eq, "%s,%.*sy%c->%.*sy%c", lx, rank - 2, lx, lx[rank - 1], rank - 2, lx, lx[rank - 2]);
        out = xs;
        out.dims[rank - 1] = xs.dims[rank - 2];
        mag = mag * mag * (double)k;
        what = "Einsum x xT, output transposed";
    } else if (form == 2) { /* a label only x has, summed first; the output transposed */
        int64_t b = xs.dims[1];
        korch_shape ws = dt_shape(2, (int64_t[]){b, nn});
        ins[1] = dt_const_rand(g, &ws, -1.0 / sqrt((double)b), 1.0 / sqrt((double)b));
        snprintf(eq, sizeof eq, "%s,bz->za", lx);
        out = dt_shape(2, (int64_t[]){nn, xs.dims[0]});
        for (int d = 1; d < rank; d++) mag *= d == 1 ? sqrt((double)xs.dims[d]) : (double)xs.dims[d];
        what = "Einsum, a label summed before the product";
    } else { /* one operand: drop the first axis by summing, reverse the rest */
        int o = 0;
        char lo[8];
        out.rank = rank - 1;
        for (int d = rank - 1; d >= 1; d--) {
            lo[o] = lx[d];
            out.dims[o++] = xs.dims[d];
        }
        lo[o] = '\0';
        snprintf(eq, sizeof eq, "%s->%s", lx, lo);
        n_in = 1;
        mag *= (double)xs.dims[0];
        what = "Einsum, one operand summed and transposed";
    }
    if (out.rank < 1 || dt_numel(&out) > DT_MAX_ELEMS) return false;
    int y = dt_new_val(g, &out, mag);
    if (y < 0) return false;
    const char *yname = g->vals[y].name;
    Onnx__NodeProto *node = dt_node(g, "Einsum", n_in, ins, 1, &yname);
    korch_onnx_attr_string(&g->w, node, "equation", eq);
    if (dt_binary_named(g, "Add", dt_use(g, y), dt_const_scalar(g, 0.5f), &out, mag + 0.5) < 0) return false;
    dt_cover(g, what);
    return true;
}

void dt_feature_einsum(dt_gen *g) {
    if (!(g->features & DT_FEAT_EINSUM)) return;
    dt_rng *r = &g->frng;
    int made = 0, n = g->n_vals;
    for (int v = 0; v < n && made < 2; v++) {
        const dt_val *x = &g->vals[v];
        if (x->dtype || x->hidden || x->shape.rank < 2 || x->shape.rank > 4 || dt_numel(&x->shape) > DT_MAX_ELEMS / 2 ||
            !dt_chance(r, 0.5))
            continue;
        if (einsum_into(g, v)) made++;
    }
}
