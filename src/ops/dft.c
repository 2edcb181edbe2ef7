/* DFT and STFT (opset 17-18): discrete Fourier transforms of a real
 * ([..., 1]) or complex ([..., 2]) signal; the output is always complex,
 * [..., 2] = (real, imaginary).
 *
 * DFT transforms along `axis` (any dimension but the last), over dft_length
 * points: the signal is cut or zero-padded to that length. inverse=1 is the
 * inverse transform, scaled by 1/dft_length (numpy.fft.ifft). onesided=1
 * keeps bins 0..dft_length/2, the rest being conjugates; the spec allows it
 * for real input only, and not with inverse.
 *
 * STFT cuts [batch, signal_length, 1|2] into frames of frame_length points
 * (from the frame_length input or the window's length) every frame_step
 * points, multiplies each by the window (if any) and transforms it:
 * [batch, frames, bins, 2] with frames = (signal_length - frame_length) /
 * frame_step + 1, bins as DFT's onesided (default 1).
 *
 * Both are direct O(n^2) sums in double: a reference, not an FFT. */
#include <math.h>
#include <stdlib.h>

#include "ops/layout.h"

static bool dft_dtype_ok(korch_dtype t) { return t == KORCH_DTYPE_FLOAT32 || t == KORCH_DTYPE_FLOAT64; }

static korch_status dft_require_float(const korch_op_ctx *ctx, const char *role, korch_dtype t) {
    if (!dft_dtype_ok(t))
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "%s of dtype %s (korch does float32 and float64)", role,
                              korch_dtype_name(t));
    return KORCH_OK;
}

/* An int32/int64 scalar input that decides the output shape, so korch needs
 * it constant. A one-element 1-D tensor is taken as the scalar too. */
static korch_status dft_scalar(const korch_op_ctx *ctx, int i, const char *role, int64_t *out) {
    KORCH_TRY(korch_op_require_constant(ctx, i, role));
    const korch_tensor *t = ctx->inputs[i];
    if (t->dtype != KORCH_DTYPE_INT64 && t->dtype != KORCH_DTYPE_INT32)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s must be int64 or int32, got %s", role,
                              korch_dtype_name(t->dtype));
    if (korch_tensor_numel(t) != 1 || t->shape.rank > 1) {
        char buf[96];
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "%s must be a scalar, has shape %s", role,
                              korch_shape_format(&t->shape, buf, sizeof buf));
    }
    *out = korch_tensor_get_i64(t, 0);
    if (*out < 1 || *out > KORCH_MAX_ELEMENTS)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "%s %lld is not a positive size", role, (long long)*out);
    return KORCH_OK;
}

/* A 0/1 attribute ("Values can be 0 or 1"). */
static korch_status dft_flag(const korch_op_ctx *ctx, const char *name, int64_t dflt, bool *out) {
    int64_t v = korch_node_attr_int(ctx->node, name, dflt);
    if (v != 0 && v != 1)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "attribute \"%s\" is %lld, must be 0 or 1", name,
                              (long long)v);
    *out = v != 0;
    return KORCH_OK;
}

/* The last dimension holds 1 (real) or 2 (real, imaginary) values. */
static korch_status dft_complex_dim(const korch_op_ctx *ctx, const korch_shape *s, int min_rank) {
    char buf[96];
    if (s->rank < min_rank || s->dims[s->rank - 1] < 1 || s->dims[s->rank - 1] > 2)
        return korch_op_error(ctx, KORCH_ERR_SHAPE,
                              "input of shape %s: needs rank >= %d and a last dimension of 1 (real) or 2 (complex)",
                              korch_shape_format(s, buf, sizeof buf), min_rank);
    return KORCH_OK;
}

static int64_t dft_onesided_bins(int64_t length) { return length / 2 + 1; }

/* cos and sin of 2*pi*m/length for m in [0, length): the sum indexes them by
 * k*t mod length, so the angle stays exact however long the signal. */
typedef struct dft_twiddle {
    int64_t length;
    double *cos_, *sin_;
} dft_twiddle;

static korch_status dft_twiddle_make(const korch_op_ctx *ctx, int64_t length, dft_twiddle *w) {
    w->length = length;
    w->cos_ = malloc((size_t)length * sizeof *w->cos_);
    w->sin_ = malloc((size_t)length * sizeof *w->sin_);
    if (!w->cos_ || !w->sin_) {
        free(w->cos_);
        free(w->sin_);
        return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory (a DFT of %lld points)", (long long)length);
    }
    for (int64_t m = 0; m < length; m++) {
        double a = 2.0 * M_PI * (double)m / (double)length;
        w->cos_[m] = cos(a);
        w->sin_[m] = sin(a);
    }
    return KORCH_OK;
}

static void dft_twiddle_free(dft_twiddle *w) {
    free(w->cos_);
    free(w->sin_);
}

/* out[k] = scale * sum_{t < n} in[t] * exp(sign * 2*pi*i * k*t / length) for
 * k < bins; sign is -1 forward, +1 inverse. The n input points are the
 * signal after cutting to dft_length (n <= length); zero padding adds nothing. */
static void dft_line(const dft_twiddle *w, const double *in_re, const double *in_im, int64_t n, int64_t bins,
                     bool inverse, double *out_re, double *out_im) {
    double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)w->length : 1.0;
    for (int64_t k = 0; k < bins; k++) {
        double re = 0, im = 0;
        int64_t m = 0; /* k*t mod length */
        for (int64_t t = 0; t < n; t++) {
            double c = w->cos_[m], s = sign * w->sin_[m];
            re += in_re[t] * c - in_im[t] * s;
            im += in_re[t] * s + in_im[t] * c;
            m += k; /* k < length: bins never exceed the transform's points */
            if (m >= w->length) m -= w->length;
        }
        out_re[k] = re * scale;
        out_im[k] = im * scale;
    }
}

static void dft_store(korch_tensor *y, int64_t i, double v) {
    if (y->dtype == KORCH_DTYPE_FLOAT32) ((float *)y->data)[i] = (float)v;
    else ((double *)y->data)[i] = v;
}

/* Four buffers of `count` doubles each in one block: the input line
 * (re, im) and the output line (re, im). */
static korch_status dft_buffers(const korch_op_ctx *ctx, int64_t count, double **block) {
    *block = malloc((size_t)(4 * count) * sizeof **block);
    if (!*block) return korch_op_error(ctx, KORCH_ERR_OUT_OF_MEMORY, "out of memory (%lld points)", (long long)count);
    return KORCH_OK;
}

/* ---- DFT ------------------------------------------------------------------ */

typedef struct dft_params {
    int axis;       /* of the input; never its last (complex) dimension */
    int64_t length; /* dft_length: points of the transform */
    bool inverse, onesided;
    korch_shape out;
} dft_params;

static korch_status dft_read(const korch_op_ctx *ctx, dft_params *p) {
    const korch_tensor *x = ctx->inputs[0];
    KORCH_TRY(dft_require_float(ctx, "input", x->dtype));
    KORCH_TRY(dft_complex_dim(ctx, &x->shape, 2));
    int rank = x->shape.rank;
    /* opset 20's range, [-r, -2] and [0, r-2]: every dimension but the last */
    int64_t axis = korch_node_attr_int(ctx->node, "axis", 1);
    if (axis < -rank || axis == -1 || axis > rank - 2)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL,
                              "axis %lld is outside [-%d, -2] and [0, %d] (the last dimension is real/imaginary)",
                              (long long)axis, rank, rank - 2);
    p->axis = (int)(axis < 0 ? axis + rank : axis);
    KORCH_TRY(dft_flag(ctx, "inverse", 0, &p->inverse));
    KORCH_TRY(dft_flag(ctx, "onesided", 0, &p->onesided));
    if (p->inverse && p->onesided)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "onesided and inverse cannot both be 1");
    if (p->onesided && x->shape.dims[rank - 1] == 2)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "onesided=1 with a complex input: the spec allows a "
                                                            "onesided output of a real input only");
    if (korch_op_has_input(ctx, 1)) {
        KORCH_TRY(dft_scalar(ctx, 1, "dft_length", &p->length));
    } else {
        p->length = x->shape.dims[p->axis];
        if (p->length < 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "a DFT over axis %d of size 0 (and no dft_length)", p->axis);
    }
    p->out = x->shape;
    p->out.dims[p->axis] = p->onesided ? dft_onesided_bins(p->length) : p->length;
    p->out.dims[rank - 1] = 2;
    if (korch_shape_numel(&p->out) < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    return KORCH_OK;
}

/* The reference transforms directly, n products per output bin: refused
 * beyond 2^36 flops (a minute or more), which a long constant signal folded
 * at load or a hostile model would otherwise spend. */
#define DFT_MAX_FLOPS ((int64_t)1 << 36)

static korch_status dft_bound(const korch_op_ctx *ctx, int64_t flops) {
    if (flops > DFT_MAX_FLOPS)
        return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED,
                              "the direct transform would take %.3g flops (korch's reference stops at 2^36)",
                              (double)flops);
    return KORCH_OK;
}

static int64_t dft_flops(const korch_op_ctx *ctx);
static int64_t stft_flops(const korch_op_ctx *ctx);

static korch_status infer_dft(korch_op_ctx *ctx) {
    dft_params p;
    KORCH_TRY(dft_read(ctx, &p));
    KORCH_TRY(dft_bound(ctx, dft_flops(ctx)));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &p.out);
    return KORCH_OK;
}

static korch_status run_dft(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0];
    korch_tensor *y = ctx->outputs[0];
    dft_params p;
    KORCH_TRY(dft_read(ctx, &p));
    int rank = x->shape.rank;
    int64_t outer = 1, inner = 1, parts = x->shape.dims[rank - 1];
    for (int k = 0; k < p.axis; k++) outer *= x->shape.dims[k];
    for (int k = p.axis + 1; k < rank - 1; k++) inner *= x->shape.dims[k];
    int64_t n_in = x->shape.dims[p.axis], n = n_in < p.length ? n_in : p.length, bins = p.out.dims[p.axis];
    if (outer * inner == 0) return KORCH_OK;
    dft_twiddle w;
    double *buf;
    int64_t cap = n > bins ? n : bins;
    KORCH_TRY(dft_buffers(ctx, cap, &buf));
    korch_status st = dft_twiddle_make(ctx, p.length, &w);
    if (st != KORCH_OK) {
        free(buf);
        return st;
    }
    double *in_re = buf, *in_im = buf + cap, *out_re = buf + 2 * cap, *out_im = buf + 3 * cap;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t t = 0; t < n; t++) {
                int64_t at = ((o * n_in + t) * inner + i) * parts;
                in_re[t] = korch_tensor_get_f64(x, at);
                in_im[t] = parts == 2 ? korch_tensor_get_f64(x, at + 1) : 0.0;
            }
            dft_line(&w, in_re, in_im, n, bins, p.inverse, out_re, out_im);
            for (int64_t k = 0; k < bins; k++) {
                int64_t at = ((o * bins + k) * inner + i) * 2;
                dft_store(y, at, out_re[k]);
                dft_store(y, at + 1, out_im[k]);
            }
        }
    dft_twiddle_free(&w);
    free(buf);
    return KORCH_OK;
}

/* Eight per term of the direct sum (a complex multiply-add), over at most
 * the input's points on the axis. */
static int64_t dft_flops(const korch_op_ctx *ctx) {
    dft_params p;
    if (dft_read(ctx, &p) != KORCH_OK) return 0;
    int64_t n = ctx->inputs[0]->shape.dims[p.axis], f;
    if (n > p.length) n = p.length;
    if (korch_mul_overflow_i64(korch_shape_numel(&p.out) / 2, 8 * n, &f)) return INT64_MAX;
    return f;
}

const korch_op_def korch_op_def_DFT = {
    .kind = KORCH_OP_DFT, .op_type = "DFT", .opset_min = 17, .opset_max = 18,
    .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_dft, .run = run_dft, .flops = dft_flops,
};

/* ---- STFT ----------------------------------------------------------------- */

typedef struct stft_params {
    int64_t step, length; /* frame_step, frame_length */
    bool onesided;
    korch_shape out; /* [batch, frames, bins, 2] */
} stft_params;

static korch_status stft_read(const korch_op_ctx *ctx, stft_params *p) {
    const korch_tensor *x = ctx->inputs[0];
    char buf[96];
    KORCH_TRY(dft_require_float(ctx, "signal", x->dtype));
    KORCH_TRY(dft_complex_dim(ctx, &x->shape, 3));
    if (x->shape.rank != 3)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "signal of shape %s: STFT needs [batch, signal_length, 1 or 2]",
                              korch_shape_format(&x->shape, buf, sizeof buf));
    KORCH_TRY(dft_flag(ctx, "onesided", 1, &p->onesided));
    if (p->onesided && x->shape.dims[2] == 2)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "onesided=1 (the default) with a complex signal: the "
                                                            "spec allows a onesided output of a real signal only");
    KORCH_TRY(dft_scalar(ctx, 1, "frame_step", &p->step));
    bool has_window = korch_op_has_input(ctx, 2), has_length = korch_op_has_input(ctx, 3);
    if (has_window) {
        const korch_tensor *win = ctx->inputs[2];
        if (win->dtype != x->dtype)
            return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "window of dtype %s, the signal's is %s",
                                  korch_dtype_name(win->dtype), korch_dtype_name(x->dtype));
        if (win->shape.rank != 1 || win->shape.dims[0] < 1)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "window of shape %s: needs a non-empty 1-D window",
                                  korch_shape_format(&win->shape, buf, sizeof buf));
        p->length = win->shape.dims[0];
    }
    if (has_length) {
        int64_t length;
        KORCH_TRY(dft_scalar(ctx, 3, "frame_length", &length));
        if (has_window && length != p->length)
            return korch_op_error(ctx, KORCH_ERR_SHAPE, "frame_length %lld differs from the window's length %lld",
                                  (long long)length, (long long)p->length);
        p->length = length;
    }
    if (!has_window && !has_length)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "STFT needs a window or a frame_length");
    int64_t signal = x->shape.dims[1];
    if (p->length > signal)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "frame_length %lld is longer than the signal (%lld)",
                              (long long)p->length, (long long)signal);
    p->out = (korch_shape){.rank = 4,
                           .dims = {x->shape.dims[0], (signal - p->length) / p->step + 1,
                                    p->onesided ? dft_onesided_bins(p->length) : p->length, 2}};
    if (korch_shape_numel(&p->out) < 0)
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "the output would hold more than %lld elements",
                              (long long)KORCH_MAX_ELEMENTS);
    return KORCH_OK;
}

static korch_status infer_stft(korch_op_ctx *ctx) {
    stft_params p;
    KORCH_TRY(stft_read(ctx, &p));
    KORCH_TRY(dft_bound(ctx, stft_flops(ctx)));
    korch_op_set_output(ctx, 0, ctx->inputs[0]->dtype, &p.out);
    return KORCH_OK;
}

static korch_status run_stft(korch_op_ctx *ctx) {
    const korch_tensor *x = ctx->inputs[0], *win = korch_op_has_input(ctx, 2) ? ctx->inputs[2] : NULL;
    korch_tensor *y = ctx->outputs[0];
    stft_params p;
    KORCH_TRY(stft_read(ctx, &p));
    int64_t batch = p.out.dims[0], frames = p.out.dims[1], bins = p.out.dims[2];
    int64_t signal = x->shape.dims[1], parts = x->shape.dims[2];
    if (batch * frames == 0) return KORCH_OK;
    dft_twiddle w;
    double *buf;
    KORCH_TRY(dft_buffers(ctx, p.length, &buf)); /* bins <= frame_length */
    korch_status st = dft_twiddle_make(ctx, p.length, &w);
    if (st != KORCH_OK) {
        free(buf);
        return st;
    }
    double *in_re = buf, *in_im = buf + p.length, *out_re = buf + 2 * p.length, *out_im = buf + 3 * p.length;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < p.length; t++) {
                int64_t at = (b * signal + f * p.step + t) * parts;
                double scale = win ? korch_tensor_get_f64(win, t) : 1.0;
                in_re[t] = korch_tensor_get_f64(x, at) * scale;
                in_im[t] = parts == 2 ? korch_tensor_get_f64(x, at + 1) * scale : 0.0;
            }
            dft_line(&w, in_re, in_im, p.length, bins, false, out_re, out_im);
            for (int64_t k = 0; k < bins; k++) {
                int64_t at = ((b * frames + f) * bins + k) * 2;
                dft_store(y, at, out_re[k]);
                dft_store(y, at + 1, out_im[k]);
            }
        }
    dft_twiddle_free(&w);
    free(buf);
    return KORCH_OK;
}

static int64_t stft_flops(const korch_op_ctx *ctx) {
    stft_params p;
    int64_t f;
    if (stft_read(ctx, &p) != KORCH_OK) return 0;
    if (korch_mul_overflow_i64(korch_shape_numel(&p.out) / 2, 8 * p.length, &f)) return INT64_MAX;
    return f;
}

const korch_op_def korch_op_def_STFT = {
    .kind = KORCH_OP_STFT, .op_type = "STFT", .opset_min = 17, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_stft, .run = run_stft, .flops = stft_flops,
};
