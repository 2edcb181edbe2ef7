/* float16 and bfloat16 models computed in float32 (docs/precision.md).
 *
 * korch's operators, primitives and kernels compute in float32. A model that
 * stores its tensors in a 16-bit float format is rewritten before inference
 * so that only its edges and its own Casts see the 16-bit dtype:
 *
 *  - half initializers, Constant and ConstantOfShape values become float32
 *    (exact), and a `dtype` attribute naming a half type names float32;
 *  - a half value that stays half (a graph input, the output of a Cast to a
 *    half type) is read by the rest of the graph through one new
 *    Cast(to=float32): "x" feeds "x::float32" (Cast nodes keep reading the
 *    half value: they convert from any dtype);
 *  - a graph output declared half whose producer is not already a Cast to
 *    that type is computed in float32 under a new name and rounded into the
 *    output by a new Cast;
 *  - CastLike to a half-typed target becomes the Cast it means, when the
 *    target's type is known before inference (an input, an initializer, a
 *    Cast's output); otherwise it casts to float32 and does not round.
 *
 * So a model's declared input and output dtypes stay as they are, rounding
 * to the 16-bit format happens where the model says (its Casts, its
 * outputs), and values between operators keep float32 precision instead of
 * being rounded after every node: results are at least as accurate as the
 * model's arithmetic and differ from a runtime that rounds after every
 * operator by the rounding it skips (docs/precision.md measures it).
 *
 * The rewrite is idempotent: run on its own output it finds nothing to do
 * (an input whose only readers are Casts is left alone; an output made by a
 * Cast to its type is left alone), so korch_graph_infer can run it on any
 * graph. Subgraphs (If, Loop, Scan bodies) are not rewritten: a half value
 * inside one reaches an operator that names the node and the dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "frontend/frontend.h"
#include "ops/op.h"

/* Appends Cast(in) -> out with to=`to`; returns the node index or -1. */
static int add_cast(korch_graph *g, int in, int out, korch_dtype to) {
    char name[64];
    int ni = korch_graph_add_node(g);
    if (ni < 0) return -1;
    korch_node *n = &g->nodes[ni];
    snprintf(name, sizeof name, "korch_%s_cast_%d", korch_dtype_name(to), ni);
    n->name = strdup(name);
    n->op_type = strdup("Cast");
    n->domain = strdup("");
    n->inputs = malloc(sizeof *n->inputs);
    n->outputs = malloc(sizeof *n->outputs);
    n->attrs = calloc(1, sizeof *n->attrs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs) return -1;
    n->attrs[0].name = strdup("to");
    if (!n->attrs[0].name) return -1;
    n->attrs[0].type = KORCH_ATTR_INT;
    n->attrs[0].i = (int64_t)to;
    n->n_attrs = 1;
    int64_t opset = korch_graph_opset(g, "");
    n->opset = opset < 6 ? 6 : (int)opset; /* Cast-6 and later take `to` as a number */
    n->def = korch_op_find("Cast");
    n->n_inputs = 1;
    n->inputs[0] = in;
    n->n_outputs = 1;
    n->outputs[0] = out;
    g->values[out].producer = ni;
    return ni;
}

/* The dtype a Cast node converts to, or UNDEFINED (Cast-1..5 name it with a string). */
static korch_dtype cast_to(const korch_node *n) {
    if (n->dead || strcmp(n->op_type, "Cast") != 0 || n->domain[0]) return KORCH_DTYPE_UNDEFINED;
    const korch_attr *a = korch_node_attr(n, "to");
    if (!a) return KORCH_DTYPE_UNDEFINED;
    if (a->type == KORCH_ATTR_INT) return a->i > 0 && a->i < 64 ? (korch_dtype)a->i : KORCH_DTYPE_UNDEFINED;
    if (a->type == KORCH_ATTR_STRING && a->s) {
        if (strcmp(a->s, "FLOAT16") == 0) return KORCH_DTYPE_FLOAT16;
        if (strcmp(a->s, "BFLOAT16") == 0) return KORCH_DTYPE_BFLOAT16;
        if (strcmp(a->s, "FLOAT") == 0) return KORCH_DTYPE_FLOAT32;
    }
    return KORCH_DTYPE_UNDEFINED;
}

static bool is_cast(const korch_node *n) { return !n->dead && strcmp(n->op_type, "Cast") == 0 && !n->domain[0]; }

/* The dtype of value v as the model gives it before inference, or UNDEFINED. */
static korch_dtype known_dtype(const korch_graph *g, int v) {
    const korch_value *val = &g->values[v];
    if (val->is_constant) return val->constant.dtype;
    if (val->declared_dtype != KORCH_DTYPE_UNDEFINED) return val->declared_dtype;
    if (val->producer >= 0) return cast_to(&g->nodes[val->producer]);
    return KORCH_DTYPE_UNDEFINED;
}

/* CastLike(x, target) with a half target of known type -> Cast(x, to=half). */
static korch_status castlike_to_cast(korch_graph *g, korch_node *n) {
    if (n->n_inputs < 2 || n->inputs[1] < 0) return KORCH_OK;
    korch_dtype to = known_dtype(g, n->inputs[1]);
    if (!korch_dtype_is_half(to)) return KORCH_OK;
    korch_attr *attrs = realloc(n->attrs, ((size_t)n->n_attrs + 1) * sizeof *attrs);
    if (!attrs) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    n->attrs = attrs;
    korch_attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = strdup("to");
    char *op = strdup("Cast");
    if (!a->name || !op) {
        free(a->name);
        free(op);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    a->type = KORCH_ATTR_INT;
    a->i = (int64_t)to;
    n->n_attrs++;
    free(n->op_type);
    n->op_type = op;
    n->def = korch_op_find("Cast");
    n->n_inputs = 1; /* the target only gave its type */
    return KORCH_OK;
}

/* A half tensor attribute (Constant, ConstantOfShape value) becomes float32. */
static korch_status widen_tensor(korch_tensor *t) {
    if (!t || !korch_dtype_is_half(t->dtype)) return KORCH_OK;
    korch_tensor wide;
    KORCH_TRY(korch_half_convert(t, KORCH_DTYPE_FLOAT32, &wide));
    korch_tensor_free(t);
    *t = wide;
    return KORCH_OK;
}

static korch_status widen_attrs(korch_node *n) {
    for (int k = 0; k < n->n_attrs; k++) {
        korch_attr *a = &n->attrs[k];
        if (a->type == KORCH_ATTR_TENSOR) KORCH_TRY(widen_tensor(a->tensor));
        /* EyeLike, RandomNormal and the like name their output type */
        if (a->type == KORCH_ATTR_INT && strcmp(a->name, "dtype") == 0 && korch_dtype_is_half((korch_dtype)a->i))
            a->i = KORCH_DTYPE_FLOAT32;
    }
    return KORCH_OK;
}

/* Readers of half value h other than Casts read a float32 copy instead. */
static korch_status widen_readers(korch_graph *g, int h) {
    int wide = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        korch_node *n = &g->nodes[i];
        if (n->dead || is_cast(n)) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != h) continue;
            if (wide < 0) {
                char *base = strdup(g->values[h].name);
                if (!base) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
                wide = korch_graph_fresh_value(g, base, "float32");
                free(base);
                if (wide < 0 || add_cast(g, h, wide, KORCH_DTYPE_FLOAT32) < 0)
                    return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
                n = &g->nodes[i]; /* add_cast may have moved the nodes */
            }
            n->inputs[k] = wide;
        }
    }
    return KORCH_OK;
}

/* An output declared half and not made by a Cast to its type: its producer
 * writes a float32 value, which a new Cast rounds into the output. */
static korch_status round_output(korch_graph *g, int y) {
    korch_value *val = &g->values[y];
    korch_dtype want = val->declared_dtype;
    if (!korch_dtype_is_half(want) || val->is_constant || val->producer < 0) return KORCH_OK;
    int p = val->producer;
    if (cast_to(&g->nodes[p]) == want) return KORCH_OK;
    char *base = strdup(val->name);
    if (!base) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    int wide = korch_graph_fresh_value(g, base, "float32");
    free(base);
    if (wide < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    korch_node *pn = &g->nodes[p];
    for (int k = 0; k < pn->n_outputs; k++)
        if (pn->outputs[k] == y) pn->outputs[k] = wide;
    g->values[wide].producer = p;
    /* the other readers of y read the float32 value, as everywhere inside */
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (!g->nodes[i].dead && g->nodes[i].inputs[k] == y) g->nodes[i].inputs[k] = wide;
    if (add_cast(g, wide, y, want) < 0) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "out of memory");
    return KORCH_OK;
}

korch_status korch_graph_widen_half(korch_graph *g) {
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes; i++) {
        korch_node *n = &g->nodes[i];
        if (n->dead || n->domain[0]) continue;
        if (strcmp(n->op_type, "CastLike") == 0) KORCH_TRY(castlike_to_cast(g, n));
        KORCH_TRY(widen_attrs(n));
    }
    /* outputs first: a Cast it adds is a Cast to half like the model's own */
    for (int o = 0; o < g->n_outputs; o++) KORCH_TRY(round_output(g, g->outputs[o]));
    int n_values = g->n_values;
    for (int v = 0; v < n_values; v++) {
        korch_value *val = &g->values[v];
        if (val->is_outer_scope) continue;
        if (val->is_constant) {
            if (!val->is_graph_output) KORCH_TRY(widen_tensor(&g->values[v].constant));
            val = &g->values[v];
            val->dtype = val->constant.dtype;
            if (korch_dtype_is_half(val->declared_dtype) && !val->is_graph_output)
                val->declared_dtype = KORCH_DTYPE_FLOAT32;
            continue;
        }
        bool stays_half = val->is_graph_input && korch_dtype_is_half(val->declared_dtype);
        if (val->producer >= 0 && korch_dtype_is_half(cast_to(&g->nodes[val->producer]))) stays_half = true;
        if (stays_half) {
            KORCH_TRY(widen_readers(g, v));
        } else if (korch_dtype_is_half(val->declared_dtype) && !val->is_graph_output) {
            val->declared_dtype = KORCH_DTYPE_FLOAT32; /* value_info of an interior value */
        }
    }
    return KORCH_OK;
}
