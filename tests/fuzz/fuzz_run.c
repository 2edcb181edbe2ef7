/* libFuzzer target: like fuzz_load (model bytes -> load, validate, infer),
 * then, when the inferred graph is small (every tensor at most 2^16 elements,
 * at most 10^8 FLOPs by the op table's counts, subgraphs included, every
 * Loop with a small constant trip count), runs it with the reference
 * executor on inputs filled from a fixed pattern. This reaches the kernels
 * with hostile attributes and shapes that shape inference accepted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"
#include "ops/op.h"
#include "ops/reference.h"

enum { MAX_NUMEL = 1 << 16 };
#define MAX_FLOPS 100000000LL

static int64_t node_flops(const korch_graph *g, const korch_node *n) {
    korch_tensor in_store[16], out_store[16];
    korch_tensor *ins[16] = {0}, *outs[16] = {0};
    if (n->n_inputs > 16 || n->n_outputs > 16) return -1;
    int64_t elements = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] < 0) continue;
        const korch_value *v = &g->values[n->inputs[k]];
        in_store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape, .data = v->is_constant ? v->constant.data : NULL};
        ins[k] = &in_store[k];
    }
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0) continue;
        const korch_value *v = &g->values[n->outputs[k]];
        out_store[k] = (korch_tensor){.dtype = v->dtype, .shape = v->shape};
        outs[k] = &out_store[k];
        elements += korch_shape_numel(&v->shape);
    }
    korch_op_ctx ctx = {.graph = g, .node = n, .n_inputs = n->n_inputs, .inputs = ins, .n_outputs = n->n_outputs,
                        .outputs = outs};
    return n->def->flops ? n->def->flops(&ctx) : elements;
}

/* A Loop runs its body M times; a run is bounded only when M is a constant
 * this small (a while-loop stopped by its condition, or an M read from the
 * pattern-filled inputs, could spin for 2^24 iterations under the
 * sanitizers: longer than the fuzzer's per-input timeout). */
#define MAX_LOOP_TRIPS 256

static int64_t graph_flops(const korch_graph *g);

/* Work of a node's subgraphs per execution of the node, times how often the
 * node runs them; -1 when that cannot be bounded before running. */
static int64_t subgraph_flops(const korch_graph *g, const korch_node *n) {
    int64_t trips = 1, total = 0;
    if (!strcmp(n->op_type, "Loop")) {
        const korch_value *m = n->n_inputs > 0 && n->inputs[0] >= 0 ? &g->values[n->inputs[0]] : NULL;
        if (!m || !m->is_constant || m->constant.dtype != KORCH_DTYPE_INT64 || korch_shape_numel(&m->shape) != 1)
            return -1;
        trips = ((const int64_t *)m->constant.data)[0];
        if (trips < 0 || trips > MAX_LOOP_TRIPS) return -1;
    } else if (!strcmp(n->op_type, "Scan")) {
        for (int k = 0; k < n->n_inputs; k++) /* the sequence is no longer than any scanned tensor */
            if (n->inputs[k] >= 0) trips = korch_shape_numel(&g->values[n->inputs[k]].shape) > trips
                                               ? korch_shape_numel(&g->values[n->inputs[k]].shape) : trips;
    }
    for (int a = 0; a < n->n_attrs; a++) {
        if (n->attrs[a].type != KORCH_ATTR_GRAPH || !n->attrs[a].graph) continue;
        int64_t f = graph_flops(n->attrs[a].graph);
        if (f < 0 || f > MAX_FLOPS || (total += f) > MAX_FLOPS) return -1;
    }
    return total > MAX_FLOPS / (trips ? trips : 1) ? -1 : total * trips;
}

static int64_t graph_flops(const korch_graph *g) {
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].has_shape && korch_shape_numel(&g->values[v].shape) > MAX_NUMEL) return -1;
    int64_t flops = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        int64_t f = node_flops(g, &g->nodes[i]), sub = subgraph_flops(g, &g->nodes[i]);
        if (f < 0 || sub < 0 || f > MAX_FLOPS || (flops += f + sub) > MAX_FLOPS) return -1;
    }
    return flops;
}

static int small_enough(const korch_graph *g) { return graph_flops(g) >= 0; }

static void run(const korch_graph *g) {
    korch_tensor *inputs = calloc((size_t)g->n_inputs + 1, sizeof *inputs);
    korch_tensor *outputs = calloc((size_t)g->n_outputs + 1, sizeof *outputs);
    int ok = inputs && outputs;
    for (int i = 0; ok && i < g->n_inputs; i++) {
        const korch_value *v = &g->values[g->inputs[i]];
        ok = korch_tensor_alloc(&inputs[i], v->dtype, &v->shape) == KORCH_OK;
        /* small non-negative bytes: valid indices for small axes, finite floats */
        for (size_t b = 0; ok && b < korch_tensor_bytes(&inputs[i]); b++) ((uint8_t *)inputs[i].data)[b] = (uint8_t)(b % 3);
    }
    if (ok && korch_reference_run(g, inputs, outputs) == KORCH_OK)
        for (int i = 0; i < g->n_outputs; i++) korch_tensor_free(&outputs[i]);
    else if (ok && !korch_last_error()[0]) {
        fprintf(stderr, "fuzz_run: a failed run left no error message\n");
        abort();
    }
    for (int i = 0; inputs && i < g->n_inputs; i++) korch_tensor_free(&inputs[i]);
    free(inputs);
    free(outputs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    korch_graph *g = NULL;
    if (korch_onnx_load_buffer(data, size, NULL, &g) == KORCH_OK && korch_graph_validate(g) == KORCH_OK) {
        korch_input_shape shapes[64];
        int n = 0;
        for (int i = 0; i < g->n_inputs && n < 64; i++) {
            const korch_value *v = &g->values[g->inputs[i]];
            if (!v->has_declared_shape) continue;
            shapes[n].name = v->name;
            shapes[n].shape = v->declared_shape;
            for (int d = 0; d < shapes[n].shape.rank; d++)
                if (shapes[n].shape.dims[d] < 0) shapes[n].shape.dims[d] = 1;
            n++;
        }
        korch_error_clear();
        if (korch_graph_infer(g, shapes, n) == KORCH_OK && small_enough(g)) run(g);
    }
    korch_graph_free(g);
    return 0;
}
