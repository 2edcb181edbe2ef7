/* Iteration reuse for a Loop body evaluated by folding (control_loop.c:
 * a Loop of constants at load, and a body inferred again at every
 * iteration when it runs).
 *
 * Each iteration folds a fresh copy of the body with that iteration's
 * values. Much of a body often computes the same thing every time: a
 * decoder's projection of the encoder's features, its weights transposed,
 * values handed on unchanged or through `x + 0`. Those nodes' inputs are
 * byte for byte the previous iteration's, and every korch operator is a
 * pure function of its inputs' bytes, shapes and its attributes, so their
 * outputs are too: they are moved over from the previous iteration's folded
 * copy instead of being run again. Nothing is approximated; a value is
 * "unchanged" only when its bytes are (the caller compares the carried
 * values; constants and the outer scope's values never change). */
#include <stdlib.h>
#include <string.h>

#include "ops/control_flow.h"

void korch_body_reuse_free(korch_body_reuse *r) {
    korch_graph_free(r->prev);
    free(r->same);
    free(r->order);
    *r = (korch_body_reuse){0};
}

bool korch_tensor_same_bytes(const korch_tensor *a, const korch_tensor *b) {
    if (!a->data || !b->data || a->dtype != b->dtype || !korch_shape_equal(&a->shape, &b->shape)) return false;
    return memcmp(a->data, b->data, korch_tensor_bytes(a)) == 0;
}

/* Whether node `n` of the previous copy was folded: dead, every output a
 * constant that copy owns (moved over only once). */
static bool folded_in(const korch_graph *prev, int n) {
    if (n >= prev->n_nodes || !prev->nodes[n].dead) return false;
    const korch_node *node = &prev->nodes[n];
    for (int k = 0; k < node->n_outputs; k++) {
        int o = node->outputs[k];
        if (o < 0) continue;
        const korch_value *v = &prev->values[o];
        if (!v->is_constant || !v->constant.owns_data) return false;
    }
    return true;
}

/* Marks the copy's values unchanged since the previous iteration, and
 * moves the outputs of every node whose inputs are all unchanged from the
 * previous copy into `b`, the node dead, as the fold would leave it. */
static void reuse_unchanged(korch_body_reuse *r, korch_graph *b, const bool *input_same) {
    for (int v = 0; v < b->n_values; v++) {
        const korch_value *val = &b->values[v];
        r->same[v] = val->is_outer_scope || (val->is_constant && !val->is_graph_input);
    }
    for (int i = 0; i < b->n_inputs; i++) r->same[b->inputs[i]] = input_same[i];
    for (int i = 0; i < r->n_order; i++) {
        int n = r->order[i];
        korch_node *node = &b->nodes[n];
        bool same = true;
        for (int k = 0; k < node->n_inputs && same; k++)
            if (node->inputs[k] >= 0 && !r->same[node->inputs[k]]) same = false;
        for (int k = 0; k < node->n_outputs; k++)
            if (node->outputs[k] >= 0) r->same[node->outputs[k]] = same;
        if (!same || !folded_in(r->prev, n)) continue;
        for (int k = 0; k < node->n_outputs; k++) {
            int o = node->outputs[k];
            if (o < 0) continue;
            korch_value *from = &r->prev->values[o], *to = &b->values[o];
            to->constant = from->constant;
            to->dtype = from->dtype;
            to->shape = from->shape;
            to->has_shape = true;
            to->is_constant = true;
            to->producer = -1;
            from->constant.owns_data = false; /* moved: the previous copy no longer frees it */
        }
        node->dead = true;
        r->reused++;
    }
}

korch_status korch_body_reuse_fold(korch_op_ctx *ctx, korch_body_reuse *r, const korch_graph *body,
                                   const korch_tensor *in, const bool *input_same, korch_graph **folded) {
    korch_graph *b = NULL;
    *folded = NULL;
    if (!r->order) {
        r->order = malloc(((size_t)body->n_nodes + 1) * sizeof *r->order);
        r->same = malloc(((size_t)body->n_values + 1) * sizeof *r->same);
        if (!r->order || !r->same) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        KORCH_TRY(korch_graph_toposort(body, r->order, &r->n_order));
    }
    KORCH_TRY(korch_graph_clone(body, &b));
    if (r->prev) reuse_unchanged(r, b, input_same);
    korch_status st = korch_control_infer(ctx, b, "body", in, b->n_inputs);
    if (st != KORCH_OK) {
        korch_graph_free(b);
        return st;
    }
    korch_graph_free(r->prev);
    r->prev = b;
    *folded = b;
    return KORCH_OK;
}
