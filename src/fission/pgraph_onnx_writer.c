/* The ONNX writer's building blocks (export_internal.h): an arena for every
 * protobuf-c message, unique value names, nodes, attributes, initializers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fission/pgraph_onnx_internal.h"

void *korch_onnx_alloc(korch_onnx_writer *w, size_t size) {
    if (w->n_blocks == w->cap_blocks) {
        size_t cap = w->cap_blocks ? w->cap_blocks * 2 : 256;
        void **b = realloc(w->blocks, cap * sizeof *b);
        if (!b) goto oom;
        w->blocks = b;
        w->cap_blocks = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) goto oom;
    w->blocks[w->n_blocks++] = p;
    return p;
oom:
    if (w->status == KORCH_OK) w->status = korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
    return NULL;
}

char *korch_onnx_str(korch_onnx_writer *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = korch_onnx_alloc(w, (size_t)n + 1);
    if (!s) return (char *)"";
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

const char *korch_onnx_unique(korch_onnx_writer *w, const char *base) {
    const char *name = base;
    for (int k = 1; korch_strmap_get(&w->used, name) >= 0; k++) name = korch_onnx_str(w, "%s_%d", base, k);
    if (name == base) name = korch_onnx_str(w, "%s", base);
    if (!korch_strmap_put(&w->used, name, 1) && w->status == KORCH_OK)
        w->status = korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory");
    return name;
}

const char *korch_onnx_temp(korch_onnx_writer *w) {
    return korch_onnx_unique(w, korch_onnx_str(w, "fission/t%d", w->counter++));
}

#define GROW(w, arr, n, cap)                                                                       \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            size_t c_ = (cap) ? (cap) * 2 : 64;                                                    \
            void *p_ = realloc((arr), c_ * sizeof *(arr));                                          \
            if (!p_) {                                                                             \
                if ((w)->status == KORCH_OK)                                                       \
                    (w)->status = korch_error(KORCH_ERR_OUT_OF_MEMORY, "ONNX export: out of memory"); \
                return NULL;                                                                       \
            }                                                                                      \
            (arr) = p_;                                                                            \
            (cap) = c_;                                                                            \
        }                                                                                          \
    } while (0)

Onnx__NodeProto *korch_onnx_node(korch_onnx_writer *w, const char *op_type, int n_in, const char *const *ins,
                                 int n_out, const char *const *outs) {
    GROW(w, w->nodes, w->n_nodes, w->cap_nodes);
    Onnx__NodeProto *n = korch_onnx_alloc(w, sizeof *n);
    char **in = korch_onnx_alloc(w, sizeof(char *) * (size_t)(n_in + 1));
    char **out = korch_onnx_alloc(w, sizeof(char *) * (size_t)(n_out + 1));
    if (!n || !in || !out) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++) in[i] = (char *)ins[i];
    for (int i = 0; i < n_out; i++) out[i] = (char *)outs[i];
    n->n_input = (size_t)n_in;
    n->input = in;
    n->n_output = (size_t)n_out;
    n->output = out;
    n->op_type = (char *)op_type;
    n->domain = (char *)"";
    n->name = korch_onnx_str(w, "%s/%s_%zu", w->node_base ? w->node_base : "fission", op_type, w->n_nodes);
    w->nodes[w->n_nodes++] = n;
    return n;
}

Onnx__AttributeProto *korch_onnx_add_attr(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    if (!n) return NULL;
    Onnx__AttributeProto **list = korch_onnx_alloc(w, sizeof *list * (n->n_attribute + 1));
    Onnx__AttributeProto *a = korch_onnx_alloc(w, sizeof *a);
    if (!list || !a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = korch_onnx_str(w, "%s", name);
    a->has_type = 1;
    a->type = type;
    if (n->n_attribute) memcpy(list, n->attribute, n->n_attribute * sizeof *list);
    list[n->n_attribute++] = a;
    n->attribute = list;
    return a;
}

void korch_onnx_attr_int(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = korch_onnx_add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void korch_onnx_attr_float(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, float v) {
    Onnx__AttributeProto *a = korch_onnx_add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void korch_onnx_attr_string(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = korch_onnx_add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a) return;
    a->has_s = 1;
    a->s.data = (uint8_t *)korch_onnx_str(w, "%s", v);
    a->s.len = strlen(v);
}

void korch_onnx_attr_ints(korch_onnx_writer *w, Onnx__NodeProto *n, const char *name, const int64_t *v, int count) {
    Onnx__AttributeProto *a = korch_onnx_add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = korch_onnx_alloc(w, sizeof *copy * (size_t)(count + 1));
    if (!a || !copy) return;
    memcpy(copy, v, sizeof *copy * (size_t)count);
    a->n_ints = (size_t)count;
    a->ints = copy;
}

Onnx__TensorProto *korch_onnx_tensor_proto(korch_onnx_writer *w, const korch_tensor *t, const char *name) {
    Onnx__TensorProto *tp = korch_onnx_alloc(w, sizeof *tp);
    int64_t *dims = korch_onnx_alloc(w, sizeof *dims * (size_t)(t->shape.rank + 1));
    if (!tp || !dims) return NULL;
    onnx__tensor_proto__init(tp);
    for (int k = 0; k < t->shape.rank; k++) dims[k] = t->shape.dims[k];
    tp->n_dims = (size_t)t->shape.rank;
    tp->dims = dims;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    tp->name = (char *)name;
    tp->has_raw_data = 1;
    tp->raw_data.len = korch_tensor_bytes(t);
    tp->raw_data.data = t->data; /* borrowed until packing */
    return tp;
}

const char *korch_onnx_add_initializer(korch_onnx_writer *w, const korch_tensor *t, const char *name) {
    GROW(w, w->inits, w->n_inits, w->cap_inits);
    Onnx__TensorProto *tp = korch_onnx_tensor_proto(w, t, name);
    if (!tp) return NULL;
    w->inits[w->n_inits++] = tp;
    return name;
}

const char *korch_onnx_const_tensor(korch_onnx_writer *w, const korch_tensor *t, const char *name) {
    const char *r = korch_onnx_add_initializer(w, t, name);
    return r ? r : "";
}

/* Copies data into the arena so the initializer outlives the caller's buffer. */
static const char *const_copy(korch_onnx_writer *w, korch_dtype dt, const korch_shape *s, const void *data) {
    korch_tensor t = {.dtype = dt, .shape = *s};
    size_t bytes = korch_tensor_bytes(&t);
    t.data = korch_onnx_alloc(w, bytes);
    if (!t.data) return "";
    if (bytes) memcpy(t.data, data, bytes);
    return korch_onnx_const_tensor(w, &t, korch_onnx_unique(w, korch_onnx_str(w, "fission/c%d", w->counter++)));
}

const char *korch_onnx_const_i64(korch_onnx_writer *w, const int64_t *v, int count) {
    korch_shape s = {.rank = 1, .dims = {count}};
    return const_copy(w, KORCH_DTYPE_INT64, &s, v);
}

const char *korch_onnx_const_scalar(korch_onnx_writer *w, korch_dtype dtype, double v) {
    korch_shape s = {0};
    unsigned char buf[8] = {0};
    switch (dtype) {
    case KORCH_DTYPE_FLOAT32: *(float *)(void *)buf = (float)v; break;
    case KORCH_DTYPE_FLOAT64: memcpy(buf, &v, 8); break;
    case KORCH_DTYPE_INT64: *(int64_t *)(void *)buf = (int64_t)v; break;
    case KORCH_DTYPE_INT32: *(int32_t *)(void *)buf = (int32_t)v; break;
    case KORCH_DTYPE_INT16: *(int16_t *)(void *)buf = (int16_t)v; break;
    case KORCH_DTYPE_INT8: *(int8_t *)(void *)buf = (int8_t)v; break;
    case KORCH_DTYPE_UINT8: *buf = (uint8_t)v; break;
    case KORCH_DTYPE_UINT16: *(uint16_t *)(void *)buf = (uint16_t)v; break;
    case KORCH_DTYPE_UINT32: *(uint32_t *)(void *)buf = (uint32_t)v; break;
    case KORCH_DTYPE_UINT64: *(uint64_t *)(void *)buf = (uint64_t)v; break;
    case KORCH_DTYPE_BOOL: *buf = v != 0.0; break;
    default:
        if (w->status == KORCH_OK)
            w->status = korch_error(KORCH_ERR_UNSUPPORTED, "ONNX export: no scalar of dtype %s", korch_dtype_name(dtype));
        return "";
    }
    return const_copy(w, dtype, &s, buf);
}

