/* Shape, layout and utility operators. */
#ifndef KORCH_OPS_OP_LIST_SHAPE_H
#define KORCH_OPS_OP_LIST_SHAPE_H

#define KORCH_OP_LIST_SHAPE(X) \
    X(Concat)                  \
    X(Constant)                \
    X(ConstantOfShape)         \
    X(DepthToSpace)            \
    X(Expand)                  \
    X(Flatten)                 \
    X(Gather)                  \
    X(Identity)                \
    X(OneHot)                  \
    X(Pad)                     \
    X(Range)                   \
    X(Reshape)                 \
    X(Resize)                  \
    X(ScatterElements)         \
    X(Shape)                   \
    X(Size)                    \
    X(Slice)                   \
    X(SpaceToDepth)            \
    X(Split)                   \
    X(Squeeze)                 \
    X(Tile)                    \
    X(Transpose)               \
    X(Unsqueeze)               \
    X(Upsample)

#endif
