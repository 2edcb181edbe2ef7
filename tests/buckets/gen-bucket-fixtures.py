#!/usr/bin/python3
"""Generates the shape-bucket test's model and inputs (tests/buckets/fixtures/,
committed). Deterministic. Usage: python3 tests/buckets/gen-bucket-fixtures.py
Needs onnx and numpy.

seq_net.onnx: x [1, seq, 8] -> MatMul 8x16 -> Add -> Relu -> Reshape to
[1, seq*16] with the target computed from Shape(x) (a shape-dependent value
that must be folded per bucket) -> Softmax over the last axis (so padding a
shorter input up to a longer bucket would change every output: buckets must
match exactly)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(23)
    w = rng.standard_normal((8, 16)).astype(np.float32) * 0.5
    b = rng.standard_normal((16,)).astype(np.float32) * 0.1
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "b"], ["biased"], name="add"),
        helper.make_node("Relu", ["biased"], ["h"], name="relu"),
        helper.make_node("Shape", ["x"], ["xshape"], name="shape"),
        helper.make_node("Gather", ["xshape", "one"], ["seq"], name="seq", axis=0),
        helper.make_node("Mul", ["seq", "sixteen"], ["flat"], name="flat"),
        helper.make_node("Concat", ["batch1", "flat"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["h", "target"], ["r"], name="reshape"),
        helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), i64("one", [1]),
             i64("sixteen", [16]), i64("batch1", [1])]
    g = helper.make_graph(nodes, "seq_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "flat"])], inits)
    m = helper.make_model(g, producer_name="gen-bucket-fixtures.py", opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "seq_net.onnx"))
    # two inputs sharing the sequence length: tied brace lists (docs/cli.md)
    g2 = helper.make_graph([helper.make_node("Add", ["x", "m"], ["y"], name="add")], "two_inputs",
                           [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 8]),
                            helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, "seq", 8])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 8])])
    m2 = helper.make_model(g2, producer_name="gen-bucket-fixtures.py", opset_imports=[helper.make_opsetid("", 14)])
    m2.ir_version = 8
    onnx.checker.check_model(m2)
    onnx.save(m2, os.path.join(OUT, "two_inputs.onnx"))
    for seq in (4, 8, 16, 12):  # 12: no bucket holds it
        np.save(os.path.join(OUT, "x%d.npy" % seq), rng.standard_normal((1, seq, 8)).astype(np.float32),
                allow_pickle=False)


if __name__ == "__main__":
    main()
