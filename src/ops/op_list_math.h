/* Elementwise arithmetic, maths, comparisons, activations, normalisation,
 * softmax, reductions and casts. */
#ifndef KORCH_OPS_OP_LIST_MATH_H
#define KORCH_OPS_OP_LIST_MATH_H

#define KORCH_OP_LIST_MATH(X) \
    X(Abs)                    \
    X(Add)                    \
    X(And)                    \
    X(BatchNormalization)     \
    X(Cast)                   \
    X(CastLike)               \
    X(Ceil)                   \
    X(Celu)                   \
    X(Clip)                   \
    X(Cos)                    \
    X(Div)                    \
    X(Dropout)                \
    X(Elu)                    \
    X(Equal)                  \
    X(Erf)                    \
    X(Exp)                    \
    X(Floor)                  \
    X(Greater)                \
    X(GreaterOrEqual)         \
    X(Hardmax)                \
    X(HardSigmoid)            \
    X(HardSwish)              \
    X(InstanceNormalization)  \
    X(LayerNormalization)     \
    X(LeakyRelu)              \
    X(Less)                   \
    X(LessOrEqual)            \
    X(Log)                    \
    X(LogSoftmax)             \
    X(Max)                    \
    X(Mean)                   \
    X(Min)                    \
    X(Mish)                   \
    X(Mul)                    \
    X(Neg)                    \
    X(Not)                    \
    X(Or)                     \
    X(Pow)                    \
    X(PRelu)                  \
    X(Reciprocal)             \
    X(ReduceL1)               \
    X(ReduceL2)               \
    X(ReduceLogSum)           \
    X(ReduceLogSumExp)        \
    X(ReduceMax)              \
    X(ReduceMean)             \
    X(ReduceMin)              \
    X(ReduceProd)             \
    X(ReduceSum)              \
    X(ReduceSumSquare)        \
    X(Relu)                   \
    X(Selu)                   \
    X(Sigmoid)                \
    X(Sin)                    \
    X(Softmax)                \
    X(Softplus)               \
    X(Softsign)               \
    X(Sqrt)                   \
    X(Sub)                    \
    X(Sum)                    \
    X(Tanh)                   \
    X(ThresholdedRelu)        \
    X(Where)                  \
    X(Xor)

#endif
