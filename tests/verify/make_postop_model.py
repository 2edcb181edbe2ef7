#!/usr/bin/env python3
"""Writes postops.onnx: one model whose branches are the class of issue 15,
linear operators followed by chains of 1 to 4 elementwise steps.

Each branch is a graph output, so one `korch optimize` per strategy sees
every case and the orchestrator is free to fuse any prefix of any chain.

Linear operators: Conv 1x1, 3x3, depthwise, grouped, strided (with and
without bias), MatMul (2-D weights, batched activations), Gemm (transA and
transB, alpha/beta). Steps: Add/Sub/Mul/Div/Max/Min with a constant of every
broadcast class ((), (1,), (1,1,1,1), per channel (C,1,1) and (1,C,1,1),
per row and per column for matmuls, a full tensor) in both operand orders,
the same constant used twice, and activations (Relu, Clip, Sigmoid, Tanh,
HardSigmoid, HardSwish, LeakyRelu, Erf GELU as exporters write it).
Divisions only by constants bounded away from zero (|c| >= 0.5), so a
correct kernel never looks wrong. Deterministic (seeded).

usage: make_postop_model.py OUT_DIR   (writes OUT_DIR/postops.onnx and x.npy, a.npy)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(15)
nodes, inits, outputs = [], [], []
counter = [0]


def name(prefix):
    counter[0] += 1
    return f"{prefix}{counter[0]}"


def const(arr):
    n = name("c")
    inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), n))
    return n


def node(op, ins, **attrs):
    out = name(op.lower() + "_")
    nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
    return out


def nonzero(shape):
    """Constants safe to divide by: magnitude in [0.5, 1.5], either sign."""
    mag = rng.uniform(0.5, 1.5, size=shape)
    sign = np.where(rng.uniform(size=shape) < 0.5, -1.0, 1.0)
    return (mag * sign).astype(np.float32)


# broadcast classes for an NCHW activation with C channels and spatial HxW
def conv_classes(c, h, w):
    return {
        "scalar()": (),
        "(1,)": (1,),
        "(1,1,1,1)": (1, 1, 1, 1),
        "(C,1,1)": (c, 1, 1),
        "(1,C,1,1)": (1, c, 1, 1),
        "full": (1, c, h, w),
    }


def mm_classes(m, n):
    return {"scalar()": (), "(1,)": (1,), "row (M,1)": (m, 1), "col (N,)": (n,), "col (1,N)": (1, n), "full": (m, n)}


BINARY = ["Add", "Sub", "Mul", "Div", "Max", "Min"]


def step(v, kind, shape_of_class, cls, first):
    """One elementwise step on v: kind is a binary op or an activation."""
    if kind in BINARY:
        c = const(nonzero(shape_of_class[cls]))
        if kind == "Div" and not first:
            # c / v: v bounded away from zero first (a Max post-op), or a
            # correct kernel's rounding near v = 0 would look like a fault
            v = node("Max", [v, const(0.5)])
        return node(kind, [v, c] if first else [c, v])
    if kind == "Relu":
        return node("Relu", [v])
    if kind == "Clip":
        return node("Clip", [v, const(-0.6), const(0.8)])
    if kind == "Sigmoid":
        return node("Sigmoid", [v])
    if kind == "Tanh":
        return node("Tanh", [v])
    if kind == "HardSigmoid":
        return node("HardSigmoid", [v], alpha=0.25, beta=0.4)
    if kind == "HardSwish":
        return node("HardSwish", [v])
    if kind == "LeakyRelu":
        return node("LeakyRelu", [v], alpha=0.07)
    if kind == "Gelu":  # x * 0.5 * (1 + erf(x / sqrt 2)), the PyTorch export
        d = node("Div", [v, const(1.4142135)])
        e = node("Add", [node("Erf", [d]), const(1.0)])
        return node("Mul", [node("Mul", [v, e]), const(0.5)])
    raise ValueError(kind)


ACTS = ["Relu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Gelu"]


def chains(classes):
    """Deterministic chains of 1-4 steps covering every op, class and order."""
    out = []
    cls = list(classes)
    # every binary op with every class, alone, in both orders
    for i, op in enumerate(BINARY):
        for j, c in enumerate(cls):
            out.append([(op, c, (i + j) % 2 == 0)])
    # the pair, both ways, scalars of two classes
    out.append([("Mul", "scalar()", True), ("Add", "scalar()", True)])
    out.append([("Add", "(1,)", True), ("Mul", "(1,)", True)])
    out.append([("Sub", "scalar()", False), ("Div", "scalar()", True)])
    # longer chains mixing classes, orders and activations
    for k in range(10):
        n = 2 + k % 3
        chain = []
        for s in range(n):
            if (k + s) % 3 == 2:
                chain.append((ACTS[(k + s) % len(ACTS)], None, True))
            else:
                chain.append((BINARY[(3 * k + s) % len(BINARY)], cls[(k + 2 * s) % len(cls)], (k + s) % 2 == 0))
        out.append(chain)
    return out


def apply_chain(v, chain, classes):
    for kind, c, first in chain:
        v = step(v, kind, classes, c, first)
    return v


def branch_output(v):
    outputs.append(v)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    C, H, W = 16, 32, 32  # the shape: oneDNN picks brgconv_1x1 for the 1x1 convolutions
    x = "x"
    convs = [  # (name, out channels, kernel, pads, strides, group, bias)
        ("1x1", 16, 1, 0, 1, 1, True),
        ("1x1 no bias", 24, 1, 0, 1, 1, False),
        ("3x3", 16, 3, 1, 1, 1, True),
        ("depthwise", 16, 3, 1, 1, 16, True),
        ("grouped", 16, 3, 1, 1, 4, False),
        ("strided", 8, 3, 1, 2, 1, True),
    ]
    for ci, (label, m, k, p, s, g, bias) in enumerate(convs):
        def conv_inputs():
            # weights of its own per branch: identical convolutions would be
            # merged into one (common subexpressions) and then shared by
            # every chain, which no kernel can fuse
            wt = const(rng.uniform(-0.3, 0.3, size=(m, C // g, k, k)))
            return [x, wt] + ([const(rng.uniform(-0.5, 0.5, size=(m,)))] if bias else [])
        ho = (H + 2 * p - k) // s + 1
        wo = (W + 2 * p - k) // s + 1
        classes = conv_classes(m, ho, wo)
        all_chains = chains(classes)
        # every conv gets a share of the chains (the 1x1, oneDNN's brgconv_1x1 of
        # the issue, half of them); together they cover every op, class and order
        picked = all_chains[::2] if ci == 0 else all_chains[ci % 4::4]
        for chain in picked:
            y = node("Conv", conv_inputs(), kernel_shape=[k, k], pads=[p] * 4, strides=[s, s], group=g)
            branch_output(apply_chain(y, chain, classes))
        # the same constant used twice in one chain
        y = node("Conv", conv_inputs(), kernel_shape=[k, k], pads=[p] * 4, strides=[s, s], group=g)
        same = const(nonzero(classes["(C,1,1)"]))
        branch_output(node("Add", [node("Mul", [y, same]), same]))
    # matmul and gemm on a = [2, 6, 32] / [6, 32]
    a = "a"
    M, K, N = 6, 32, 20
    classes = mm_classes(M, N)
    for chain in chains(classes)[::2]:
        y = node("MatMul", [a, const(rng.uniform(-0.3, 0.3, size=(K, N)))])
        branch_output(apply_chain(y, chain, classes))
    flat = "a2"  # a 2-D activation for Gemm
    gclasses = mm_classes(M, N)
    for i, chain in enumerate(chains(gclasses)[1::3]):
        gemm_w = const(rng.uniform(-0.3, 0.3, size=(N, K)))  # transB layout
        gemm_c = const(rng.uniform(-0.5, 0.5, size=(N,)))
        if i % 2 == 0:
            y = node("Gemm", [flat, gemm_w, gemm_c], transB=1, alpha=0.7, beta=1.3)
        else:
            at = node("Transpose", [flat], perm=[1, 0])
            y = node("Gemm", [at, gemm_w], transA=1, transB=1)
        branch_output(apply_chain(y, chain, gclasses))

    graph = helper.make_graph(
        nodes,
        "postops",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W]),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, M, K]),
            helper.make_tensor_value_info("a2", TensorProto.FLOAT, [M, K]),
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    # outputs with their inferred shapes (the checker wants them typed)
    del model.graph.output[:]
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model).graph.value_info}
    model.graph.output.extend([inferred[o] for o in outputs])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, "postops.onnx"))
    np.save(os.path.join(out_dir, "x.npy"), rng.uniform(-1, 1, size=(1, C, H, W)).astype(np.float32))
    np.save(os.path.join(out_dir, "a.npy"), rng.uniform(-1, 1, size=(2, M, K)).astype(np.float32))
    np.save(os.path.join(out_dir, "a2.npy"), rng.uniform(-1, 1, size=(M, K)).astype(np.float32))
    print(f"postops.onnx: {len(outputs)} branches, {len(nodes)} nodes")


if __name__ == "__main__":
    main()
