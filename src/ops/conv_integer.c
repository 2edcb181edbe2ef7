/* ConvInteger and QLinearConv (opset 10): grouped, strided, dilated, padded
 * convolution of uint8/int8 operands with exact integer accumulation, over
 * 1-3 spatial dims (the same attributes as Conv, read by window.c).
 *
 *   ConvInteger: Y(int32) = conv(x - x_zero_point, w - w_zero_point)
 *   QLinearConv: acc = conv(x - x_zero_point, w - w_zero_point) + B
 *                y = saturate(rint(acc * (x_scale * w_scale[m] / y_scale)) + y_zero_point)
 *
 * Padding contributes x_zero_point, i.e. zero after the subtraction (ONNX's
 * reference pads with the zero point). x's zero point is per tensor; w's
 * zero point and scale are per tensor or per output channel; B is int32 per
 * output channel. The requantization is float32, as in QLinearMatMul
 * (matmul_integer.c). A direct loop nest: the reference is meant to be
 * obviously right, not fast. */
#include "ops/conv_kernel.h"
#include "ops/conv_shape.h"
#include "ops/flop_count.h"
#include "ops/quant.h"
#include "ops/window.h"

typedef korch_conv_geometry iconv_geometry;

/* ConvInteger is (x, w, x_zp, w_zp); QLinearConv is (x, x_scale, x_zp, w,
 * w_scale, w_zp, y_scale, y_zp, B). */
typedef struct iconv_inputs {
    int x, w, x_zp, w_zp, x_scale, w_scale, bias;
} iconv_inputs;

static const iconv_inputs CONV_INTEGER = {0, 1, 2, 3, -1, -1, -1};
static const iconv_inputs QLINEAR_CONV = {0, 3, 2, 5, 1, 4, 8};

/* A per-output-channel parameter: 1 value or out_channels values (1-D). */
static korch_status check_channel_param(const korch_op_ctx *ctx, int i, int64_t channels, const char *role) {
    char name[160], s[96];
    if (!korch_op_has_input(ctx, i)) return KORCH_OK;
    const korch_shape *shape = &ctx->inputs[i]->shape;
    int64_t numel = korch_shape_numel(shape);
    if ((numel == 1 && shape->rank <= 1) || (shape->rank == 1 && numel == channels)) return KORCH_OK;
    return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s \"%s\" has shape %s; expected a scalar or [%lld] (per output channel)",
                          role, korch_printable(korch_op_input_name(ctx, i), name, sizeof name),
                          korch_shape_format(shape, s, sizeof s), (long long)channels);
}

static korch_status geometry_read(const korch_op_ctx *ctx, const iconv_inputs *io, iconv_geometry *g) {
    KORCH_TRY(korch_quant_require_int8(ctx, io->x, "x"));
    KORCH_TRY(korch_quant_require_int8(ctx, io->w, "w"));
    KORCH_TRY(korch_quant_require_same_dtype(ctx, io->x_zp, io->x, "x's zero point"));
    KORCH_TRY(korch_quant_require_same_dtype(ctx, io->w_zp, io->w, "w's zero point"));
    KORCH_TRY(korch_quant_require_scalar(ctx, io->x_zp, "x's zero point"));
    char xs[96];
    KORCH_TRY(korch_conv_geometry_read(ctx, io->x, io->w, g));
    KORCH_TRY(check_channel_param(ctx, io->w_zp, g->out_channels, "w's zero point"));
    if (io->x_scale >= 0) {
        KORCH_TRY(korch_op_require_dtype(ctx, io->x_scale, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(korch_quant_require_scalar(ctx, io->x_scale, "x_scale"));
        KORCH_TRY(korch_op_require_dtype(ctx, io->w_scale, KORCH_DTYPE_FLOAT32));
        KORCH_TRY(check_channel_param(ctx, io->w_scale, g->out_channels, "w_scale"));
    }
    if (io->bias >= 0 && korch_op_has_input(ctx, io->bias)) {
        KORCH_TRY(korch_op_require_dtype(ctx, io->bias, KORCH_DTYPE_INT32));
        const korch_shape *b = &ctx->inputs[io->bias]->shape;
        if (b->rank != 1 || b->dims[0] != g->out_channels)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "B has shape %s; expected [%lld] (one bias per output channel)",
                                  korch_shape_format(b, xs, sizeof xs), (long long)g->out_channels);
    }
    return KORCH_OK;
}

static korch_shape output_shape(const korch_op_ctx *ctx, const iconv_geometry *g) {
    return korch_conv_output_shape(g, ctx->inputs[0]->shape.rank);
}

static inline int32_t channel_i32(const korch_tensor *t, int64_t m) {
    return korch_quant_get(t, t && korch_tensor_numel(t) > 1 ? m : 0);
}

typedef void (*iconv_store)(korch_op_ctx *ctx, int64_t index, int64_t channel, int64_t acc);

/* Calls store for every output element with the exact integer accumulator. */
static void iconv_run(korch_op_ctx *ctx, const iconv_inputs *io, const iconv_geometry *g, iconv_store store) {
    const korch_tensor *x = ctx->inputs[io->x], *wt = ctx->inputs[io->w];
    const korch_tensor *xzp = korch_op_has_input(ctx, io->x_zp) ? ctx->inputs[io->x_zp] : NULL;
    const korch_tensor *wzp = korch_op_has_input(ctx, io->w_zp) ? ctx->inputs[io->w_zp] : NULL;
    const korch_window *w = &g->w;
    int64_t in_size = korch_window_in_size(w), out_size = korch_window_out_size(w);
    int64_t taps = korch_window_kernel_size(w);
    int32_t zx = korch_quant_get(xzp, 0);
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t nm = 0; nm < g->batch * g->out_channels; nm++) {
        int64_t n = nm / g->out_channels, m = nm % g->out_channels, group = m / g->out_per_group;
        int32_t zw = channel_i32(wzp, m);
        for (int64_t o = 0; o < out_size; o++) {
            int64_t ow = o % w->out[2], oh = (o / w->out[2]) % w->out[1], od = o / (w->out[2] * w->out[1]);
            int64_t acc = 0;
            for (int64_t c = 0; c < g->channels_per_group; c++) {
                int64_t x0 = (n * g->channels + group * g->channels_per_group + c) * in_size;
                int64_t w0 = (m * g->channels_per_group + c) * taps;
                for (int64_t t = 0; t < taps; t++) {
                    int64_t kw = t % w->kernel[2], kh = (t / w->kernel[2]) % w->kernel[1];
                    int64_t kd = t / (w->kernel[2] * w->kernel[1]);
                    int64_t id = od * w->stride[0] + kd * w->dilation[0] - w->pad_begin[0];
                    int64_t ih = oh * w->stride[1] + kh * w->dilation[1] - w->pad_begin[1];
                    int64_t iw = ow * w->stride[2] + kw * w->dilation[2] - w->pad_begin[2];
                    if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1] || iw < 0 || iw >= w->in[2]) continue;
                    int32_t xv = korch_quant_get(x, x0 + (id * w->in[1] + ih) * w->in[2] + iw) - zx;
                    acc += (int64_t)xv * (korch_quant_get(wt, w0 + t) - zw);
                }
            }
            store(ctx, nm * out_size + o, m, acc);
        }
    }
}

static int64_t flops_common(const korch_op_ctx *ctx, const iconv_inputs *io) {
    iconv_geometry g;
    if (geometry_read(ctx, io, &g) != KORCH_OK) return 0;
    int64_t outputs = korch_flops_mul(korch_flops_mul(g.batch, g.out_channels), korch_window_out_size(&g.w));
    int64_t macs = korch_flops_mul(outputs, g.channels_per_group * korch_window_kernel_size(&g.w));
    return korch_flops_mul(2, macs);
}

/* ---- ConvInteger ---------------------------------------------------------- */

static korch_status infer_conv_integer(korch_op_ctx *ctx) {
    iconv_geometry g;
    KORCH_TRY(geometry_read(ctx, &CONV_INTEGER, &g));
    korch_shape out = output_shape(ctx, &g);
    korch_op_set_output(ctx, 0, KORCH_DTYPE_INT32, &out);
    return KORCH_OK;
}

static void store_int32(korch_op_ctx *ctx, int64_t index, int64_t channel, int64_t acc) {
    (void)channel;
    ((int32_t *)ctx->outputs[0]->data)[index] = (int32_t)(uint32_t)(uint64_t)acc;
}

static korch_status run_conv_integer(korch_op_ctx *ctx) {
    iconv_geometry g;
    KORCH_TRY(geometry_read(ctx, &CONV_INTEGER, &g));
    iconv_run(ctx, &CONV_INTEGER, &g, store_int32);
    return KORCH_OK;
}

static int64_t flops_conv_integer(const korch_op_ctx *ctx) { return flops_common(ctx, &CONV_INTEGER); }

const korch_op_def korch_op_def_ConvInteger = {
    .kind = KORCH_OP_ConvInteger, .op_type = "ConvInteger", .opset_min = 10, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_conv_integer, .run = run_conv_integer, .flops = flops_conv_integer,
};

/* ---- QLinearConv ---------------------------------------------------------- */

static korch_status infer_qlinear_conv(korch_op_ctx *ctx) {
    iconv_geometry g;
    KORCH_TRY(geometry_read(ctx, &QLINEAR_CONV, &g));
    KORCH_TRY(korch_op_require_dtype(ctx, 6, KORCH_DTYPE_FLOAT32));
    KORCH_TRY(korch_quant_require_scalar(ctx, 6, "y_scale"));
    KORCH_TRY(korch_quant_require_int8(ctx, 7, "y_zero_point"));
    KORCH_TRY(korch_quant_require_scalar(ctx, 7, "y_zero_point"));
    korch_shape out = output_shape(ctx, &g);
    korch_op_set_output(ctx, 0, ctx->inputs[7]->dtype, &out);
    return KORCH_OK;
}

static void store_requantized(korch_op_ctx *ctx, int64_t index, int64_t channel, int64_t acc) {
    korch_tensor *y = ctx->outputs[0];
    const korch_tensor *w_scale = ctx->inputs[4];
    float ws = ((const float *)w_scale->data)[korch_tensor_numel(w_scale) > 1 ? channel : 0];
    float multiplier = ((const float *)ctx->inputs[1]->data)[0] * ws / ((const float *)ctx->inputs[6]->data)[0];
    if (korch_op_has_input(ctx, 8)) acc += ((const int32_t *)ctx->inputs[8]->data)[channel];
    float v = (float)(int32_t)(uint32_t)(uint64_t)acc * multiplier;
    int32_t zp = korch_quant_get(ctx->inputs[7], 0);
    korch_quant_set(y, index, korch_quant_round_saturate(v, zp, korch_quant_min(y->dtype), korch_quant_max(y->dtype)));
}

static korch_status run_qlinear_conv(korch_op_ctx *ctx) {
    iconv_geometry g;
    KORCH_TRY(geometry_read(ctx, &QLINEAR_CONV, &g));
    iconv_run(ctx, &QLINEAR_CONV, &g, store_requantized);
    return KORCH_OK;
}

static int64_t flops_qlinear_conv(const korch_op_ctx *ctx) { return flops_common(ctx, &QLINEAR_CONV); }

const korch_op_def korch_op_def_QLinearConv = {
    .kind = KORCH_OP_QLinearConv, .op_type = "QLinearConv", .opset_min = 10, .opset_max = 18,
    .min_inputs = 8, .max_inputs = 9, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_qlinear_conv, .run = run_qlinear_conv, .flops = flops_qlinear_conv,
};
