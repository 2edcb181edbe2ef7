/* Constant propagation: a node whose inputs are all constant is evaluated
 * once by the interpreter, and its outputs become constants. Folding stops
 * where it would grow the model: an output may be larger than its inputs
 * together only up to fold_max_bytes (an Expand of a scalar to a large shape
 * stays a layout node; a transposed weight is folded), except by a wider
 * dtype alone (an elementwise node of no more elements than its largest
 * input: the cast of 8-bit weights to int32 or float32 is folded). */
#include <stdlib.h>

#include "fission/cleanup_internal.h"

static bool foldable(const korch_pgraph *pg, const korch_pnode *n, const bool *is_output, int64_t max_bytes) {
    int64_t in_bytes = 0, out_bytes = 0, in_numel = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        const korch_pvalue *v = &pg->values[n->inputs[k]];
        if (!v->is_constant) return false;
        in_bytes += korch_shape_numel(&v->shape) * (int64_t)korch_dtype_size(v->dtype);
        if (korch_shape_numel(&v->shape) > in_numel) in_numel = korch_shape_numel(&v->shape);
    }
    /* an elementwise node widening a constant (8-bit weights cast to int32
     * or float32 for their linear primitive) grows it by its dtype alone:
     * folded, like the weights it makes; growth in elements (a broadcast)
     * only up to max_bytes */
    bool widening = n->kind == KORCH_PRIM_ELEMENTWISE && n->n_outputs == 1 && n->outputs[0] >= 0 &&
                    korch_shape_numel(&pg->values[n->outputs[0]].shape) <= in_numel;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0) continue;
        /* a graph output stays computed by a node (finalize would re-add a copy) */
        if (is_output[v]) return false;
        out_bytes += korch_shape_numel(&pg->values[v].shape) * (int64_t)korch_dtype_size(pg->values[v].dtype);
    }
    return n->n_inputs > 0 && (out_bytes <= in_bytes || out_bytes <= max_bytes || widening);
}

korch_status korch_cleanup_constants(korch_pgraph *pg, int64_t fold_max_bytes, int *changed) {
    *changed = 0;
    int *order = NULL, count = 0;
    KORCH_TRY(korch_cleanup_order(pg, &order, &count));
    bool *is_output = korch_cleanup_output_flags(pg);
    korch_status st = is_output ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "clean-up: out of memory");
    for (int i = 0; i < count && st == KORCH_OK; i++) {
        int ni = order[i];
        korch_pnode *n = &pg->nodes[ni];
        if (!foldable(pg, n, is_output, fold_max_bytes)) continue;
        korch_tensor ins_store[KORCH_MAX_RANK], outs_store[KORCH_PNODE_MAX_OUTPUTS] = {{0}};
        korch_tensor *ins[KORCH_MAX_RANK], *outs[KORCH_PNODE_MAX_OUTPUTS] = {0};
        for (int k = 0; k < n->n_inputs; k++) {
            const korch_pvalue *v = &pg->values[n->inputs[k]];
            ins_store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->constant.data};
            ins[k] = &ins_store[k];
        }
        for (int k = 0; k < n->n_outputs && st == KORCH_OK; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            st = korch_tensor_alloc(&outs_store[k], pg->values[v].dtype, &pg->values[v].shape);
            outs[k] = &outs_store[k];
        }
        if (st == KORCH_OK) st = korch_pgraph_run_node(pg, ni, ins, outs);
        if (st != KORCH_OK) {
            for (int k = 0; k < n->n_outputs; k++) korch_tensor_free(&outs_store[k]);
            break;
        }
        /* the output values become constants in place: no use needs rewriting */
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            korch_pvalue *pv = &pg->values[v];
            korch_tensor_free(&pv->constant);
            pv->constant = outs_store[k];
            pv->is_constant = true;
            pv->producer = -1;
        }
        n->dead = true;
        (*changed)++;
    }
    free(is_output);
    free(order);
    return st;
}
