#include "frontend/onnx_load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_tensor.h"

static korch_status convert_graph(const Onnx__GraphProto *gp, const korch_onnx_source *src, const korch_graph *parent,
                                  korch_graph *g);

korch_status korch_read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
    char printable[256];
    korch_printable(path, printable, sizeof printable);
    FILE *f = fopen(path, "rb");
    if (!f) return korch_error(KORCH_ERR_IO, "cannot open \"%s\": %s", printable, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return korch_error(KORCH_ERR_IO, "\"%s\" is not a regular file", printable);
    }
    if ((unsigned long long)sb.st_size > max_bytes) {
        fclose(f);
        return korch_error(KORCH_ERR_IO, "\"%s\" is too large (%lld bytes)", printable, (long long)sb.st_size);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for \"%s\"", n, printable);
    }
    if (fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        return korch_error(KORCH_ERR_IO, "cannot read \"%s\"", printable);
    }
    fclose(f);
    *data = buf;
    *size = n;
    return KORCH_OK;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

/* Declared element type and shape from a ValueInfoProto. */
static korch_status read_value_info(korch_graph *g, const Onnx__ValueInfoProto *vi, int v, bool is_input) {
    korch_value *val = &g->values[v];
    char name[160];
    /* untyped value_info is legal for intermediates; exporters also write an
     * empty TypeProto (no kind set) in subgraphs */
    if (!vi->type || vi->type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return KORCH_OK;
    if (vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return korch_error(KORCH_ERR_UNSUPPORTED, "value \"%s\": only tensor types are supported",
                           korch_printable(vi->name, name, sizeof name));
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    if (!tt) return KORCH_OK;
    if (tt->has_elem_type) {
        if (!korch_dtype_is_valid(tt->elem_type))
            return korch_error(KORCH_ERR_INVALID_MODEL, "value \"%s\": invalid element type %d",
                               korch_printable(vi->name, name, sizeof name), (int)tt->elem_type);
        /* a tensor can be declared more than once (graph input, value_info,
         * graph output): the declarations must agree, or the last one would
         * silently retype a graph input */
        if (val->declared_dtype != KORCH_DTYPE_UNDEFINED && val->declared_dtype != (korch_dtype)tt->elem_type)
            return korch_error(KORCH_ERR_INVALID_MODEL, "value \"%s\" is declared twice with different types (%s, then %s)",
                               korch_printable(vi->name, name, sizeof name), korch_dtype_name(val->declared_dtype),
                               korch_dtype_name((korch_dtype)tt->elem_type));
        val->declared_dtype = (korch_dtype)tt->elem_type;
    }
    if (!tt->shape) return KORCH_OK;
    if (tt->shape->n_dim > KORCH_MAX_RANK)
        return korch_error(KORCH_ERR_UNSUPPORTED, "value \"%s\": rank %zu exceeds korch's maximum of %d",
                           korch_printable(vi->name, name, sizeof name), tt->shape->n_dim, KORCH_MAX_RANK);
    korch_shape s = {.rank = (int)tt->shape->n_dim};
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        s.dims[d] = -1;
        /* Exporters (paddle2onnx, some tf2onnx) write an unknown dimension as
         * dim_value -1, or as an empty dim_param; ONNX Runtime accepts both,
         * so both are symbolic here (-1), named "" (docs/shapes.md). */
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value == -1) {
            if (is_input) {
                free(val->dim_params[d]);
                val->dim_params[d] = strdup("");
            }
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0 || dim->dim_value > KORCH_MAX_ELEMENTS)
                return korch_error(KORCH_ERR_INVALID_MODEL, "value \"%s\": dimension %zu is %lld",
                                   korch_printable(vi->name, name, sizeof name), d, (long long)dim->dim_value);
            s.dims[d] = dim->dim_value;
        } else if (is_input && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param) {
            free(val->dim_params[d]);
            val->dim_params[d] = strdup(dim->dim_param);
        }
    }
    if (val->has_declared_shape) {
        bool same = val->declared_shape.rank == s.rank;
        for (int d = 0; same && d < s.rank; d++)
            if (s.dims[d] >= 0 && val->declared_shape.dims[d] >= 0 && s.dims[d] != val->declared_shape.dims[d])
                same = false;
        char a[128], b[128];
        if (!same)
            return korch_error(KORCH_ERR_INVALID_MODEL,
                               "value \"%s\" is declared twice with different shapes (%s, then %s; -1: unknown)",
                               korch_printable(vi->name, name, sizeof name),
                               korch_shape_format(&val->declared_shape, a, sizeof a), korch_shape_format(&s, b, sizeof b));
        return KORCH_OK; /* the first declaration stands */
    }
    val->declared_shape = s;
    val->has_declared_shape = true;
    return KORCH_OK;
}

/* IR version 1 had no AttributeProto.type: the field in use tells the type. */
static korch_attr_type attr_type_from_fields(const Onnx__AttributeProto *ap) {
    if (ap->has_f) return KORCH_ATTR_FLOAT;
    if (ap->has_i) return KORCH_ATTR_INT;
    if (ap->has_s) return KORCH_ATTR_STRING;
    if (ap->t) return KORCH_ATTR_TENSOR;
    if (ap->g) return KORCH_ATTR_GRAPH;
    if (ap->n_floats) return KORCH_ATTR_FLOATS;
    if (ap->n_ints) return KORCH_ATTR_INTS;
    if (ap->n_strings) return KORCH_ATTR_STRINGS;
    return KORCH_ATTR_UNDEFINED;
}

static korch_status convert_attr(const Onnx__AttributeProto *ap, korch_attr *a, const korch_graph *owner,
                                 const korch_onnx_source *src, const char *node_name, const char *op_type) {
    char nbuf[160], abuf[80], what[320];
    a->name = dup_or_empty(ap->name);
    if (!a->name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    a->type = ap->has_type ? (korch_attr_type)ap->type : attr_type_from_fields(ap);
    if (ap->ref_attr_name)
        return korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s): attribute \"%s\" refers to a function attribute",
                           korch_printable(node_name, nbuf, sizeof nbuf), op_type,
                           korch_printable(a->name, abuf, sizeof abuf));
    switch (a->type) {
    case KORCH_ATTR_FLOAT: a->f = ap->f; break;
    case KORCH_ATTR_INT: a->i = ap->i; break;
    case KORCH_ATTR_STRING:
        a->s = malloc(ap->s.len + 1);
        if (!a->s) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (ap->s.len) memcpy(a->s, ap->s.data, ap->s.len);
        a->s[ap->s.len] = '\0';
        break;
    case KORCH_ATTR_FLOATS:
        a->count = (int)ap->n_floats;
        a->floats = malloc((ap->n_floats ? ap->n_floats : 1) * sizeof(float));
        if (!a->floats) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (ap->n_floats) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case KORCH_ATTR_INTS:
        a->count = (int)ap->n_ints;
        a->ints = malloc((ap->n_ints ? ap->n_ints : 1) * sizeof(int64_t));
        if (!a->ints) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (ap->n_ints) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case KORCH_ATTR_STRINGS:
        a->strings = calloc(ap->n_strings + 1, sizeof *a->strings);
        if (!a->strings) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        a->count = (int)ap->n_strings;
        for (size_t k = 0; k < ap->n_strings; k++) {
            a->strings[k] = malloc(ap->strings[k].len + 1);
            if (!a->strings[k]) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
            if (ap->strings[k].len) memcpy(a->strings[k], ap->strings[k].data, ap->strings[k].len);
            a->strings[k][ap->strings[k].len] = '\0';
        }
        break;
    case KORCH_ATTR_TENSOR:
        if (!ap->t)
            return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): tensor attribute \"%s\" has no tensor",
                               korch_printable(node_name, nbuf, sizeof nbuf), op_type,
                               korch_printable(a->name, abuf, sizeof abuf));
        a->tensor = calloc(1, sizeof *a->tensor);
        if (!a->tensor) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        snprintf(what, sizeof what, "node \"%s\" (%s) attribute \"%s\"", korch_printable(node_name, nbuf, sizeof nbuf),
                 op_type, korch_printable(a->name, abuf, sizeof abuf));
        KORCH_TRY(korch_onnx_tensor_convert_from(ap->t, src, what, a->tensor));
        break;
    case KORCH_ATTR_GRAPH: {
        /* If/Loop/Scan subgraphs; the recursion is bounded by
         * KORCH_MAX_SUBGRAPH_DEPTH (and the bytes by the nesting check). */
        if (!ap->g)
            return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" (%s): graph attribute \"%s\" has no graph",
                               korch_printable(node_name, nbuf, sizeof nbuf), op_type,
                               korch_printable(a->name, abuf, sizeof abuf));
        if (owner->depth >= KORCH_MAX_SUBGRAPH_DEPTH)
            return korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s): subgraphs nest more than %d levels deep",
                               korch_printable(node_name, nbuf, sizeof nbuf), op_type, KORCH_MAX_SUBGRAPH_DEPTH);
        KORCH_TRY(korch_graph_create(&a->graph));
        a->graph->depth = owner->depth + 1;
        korch_status st = convert_graph(ap->g, src, owner, a->graph);
        if (st != KORCH_OK && owner->depth == 0) /* named once, at the top: nested names would repeat */
            return korch_error_prefix(st, "node \"%s\" (%s) attribute \"%s\"",
                                      korch_printable(node_name, nbuf, sizeof nbuf), op_type,
                                      korch_printable(a->name, abuf, sizeof abuf));
        KORCH_TRY(st);
        break;
    }
    default:
        /* lists of graphs, sparse tensors, type protos, string lists: kept
         * as a type tag only; no supported operator reads them. */
        break;
    }
    return KORCH_OK;
}

static korch_status convert_node(korch_graph *g, const Onnx__NodeProto *np, int index, const korch_onnx_source *src) {
    int ni = korch_graph_add_node(g);
    if (ni < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_node *n = &g->nodes[ni];
    n->op_type = dup_or_empty(np->op_type);
    n->domain = dup_or_empty(np->domain);
    if (np->name && *np->name) {
        n->name = strdup(np->name);
    } else {
        char buf[96];
        snprintf(buf, sizeof buf, "%.64s_%d", np->op_type ? np->op_type : "node", index);
        n->name = strdup(buf);
    }
    if (!n->op_type || !n->domain || !n->name) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    char nbuf[160];
    if (!*n->op_type)
        return korch_error(KORCH_ERR_INVALID_MODEL, "node \"%s\" has no op_type", korch_printable(n->name, nbuf, sizeof nbuf));
    n->n_inputs = (int)np->n_input;
    n->n_outputs = (int)np->n_output;
    n->inputs = malloc((np->n_input + 1) * sizeof(int));
    n->outputs = malloc((np->n_output + 1) * sizeof(int));
    n->attrs = calloc(np->n_attribute + 1, sizeof(korch_attr));
    if (!n->inputs || !n->outputs || !n->attrs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < np->n_input; i++) {
        const char *name = np->input[i];
        int v = (name && *name) ? korch_graph_intern_value(g, name) : -1;
        if (name && *name && v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        g->nodes[ni].inputs[i] = v; /* g->nodes may not move here, but stay safe */
    }
    for (size_t i = 0; i < np->n_output; i++) {
        const char *name = np->output[i];
        int v = (name && *name) ? korch_graph_intern_value(g, name) : -1;
        if (name && *name && v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        n->outputs[i] = v;
        if (v < 0) continue;
        char vbuf[160];
        if (g->values[v].producer >= 0 || g->values[v].is_constant || g->values[v].is_graph_input)
            return korch_error(KORCH_ERR_INVALID_MODEL,
                               "tensor \"%s\" has more than one producer (node \"%s\" writes it again)",
                               korch_printable(name, vbuf, sizeof vbuf), korch_printable(n->name, nbuf, sizeof nbuf));
        g->values[v].producer = ni;
    }
    for (size_t a = 0; a < np->n_attribute; a++) {
        n->n_attrs++;
        KORCH_TRY(convert_attr(np->attribute[a], &n->attrs[a], g, src, n->name, n->op_type));
    }
    KORCH_TRY(korch_subgraph_link_captures(g, ni));
    /* opset of the node's domain */
    int64_t opset = korch_graph_opset(g, n->domain);
    n->opset = opset > 0 && opset < 1000000 ? (int)opset : -1;
    return KORCH_OK;
}

static korch_status convert_model(const Onnx__ModelProto *m, const korch_onnx_source *src, korch_graph *g) {
    if (!m->graph) return korch_error(KORCH_ERR_INVALID_MODEL, "the model has no graph");
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    if (m->n_opset_import == 0) return korch_error(KORCH_ERR_INVALID_MODEL, "the model imports no opset");
    g->opsets = calloc(m->n_opset_import, sizeof *g->opsets);
    if (!g->opsets) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < m->n_opset_import; i++) {
        g->opsets[i].domain = dup_or_empty(m->opset_import[i]->domain);
        g->opsets[i].version = m->opset_import[i]->has_version ? m->opset_import[i]->version : 0;
        g->n_opsets++;
        if (!g->opsets[i].domain) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return convert_graph(m->graph, src, NULL, g);
}

/* The main graph (parent NULL; opsets already set) or a subgraph, which
 * takes its parent's opsets and may read values of enclosing graphs. */
static korch_status convert_graph(const Onnx__GraphProto *gp, const korch_onnx_source *src, const korch_graph *parent,
                                  korch_graph *g) {
    char buf[160], what[256];
    g->name = dup_or_empty(gp->name);
    g->model_dir = src->dir ? strdup(src->dir) : NULL;
    if (!g->name || (src->dir && !g->model_dir)) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (parent) {
        g->ir_version = parent->ir_version;
        g->opsets = calloc((size_t)parent->n_opsets + 1, sizeof *g->opsets);
        if (!g->opsets) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        for (int i = 0; i < parent->n_opsets; i++) {
            g->opsets[i].domain = strdup(parent->opsets[i].domain);
            g->opsets[i].version = parent->opsets[i].version;
            g->n_opsets++;
            if (!g->opsets[i].domain) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    if (gp->n_sparse_initializer)
        return korch_error(KORCH_ERR_UNSUPPORTED, "sparse initializers are not supported");

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name) return korch_error(KORCH_ERR_INVALID_MODEL, "initializer %zu has no name", i);
        int v = korch_graph_intern_value(g, tp->name);
        if (v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        if (g->values[v].is_constant)
            return korch_error(KORCH_ERR_INVALID_MODEL, "initializer \"%s\" is defined twice",
                               korch_printable(tp->name, buf, sizeof buf));
        snprintf(what, sizeof what, "initializer \"%s\"", korch_printable(tp->name, buf, sizeof buf));
        KORCH_TRY(korch_onnx_tensor_convert_from(tp, src, what, &g->values[v].constant));
        /* The parsed copy of the weights is not read again: freeing it now
         * keeps the load's peak memory at about two copies of the weights
         * (the file and the parse) instead of three (+ the tensors).
         * protobuf-c allocated it with malloc and frees NULL data safely. */
        if (tp->has_raw_data && tp->raw_data.data) {
            Onnx__TensorProto *owned = (Onnx__TensorProto *)tp;
            free(owned->raw_data.data);
            owned->raw_data.data = NULL;
            owned->raw_data.len = 0;
        }
        korch_value *val = &g->values[v];
        val->is_constant = true;
        val->dtype = val->constant.dtype;
        val->shape = val->constant.shape;
        val->has_shape = true;
    }

    g->inputs = malloc((gp->n_input + 1) * sizeof(int));
    g->outputs = malloc((gp->n_output + 1) * sizeof(int));
    if (!g->inputs || !g->outputs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) return korch_error(KORCH_ERR_INVALID_MODEL, "graph input %zu has no name", i);
        int v = korch_graph_intern_value(g, vi->name);
        if (v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        KORCH_TRY(read_value_info(g, vi, v, true));
        /* Older IR versions list initializers as inputs too: the initializer
         * is the value, and it is not a run-time input. */
        if (g->values[v].is_constant) continue;
        if (g->values[v].is_graph_input)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph input \"%s\" is listed twice",
                               korch_printable(vi->name, buf, sizeof buf));
        g->values[v].is_graph_input = true;
        g->inputs[g->n_inputs++] = v;
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi->name || !*vi->name) continue;
        int v = korch_graph_intern_value(g, vi->name);
        if (v < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
        KORCH_TRY(read_value_info(g, vi, v, false));
    }
    for (size_t i = 0; i < gp->n_node; i++) KORCH_TRY(convert_node(g, gp->node[i], (int)i, src));

    if (gp->n_output == 0) return korch_error(KORCH_ERR_INVALID_MODEL, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi->name || !*vi->name) return korch_error(KORCH_ERR_INVALID_MODEL, "graph output %zu has no name", i);
        /* a subgraph may return a value of an enclosing graph */
        int v = parent ? korch_graph_intern_value(g, vi->name) : korch_graph_find_value(g, vi->name);
        if (v < 0)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph output \"%s\" is not produced by any node",
                               korch_printable(vi->name, buf, sizeof buf));
        KORCH_TRY(read_value_info(g, vi, v, false));
        if (g->values[v].is_graph_output)
            return korch_error(KORCH_ERR_INVALID_MODEL, "graph output \"%s\" is listed twice",
                               korch_printable(vi->name, buf, sizeof buf));
        g->values[v].is_graph_output = true;
        g->outputs[g->n_outputs++] = v;
    }
    return parent ? korch_subgraph_find_captures(g) : KORCH_OK;
}

/* Parses with `allocator` (NULL: protobuf-c's default, malloc). */
static korch_status load_buffer_with(const uint8_t *data, size_t size, const korch_onnx_source *src,
                                     ProtobufCAllocator *allocator, korch_graph **out) {
    *out = NULL;
    if (size == 0) return korch_error(KORCH_ERR_PARSE, "the file is empty");
    KORCH_TRY(korch_onnx_check_nesting(data, size));
    Onnx__ModelProto *m = onnx__model_proto__unpack(allocator, size, data);
    if (!m) return korch_error(KORCH_ERR_PARSE, "not a valid ONNX model: protobuf parsing failed");
    korch_graph *g = NULL;
    korch_status st = korch_graph_create(&g);
    if (st == KORCH_OK) st = convert_model(m, src, g);
    onnx__model_proto__free_unpacked(m, allocator);
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return st;
    }
    *out = g;
    return KORCH_OK;
}

korch_status korch_onnx_load_buffer(const uint8_t *data, size_t size, const char *model_dir, korch_graph **out) {
    korch_onnx_source src = {.dir = model_dir};
    return load_buffer_with(data, size, &src, NULL, out);
}

korch_status korch_onnx_load_plan_sections(const uint8_t *graph, size_t graph_size, const uint8_t *weights,
                                           size_t weights_size, korch_graph **out) {
    korch_onnx_source src = {.weights = weights, .weights_size = weights_size};
    return load_buffer_with(graph, graph_size, &src, NULL, out);
}

/* Loading a file maps it instead of reading it, so that the file's bytes and
 * the parsed copy of the weights are not both resident: before each large
 * allocation (a tensor's raw data about to be copied out of the file) the
 * mapping's pages are dropped (MADV_DONTNEED on a private read-only file
 * mapping only forgets them; any page touched again is faulted back from
 * the page cache). The load's peak is then about one copy of the weights
 * plus the largest tensor, instead of two copies. Allocations are malloc'd,
 * so the loader may free parsed bytes with free() (convert_model does). */
typedef struct mapped_file {
    void *base;
    size_t size;
} mapped_file;

static void *mapped_alloc(void *user, size_t size) {
    mapped_file *f = user;
    if (size >= ((size_t)1 << 20)) madvise(f->base, f->size, MADV_DONTNEED);
    return malloc(size);
}

static void mapped_free(void *user, void *p) {
    (void)user;
    free(p);
}

/* Maps `path` (a regular, non-empty file); false when it cannot be mapped
 * (the caller reads it instead). */
static bool map_file(const char *path, mapped_file *out) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    struct stat sb;
    bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
              (unsigned long long)sb.st_size <= KORCH_MAX_MODEL_BYTES;
    void *base = ok ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (base == MAP_FAILED) return false;
    *out = (mapped_file){base, (size_t)sb.st_size};
    return true;
}

korch_status korch_onnx_load_file(const char *path, korch_graph **out) {
    uint8_t *data = NULL;
    size_t size = 0;
    *out = NULL;
    mapped_file mapped;
    bool is_mapped = map_file(path, &mapped);
    if (is_mapped) {
        data = mapped.base;
        size = mapped.size;
    } else {
        KORCH_TRY(korch_read_file(path, KORCH_MAX_MODEL_BYTES, &data, &size));
    }
    ProtobufCAllocator allocator = {.alloc = mapped_alloc, .free = mapped_free, .allocator_data = &mapped};
    /* external data lives next to the model */
    char *dir = strdup(path);
    korch_status st = dir ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == KORCH_OK) {
        char *slash = strrchr(dir, '/');
        if (slash) {
            if (slash == dir) slash[1] = '\0';
            else *slash = '\0';
        } else {
            strcpy(dir, ".");
        }
        korch_onnx_source src = {.dir = dir};
        st = load_buffer_with(data, size, &src, is_mapped ? &allocator : NULL, out);
    }
    if (is_mapped) munmap(mapped.base, mapped.size);
    else free(data);
    free(dir);
    if (st != KORCH_OK) {
        char printable[256];
        return korch_error_prefix(st, "%s", korch_printable(path, printable, sizeof printable));
    }
    return KORCH_OK;
}
