/* Shape, layout and utility operators. */
#ifndef KORCH_OPS_OP_LIST_SHAPE_H
#define KORCH_OPS_OP_LIST_SHAPE_H

#define KORCH_OP_LIST_SHAPE(X) \
    X(Constant)                \
    X(Identity)                \
    X(Reshape)                 \
    X(Shape)

#endif
