#!/usr/bin/python3
"""Writes the small models of tests/api/fixtures/ (committed; regenerate with
`/usr/bin/python3 tests/api/make_fixtures.py`, deterministic: seeded weights).
Needs Debian's python3-onnx and numpy.

small_net.onnx   x [1,3,16,16] -> conv 3x3 + SiLU -> max pool -> tokens ->
                 LayerNorm -> MLP (MatMul, erf GELU, MatMul) + residual ->
                 softmax -> mean: outputs "y" [1,8] and "pooled" [1,8,8,8].
                 Small enough to run under ThreadSanitizer in seconds, and it
                 covers linear, elementwise, reduce and layout primitives.
gather_net.onnx  ids int64 [1,6] -> Gather from a [32,8] table (run-time
                 indices: an opaque operator) -> + position table -> Relu.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
rng = np.random.default_rng(20240)


def const(name, shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def small_net():
    inits = [
        const("conv.w", (8, 3, 3, 3)),
        const("conv.b", (8,)),
        const("ln.g", (8,), 1.0),
        const("ln.b", (8,), 0.1),
        const("fc1.w", (8, 16)),
        const("fc1.b", (16,)),
        const("fc2.w", (16, 8)),
        numpy_helper.from_array(np.array([1, 8, 64], np.int64), "tok.shape"),
        numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
        helper.make_node("Mul", ["c", "s"], ["silu"], name="silu"),
        helper.make_node("MaxPool", ["silu"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Reshape", ["pooled", "tok.shape"], ["t0"], name="tokens"),
        helper.make_node("Transpose", ["t0"], ["t"], perm=[0, 2, 1], name="tr"),
        helper.make_node("LayerNormalization", ["t", "ln.g", "ln.b"], ["ln"], axis=-1, epsilon=1e-5, name="ln"),
        helper.make_node("MatMul", ["ln", "fc1.w"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "fc1.b"], ["h1"], name="fc1b"),
        helper.make_node("Div", ["h1", "sqrt2"], ["g0"], name="g0"),
        helper.make_node("Erf", ["g0"], ["g1"], name="g1"),
        helper.make_node("Add", ["g1", "one"], ["g2"], name="g2"),
        helper.make_node("Mul", ["h1", "g2"], ["g3"], name="g3"),
        helper.make_node("Mul", ["g3", "half"], ["gelu"], name="gelu"),
        helper.make_node("MatMul", ["gelu", "fc2.w"], ["h2"], name="fc2"),
        helper.make_node("Add", ["h2", "t"], ["r"], name="residual"),
        helper.make_node("Softmax", ["r"], ["p"], axis=-1, name="softmax"),
        helper.make_node("ReduceMean", ["p"], ["y"], axes=[1], keepdims=0, name="mean"),
    ]
    graph = helper.make_graph(
        nodes, "small_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8]),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, 8, 8, 8])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="korch-tests")


def gather_net():
    inits = [const("table", (32, 8), 1.0), const("pos", (1, 6, 8), 1.0)]
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], axis=0, name="lookup"),
        helper.make_node("Add", ["e", "pos"], ["s"], name="add_pos"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "gather_net",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="korch-tests")


def main():
    os.makedirs(HERE, exist_ok=True)
    for name, model in (("small_net", small_net()), ("gather_net", gather_net())):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(HERE, name + ".onnx"))
    np.save(os.path.join(HERE, "small_net.x.npy"), rng.standard_normal((1, 3, 16, 16)).astype(np.float32))
    np.save(os.path.join(HERE, "gather_net.ids.npy"), np.array([[3, 0, 31, 7, 7, 12]], np.int64))


if __name__ == "__main__":
    main()
