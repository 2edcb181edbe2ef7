/* Einsum's equation, parsed once for the reference kernel (ops/einsum.c)
 * and for fission (fission/rules_einsum.c), which turns the one- and
 * two-operand forms exporters write into transposes, sums and a MatMul. */
#ifndef KORCH_OPS_EINSUM_H
#define KORCH_OPS_EINSUM_H

#include <stddef.h>

#include "core/tensor.h"

#define KORCH_EINSUM_MAX_OPERANDS 8
/* 52 letters and at most KORCH_MAX_RANK ellipsis dimensions */
#define KORCH_EINSUM_MAX_LABELS (52 + KORCH_MAX_RANK)

typedef struct korch_einsum {
    int n_operands;
    int rank[KORCH_EINSUM_MAX_OPERANDS];
    /* label of each dimension of each operand and of the output: a letter
     * (0-51) or one of the ellipsis' dimensions (52 + k, right-aligned as
     * numpy broadcasts them) */
    int label[KORCH_EINSUM_MAX_OPERANDS][KORCH_MAX_RANK];
    int out_rank;
    int out_label[KORCH_MAX_RANK];
    /* size of each label: the largest among its dimensions (1 broadcasts
     * within the ellipsis), 0 for labels not used */
    int64_t size[KORCH_EINSUM_MAX_LABELS];
    bool used[KORCH_EINSUM_MAX_LABELS];
} korch_einsum;

/* Parses `equation` for n operands of the given shapes (explicit "->" form,
 * or implicit: the ellipsis, then the letters used once, in ASCII order).
 * On failure writes a message to err (naming the fault) and returns false. */
bool korch_einsum_parse(const char *equation, int n, const korch_shape *const *shapes, korch_einsum *e, char *err,
                        size_t err_size);

#endif
