/* The precision the linear primitives compute in (docs/precision.md,
 * "Computing in bfloat16"). A lowering choice like the layout pass: it marks
 * primitives, and every consumer (interpreter, backends, structural hash)
 * reads the mark, so a bf16 plan can never be mistaken for a float32 one. */
#include <string.h>

#include "core/cpu.h"
#include "ir/pgraph.h"

bool korch_precision_parse(const char *text, korch_precision *out) {
    if (!text) return false;
    if (!strcmp(text, "fp32") || !strcmp(text, "f32") || !strcmp(text, "float32")) *out = KORCH_PRECISION_FP32;
    else if (!strcmp(text, "bf16") || !strcmp(text, "bfloat16")) *out = KORCH_PRECISION_BF16;
    else return false;
    return true;
}

const char *korch_precision_token(korch_precision p) { return p == KORCH_PRECISION_BF16 ? "bf16" : "fp32"; }

static bool float_operands(const korch_pgraph *pg, const korch_pnode *n) {
    return n->n_inputs >= 2 && pg->values[n->inputs[0]].dtype == KORCH_DTYPE_FLOAT32 &&
           pg->values[n->inputs[1]].dtype == KORCH_DTYPE_FLOAT32;
}

bool korch_pnode_is_precision_cast(const korch_pgraph *pg, int node) {
    const korch_pnode *n = &pg->nodes[node];
    return !n->dead && n->kind == KORCH_PRIM_ELEMENTWISE && n->u.ew.op == KORCH_EW_CAST && n->u.ew.alpha == 1.0f &&
           pg->values[n->outputs[0]].dtype == KORCH_DTYPE_BFLOAT16;
}

/* Removes the casts a bf16 lowering added: their readers read the float32
 * value again. The casts were appended last (insert_casts), so they are
 * dropped from the arrays too and the float32 graph is the one it was, hash
 * included; any other is left dead. */
static void remove_casts(korch_pgraph *pg) {
    int last_kept = -1;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (!korch_pnode_is_precision_cast(pg, i)) {
            last_kept = i;
            continue;
        }
        int from = pg->nodes[i].outputs[0], to = pg->nodes[i].inputs[0];
        for (int j = 0; j < pg->n_nodes; j++)
            for (int k = 0; k < pg->nodes[j].n_inputs; k++)
                if (!pg->nodes[j].dead && pg->nodes[j].inputs[k] == from) pg->nodes[j].inputs[k] = to;
        pg->nodes[i].dead = true;
    }
    /* trailing casts whose outputs are the trailing values */
    while (pg->n_nodes > last_kept + 1 && pg->n_values > 0 && pg->nodes[pg->n_nodes - 1].outputs[0] == pg->n_values - 1) {
        pg->n_nodes--;
        pg->n_values--;
    }
}

/* Is every reader of float32 value v a bf16 linear primitive taking it as an
 * operand (which rounds it to bfloat16 anyway)? */
static bool read_rounded_only(const korch_pgraph *pg, int v) {
    const korch_pvalue *pv = &pg->values[v];
    if (pv->dtype != KORCH_DTYPE_FLOAT32 || pv->is_constant || pv->graph_output >= 0) return false;
    int readers = 0;
    for (int j = 0; j < pg->n_nodes; j++) {
        const korch_pnode *n = &pg->nodes[j];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != v) continue;
            if (n->kind != KORCH_PRIM_LINEAR || !n->u.linear.bf16 || k > 1) return false;
            readers++;
        }
    }
    return readers > 0;
}

/* A value computed at run time whose every reader is a bf16 linear primitive
 * is stored as bfloat16: one CAST (alpha 1: the precision's, not the
 * model's) rounds it where it is made, and the readers read the rounded
 * value. The numbers do not change (the readers round it anyway, to the
 * same nearest even), but the rounding becomes an ordinary primitive the
 * binary program places: fused into the producer's kernel (a oneDNN
 * destination in bfloat16, a generated kernel storing 16 bits), into the
 * reader's (its source conversion, as before), or a kernel of its own. A
 * kernel that writes bfloat16 moves half the bytes and spares the reader its
 * conversion pass (docs/precision.md, "Values stored in bfloat16"). */
static korch_status insert_casts(korch_pgraph *pg) {
    int n_values = pg->n_values; /* the casts' outputs are appended: not revisited */
    for (int v = 0; v < n_values; v++) {
        if (!read_rounded_only(pg, v)) continue;
        int src = pg->values[v].producer >= 0 ? pg->nodes[pg->values[v].producer].source_node : -1;
        int r = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &v, 1.0f, 0.0f, KORCH_DTYPE_BFLOAT16);
        if (r < 0) return korch_error_prefix(KORCH_ERR_INTERNAL, "bf16 lowering");
        int cast = pg->values[r].producer;
        pg->nodes[cast].source_node = src;
        for (int j = 0; j < pg->n_nodes; j++)
            for (int k = 0; k < pg->nodes[j].n_inputs; k++)
                if (j != cast && !pg->nodes[j].dead && pg->nodes[j].inputs[k] == v) pg->nodes[j].inputs[k] = r;
    }
    return KORCH_OK;
}

korch_status korch_pgraph_set_precision(korch_pgraph *pg, korch_precision p) {
    remove_casts(pg);
    for (int i = 0; i < pg->n_nodes; i++) {
        korch_pnode *n = &pg->nodes[i];
        if (n->dead || n->kind != KORCH_PRIM_LINEAR) continue;
        n->u.linear.bf16 = p == KORCH_PRECISION_BF16 && float_operands(pg, n);
    }
    return p == KORCH_PRECISION_BF16 ? insert_casts(pg) : KORCH_OK;
}

korch_precision korch_pgraph_precision(const korch_pgraph *pg) {
    for (int i = 0; i < pg->n_nodes; i++)
        if (!pg->nodes[i].dead && pg->nodes[i].kind == KORCH_PRIM_LINEAR && pg->nodes[i].u.linear.bf16)
            return KORCH_PRECISION_BF16;
    return KORCH_PRECISION_FP32;
}

korch_status korch_precision_check_cpu(korch_precision p) {
    /* oneDNN 2.6 computes bf16 convolutions and matmuls with AVX512_BF16's
     * dot products; without them it has no bf16 kernel faster than float32
     * (an emulation on plain AVX-512, nothing on AVX2), so asking for bf16
     * there is refused rather than quietly made slower */
    if (p == KORCH_PRECISION_BF16 && !korch_cpu_has_avx512_bf16())
        return korch_error(KORCH_ERR_UNSUPPORTED,
                           "--precision bf16 needs a CPU with AVX512_BF16 (bfloat16 dot products); this one has none "
                           "(see /proc/cpuinfo: avx512_bf16)");
    return KORCH_OK;
}
