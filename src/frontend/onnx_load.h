/* ONNX model loading: protobuf bytes -> korch_graph. Structural checks that
 * need the protobuf (well-formed tensors, attribute types) happen here; graph
 * checks (references, producers, cycles, operator support) are in validate.c. */
#ifndef KORCH_FRONTEND_ONNX_LOAD_H
#define KORCH_FRONTEND_ONNX_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"

/* Largest model file korch reads (protobuf's own 2 GiB limit). */
#define KORCH_MAX_MODEL_BYTES ((size_t)2 << 30)

/* Deepest protobuf message nesting korch parses (protobuf's own default
 * recursion limit); see onnx_nesting.c. */
#define KORCH_MAX_MESSAGE_NESTING 100

/* Deepest nesting of subgraphs (If inside Loop inside ...) korch loads:
 * loading, inference and the reference executor recurse once per level. */
#define KORCH_MAX_SUBGRAPH_DEPTH 16

korch_status korch_onnx_load_file(const char *path, korch_graph **out);
/* `model_dir` is the external-data root; NULL forbids external data. */
korch_status korch_onnx_load_buffer(const uint8_t *data, size_t size, const char *model_dir, korch_graph **out);

/* A plan's embedded model (docs/plan-format.md): the graph section is a
 * ModelProto whose tensors name their data in the weight section. The
 * tensors borrow the weight section (no copy): it must outlive the graph. */
korch_status korch_onnx_load_plan_sections(const uint8_t *graph, size_t graph_size, const uint8_t *weights,
                                           size_t weights_size, korch_graph **out);

/* The other way (onnx_embed.c): rewrites an ONNX model's bytes into a graph
 * section and a weight section. Every tensor (initializers and tensor
 * attributes, in subgraphs too) moves into the weight section as raw
 * little-endian bytes, each at a multiple of `align` bytes; external data
 * files are read from model_dir (NULL: refused). Outputs are malloc'd. */
korch_status korch_onnx_split_weights(const uint8_t *model, size_t size, const char *model_dir, size_t align,
                                      uint8_t **graph, size_t *graph_size, uint8_t **weights, size_t *weights_size);

/* Refuses ModelProto bytes whose subgraph/type nesting exceeds
 * KORCH_MAX_MESSAGE_NESTING, which would overflow the stack in protobuf-c. */
korch_status korch_onnx_check_nesting(const uint8_t *data, size_t size);

/* Subgraphs (subgraph.c). After a subgraph's nodes and outputs are read:
 * every value it reads but does not define becomes a capture (an
 * outer-scope value). After a node's attributes are read: the captures of
 * its subgraphs become the node's implicit inputs, and each subgraph learns
 * which node input carries each of its captures. */
korch_status korch_subgraph_find_captures(korch_graph *sub);
korch_status korch_subgraph_link_captures(korch_graph *g, int node);

/* Reads a whole file (at most max_bytes) into a malloc'd buffer. */
korch_status korch_read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size);

#endif
