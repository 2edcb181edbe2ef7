/* oneDNN kernels in exported C: the backend's construction parameters
 * (korch_dnnl_export_params: operation, memory formats of the chosen variant,
 * post-ops, thread count) written as a static kx_dn description, run by
 * src/export/support/dnnl_runtime.inc through the oneDNN C API. The row
 * ex_backend_dnnl of the export table (export_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dnnl/dnnl_export.h"
#include "export/export_internal.h"

static void tensor(cg_buf *b, const korch_dnnl_tensor *t) {
    cg_buf_printf(b, "{%d, {", t->ndims);
    for (int i = 0; i < (t->ndims > 0 ? t->ndims : 1); i++) cg_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    cg_buf_printf(b, "}, {");
    for (int i = 0; i < (t->ndims > 0 ? t->ndims : 1); i++)
        cg_buf_printf(b, "%s%lld", i ? ", " : "", (long long)t->strides[i]);
    cg_buf_printf(b, "}}");
}

static void triple(cg_buf *b, const int64_t *v) {
    cg_buf_printf(b, "{%lld, %lld, %lld}", (long long)v[0], (long long)v[1], (long long)v[2]);
}

/* oneDNN's own names: "eltwise_relu" -> dnnl_eltwise_relu (checked to be an
 * identifier: it comes from the library's debug table, not from the model) */
static bool alg_name_ok(const char *alg) {
    if (!alg || !*alg) return false;
    for (const char *p = alg; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
    return true;
}

/* A float parameter exactly (hex literal), or the C spelling of inf/NaN. */
static void float_literal(cg_buf *b, float v) {
    if (v != v) cg_buf_printf(b, "NAN");
    else if (v == 1.0f / 0.0f) cg_buf_printf(b, "INFINITY");
    else if (v == -1.0f / 0.0f) cg_buf_printf(b, "-INFINITY");
    else cg_buf_printf(b, "%af", (double)v);
}

static korch_status emit_dnnl(ex_ctx *x, int i) {
    const korch_plan_kernel *pk = &x->plan->kernels[i];
    korch_kernel_spec spec = korch_plan_kernel_spec(x->pg, pk);
    korch_dnnl_params p;
    korch_status st = korch_dnnl_export_params(&spec, pk->schedule, x->plan->threads, &p);
    if (st != KORCH_OK) return korch_error_prefix(st, "kernel %d", i);
    if (pk->n_outputs != 1) return korch_error(KORCH_ERR_INVALID_MODEL, "kernel %d (dnnl): %d outputs", i, pk->n_outputs);
    for (int j = 0; j < p.n_post; j++)
        if (!alg_name_ok(p.post[j].alg))
            return korch_error(KORCH_ERR_UNSUPPORTED, "kernel %d (dnnl): post-op %d has no oneDNN algorithm name", i, j);
    if (p.imatmul && p.zp_slot >= pk->n_inputs)
        return korch_error(KORCH_ERR_INTERNAL, "kernel %d (dnnl): zero-point slot %d out of range", i, p.zp_slot);
    int slots[3] = {p.src_slot, p.wei_slot, p.bias_slot};
    for (int j = 0; j < 3; j++)
        if (slots[j] >= pk->n_inputs || (j < 2 && slots[j] < 0))
            return korch_error(KORCH_ERR_INTERNAL, "kernel %d (dnnl): operand slot %d out of range", i, slots[j]);
    int d = x->n_dnnl++;
    cg_buf *b = &x->decls;
    /* an integer kernel's fused requantization: its bias and scales */
    int32_t *iq_bias = NULL;
    float *iq_scales = NULL;
    int64_t channels = 0;
    st = p.imatmul ? korch_dnnl_export_requant(&spec, &iq_bias, &iq_scales, &channels) : KORCH_OK;
    if (st != KORCH_OK) return korch_error_prefix(st, "kernel %d", i);
    if (iq_bias) {
        cg_buf_printf(b, "static const int32_t dn%d_iq_bias[%lld] = {", d, (long long)channels);
        for (int64_t c = 0; c < channels; c++) cg_buf_printf(b, "%s%d", c ? (c % 16 ? ", " : ",\n    ") : "", (int)iq_bias[c]);
        cg_buf_printf(b, "};\nstatic const float dn%d_iq_scales[%lld] = {", d, (long long)channels);
        for (int64_t c = 0; c < channels; c++) {
            cg_buf_printf(b, "%s", c ? (c % 8 ? ", " : ",\n    ") : "");
            float_literal(b, iq_scales[c]);
        }
        cg_buf_printf(b, "};\n");
    }
    free(iq_bias);
    free(iq_scales);
    /* the backend's description, made comment-safe */
    for (char *c = p.text; *c; c++)
        if (*c == '*' || *c == '/' || (unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '_';
    cg_buf_printf(b, "/* kernel %d: %s */\nstatic const kx_dn dn%d = {%d, %d, ", i, p.text, d,
                  p.op == KORCH_LINEAR_MATMUL ? 0 : p.op == KORCH_LINEAR_CONV ? 1 : 2, p.spatial);
    triple(b, p.strides);
    cg_buf_printf(b, ", ");
    triple(b, p.dilates);
    cg_buf_printf(b, ", ");
    triple(b, p.pad_l);
    cg_buf_printf(b, ", ");
    triple(b, p.pad_r);
    cg_buf_printf(b, ",\n    %d, %d, %d, %d,\n    ", p.src_slot, p.wei_slot, p.bias_slot, p.wei_constant);
    const korch_dnnl_tensor *ts[4] = {&p.src, &p.wei, &p.bias, &p.dst};
    for (int j = 0; j < 4; j++) {
        tensor(b, ts[j]);
        cg_buf_printf(b, ",\n    ");
    }
    cg_buf_printf(b, "%d, {", p.n_post);
    for (int j = 0; j < p.n_post; j++) {
        const korch_dnnl_post *q = &p.post[j];
        cg_buf_printf(b, "%s\n        {%d, dnnl_%s, ", j ? "," : "", q->binary, q->alg);
        float_literal(b, q->alpha);
        cg_buf_printf(b, ", ");
        float_literal(b, q->beta);
        cg_buf_printf(b, ", %d, ", q->slot);
        tensor(b, &q->operand);
        cg_buf_printf(b, "}");
    }
    cg_buf_printf(b, "%s},\n    %d, %d, %d, %d, %d, ", p.n_post ? "" : "{0}", p.blocked, p.threads, p.bf16, p.src_q,
                  (int)p.src_zp);
    float_literal(b, p.src_scale);
    cg_buf_printf(b, ", %d, %d, %d,\n    %d, %d, %d, %d, ", p.dst_q, (int)p.dst_zp, p.bf16_io, p.imatmul, p.wei_int,
                  p.zp_slot, p.zp_u8);
    if (channels) cg_buf_printf(b, "dn%d_iq_bias, dn%d_iq_scales};\n", d, d);
    else cg_buf_printf(b, "0, 0};\n");

    /* constant weights: reordered once at load */
    if (p.wei_constant) {
        char plain[64];
        ex_value_ptr(x, pk->inputs[p.wei_slot], plain, sizeof plain);
        cg_buf_printf(&x->dnnl_load,
                      "    if (st == MODEL_OK) {\n        const unsigned char *W = m->weights;\n"
                      "        kx_dn_weight_set earlier = {m->dn_plain, m->dn_weights, m->dn_weights_md, %d};\n        m->dn_plain[%d] = %s;\n"
                      "        dnnl_status_t ds = kx_dn_reorder_weights(&dn%d, m->dn_engine, MODEL_THREADS, %s, &earlier, "
                      "&m->dn_weights[%d], &m->dn_weights_md[%d], &m->dn_shared[%d]);\n"
                      "        if (ds != dnnl_success) st = model_fail(MODEL_ERR_RUNTIME, \"kernel %d: oneDNN weights "
                      "reorder failed (%%s)\", dnnl_status2str(ds));\n    }\n",
                      d, d, plain, d, plain, d, d, d, i);
    }
    char plain[64] = "0";
    if (p.wei_constant) ex_value_ptr(x, pk->inputs[p.wei_slot], plain, sizeof plain);
    cg_buf_printf(&x->dnnl_session,
                  "    if (st == MODEL_OK) {\n        const unsigned char *W = s->model->weights;\n        (void)W;\n"
                  "        dnnl_status_t ds = kx_dn_create(&dn%d, s->model->dn_engine, s->threads, %s, "
                  "s->model->dn_weights[%d], &s->model->dn_weights_md[%d], &s->dn[%d]);\n"
                  "        if (ds != dnnl_success) st = model_fail(MODEL_ERR_RUNTIME, \"kernel %d: oneDNN primitive "
                  "creation failed (%%s)\", dnnl_status2str(ds));\n    }\n",
                  d, plain, d, d, d, i);
    /* the call: the kernel's inputs in spec order */
    cg_buf_printf(&x->calls, "        void *in_[%d] = {", pk->n_inputs);
    for (int j = 0; j < pk->n_inputs; j++) {
        char ptr[64];
        ex_value_ptr(x, pk->inputs[j], ptr, sizeof ptr);
        cg_buf_printf(&x->calls, "%s%s", j ? ", " : "", ptr);
    }
    char out[64];
    ex_value_ptr(x, pk->outputs[0], out, sizeof out);
    cg_buf_printf(&x->calls,
                  "};\n        dnnl_status_t ds = kx_dn_run(&dn%d, &s->dn[%d], in_, %s);\n"
                  "        if (ds != dnnl_success) return model_kernel_fail(%d, MODEL_ERR_RUNTIME, \"oneDNN: %%s\", "
                  "dnnl_status2str(ds));\n",
                  d, d, out, i);
    return KORCH_OK;
}

/* once all kernels are written: the engine, the reordered weights and the
 * sessions' primitives every oneDNN kernel shares */
static void finish(ex_ctx *x) {
    if (x->n_dnnl == 0) return;
    int n = x->n_dnnl;
    cg_buf_printf(&x->handle_fields,
                  "    dnnl_engine_t dn_engine;\n    void *dn_weights[%d]; /* reordered constant weights, or NULL */\n"
                  "    dnnl_memory_desc_t dn_weights_md[%d];\n"
                  "    const void *dn_plain[%d]; /* the weights each was reordered from */\n"
                  "    unsigned char dn_shared[%d]; /* 1: dn_weights[i] is an earlier kernel's */\n",
                  n, n, n, n);
    cg_buf_printf(&x->session_fields, "    kx_dn_kernel dn[%d];\n", n);
    cg_buf_printf(&x->hooks,
                  "static model_status model_prepare(model_handle *m) {\n"
                  "    dnnl_status_t es = dnnl_engine_create(&m->dn_engine, dnnl_cpu, 0);\n"
                  "    if (es != dnnl_success) return model_fail(MODEL_ERR_RUNTIME, \"oneDNN: no CPU engine (%%s)\", "
                  "dnnl_status2str(es));\n"
                  "    model_status st = MODEL_OK;\n%s    return st;\n}\n\n",
                  x->dnnl_load.data ? x->dnnl_load.data : "");
    cg_buf_printf(&x->hooks,
                  "static void model_release(model_handle *m) {\n"
                  "    for (int i = 0; i < %d; i++)\n        if (!m->dn_shared[i]) free(m->dn_weights[i]);\n"
                  "    if (m->dn_engine) dnnl_engine_destroy(m->dn_engine);\n}\n\n",
                  n);
    cg_buf_printf(&x->hooks, "static model_status model_session_prepare(model_session *s) {\n"
                             "    model_status st = MODEL_OK;\n%s    return st;\n}\n\n",
                  x->dnnl_session.data ? x->dnnl_session.data : "");
    cg_buf_printf(&x->hooks,
                  "static void model_session_release(model_session *s) {\n"
                  "    for (int i = 0; i < %d; i++) kx_dn_free(&s->dn[i]);\n}\n",
                  n);
}

static korch_status emit(ex_ctx *x, int i, const char *what) {
    (void)what;
    korch_status st = emit_dnnl(x, i);
    if (st == KORCH_OK) x->stats.dnnl++;
    return st;
}

const ex_backend ex_backend_dnnl = {.emit = emit, .finish = finish};
