/* Convolution, matrix multiplication and pooling. */
#ifndef KORCH_OPS_OP_LIST_NN_H
#define KORCH_OPS_OP_LIST_NN_H

#define KORCH_OP_LIST_NN(X) \
    X(AveragePool)          \
    X(Conv)                 \
    X(ConvTranspose)        \
    X(Gemm)                 \
    X(GlobalAveragePool)    \
    X(GlobalMaxPool)        \
    X(GRU)                  \
    X(LSTM)                 \
    X(MatMul)               \
    X(MaxPool)              \
    X(RNN)

#endif
