/* A model split for a self-contained plan (docs/plan-format.md): the ONNX
 * graph without its tensor bytes, and the tensor bytes laid out for reading
 * in place. Each tensor becomes ONNX external data at location
 * KORCH_ONNX_PLAN_WEIGHTS, so the graph section is still an ordinary
 * ModelProto and the loader needs no second parser; the weights are raw
 * little-endian bytes at aligned offsets, which a mapped plan hands to the
 * kernels as they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_load.h"
#include "frontend/onnx_tensor.h"

typedef struct weights_blob {
    uint8_t *data;
    size_t size, cap, align;
    const char *dir; /* the model's folder, for its own external data */
} weights_blob;

static korch_status blob_append(weights_blob *b, const void *data, size_t n, size_t *offset) {
    size_t start = (b->size + b->align - 1) / b->align * b->align;
    if (start < b->size || start + n < start) return korch_error(KORCH_ERR_UNSUPPORTED, "the weights are too large");
    if (start + n > b->cap) {
        size_t cap = b->cap ? b->cap : ((size_t)1 << 16);
        while (cap < start + n) cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory for the plan's weights");
        b->data = grown;
        b->cap = cap;
    }
    memset(b->data + b->size, 0, start - b->size); /* padding: deterministic bytes, so the checksum is */
    if (n) memcpy(b->data + start, data, n);
    b->size = start + n;
    *offset = start;
    return KORCH_OK;
}

static Onnx__StringStringEntryProto *entry(const char *key, const char *value) {
    Onnx__StringStringEntryProto *e = malloc(sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = strdup(key);
    e->value = strdup(value);
    if (!e->key || !e->value) {
        onnx__string_string_entry_proto__free_unpacked(e, NULL);
        return NULL;
    }
    return e;
}

/* Converts the tensor as the loader would (typed fields, raw_data, the
 * model's external files; bools normalised), stores its bytes, and points
 * the proto at them. The message was unpacked with malloc, so what is
 * replaced is freed with free(). */
static korch_status move_tensor(Onnx__TensorProto *tp, weights_blob *b, const char *what) {
    korch_tensor t;
    KORCH_TRY(korch_onnx_tensor_convert(tp, b->dir, what, &t));
    size_t offset = 0, bytes = korch_tensor_bytes(&t);
    korch_dtype t_dtype = t.dtype;
    korch_status st = blob_append(b, t.data, bytes, &offset);
    korch_tensor_free(&t);
    if (st != KORCH_OK) return st;
    free(tp->raw_data.data);
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
    tp->n_float_data = tp->n_int32_data = tp->n_int64_data = tp->n_double_data = tp->n_uint64_data = 0;
    for (size_t i = 0; i < tp->n_external_data; i++)
        onnx__string_string_entry_proto__free_unpacked(tp->external_data[i], NULL);
    free(tp->external_data);
    tp->external_data = NULL;
    tp->n_external_data = 0;
    char off_text[32], len_text[32];
    snprintf(off_text, sizeof off_text, "%zu", offset);
    snprintf(len_text, sizeof len_text, "%zu", bytes);
    Onnx__StringStringEntryProto **entries = calloc(3, sizeof *entries);
    if (!entries) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    tp->external_data = entries;
    const char *keys[3] = {"location", "offset", "length"}, *values[3] = {KORCH_ONNX_PLAN_WEIGHTS, off_text, len_text};
    for (int i = 0; i < 3; i++) {
        /* counted as made, so that free_unpacked frees exactly those */
        if (!(entries[i] = entry(keys[i], values[i]))) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        tp->n_external_data = (size_t)i + 1;
    }
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    /* the bytes are the loader's tensor: its dtype (korch's dtypes are ONNX's
     * numbers), should the loader ever convert one at load */
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t_dtype;
    return KORCH_OK;
}

static korch_status move_graph(Onnx__GraphProto *gp, weights_blob *b, int depth);

static korch_status move_attr(Onnx__AttributeProto *ap, weights_blob *b, const char *node, int depth) {
    char what[400], nbuf[160], abuf[80];
    snprintf(what, sizeof what, "node \"%s\" attribute \"%s\"", korch_printable(node, nbuf, sizeof nbuf),
             korch_printable(ap->name ? ap->name : "", abuf, sizeof abuf));
    if (ap->t) KORCH_TRY(move_tensor(ap->t, b, what));
    for (size_t i = 0; i < ap->n_tensors; i++) KORCH_TRY(move_tensor(ap->tensors[i], b, what));
    if (ap->g) KORCH_TRY(move_graph(ap->g, b, depth + 1));
    for (size_t i = 0; i < ap->n_graphs; i++) KORCH_TRY(move_graph(ap->graphs[i], b, depth + 1));
    return KORCH_OK;
}

static korch_status move_graph(Onnx__GraphProto *gp, weights_blob *b, int depth) {
    if (depth > KORCH_MAX_SUBGRAPH_DEPTH)
        return korch_error(KORCH_ERR_UNSUPPORTED, "subgraphs nest more than %d levels deep", KORCH_MAX_SUBGRAPH_DEPTH);
    char what[300], buf[160];
    for (size_t i = 0; i < gp->n_initializer; i++) {
        snprintf(what, sizeof what, "initializer \"%s\"",
                 korch_printable(gp->initializer[i]->name ? gp->initializer[i]->name : "", buf, sizeof buf));
        KORCH_TRY(move_tensor(gp->initializer[i], b, what));
    }
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t a = 0; a < gp->node[i]->n_attribute; a++)
            KORCH_TRY(move_attr(gp->node[i]->attribute[a], b, gp->node[i]->name ? gp->node[i]->name : "", depth));
    return KORCH_OK;
}

korch_status korch_onnx_split_weights(const uint8_t *model, size_t size, const char *model_dir, size_t align,
                                      uint8_t **graph, size_t *graph_size, uint8_t **weights, size_t *weights_size) {
    *graph = *weights = NULL;
    *graph_size = *weights_size = 0;
    if (size == 0) return korch_error(KORCH_ERR_PARSE, "the file is empty");
    KORCH_TRY(korch_onnx_check_nesting(model, size));
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, model);
    if (!m) return korch_error(KORCH_ERR_PARSE, "not a valid ONNX model: protobuf parsing failed");
    weights_blob b = {.align = align ? align : 1, .dir = model_dir};
    korch_status st = m->graph ? move_graph(m->graph, &b, 0)
                               : korch_error(KORCH_ERR_INVALID_MODEL, "the model has no graph");
    if (st == KORCH_OK) {
        size_t packed = onnx__model_proto__get_packed_size(m);
        *graph = malloc(packed + 1);
        if (!*graph) st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        else *graph_size = onnx__model_proto__pack(m, *graph);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    if (st != KORCH_OK) {
        free(*graph);
        free(b.data);
        *graph = NULL;
        *graph_size = 0;
        return st;
    }
    *weights = b.data;
    *weights_size = b.size;
    return KORCH_OK;
}
