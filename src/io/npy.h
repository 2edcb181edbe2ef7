/* NumPy .npy files (format versions 1.0-3.0), little-endian, C order. */
#ifndef KORCH_IO_NPY_H
#define KORCH_IO_NPY_H

#include "core/tensor.h"

korch_status korch_npy_read(const char *path, korch_tensor *out);
korch_status korch_npy_parse(const uint8_t *data, size_t size, const char *what, korch_tensor *out);
korch_status korch_npy_write(const char *path, const korch_tensor *t);

/* Reads a tensor from .npy, or from an ONNX TensorProto (.pb). *name (may be
 * NULL) receives the TensorProto's name, malloc'd ("" for .npy). */
korch_status korch_tensor_file_read(const char *path, korch_tensor *out, char **name);

/* Replaces every character outside [A-Za-z0-9._-] with '_' (for output file
 * names derived from tensor names). Also maps "." and ".." to "_". */
void korch_sanitize_filename(const char *name, char *out, size_t size);

#endif
