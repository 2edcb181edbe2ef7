/* Conversion of ONNX TensorProto messages (typed fields, raw_data, external
 * data) into korch tensors. */
#ifndef KORCH_FRONTEND_ONNX_TENSOR_H
#define KORCH_FRONTEND_ONNX_TENSOR_H

#include "core/tensor.h"
#include "onnx.pb-c.h"

/* Converts `proto` into `out` (owned data). `base_dir` is the model's folder
 * for external data; NULL forbids external data. `what` names the tensor in
 * error messages (e.g. "initializer \"conv1.weight\""). */
korch_status korch_onnx_tensor_convert(const Onnx__TensorProto *proto, const char *base_dir, const char *what,
                                       korch_tensor *out);

/* Checks that an external-data location stays inside the model's folder:
 * relative, no "..", no empty components. */
bool korch_external_location_is_safe(const char *location);

#endif
