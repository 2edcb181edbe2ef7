/* Convolution, matrix multiplication and pooling, with their integer and
 * quantized forms. */
#ifndef KORCH_OPS_OP_LIST_NN_H
#define KORCH_OPS_OP_LIST_NN_H

#define KORCH_OP_LIST_NN(X) \
    X(AveragePool)          \
    X(Conv)                 \
    X(ConvInteger)          \
    X(ConvTranspose)        \
    X(Gemm)                 \
    X(GlobalAveragePool)    \
    X(GlobalMaxPool)        \
    X(GridSample)           \
    X(GRU)                  \
    X(LRN)                  \
    X(LSTM)                 \
    X(MatMul)               \
    X(MatMulInteger)        \
    X(MaxPool)              \
    X(MaxUnpool)            \
    X(QLinearConv)          \
    X(QLinearMatMul)        \
    X(RNN)                  \
    X(RoiAlign)

#endif
