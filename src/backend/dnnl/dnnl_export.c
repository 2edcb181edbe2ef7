/* korch_dnnl_export_params: the backend's kernel description as plain data
 * for korch export (dnnl_export.h). */
#include <stdio.h>
#include <string.h>

#include <dnnl_debug.h>

#include "backend/dnnl/dnnl_export.h"
#include "backend/dnnl/dnnl_internal.h"

static void tensor_of(const dn_tensor *t, korch_dnnl_tensor *out) {
    memset(out, 0, sizeof *out);
    out->ndims = t->ndims;
    for (int i = 0; i < t->ndims && i < 8; i++) {
        out->dims[i] = t->dims[i];
        out->strides[i] = t->strides[i];
    }
}

korch_status korch_dnnl_export_params(const korch_kernel_spec *spec, const char *schedule, int threads,
                                      korch_dnnl_params *out) {
    memset(out, 0, sizeof *out);
    dn_desc d;
    char reason[256];
    if (!dn_analyze(spec, &d, reason, sizeof reason)) return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN: %s", reason);
    dn_variant v = {.fmt = DN_FMT_PLAIN};
    if (schedule && *schedule) {
        if (!dn_variant_parse(schedule, &v))
            return korch_error(KORCH_ERR_INVALID_ARGUMENT, "oneDNN kernel (%s): bad schedule \"%.64s\"", d.text,
                               schedule);
    } else {
        /* the variant korch_dnnl_build chooses for an untimed kernel, found
         * the same way (by building it: which implementations oneDNN picks,
         * and so which variants a quirk refuses, depends on the CPU), so that
         * the export computes what the plan does on this machine */
        dn_kernel *k = NULL;
        char impl[128];
        korch_status st = dn_kernel_create_untimed(&d, threads > 0 ? threads : 1, NULL, &v, &k, impl, sizeof impl);
        dn_kernel_free(k);
        if (st != KORCH_OK) return korch_error_prefix(st, "oneDNN kernel (%s)", d.text);
    }
    out->op = d.op;
    out->spatial = d.params.spatial;
    for (int k = 0; k < d.params.spatial && k < 3; k++) {
        out->strides[k] = d.params.strides[k];
        out->dilates[k] = d.params.dilations[k] - 1;
        out->pad_l[k] = d.params.pads_begin[k];
        out->pad_r[k] = d.params.pads_end[k];
    }
    out->src_slot = d.src_slot;
    out->wei_slot = d.wei_slot;
    out->bias_slot = d.bias_slot;
    out->wei_constant = d.wei_constant;
    out->bf16 = d.params.bf16;
    out->src_q = d.src_q == dnnl_u8 ? 1 : d.src_q == dnnl_s8 ? 2 : 0;
    out->src_zp = d.src_zp;
    out->src_scale = d.src_scale;
    out->dst_q = d.dst_q == dnnl_u8 ? 1 : d.dst_q == dnnl_s8 ? 2 : 0;
    out->dst_zp = d.dst_zp;
    out->bf16_io = (d.src_bf16 ? 1 : 0) | (d.wei_bf16 ? 2 : 0) | (d.dst_bf16 ? 4 : 0);
    out->zp_slot = -1;
    if (d.imatmul) {
        static const korch_dtype types[] = {KORCH_DTYPE_INT8, KORCH_DTYPE_UINT8, KORCH_DTYPE_INT16, KORCH_DTYPE_INT32,
                                            KORCH_DTYPE_INT64};
        out->imatmul = true;
        for (int t = 0; t < 5; t++)
            if (d.wei_tensor && d.wei_tensor->dtype == types[t]) out->wei_int = t + 1;
        if (!out->wei_int)
            return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN kernel (%s): integer weights of type %s", d.text,
                               d.wei_tensor ? korch_dtype_name(d.wei_tensor->dtype) : "?");
        out->src_zp = d.src_zp;
        out->zp_slot = d.src_zp_slot;
        out->zp_u8 = d.src_zp_u8;
    }
    tensor_of(&d.src, &out->src);
    tensor_of(&d.wei, &out->wei);
    if (d.bias_slot >= 0) tensor_of(&d.bias, &out->bias);
    tensor_of(&d.dst, &out->dst);
    if (d.n_post > KORCH_DNNL_MAX_POST)
        return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN kernel (%s): %d post-ops", d.text, d.n_post);
    out->n_post = d.n_post;
    for (int i = 0; i < d.n_post; i++) {
        const dn_post *p = &d.post[i];
        korch_dnnl_post *q = &out->post[i];
        q->binary = p->kind == DN_POST_BINARY;
        q->alg = dnnl_alg_kind2str(p->alg);
        q->alpha = p->alpha;
        q->beta = p->beta;
        q->slot = p->slot;
        if (q->binary) tensor_of(&p->operand, &q->operand);
    }
    out->blocked = v.fmt == DN_FMT_BLOCKED;
    out->threads = v.threads;
    snprintf(out->text, sizeof out->text, "%s", d.text);
    return KORCH_OK;
}

korch_status korch_dnnl_export_requant(const korch_kernel_spec *spec, int32_t **bias, float **scales,
                                       int64_t *channels) {
    *bias = NULL;
    *scales = NULL;
    *channels = 0;
    dn_desc d;
    char reason[256];
    if (!dn_analyze(spec, &d, reason, sizeof reason)) return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN: %s", reason);
    if (!d.imatmul || !d.dst_q) return KORCH_OK;
    KORCH_TRY(dn_imatmul_requant_params(&d, bias, scales));
    *channels = dn_out_channels(&d);
    return KORCH_OK;
}
