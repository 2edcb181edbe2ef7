/* Shapes, dtypes and dense tensors: the value type every stage shares. */
#ifndef KORCH_CORE_TENSOR_H
#define KORCH_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Hard ceiling on the elements of one tensor (2^40 floats = 4 TiB): anything
 * larger is an absurd or hostile shape, rejected before any allocation. */
#define KORCH_MAX_ELEMENTS ((int64_t)1 << 40)

typedef struct korch_shape {
    int rank;
    int64_t dims[KORCH_MAX_RANK];
} korch_shape;

/* A dense, row-major tensor. `data` is owned when `owns_data` is true. */
typedef struct korch_tensor {
    korch_dtype dtype;
    korch_shape shape;
    void *data;
    bool owns_data;
} korch_tensor;

/* dtypes */
size_t korch_dtype_size(korch_dtype dtype); /* 0 for unsupported / undefined */
const char *korch_dtype_name(korch_dtype dtype);
bool korch_dtype_is_valid(int32_t onnx_type); /* a known ONNX DataType value */

/* shapes */
korch_shape korch_shape_make(int rank, const int64_t *dims);
/* Element count, or -1 when a dim is negative or the count exceeds KORCH_MAX_ELEMENTS. */
int64_t korch_shape_numel(const korch_shape *shape);
bool korch_shape_equal(const korch_shape *a, const korch_shape *b);
/* "1x3x224x224" ("scalar" for rank 0). Returns buf. */
char *korch_shape_format(const korch_shape *shape, char *buf, size_t size);
/* Parses "1x3x224x224" (also accepts ','). Returns false on bad syntax. */
bool korch_shape_parse(const char *text, korch_shape *out);
/* numpy broadcasting of two shapes; false if incompatible. */
bool korch_shape_broadcast(const korch_shape *a, const korch_shape *b, korch_shape *out);
/* Row-major strides (in elements) of shape. */
void korch_shape_strides(const korch_shape *shape, int64_t *strides);
/* Normalise an axis in [-rank, rank) to [0, rank); -1 when out of range. */
int korch_axis_normalize(int64_t axis, int rank);

/* tensors */
size_t korch_tensor_bytes(const korch_tensor *t);
int64_t korch_tensor_numel(const korch_tensor *t);
/* Allocates zeroed storage for `shape`; fails cleanly on overflow or OOM. */
korch_status korch_tensor_alloc(korch_tensor *t, korch_dtype dtype, const korch_shape *shape);
korch_status korch_tensor_clone(const korch_tensor *src, korch_tensor *dst);
void korch_tensor_free(korch_tensor *t); /* frees owned data; leaves shape/dtype */
/* Read element i of an integer-or-float tensor as int64 / double (for shape logic). */
int64_t korch_tensor_get_i64(const korch_tensor *t, int64_t i);
double korch_tensor_get_f64(const korch_tensor *t, int64_t i);

/* The jitter of verification's second computations (the noise rules of
 * src/verify/plan_check.c): +1 or -1, a seeded hash of (seed, i). */
float korch_jitter_sign(uint64_t seed, int64_t i);
/* Moves every element of a float32 tensor by a relative 2^-20, the sign
 * korch_jitter_sign(seed, i); other dtypes are left alone. */
void korch_tensor_jitter(korch_tensor *t, uint64_t seed);

/* overflow-checked arithmetic */
bool korch_mul_overflow_i64(int64_t a, int64_t b, int64_t *out);
bool korch_add_overflow_i64(int64_t a, int64_t b, int64_t *out);

#endif
