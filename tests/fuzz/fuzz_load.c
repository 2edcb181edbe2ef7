/* libFuzzer target: ONNX model bytes -> korch_onnx_load_buffer ->
 * korch_graph_validate -> korch_graph_infer (shape inference and constant
 * folding). No external data (model_dir NULL). Symbolic input dimensions are
 * fixed to 1 so that inference is reached for dynamic-batch models too.
 * Besides the sanitizers, it checks two invariants: every failure leaves a
 * message, and after a successful inference every live value is typed and
 * shaped. Build: a clang build dir with -DKORCH_FUZZ=ON (see
 * scripts/run-fuzz.sh and docs/bad-input.md). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"

static void require(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_load: invariant violated: %s (last error: %s)\n", what, korch_last_error());
        abort();
    }
}

/* Every graph input's declared shape with unknown dims set to 1. */
static int fixed_shapes(const korch_graph *g, korch_input_shape *out, int cap) {
    int n = 0;
    for (int i = 0; i < g->n_inputs && n < cap; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        if (!v->has_declared_shape) continue;
        bool symbolic = false;
        korch_shape s = v->declared_shape;
        for (int d = 0; d < s.rank; d++)
            if (s.dims[d] < 0) {
                s.dims[d] = 1;
                symbolic = true;
            }
        if (!symbolic) continue;
        out[n].name = v->name;
        out[n].shape = s;
        n++;
    }
    return n;
}

static void check_inferred(const korch_graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const korch_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0) continue;
            const korch_value *v = &g->values[n->outputs[k]];
            require(v->has_shape && v->dtype != KORCH_DTYPE_UNDEFINED, "a live node's output has no type or shape");
            require(korch_shape_numel(&v->shape) >= 0, "an inferred shape is negative or absurd");
        }
    }
    for (int i = 0; i < g->n_outputs; i++)
        require(g->values[g->outputs[i]].has_shape, "a graph output has no shape");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    korch_graph *g = NULL;
    korch_error_clear();
    korch_status st = korch_onnx_load_buffer(data, size, NULL, &g);
    if (st == KORCH_OK) {
        korch_error_clear();
        st = korch_graph_validate(g);
    }
    if (st == KORCH_OK) {
        korch_input_shape shapes[64];
        int n = fixed_shapes(g, shapes, 64);
        korch_error_clear();
        st = korch_graph_infer(g, shapes, n);
        if (st == KORCH_OK) check_inferred(g);
    }
    if (st != KORCH_OK) require(korch_last_error()[0] != '\0', "a failure left no error message");
    korch_graph_free(g);
    return 0;
}
