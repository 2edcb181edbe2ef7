/* The list of supported ONNX operators (default domain). One X() entry per
 * operator: the op enum, the op table (ops/registry.c) and the fission table
 * are all generated from this list, so they cannot drift apart.
 * Each entry needs a `const korch_op_def korch_op_def_<Name>` in src/ops/.
 * The list is split in three files by family, each kept in alphabetical order. */
#ifndef KORCH_OPS_OP_LIST_H
#define KORCH_OPS_OP_LIST_H

#include "ops/op_list_control.h"
#include "ops/op_list_math.h"
#include "ops/op_list_nn.h"
#include "ops/op_list_shape.h"

#define KORCH_OP_LIST(X) KORCH_OP_LIST_MATH(X) KORCH_OP_LIST_NN(X) KORCH_OP_LIST_SHAPE(X) KORCH_OP_LIST_CONTROL(X)

#endif
