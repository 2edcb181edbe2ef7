/* Guarded specialization: a graph input treated as a constant while the
 * model is loaded (korch optimize --specialize NAME=VALUE), so that Ifs on it
 * resolve and shapes fold, with the value recorded so that every run of the
 * plan can check that it is given that value (docs/control-flow.md,
 * "Guarded specialization").
 *
 * The input stays a graph input: callers still pass it, and its readers are
 * rewired to a constant copy named "<input>__specialized". */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/onnx_load.h"

/* Parses `text` as one element of `dtype` into `out` (korch_dtype_size bytes). */
static bool parse_literal(const char *text, korch_dtype dtype, void *out) {
    char *end = NULL;
    errno = 0;
    switch (dtype) {
    case KORCH_DTYPE_FLOAT32:
    case KORCH_DTYPE_FLOAT64: {
        double d = strtod(text, &end);
        if (end == text || *end || errno == ERANGE) return false;
        if (dtype == KORCH_DTYPE_FLOAT64) {
            memcpy(out, &d, sizeof d);
        } else {
            float f = (float)d;
            if (isinf(f) && !isinf(d)) return false;
            memcpy(out, &f, sizeof f);
        }
        return true;
    }
    case KORCH_DTYPE_BOOL: {
        uint8_t b;
        if (strcmp(text, "1") == 0 || strcmp(text, "true") == 0) b = 1;
        else if (strcmp(text, "0") == 0 || strcmp(text, "false") == 0) b = 0;
        else return false;
        memcpy(out, &b, 1);
        return true;
    }
    case KORCH_DTYPE_UINT8:
    case KORCH_DTYPE_UINT16:
    case KORCH_DTYPE_UINT32:
    case KORCH_DTYPE_UINT64: {
        if (text[0] == '-') return false;
        unsigned long long u = strtoull(text, &end, 10);
        if (end == text || *end || errno == ERANGE) return false;
        size_t size = korch_dtype_size(dtype);
        if (size < 8 && u >> (8 * size)) return false;
        uint8_t v8 = (uint8_t)u;
        uint16_t v16 = (uint16_t)u;
        uint32_t v32 = (uint32_t)u;
        uint64_t v64 = u;
        memcpy(out, size == 1 ? (void *)&v8 : size == 2 ? (void *)&v16 : size == 4 ? (void *)&v32 : (void *)&v64, size);
        return true;
    }
    case KORCH_DTYPE_INT8:
    case KORCH_DTYPE_INT16:
    case KORCH_DTYPE_INT32:
    case KORCH_DTYPE_INT64: {
        long long s = strtoll(text, &end, 10);
        if (end == text || *end || errno == ERANGE) return false;
        size_t size = korch_dtype_size(dtype);
        int64_t lo = size == 8 ? INT64_MIN : -((int64_t)1 << (8 * size - 1));
        int64_t hi = size == 8 ? INT64_MAX : ((int64_t)1 << (8 * size - 1)) - 1;
        if (s < lo || s > hi) return false;
        int8_t v8 = (int8_t)s;
        int16_t v16 = (int16_t)s;
        int32_t v32 = (int32_t)s;
        int64_t v64 = s;
        memcpy(out, size == 1 ? (void *)&v8 : size == 2 ? (void *)&v16 : size == 4 ? (void *)&v32 : (void *)&v64, size);
        return true;
    }
    default: return false;
    }
}

const char *korch_tensor_values_format(const korch_tensor *t, char *buf, size_t size) {
    int64_t n = korch_tensor_numel(t);
    size_t used = 0;
    buf[0] = '\0';
    if (n != 1 && used < size) used += (size_t)snprintf(buf + used, size - used, "[");
    for (int64_t i = 0; i < n && used < size; i++) {
        if (i == 8) {
            used += (size_t)snprintf(buf + used, size - used, ", ... (%" PRId64 " values)", n);
            break;
        }
        const char *sep = i ? ", " : "";
        switch (t->dtype) {
        case KORCH_DTYPE_FLOAT32:
        case KORCH_DTYPE_FLOAT64:
            used += (size_t)snprintf(buf + used, size - used, "%s%.9g", sep, korch_tensor_get_f64(t, i));
            break;
        case KORCH_DTYPE_UINT64:
            used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, sep, ((const uint64_t *)t->data)[i]);
            break;
        case KORCH_DTYPE_BOOL:
            used += (size_t)snprintf(buf + used, size - used, "%s%s", sep,
                                     ((const uint8_t *)t->data)[i] ? "true" : "false");
            break;
        default:
            used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, sep, korch_tensor_get_i64(t, i));
            break;
        }
    }
    if (n != 1 && used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* A fresh value name "<base>__specialized" (or with a number when taken). */
static int new_constant_value(korch_graph *g, const char *base) {
    size_t len = strlen(base) + 40;
    char *name = malloc(len);
    if (!name) return -1;
    snprintf(name, len, "%s__specialized", base);
    for (int k = 2; korch_graph_find_value(g, name) >= 0; k++) snprintf(name, len, "%s__specialized%d", base, k);
    int v = korch_graph_intern_value(g, name);
    free(name);
    return v;
}

/* The value input `i` is specialized to, from a tensor or a literal. */
static korch_status resolve_value(const korch_graph *g, int i, const korch_input_value *spec, korch_tensor *out) {
    const korch_value *val = &g->values[g->inputs[i]];
    char vbuf[160], a[96], b[96];
    korch_printable(val->name, vbuf, sizeof vbuf);
    if (spec->value) {
        if (spec->value->dtype != val->dtype)
            return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                               "--specialize %s: the value is %s, but graph input \"%s\" is %s", vbuf,
                               korch_dtype_name(spec->value->dtype), vbuf, korch_dtype_name(val->dtype));
        if (!korch_shape_equal(&spec->value->shape, &val->shape))
            return korch_error(KORCH_ERR_SHAPE, "--specialize %s: the value has shape %s, but graph input \"%s\" has %s",
                               vbuf, korch_shape_format(&spec->value->shape, a, sizeof a), vbuf,
                               korch_shape_format(&val->shape, b, sizeof b));
        if (korch_tensor_bytes(spec->value) > KORCH_SPECIALIZE_MAX_BYTES)
            return korch_error(KORCH_ERR_UNSUPPORTED,
                               "--specialize %s: the value takes %zu bytes; korch specializes inputs of at most %d "
                               "bytes (a plan stores the value and compares it on every run)",
                               vbuf, korch_tensor_bytes(spec->value), KORCH_SPECIALIZE_MAX_BYTES);
        return korch_tensor_clone(spec->value, out);
    }
    if (korch_shape_numel(&val->shape) != 1)
        return korch_error(KORCH_ERR_SHAPE,
                           "--specialize %s=%s: graph input \"%s\" has shape %s, and a literal gives one value; give "
                           "a .npy or .pb file",
                           vbuf, spec->literal, vbuf, korch_shape_format(&val->shape, a, sizeof a));
    KORCH_TRY(korch_tensor_alloc(out, val->dtype, &val->shape));
    if (!parse_literal(spec->literal, val->dtype, out->data)) {
        korch_tensor_free(out);
        return korch_error(KORCH_ERR_INVALID_ARGUMENT,
                           "--specialize %s=%s: \"%s\" is not a valid %s value (graph input \"%s\" is %s)", vbuf,
                           spec->literal, spec->literal, korch_dtype_name(val->dtype), vbuf,
                           korch_dtype_name(val->dtype));
    }
    return KORCH_OK;
}

/* Records the value of input i and points its readers at a constant copy. */
static korch_status specialize_input(korch_graph *g, int i, const korch_input_value *spec) {
    if (!g->specialized) {
        g->specialized = calloc((size_t)g->n_inputs + 1, sizeof *g->specialized);
        if (!g->specialized) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    KORCH_TRY(resolve_value(g, i, spec, &g->specialized[i]));
    int input = g->inputs[i];
    char *base = strdup(g->values[input].name);
    int c = base ? new_constant_value(g, base) : -1;
    free(base);
    if (c < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_value *cv = &g->values[c]; /* after interning: g->values may have moved */
    KORCH_TRY(korch_tensor_clone(&g->specialized[i], &cv->constant));
    cv->is_constant = true;
    cv->dtype = cv->constant.dtype;
    cv->shape = cv->constant.shape;
    cv->has_shape = true;
    cv->producer = -1;
    /* every reader, implicit inputs (a subgraph's capture) included */
    for (int ni = 0; ni < g->n_nodes; ni++) {
        korch_node *n = &g->nodes[ni];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == input) n->inputs[k] = c;
    }
    return KORCH_OK;
}

korch_status korch_graph_infer_specialized(korch_graph *g, const korch_input_shape *overrides, int n_overrides,
                                           const korch_input_value *values, int n_values) {
    char vbuf[160], names[512];
    int *slot = calloc((size_t)n_values + 1, sizeof *slot);
    korch_input_shape *all = calloc((size_t)n_overrides + (size_t)n_values + 1, sizeof *all);
    korch_status st = slot && all ? KORCH_OK : korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int n_all = n_overrides;
    if (st == KORCH_OK && n_overrides) memcpy(all, overrides, (size_t)n_overrides * sizeof *all);
    for (int k = 0; k < n_values && st == KORCH_OK; k++) {
        korch_printable(values[k].name, vbuf, sizeof vbuf);
        slot[k] = -1;
        for (int i = 0; i < g->n_inputs; i++)
            if (strcmp(g->values[g->inputs[i]].name, values[k].name) == 0) slot[k] = i;
        if (slot[k] < 0) {
            /* the model's inputs, for the message */
            size_t used = 0;
            names[0] = '\0';
            for (int i = 0; i < g->n_inputs && used + 80 < sizeof names; i++) {
                char nb[64];
                used += (size_t)snprintf(names + used, sizeof names - used, "%s\"%s\"", i ? ", " : "",
                                         korch_printable(g->values[g->inputs[i]].name, nb, sizeof nb));
            }
            st = korch_error(KORCH_ERR_INVALID_ARGUMENT,
                             "--specialize names \"%s\", which is not a graph input (the model's inputs: %s)", vbuf,
                             g->n_inputs ? names : "none");
            break;
        }
        for (int j = 0; j < k; j++)
            if (slot[j] == slot[k])
                st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "--specialize %s is given twice", vbuf);
        if (!values[k].value && !values[k].literal)
            st = korch_error(KORCH_ERR_INVALID_ARGUMENT, "--specialize %s: no value", vbuf);
        /* a file's shape fixes the input's shape unless --input-shape does */
        bool shaped = false;
        for (int o = 0; o < n_overrides; o++) shaped |= strcmp(overrides[o].name, values[k].name) == 0;
        if (values[k].value && !shaped)
            all[n_all++] = (korch_input_shape){.name = values[k].name, .shape = values[k].value->shape};
    }
    /* as korch_graph_infer: half-precision values widened first (docs/precision.md) */
    if (st == KORCH_OK) st = korch_graph_widen_half(g);
    if (st == KORCH_OK) st = korch_graph_infer_bind(g, all, n_all);
    for (int k = 0; k < n_values && st == KORCH_OK; k++) st = specialize_input(g, slot[k], &values[k]);
    if (st == KORCH_OK) st = korch_graph_infer_nodes(g);
    free(slot);
    free(all);
    return st;
}

korch_status korch_frontend_load_specialized(const char *path, const korch_input_shape *overrides, int n_overrides,
                                             const korch_input_value *values, int n_values, korch_graph **out) {
    korch_graph *g = NULL;
    KORCH_TRY(korch_onnx_load_file(path, &g));
    korch_status st = korch_graph_validate(g);
    if (st == KORCH_OK) st = korch_graph_infer_specialized(g, overrides, n_overrides, values, n_values);
    if (st != KORCH_OK) {
        korch_graph_free(g);
        return st;
    }
    *out = g;
    return KORCH_OK;
}
