/* The interpreter's row-by-row path for layouts whose maps are affine but
 * may leave the input (interpret_rows.c); internal to src/ir. */
#ifndef KORCH_IR_INTERPRET_ROWS_H
#define KORCH_IR_INTERPRET_ROWS_H

#include "ir/pgraph.h"

/* Computes out from in[] as the layout's definition says, pad (one element
 * of out's dtype) where no map is in bounds, on every thread when out has at
 * least parallel_min elements. False, with nothing written, when some map
 * has a div, mod or table term (the caller takes the generic loop). */
bool korch_layout_rows_apply(const korch_prim_layout *l, korch_tensor **in, korch_tensor *out, const void *pad,
                             int64_t parallel_min);

#endif
