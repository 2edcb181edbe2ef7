/* The generator's building blocks: values, constants, nodes, and the final
 * ModelProto, written with korch's own protobuf-c writer helpers
 * (src/fission/pgraph_onnx_writer.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

void dt_coverage_add(dt_coverage *c, const char *name, long count) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0) {
            c->counts[i] += count;
            return;
        }
    if (c->n == DT_MAX_KINDS) return;
    snprintf(c->names[c->n], sizeof c->names[0], "%s", name);
    c->counts[c->n++] = count;
}

void dt_coverage_merge(dt_coverage *into, const dt_coverage *from) {
    for (int i = 0; i < from->n; i++) dt_coverage_add(into, from->names[i], from->counts[i]);
}

static int by_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

void dt_coverage_print(const dt_coverage *c, FILE *out) {
    const char *names[DT_MAX_KINDS];
    for (int i = 0; i < c->n; i++) names[i] = c->names[i];
    qsort(names, (size_t)c->n, sizeof names[0], by_name);
    for (int i = 0; i < c->n; i++) {
        int k = (int)((const char(*)[32])names[i] - c->names);
        fprintf(out, "  %-28s %8ld%s", c->names[k], c->counts[k], i % 3 == 2 || i == c->n - 1 ? "\n" : "");
    }
}

void dt_cover(dt_gen *g, const char *what) { dt_coverage_add(g->cov, what, 1); }

korch_shape dt_shape(int rank, const int64_t *dims) {
    korch_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
    return s;
}

int64_t dt_numel(const korch_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) n *= s->dims[i];
    return n;
}

int dt_new_val(dt_gen *g, const korch_shape *s, double mag) {
    if (g->n_vals == DT_MAX_VALS) return -1;
    dt_val *v = &g->vals[g->n_vals];
    memset(v, 0, sizeof *v);
    v->name = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "v%d", g->n_vals));
    v->shape = *s;
    v->mag = mag;
    return g->n_vals++;
}

const char *dt_use(dt_gen *g, int v) {
    g->vals[v].uses++;
    return g->vals[v].name;
}

static const char *add_const(dt_gen *g, const korch_shape *s, float *data) {
    /* a Constant node, as torch.onnx writes scalars (drawn first: the
     * features' choice below leaves the main stream as without them) */
    bool as_node = s->rank == 0 && dt_chance(&g->rng, 0.3);
    if (g->features) { /* sometimes stored as float16/bfloat16 and Cast (features only) */
        const char *h = dt_feature_half_const(g, s, data, as_node);
        if (h) return h;
    }
    korch_tensor t = {.dtype = KORCH_DTYPE_FLOAT32, .shape = *s};
    size_t bytes = korch_tensor_bytes(&t);
    t.data = korch_onnx_alloc(&g->w, bytes);
    if (!t.data) return "";
    memcpy(t.data, data, bytes);
    const char *name = korch_onnx_unique(&g->w, korch_onnx_str(&g->w, "c%d", g->w.counter++));
    if (as_node) {
        const char *outs[] = {name};
        Onnx__NodeProto *n = dt_node(g, "Constant", 0, NULL, 1, outs);
        Onnx__AttributeProto *a = korch_onnx_add_attr(&g->w, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
        if (a) a->t = korch_onnx_tensor_proto(&g->w, &t, "value");
        dt_cover(g, "Constant node");
        return name;
    }
    return korch_onnx_add_initializer(&g->w, &t, name);
}

const char *dt_const_data(dt_gen *g, const korch_shape *s, const float *data) {
    int64_t n = dt_numel(s);
    float *copy = malloc(sizeof(float) * (size_t)(n + 1));
    if (!copy) return "";
    memcpy(copy, data, sizeof(float) * (size_t)n);
    const char *name = add_const(g, s, copy);
    free(copy);
    return name;
}

const char *dt_const_rand(dt_gen *g, const korch_shape *s, double lo, double hi) {
    /* reuse: same shape and range, so the guards that chose the range hold */
    if (dt_chance(&g->rng, 0.25))
        for (int i = g->n_consts - 1; i >= 0; i--) {
            const dt_const *c = &g->consts[i];
            if (korch_shape_equal(&c->shape, s) && c->lo == lo && c->hi == hi) {
                dt_cover(g, "constant read twice");
                return c->name;
            }
        }
    int64_t n = dt_numel(s);
    float *data = malloc(sizeof(float) * (size_t)(n + 1));
    if (!data) return "";
    for (int64_t i = 0; i < n; i++) data[i] = (float)dt_unif(&g->rng, lo, hi);
    const char *name = add_const(g, s, data);
    free(data);
    if (g->n_consts < DT_MAX_CONSTS) g->consts[g->n_consts++] = (dt_const){name, *s, lo, hi};
    return name;
}

const char *dt_const_scalar(dt_gen *g, float v) {
    korch_shape s = {0};
    return add_const(g, &s, &v);
}

const char *dt_const_i64(dt_gen *g, const int64_t *v, int n) { return korch_onnx_const_i64(&g->w, v, n); }

Onnx__NodeProto *dt_node(dt_gen *g, const char *op, int n_in, const char *const *ins, int n_out,
                         const char *const *outs) {
    g->w.node_base = op;
    return korch_onnx_node(&g->w, op, n_in, ins, n_out, outs);
}

int dt_unary(dt_gen *g, const char *op, int x, double mag, Onnx__NodeProto **node) {
    korch_shape s = g->vals[x].shape;
    int y = dt_new_val(g, &s, mag);
    if (y < 0) return -1;
    const char *ins[] = {dt_use(g, x)}, *outs[] = {g->vals[y].name};
    Onnx__NodeProto *n = dt_node(g, op, 1, ins, 1, outs);
    if (node) *node = n;
    return y;
}

int dt_binary_named(dt_gen *g, const char *op, const char *a, const char *b, const korch_shape *out, double mag) {
    int y = dt_new_val(g, out, mag);
    if (y < 0) return -1;
    const char *ins[] = {a, b}, *outs[] = {g->vals[y].name};
    dt_node(g, op, 2, ins, 1, outs);
    return y;
}

/* ---- the ModelProto -------------------------------------------------------- */

Onnx__ValueInfoProto *dt_value_info(korch_onnx_writer *w, const char *name, const korch_shape *s,
                                     korch_dtype dtype) {
    Onnx__ValueInfoProto *vi = korch_onnx_alloc(w, sizeof *vi);
    Onnx__TypeProto *tp = korch_onnx_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = korch_onnx_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *sp = korch_onnx_alloc(w, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = korch_onnx_alloc(w, sizeof *dims * (size_t)(s->rank + 1));
    if (!vi || !tp || !tt || !sp || !dims) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int k = 0; k < s->rank; k++) {
        dims[k] = korch_onnx_alloc(w, sizeof **dims);
        if (!dims[k]) return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[k]);
        dims[k]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[k]->dim_value = s->dims[k];
    }
    sp->n_dim = (size_t)s->rank;
    sp->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = dtype ? dtype : KORCH_DTYPE_FLOAT32;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* Graph outputs: every value nothing reads (a dead end would only be pruned),
 * plus, sometimes, a value that is also read: an output that a fused kernel
 * must write while it keeps computing. */
static int choose_outputs(dt_gen *g, int *outs, int cap) {
    int n = 0;
    for (int v = 0; v < g->n_vals && n < cap; v++)
        if (!g->vals[v].is_input && g->vals[v].uses == 0) outs[n++] = v;
    for (int v = 0; v < g->n_vals && n < cap; v++)
        if (!g->vals[v].is_input && g->vals[v].uses > 0 && dt_chance(&g->rng, 0.08)) {
            outs[n++] = v;
            dt_cover(g, "output also read");
        }
    return n;
}

korch_status dt_finish(dt_gen *g, const char *path, dt_gen_info *info) {
    korch_onnx_writer *w = &g->w;
    int outs[16];
    int n_out = choose_outputs(g, outs, 16);
    if (n_out == 0) return korch_error(KORCH_ERR_INTERNAL, "difftest: generated graph has no output");
    if (n_out > 1) dt_cover(g, "several graph outputs");
    if (g->features)
        for (int i = 0; i < n_out; i++) outs[i] = dt_feature_output(g, outs[i]);
    Onnx__GraphProto *gp = korch_onnx_alloc(w, sizeof *gp);
    Onnx__ValueInfoProto **ins = korch_onnx_alloc(w, sizeof *ins * (size_t)(g->n_inputs + 1));
    Onnx__ValueInfoProto **ovi = korch_onnx_alloc(w, sizeof *ovi * (size_t)(n_out + 1));
    Onnx__OperatorSetIdProto *opset = korch_onnx_alloc(w, sizeof *opset);
    Onnx__OperatorSetIdProto **opsets = korch_onnx_alloc(w, sizeof *opsets);
    if (!gp || !ins || !ovi || !opset || !opsets) return w->status;
    onnx__graph_proto__init(gp);
    for (int i = 0; i < g->n_inputs; i++) ins[i] = dt_value_info(w, g->vals[g->inputs[i]].name, &g->vals[g->inputs[i]].shape,
                                                         g->vals[g->inputs[i]].dtype);
    for (int i = 0; i < n_out; i++) ovi[i] = dt_value_info(w, g->vals[outs[i]].name, &g->vals[outs[i]].shape, g->vals[outs[i]].dtype);
    gp->name = (char *)"difftest";
    gp->n_node = w->n_nodes;
    gp->node = w->nodes;
    gp->n_initializer = w->n_inits;
    gp->initializer = w->inits;
    gp->n_input = (size_t)g->n_inputs;
    gp->input = ins;
    gp->n_output = (size_t)n_out;
    gp->output = ovi;
    onnx__operator_set_id_proto__init(opset);
    opset->domain = (char *)"";
    opset->has_version = 1;
    opset->version = 17;
    opsets[0] = opset;
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    model.has_ir_version = 1;
    model.ir_version = 8;
    model.n_opset_import = 1;
    model.opset_import = opsets;
    model.producer_name = (char *)"korch-difftest";
    model.graph = gp;
    KORCH_TRY(w->status);
    size_t size = onnx__model_proto__get_packed_size(&model);
    uint8_t *data = malloc(size + 1);
    if (!data) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "difftest: out of memory");
    size = onnx__model_proto__pack(&model, data);
    FILE *f = fopen(path, "wb");
    korch_status st = KORCH_OK;
    if (!f || fwrite(data, 1, size, f) != size) st = korch_error(KORCH_ERR_IO, "difftest: cannot write %s", path);
    if (f && fclose(f) != 0 && st == KORCH_OK) st = korch_error(KORCH_ERR_IO, "difftest: cannot write %s", path);
    free(data);
    if (info) {
        info->n_nodes = (int)w->n_nodes;
        info->n_inputs = g->n_inputs;
        info->n_outputs = n_out;
    }
    return st;
}
