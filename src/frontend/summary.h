/* What `korch info` reports about an ONNX model: its inputs and outputs,
 * node counts, parameters, FLOPs and an operator histogram. One computation
 * for the CLI (cmd_info.c prints it) and the C API (korch_model_describe in
 * src/runtime/describe.c writes it as JSON). */
#ifndef KORCH_FRONTEND_SUMMARY_H
#define KORCH_FRONTEND_SUMMARY_H

#include "frontend/frontend.h"

typedef struct korch_op_summary {
    const char *op; /* points into the summary's raw graph */
    int count;      /* nodes in the file */
    int64_t flops;  /* of the live nodes after folding */
} korch_op_summary;

typedef struct korch_model_summary {
    korch_graph *graph;  /* loaded, validated, inferred and folded (validated only when open_inputs) */
    korch_graph *raw;    /* the file as parsed (parameters, operator names) */
    int nodes_in_file;
    int open_inputs;     /* graph inputs with symbolic dimensions left open: no
                            inference, so nodes_live and flops are -1 */
    int nodes_live;      /* after constant folding */
    int64_t param_count, param_bytes;
    int64_t flops;       /* one run */
    int n_ops;
    korch_op_summary *ops; /* most frequent first, then by name */
} korch_model_summary;

/* A model whose inputs have symbolic dimensions that `shapes` leaves open
 * is summarised without shape inference (open_inputs > 0). */
korch_status korch_model_summary_load(const char *path, const korch_input_shape *shapes, int n_shapes,
                                      korch_model_summary *out);
/* The summary of graphs loaded otherwise (a plan's model): raw as parsed,
 * graph loaded, validated and inferred. Takes both (freed on failure too). */
korch_status korch_model_summary_build(korch_graph *raw, korch_graph *graph, korch_model_summary *out);
void korch_model_summary_free(korch_model_summary *s);
/* FLOPs of live node n of g (inferred) from its shapes; an operator without
 * a FLOP function counts one per output element. */
int64_t korch_node_flops(const korch_graph *g, const korch_node *n);

#endif
