/* Writes a primitive graph as a standard ONNX model: each primitive becomes
 * the ONNX operators that express it exactly (elementwise -> Add/Exp/...,
 * reduce -> Reduce*, linear -> MatMul/Conv/ConvTranspose, layout -> native
 * Transpose/Reshape/Slice/Pad/Concat/Expand when the index map is one of
 * them, otherwise a flat Gather with a constant index tensor; opaque -> the
 * original node). The model opens in Netron and runs in ONNX Runtime and
 * `korch run`. Graph inputs and outputs keep the op graph's names. */
#ifndef KORCH_FISSION_PGRAPH_ONNX_H
#define KORCH_FISSION_PGRAPH_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "ir/pgraph.h"

/* Serialised model in a malloc'ed buffer (caller frees). */
korch_status korch_pgraph_export_onnx_buffer(const korch_pgraph *pg, uint8_t **data, size_t *size);
korch_status korch_pgraph_export_onnx(const korch_pgraph *pg, const char *path);

#endif
