/* libFuzzer target for plan files (docs/plan-format.md). The first byte
 * picks what is fuzzed:
 *   even: the rest is a whole plan file (korch_plan_load_memory: the text
 *         parser, the checksums, the section bounds); an embedded plan that
 *         loads has its graph parsed from its sections;
 *   odd:  the rest is an embedded model behind its checksums: a 4-byte
 *         little-endian graph size, the graph section, then the weight
 *         section (korch_onnx_load_plan_sections: a tensor's offset and
 *         length against the section, its alignment).
 * Every constant that loads is read in full (ASan reports a tensor that
 * reaches past its section); a failure must leave an error message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_load.h"
#include "runtime/plan.h"

static void touch_constants(const korch_graph *g) {
    volatile uint8_t sink = 0;
    for (int v = 0; v < g->n_values; v++) {
        const korch_tensor *t = &g->values[v].constant;
        if (!g->values[v].is_constant || !t->data) continue;
        size_t bytes = korch_tensor_bytes(t);
        for (size_t i = 0; i < bytes; i++) sink ^= ((const uint8_t *)t->data)[i];
    }
    (void)sink;
}

static void require_message(korch_status st) {
    if (st != KORCH_OK && !korch_last_error()[0]) {
        fprintf(stderr, "fuzz_plan: a failure left no error message\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    /* a copy of exactly the input's length, so that ASan sees any read past it */
    uint8_t *copy = malloc(size - 1 + 1);
    if (!copy) return 0;
    memcpy(copy, data + 1, size - 1);
    korch_graph *g = NULL;
    if (data[0] % 2 == 0) {
        korch_plan *plan = NULL;
        korch_status st = korch_plan_load_memory("fuzz.plan", copy, size - 1, &plan);
        require_message(st);
        if (st == KORCH_OK && plan->embedded) {
            st = korch_plan_load_graph(plan, "fuzz.plan", &g);
            require_message(st);
            if (st == KORCH_OK) touch_constants(g);
        }
        korch_graph_free(g);
        korch_plan_free(plan);
    } else if (size >= 5) {
        uint32_t graph_size = (uint32_t)copy[0] | (uint32_t)copy[1] << 8 | (uint32_t)copy[2] << 16 |
                              (uint32_t)copy[3] << 24;
        size_t rest = size - 5;
        if (graph_size > rest) graph_size = (uint32_t)rest;
        const uint8_t *graph = copy + 4, *weights = copy + 4 + graph_size;
        korch_status st = korch_onnx_load_plan_sections(graph, graph_size, weights, rest - graph_size, &g);
        require_message(st);
        if (st == KORCH_OK) touch_constants(g);
        korch_graph_free(g);
    }
    free(copy);
    return 0;
}
