/* numpy-style broadcasting for reference kernels: maps each output element
 * index to the element offset of a broadcast input. */
#ifndef KORCH_OPS_BROADCAST_H
#define KORCH_OPS_BROADCAST_H

#include "core/tensor.h"

/* Strides of `in` viewed with the rank of `out`: 0 on broadcast dims. */
void korch_broadcast_strides(const korch_shape *in, const korch_shape *out, int64_t *strides);

/* An odometer over `out` carrying the offsets of up to 3 broadcast inputs. */
typedef struct korch_broadcast_iter {
    int rank;
    int n_inputs;
    int64_t dims[KORCH_MAX_RANK];
    int64_t index[KORCH_MAX_RANK];
    int64_t strides[3][KORCH_MAX_RANK];
    int64_t offset[3];
} korch_broadcast_iter;

void korch_broadcast_iter_init(korch_broadcast_iter *it, const korch_shape *out, int n_inputs,
                               const korch_shape *const *inputs);
/* Positions the iterator at flat output index `linear`. */
void korch_broadcast_iter_seek(korch_broadcast_iter *it, int64_t linear);
void korch_broadcast_iter_next(korch_broadcast_iter *it);

#endif
