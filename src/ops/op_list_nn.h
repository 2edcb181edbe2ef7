/* Convolution, matrix multiplication and pooling. */
#ifndef KORCH_OPS_OP_LIST_NN_H
#define KORCH_OPS_OP_LIST_NN_H

#define KORCH_OP_LIST_NN(X) \
    X(Conv)                 \
    X(ConvTranspose)        \
    X(Gemm)                 \
    X(MatMul)

#endif
