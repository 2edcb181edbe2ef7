#!/usr/bin/python3
"""Generates the exporter-shape fixtures of tests/recurrent (committed;
deterministic): models whose inputs say `dim_value: -1` or an empty
`dim_param`, as paddle2onnx and some tf2onnx versions write them, and int64 /
bool scalar graph inputs (a sample rate, a flag).
Usage: /usr/bin/python3 tests/recurrent/gen-shape-fixtures.py (python3-onnx, numpy)."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
F = TensorProto.FLOAT


def vi(name, dtype, dims):
    """A value_info whose dims are ints (-1 included, written as dim_value) or
    strings (written as dim_param; "" is an empty dim_param)."""
    t = helper.make_tensor_value_info(name, dtype, None)
    shape = t.type.tensor_type.shape
    shape.SetInParent()  # a scalar has a shape with no dims, not no shape
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        else:
            dim.dim_value = d
    return t


def save_model(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="gen-shape-fixtures.py", opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    # onnx.checker rejects dim_value -1 (as the ONNX spec says it should), but
    # exporters write it anyway and ONNX Runtime accepts it: do not check.
    onnx.save(m, os.path.join(OUT, name + ".onnx"))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(18)
    # y = Relu(x) * float(rate) ; z = Where(flag, y, -y)
    # x: (-1, 3) as dim_value -1, then (,"") : an empty dim_param
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Cast", ["rate"], ["ratef"], to=F, name="cast"),
             helper.make_node("Mul", ["r", "ratef"], ["y"], name="mul"),
             helper.make_node("Neg", ["y"], ["ny"], name="neg"),
             helper.make_node("Where", ["flag", "y", "ny"], ["z"], name="where")]
    outs = [vi("y", F, [-1, 3]), vi("z", F, [-1, 3])]
    save_model("dim_minus_one", nodes,
               [vi("x", F, [-1, 3]), vi("rate", TensorProto.INT64, []), vi("flag", TensorProto.BOOL, [])], outs)
    save_model("dim_param_empty", nodes,
               [vi("x", F, ["", 3]), vi("rate", TensorProto.INT64, []), vi("flag", TensorProto.BOOL, [])], outs)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    np.save(os.path.join(OUT, "x5.npy"), x, allow_pickle=False)
    np.save(os.path.join(OUT, "rate.npy"), np.array(16000, dtype=np.int64), allow_pickle=False)
    np.save(os.path.join(OUT, "flag.npy"), np.array(False), allow_pickle=False)
    y = np.maximum(x, 0) * np.float32(16000)
    np.save(os.path.join(OUT, "dim_minus_one.y.npy"), y, allow_pickle=False)
    np.save(os.path.join(OUT, "dim_minus_one.z.npy"), -y, allow_pickle=False)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
