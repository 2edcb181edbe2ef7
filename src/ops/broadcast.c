#include "ops/broadcast.h"

#include <string.h>

void korch_broadcast_strides(const korch_shape *in, const korch_shape *out, int64_t *strides) {
    int64_t dense[KORCH_MAX_RANK];
    korch_shape_strides(in, dense);
    for (int i = 0; i < out->rank; i++) {
        int j = in->rank - out->rank + i;
        strides[i] = (j >= 0 && in->dims[j] != 1) ? dense[j] : 0;
    }
}

void korch_broadcast_iter_init(korch_broadcast_iter *it, const korch_shape *out, int n_inputs,
                               const korch_shape *const *inputs) {
    memset(it, 0, sizeof *it);
    it->rank = out->rank;
    it->n_inputs = n_inputs;
    for (int i = 0; i < out->rank; i++) it->dims[i] = out->dims[i];
    for (int k = 0; k < n_inputs; k++) korch_broadcast_strides(inputs[k], out, it->strides[k]);
}

void korch_broadcast_iter_seek(korch_broadcast_iter *it, int64_t linear) {
    for (int k = 0; k < it->n_inputs; k++) it->offset[k] = 0;
    for (int i = it->rank - 1; i >= 0; i--) {
        int64_t d = it->dims[i] ? it->dims[i] : 1;
        it->index[i] = linear % d;
        linear /= d;
        for (int k = 0; k < it->n_inputs; k++) it->offset[k] += it->index[i] * it->strides[k][i];
    }
}

void korch_broadcast_iter_next(korch_broadcast_iter *it) {
    for (int i = it->rank - 1; i >= 0; i--) {
        it->index[i]++;
        for (int k = 0; k < it->n_inputs; k++) it->offset[k] += it->strides[k][i];
        if (it->index[i] < it->dims[i]) return;
        for (int k = 0; k < it->n_inputs; k++) it->offset[k] -= it->strides[k][i] * it->index[i];
        it->index[i] = 0;
    }
}
