/* HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix (opset
 * 17-18): the constant tables of the signal operators (windows to multiply
 * STFT frames by, a filterbank to turn a spectrogram into mel bands). Each
 * depends only on its inputs, which korch needs constant (they decide the
 * output's shape), so the value is computed at inference and the frontend
 * folds it to a constant; run copies it out.
 *
 * The windows are the cosine sums a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
 * for n in [0, size), with N = size (periodic, the default) or size - 1
 * (symmetric), evaluated in double with the exact pi: the spec's own function
 * bodies compute the same in float32 with Tau = 6.2831853. */
#include <math.h>
#include <stdlib.h>

#include "ops/layout.h"

/* output_datatype (default float32): korch computes float32 and float64. */
static korch_status signal_output_dtype(const korch_op_ctx *ctx, korch_dtype *out) {
    int64_t v = korch_node_attr_int(ctx->node, "output_datatype", KORCH_DTYPE_FLOAT32);
    if (v < 0 || v > 64 || !korch_dtype_is_valid((int32_t)v))
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"output_datatype\" (%lld) is not an ONNX "
                                                            "data type", (long long)v);
    *out = (korch_dtype)v;
    if (*out != KORCH_DTYPE_FLOAT32 && *out != KORCH_DTYPE_FLOAT64)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "output_datatype %s (korch does float32 and float64)",
                              korch_dtype_name(*out));
    return KORCH_OK;
}

/* A constant scalar input (a one-element 1-D tensor is taken as one too)
 * of one of the dtypes a and b, read as a double. */
static korch_status signal_scalar(const korch_op_ctx *ctx, int i, const char *role, korch_dtype a, korch_dtype b,
                                  double *out) {
    KORCH_TRY(korch_op_require_constant(ctx, i, role));
    const korch_tensor *t = ctx->inputs[i];
    if (t->dtype != a && t->dtype != b) {
        bool half = t->dtype == KORCH_DTYPE_FLOAT16 || t->dtype == KORCH_DTYPE_BFLOAT16;
        return korch_op_error(ctx, half ? KORCH_ERR_UNSUPPORTED : KORCH_ERR_INVALID_MODEL, "%s of dtype %s (%s or %s)",
                              role, korch_dtype_name(t->dtype), korch_dtype_name(a), korch_dtype_name(b));
    }
    if (korch_tensor_numel(t) != 1 || t->shape.rank > 1) {
        char buf[96];
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s must be a scalar, has shape %s", role,
                              korch_shape_format(&t->shape, buf, sizeof buf));
    }
    *out = korch_tensor_get_f64(t, 0);
    return KORCH_OK;
}

/* An int32/int64 scalar input that is a count: in [1, KORCH_MAX_ELEMENTS]. */
static korch_status signal_count(const korch_op_ctx *ctx, int i, const char *role, int64_t *out) {
    double v;
    KORCH_TRY(signal_scalar(ctx, i, role, KORCH_DTYPE_INT64, KORCH_DTYPE_INT32, &v));
    *out = korch_tensor_get_i64(ctx->inputs[i], 0); /* exact, unlike v beyond 2^53 */
    if (*out < 1 || *out > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s %lld is not a positive size", role, (long long)*out);
    return KORCH_OK;
}

static void signal_store(korch_tensor *y, int64_t i, double v) {
    if (y->dtype == KORCH_DTYPE_FLOAT32) ((float *)y->data)[i] = (float)v;
    else ((double *)y->data)[i] = v;
}

/* ---- the windows -------------------------------------------------------------- */

static korch_status window_value(const korch_op_ctx *ctx, double a0, double a1, double a2, korch_tensor *y) {
    int64_t size;
    korch_dtype t;
    KORCH_TRY(signal_count(ctx, 0, "size", &size));
    KORCH_TRY(signal_output_dtype(ctx, &t));
    int64_t periodic = korch_node_attr_int(ctx->node, "periodic", 1);
    if (periodic != 0 && periodic != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"periodic\" is %lld, must be 0 or 1",
                              (long long)periodic);
    korch_shape shape = {.rank = 1, .dims = {size}};
    KORCH_TRY(korch_tensor_alloc(y, t, &shape));
    /* A symmetric window of size 1 has N = 0: NaN (0/0), as the spec's
     * formula and its function body give. */
    double n_den = periodic ? (double)size : (double)(size - 1);
    for (int64_t n = 0; n < size; n++) {
        double a = n_den > 0 ? 2.0 * M_PI * (double)n / n_den : NAN;
        signal_store(y, n, a0 - a1 * cos(a) + a2 * cos(2.0 * a));
    }
    return KORCH_OK;
}

static korch_status run_window(korch_op_ctx *ctx, double a0, double a1, double a2) {
    korch_tensor value = {0};
    KORCH_TRY(window_value(ctx, a0, a1, a2, &value));
    return korch_op_store_output(ctx, &value);
}

static korch_status infer_hann(korch_op_ctx *ctx) { return window_value(ctx, 0.5, 0.5, 0.0, ctx->outputs[0]); }
static korch_status run_hann(korch_op_ctx *ctx) { return run_window(ctx, 0.5, 0.5, 0.0); }

/* The spec's Hamming coefficients are 0.54347826087 and 0.45652173913:
 * 25/46 and 21/46. */
static korch_status infer_hamming(korch_op_ctx *ctx) {
    return window_value(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0, ctx->outputs[0]);
}
static korch_status run_hamming(korch_op_ctx *ctx) { return run_window(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0); }

static korch_status infer_blackman(korch_op_ctx *ctx) { return window_value(ctx, 0.42, 0.5, 0.08, ctx->outputs[0]); }
static korch_status run_blackman(korch_op_ctx *ctx) { return run_window(ctx, 0.42, 0.5, 0.08); }

const korch_op_def korch_op_def_HannWindow = {
    .kind = KORCH_OP_HannWindow, .op_type = "HannWindow", .opset_min = 17, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_hann, .run = run_hann, .flops = korch_layout_no_flops,
};

const korch_op_def korch_op_def_HammingWindow = {
    .kind = KORCH_OP_HammingWindow, .op_type = "HammingWindow", .opset_min = 17, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_hamming, .run = run_hamming, .flops = korch_layout_no_flops,
};

const korch_op_def korch_op_def_BlackmanWindow = {
    .kind = KORCH_OP_BlackmanWindow, .op_type = "BlackmanWindow", .opset_min = 17, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_blackman, .run = run_blackman, .flops = korch_layout_no_flops,
};

/* ---- MelWeightMatrix ------------------------------------------------------------ */

/* The spec defines the mel scale (mel(f) = 2595 log10(1 + f / 700)) and the
 * output's shape, [dft_length / 2 + 1, num_mel_bins], with triangles peaking
 * at 1; the triangles themselves are those of ONNX's reference (the backend
 * test's and onnxruntime's): num_mel_bins + 2 points evenly spaced in mel
 * from lower_edge_hertz, a step of (mel(upper) - mel(lower)) /
 * (num_mel_bins + 2), each mapped to spectrogram bin
 * floor((dft_length + 1) * hz / sample_rate). Mel band i rises linearly from
 * point i to point i + 1 and falls to point i + 2. A triangle reaching past
 * the spectrogram (edges above sample_rate / 2, or below 0) is a model
 * error: the reference would index out of range. */
static korch_status mel_value(const korch_op_ctx *ctx, korch_tensor *y) {
    int64_t mel_bins, dft_length, sample_rate;
    double lower, upper;
    korch_dtype t;
    KORCH_TRY(signal_count(ctx, 0, "num_mel_bins", &mel_bins));
    KORCH_TRY(signal_count(ctx, 1, "dft_length", &dft_length));
    KORCH_TRY(signal_count(ctx, 2, "sample_rate", &sample_rate));
    KORCH_TRY(signal_scalar(ctx, 3, "lower_edge_hertz", KORCH_DTYPE_FLOAT32, KORCH_DTYPE_FLOAT64, &lower));
    KORCH_TRY(signal_scalar(ctx, 4, "upper_edge_hertz", KORCH_DTYPE_FLOAT32, KORCH_DTYPE_FLOAT64, &upper));
    KORCH_TRY(signal_output_dtype(ctx, &t));
    int64_t spec_bins = dft_length / 2 + 1;
    korch_shape shape = {.rank = 2, .dims = {spec_bins, mel_bins}};
    if (korch_shape_numel(&shape) < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    int64_t *point = malloc((size_t)(mel_bins + 2) * sizeof *point);
    if (!point) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory (%lld mel bins)", (long long)mel_bins);
    double low_mel = 2595.0 * log10(1.0 + lower / 700.0), high_mel = 2595.0 * log10(1.0 + upper / 700.0);
    double step = (high_mel - low_mel) / (double)(mel_bins + 2);
    korch_status st = KORCH_OK;
    for (int64_t i = 0; i < mel_bins + 2 && st == KORCH_OK; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + low_mel) / 2595.0) - 1.0);
        double bin = floor((double)(dft_length + 1) * hz / (double)sample_rate);
        /* finite and in int64 range; the range check below does the rest */
        if (!(fabs(bin) <= (double)KORCH_MAX_ELEMENTS))
            st = korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                "mel point %lld is at %g Hz, not a spectrogram bin (lower_edge_hertz %g, "
                                "upper_edge_hertz %g)", (long long)i, hz, lower, upper);
        else point[i] = (int64_t)bin;
    }
    for (int64_t i = 0; i < mel_bins && st == KORCH_OK; i++) {
        int64_t left = point[i], center = point[i + 1], right = point[i + 2];
        /* the rows band i writes: [left, center] rising (just center when
         * left == center, none when left > center), [center, right) falling */
        bool any = false;
        int64_t lo = 0, hi = 0;
        if (left <= center) {
            any = true;
            lo = left;
            hi = center;
        }
        if (right > center) {
            if (!any) lo = center;
            any = true;
            hi = right - 1;
        }
        if (any && (lo < 0 || hi >= spec_bins))
            st = korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                                "mel band %lld covers spectrogram bins %lld..%lld, outside [0, %lld) "
                                "(lower_edge_hertz %g, upper_edge_hertz %g, sample_rate %lld)",
                                (long long)i, (long long)lo, (long long)hi, (long long)spec_bins, lower, upper,
                                (long long)sample_rate);
    }
    if (st == KORCH_OK) st = korch_tensor_alloc(y, t, &shape);
    for (int64_t i = 0; i < mel_bins && st == KORCH_OK; i++) {
        int64_t left = point[i], center = point[i + 1], right = point[i + 2];
        if (center == left) {
            signal_store(y, center * mel_bins + i, 1.0);
        } else {
            for (int64_t j = left; j <= center; j++)
                signal_store(y, j * mel_bins + i, (double)(j - left) / (double)(center - left));
        }
        for (int64_t j = center; j < right; j++)
            signal_store(y, j * mel_bins + i, (double)(right - j) / (double)(right - center));
    }
    free(point);
    return st;
}

static korch_status infer_mel(korch_op_ctx *ctx) { return mel_value(ctx, ctx->outputs[0]); }

static korch_status run_mel(korch_op_ctx *ctx) {
    korch_tensor value = {0};
    KORCH_TRY(mel_value(ctx, &value));
    return korch_op_store_output(ctx, &value);
}

const korch_op_def korch_op_def_MelWeightMatrix = {
    .kind = KORCH_OP_MelWeightMatrix, .op_type = "MelWeightMatrix", .opset_min = 17, .opset_max = 18,
    .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_mel, .run = run_mel, .flops = korch_layout_no_flops,
};
