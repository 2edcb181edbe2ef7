/* Internal to the ONNX exporter: a writer that accumulates protobuf-c
 * messages in an arena (everything is freed at once after packing). */
#ifndef KORCH_FISSION_PGRAPH_ONNX_INTERNAL_H
#define KORCH_FISSION_PGRAPH_ONNX_INTERNAL_H

#include "core/strmap.h"
#include "fission/pgraph_onnx.h"
#include "onnx.pb-c.h"

typedef struct korch_onnx_writer {
    const korch_pgraph *pg;
    int opset;
    korch_status status; /* sticky: the first failure */
    void **blocks;
    size_t n_blocks, cap_blocks;
    Onnx__NodeProto **nodes;
    size_t n_nodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits, cap_inits;
    Onnx__ValueInfoProto **infos;
    size_t n_infos, cap_infos;
    char **names; /* per pvalue */
    korch_strmap used;
    int counter;
    const char *node_base; /* name prefix of the nodes of the current primitive */
} korch_onnx_writer;

void *korch_onnx_alloc(korch_onnx_writer *w, size_t size); /* zeroed; NULL sets the error */
char *korch_onnx_str(korch_onnx_writer *w, const char *fmt, ...) KORCH_PRINTF(2, 3);
/* A value name not used yet, derived from base. */
const char *korch_onnx_unique(korch_onnx_writer *w, const char *base);
/* A fresh intermediate value name. */
const char *korch_onnx_temp(korch_onnx_writer *w);

/* Adds a node; inputs/outputs are names ("" for an omitted optional). */
Onnx__NodeProto *korch_onnx_node(korch_onnx_writer *w, const char *op_type, int n_in, const char *const *ins,
                                 int n_out, const char *const *outs);
void korch_onnx_attr_int(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, int64_t v);
void korch_onnx_attr_float(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, float v);
void korch_onnx_attr_string(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, const char *v);
void korch_onnx_attr_ints(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, const int64_t *v, int count);

Onnx__AttributeProto *korch_onnx_add_attr(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name,
                                          Onnx__AttributeProto__AttributeType type);
/* A TensorProto borrowing t's data (valid until the model is packed). */
Onnx__TensorProto *korch_onnx_tensor_proto(korch_onnx_writer *w, const korch_tensor *t, const char *name);
const char *korch_onnx_add_initializer(korch_onnx_writer *w, const korch_tensor *t, const char *name);

/* Initializers; return their names. */
const char *korch_onnx_const_tensor(korch_onnx_writer *w, const korch_tensor *t, const char *name);
const char *korch_onnx_const_i64(korch_onnx_writer *w, const int64_t *v, int count);
const char *korch_onnx_const_scalar(korch_onnx_writer *w, korch_dtype dtype, double v);

/* Layout primitives (pgraph_onnx_layout.c). */
void korch_onnx_emit_layout(korch_onnx_writer *w, int node);

#endif
