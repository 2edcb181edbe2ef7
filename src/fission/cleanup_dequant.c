/* Every convolution, and every matmul with constant weights, gets a
 * dequantization of its own (and every integer matmul its source's
 * zero-point subtraction: split_imatmul_source).
 *
 * A QDQ model dequantizes a tensor once for all its readers: a residual
 * block's input feeds both the block's first convolution and the Add that
 * closes it, through one DequantizeLinear, so fission's CAST -> [SUB] ->
 * MUL chain has two consumers, and common-subexpression elimination would
 * merge two copies anyway. Then no kernel can hold the chain and the
 * convolution (its float32 value must leave the kernel for the Add), and
 * the int8 convolution that reads the 8-bit tensor
 * (src/backend/dnnl/dnnl_dequant.c) is never a candidate: in a QDQ
 * MobileNetV2, ten of its 1x1 convolutions stayed float32 for this alone.
 *
 * So, after the last clean-up (korch_plan_lower), a convolution whose source
 * is such a chain (or a transpose of one: the layout pass's, before a
 * channels-last convolution) with a reader besides it gets a copy of the
 * chain (and of the transpose); the other readers keep the original. The copy costs nothing where it fuses
 * (the float32 path fuses it into the convolution's producer as before) and
 * lets the binary program weigh the int8 kernel. Nothing else changes. */
#include <stdlib.h>

#include "fission/cleanup_internal.h"
#include "ir/indexmap.h"

/* The elementwise node producing v if it is `op`, else -1. */
static int producer_op(const korch_pgraph *pg, int v, korch_ew_op op) {
    int p = pg->values[v].producer;
    if (p < 0 || pg->nodes[p].dead || pg->nodes[p].kind != KORCH_PRIM_ELEMENTWISE || pg->nodes[p].u.ew.op != op)
        return -1;
    return p;
}

static bool eight_bit(korch_dtype t) { return t == KORCH_DTYPE_UINT8 || t == KORCH_DTYPE_INT8; }

/* A copy of elementwise node `node` with input `k` replaced by `in` (or
 * every input kept when k < 0); its output, or -1. */
static int copy_node(korch_pgraph *pg, int node, int k, int in) {
    korch_pnode n = pg->nodes[node]; /* by value: adding a node may move the array */
    int inputs[4];
    for (int i = 0; i < n.n_inputs && i < 4; i++) inputs[i] = i == k ? in : n.inputs[i];
    korch_dtype cast_to = n.u.ew.op == KORCH_EW_CAST ? pg->values[n.outputs[0]].dtype : KORCH_DTYPE_UNDEFINED;
    int v = korch_pgraph_elementwise(pg, n.u.ew.op, n.n_inputs, inputs, n.u.ew.alpha, n.u.ew.beta, cast_to);
    if (v >= 0) pg->nodes[pg->values[v].producer].source_node = n.source_node;
    return v;
}

/* An integer matmul or convolution whose source A - zp = SUB(CAST(q), CAST(z)) is shared
 * (the query, key and value projections of one DynamicQuantizeLinear
 * output) gets its own copy of the three nodes, so that a kernel can hold
 * them with the matmul: oneDNN's int8 matmul reading q with zp as its
 * source zero point (backend/dnnl/dnnl_imatmul.c). Returns 1 when it
 * copied, 0 when there was nothing to do, -1 on error. */
static int split_imatmul_source(korch_pgraph *pg, int i, int *uses) {
    int x = pg->nodes[i].inputs[0];
    int sub = producer_op(pg, x, KORCH_EW_SUB);
    if (sub < 0) return 0;
    int c_in = pg->nodes[sub].inputs[0], z = pg->nodes[sub].inputs[1];
    int cast = producer_op(pg, c_in, KORCH_EW_CAST), zcast = producer_op(pg, z, KORCH_EW_CAST);
    if (cast < 0 || !eight_bit(pg->values[pg->nodes[cast].inputs[0]].dtype)) return 0;
    bool shared = uses[x] > 1 || pg->values[x].graph_output >= 0 || uses[c_in] > 1 || (zcast >= 0 && uses[z] > 1);
    if (!shared) return 0;
    int v = copy_node(pg, cast, -1, -1), zv = zcast >= 0 ? copy_node(pg, zcast, -1, -1) : z;
    if (v < 0 || zv < 0) return -1;
    int ins[2] = {v, zv};
    korch_pnode s = pg->nodes[sub];
    v = korch_pgraph_elementwise(pg, KORCH_EW_SUB, 2, ins, s.u.ew.alpha, s.u.ew.beta, KORCH_DTYPE_UNDEFINED);
    if (v < 0) return -1;
    pg->nodes[pg->values[v].producer].source_node = s.source_node;
    pg->nodes[i].inputs[0] = v;
    uses[x]--;
    return 1;
}

korch_status korch_pgraph_split_dequant(korch_pgraph *pg, int *changed) {
    *changed = 0;
    int *uses = korch_cleanup_use_counts(pg);
    if (!uses) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "dequantization split: out of memory");
    korch_status st = KORCH_OK;
    int n_nodes = pg->n_nodes; /* copies are appended: not revisited */
    for (int i = 0; i < n_nodes && st == KORCH_OK; i++) {
        const korch_pnode *lin = &pg->nodes[i];
        if (korch_pnode_is_integer_linear(pg, lin)) {
            int r = split_imatmul_source(pg, i, uses);
            if (r < 0) st = korch_error_prefix(KORCH_ERR_INTERNAL, "integer matmul source split");
            *changed += r > 0;
            continue;
        }
        if (lin->dead || lin->kind != KORCH_PRIM_LINEAR) continue;
        /* a matmul with constant weights too (the query, key and value
         * projections of a QDQ transformer read one dequantized tensor) */
        bool conv = lin->u.linear.op == KORCH_LINEAR_CONV;
        if (!conv && !(lin->u.linear.op == KORCH_LINEAR_MATMUL && pg->values[lin->inputs[1]].is_constant)) continue;
        int x = lin->inputs[0], t = pg->values[x].producer;
        int64_t perm[KORCH_MAX_RANK];
        bool transposed = conv && t >= 0 && !pg->nodes[t].dead && pg->nodes[t].kind == KORCH_PRIM_LAYOUT &&
                          pg->nodes[t].n_inputs == 1 && korch_layout_as_transpose(pg, t, perm);
        int dq = transposed ? pg->nodes[t].inputs[0] : x; /* the dequantized value */
        int mul = producer_op(pg, dq, KORCH_EW_MUL);
        if (mul < 0) continue;
        int a = pg->nodes[mul].inputs[0], ka = 0;
        if (pg->values[a].is_constant) a = pg->nodes[mul].inputs[ka = 1];
        int sub = producer_op(pg, a, KORCH_EW_SUB);
        int c_in = sub >= 0 ? pg->nodes[sub].inputs[0] : a;
        int cast = producer_op(pg, c_in, KORCH_EW_CAST);
        if (cast < 0 || !eight_bit(pg->values[pg->nodes[cast].inputs[0]].dtype)) continue;
        bool shared = uses[x] > 1 || pg->values[x].graph_output >= 0 || uses[c_in] > 1 ||
                      (sub >= 0 && uses[a] > 1) ||
                      (transposed && (uses[dq] > 1 || pg->values[dq].graph_output >= 0));
        if (!shared) continue;
        /* CAST -> [SUB] -> MUL (-> transpose) again, for this convolution alone */
        int v = copy_node(pg, cast, -1, -1);
        if (v >= 0 && sub >= 0) v = copy_node(pg, sub, 0, v);
        if (v >= 0) v = copy_node(pg, mul, ka, v);
        if (v >= 0 && transposed) {
            int src = pg->nodes[t].source_node;
            v = korch_pgraph_transpose(pg, v, perm);
            if (v >= 0) pg->nodes[pg->values[v].producer].source_node = src;
        }
        if (v < 0) {
            st = korch_error_prefix(KORCH_ERR_INTERNAL, "dequantization split");
            break;
        }
        pg->nodes[i].inputs[0] = v;
        uses[x]--;
        (*changed)++;
    }
    free(uses);
    return st;
}
