/* Conversion of ONNX TensorProto messages (typed fields, raw_data, external
 * data) into korch tensors. */
#ifndef KORCH_FRONTEND_ONNX_TENSOR_H
#define KORCH_FRONTEND_ONNX_TENSOR_H

#include "core/tensor.h"
#include "onnx.pb-c.h"

/* Where a model's external data lives: files beside the model, or a plan's
 * weight section (docs/plan-format.md), whose tensors name the location
 * KORCH_ONNX_PLAN_WEIGHTS. That location contains ':', which
 * korch_external_location_is_safe refuses, so no ONNX file can reach a
 * plan's weights, and no plan can reach a file. */
#define KORCH_ONNX_PLAN_WEIGHTS "korch:plan-weights"
typedef struct korch_onnx_source {
    const char *dir;        /* external data files' folder; NULL: no files */
    const uint8_t *weights; /* a plan's weight section; NULL: none */
    size_t weights_size;
} korch_onnx_source;

/* As korch_onnx_tensor_convert; a tensor in src->weights is not copied: out
 * borrows it (owns_data false), so the section must outlive out. */
korch_status korch_onnx_tensor_convert_from(const Onnx__TensorProto *proto, const korch_onnx_source *src,
                                            const char *what, korch_tensor *out);

/* Converts `proto` into `out` (owned data). `base_dir` is the model's folder
 * for external data; NULL forbids external data. `what` names the tensor in
 * error messages (e.g. "initializer \"conv1.weight\""). */
korch_status korch_onnx_tensor_convert(const Onnx__TensorProto *proto, const char *base_dir, const char *what,
                                       korch_tensor *out);

/* Checks that an external-data location stays inside the model's folder:
 * relative, no "..", no empty components. */
bool korch_external_location_is_safe(const char *location);

#endif
