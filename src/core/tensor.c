#include "core/tensor.h"

#include "core/half.h"
#include "core/memory.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t korch_dtype_size(korch_dtype dtype) {
    switch (dtype) {
    case KORCH_DTYPE_FLOAT32: return 4;
    case KORCH_DTYPE_UINT8: return 1;
    case KORCH_DTYPE_INT8: return 1;
    case KORCH_DTYPE_UINT16: return 2;
    case KORCH_DTYPE_INT16: return 2;
    case KORCH_DTYPE_INT32: return 4;
    case KORCH_DTYPE_INT64: return 8;
    case KORCH_DTYPE_BOOL: return 1;
    case KORCH_DTYPE_FLOAT16: return 2;
    case KORCH_DTYPE_BFLOAT16: return 2;
    case KORCH_DTYPE_FLOAT64: return 8;
    case KORCH_DTYPE_UINT32: return 4;
    case KORCH_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

const char *korch_dtype_name(korch_dtype dtype) {
    switch (dtype) {
    case KORCH_DTYPE_UNDEFINED: return "undefined";
    case KORCH_DTYPE_FLOAT32: return "float32";
    case KORCH_DTYPE_UINT8: return "uint8";
    case KORCH_DTYPE_INT8: return "int8";
    case KORCH_DTYPE_UINT16: return "uint16";
    case KORCH_DTYPE_INT16: return "int16";
    case KORCH_DTYPE_INT32: return "int32";
    case KORCH_DTYPE_INT64: return "int64";
    case KORCH_DTYPE_STRING: return "string";
    case KORCH_DTYPE_BOOL: return "bool";
    case KORCH_DTYPE_FLOAT16: return "float16";
    case KORCH_DTYPE_BFLOAT16: return "bfloat16";
    case KORCH_DTYPE_FLOAT64: return "float64";
    case KORCH_DTYPE_UINT32: return "uint32";
    case KORCH_DTYPE_UINT64: return "uint64";
    default: {
        /* ONNX types korch does not support, named for messages */
        static const char *const others[] = {[14] = "complex64", [15] = "complex128"};
        unsigned d = (unsigned)dtype;
        return d < sizeof others / sizeof others[0] && others[d] ? others[d] : "unknown";
    }
    }
}

bool korch_dtype_is_valid(int32_t onnx_type) { return onnx_type >= 1 && onnx_type <= 16; }

bool korch_mul_overflow_i64(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }
bool korch_add_overflow_i64(int64_t a, int64_t b, int64_t *out) { return __builtin_add_overflow(a, b, out); }

korch_shape korch_shape_make(int rank, const int64_t *dims) {
    korch_shape s = {0};
    s.rank = rank;
    for (int i = 0; i < rank && i < KORCH_MAX_RANK; i++) s.dims[i] = dims[i];
    return s;
}

int64_t korch_shape_numel(const korch_shape *shape) {
    int64_t n = 1;
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0) return -1;
        if (korch_mul_overflow_i64(n, shape->dims[i], &n) || n > KORCH_MAX_ELEMENTS) return -1;
    }
    return n;
}

bool korch_shape_equal(const korch_shape *a, const korch_shape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

char *korch_shape_format(const korch_shape *shape, char *buf, size_t size) {
    if (size == 0) return buf;
    if (shape->rank == 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < shape->rank && used < size; i++) {
        int n = snprintf(buf + used, size - used, i ? "x%lld" : "%lld", (long long)shape->dims[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
    return buf;
}

bool korch_shape_parse(const char *text, korch_shape *out) {
    korch_shape s = {0};
    const char *p = text;
    if (!p || !*p) return false;
    if (strcmp(p, "scalar") == 0) {
        *out = s;
        return true;
    }
    while (*p) {
        if (s.rank >= KORCH_MAX_RANK) return false;
        if (*p < '0' || *p > '9') return false;
        char *end = NULL;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > KORCH_MAX_ELEMENTS) return false;
        s.dims[s.rank++] = v;
        p = end;
        if (*p == 'x' || *p == ',') {
            p++;
            if (!*p) return false;
        } else if (*p) {
            return false;
        }
    }
    *out = s;
    return true;
}

bool korch_shape_broadcast(const korch_shape *a, const korch_shape *b, korch_shape *out) {
    korch_shape r = {0};
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db || db == 1) r.dims[i] = da;
        else if (da == 1) r.dims[i] = db;
        else return false;
    }
    *out = r;
    return true;
}

void korch_shape_strides(const korch_shape *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = shape->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape->dims[i];
    }
}

int korch_axis_normalize(int64_t axis, int rank) {
    if (axis < -rank || axis >= rank) return -1;
    return (int)(axis < 0 ? axis + rank : axis);
}

int64_t korch_tensor_numel(const korch_tensor *t) { return korch_shape_numel(&t->shape); }

size_t korch_tensor_bytes(const korch_tensor *t) {
    int64_t n = korch_tensor_numel(t);
    return n < 0 ? 0 : (size_t)n * korch_dtype_size(t->dtype);
}

korch_status korch_tensor_alloc(korch_tensor *t, korch_dtype dtype, const korch_shape *shape) {
    t->dtype = dtype;
    t->shape = *shape;
    t->data = NULL;
    t->owns_data = false;
    int64_t n = korch_shape_numel(shape);
    size_t esize = korch_dtype_size(dtype);
    if (n < 0) {
        char buf[128];
        return korch_error(KORCH_ERR_SHAPE, "tensor shape %s is negative or too large",
                           korch_shape_format(shape, buf, sizeof buf));
    }
    if (esize == 0) return korch_error(KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(dtype));
    size_t bytes = (size_t)n * esize;
    /* At least one element, so zero-sized tensors still have a valid pointer;
     * 64-byte aligned, so vector loads and non-temporal stores of generated
     * kernels do not split cache lines: with calloc's 16-byte alignment a
     * row softmax plan on graph inputs and outputs ran 2.6 ms instead of 1.9
     * (bench/kernels/RESULTS.md, 2026-11-27); large ones on huge pages
     * (core/memory.h). Zeroed, as calloc would. */
    size_t want = bytes ? bytes : esize;
    t->data = korch_buffer_alloc(want);
    if (t->data) memset(t->data, 0, want);
    if (!t->data) {
        char buf[128];
        return korch_error(KORCH_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for a %s tensor of shape %s", bytes,
                           korch_dtype_name(dtype), korch_shape_format(shape, buf, sizeof buf));
    }
    t->owns_data = true;
    return KORCH_OK;
}

korch_status korch_tensor_clone(const korch_tensor *src, korch_tensor *dst) {
    KORCH_TRY(korch_tensor_alloc(dst, src->dtype, &src->shape));
    size_t bytes = korch_tensor_bytes(src);
    if (bytes && src->data) memcpy(dst->data, src->data, bytes);
    return KORCH_OK;
}

void korch_tensor_free(korch_tensor *t) {
    if (t->owns_data) free(t->data);
    t->data = NULL;
    t->owns_data = false;
}

int64_t korch_tensor_get_i64(const korch_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KORCH_DTYPE_INT64: return ((const int64_t *)t->data)[i];
    case KORCH_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case KORCH_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case KORCH_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case KORCH_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case KORCH_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case KORCH_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
    case KORCH_DTYPE_UINT64: return (int64_t)((const uint64_t *)t->data)[i];
    case KORCH_DTYPE_BOOL: return ((const uint8_t *)t->data)[i] != 0;
    case KORCH_DTYPE_FLOAT32: return (int64_t)((const float *)t->data)[i];
    case KORCH_DTYPE_FLOAT64: return (int64_t)((const double *)t->data)[i];
    case KORCH_DTYPE_FLOAT16:
    case KORCH_DTYPE_BFLOAT16: return (int64_t)korch_half_load(t->dtype, t->data, i);
    default: return 0;
    }
}

double korch_tensor_get_f64(const korch_tensor *t, int64_t i) {
    switch (t->dtype) {
    case KORCH_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case KORCH_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case KORCH_DTYPE_FLOAT16:
    case KORCH_DTYPE_BFLOAT16: return korch_half_load(t->dtype, t->data, i);
    default: return (double)korch_tensor_get_i64(t, i);
    }
}

float korch_jitter_sign(uint64_t seed, int64_t i) {
    uint64_t z = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) & 1 ? 1.0f : -1.0f;
}

void korch_tensor_jitter(korch_tensor *t, uint64_t seed) {
    if (t->dtype != KORCH_DTYPE_FLOAT32) return;
    float *a = t->data;
    for (int64_t i = 0, n = korch_tensor_numel(t); i < n; i++) a[i] *= 1.0f + korch_jitter_sign(seed, i) * 0x1p-20f;
}
