/* The oneDNN kernel korch_dnnl_build makes for a spec and a schedule, as
 * plain data: the construction parameters `korch export` writes into
 * generated C that calls the oneDNN C API itself (src/export/export_dnnl.c).
 * The primitive descriptor, post-ops, layouts and thread count are the
 * backend's own (dn_analyze + the schedule's variant), so the exported kernel
 * is the kernel korch runs. */
#ifndef KORCH_BACKEND_DNNL_DNNL_EXPORT_H
#define KORCH_BACKEND_DNNL_DNNL_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

#define KORCH_DNNL_MAX_POST 16

/* a tensor as oneDNN sees it: logical dims, element strides of the dense
 * pgraph buffer (f32) */
typedef struct korch_dnnl_tensor {
    int ndims;
    int64_t dims[8];
    int64_t strides[8];
} korch_dnnl_tensor;

typedef struct korch_dnnl_post {
    bool binary;      /* binary post-op; else eltwise */
    const char *alg;  /* oneDNN algorithm name without "dnnl_", e.g. "eltwise_gelu_erf" */
    float alpha, beta;
    int slot;         /* binary: spec input index of the second operand */
    korch_dnnl_tensor operand;
} korch_dnnl_post;

typedef struct korch_dnnl_params {
    korch_linear_op op;
    int spatial;
    int64_t strides[3], dilates[3], pad_l[3], pad_r[3]; /* dilates: oneDNN counts the gaps */
    int src_slot, wei_slot, bias_slot; /* spec input indices; bias_slot -1: no bias */
    bool wei_constant;                 /* weights reordered once, at load */
    korch_dnnl_tensor src, wei, bias, dst;
    int n_post;
    korch_dnnl_post post[KORCH_DNNL_MAX_POST];
    bool blocked;     /* activations reordered to oneDNN's preferred layout around the primitive */
    int threads;      /* 1: the kernel runs on one thread; 0: the session's thread count */
    bool bf16;        /* operands converted to bfloat16, float32 sums and destination (docs/precision.md) */
    int src_q;        /* int8 (docs/quantization.md): 0 float32; 1 a u8, 2 an s8 source, (q - src_zp) * src_scale,
                       * with the weights recovered as int8 at load (dnnl_int8_weights.inc) */
    int32_t src_zp;
    float src_scale;
    int dst_q;        /* 0 float32; 1 u8, 2 s8 destination: saturate(rint(chain) + dst_zp) */
    int32_t dst_zp;
    int bf16_io;      /* bf16 values stored in 16 bits (dnnl_bf16.c): 1 the source, 2 the weights, 4 the destination */
    /* an integer kernel (MatMulInteger, ConvInteger, QLinear*: dnnl_imatmul.c):
     * the exact int32 sum of the u8/s8 source (src_q) times the constant's
     * integers as int8 (wei_int: the constant's type, 1 int8, 2 uint8, 3
     * int16, 4 int32, 5 int64; every value in int8), an s32 destination (or,
     * with dst_q, the fused requantization: korch_dnnl_export_requant); the
     * source zero point src_zp, or the scalar 8-bit kernel input zp_slot
     * (>= 0; uint8 when zp_u8), subtracted after (dnnl_zp_correction.inc) */
    bool imatmul;
    int wei_int;
    int zp_slot;
    bool zp_u8;
    char text[256];   /* human-readable chain ("conv nhwc 3x3 s1 +bias +eltwise_relu") */
} korch_dnnl_params;

/* schedule NULL or "": the backend's default variant for `threads` threads.
 * KORCH_ERR_UNSUPPORTED with a reason when oneDNN cannot express the spec. */
korch_status korch_dnnl_export_params(const korch_kernel_spec *spec, const char *schedule, int threads,
                                      korch_dnnl_params *out);

/* An integer kernel's fused requantization (imatmul with dst_q): its s32
 * bias and float32 output scale per output channel (malloc'd, *channels
 * values each). *bias = *scales = NULL, *channels = 0 for any other kernel. */
korch_status korch_dnnl_export_requant(const korch_kernel_spec *spec, int32_t **bias, float **scales,
                                       int64_t *channels);

#endif
