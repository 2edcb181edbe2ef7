/* The quantizer tail: fission writes a QuantizeLinear as seven elementwise
 * nodes (fission/rules_quant.c: an exact DIV by the scale, EQUAL and WHERE
 * for NaN, ROUND, ADD of the zero point (absent for 0), CLIP to the type's
 * range, CAST to 8 bits), and oneDNN can compute them only all together,
 * as an int8 convolution's 8-bit destination (backend/dnnl/dnnl_dequant.c).
 *
 * Enumeration grows a set holding a linear primitive only while its
 * backend accepts it (enumerate.c): a part of the tail is refused, so the
 * whole tail would never be reached one node at a time. So every accepted
 * set with a linear primitive whose one output is read by exactly such a
 * tail is also tried with the whole tail added, once (the result is not
 * grown further: nothing fuses after an 8-bit destination). */
#include "candidates/candidates.h"

static bool is_ew(const korch_pgraph *pg, int node, korch_ew_op op) {
    return node >= 0 && pg->nodes[node].kind == KORCH_PRIM_ELEMENTWISE && pg->nodes[node].u.ew.op == op;
}

/* the consumers of v (count returned, up to cap listed) */
static int readers(const korch_pgraph_uses *u, int v, const int **out) {
    *out = &u->consumers[u->consumer_start[v]];
    return u->consumer_start[v + 1] - u->consumer_start[v];
}

static int only_reader(const korch_pgraph *pg, const korch_pgraph_uses *u, int v) {
    const int *r;
    return readers(u, v, &r) == 1 && pg->values[v].graph_output < 0 ? r[0] : -1;
}

int korch_quantizer_tail(const korch_pgraph *pg, const korch_pgraph_uses *u, int v, int *nodes) {
    int n = 0, div = only_reader(pg, u, v);
    if (!is_ew(pg, div, KORCH_EW_DIV) || pg->nodes[div].u.ew.alpha == 0 || pg->nodes[div].inputs[0] != v) return 0;
    nodes[n++] = div;
    int q = pg->nodes[div].outputs[0];
    const int *r;
    if (pg->values[q].graph_output >= 0 || readers(u, q, &r) != 2) return 0;
    int eq = is_ew(pg, r[0], KORCH_EW_EQUAL) ? r[0] : r[1], where = eq == r[0] ? r[1] : r[0];
    if (!is_ew(pg, eq, KORCH_EW_EQUAL) || !is_ew(pg, where, KORCH_EW_WHERE) ||
        only_reader(pg, u, pg->nodes[eq].outputs[0]) != where)
        return 0;
    nodes[n++] = eq;
    nodes[n++] = where;
    int next = only_reader(pg, u, pg->nodes[where].outputs[0]);
    if (!is_ew(pg, next, KORCH_EW_ROUND)) return 0;
    nodes[n++] = next;
    next = only_reader(pg, u, pg->nodes[next].outputs[0]);
    if (is_ew(pg, next, KORCH_EW_ADD)) {
        nodes[n++] = next;
        next = only_reader(pg, u, pg->nodes[next].outputs[0]);
    }
    if (!is_ew(pg, next, KORCH_EW_CLIP)) return 0;
    nodes[n++] = next;
    next = only_reader(pg, u, pg->nodes[next].outputs[0]);
    if (!is_ew(pg, next, KORCH_EW_CAST)) return 0;
    korch_dtype t = pg->values[pg->nodes[next].outputs[0]].dtype;
    if (t != KORCH_DTYPE_UINT8 && t != KORCH_DTYPE_INT8) return 0;
    nodes[n++] = next;
    return n;
}
