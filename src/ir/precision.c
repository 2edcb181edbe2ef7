/* The precision the linear primitives compute in (docs/precision.md,
 * "Computing in bfloat16"). A lowering choice like the layout pass: it marks
 * primitives, and every consumer (interpreter, backends, structural hash)
 * reads the mark, so a bf16 plan can never be mistaken for a float32 one. */
#include <stdlib.h>
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

bool korch_precision_parse_choice(const char *text, korch_precision *out, bool *everywhere) {
    *everywhere = text && !strcmp(text, "bf16-all");
    if (*everywhere) {
        *out = KORCH_PRECISION_BF16;
        return true;
    }
    return korch_precision_parse(text, out);
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

/* Readers of every value replaced through `to` (value -> value, or -1),
 * nodes [0, n_nodes) only. */
static void redirect(korch_pgraph *pg, const int *to, int n_nodes) {
    for (int j = 0; j < n_nodes; j++) {
        korch_pnode *n = &pg->nodes[j];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && to[n->inputs[k]] >= 0) n->inputs[k] = to[n->inputs[k]];
    }
}

/* Removes the casts a bf16 lowering added: their readers read the float32
 * value again. The casts were appended last (insert_casts), so they are
 * dropped from the arrays too and the float32 graph is the one it was, hash
 * included; any other is left dead. */
static korch_status remove_casts(korch_pgraph *pg) {
    int *to = malloc(((size_t)pg->n_values + 1) * sizeof *to), last_kept = -1, removed = 0;
    if (!to) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "precision: out of memory");
    for (int v = 0; v < pg->n_values; v++) to[v] = -1;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (!korch_pnode_is_precision_cast(pg, i)) {
            last_kept = i;
            continue;
        }
        to[pg->nodes[i].outputs[0]] = pg->nodes[i].inputs[0];
        pg->nodes[i].dead = true;
        removed++;
    }
    if (removed) redirect(pg, to, pg->n_nodes);
    free(to);
    /* trailing casts whose outputs are the trailing values */
    while (pg->n_nodes > last_kept + 1 && pg->n_values > 0 && pg->nodes[pg->n_nodes - 1].outputs[0] == pg->n_values - 1) {
        pg->n_nodes--;
        pg->n_values--;
    }
    return KORCH_OK;
}

/* A value computed at run time whose every reader is a bf16 linear primitive
 * (taking it as an operand, which it rounds to bfloat16 anyway) is stored
 * as bfloat16: one CAST (alpha 1: the precision's, not the model's) rounds
 * it where it is made, and the readers read the rounded value. The numbers
 * do not change (the readers round it to the same nearest even), but the
 * rounding becomes an ordinary primitive the binary program places: fused
 * into the producer's kernel (a oneDNN destination in bfloat16, a generated
 * kernel storing 16 bits), into the reader's (its source conversion, as
 * before), or a kernel of its own. A kernel that writes bfloat16 moves half
 * the bytes and spares the reader its conversion pass (docs/precision.md,
 * "Values stored in bfloat16"). */
static korch_status insert_casts(korch_pgraph *pg) {
    int n_values = pg->n_values, n_nodes = pg->n_nodes; /* the casts are appended: not revisited */
    int *readers = calloc((size_t)n_values + 1, sizeof *readers);
    int *rounding = calloc((size_t)n_values + 1, sizeof *rounding);
    int *to = malloc(((size_t)n_values + 1) * sizeof *to);
    korch_status st = KORCH_OK;
    if (!readers || !rounding || !to) {
        st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "precision: out of memory");
        goto done;
    }
    for (int j = 0; j < n_nodes; j++) {
        const korch_pnode *n = &pg->nodes[j];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0) continue;
            readers[n->inputs[k]]++;
            rounding[n->inputs[k]] += n->kind == KORCH_PRIM_LINEAR && n->u.linear.bf16 && k <= 1;
        }
    }
    for (int v = 0; v < n_values; v++) {
        to[v] = -1;
        const korch_pvalue *pv = &pg->values[v];
        if (pv->dtype != KORCH_DTYPE_FLOAT32 || pv->is_constant || pv->graph_output >= 0 || readers[v] == 0 ||
            rounding[v] != readers[v])
            continue;
        int src = pv->producer >= 0 ? pg->nodes[pv->producer].source_node : -1;
        int r = korch_pgraph_elementwise(pg, KORCH_EW_CAST, 1, &v, 1.0f, 0.0f, KORCH_DTYPE_BFLOAT16);
        if (r < 0) {
            st = korch_error_prefix(KORCH_ERR_INTERNAL, "bf16 lowering");
            goto done;
        }
        pg->nodes[pg->values[r].producer].source_node = src;
        to[v] = r;
    }
    redirect(pg, to, n_nodes);
done:
    free(readers);
    free(rounding);
    free(to);
    return st;
}

bool korch_pnode_is_float_linear(const korch_pgraph *pg, int node) {
    const korch_pnode *n = &pg->nodes[node];
    return !n->dead && n->kind == KORCH_PRIM_LINEAR && float_operands(pg, n);
}

korch_status korch_pgraph_set_precision_except(korch_pgraph *pg, korch_precision p, const int *fp32_nodes,
                                               int n_fp32) {
    KORCH_TRY(remove_casts(pg)); /* (a marked primitive's operands may be their outputs) */
    /* the list comes from plan files, which are untrusted */
    for (int k = 0; k < n_fp32; k++)
        if (p != KORCH_PRECISION_BF16 || fp32_nodes[k] < 0 || fp32_nodes[k] >= pg->n_nodes ||
            !korch_pnode_is_float_linear(pg, fp32_nodes[k]))
            return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                               "precision: node %d cannot be kept in float32: %s", fp32_nodes[k],
                               p != KORCH_PRECISION_BF16 ? "the precision is not bf16"
                                                         : "it is not a linear primitive on float32 operands");
    for (int i = 0; i < pg->n_nodes; i++) {
        korch_pnode *n = &pg->nodes[i];
        if (n->dead || n->kind != KORCH_PRIM_LINEAR) continue;
        n->u.linear.bf16 = p == KORCH_PRECISION_BF16 && float_operands(pg, n);
    }
    for (int k = 0; k < n_fp32; k++) pg->nodes[fp32_nodes[k]].u.linear.bf16 = false;
    return p == KORCH_PRECISION_BF16 ? insert_casts(pg) : KORCH_OK;
}

korch_status korch_pgraph_set_precision(korch_pgraph *pg, korch_precision p) {
    return korch_pgraph_set_precision_except(pg, p, NULL, 0);
}

korch_status korch_pgraph_fp32_linear(const korch_pgraph *pg, korch_precision p, int **nodes, int *n) {
    *nodes = NULL;
    *n = 0;
    /* p, not korch_pgraph_precision: a bf16 lowering may keep every one */
    if (p != KORCH_PRECISION_BF16) return KORCH_OK;
    int count = 0;
    for (int i = 0; i < pg->n_nodes; i++) count += korch_pnode_is_float_linear(pg, i) && !pg->nodes[i].u.linear.bf16;
    if (count == 0) return KORCH_OK;
    *nodes = malloc((size_t)count * sizeof **nodes);
    if (!*nodes) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "precision: out of memory");
    for (int i = 0; i < pg->n_nodes; i++)
        if (korch_pnode_is_float_linear(pg, i) && !pg->nodes[i].u.linear.bf16) (*nodes)[(*n)++] = i;
    return KORCH_OK;
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
