/* dn_desc + variant -> oneDNN primitives, and running them.
 *
 * All creation work happens once, in dn_kernel_create: primitive descriptor,
 * primitive (JIT), reorders, the constant weights reordered into oneDNN's
 * preferred layout, internal buffers. dn_kernel_run binds the caller's
 * buffers to the memory objects and executes; it allocates nothing.
 *
 * oneDNN (this build) threads with OpenMP and reads the thread count when a
 * primitive is created (its work decomposition) and when it runs, so both
 * happen with the kernel's thread count set. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl_debug.h>

#include "backend/dnnl/dnnl_internal.h"
#include "core/memory.h"
#include "profile/profile.h"

#include "backend/dnnl/dnnl_weights_pad.inc"
#include "backend/dnnl/dnnl_zp_correction.inc"

struct dn_kernel {
    dnnl_stream_t stream;
    dnnl_primitive_t prim, reorder_src, reorder_dst, reorder_wei;
    dnnl_memory_t src_user, src, wei, bias, dst, dst_user;
    dnnl_memory_t wei_user;            /* bf16 with weights that are activations: the caller's float32 ones */
    dnnl_memory_t post[DN_MAX_POST];
    dnnl_memory_t zp[2];               /* int8: the source's and destination's zero points (given at run time) */
    int32_t zp_value[2];
    /* integer matmul with a source zero point (zp_correct): the weights'
     * column sums, the zero point (constant, or read from input zp_slot) */
    int32_t *colsum;
    int32_t *iq_bias;                  /* the fused requantization's s32 bias (owned), or NULL */
    int64_t rows, cols;
    int32_t zp_const;
    int zp_slot;
    bool zp_u8;
    dn_weights *wei_copy;              /* reordered constant weights (shared), or NULL */
    void *src_buf, *dst_buf, *wei_buf; /* owned: blocked or bf16 src/dst, bf16 copies of activation weights */
    int threads;
    int src_slot, wei_slot, bias_slot; /* spec inputs bound per run (-1: owned) */
    int wei_copied_slot;               /* spec input of the weights copied at creation, or -1 */
    int n_post;
    int post_slot[DN_MAX_POST];        /* -1 for eltwise post-ops */
    int n_args;
    dnnl_exec_arg_t args[6 + DN_MAX_POST];
};

static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void) { engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0); }

static korch_status dnnl_fail(dnnl_status_t s, const char *what, const dn_desc *d) {
    return korch_error(s == dnnl_unimplemented ? KORCH_ERR_UNSUPPORTED : KORCH_ERR_RUNTIME,
                       "oneDNN: %s failed (%s) for %s", what, dnnl_status2str(s), d ? d->text : "a kernel");
}

#define DN_CHECK(call, what)                                                                                           \
    do {                                                                                                               \
        dnnl_status_t s_ = (call);                                                                                     \
        if (s_ != dnnl_success) {                                                                                      \
            st = dnnl_fail(s_, what, d);                                                                               \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

const char *dn_version(void) {
    static char text[64];
    const dnnl_version_t *v = dnnl_version();
    snprintf(text, sizeof text, "oneDNN %d.%d.%d (omp)", v->major, v->minor, v->patch);
    return text;
}

const char *korch_dnnl_identity(const korch_profile_options *options) {
    (void)options; /* oneDNN kernels depend on the library, not on options */
    return dn_version();
}

bool dn_impl_is_reference(const char *impl) { return impl && strncmp(impl, "ref", 3) == 0; }

/* ---- variants ---------------------------------------------------------------- */

bool dn_variant_parse(const char *text, dn_variant *v) {
    *v = (dn_variant){.fmt = DN_FMT_PLAIN};
    if (!text || !*text) return true;
    size_t n;
    if (strncmp(text, "fmt=plain", n = 9) != 0) {
        if (strncmp(text, "fmt=blocked", n = 11) != 0) return false;
        v->fmt = DN_FMT_BLOCKED;
    }
    text += n;
    if (strncmp(text, " thr=1", 6) == 0 && (text[6] == '\0' || text[6] == ' ')) {
        v->threads = 1;
        text += 6;
    }
    return *text == '\0' || strncmp(text, " impl=", 6) == 0;
}

void dn_variant_format(const dn_variant *v, char *buf, size_t size) {
    snprintf(buf, size, "fmt=%s%s", v->fmt == DN_FMT_BLOCKED ? "blocked" : "plain", v->threads == 1 ? " thr=1" : "");
}

/* korch_profile_options.dnnl_variants (KORCH_DNNL_VARIANTS in the CLI; e.g.
 * "fmt=plain" or "fmt=plain;fmt=plain thr=1") restricts the variants tried:
 * for benchmarks that compare layouts and for tests of the
 * reference-implementation policy. */
static bool allowed(const dn_variant *v, const char *only) {
    if (!only || !*only) return true;
    char text[32];
    dn_variant_format(v, text, sizeof text);
    size_t n = strlen(text);
    for (const char *p = only; (p = strstr(p, text)) != NULL; p += n)
        if ((p == only || p[-1] == ';' || p[-1] == ',') && (p[n] == '\0' || p[n] == ';' || p[n] == ',')) return true;
    return false;
}

/* Below this much work a kernel may run faster on one thread: a parallel
 * region costs a wake-up of the other threads (microseconds on an idle
 * machine, a scheduler slice on an oversubscribed one). */
#define DN_SMALL_FLOPS 2e8

int dn_variants(const dn_desc *d, int threads, const char *only, dn_variant *out, int cap) {
    int n = 0;
    if (n < cap) out[n++] = (dn_variant){.fmt = DN_FMT_PLAIN};
    /* convolutions: oneDNN's fast kernels want blocked or channels-last
     * activations (channels-first ones get gemm-based kernels, ~10x slower),
     * and odd channel counts can leave channels-last to the reference code,
     * so also try reordering to oneDNN's choice around the primitive */
    if (d->op != KORCH_LINEAR_MATMUL && n < cap)
        out[n++] = (dn_variant){.fmt = DN_FMT_BLOCKED};
    if (threads > 1 && d->flops < DN_SMALL_FLOPS && n < cap)
        out[n++] = (dn_variant){.fmt = DN_FMT_PLAIN, .threads = 1};
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (allowed(&out[i], only)) out[kept++] = out[i];
    return kept;
}

/* Without a timed choice, a kernel this small runs on one thread. A plan of
 * an unrolled recurrence runs one (1, H) x (H, 4H) product per step and
 * direction (0.5 MFLOP at H = 256, 25-30 us): in parallel each pays a
 * wake-up of the other threads, a futex wake per kernel when they wait
 * passively on a busy machine, more than the work it splits; on the CRNN
 * benchmark (bench/recurrent/RESULTS.md) 128 such kernels per inference.
 * The small CRNN's 1.2 MFLOP convolutions were faster on one thread too,
 * even in the fastest of many runs (the whole model 0.107 against 0.133 ms
 * on the 2-vCPU EPYC). Above it splitting the work is assumed to pay; the
 * full-size CRNN run entirely on one thread was slower. The profiler still
 * times both variants when it measures (dn_variants). */
#define DN_SERIAL_FLOPS 2e6

int dn_variants_untimed(const dn_desc *d, int threads, const char *only, dn_variant *out, int cap) {
    int n = dn_variants(d, threads, only, out, cap);
    if (d->flops >= DN_SERIAL_FLOPS) return n;
    for (int i = 1; i < n; i++)
        if (out[i].threads == 1) {
            dn_variant v = out[i];
            memmove(&out[1], &out[0], (size_t)i * sizeof out[0]);
            out[0] = v;
            break;
        }
    return n;
}

/* ---- memory descriptors ---------------------------------------------------- */

static dnnl_status_t md_typed(const dn_tensor *t, dnnl_data_type_t dt, dnnl_memory_desc_t *md) {
    dnnl_dims_t dims, strides;
    for (int i = 0; i < t->ndims; i++) {
        dims[i] = t->dims[i];
        strides[i] = t->strides[i];
    }
    return dnnl_memory_desc_init_by_strides(md, t->ndims, dims, dt, strides);
}

static dnnl_status_t md_of(const dn_tensor *t, dnnl_memory_desc_t *md) { return md_typed(t, dnnl_f32, md); }

static dnnl_status_t md_any(const dn_tensor *t, dnnl_data_type_t dt, dnnl_memory_desc_t *md) {
    dnnl_dims_t dims;
    for (int i = 0; i < t->ndims; i++) dims[i] = t->dims[i];
    return dnnl_memory_desc_init_by_tag(md, t->ndims, dims, dt, dnnl_format_tag_any);
}

static korch_status op_desc(const dn_desc *d, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *wei,
                            const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst, void *desc) {
    korch_status st = KORCH_OK;
    if (d->op == KORCH_LINEAR_MATMUL) {
        DN_CHECK(dnnl_matmul_desc_init(desc, src, wei, bias, dst), "matmul descriptor");
        return KORCH_OK;
    }
    dnnl_dims_t strides, dilates, pad_l, pad_r;
    for (int k = 0; k < d->params.spatial; k++) {
        strides[k] = d->params.strides[k];
        dilates[k] = d->params.dilations[k] - 1; /* oneDNN counts the gaps */
        pad_l[k] = d->params.pads_begin[k];
        pad_r[k] = d->params.pads_end[k];
    }
    if (d->op == KORCH_LINEAR_CONV)
        DN_CHECK(dnnl_dilated_convolution_forward_desc_init(desc, dnnl_forward_inference, dnnl_convolution_direct, src,
                                                            wei, bias, dst, strides, dilates, pad_l, pad_r),
                 "convolution descriptor");
    else
        DN_CHECK(dnnl_dilated_deconvolution_forward_desc_init(desc, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                              src, wei, bias, dst, strides, dilates, pad_l, pad_r),
                 "deconvolution descriptor");
done:
    return st;
}

/* scales: int8 only, the output scale of each output channel */
static korch_status make_attr(const dn_desc *d, const float *scales, dnnl_primitive_attr_t *attr) {
    korch_status st = KORCH_OK;
    dnnl_post_ops_t po = NULL;
    *attr = NULL;
    DN_CHECK(dnnl_primitive_attr_create(attr), "attribute");
    static const int32_t runtime_zp = DNNL_RUNTIME_S32_VAL;
    /* an integer matmul: an exact int32 sum, no scales; its zero point is
     * not oneDNN's (zp_correct) */
    /* per output channel (a matmul's: its columns, the destination's last
     * dim): an integer kernel's fused requantization, float(sum + bias) *
     * scale[c], or an int8 kernel's scale[c] * sum((q - zp) * w_q); both
     * before the post-ops */
    if (scales) {
        int mask = d->op == KORCH_LINEAR_MATMUL ? 1 << (d->dst.ndims - 1) : 1 << 1;
        DN_CHECK(dnnl_primitive_attr_set_output_scales(*attr, dn_out_channels(d), mask, scales), "output scales");
    }
    if (d->src_q && !d->imatmul) {
        if (d->src_zp)
            DN_CHECK(dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_SRC, 1, 0, &runtime_zp), "zero points");
        if (d->dst_zp)
            DN_CHECK(dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_DST, 1, 0, &runtime_zp), "zero points");
    }
    if (d->n_post == 0) return KORCH_OK;
    DN_CHECK(dnnl_post_ops_create(&po), "post-ops");
    for (int i = 0; i < d->n_post; i++) {
        const dn_post *p = &d->post[i];
        if (p->kind == DN_POST_ELTWISE) {
            DN_CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, p->alg, p->alpha, p->beta), "eltwise post-op");
        } else {
            dnnl_memory_desc_t md;
            DN_CHECK(md_of(&p->operand, &md), "binary operand descriptor");
            DN_CHECK(dnnl_post_ops_append_binary(po, p->alg, &md), "binary post-op");
        }
    }
    DN_CHECK(dnnl_primitive_attr_set_post_ops(*attr, po), "post-op attribute");
done:
    if (po) dnnl_post_ops_destroy(po);
    if (st != KORCH_OK && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return st;
}

/* ---- kernel ------------------------------------------------------------------ */

void dn_kernel_free(dn_kernel *k) {
    if (!k) return;
    dnnl_primitive_t prims[] = {k->prim, k->reorder_src, k->reorder_dst, k->reorder_wei};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        if (prims[i]) dnnl_primitive_destroy(prims[i]);
    dnnl_memory_t mems[] = {k->src_user, k->src, k->wei, k->bias, k->dst, k->dst_user, k->zp[0], k->zp[1]};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i] && !(i == 1 && mems[i] == k->src_user) && !(i == 4 && mems[i] == k->dst_user))
            dnnl_memory_destroy(mems[i]);
    if (k->wei_user) dnnl_memory_destroy(k->wei_user);
    for (int i = 0; i < k->n_post; i++)
        if (k->post[i]) dnnl_memory_destroy(k->post[i]);
    if (k->stream) dnnl_stream_destroy(k->stream);
    dn_weights_release(k->wei_copy);
    free(k->src_buf);
    free(k->dst_buf);
    free(k->wei_buf);
    free(k->colsum);
    free(k->iq_bias);
    free(k);
}

static void *alloc_for(const dnnl_memory_desc_t *md) {
    size_t bytes = dnnl_memory_desc_get_size(md);
    return korch_buffer_alloc(bytes + 64);
}

/* A reorder between two layouts, created (and, with data, run) now. */
static korch_status reorder(const dn_desc *d, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                            dnnl_primitive_t *out) {
    korch_status st = KORCH_OK;
    dnnl_primitive_desc_t pd = NULL;
    DN_CHECK(dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL), "reorder descriptor");
    DN_CHECK(dnnl_primitive_create(out, pd), "reorder");
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* A size-1 dim's stride is arbitrary: NCHW and NHWC are the same bytes
 * when C = 1, and a transposed view (dnnl_transpose.c) gives such a dim the
 * stride of its layout of origin. oneDNN matches formats on every stride,
 * so a channels-last convolution's one-channel source with its
 * channels-first stride matched no implementation but the reference one:
 * 18 ms against 17 us for brgconv (the first convolution of ddddocr_common,
 * on a grey image). A convolution tensor that is dense in the layout the
 * convolution runs in, but for the strides of its size-1 dims, gets exactly
 * that layout's strides. */
static dn_tensor convolution_strides(const dn_tensor *t, bool channels_last) {
    int r = t->ndims, order[DN_MAX_DIMS];
    if (r < 3) return *t;
    for (int i = 0; i < r; i++) order[i] = channels_last ? (i == 0 ? 0 : i == r - 1 ? 1 : i + 1) : i;
    int64_t pref[DN_MAX_DIMS], s = 1;
    for (int i = r - 1; i >= 0; i--) {
        pref[order[i]] = s;
        s *= t->dims[order[i]];
    }
    dn_tensor p = *t;
    for (int d = 0; d < r; d++) {
        if (t->dims[d] > 1 && t->strides[d] != pref[d]) return *t;
        p.strides[d] = pref[d];
    }
    return p;
}

static korch_status zp_correction_init(const dn_desc *d, const signed char *wei, dn_kernel *k);

/* probe: stop once oneDNN has named the implementation and the quirks have
 * accepted it (dn_variant_buildable): no JIT, no weights reordered */
static korch_status create(const dn_desc *d, const dn_variant *v, dn_kernel *k, char *impl, size_t impl_size,
                           bool probe) {
    korch_status st = KORCH_OK;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_memory_desc_t src_user, dst_user, src_md, dst_md, wei_user_md, wei_md, bias_md;
    signed char *wei_q = NULL; /* int8: the recovered weights and their scales (dnnl_dequant.c) */
    float *wei_scales = NULL;
    int32_t *iq_bias = NULL;   /* integer kernel with its requantization fused (dnnl_imatmul.c) */
    bool blocked = v->fmt == DN_FMT_BLOCKED;
    if (blocked && d->op == KORCH_LINEAR_MATMUL)
        return korch_error(KORCH_ERR_INVALID_ARGUMENT, "oneDNN: the blocked variant is for convolutions");
    bool conv = d->op != KORCH_LINEAR_MATMUL;
    const dn_tensor src = conv ? convolution_strides(&d->src, d->params.channels_last) : d->src;
    const dn_tensor dst = conv ? convolution_strides(&d->dst, d->params.channels_last) : d->dst;
    /* bf16 (docs/precision.md): the operands are converted (rounded to
     * nearest even) by the reorders below, products are summed in float32,
     * and the destination and post-op operands stay float32. int8: the
     * source is the caller's u8/s8 tensor, the weights int8 copies */
    dnnl_data_type_t operand_type = d->params.bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_data_type_t src_type = d->src_q ? d->src_q : operand_type, wei_type = d->src_q ? dnnl_s8 : operand_type;
    if (d->imatmul) {
        wei_q = dn_imatmul_weights(d);
        if (!wei_q) {
            st = korch_error_prefix(KORCH_ERR_UNSUPPORTED, "oneDNN");
            goto done;
        }
        if (d->dst_q) {
            st = dn_imatmul_requant_params(d, &iq_bias, &wei_scales);
            if (st != KORCH_OK) goto done;
            if (d->op == KORCH_LINEAR_MATMUL) { /* [1, ..., 1, N], the destination's rank */
                dnnl_dims_t bd, bs;
                for (int i = 0; i < d->dst.ndims; i++) bd[i] = i == d->dst.ndims - 1 ? d->dst.dims[i] : 1;
                for (int i = d->dst.ndims - 1, stride = 1; i >= 0; stride *= (int)bd[i], i--) bs[i] = stride;
                DN_CHECK(dnnl_memory_desc_init_by_strides(&bias_md, d->dst.ndims, bd, dnnl_s32, bs), "bias descriptor");
            } else {
                DN_CHECK(dnnl_memory_desc_init_by_tag(&bias_md, 1, (dnnl_dims_t){d->dst.dims[1]}, dnnl_s32, dnnl_x),
                         "bias descriptor");
            }
        }
    } else if (d->src_q) {
        st = dn_int8_weights(d, &wei_q, &wei_scales);
        if (st != KORCH_OK) goto done;
        for (int64_t c = 0; c < dn_out_channels(d); c++) wei_scales[c] *= d->src_scale; /* s_x * s_w[c] */
    }
    /* operands stored in bfloat16 by their producers are read as they are */
    DN_CHECK(md_typed(&src, d->src_q ? d->src_q : d->src_bf16 ? dnnl_bf16 : dnnl_f32, &src_user), "source descriptor");
    dnnl_data_type_t dst_type = d->dst_q ? d->dst_q : d->imatmul ? dnnl_s32 : d->dst_bf16 ? dnnl_bf16 : dnnl_f32;
    DN_CHECK(md_typed(&dst, dst_type, &dst_user), "destination descriptor");
    DN_CHECK(md_typed(&d->wei, d->src_q ? dnnl_s8 : d->wei_bf16 ? dnnl_bf16 : dnnl_f32, &wei_user_md),
             "weights descriptor");
    if (blocked) {
        DN_CHECK(md_any(&src, src_type, &src_md), "source descriptor");
        DN_CHECK(md_any(&dst, dst_type, &dst_md), "destination descriptor");
    } else {
        DN_CHECK(md_typed(&src, src_type, &src_md), "source descriptor");
        dst_md = dst_user;
    }
    if (d->wei_constant) DN_CHECK(md_any(&d->wei, wei_type, &wei_md), "weights descriptor");
    else DN_CHECK(md_typed(&d->wei, wei_type, &wei_md), "weights descriptor");
    if (d->bias_slot >= 0) DN_CHECK(md_of(&d->bias, &bias_md), "bias descriptor");
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
        dnnl_matmul_desc_t matmul;
    } desc;
    bool has_bias = d->bias_slot >= 0 || iq_bias;
    st = op_desc(d, &src_md, &wei_md, has_bias ? &bias_md : NULL, &dst_md, &desc);
    if (st != KORCH_OK) goto done;
    st = make_attr(d, wei_scales, &attr);
    if (st != KORCH_OK) goto done;
    DN_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL), "primitive descriptor");
    if (d->op == KORCH_LINEAR_MATMUL && d->wei_constant &&
        kx_dn_padded_weights(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                             d->src.ndims >= 2 ? d->src.dims[d->src.ndims - 2] : 1, &wei_md)) {
        /* the same primitive with the weights' rows padded (dnnl_weights_pad.inc) */
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        st = op_desc(d, &src_md, &wei_md, has_bias ? &bias_md : NULL, &dst_md, &desc);
        if (st != KORCH_OK) goto done;
        DN_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL), "primitive descriptor (padded weights)");
    }
    const char *info = NULL;
    DN_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info), "implementation query");
    snprintf(impl, impl_size, "%s", info ? info : "?");
    {
        char why[256];
        if (!dn_impl_computes(d, info, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), why, sizeof why)) {
            st = korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN: %s for %s", why, d->text);
            goto done;
        }
    }
    if (probe) goto done;
    DN_CHECK(dnnl_primitive_create(&k->prim, pd), "primitive");

    /* activations: bound to the caller's buffers, or internal blocked ones */
    const dnnl_memory_desc_t *src_pd = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *dst_pd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    DN_CHECK(dnnl_memory_create(&k->src_user, &src_user, engine, DNNL_MEMORY_NONE), "source memory");
    DN_CHECK(dnnl_memory_create(&k->dst_user, &dst_user, engine, DNNL_MEMORY_NONE), "destination memory");
    k->src = k->src_user;
    k->dst = k->dst_user;
    if (!dnnl_memory_desc_equal(src_pd, &src_user)) {
        k->src_buf = alloc_for(src_pd);
        if (!k->src_buf) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
            goto done;
        }
        DN_CHECK(dnnl_memory_create(&k->src, src_pd, engine, k->src_buf), "source memory");
        st = reorder(d, &src_user, src_pd, &k->reorder_src);
        if (st != KORCH_OK) goto done;
    }
    if (!dnnl_memory_desc_equal(dst_pd, &dst_user)) {
        k->dst_buf = alloc_for(dst_pd);
        if (!k->dst_buf) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
            goto done;
        }
        DN_CHECK(dnnl_memory_create(&k->dst, dst_pd, engine, k->dst_buf), "destination memory");
        st = reorder(d, dst_pd, &dst_user, &k->reorder_dst);
        if (st != KORCH_OK) goto done;
    }

    /* weights: constant ones reordered now, once */
    const dnnl_memory_desc_t *wei_pd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    k->wei_slot = d->wei_slot;
    if (d->wei_constant && (wei_q || !dnnl_memory_desc_equal(wei_pd, &wei_user_md))) {
        /* int8 weights always: the plan's constant is their float32 form */
        st = dn_weights_get(engine, k->stream, wei_q ? (const void *)wei_q : d->wei_data, &wei_user_md, wei_pd,
                            &k->wei_copy);
        if (st != KORCH_OK) goto done;
        DN_CHECK(dnnl_memory_create(&k->wei, wei_pd, engine, dn_weights_data(k->wei_copy)), "weights memory");
        k->wei_slot = -1;
        k->wei_copied_slot = d->wei_slot;
    } else if (!d->wei_constant && !dnnl_memory_desc_equal(wei_pd, &wei_user_md)) {
        /* bf16 weights that are activations (attention's products): converted per run */
        k->wei_buf = alloc_for(wei_pd);
        if (!k->wei_buf) {
            st = korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
            goto done;
        }
        DN_CHECK(dnnl_memory_create(&k->wei, wei_pd, engine, k->wei_buf), "weights memory");
        DN_CHECK(dnnl_memory_create(&k->wei_user, &wei_user_md, engine, DNNL_MEMORY_NONE), "weights memory");
        st = reorder(d, &wei_user_md, wei_pd, &k->reorder_wei);
        if (st != KORCH_OK) goto done;
    } else {
        DN_CHECK(dnnl_memory_create(&k->wei, wei_pd, engine, DNNL_MEMORY_NONE), "weights memory");
    }
    k->bias_slot = d->bias_slot;
    if (d->bias_slot >= 0) DN_CHECK(dnnl_memory_create(&k->bias, &bias_md, engine, DNNL_MEMORY_NONE), "bias memory");
    if (iq_bias) {
        DN_CHECK(dnnl_memory_create(&k->bias, &bias_md, engine, iq_bias), "bias memory");
        k->iq_bias = iq_bias;
        iq_bias = NULL;
    }

    k->n_args = 0;
    k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, k->src};
    k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, k->wei};
    if (k->bias) k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, k->bias};
    k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_DST, k->dst};
    const int32_t zps[2] = {d->src_q && !d->imatmul ? d->src_zp : 0, d->dst_q ? d->dst_zp : 0};
    if (d->imatmul && (d->src_zp || d->src_zp_slot >= 0)) {
        st = zp_correction_init(d, wei_q, k);
        if (st != KORCH_OK) goto done;
    }
    for (int z = 0; z < 2; z++) {
        if (!zps[z]) continue;
        dnnl_memory_desc_t zp_md;
        DN_CHECK(dnnl_memory_desc_init_by_tag(&zp_md, 1, (dnnl_dims_t){1}, dnnl_s32, dnnl_x), "zero-point descriptor");
        k->zp_value[z] = zps[z];
        DN_CHECK(dnnl_memory_create(&k->zp[z], &zp_md, engine, &k->zp_value[z]), "zero-point memory");
        k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | (z ? DNNL_ARG_DST : DNNL_ARG_SRC), k->zp[z]};
    }
    k->n_post = d->n_post;
    for (int i = 0; i < d->n_post; i++) {
        k->post_slot[i] = -1;
        if (d->post[i].kind != DN_POST_BINARY) continue;
        dnnl_memory_desc_t md;
        DN_CHECK(md_of(&d->post[i].operand, &md), "binary operand descriptor");
        DN_CHECK(dnnl_memory_create(&k->post[i], &md, engine, DNNL_MEMORY_NONE), "binary operand memory");
        k->post_slot[i] = d->post[i].slot;
        k->args[k->n_args++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, k->post[i]};
    }
done:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    free(wei_q);
    free(wei_scales);
    free(iq_bias);
    return st;
}

/* An integer matmul's source zero point. oneDNN 2.6's int8 matmul with a
 * source zero point (its compensation) is not exact once sums pass 2^24
 * (off by one at 4.4e7, K = 3072; tests/dnnl/test_dnnl_imatmul.c), while
 * without one it is. So the kernel computes A x W and subtracts the
 * correction itself (dnnl_zp_correction.inc, which exported C shares). */
static korch_status zp_correction_init(const dn_desc *d, const signed char *wei, dn_kernel *k) {
    const korch_tensor *w = d->wei_tensor;
    bool conv = d->op == KORCH_LINEAR_CONV;
    if (!w || (!conv && w->shape.rank != 2) || (conv && w->shape.rank != d->params.spatial + 2))
        return korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN integer kernel (%s): a zero point with weights of rank %d",
                           d->text, w ? w->shape.rank : 0);
    int64_t total = 1;
    for (int i = 0; i < d->dst.ndims; i++) total *= d->dst.dims[i];
    /* the correction per output element of one row (matmul: per column) or
     * one image (convolution: per channel and position) */
    int64_t cols = conv ? total / d->dst.dims[0] : w->shape.dims[1];
    k->colsum = calloc((size_t)(cols > 0 ? cols : 1), sizeof *k->colsum);
    if (!k->colsum) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
    if (conv) {
        /* the geometry oneDNN is given (the descriptor's: an H x 1
         * convolution is described as 1 x H, swap_unit_width), the kernel's
         * extents included; the weights' bytes are the same either way */
        if (!kx_dn_conv_correction(wei, w->shape.dims[0], w->shape.dims[1], d->params.spatial, d->src.dims + 2,
                                   d->dst.dims + 2, d->wei.dims + d->wei.ndims - d->params.spatial,
                                   d->params.strides, d->params.dilations, d->params.pads_begin, k->colsum))
            return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
    } else {
        kx_dn_colsums(wei, w->shape.dims[0], cols, k->colsum);
    }
    k->cols = cols;
    k->rows = cols > 0 ? total / cols : 0;
    k->zp_const = d->src_zp;
    k->zp_slot = d->src_zp_slot;
    k->zp_u8 = d->src_zp_u8;
    return KORCH_OK;
}

static void zp_correct(const dn_kernel *k, void *const *inputs, int32_t *y) {
    int32_t zp = k->zp_slot < 0 ? k->zp_const
                 : k->zp_u8    ? *(const uint8_t *)inputs[k->zp_slot]
                               : *(const int8_t *)inputs[k->zp_slot];
    kx_dn_zp_correct(y, k->rows, k->cols, zp, k->colsum);
}

static korch_status kernel_create(const dn_desc *d, const dn_variant *v, int threads, dn_kernel **out, char *impl,
                                  size_t impl_size, bool probe) {
    *out = NULL;
    if (impl_size) impl[0] = '\0';
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success) return dnnl_fail(engine_status, "CPU engine creation", d);
    dn_kernel *k = calloc(1, sizeof *k);
    if (!k) return korch_error(KORCH_ERR_OUT_OF_MEMORY, "oneDNN kernel: out of memory");
    k->threads = threads > 0 ? threads : omp_get_max_threads();
    if (v->threads > 0 && v->threads < k->threads) k->threads = v->threads;
    k->src_slot = d->src_slot;
    k->wei_copied_slot = -1;
    k->zp_slot = -1;
    korch_status st = KORCH_OK;
    dnnl_status_t s = dnnl_stream_create(&k->stream, engine, dnnl_stream_default_flags);
    if (s != dnnl_success) st = dnnl_fail(s, "stream creation", d);
    int saved = omp_get_max_threads();
    omp_set_num_threads(k->threads);
    if (st == KORCH_OK) st = create(d, v, k, impl, impl_size, probe);
    omp_set_num_threads(saved);
    if (st != KORCH_OK || probe) {
        dn_kernel_free(k);
        return st;
    }
    *out = k;
    return KORCH_OK;
}

korch_status dn_kernel_create(const dn_desc *d, const dn_variant *v, int threads, dn_kernel **out, char *impl,
                              size_t impl_size) {
    return kernel_create(d, v, threads, out, impl, impl_size, false);
}

korch_status dn_variant_buildable(const dn_desc *d, int threads, char *impl, size_t impl_size) {
    dn_variant vs[DN_MAX_VARIANTS];
    int nv = dn_variants(d, threads, NULL, vs, DN_MAX_VARIANTS);
    korch_status st = korch_error(KORCH_ERR_UNSUPPORTED, "oneDNN: no variant for %s", d->text);
    for (int j = 0; j < nv; j++) {
        dn_kernel *k = NULL;
        korch_error_clear();
        st = kernel_create(d, &vs[j], threads, &k, impl, impl_size, true);
        if (st == KORCH_OK) break;
    }
    return st;
}

korch_status dn_kernel_create_untimed(const dn_desc *d, int threads, const char *only, dn_variant *v, dn_kernel **out,
                                      char *impl, size_t impl_size) {
    dn_variant vs[DN_MAX_VARIANTS];
    int nv = dn_variants_untimed(d, threads, only, vs, DN_MAX_VARIANTS);
    if (nv < 1) {
        vs[0] = (dn_variant){.fmt = DN_FMT_PLAIN};
        nv = 1;
    }
    /* the profiler's policy too (dnnl_profile.c): oneDNN's reference
     * implementation only when no variant has a real one */
    int fallback = -1;
    korch_status st = KORCH_OK;
    for (int j = 0; j < nv; j++) {
        *v = vs[j];
        st = dn_kernel_create(d, v, threads, out, impl, impl_size);
        if (st == KORCH_OK && dn_impl_is_reference(impl) && j + 1 < nv) {
            if (fallback < 0) fallback = j;
            dn_kernel_free(*out);
            *out = NULL;
            continue;
        }
        if (st == KORCH_OK || st != KORCH_ERR_UNSUPPORTED || j + 1 == nv) break;
        korch_error_clear();
    }
    if (st != KORCH_OK && st == KORCH_ERR_UNSUPPORTED && fallback >= 0) {
        korch_error_clear();
        *v = vs[fallback];
        st = dn_kernel_create(d, v, threads, out, impl, impl_size);
    }
    return st;
}

korch_status dn_kernel_run(dn_kernel *k, void *const *inputs, void *const *outputs) {
    const dn_desc *d = NULL;
    korch_status st = KORCH_OK;
    int saved = omp_get_max_threads();
    if (saved != k->threads) omp_set_num_threads(k->threads);
    DN_CHECK(dnnl_memory_set_data_handle(k->src_user, inputs[k->src_slot]), "binding the source");
    DN_CHECK(dnnl_memory_set_data_handle(k->dst_user, outputs[0]), "binding the destination");
    if (k->wei_slot >= 0)
        DN_CHECK(dnnl_memory_set_data_handle(k->wei_user ? k->wei_user : k->wei, inputs[k->wei_slot]),
                 "binding the weights");
    if (k->bias_slot >= 0) DN_CHECK(dnnl_memory_set_data_handle(k->bias, inputs[k->bias_slot]), "binding the bias");
    for (int i = 0; i < k->n_post; i++)
        if (k->post_slot[i] >= 0)
            DN_CHECK(dnnl_memory_set_data_handle(k->post[i], inputs[k->post_slot[i]]), "binding a post-op operand");
    if (k->reorder_src) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, k->src_user}, {DNNL_ARG_TO, k->src}};
        DN_CHECK(dnnl_primitive_execute(k->reorder_src, k->stream, 2, args), "source reorder");
    }
    if (k->reorder_wei) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, k->wei_user}, {DNNL_ARG_TO, k->wei}};
        DN_CHECK(dnnl_primitive_execute(k->reorder_wei, k->stream, 2, args), "weights reorder");
    }
    DN_CHECK(dnnl_primitive_execute(k->prim, k->stream, k->n_args, k->args), "execution");
    if (k->reorder_dst) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, k->dst}, {DNNL_ARG_TO, k->dst_user}};
        DN_CHECK(dnnl_primitive_execute(k->reorder_dst, k->stream, 2, args), "destination reorder");
    }
    DN_CHECK(dnnl_stream_wait(k->stream), "stream wait");
    if (k->colsum) zp_correct(k, inputs, outputs[0]);
done:
    if (saved != k->threads) omp_set_num_threads(saved);
    return st;
}

int dn_kernel_copied_weights(const dn_kernel *k) { return k ? k->wei_copied_slot : -1; }

void dn_kernel_evict_owned_weights(const dn_kernel *k) {
    if (k && k->wei_copy) korch_cache_evict(dn_weights_data(k->wei_copy), dn_weights_bytes(k->wei_copy));
}
