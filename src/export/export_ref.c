/* Reference kernels as standalone C: a plan kernel the REF backend runs
 * (korch's primitive interpreter) becomes a call of a fixed routine from
 * src/export/support/ref_*.inc with its parameters written out as a static
 * struct. Covered: single reduce and layout primitives the code generator
 * refuses, linear primitives (matmul, convolution and its transpose, float32)
 * and the opaque operator that appears in practice: Gather with run-time
 * indices (docs/fission.md). Anything else is refused by the caller. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/export_internal.h"
#include "ops/broadcast.h"

static void dims_list(cg_buf *b, int n, const int64_t *d) {
    cg_buf_printf(b, "{");
    for (int i = 0; i < n; i++) cg_buf_printf(b, "%s%lld", i ? ", " : "", (long long)d[i]);
    cg_buf_printf(b, "}");
}

/* the position of value v among the kernel's inputs */
static int input_slot(const korch_plan_kernel *k, int v) {
    for (int j = 0; j < k->n_inputs; j++)
        if (k->inputs[j] == v) return j;
    return -1;
}

static void call_args(ex_ctx *x, const korch_plan_kernel *k, const int *values, int n) {
    for (int j = 0; j < n; j++) {
        char ptr[64];
        ex_value_ptr(x, values[j], ptr, sizeof ptr);
        cg_buf_printf(&x->calls, ", %s", ptr);
    }
    (void)k;
}

static korch_status emit_reduce(ex_ctx *x, int i, const korch_pnode *n) {
    const korch_plan_kernel *k = &x->plan->kernels[i];
    const korch_pvalue *in = &x->pg->values[n->inputs[0]], *out = &x->pg->values[n->outputs[0]];
    x->need[EX_REF_COMMON] = x->need[EX_REF_REDUCE] = true;
    static const int op_code[] = {[KORCH_REDUCE_SUM] = 0, [KORCH_REDUCE_MAX] = 1, [KORCH_REDUCE_MIN] = 2,
                                  [KORCH_REDUCE_MEAN] = 3};
    cg_buf_printf(&x->decls, "static const kx_reduce ref%d = {%d, 0x%xu, %d, ", i, op_code[n->u.reduce.op],
                  (unsigned)n->u.reduce.axes, in->shape.rank);
    dims_list(&x->decls, in->shape.rank, in->shape.dims);
    cg_buf_printf(&x->decls, ", %lld, %lld, %d, %d};\n", (long long)korch_shape_numel(&in->shape),
                  (long long)korch_shape_numel(&out->shape), (int)in->dtype, (int)out->dtype);
    cg_buf_printf(&x->calls, "        if (kx_reduce_run(&ref%d", i);
    int args[2] = {n->inputs[0], n->outputs[0]};
    call_args(x, k, args, 2);
    cg_buf_printf(&x->calls, ")) return model_kernel_fail(%d, MODEL_ERR_OUT_OF_MEMORY, \"out of memory\");\n", i);
    return KORCH_OK;
}

static korch_status emit_layout(ex_ctx *x, int i, const korch_pnode *n) {
    const korch_plan_kernel *k = &x->plan->kernels[i];
    const korch_prim_layout *l = &n->u.layout;
    const korch_pvalue *out = &x->pg->values[n->outputs[0]];
    x->need[EX_REF_COMMON] = x->need[EX_REF_LAYOUT] = true;
    /* tables first, then the maps that point at them */
    for (int m = 0; m < l->n_maps; m++)
        for (int d = 0; d < l->maps[m].input_rank; d++) {
            const korch_index_term *t = &l->maps[m].terms[d];
            if (!t->table) continue;
            cg_buf_printf(&x->decls, "static const int64_t ref%d_m%d_t%d[%lld] = {", i, m, d,
                          (long long)(t->table_size > 0 ? t->table_size : 1));
            for (int64_t e = 0; e < t->table_size; e++)
                cg_buf_printf(&x->decls, "%s%s%lld", e ? "," : "", e % 16 ? "" : "\n    ", (long long)t->table[e]);
            cg_buf_printf(&x->decls, "%s};\n", t->table_size > 0 ? "" : "0");
        }
    cg_buf_printf(&x->decls, "static const kx_map ref%d_maps[%d] = {\n", i, l->n_maps);
    for (int m = 0; m < l->n_maps; m++) {
        const korch_index_map *map = &l->maps[m];
        const korch_pvalue *in = &x->pg->values[n->inputs[m]];
        cg_buf_printf(&x->decls, "    {%d, ", map->input_rank);
        dims_list(&x->decls, in->shape.rank, in->shape.dims);
        cg_buf_printf(&x->decls, ", {");
        for (int d = 0; d < map->input_rank; d++) {
            const korch_index_term *t = &map->terms[d];
            cg_buf_printf(&x->decls, "%s{", d ? ", " : "");
            dims_list(&x->decls, KORCH_MAX_RANK, t->coef);
            char table[48] = "0";
            if (t->table) snprintf(table, sizeof table, "ref%d_m%d_t%d", i, m, d);
            cg_buf_printf(&x->decls, ", %lld, %lld, %lld, %s, %lld}", (long long)t->offset, (long long)t->div,
                          (long long)t->mod, table, (long long)(t->table ? t->table_size : 0));
        }
        cg_buf_printf(&x->decls, "}},\n");
    }
    char pad[64];
    if (l->pad_value != l->pad_value) snprintf(pad, sizeof pad, "NAN");
    else if (isinf(l->pad_value)) snprintf(pad, sizeof pad, "%sINFINITY", l->pad_value < 0 ? "-" : "");
    else snprintf(pad, sizeof pad, "%a", l->pad_value); /* exact */
    cg_buf_printf(&x->decls, "};\nstatic const kx_layout ref%d = {%d, ", i, out->shape.rank);
    dims_list(&x->decls, out->shape.rank, out->shape.dims);
    cg_buf_printf(&x->decls, ", %lld, %d, ref%d_maps, %s, %d, %zu};\n", (long long)korch_shape_numel(&out->shape),
                  l->n_maps, i, pad, (int)out->dtype, korch_dtype_size(out->dtype));
    cg_buf_printf(&x->calls, "        const void *in_[%d] = {", n->n_inputs);
    for (int m = 0; m < n->n_inputs; m++) {
        char ptr[64];
        ex_value_ptr(x, n->inputs[m], ptr, sizeof ptr);
        cg_buf_printf(&x->calls, "%s%s", m ? ", " : "", ptr);
    }
    char optr[64];
    ex_value_ptr(x, n->outputs[0], optr, sizeof optr);
    cg_buf_printf(&x->calls, "};\n        kx_layout_run(&ref%d, in_, %s);\n", i, optr);
    (void)k;
    return KORCH_OK;
}

static korch_status emit_linear(ex_ctx *x, int i, const korch_pnode *n) {
    const korch_prim_linear *p = &n->u.linear;
    const korch_pvalue *a = &x->pg->values[n->inputs[0]], *b = &x->pg->values[n->inputs[1]],
                       *y = &x->pg->values[n->outputs[0]];
    if (a->dtype != KORCH_DTYPE_FLOAT32 || b->dtype != KORCH_DTYPE_FLOAT32)
        return korch_error(KORCH_ERR_UNSUPPORTED, "kernel %d: linear primitives of %s are not supported", i,
                           korch_dtype_name(a->dtype));
    char pa[64], pb[64], py[64];
    ex_value_ptr(x, n->inputs[0], pa, sizeof pa);
    ex_value_ptr(x, n->inputs[1], pb, sizeof pb);
    ex_value_ptr(x, n->outputs[0], py, sizeof py);
    if (p->op == KORCH_LINEAR_MATMUL) {
        x->need[EX_REF_MATMUL] = true;
        int ra = a->shape.rank, rb = b->shape.rank, ry = y->shape.rank;
        korch_shape batch = y->shape, ba = a->shape, bb = b->shape;
        batch.rank = ry - 2;
        ba.rank = ra - 2;
        bb.rank = rb - 2;
        int64_t sa[KORCH_MAX_RANK] = {0}, sb[KORCH_MAX_RANK] = {0};
        korch_broadcast_strides(&ba, &batch, sa);
        korch_broadcast_strides(&bb, &batch, sb);
        cg_buf_printf(&x->decls, "static const kx_matmul ref%d = {%lld, %lld, %lld, %d, ", i,
                      (long long)a->shape.dims[ra - 2], (long long)a->shape.dims[ra - 1],
                      (long long)b->shape.dims[rb - 1], batch.rank);
        dims_list(&x->decls, batch.rank > 0 ? batch.rank : 1, batch.rank > 0 ? batch.dims : (int64_t[]){1});
        cg_buf_printf(&x->decls, ", ");
        dims_list(&x->decls, batch.rank > 0 ? batch.rank : 1, sa);
        cg_buf_printf(&x->decls, ", ");
        dims_list(&x->decls, batch.rank > 0 ? batch.rank : 1, sb);
        cg_buf_printf(&x->decls, ", %lld};\n", (long long)korch_shape_numel(&batch));
        cg_buf_printf(&x->calls, "        kx_matmul_run(&ref%d, (const float *)%s, (const float *)%s, (float *)%s, nt);\n",
                      i, pa, pb, py);
        return KORCH_OK;
    }
    x->need[EX_REF_CONV] = true;
    int s = p->spatial;
    int64_t in_sp[3] = {1, 1, 1}, out_sp[3] = {1, 1, 1}, k_sp[3] = {1, 1, 1};
    int64_t st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pbeg[3] = {0, 0, 0};
    int first_spatial = p->channels_last ? 1 : 2; /* N,C,spatial... or N,spatial...,C */
    for (int d = 0; d < s && d < 3; d++) {
        in_sp[d] = a->shape.dims[first_spatial + d];
        out_sp[d] = y->shape.dims[first_spatial + d];
        k_sp[d] = b->shape.dims[2 + d];
        st[d] = p->strides[d];
        dl[d] = p->dilations[d];
        pbeg[d] = p->pads_begin[d];
    }
    int channel_axis = p->channels_last ? a->shape.rank - 1 : 1;
    cg_buf_printf(&x->decls, "static const kx_conv ref%d = {%d, %d, %lld, %lld, %lld, %lld, ", i,
                  p->op == KORCH_LINEAR_CONV_TRANSPOSE, p->channels_last, (long long)a->shape.dims[0],
                  (long long)a->shape.dims[channel_axis], (long long)y->shape.dims[channel_axis], (long long)p->group);
    const int64_t *lists[6] = {in_sp, out_sp, k_sp, st, dl, pbeg};
    for (int l = 0; l < 6; l++) {
        dims_list(&x->decls, 3, lists[l]);
        cg_buf_printf(&x->decls, "%s", l < 5 ? ", " : "};\n");
    }
    cg_buf_printf(&x->calls, "        kx_conv_run(&ref%d, (const float *)%s, (const float *)%s, (float *)%s, nt);\n", i,
                  pa, pb, py);
    return KORCH_OK;
}

static korch_status emit_gather(ex_ctx *x, int i, const korch_pnode *n, const korch_node *src) {
    const korch_pvalue *data = &x->pg->values[n->inputs[0]], *idx = &x->pg->values[n->inputs[1]];
    int64_t axis = korch_node_attr_int(src, "axis", 0);
    int a = korch_axis_normalize(axis, data->shape.rank);
    if (a < 0) return korch_error(KORCH_ERR_INVALID_MODEL, "kernel %d (Gather): axis %lld out of range", i, (long long)axis);
    if (idx->dtype != KORCH_DTYPE_INT64 && idx->dtype != KORCH_DTYPE_INT32)
        return korch_error(KORCH_ERR_UNSUPPORTED, "kernel %d (Gather): %s indices", i, korch_dtype_name(idx->dtype));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; d++) outer *= data->shape.dims[d];
    for (int d = a + 1; d < data->shape.rank; d++) inner *= data->shape.dims[d];
    x->need[EX_REF_GATHER] = true;
    cg_buf_printf(&x->decls, "static const kx_gather ref%d = {%lld, %lld, %lld, %lld, %zu, %d};\n", i, (long long)outer,
                  (long long)data->shape.dims[a], (long long)inner, (long long)korch_shape_numel(&idx->shape),
                  korch_dtype_size(data->dtype), (int)idx->dtype);
    char pd[64], pi[64], py[64];
    ex_value_ptr(x, n->inputs[0], pd, sizeof pd);
    ex_value_ptr(x, n->inputs[1], pi, sizeof pi);
    ex_value_ptr(x, n->outputs[0], py, sizeof py);
    cg_buf_printf(&x->calls,
                  "        int64_t bad = 0, at = kx_gather_run(&ref%d, %s, %s, %s, &bad);\n"
                  "        if (at) return model_kernel_fail(%d, MODEL_ERR_RUNTIME, \"Gather index %%lld (position %%lld) "
                  "out of range [-%lld, %lld)\", (long long)bad, (long long)(at - 1));\n",
                  i, pd, pi, py, i, (long long)data->shape.dims[a], (long long)data->shape.dims[a]);
    return KORCH_OK;
}

korch_status ex_emit_ref(ex_ctx *x, int i, bool *handled) {
    const korch_plan_kernel *k = &x->plan->kernels[i];
    *handled = false;
    if (k->n_nodes != 1) return KORCH_OK;
    const korch_pnode *n = &x->pg->nodes[k->nodes[0]];
    /* every operand is one of the kernel's inputs (single-node kernels) */
    for (int j = 0; j < n->n_inputs; j++)
        if (input_slot(k, n->inputs[j]) < 0) return KORCH_OK;
    korch_status st = KORCH_OK;
    switch (n->kind) {
    case KORCH_PRIM_REDUCE: st = emit_reduce(x, i, n); break;
    case KORCH_PRIM_LAYOUT: st = emit_layout(x, i, n); break;
    case KORCH_PRIM_LINEAR: st = emit_linear(x, i, n); break;
    case KORCH_PRIM_OPAQUE: {
        if (!x->pg->source) return KORCH_OK;
        const korch_node *src = &x->pg->source->nodes[n->u.opaque.source_node];
        if (strcmp(src->op_type, "Gather") != 0 || n->n_inputs != 2 || n->n_outputs != 1) return KORCH_OK;
        st = emit_gather(x, i, n, src);
        break;
    }
    default: return KORCH_OK;
    }
    if (st == KORCH_OK) *handled = true;
    return st;
}

/* A REF kernel (the primitive interpreter in korch): memory-bound
 * primitives get the code generator's code (the same maths, in the dtype
 * instead of double), else a reference routine; anything else is refused. */
static korch_status emit(ex_ctx *x, int i, const char *what) {
    const korch_plan_kernel *pk = &x->plan->kernels[i];
    bool memory_bound = true, handled = false;
    for (int j = 0; j < pk->n_nodes; j++) {
        korch_prim_kind kind = x->pg->nodes[pk->nodes[j]].kind;
        memory_bound &= kind != KORCH_PRIM_LINEAR && kind != KORCH_PRIM_OPAQUE;
    }
    korch_status st = KORCH_OK;
    if (x->options.reference_routines) st = ex_emit_ref(x, i, &handled);
    if (st == KORCH_OK && !handled && memory_bound) st = ex_emit_cgen(x, i, NULL, &handled);
    if (st == KORCH_OK && !handled && !x->options.reference_routines) st = ex_emit_ref(x, i, &handled);
    if (st == KORCH_OK && !handled) {
        /* the node a user can find in the model: the opaque one */
        char op[160] = "", name[120];
        for (int j = 0; j < pk->n_nodes && !op[0]; j++) {
            const korch_pnode *n = &x->pg->nodes[pk->nodes[j]];
            if (n->kind != KORCH_PRIM_OPAQUE || !x->pg->source) continue;
            const korch_node *src = &x->pg->source->nodes[n->u.opaque.source_node];
            snprintf(op, sizeof op, ", node \"%s\"", korch_printable(src->name, name, sizeof name));
        }
        st = korch_error(KORCH_ERR_UNSUPPORTED,
                         "kernel %d (ref: %s%s): korch export has no standalone C for it; the plan cannot be exported",
                         i, what, op);
    }
    if (st == KORCH_OK) x->stats.ref++;
    return st;
}

const ex_backend ex_backend_ref = {.emit = emit, .finish = NULL};
