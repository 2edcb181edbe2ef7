#!/usr/bin/python3
"""Generates the small models and tensors of the CLI test (tests/cli/fixtures/,
committed). Deterministic. Usage: /usr/bin/python3 tests/cli/gen-cli-fixtures.py
Needs python3-onnx (1.12) and numpy."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
F = TensorProto.FLOAT


def save_model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="gen-cli-fixtures.py", opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


def save_npy(name, a):
    np.save(os.path.join(OUT, name), a, allow_pickle=False)


def save_pb(name, a, tensor_name):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(numpy_helper.from_array(a, tensor_name).SerializeToString())


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    # two outputs; names that need sanitising into file names
    save_model("add_relu",
               [helper.make_node("Add", ["x", "y"], ["sum"], name="add"),
                helper.make_node("Relu", ["sum"], ["relu out:1"], name="relu"),
                helper.make_node("Identity", ["sum"], ["../escape"], name="copy")],
               [helper.make_tensor_value_info("x", F, [2, 3]), helper.make_tensor_value_info("y", F, [2, 3])],
               [helper.make_tensor_value_info("relu out:1", F, [2, 3]),
                helper.make_tensor_value_info("../escape", F, [2, 3])])
    save_npy("x.npy", x)
    save_npy("y.npy", y)
    save_pb("x.pb", x, "x")
    save_pb("y.pb", y, "y")
    save_npy("x_int64.npy", np.arange(6, dtype=np.int64).reshape(2, 3))
    save_npy("add_relu.relu.npy", np.maximum(x + y, 0))
    save_npy("add_relu.sum.npy", x + y)
    # byte order and dtypes a user may bring: big-endian (read, byte-swapped),
    # complex (refused with a sentence naming what korch reads)
    save_npy("x_be.npy", x.astype(">f4"))
    save_npy("x_c8.npy", x.astype(np.complex64))

    # a symbolic batch dimension
    save_model("symbolic", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
               [helper.make_tensor_value_info("x", F, ["batch", 3])],
               [helper.make_tensor_value_info("y", F, ["batch", 3])])
    x4 = rng.standard_normal((4, 3)).astype(np.float32)
    save_npy("x4.npy", x4)
    save_npy("symbolic.y4.npy", np.maximum(x4, 0))

    # a depthwise convolution + ReLU: the layout pass wraps it in two
    # transposes that cost more than it does, so --layout auto keeps nchw
    # even under --estimate (run_layout_flag.sh)
    wrng = np.random.default_rng(7)
    w = (wrng.standard_normal((16, 1, 3, 3)) / 3).astype(np.float32)
    save_model("dwconv_relu",
               [helper.make_node("Conv", ["x", "w"], ["c"], name="dw", group=16, kernel_shape=[3, 3],
                                 pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["y"], name="relu")],
               [helper.make_tensor_value_info("x", F, [1, 16, 28, 28])],
               [helper.make_tensor_value_info("y", F, [1, 16, 28, 28])],
               [numpy_helper.from_array(w, "w")])
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
