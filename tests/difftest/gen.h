/* korch-difftest's graph generator: random small ONNX models, a pure
 * function of a 64-bit seed (the same seed always writes the same bytes),
 * so that a failing seed reproduces exactly. See docs/difftest.md. */
#ifndef KORCH_DIFFTEST_GEN_H
#define KORCH_DIFFTEST_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* The generator's output version: a change that alters the model of any
 * seed must bump it, and then the seed lists (regression-seeds.txt,
 * known-failures.txt) must be derived again. */
#define DT_GEN_VERSION 1

/* Op coverage: how often each generated pattern was emitted. */
#define DT_MAX_KINDS 256
typedef struct dt_coverage {
    int n;
    char names[DT_MAX_KINDS][32];
    long counts[DT_MAX_KINDS];
} dt_coverage;

void dt_coverage_add(dt_coverage *c, const char *name, long count);
void dt_coverage_merge(dt_coverage *into, const dt_coverage *from);
void dt_coverage_print(const dt_coverage *c, FILE *out);

typedef struct dt_gen_info {
    int n_nodes; /* ONNX nodes written */
    int n_inputs, n_outputs;
    dt_coverage coverage; /* of this model */
} dt_gen_info;

/* Optional features (--features): each adds patterns drawn from a random
 * stream of its own, so that without them every seed writes exactly the
 * model generator version DT_GEN_VERSION always wrote (old campaign results
 * and the seed lists stay valid). docs/difftest.md, "Features". */
enum {
    DT_FEAT_HALF = 1,   /* float16/bfloat16 graph inputs, outputs and initializers, with Casts */
    DT_FEAT_QDQ = 2,    /* QuantizeLinear -> DequantizeLinear pairs, dequantized int8/uint8 weights */
    DT_FEAT_LAYOUT = 4, /* the driver's: plans in both layouts (--layout auto); no generator change */
    DT_FEAT_RESIZE = 8, /* nearest Resize of the last axes by 2, 3 or to a size that is no multiple */
    DT_FEAT_INT8 = 16,  /* convolutions of dequantized exact values with symmetric int8 weights, quantized at
                         * graph outputs: korch's int8 kernels (docs/quantization.md) */
    DT_FEAT_HEAD = 32,  /* a 1x1 convolution of a channel concatenation of upsampled parts (a segmentation
                         * decode head): fission computes it part by part (docs/fission.md) */
    DT_FEAT_DYNQ = 64,  /* quantize_dynamic's MatMul: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul
                         * of exact values: integer matmuls (docs/quantization.md) */
    DT_FEAT_QOP = 128,  /* quantize_static's QOperator form: QuantizeLinear -> QLinearConv / QLinearMatMul ->
                         * DequantizeLinear of exact values (docs/quantization.md, "QOperator models") */
    DT_FEAT_INDEX = 256, /* OneHot and ScatterElements of constant indices (gen_index.c) */
    DT_FEAT_IF = 512,    /* run-time Ifs on a threshold, if-converted or opaque (gen_if.c) */
    DT_FEAT_EINSUM = 1024, /* Einsum products, transposes and sums (gen_einsum.c) */
};
/* The features the generator draws (LAYOUT is the driver's). */
#define DT_FEAT_GENERATOR \
    (DT_FEAT_HALF | DT_FEAT_QDQ | DT_FEAT_RESIZE | DT_FEAT_INT8 | DT_FEAT_HEAD | DT_FEAT_DYNQ | DT_FEAT_QOP | \
     DT_FEAT_INDEX | DT_FEAT_IF | DT_FEAT_EINSUM)
/* The features' own version: bump it when a feature's models change. */
#define DT_FEAT_VERSION 1

/* "half,qdq,layout" (or "all", or "none") -> mask; false on an unknown name. */
bool dt_features_parse(const char *text, unsigned *mask);
/* The mask as "half,qdq,layout" ("none" when empty). */
const char *dt_features_name(unsigned mask, char *buf, size_t size);

/* Writes the model of `seed` to `path`. */
korch_status dt_generate(uint64_t seed, const char *path, dt_gen_info *info);
/* With generator features (DT_FEAT_HALF, DT_FEAT_QDQ); 0: dt_generate. */
korch_status dt_generate_features(uint64_t seed, unsigned features, const char *path, dt_gen_info *info);

#endif
