/* Elementwise arithmetic, maths, comparisons, activations, normalisation,
 * softmax and reductions. */
#ifndef KORCH_OPS_OP_LIST_MATH_H
#define KORCH_OPS_OP_LIST_MATH_H

#define KORCH_OP_LIST_MATH(X) \
    X(Add)                    \
    X(Relu)

#endif
