/* Internals of the oneDNN backend, shared by its files:
 *
 *   dnnl_analyze.c   kernel spec -> dn_desc (linear op, operands, signature)
 *   dnnl_epilogue.c  the post-op chain (dnnl_analyze.h: shared internals)
 *   dnnl_match.c     elementwise sub-graphs identified as oneDNN functions
 *   dnnl_primitive.c dn_desc + variant -> oneDNN primitives, run
 *   dnnl_profile.c   variants, timing, profile database
 *
 * A dn_desc speaks in oneDNN's logical order: dims of convolutions are
 * (N, C, spatial...) whatever the pgraph layout; `perm` says where each
 * logical dimension lives in the pgraph shape of the output. */
#ifndef KORCH_BACKEND_DNNL_DNNL_INTERNAL_H
#define KORCH_BACKEND_DNNL_DNNL_INTERNAL_H

#include <dnnl.h>
#include <stdbool.h>

#include "backend/backend.h"

#define DN_MAX_POST 16
#define DN_MAX_DIMS 8

/* A tensor as oneDNN sees it: logical dims and element strides (0 rank
 * means unused). */
typedef struct dn_tensor {
    int ndims;
    int64_t dims[DN_MAX_DIMS];
    int64_t strides[DN_MAX_DIMS];
} dn_tensor;

typedef enum dn_post_kind { DN_POST_ELTWISE, DN_POST_BINARY } dn_post_kind;

typedef struct dn_post {
    dn_post_kind kind;
    dnnl_alg_kind_t alg; /* eltwise or binary algorithm */
    float alpha, beta;
    int slot;            /* binary: spec input index of the second operand */
    dn_tensor operand;   /* binary: its logical dims/strides (1 = broadcast) */
    int node;            /* pgraph node it came from (for messages) */
} dn_post;

typedef struct dn_desc {
    korch_linear_op op;
    korch_prim_linear params;
    int linear_node;
    int src_slot, wei_slot;   /* spec input indices */
    bool wei_constant;
    const void *wei_data;     /* constant weights (the pgraph's) */
    int bias_slot;            /* -1: none; else spec input of a per-channel constant */
    const void *bias_data;
    dn_tensor src, wei, bias, dst; /* logical, with the strides of the dense pgraph buffers */
    bool strided_io;          /* transposes absorbed into src/dst strides (dnnl_transpose.c) */
    /* int8 (dnnl_dequant.c): the source is the 8-bit kernel input that the
     * kernel dequantized, (q - src_zp) * src_scale; the weights are int8
     * recovered from the float32 constants. dnnl_data_type_undef: float. */
    dnnl_data_type_t src_q;
    int32_t src_zp;
    float src_scale;
    /* int8 with the next QuantizeLinear fused (an_requant_tail): the
     * destination is u8/s8, saturate(rint(chain * (1 / s_y)) + dst_zp), the
     * product by 1 / s_y being the chain's last post-op. undef: float32. */
    dnnl_data_type_t dst_q;
    int32_t dst_zp;
    /* integer matmul (dnnl_imatmul.c): src_q is A's type, the weights are
     * the integer constant wei_tensor (values in int8), the destination
     * s32; the source zero point is src_zp, or read at run time from the
     * scalar 8-bit kernel input src_zp_slot (>= 0; uint8 when src_zp_u8) */
    bool imatmul;
    const korch_tensor *wei_tensor;
    int src_zp_slot;
    bool src_zp_u8;
    /* an integer convolution or matmul with its requantization fused
     * (an_imatmul_requant; dst_q set): the int32 constants iq_term[k]
     * (sign iq_sign[k], each one value or one per output channel) are
     * oneDNN's s32 bias, iq_scale (one float32 value or one per channel)
     * its output scale, then round, + dst_zp (a post-op) and dst_q's
     * saturation: saturate(rint(float(sum + bias) * scale) + dst_zp). */
    int n_iq_terms;
    const korch_tensor *iq_term[4];
    int iq_sign[4];
    const korch_tensor *iq_scale;
    /* bf16 (dnnl_bf16.c): the source / weights are bfloat16 kernel inputs
     * (else float32, converted by the kernel); the destination is written
     * in bfloat16 (else float32) */
    bool src_bf16, wei_bf16, dst_bf16;
    int n_post;
    dn_post post[DN_MAX_POST];
    double flops;
    char sig[33];             /* canonical signature (hex), profile database key */
    char text[256];           /* human-readable chain */
} dn_desc;

/* dnnl_analyze.c: false with a specific reason when oneDNN cannot express
 * the spec (no oneDNN call is made). */
bool dn_analyze(const korch_kernel_spec *spec, dn_desc *d, char *reason, size_t size);

/* dnnl_match.c: the oneDNN eltwise function equal to y = g(x), sampled at
 * xs (n points); `consts` are the scalar constants the sub-graph uses (for
 * parameter guesses). Fills alg/alpha/beta. */
bool dn_match_function(const double *xs, const double *ys, int n, const float *consts, int n_consts,
                       dnnl_alg_kind_t *alg, float *alpha, float *beta);
/* Sample points used with dn_match_function. */
int dn_match_points(double *xs, int cap);
const char *dn_alg_name(dnnl_alg_kind_t alg);

/* dnnl_dequant.c: does oneDNN sum u8 x s8 products exactly on this CPU
 * (VNNI)? And the int8 weights of an int8 kernel with their scale per
 * output channel (malloc'd), recovered exactly from the float32 constants,
 * or KORCH_ERR_UNSUPPORTED with the reason. */
bool dn_int8_exact_cpu(void);
korch_status dn_int8_weights(const dn_desc *d, signed char **q, float **scales);

/* dnnl_imatmul.c: the int8 weights of an integer matmul (malloc'd), or
 * NULL (an error set) when a value does not fit in int8. */
signed char *dn_imatmul_weights(const dn_desc *d);
/* Output channels of an integer or int8 kernel (what its per-channel weight
 * scales index): a convolution's (logical dim 1), a matmul's columns. */
int64_t dn_out_channels(const dn_desc *d);
/* The fused requantization's bias and scale per output channel (malloc'd,
 * dn_out_channels values each), or an error. */
korch_status dn_imatmul_requant_params(const dn_desc *d, int32_t **bias, float **scale);

/* dnnl_quirks.c: false with a reason when oneDNN implementation `impl`
 * (dnnl_query_impl_info_str) is known to compute d's post-ops wrongly with
 * destination layout dst. */
bool dn_impl_computes(const dn_desc *d, const char *impl, const dnnl_memory_desc_t *dst, char *reason, size_t size);

/* dnnl_primitive.c */
typedef enum dn_format {
    DN_FMT_PLAIN,   /* the pgraph's dense layout, as is */
    DN_FMT_BLOCKED, /* convolutions: activations reordered to oneDNN's choice and back */
} dn_format;

typedef struct dn_variant {
    dn_format fmt;
    int threads; /* 0: the kernel's thread count; 1: one thread (small kernels) */
} dn_variant;

#define DN_MAX_VARIANTS 4

/* "fmt=plain", "fmt=blocked", optionally followed by " thr=1" and by
 * " impl=..." (informative, ignored). */
bool dn_variant_parse(const char *text, dn_variant *v);
void dn_variant_format(const dn_variant *v, char *buf, size_t size);
/* The variants worth trying for d run with `threads` threads, best first. */
/* only: korch_profile_options.dnnl_variants (NULL or "": every variant) */
int dn_variants(const dn_desc *d, int threads, const char *only, dn_variant *out, int cap);
/* The same variants in the order a kernel built without a timed schedule
 * (estimated plans) tries them: one thread first for very small work. */
int dn_variants_untimed(const dn_desc *d, int threads, const char *only, dn_variant *out, int cap);

typedef struct dn_kernel dn_kernel;

/* Creates the primitives (JIT included) and reorders constant weights.
 * impl receives oneDNN's implementation name (dnnl_query_impl_info_str). */
korch_status dn_kernel_create(const dn_desc *d, const dn_variant *v, int threads, dn_kernel **out, char *impl,
                              size_t impl_size);
/* A kernel without a timed schedule: the first variant of
 * dn_variants_untimed that oneDNN computes correctly (a variant refused as
 * unsupported, an implementation with a known defect (dnnl_quirks.c), gives
 * way to the next) with a real implementation (oneDNN's reference one only
 * when no variant has another); *v receives it. The build of an estimated plan and its
 * export both choose through here, so they compute the same. */
korch_status dn_kernel_create_untimed(const dn_desc *d, int threads, const char *only, dn_variant *v, dn_kernel **out,
                                      char *impl, size_t impl_size);
/* KORCH_OK when some variant gets an implementation the quirks accept
 * (dnnl_quirks.c), found from primitive descriptors alone: no JIT, no
 * weights reordered (dnnl_backend.c, supports). */
korch_status dn_variant_buildable(const dn_desc *d, int threads, char *impl, size_t impl_size);
korch_status dn_kernel_run(dn_kernel *k, void *const *inputs, void *const *outputs);
/* The spec input of constant weights the kernel reordered into its own
 * buffer at creation (never read at run time), or -1. */
int dn_kernel_copied_weights(const dn_kernel *k);
/* Evicts the weights the kernel reordered into its own buffer from the caches. */
void dn_kernel_evict_owned_weights(const dn_kernel *k);
void dn_kernel_free(dn_kernel *k);
/* Constant weights reordered into oneDNN's layout, shared by every kernel
 * that asks for the same source bytes in the same layout (dnnl_weights.c):
 * reference-counted, freed with the last kernel. */
typedef struct dn_weights dn_weights;
korch_status dn_weights_get(dnnl_engine_t engine, dnnl_stream_t stream, const void *plain,
                            const dnnl_memory_desc_t *plain_md, const dnnl_memory_desc_t *md, dn_weights **out);
void *dn_weights_data(const dn_weights *w);
size_t dn_weights_bytes(const dn_weights *w);
void dn_weights_release(dn_weights *w);
int dn_weights_live(void); /* copies alive (tests) */

const char *dn_version(void); /* "oneDNN 2.6.3 (cpu_runtime omp)" */
bool dn_impl_is_reference(const char *impl);

#endif
