/* Shape, layout and utility operators. */
#ifndef KORCH_OPS_OP_LIST_SHAPE_H
#define KORCH_OPS_OP_LIST_SHAPE_H

#define KORCH_OP_LIST_SHAPE(X) \
    X(Concat)                  \
    X(Constant)                \
    X(ConstantOfShape)         \
    X(DepthToSpace)            \
    X(Expand)                  \
    X(EyeLike)                 \
    X(Flatten)                 \
    X(Gather)                  \
    X(GatherElements)          \
    X(GatherND)                \
    X(Identity)                \
    X(OneHot)                  \
    X(Pad)                     \
    X(Range)                   \
    X(Reshape)                 \
    X(Resize)                  \
    X(ReverseSequence)         \
    X(Scatter)                 \
    X(ScatterElements)         \
    X(ScatterND)               \
    X(Shape)                   \
    X(Size)                    \
    X(Slice)                   \
    X(SpaceToDepth)            \
    X(Split)                   \
    X(Squeeze)                 \
    X(Tile)                    \
    X(TopK)                    \
    X(Transpose)               \
    X(Trilu)                   \
    X(Unsqueeze)               \
    X(Upsample)

#endif
