/* Trilu's rule for which elements it keeps, shared by the reference kernel
 * (ops/trilu.c) and the fission rule that turns a constant k into a mask. */
#ifndef KORCH_OPS_TRILU_H
#define KORCH_OPS_TRILU_H

#include <stdbool.h>
#include <stdint.h>

/* Element (row, col) of a matrix survives Trilu(upper, k): j - i >= k for
 * the upper triangle, j - i <= k for the lower. col - row cannot overflow
 * (dims stay below 2^40), k may be any int64. */
static inline bool korch_trilu_keeps(bool upper, int64_t k, int64_t row, int64_t col) {
    return upper ? col - row >= k : col - row <= k;
}

#endif
