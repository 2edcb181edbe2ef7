#include "ir/pgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int korch_ew_arity(korch_ew_op op) {
    static const int arity[] = {
#define KORCH_EW_ARITY(name, n) n,
        KORCH_EW_LIST(KORCH_EW_ARITY)
#undef KORCH_EW_ARITY
    };
    _Static_assert(sizeof arity / sizeof arity[0] == KORCH_EW_COUNT, "elementwise arity table out of step");
    return (unsigned)op < KORCH_EW_COUNT ? arity[op] : 0;
}

const char *korch_ew_name(korch_ew_op op) {
    static const char *const names[] = {
#define KORCH_EW_NAME(name, n) #name,
        KORCH_EW_LIST(KORCH_EW_NAME)
#undef KORCH_EW_NAME
    };
    _Static_assert(sizeof names / sizeof names[0] == KORCH_EW_COUNT, "elementwise name table out of step");
    return (unsigned)op < KORCH_EW_COUNT ? names[op] : "?";
}

korch_status korch_pgraph_create(const korch_graph *source, korch_pgraph **out) {
    korch_pgraph *pg = calloc(1, sizeof *pg);
    if (!pg) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate primitive graph");
    pg->source = source;
    *out = pg;
    return KORCH_OK;
}

static void free_layout(korch_prim_layout *l) {
    for (int p = 0; p < l->n_maps; p++)
        for (int k = 0; k < KORCH_MAX_RANK; k++) free(l->maps[p].terms[k].table);
    free(l->maps);
    l->maps = NULL;
    l->n_maps = 0;
}

void korch_pgraph_free(korch_pgraph *pg) {
    if (!pg) return;
    for (int i = 0; i < pg->n_values; i++) korch_tensor_free(&pg->values[i].constant);
    for (int i = 0; i < pg->n_nodes; i++)
        if (pg->nodes[i].kind == KORCH_PRIM_LAYOUT) free_layout(&pg->nodes[i].u.layout);
    free(pg->values);
    free(pg->nodes);
    free(pg->inputs);
    free(pg->outputs);
    free(pg);
}

static int push_value(korch_pgraph *pg) {
    if (pg->n_values == pg->cap_values) {
        int cap = pg->cap_values ? pg->cap_values * 2 : 64;
        korch_pvalue *v = realloc(pg->values, (size_t)cap * sizeof *v);
        if (!v) return -1;
        pg->values = v;
        pg->cap_values = cap;
    }
    korch_pvalue *v = &pg->values[pg->n_values];
    memset(v, 0, sizeof *v);
    v->producer = -1;
    v->graph_input = -1;
    v->graph_output = -1;
    v->source_value = -1;
    return pg->n_values++;
}

int korch_pgraph_add_value(korch_pgraph *pg, korch_dtype dtype, const korch_shape *shape) {
    const korch_shape copy = *shape; /* `shape` may point into the array push_value moves */
    shape = &copy;
    int v = push_value(pg);
    if (v < 0) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "primitive graph: out of memory");
        return -1;
    }
    pg->values[v].dtype = dtype;
    pg->values[v].shape = *shape;
    return v;
}

int korch_pgraph_add_input(korch_pgraph *pg, korch_dtype dtype, const korch_shape *shape) {
    int v = korch_pgraph_add_value(pg, dtype, shape);
    if (v < 0) return -1;
    int *grown = realloc(pg->inputs, (size_t)(pg->n_inputs + 1) * sizeof *grown);
    if (!grown) {
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "primitive graph: out of memory");
        return -1;
    }
    pg->inputs = grown;
    pg->values[v].graph_input = pg->n_inputs;
    pg->inputs[pg->n_inputs++] = v;
    return v;
}

korch_status korch_pgraph_add_output(korch_pgraph *pg, int v) {
    int *grown = realloc(pg->outputs, (size_t)(pg->n_outputs + 1) * sizeof *grown);
    if (!grown) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "primitive graph: out of memory");
    pg->outputs = grown;
    pg->values[v].graph_output = pg->n_outputs;
    pg->outputs[pg->n_outputs++] = v;
    return KORCH_OK;
}

int korch_pgraph_add_constant(korch_pgraph *pg, korch_tensor *t) {
    int v = korch_pgraph_add_value(pg, t->dtype, &t->shape);
    if (v < 0) return -1;
    pg->values[v].is_constant = true;
    pg->values[v].constant = *t;
    t->owns_data = false;
    if (!pg->values[v].constant.owns_data) {
        /* caller's data was borrowed: copy so the pgraph owns its constants */
        korch_tensor copy;
        if (korch_tensor_clone(t, &copy) != KORCH_OK) return -1;
        pg->values[v].constant = copy;
    }
    return v;
}

int korch_pgraph_add_scalar(korch_pgraph *pg, float value) {
    korch_tensor t;
    korch_shape scalar = {0};
    if (korch_tensor_alloc(&t, KORCH_DTYPE_FLOAT32, &scalar) != KORCH_OK) return -1;
    *(float *)t.data = value;
    return korch_pgraph_add_constant(pg, &t);
}

static int push_node(korch_pgraph *pg, korch_prim_kind kind, int n, const int *inputs) {
    if (n < 0 || n > KORCH_MAX_RANK) {
        korch_error(KORCH_ERR_INTERNAL, "primitive with %d inputs", n);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (inputs[i] < 0 || inputs[i] >= pg->n_values) {
            korch_error(KORCH_ERR_INTERNAL, "primitive input %d refers to value %d", i, inputs[i]);
            return -1;
        }
    if (pg->n_nodes == pg->cap_nodes) {
        int cap = pg->cap_nodes ? pg->cap_nodes * 2 : 64;
        korch_pnode *nodes = realloc(pg->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            korch_error(KORCH_ERR_OUT_OF_MEMORY, "primitive graph: out of memory");
            return -1;
        }
        pg->nodes = nodes;
        pg->cap_nodes = cap;
    }
    korch_pnode *node = &pg->nodes[pg->n_nodes];
    memset(node, 0, sizeof *node);
    node->kind = kind;
    node->n_inputs = n;
    for (int i = 0; i < n; i++) node->inputs[i] = inputs[i];
    node->source_node = -1;
    return pg->n_nodes++;
}

/* Adds the single output value of node `ni`; returns the value index. */
static int attach_output(korch_pgraph *pg, int ni, korch_dtype dtype, const korch_shape *shape) {
    int v = korch_pgraph_add_value(pg, dtype, shape);
    if (v < 0) return -1;
    pg->values[v].producer = ni;
    pg->nodes[ni].n_outputs = 1;
    pg->nodes[ni].outputs[0] = v;
    return v;
}

static bool ew_is_comparison(korch_ew_op op) {
    return op == KORCH_EW_EQUAL || op == KORCH_EW_LESS || op == KORCH_EW_LESS_EQUAL || op == KORCH_EW_GREATER ||
           op == KORCH_EW_GREATER_EQUAL;
}

int korch_pgraph_elementwise(korch_pgraph *pg, korch_ew_op op, int n, const int *inputs, float alpha, float beta,
                             korch_dtype cast_to) {
    if (korch_ew_arity(op) != n) {
        korch_error(KORCH_ERR_INTERNAL, "elementwise %s takes %d inputs, got %d", korch_ew_name(op), korch_ew_arity(op), n);
        return -1;
    }
    korch_shape shape = {0};
    for (int i = 0; i < n; i++) {
        if (inputs[i] < 0 || inputs[i] >= pg->n_values) {
            korch_error(KORCH_ERR_INTERNAL, "elementwise %s: bad input value %d", korch_ew_name(op), inputs[i]);
            return -1;
        }
        korch_shape next;
        if (!korch_shape_broadcast(&shape, &pg->values[inputs[i]].shape, &next)) {
            char a[96], b[96];
            korch_error(KORCH_ERR_SHAPE, "elementwise %s: shapes %s and %s do not broadcast", korch_ew_name(op),
                        korch_shape_format(&shape, a, sizeof a),
                        korch_shape_format(&pg->values[inputs[i]].shape, b, sizeof b));
            return -1;
        }
        shape = next;
    }
    korch_dtype dtype = pg->values[inputs[n - 1]].dtype; /* WHERE: the value operands */
    if (op == KORCH_EW_CAST) dtype = cast_to;
    else if (ew_is_comparison(op) || op == KORCH_EW_NOT || op == KORCH_EW_AND || op == KORCH_EW_OR)
        dtype = KORCH_DTYPE_BOOL;
    int ni = push_node(pg, KORCH_PRIM_ELEMENTWISE, n, inputs);
    if (ni < 0) return -1;
    pg->nodes[ni].u.ew = (korch_prim_elementwise){.op = op, .alpha = alpha, .beta = beta};
    return attach_output(pg, ni, dtype, &shape);
}

int korch_pgraph_reduce(korch_pgraph *pg, korch_reduce_op op, int x, uint32_t axes, bool keepdims) {
    if (x < 0 || x >= pg->n_values) {
        korch_error(KORCH_ERR_INTERNAL, "reduce: bad input value %d", x);
        return -1;
    }
    const korch_shape *in = &pg->values[x].shape;
    if (in->rank < 32 && (axes >> in->rank) != 0) {
        korch_error(KORCH_ERR_INTERNAL, "reduce: axes mask 0x%x exceeds rank %d", axes, in->rank);
        return -1;
    }
    korch_shape out = {0};
    for (int k = 0; k < in->rank; k++) {
        if (axes & (1u << k)) {
            if (keepdims) out.dims[out.rank++] = 1;
        } else {
            out.dims[out.rank++] = in->dims[k];
        }
    }
    int ni = push_node(pg, KORCH_PRIM_REDUCE, 1, &x);
    if (ni < 0) return -1;
    pg->nodes[ni].u.reduce = (korch_prim_reduce){.op = op, .axes = axes, .keepdims = keepdims};
    return attach_output(pg, ni, pg->values[x].dtype, &out);
}

int korch_pgraph_layout(korch_pgraph *pg, korch_layout_tag tag, int n, const int *inputs, const korch_shape *out_shape,
                        const korch_index_map *maps, double pad_value) {
    korch_dtype dtype = n > 0 ? pg->values[inputs[0]].dtype : KORCH_DTYPE_UNDEFINED;
    for (int p = 0; p < n; p++) {
        if (inputs[p] < 0 || inputs[p] >= pg->n_values || pg->values[inputs[p]].dtype != dtype ||
            maps[p].input_rank != pg->values[inputs[p]].shape.rank) {
            korch_error(KORCH_ERR_INTERNAL, "layout: input %d does not match its index map", p);
            return -1;
        }
        for (int k = 0; k < maps[p].input_rank; k++)
            if (maps[p].terms[k].div < 1 || maps[p].terms[k].mod < 0) {
                korch_error(KORCH_ERR_INTERNAL, "layout: input %d term %d has div %lld mod %lld", p, k,
                            (long long)maps[p].terms[k].div, (long long)maps[p].terms[k].mod);
                return -1;
            }
    }
    int ni = push_node(pg, KORCH_PRIM_LAYOUT, n, inputs);
    if (ni < 0) return -1;
    korch_prim_layout *l = &pg->nodes[ni].u.layout;
    memset(l, 0, sizeof *l);
    l->tag = tag;
    l->pad_value = pad_value;
    l->maps = calloc((size_t)(n ? n : 1), sizeof *l->maps);
    if (!l->maps) {
        pg->nodes[ni].dead = true;
        korch_error(KORCH_ERR_OUT_OF_MEMORY, "layout: out of memory");
        return -1;
    }
    memcpy(l->maps, maps, (size_t)n * sizeof *maps);
    l->n_maps = n;
    return attach_output(pg, ni, dtype, out_shape);
}

int korch_pgraph_linear(korch_pgraph *pg, const korch_prim_linear *params, int x, int w) {
    int ins[2] = {x, w};
    if (x < 0 || w < 0 || x >= pg->n_values || w >= pg->n_values) {
        korch_error(KORCH_ERR_INTERNAL, "linear: bad operands");
        return -1;
    }
    const korch_shape *a = &pg->values[x].shape, *b = &pg->values[w].shape;
    korch_shape out = {0};
    char sa[96], sb[96];
    if (params->op == KORCH_LINEAR_MATMUL) {
        if (a->rank < 2 || b->rank < 2 || a->dims[a->rank - 1] != b->dims[b->rank - 2]) {
            korch_error(KORCH_ERR_SHAPE, "matmul: shapes %s and %s do not multiply (operands must be rank >= 2)",
                        korch_shape_format(a, sa, sizeof sa), korch_shape_format(b, sb, sizeof sb));
            return -1;
        }
        korch_shape ba = *a, bb = *b, batch;
        ba.rank -= 2;
        bb.rank -= 2;
        if (!korch_shape_broadcast(&ba, &bb, &batch)) {
            korch_error(KORCH_ERR_SHAPE, "matmul: batch dimensions of %s and %s do not broadcast",
                        korch_shape_format(a, sa, sizeof sa), korch_shape_format(b, sb, sizeof sb));
            return -1;
        }
        out = batch;
        out.dims[out.rank++] = a->dims[a->rank - 2];
        out.dims[out.rank++] = b->dims[b->rank - 1];
    } else {
        int s = params->spatial;
        if (s < 1 || s > 3 || a->rank != s + 2 || b->rank != s + 2 || params->group < 1) {
            korch_error(KORCH_ERR_SHAPE, "convolution: bad operand ranks %s, %s", korch_shape_format(a, sa, sizeof sa),
                        korch_shape_format(b, sb, sizeof sb));
            return -1;
        }
        out.rank = s + 2;
        out.dims[0] = a->dims[0];
        /* channel axis and first spatial axis of input and output */
        int c_axis = params->channels_last ? s + 1 : 1, sp0 = params->channels_last ? 1 : 2;
        bool transpose = params->op == KORCH_LINEAR_CONV_TRANSPOSE;
        out.dims[c_axis] = transpose ? b->dims[1] * params->group : b->dims[0];
        int64_t in_channels = transpose ? b->dims[0] : b->dims[1] * params->group;
        if (a->dims[c_axis] != in_channels) {
            korch_error(KORCH_ERR_SHAPE, "convolution: input %s has %lld channels, weight %s expects %lld",
                        korch_shape_format(a, sa, sizeof sa), (long long)a->dims[c_axis],
                        korch_shape_format(b, sb, sizeof sb), (long long)in_channels);
            return -1;
        }
        for (int d = 0; d < s; d++) {
            int64_t k = (b->dims[2 + d] - 1) * params->dilations[d] + 1;
            int64_t o;
            if (!transpose)
                o = (a->dims[sp0 + d] + params->pads_begin[d] + params->pads_end[d] - k) / params->strides[d] + 1;
            else
                o = params->strides[d] * (a->dims[sp0 + d] - 1) + params->output_padding[d] + k -
                    params->pads_begin[d] - params->pads_end[d];
            if (o < 1) {
                korch_error(KORCH_ERR_SHAPE, "convolution: spatial dimension %d is empty", d);
                return -1;
            }
            out.dims[sp0 + d] = o;
        }
    }
    korch_dtype tx = pg->values[x].dtype, tw = pg->values[w].dtype;
    bool integer = korch_dtype_is_imatmul_operand(tx) || korch_dtype_is_imatmul_operand(tw);
    if (integer && (params->op == KORCH_LINEAR_CONV_TRANSPOSE || !korch_dtype_is_imatmul_operand(tx) ||
                    !korch_dtype_is_imatmul_operand(tw) || params->bf16)) {
        korch_error(KORCH_ERR_UNSUPPORTED, "linear: integer operands (%s, %s) make only a matmul or a "
                                           "convolution of two integer operands", korch_dtype_name(tx),
                    korch_dtype_name(tw));
        return -1;
    }
    int ni = push_node(pg, KORCH_PRIM_LINEAR, 2, ins);
    if (ni < 0) return -1;
    pg->nodes[ni].u.linear = *params;
    /* a bf16 primitive's operand may be stored in bfloat16 (a precision
     * cast's output); its sums, and so its output, are float32. An integer
     * matmul sums exactly into int32. */
    korch_dtype dtype = integer ? KORCH_DTYPE_INT32 : tx == KORCH_DTYPE_BFLOAT16 ? KORCH_DTYPE_FLOAT32 : tx;
    return attach_output(pg, ni, dtype, &out);
}

bool korch_pnode_is_integer_linear(const korch_pgraph *pg, const korch_pnode *n) {
    return !n->dead && n->kind == KORCH_PRIM_LINEAR && n->n_inputs == 2 &&
           korch_dtype_is_imatmul_operand(pg->values[n->inputs[0]].dtype) &&
           korch_dtype_is_imatmul_operand(pg->values[n->inputs[1]].dtype) &&
           pg->values[n->outputs[0]].dtype == KORCH_DTYPE_INT32;
}

bool korch_pnode_is_integer_matmul(const korch_pgraph *pg, const korch_pnode *n) {
    return korch_pnode_is_integer_linear(pg, n) && n->u.linear.op == KORCH_LINEAR_MATMUL;
}

int korch_opaque_input(const korch_pgraph *pg, const korch_pnode *n, int k, const korch_tensor **constant) {
    const korch_node *src = &pg->source->nodes[n->u.opaque.source_node];
    if (constant) *constant = NULL;
    if (k < 0 || k >= src->n_inputs || src->inputs[k] < 0) return -1;
    if (k < 32 && (n->u.opaque.from_source >> k) & 1u) {
        if (constant) *constant = &pg->source->values[src->inputs[k]].constant;
        return -1;
    }
    int j = 0;
    for (int i = 0; i < k; i++) j += src->inputs[i] >= 0 && !(i < 32 && (n->u.opaque.from_source >> i) & 1u);
    return j < n->n_inputs ? j : -1;
}

/* Whether an op-graph value is read by a live node or is a graph output. */
static bool value_read(const korch_graph *g, int v) {
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] == v) return true;
    }
    return false;
}

/* Output 0 always has a value when present (code that looks at a node's
 * first output does not expect an opaque one to lack it). */
static bool opaque_output_live(const korch_graph *g, const korch_node *sn, int k, bool read_only) {
    return sn->outputs[k] >= 0 && (!read_only || k == 0 || value_read(g, sn->outputs[k]));
}

int korch_opaque_live_outputs(const korch_graph *g, int source_node) {
    const korch_node *sn = &g->nodes[source_node];
    bool read_only = sn->n_outputs > KORCH_PNODE_MAX_LIVE_OUTPUTS;
    int live = 0;
    for (int k = 0; k < sn->n_outputs; k++) live += opaque_output_live(g, sn, k, read_only);
    return live;
}

int korch_pgraph_opaque(korch_pgraph *pg, int source_node, int n, const int *inputs) {
    const korch_graph *g = pg->source;
    if (!g || source_node < 0 || source_node >= g->n_nodes) {
        korch_error(KORCH_ERR_INTERNAL, "opaque: bad source node %d", source_node);
        return -1;
    }
    const korch_node *sn = &g->nodes[source_node];
    if (sn->n_outputs > KORCH_PNODE_MAX_OUTPUTS) {
        char nbuf[160];
        korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s) has %d outputs; an opaque primitive holds at most %d",
                    korch_printable(sn->name, nbuf, sizeof nbuf), sn->op_type, sn->n_outputs, KORCH_PNODE_MAX_OUTPUTS);
        return -1;
    }
    /* more outputs than a kernel's interface holds per node: values for the
     * ones something reads only (the same answer wherever it is asked: the
     * op graph decides) */
    bool read_only = sn->n_outputs > KORCH_PNODE_MAX_LIVE_OUTPUTS;
    int live = korch_opaque_live_outputs(g, source_node);
    if (live > KORCH_PNODE_MAX_LIVE_OUTPUTS) {
        char nbuf[160];
        korch_error(KORCH_ERR_UNSUPPORTED, "node \"%s\" (%s): %d of its outputs are read; a primitive holds at most %d",
                    korch_printable(sn->name, nbuf, sizeof nbuf), sn->op_type, live, KORCH_PNODE_MAX_LIVE_OUTPUTS);
        return -1;
    }
    int ni = push_node(pg, KORCH_PRIM_OPAQUE, n, inputs);
    if (ni < 0) return -1;
    pg->nodes[ni].u.opaque.source_node = source_node;
    pg->nodes[ni].source_node = source_node;
    const korch_node *src = &g->nodes[source_node];
    pg->nodes[ni].n_outputs = src->n_outputs;
    for (int k = 0; k < src->n_outputs; k++) {
        pg->nodes[ni].outputs[k] = -1;
        if (!opaque_output_live(g, src, k, read_only)) continue;
        const korch_value *sv = &g->values[src->outputs[k]];
        int v = korch_pgraph_add_value(pg, sv->dtype, &sv->shape);
        if (v < 0) return -1;
        pg->values[v].producer = ni;
        pg->values[v].source_value = src->outputs[k];
        pg->nodes[ni].outputs[k] = v;
    }
    return ni;
}

bool korch_index_map_eval(const korch_index_map *map, const korch_shape *input_shape, const int64_t *o,
                          int64_t *in_coords) {
    bool in_bounds = true;
    for (int k = 0; k < map->input_rank; k++) {
        const korch_index_term *t = &map->terms[k];
        int64_t v = t->offset;
        for (int j = 0; j < KORCH_MAX_RANK; j++) v += t->coef[j] * o[j];
        if (t->div > 1) v = v >= 0 ? v / t->div : -((-v + t->div - 1) / t->div); /* floor */
        if (t->mod > 0) v = ((v % t->mod) + t->mod) % t->mod;
        if (t->table) {
            if (v < 0 || v >= t->table_size) {
                in_bounds = false;
                v = 0;
            } else {
                v = t->table[v];
            }
        }
        if (v < 0 || v >= input_shape->dims[k]) in_bounds = false;
        in_coords[k] = v;
    }
    return in_bounds;
}

korch_status korch_pgraph_toposort(const korch_pgraph *pg, int *order, int *count) {
    /* Depth-first over producers with an explicit stack (graphs can be deep). */
    unsigned char *state = calloc((size_t)pg->n_nodes + 1, 1); /* 0 new, 1 open, 2 done */
    int *stack = malloc(((size_t)pg->n_nodes + 1) * 2 * sizeof *stack);
    if (!state || !stack) {
        free(state);
        free(stack);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "toposort: out of memory");
    }
    int written = 0;
    korch_status st = KORCH_OK;
    for (int root = 0; root < pg->n_nodes && st == KORCH_OK; root++) {
        if (pg->nodes[root].dead || state[root]) continue;
        int sp = 0;
        stack[sp++] = root;
        stack[sp++] = 0;
        state[root] = 1;
        while (sp > 0 && st == KORCH_OK) {
            int ni = stack[sp - 2], next = stack[sp - 1];
            const korch_pnode *n = &pg->nodes[ni];
            if (next < n->n_inputs) {
                stack[sp - 1]++;
                int p = pg->values[n->inputs[next]].producer;
                if (p < 0 || pg->nodes[p].dead || state[p] == 2) continue;
                if (state[p] == 1) {
                    st = korch_error(KORCH_ERR_INTERNAL, "primitive graph has a cycle at node %d", p);
                    break;
                }
                state[p] = 1;
                stack[sp++] = p;
                stack[sp++] = 0;
            } else {
                state[ni] = 2;
                order[written++] = ni;
                sp -= 2;
            }
        }
    }
    *count = written;
    free(state);
    free(stack);
    return st;
}

int korch_pgraph_add_constant_ref(korch_pgraph *pg, const korch_tensor *t) {
    int v = korch_pgraph_add_value(pg, t->dtype, &t->shape);
    if (v < 0) return -1;
    pg->values[v].is_constant = true;
    pg->values[v].constant = (korch_tensor){.dtype = t->dtype, .shape = t->shape, .data = t->data, .owns_data = false};
    return v;
}

int korch_pgraph_live_nodes(const korch_pgraph *pg) {
    int live = 0;
    for (int i = 0; i < pg->n_nodes; i++) live += !pg->nodes[i].dead;
    return live;
}

const char *korch_prim_kind_name(korch_prim_kind kind) {
    static const char *const names[] = {"elementwise", "reduce", "layout", "linear", "opaque"};
    _Static_assert(sizeof names / sizeof names[0] == KORCH_PRIM_KIND_COUNT, "primitive kind names out of step");
    return (unsigned)kind < KORCH_PRIM_KIND_COUNT ? names[kind] : "?";
}

const char *korch_reduce_op_name(korch_reduce_op op) {
    static const char *const names[] = {"sum", "max", "min", "mean"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

korch_status korch_pgraph_compact(korch_pgraph *pg) {
    int *vnew = malloc(((size_t)pg->n_values + 1) * sizeof *vnew);
    int *nnew = malloc(((size_t)pg->n_nodes + 1) * sizeof *nnew);
    if (!vnew || !nnew) {
        free(vnew);
        free(nnew);
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "primitive graph: out of memory");
    }
    /* a value survives when a live node reads or writes it, or it is a graph input/output */
    for (int v = 0; v < pg->n_values; v++) vnew[v] = -1;
    for (int i = 0; i < pg->n_inputs; i++) vnew[pg->inputs[i]] = 0;
    for (int i = 0; i < pg->n_outputs; i++) vnew[pg->outputs[i]] = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        const korch_pnode *n = &pg->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) vnew[n->inputs[k]] = 0;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) vnew[n->outputs[k]] = 0;
    }
    int nv = 0;
    for (int v = 0; v < pg->n_values; v++) {
        if (vnew[v] < 0) {
            korch_tensor_free(&pg->values[v].constant);
            continue;
        }
        vnew[v] = nv;
        pg->values[nv++] = pg->values[v];
    }
    pg->n_values = nv;
    int nn = 0;
    for (int i = 0; i < pg->n_nodes; i++) {
        if (pg->nodes[i].dead) {
            if (pg->nodes[i].kind == KORCH_PRIM_LAYOUT) free_layout(&pg->nodes[i].u.layout);
            nnew[i] = -1;
            continue;
        }
        nnew[i] = nn;
        pg->nodes[nn++] = pg->nodes[i];
    }
    pg->n_nodes = nn;
    for (int i = 0; i < nn; i++) {
        korch_pnode *n = &pg->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) n->inputs[k] = vnew[n->inputs[k]];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) n->outputs[k] = vnew[n->outputs[k]];
    }
    for (int v = 0; v < nv; v++) {
        korch_pvalue *pv = &pg->values[v];
        /* a producer that died leaves a value nobody computes; only constants and inputs may lack one */
        pv->producer = pv->producer >= 0 ? nnew[pv->producer] : -1;
    }
    for (int i = 0; i < pg->n_inputs; i++) pg->inputs[i] = vnew[pg->inputs[i]];
    for (int i = 0; i < pg->n_outputs; i++) pg->outputs[i] = vnew[pg->outputs[i]];
    free(vnew);
    free(nnew);
    return KORCH_OK;
}
