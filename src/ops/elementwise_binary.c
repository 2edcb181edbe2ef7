/* Binary elementwise operators with numpy broadcasting. */
#include <math.h>

#include "ops/broadcast.h"
#include "ops/op.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef float (*binary_f32)(float, float);
typedef int64_t (*binary_i64)(int64_t, int64_t);

static korch_status infer_binary(korch_op_ctx *ctx) {
    const korch_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (a->dtype != b->dtype)
        return korch_op_error(ctx, KORCH_ERR_INVALID_MODEL, "operands have different dtypes (%s and %s)",
                              korch_dtype_name(a->dtype), korch_dtype_name(b->dtype));
    korch_shape out;
    char sa[96], sb[96];
    if (!korch_shape_broadcast(&a->shape, &b->shape, &out))
        return korch_op_error(ctx, KORCH_ERR_SHAPE, "shapes %s and %s do not broadcast",
                              korch_shape_format(&a->shape, sa, sizeof sa), korch_shape_format(&b->shape, sb, sizeof sb));
    korch_op_set_output(ctx, 0, a->dtype, &out);
    return KORCH_OK;
}

/* Runs a broadcast binary map over float32, or int64/int32 when f_i64 is given. */
static korch_status run_binary(korch_op_ctx *ctx, binary_f32 f32, binary_i64 i64) {
    const korch_tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    korch_tensor *y = ctx->outputs[0];
    const korch_shape *shapes[2] = {&a->shape, &b->shape};
    int64_t n = korch_tensor_numel(y);
    if (a->dtype == KORCH_DTYPE_FLOAT32) {
        const float *pa = a->data, *pb = b->data;
        float *py = y->data;
#pragma omp parallel
        {
            korch_broadcast_iter it;
            korch_broadcast_iter_init(&it, &y->shape, 2, shapes);
            int64_t begin = 0, end = 0;
            /* static split so each thread seeks once */
            int64_t threads = 1, id = 0;
#ifdef _OPENMP
            threads = omp_get_num_threads();
            id = omp_get_thread_num();
#endif
            begin = n * id / threads;
            end = n * (id + 1) / threads;
            if (begin < end) korch_broadcast_iter_seek(&it, begin);
            for (int64_t i = begin; i < end; i++) {
                py[i] = f32(pa[it.offset[0]], pb[it.offset[1]]);
                korch_broadcast_iter_next(&it);
            }
        }
        return KORCH_OK;
    }
    if (i64 && (a->dtype == KORCH_DTYPE_INT64 || a->dtype == KORCH_DTYPE_INT32)) {
        korch_broadcast_iter it;
        korch_broadcast_iter_init(&it, &y->shape, 2, shapes);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = i64(korch_tensor_get_i64(a, it.offset[0]), korch_tensor_get_i64(b, it.offset[1]));
            if (y->dtype == KORCH_DTYPE_INT64) ((int64_t *)y->data)[i] = r;
            else ((int32_t *)y->data)[i] = (int32_t)r;
            korch_broadcast_iter_next(&it);
        }
        return KORCH_OK;
    }
    return korch_op_error(ctx, KORCH_ERR_UNSUPPORTED, "dtype %s is not supported", korch_dtype_name(a->dtype));
}

static float add_f32(float a, float b) { return a + b; }
static int64_t add_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static korch_status run_add(korch_op_ctx *ctx) { return run_binary(ctx, add_f32, add_i64); }

const korch_op_def korch_op_def_Add = {
    .kind = KORCH_OP_Add, .op_type = "Add", .opset_min = 1, .opset_max = 18,
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_binary, .run = run_add,
};
