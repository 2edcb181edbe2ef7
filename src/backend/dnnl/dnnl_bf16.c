/* bfloat16 operands and destinations of bf16 kernels (`--precision bf16`,
 * docs/precision.md, "Values stored in bfloat16").
 *
 * korch_pgraph_set_precision rounds a value read only by bf16 linear
 * primitives with a CAST to bfloat16 where it is made (a precision cast), so
 * the value is stored in 16 bits. For oneDNN that cast is one of three
 * things, each a candidate the binary program weighs:
 *
 *   - outside the kernel: the operand is a bfloat16 kernel input, given to
 *     oneDNN as is (no conversion pass before the primitive);
 *   - inside it, in front of the linear primitive: the operand is the cast's
 *     float32 input, converted by the kernel's reorder (what a bf16 kernel
 *     did before values were stored in bfloat16);
 *   - inside it, after the post-op chain: the kernel's destination is
 *     bfloat16, oneDNN rounding the float32 result (ties to even) as it
 *     stores it.
 *
 * The numbers are the interpreter's either way: the cast and the primitive
 * round to the same nearest even. */
#include "backend/dnnl/dnnl_analyze.h"

/* Spec node `node` is a CAST from float32 to bfloat16. */
static bool is_bf16_cast(const actx *c, int node) {
    if (node < 0 || an_spec_index(c, node) < 0) return false;
    const korch_pnode *n = &c->pg->nodes[node];
    return n->kind == KORCH_PRIM_ELEMENTWISE && n->u.ew.op == KORCH_EW_CAST &&
           c->pg->values[n->inputs[0]].dtype == KORCH_DTYPE_FLOAT32 &&
           c->pg->values[n->outputs[0]].dtype == KORCH_DTYPE_BFLOAT16;
}

int an_operand_cast(const actx *c, int linear, int k) {
    const korch_pnode *lin = &c->pg->nodes[linear];
    if (lin->kind != KORCH_PRIM_LINEAR || !lin->u.linear.bf16 || k > 1) return -1;
    int v = lin->inputs[k], p = c->pg->values[v].producer, cons[2];
    if (!is_bf16_cast(c, p) || an_is_output(c, v) || an_consumers(c, v, cons, 2) != 1) return -1;
    if (an_input_slot(c, c->pg->nodes[p].inputs[0]) < 0) return -1; /* converted from a kernel input only */
    return p;
}

int an_bf16_tail(actx *c, int v) {
    if (!c->pg->nodes[c->d->linear_node].u.linear.bf16 || c->d->dst_q) return -1;
    int cons[2];
    if (an_is_output(c, v) || an_consumers(c, v, cons, 2) != 1 || !is_bf16_cast(c, cons[0])) return -1;
    int y = c->pg->nodes[cons[0]].outputs[0];
    if (!an_is_output(c, y) || an_consumers(c, y, cons, 1) != 0) return -1;
    c->used[an_spec_index(c, c->pg->values[y].producer)] = true;
    c->d->dst_bf16 = true;
    return y;
}
