#!/usr/bin/python3
"""Generates the bad-input corpus in tests/badinput/corpus/ (committed).

Each entry is a model file korch must handle cleanly: malformed models must be
refused with exit status 1 and one line "korch: error: ..." naming the fault;
the few valid entries (hostile names, a 10k-node chain, 0-size tensors, safe
external data) must check and run, and their outputs are compared with the
numpy results stored next to them. MANIFEST.tsv records, per entry, the
expected exit status of `korch check` and `korch run`, the substring the error
must contain, and the inputs / expected outputs of the run.

Usage: /usr/bin/python3 scripts/gen-bad-models.py [OUT_DIR]
Needs python3-onnx (1.12) and numpy. The output is deterministic.
"""
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "badinput", "corpus")

entries = []  # (file, check_exit, run_exit, substring, needs_op, run_inputs, run_outputs, description)


def model(nodes, inputs, outputs, inits=(), opset=13, ir=8, name="g", extra_opsets=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="gen-bad-models.py",
                          opset_imports=[helper.make_opsetid("", opset)] + list(extra_opsets))
    m.ir_version = ir
    return m


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def write(path, data):
    with open(os.path.join(OUT, path), "wb") as f:
        f.write(data)


def sanitize(name):
    """The file name `korch run --output-dir` writes for an output tensor:
    every byte outside [A-Za-z0-9._-] becomes '_'; "", "." and ".." become '_'s."""
    out = "".join(chr(b) if re.match(rb"[A-Za-z0-9._-]", bytes([b])) else "_" for b in name.encode())
    if out in ("", ".", ".."):
        out = "_" * max(len(out), 1)
    return out


def add(file, check_exit, run_exit, substring, description, needs_op="-", inputs=(), outputs=(), data=None):
    """Registers an entry; `data` is a ModelProto or raw bytes written to `file`."""
    if data is not None:
        write(file, data if isinstance(data, (bytes, bytearray)) else data.SerializeToString())
    entries.append((file, check_exit, run_exit, substring, needs_op,
                    " ".join(inputs) if inputs else "-",
                    " ".join(f"{got}:{want}" for got, want in outputs) if outputs else "-",
                    description))


def save_npy(file, array):
    np.save(os.path.join(OUT, file), array, allow_pickle=False)
    return file


def relu_model(opset=13):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 3])], [vi("y", [2, 3])],
                 opset=opset)


def bad(file, substring, description, data, needs_op="-", check_exit=1, run_exit=1, inputs=()):
    add(file, check_exit, run_exit, substring, description, needs_op=needs_op, inputs=inputs, data=data)


def gen_bytes_level():
    bad("empty.onnx", "the file is empty", "a 0-byte file", b"")
    rng = np.random.default_rng(20240501)
    bad("random_bytes.onnx", "protobuf parsing failed", "4 KiB of seeded random bytes", rng.bytes(4096))
    w = numpy_helper.from_array(np.arange(256, dtype=np.float32).reshape(16, 16), "w")
    full = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [16, 16])],
                 [vi("y", [16, 16])], [w]).SerializeToString()
    bad("truncated.onnx", "protobuf parsing failed", "a valid model cut off inside its initializer",
        full[: len(full) * 6 // 10])
    t = numpy_helper.from_array(np.ones((2, 3), dtype=np.float32), "t")
    bad("tensor_not_model.onnx", "not a valid ONNX model", "a serialized TensorProto, not a ModelProto",
        t.SerializeToString())
    no_graph = onnx.ModelProto()
    no_graph.ir_version = 8
    no_graph.opset_import.extend([helper.make_opsetid("", 13)])
    bad("no_graph.onnx", "has no graph", "a ModelProto without a graph", no_graph)


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | 0x80]) if n else bytes([b])
        if not n:
            return out


def field_header(field, length):
    return varint(field << 3 | 2) + varint(length)


def nest(depth, level, innermost=b""):
    """`depth` levels of level(inner_length) -> (prefix, total_length) around
    `innermost`, built from the inside out so that the cost stays linear."""
    prefixes, inner = [], len(innermost)
    for _ in range(depth):
        prefix, inner = level(inner)
        prefixes.append(prefix)
    return b"".join(reversed(prefixes)) + innermost


def model_bytes(graph):
    opset = field_header(8, 2) + varint(2 << 3) + varint(13)
    return varint(1 << 3) + varint(8) + field_header(7, len(graph)) + graph + opset


def subgraph_level(inner):
    """A Graph whose only node is an If with the inner graph as attribute g."""
    attr = field_header(1, 1) + b"g" + varint(20 << 3) + varint(5) + field_header(6, inner)
    node = field_header(4, 2) + b"If" + field_header(5, len(attr) + inner)
    graph = field_header(1, len(node) + len(attr) + inner)
    return graph + node + attr, len(graph) + len(node) + len(attr) + inner


def sequence_type_level(inner):
    """A TypeProto holding sequence_type { elem_type: <inner TypeProto> }."""
    elem = field_header(1, inner)
    seq = field_header(4, len(elem) + inner)
    return seq + elem, len(seq) + len(elem) + inner


def gen_nesting():
    # protobuf-c recurses per nested message: without korch's nesting bound,
    # 4,000 levels of either kind overflowed the 8 MiB stack
    bad("nested_subgraphs.onnx", "nests subgraphs or types deeper than",
        "5,000 If nodes, each in the previous one's then-branch", model_bytes(nest(5000, subgraph_level)))
    t = onnx.TypeProto()
    t.tensor_type.elem_type = F
    types = nest(20000, sequence_type_level, t.SerializeToString())
    value_info = field_header(1, 1) + b"x" + field_header(2, len(types)) + types
    bad("nested_types.onnx", "nests subgraphs or types deeper than",
        "a graph input whose type is a sequence of sequences, 20,000 deep",
        model_bytes(field_header(11, len(value_info)) + value_info))
    bad("nested_subgraphs_ok_depth.onnx", "subgraphs nest more than 16 levels deep",
        "20 nested If subgraphs: within the protobuf nesting bound, refused by korch's subgraph depth limit",
        model_bytes(nest(20, subgraph_level)))
    bad("nested_subgraphs_12.onnx", "the graph has no outputs",
        "12 nested If subgraphs: within korch's depth limit, so refused for its next fault (no outputs)",
        model_bytes(nest(12, subgraph_level)))


def gen_control_flow():
    x = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 4.0]], dtype=np.float32)

    def branch(name, nodes, out):
        return helper.make_graph(nodes, name, [], [vi(out, None)])

    def shape_condition(prefix, value):
        """cond = (x.shape[0] == value): constant once shapes are fixed."""
        return [helper.make_node("Shape", ["x"], [prefix + "_shape"]),
                helper.make_node("Gather", [prefix + "_shape", prefix + "_zero"], [prefix + "_n"], axis=0),
                helper.make_node("Equal", [prefix + "_n", prefix + "_two"], [prefix + "_cond"])], \
            [numpy_helper.from_array(np.array(0, dtype=np.int64), prefix + "_zero"),
             numpy_helper.from_array(np.array(value, dtype=np.int64), prefix + "_two")]

    # an If whose condition comes from a shape: resolved at load (then: Relu)
    nodes, inits = shape_condition("c", 2)
    then_g = branch("then", [helper.make_node("Relu", ["x"], ["t_out"])], "t_out")
    else_g = branch("else", [helper.make_node("Neg", ["x"], ["e_out"])], "e_out")
    nodes.append(helper.make_node("If", ["c_cond"], ["y"], name="if_shape", then_branch=then_g, else_branch=else_g))
    add("control_if_shape.onnx", 0, 0, "-", "valid: an If whose condition is computed from a shape (inlined at load)",
        needs_op="If", inputs=[save_npy("control_if_shape.x.npy", x)],
        outputs=[("y.npy", save_npy("control_if_shape.y.npy", np.maximum(x, 0)))],
        data=model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], inits))

    # a run-time If (condition is a graph input) whose then-branch holds an
    # If on a shape, reading x from two scopes out
    inner_nodes, inner_inits = shape_condition("k", 2)
    inner_then = branch("inner_then", [helper.make_node("Relu", ["x"], ["it_r"]),
                                       helper.make_node("Add", ["it_r", "one"], ["it_out"])], "it_out")
    inner_else = branch("inner_else", [helper.make_node("Abs", ["x"], ["ie_out"])], "ie_out")
    inner_nodes.append(helper.make_node("If", ["k_cond"], ["t_out"], name="inner_if", then_branch=inner_then,
                                        else_branch=inner_else))
    then_g = helper.make_graph(inner_nodes, "outer_then", [], [vi("t_out", None)], inner_inits)
    else_g = branch("outer_else", [helper.make_node("Neg", ["x"], ["e_out"])], "e_out")
    one = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")
    c = np.array(True)
    add("control_if_nested.onnx", 0, 0, "-",
        "valid: an If on a bool graph input, with a nested If on a shape inside its then-branch",
        needs_op="If", inputs=[save_npy("control_if_nested.x.npy", x), save_npy("control_if_nested.c.npy", c)],
        outputs=[("y.npy", save_npy("control_if_nested.y.npy", np.maximum(x, 0) + 1))],
        data=model([helper.make_node("If", ["c"], ["y"], name="outer_if", then_branch=then_g, else_branch=else_g)],
                   [vi("x", [2, 3]), vi("c", [], TensorProto.BOOL)], [vi("y", [2, 3])], [one]))

    # run-time Ifs that are if-converted (frontend/if_convert.c): both
    # branches computed, a Where per output. The condition is [1, 1] (as
    # exporters write a threshold test); the untaken branches compute NaN
    # (Sqrt, Log of negatives), which must not leak; y3 is a scalar.
    xc = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 4.0]], dtype=np.float32)
    wc = np.array([[0.5, -1.0, 0.25], [1.5, 0.0, -0.5], [-0.25, 2.0, 1.0]], dtype=np.float32)
    conv_nodes = [helper.make_node("ReduceMin", ["x"], ["xmin"], keepdims=1),
                  helper.make_node("GreaterOrEqual", ["xmin", "zero_f"], ["nonneg"]),
                  helper.make_node("Not", ["nonneg"], ["neg"]),
                  helper.make_node("If", ["nonneg"], ["y1"], name="if_sqrt",
                                   then_branch=branch("t1", [helper.make_node("Sqrt", ["x"], ["t1s"]),
                                                             helper.make_node("Add", ["t1s", "one_f"], ["t1o"])], "t1o"),
                                   else_branch=branch("e1", [helper.make_node("Neg", ["x"], ["e1n"]),
                                                             helper.make_node("Mul", ["e1n", "two_f"], ["e1o"])], "e1o")),
                  helper.make_node("If", ["neg"], ["y2"], name="if_matmul",
                                   then_branch=branch("t2", [helper.make_node("MatMul", ["x", "w"], ["t2m"]),
                                                             helper.make_node("Sigmoid", ["t2m"], ["t2o"])], "t2o"),
                                   else_branch=branch("e2", [helper.make_node("Log", ["x"], ["e2o"])], "e2o")),
                  helper.make_node("If", ["neg"], ["y4"], name="if_gather_rows",
                                   then_branch=branch("t4", [helper.make_node("Gather", ["x", "rows_10"], ["t4o"],
                                                                              axis=0)], "t4o"),
                                   else_branch=branch("e4", [helper.make_node("Gather", ["x", "rows_00"], ["e4o"],
                                                                              axis=0)], "e4o")),
                  helper.make_node("If", ["neg"], ["y3"], name="if_scalar",
                                   then_branch=branch("t3", [helper.make_node("ReduceSum", ["x"], ["t3o"], keepdims=0)],
                                                      "t3o"),
                                   else_branch=branch("e3", [helper.make_node("ReduceMax", ["x"], ["e3o"], keepdims=0)],
                                                      "e3o"))]
    conv_inits = [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
                  for n, v in (("zero_f", 0.0), ("one_f", 1.0), ("two_f", 2.0))] + [numpy_helper.from_array(wc, "w")] + \
        [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in (("rows_10", [1, -2]), ("rows_00", [0, 0]))]
    add("control_if_convert.onnx", 0, 0, "-",
        "valid: four run-time Ifs on a [1, 1] condition computed from x, if-converted (both branches, a Where; "
        "one gathers rows at constant indices in range)",
        needs_op="If", inputs=[save_npy("control_if_convert.x.npy", xc)],
        outputs=[("y1.npy", save_npy("control_if_convert.y1.npy", -2 * xc)),
                 ("y2.npy", save_npy("control_if_convert.y2.npy", (1 / (1 + np.exp(-(xc @ wc)))).astype(np.float32))),
                 ("y3.npy", save_npy("control_if_convert.y3.npy", np.array(xc.sum(), dtype=np.float32))),
                 ("y4.npy", save_npy("control_if_convert.y4.npy", np.ascontiguousarray(xc[[1, 0]])))],
        data=model(conv_nodes, [vi("x", [2, 3])], [vi("y1", [2, 3]), vi("y2", [2, 3]), vi("y3", []), vi("y4", [2, 3])],
                   conv_inits))

    # a run-time If with a Gather at a run-time index in a branch: not
    # if-converted (an index out of range in the untaken branch would fail)
    then_g = branch("then", [helper.make_node("Gather", ["x", "idx"], ["t_out"], axis=1)], "t_out")
    else_g = branch("else", [helper.make_node("Slice", ["x", "s0", "s2", "s1"], ["e_sl"]),
                             helper.make_node("Neg", ["e_sl"], ["e_out"])], "e_out")
    idx = np.array([2, 0], dtype=np.int64)
    add("control_if_opaque.onnx", 0, 0, "-",
        "valid: a run-time If whose then-branch gathers at a run-time index: an opaque kernel, not if-converted",
        needs_op="If", inputs=[save_npy("control_if_opaque.x.npy", x), save_npy("control_if_opaque.c.npy", c),
                               save_npy("control_if_opaque.idx.npy", idx)],
        outputs=[("y.npy", save_npy("control_if_opaque.y.npy", np.ascontiguousarray(x[:, idx])))],
        data=model([helper.make_node("If", ["c"], ["y"], name="if_gather", then_branch=then_g, else_branch=else_g)],
                   [vi("x", [2, 3]), vi("c", [], TensorProto.BOOL), vi("idx", [2], I64)], [vi("y", [2, 2])],
                   [numpy_helper.from_array(np.array([0], dtype=np.int64), n) for n in ("s0",)] +
                   [numpy_helper.from_array(np.array([2], dtype=np.int64), "s2"),
                    numpy_helper.from_array(np.array([1], dtype=np.int64), "s1")]))

    # a run-time If whose branches disagree on the output shape
    then_g = branch("then", [helper.make_node("Relu", ["x"], ["t_out"])], "t_out")
    else_g = branch("else", [helper.make_node("ReduceSum", ["x"], ["e_out"], keepdims=0)], "e_out")
    bad("control_if_branch_shapes.onnx", "korch plans static shapes",
        "an If on a graph input whose branches give outputs of different shapes", needs_op="If",
        data=model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
                   [vi("x", [2, 3]), vi("c", [], TensorProto.BOOL)], [vi("y", None)], opset=11))

    # Loop, 3 iterations: acc += x (x from the outer scope), scan output acc
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
                              helper.make_node("Identity", ["acc_out"], ["acc_scan"])], "body",
                             [vi("i", [], I64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2, 3])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2, 3]), vi("acc_scan", [2, 3])])
    m = numpy_helper.from_array(np.array(3, dtype=np.int64), "m")
    zero = numpy_helper.from_array(np.zeros((2, 3), dtype=np.float32), "acc0")
    add("control_loop.onnx", 0, 0, "-", "valid: a Loop of 3 iterations reading x from the outer scope, with a scan output",
        needs_op="Loop", inputs=[save_npy("control_loop.x.npy", x)],
        outputs=[("acc.npy", save_npy("control_loop.acc.npy", 3 * x)),
                 ("scan.npy", save_npy("control_loop.scan.npy", np.stack([x, 2 * x, 3 * x])))],
        data=model([helper.make_node("Loop", ["m", "", "acc0"], ["acc", "scan"], name="loop", body=body)],
                   [vi("x", [2, 3])], [vi("acc", [2, 3]), vi("scan", [3, 2, 3])], [m, zero]))

    # a while-loop (no M) on a run-time limit; its body holds a run-time If on
    # the iteration number whose branches read x from two scopes out
    then_g = branch("then", [helper.make_node("Add", ["acc_h", "x"], ["t"])], "t")
    else_g = branch("else", [helper.make_node("Sub", ["acc_h", "x"], ["e"])], "e")
    body = helper.make_graph([helper.make_node("Mul", ["acc_in", "half"], ["acc_h"]),
                              helper.make_node("Mod", ["i", "two"], ["im"]),
                              helper.make_node("Equal", ["im", "zero"], ["even"]),
                              helper.make_node("If", ["even"], ["acc_out"], then_branch=then_g, else_branch=else_g),
                              helper.make_node("Add", ["i", "one"], ["i1"]),
                              helper.make_node("Less", ["i1", "limit"], ["cond_out"])], "body",
                             [vi("i", [], I64), vi("c", [], TensorProto.BOOL), vi("acc_in", [2, 3])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2, 3])],
                             [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
                              for n, v in (("two", 2), ("zero", 0), ("one", 1))])
    limit = np.array(5, dtype=np.int64)
    acc = x.copy()
    for i in range(int(limit)):
        acc = acc * np.float32(0.5) + (x if i % 2 == 0 else -x)
    add("control_while_if.onnx", 0, 0, "-",
        "valid: a Loop with no trip count, stopped by its condition, with a run-time If inside its body",
        needs_op="Loop", inputs=[save_npy("control_while_if.x.npy", x), save_npy("control_while_if.limit.npy", limit)],
        outputs=[("acc.npy", save_npy("control_while_if.acc.npy", acc))],
        data=model([helper.make_node("Loop", ["", "true", "x"], ["acc"], name="loop", body=body)],
                   [vi("x", [2, 3]), vi("limit", [], I64)], [vi("acc", [2, 3])],
                   [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
                    numpy_helper.from_array(np.array(True), "true")]))

    # paddle2onnx's Loops: the body declares its iteration number and
    # condition as [1], not scalars (ONNX Runtime accepts it), and slices
    # with the iteration number (a 1-D Slice bound). With a trip count of 4
    # the Loop is unrolled; the while-loop on a run-time limit runs opaque.
    src = np.arange(8, dtype=np.float32).reshape(4, 2)
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["i", "one"], ["i1"]),
                              helper.make_node("Slice", ["src", "i", "i1", "ax0"], ["row"]),
                              helper.make_node("Add", ["acc_in", "row"], ["acc_out"])], "body",
                             [vi("i", [1], I64), vi("cond_in", [1], TensorProto.BOOL), vi("acc_in", [1, 2])],
                             [vi("cond_out", [1], TensorProto.BOOL), vi("acc_out", [1, 2])],
                             [numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
                              numpy_helper.from_array(np.array([0], dtype=np.int64), "ax0")])
    add("control_loop_rank1.onnx", 0, 0, "-",
        "valid: a Loop whose body declares its iteration number and condition [1] (paddle2onnx) and slices at i",
        needs_op="Loop", inputs=[save_npy("control_loop_rank1.src.npy", src)],
        outputs=[("acc.npy", save_npy("control_loop_rank1.acc.npy", src.sum(axis=0, keepdims=True)))],
        data=model([helper.make_node("Loop", ["m", "true", "acc0"], ["acc"], name="loop", body=body)],
                   [vi("src", [4, 2])], [vi("acc", [1, 2])],
                   [numpy_helper.from_array(np.array([4], dtype=np.int64), "m"),
                    numpy_helper.from_array(np.array([True]), "true"),
                    numpy_helper.from_array(np.zeros((1, 2), dtype=np.float32), "acc0")]))
    body = helper.make_graph([helper.make_node("Cast", ["i"], ["fi"], to=F),
                              helper.make_node("Mul", ["acc_in", "half"], ["acc_h"]),
                              helper.make_node("Add", ["acc_h", "fi"], ["acc_out"]),
                              helper.make_node("Add", ["i", "one"], ["i1"]),
                              helper.make_node("Less", ["i1", "limit"], ["cond_out"])], "body",
                             [vi("i", [1], I64), vi("c", [1], TensorProto.BOOL), vi("acc_in", [2, 3])],
                             [vi("cond_out", [1], TensorProto.BOOL), vi("acc_out", [2, 3])],
                             [numpy_helper.from_array(np.array([1], dtype=np.int64), "one")])
    limit = np.array(6, dtype=np.int64)
    acc = x.copy()
    for i in range(int(limit)):
        acc = acc * np.float32(0.5) + np.float32(i)
    add("control_while_rank1.onnx", 0, 0, "-",
        "valid: a Loop with no trip count whose body declares its iteration number and condition [1]",
        needs_op="Loop", inputs=[save_npy("control_while_rank1.x.npy", x),
                                 save_npy("control_while_rank1.limit.npy", limit)],
        outputs=[("acc.npy", save_npy("control_while_rank1.acc.npy", acc))],
        data=model([helper.make_node("Loop", ["", "true", "x"], ["acc"], name="loop", body=body)],
                   [vi("x", [2, 3]), vi("limit", [], I64)], [vi("acc", [2, 3])],
                   [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
                    numpy_helper.from_array(np.array([True]), "true")]))

    # a while-loop whose body slices at a loop-carried position (SLANet's
    # `t[:, k:k+1]`): no single inference of the body knows the slice, so it
    # is inferred again at every iteration when it runs
    body = helper.make_graph([helper.make_node("Add", ["k_in", "one"], ["k_out"]),
                              helper.make_node("Mod", ["k_in", "five"], ["at"]),
                              helper.make_node("Add", ["at", "one"], ["at1"]),
                              helper.make_node("Slice", ["src", "at", "at1", "ax0"], ["row"]),
                              helper.make_node("Add", ["acc_in", "row"], ["acc_out"]),
                              helper.make_node("Less", ["k_out", "limit"], ["cond_out"])], "body",
                             [vi("i", [], I64), vi("c", [], TensorProto.BOOL), vi("k_in", [1], I64),
                              vi("acc_in", [1, 2])],
                             [vi("cond_out", [1], TensorProto.BOOL), vi("k_out", [1], I64), vi("acc_out", [1, 2])],
                             [numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
                              numpy_helper.from_array(np.array([5], dtype=np.int64), "five"),
                              numpy_helper.from_array(np.array([0], dtype=np.int64), "ax0")])
    src = np.arange(10, dtype=np.float32).reshape(5, 2)
    limit = np.array([7], dtype=np.int64)  # rows 0-4, then 0 and 1 again (any limit keeps the row in bounds)
    add("control_loop_carried_slice.onnx", 0, 0, "-",
        "valid: a Loop with no trip count whose body slices at a loop-carried position",
        needs_op="Loop", inputs=[save_npy("control_loop_carried_slice.src.npy", src),
                                 save_npy("control_loop_carried_slice.limit.npy", limit)],
        outputs=[("acc.npy", save_npy("control_loop_carried_slice.acc.npy",
                                                           (src.sum(axis=0) + src[:2].sum(axis=0))[None, :]))],
        data=model([helper.make_node("Loop", ["", "true", "k0", "acc0"], ["k", "acc"], name="loop", body=body)],
                   [vi("src", [5, 2]), vi("limit", [1], I64)], [vi("acc", [1, 2])],
                   [numpy_helper.from_array(np.array(True), "true"),
                    numpy_helper.from_array(np.array([0], dtype=np.int64), "k0"),
                    numpy_helper.from_array(np.zeros((1, 2), dtype=np.float32), "acc0")]))

    # a while-loop whose body repeats work between iterations, as SLANet's
    # decoder does (weights handed on as they are, encoder features through
    # `x + 0`, their product at every step): iteration reuse
    # (ops/control_reuse.c) takes the outputs of nodes whose inputs did not
    # change from the last iteration. f holds a -0.0, which `+ 0` turns into
    # +0.0: its bytes change once, then stay; `at` = min(k, 2) changes twice,
    # then stays. The body slices at a loop-carried position, so it is
    # inferred again at every iteration; the _const twin has constant inputs
    # and is evaluated at load.
    def reuse_body():
        return helper.make_graph([
            helper.make_node("Add", ["k_in", "one"], ["k_out"]),
            helper.make_node("Mod", ["k_in", "five"], ["row_at"]),
            helper.make_node("Add", ["row_at", "one"], ["row_at1"]),
            helper.make_node("Slice", ["src", "row_at", "row_at1", "ax0"], ["row"]),
            helper.make_node("Min", ["k_in", "two"], ["at"]),
            helper.make_node("Add", ["at", "one"], ["at1"]),
            helper.make_node("MatMul", ["f_in", "w_in"], ["proj"]),
            helper.make_node("Slice", ["proj", "at", "at1", "ax0"], ["g"]),
            helper.make_node("Add", ["acc_in", "row"], ["acc_r"]),
            helper.make_node("Add", ["acc_r", "g"], ["acc_out"]),
            helper.make_node("Unsqueeze", ["f_in", "ax0"], ["fu"]),
            helper.make_node("Add", ["fu", "zero"], ["fz"]),
            helper.make_node("Squeeze", ["fz", "ax0"], ["f_out"]),
            helper.make_node("Less", ["k_out", "limit"], ["cond_out"])], "body",
            [vi("i", [], I64), vi("c", [], TensorProto.BOOL), vi("k_in", [1], I64), vi("acc_in", [1, 2]),
             vi("f_in", [3, 2]), vi("w_in", [2, 2])],
            [vi("cond_out", [1], TensorProto.BOOL), vi("k_out", [1], I64), vi("acc_out", [1, 2]), vi("f_out", [3, 2]),
             vi("w_in", [2, 2])],
            [numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
             numpy_helper.from_array(np.array([2], dtype=np.int64), "two"),
             numpy_helper.from_array(np.array([5], dtype=np.int64), "five"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "ax0"),
             numpy_helper.from_array(np.array([0.0], dtype=np.float32), "zero")])
    f = np.array([[1.0, -0.0], [0.5, 2.0], [-1.0, 3.0]], dtype=np.float32)
    w = np.array([[1.0, 2.0], [3.0, -4.0]], dtype=np.float32)
    proj = f @ w
    acc, k = np.zeros((1, 2), dtype=np.float32), 0
    while True:
        acc = (acc + src[k % 5][None, :]) + proj[min(k, 2)][None, :]
        k += 1
        if not k < int(limit[0]):
            break
    f_final = f + np.float32(0.0)
    reuse_loop = helper.make_node("Loop", ["", "true", "k0", "acc0", "f", "w"], ["k", "acc", "f_final", "w_final"],
                                  name="loop", body=reuse_body())
    reuse_consts = [numpy_helper.from_array(np.array(True), "true"),
                    numpy_helper.from_array(np.array([0], dtype=np.int64), "k0"),
                    numpy_helper.from_array(np.zeros((1, 2), dtype=np.float32), "acc0")]
    add("control_loop_reuse.onnx", 0, 0, "-",
        "valid: a while-Loop whose body repeats work between iterations (iteration reuse), inferred at every iteration",
        needs_op="Loop", inputs=[save_npy("control_loop_reuse.src.npy", src), save_npy("control_loop_reuse.limit.npy", limit),
                                 save_npy("control_loop_reuse.f.npy", f), save_npy("control_loop_reuse.w.npy", w)],
        outputs=[("acc.npy", save_npy("control_loop_reuse.acc.npy", acc)),
                 ("f_final.npy", save_npy("control_loop_reuse.f_final.npy", f_final)),
                 ("w_final.npy", save_npy("control_loop_reuse.w_final.npy", w))],
        data=model([reuse_loop], [vi("src", [5, 2]), vi("limit", [1], I64), vi("f", [3, 2]), vi("w", [2, 2])],
                   [vi("acc", [1, 2]), vi("f_final", [3, 2]), vi("w_final", [2, 2])], reuse_consts))
    x_c = np.array([[0.25, -0.5]], dtype=np.float32)
    add("control_loop_reuse_const.onnx", 0, 0, "-",
        "valid: the same Loop with constant inputs, evaluated at load with iteration reuse",
        needs_op="Loop", inputs=[save_npy("control_loop_reuse_const.x.npy", x_c)],
        outputs=[("y.npy", save_npy("control_loop_reuse_const.y.npy", acc + x_c))],
        data=model([reuse_loop, helper.make_node("Add", ["acc", "x"], ["y"])], [vi("x", [1, 2])], [vi("y", [1, 2])],
                   reuse_consts + [numpy_helper.from_array(src, "src"), numpy_helper.from_array(limit, "limit"),
                                   numpy_helper.from_array(f, "f"), numpy_helper.from_array(w, "w")]))

    # a while-loop carrying 12 values, 11 of them passed through unchanged
    # and never read after it (paddle2onnx carries a decoder's weights this
    # way: SLANet's Loop has 23 outputs, 2 read): more outputs than a
    # primitive holds, so its opaque primitive keeps values for the read ones
    n_pass = 11
    body = helper.make_graph([helper.make_node("Mul", ["acc_in", "half"], ["acc_h"]),
                              helper.make_node("Add", ["acc_h", "x"], ["acc_out"]),
                              helper.make_node("Add", ["i", "one"], ["i1"]),
                              helper.make_node("Less", ["i1", "limit"], ["cond_out"])] +
                             [helper.make_node("Identity", ["p%d_in" % j], ["p%d_out" % j]) for j in range(n_pass)],
                             "body",
                             [vi("i", [], I64), vi("c", [], TensorProto.BOOL), vi("acc_in", [2, 3])] +
                             [vi("p%d_in" % j, [2]) for j in range(n_pass)],
                             [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2, 3])] +
                             [vi("p%d_out" % j, [2]) for j in range(n_pass)],
                             [numpy_helper.from_array(np.array(1, dtype=np.int64), "one")])
    limit = np.array(4, dtype=np.int64)
    acc = np.zeros((2, 3), dtype=np.float32)
    for i in range(int(limit)):
        acc = acc * np.float32(0.5) + x
    add("control_while_many.onnx", 0, 0, "-",
        "valid: a Loop carrying 12 values (11 passed through and never read after it): more outputs than a primitive",
        needs_op="Loop", inputs=[save_npy("control_while_many.x.npy", x), save_npy("control_while_many.limit.npy", limit)],
        outputs=[("acc.npy", save_npy("control_while_many.acc.npy", acc))],
        data=model([helper.make_node("Loop", ["", "true", "acc0"] + ["w%d" % j for j in range(n_pass)],
                                     ["acc"] + ["q%d" % j for j in range(n_pass)], name="loop", body=body)],
                   [vi("x", [2, 3]), vi("limit", [], I64)], [vi("acc", [2, 3])],
                   [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
                    numpy_helper.from_array(np.array(True), "true"),
                    numpy_helper.from_array(np.zeros((2, 3), dtype=np.float32), "acc0")] +
                   [numpy_helper.from_array(np.full(2, j, dtype=np.float32), "w%d" % j) for j in range(n_pass)]))

    # Scan (opset 11) with two scan inputs on different axes, one reversed,
    # and two scan outputs on axis 1, one reversed
    body = helper.make_graph([helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
                              helper.make_node("Mul", ["s_out", "yt"], ["o1"]),
                              helper.make_node("Identity", ["xt"], ["o2"])], "body",
                             [vi("s_in", [3]), vi("xt", [3]), vi("yt", [3])], [vi("s_out", [3]), vi("o1", [3]), vi("o2", [3])])
    s0 = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    xs = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1
    ys = np.arange(12, dtype=np.float32).reshape(4, 3) / 8
    state, o1 = s0.copy(), np.zeros((3, 4), dtype=np.float32)
    for t in range(4):
        state = state + xs[:, 3 - t]
        o1[:, t] = state * ys[t]
    add("control_scan_axes.onnx", 0, 0, "-",
        "valid: Scan with scan input and output axes and directions", needs_op="Scan",
        inputs=[save_npy("control_scan_axes.s0.npy", s0), save_npy("control_scan_axes.x.npy", xs),
                save_npy("control_scan_axes.y.npy", ys)],
        outputs=[("s.npy", save_npy("control_scan_axes.s.npy", state)), ("a.npy", save_npy("control_scan_axes.a.npy", o1)),
                 ("b.npy", save_npy("control_scan_axes.b.npy", xs))],
        data=model([helper.make_node("Scan", ["s0", "x", "y"], ["s", "a", "b"], name="scan", num_scan_inputs=2, body=body,
                                     scan_input_axes=[1, 0], scan_input_directions=[1, 0], scan_output_axes=[1, -1],
                                     scan_output_directions=[0, 1])],
                   [vi("s0", [3]), vi("x", [3, 4]), vi("y", [4, 3])], [vi("s", [3]), vi("a", [3, 4]), vi("b", [3, 4])],
                   opset=11))


def gen_structure():
    relu = lambda i, o, n: helper.make_node("Relu", [i], [o], name=n)
    bad("cycle.onnx", "cycle", "a = Relu(b), b = Relu(a)",
        model([relu("b", "a", "r1"), relu("a", "b", "r2"), helper.make_node("Add", ["x", "a"], ["y"], name="add")],
              [vi("x", [2])], [vi("y", [2])]))
    bad("dangling_input.onnx", "neither a graph input", "a node reads a tensor nobody defines",
        model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")], [vi("x", [2])], [vi("y", [2])]))
    bad("duplicate_producer.onnx", "more than one producer", "two nodes write the same tensor",
        model([relu("x", "y", "r1"), relu("x", "y", "r2")], [vi("x", [2])], [vi("y", [2])]))
    bad("no_outputs.onnx", "no outputs", "a graph with no outputs", model([relu("x", "y", "r")], [vi("x", [2])], []))
    bad("output_not_produced.onnx", "not produced", "the graph output names a tensor nobody writes",
        model([relu("x", "y", "r")], [vi("x", [2])], [vi("ghost", [2])]))
    bad("no_op_type.onnx", "has no op_type", "a node with an empty op_type",
        model([helper.make_node("", ["x"], ["y"], name="nameless_op")], [vi("x", [2])], [vi("y", [2])]))
    bad("too_many_inputs.onnx", "has 2 inputs, expected 1 to 1", "Relu with two inputs",
        model([helper.make_node("Relu", ["x", "x"], ["y"], name="r")], [vi("x", [2])], [vi("y", [2])]))
    bad("output_dtype_mismatch.onnx", "but the model declares int64", "Relu output declared int64",
        model([relu("x", "y", "r")], [vi("x", [2])], [vi("y", [2], I64)]))
    bad("input_no_type.onnx", "has no element type", "a graph input without a type",
        model([relu("x", "y", "r")], [onnx.ValueInfoProto(name="x")], [vi("y", [2])]))
    bad("sequence_input.onnx", "only tensor types are supported", "a graph input of sequence type",
        model([relu("x", "y", "r")], [helper.make_tensor_sequence_value_info("x", F, [2])], [vi("y", [2])]))
    bad("rank_too_high.onnx", "exceeds korch's maximum", "a rank-9 graph input",
        model([relu("x", "y", "r")], [vi("x", [1] * 9)], [vi("y", [1] * 9)]))
    # found by fuzzing: a graph output that is also the graph input, declared
    # with another shape, used to overwrite the input's declared shape
    bad("input_output_shape_conflict.onnx", "declared twice with different shapes",
        "the graph input x [3, 3] is also the graph output, declared [2, 3]",
        model([relu("x", "y", "r")], [vi("x", [3, 3])], [vi("x", [2, 3]), vi("y", [3, 3])]))
    bad("input_output_type_conflict.onnx", "declared twice with different types",
        "the graph input x (float32) is also the graph output, declared int64",
        model([relu("x", "y", "r")], [vi("x", [3, 3])], [vi("x", [3, 3], I64), vi("y", [3, 3])]))
    # check validates all but shapes and says so (exit 0); run needs the shape
    bad("symbolic_input.onnx", "symbolic dimension", "the only input has a symbolic batch dimension",
        model([relu("x", "y", "r")], [vi("x", ["batch", 3])], [vi("y", ["batch", 3])]), check_exit=0)


def initializer_model(init, name="w", shape=(4,)):
    return model([helper.make_node("Add", ["x", name], ["y"], name="add")], [vi("x", list(shape))],
                 [vi("y", list(shape))], [init])


def gen_tensors():
    t = TensorProto(name="w", data_type=F, dims=[4, 4], raw_data=b"\0" * 10)
    bad("raw_data_short.onnx", "raw_data holds 10 bytes", "a 4x4 float initializer with 10 bytes of raw_data",
        initializer_model(t, shape=(4, 4)))
    t = TensorProto(name="w", data_type=F, dims=[4], float_data=[1, 2, 3])
    bad("typed_data_short.onnx", "holds 3 values", "a [4] float initializer with 3 float_data values",
        initializer_model(t))
    t = TensorProto(name="w", data_type=F, dims=[-1, 4])
    bad("negative_dims.onnx", "negative dimension", "an initializer with dims [-1, 4]", initializer_model(t))
    t = TensorProto(name="w", data_type=F, dims=[1 << 40, 1 << 40])
    bad("huge_dims.onnx", "too large", "an initializer with dims [2^40, 2^40] and no data", initializer_model(t))
    bad("huge_input.onnx", "too large", "a graph input of shape [2^40, 2^40]",
        model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1 << 40, 1 << 40])],
              [vi("y", [1 << 40, 1 << 40])]))
    t = TensorProto(name="w", data_type=99, dims=[4], raw_data=b"\0" * 16)
    bad("invalid_dtype.onnx", "invalid data type 99", "an initializer of data_type 99", initializer_model(t))
    t = TensorProto(name="w", data_type=TensorProto.STRING, dims=[1], string_data=[b"hello"])
    bad("string_initializer.onnx", "string is not supported", "a string initializer", initializer_model(t))
    w = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "w")
    m = initializer_model(w)
    m.graph.initializer.append(numpy_helper.from_array(np.ones(4, dtype=np.float32), "w"))
    bad("duplicate_initializer.onnx", "defined twice", "two initializers named w", m)


def external(location):
    t = TensorProto(name="w", data_type=F, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return initializer_model(t)


def gen_external():
    bad("external_absolute.onnx", "leaves the model's folder", "external data at /etc/passwd",
        external("/etc/passwd"))
    bad("external_dotdot.onnx", "leaves the model's folder", "external data at ../../../../etc/passwd",
        external("../../../../etc/passwd"))
    bad("external_missing.onnx", "cannot open external data", "external data file that does not exist",
        external("external_missing.bin"))
    # dims of 2^37 int8 backed by a 16-byte file: refused before allocating 128 GiB
    t = external("external_ok.bin")
    t.graph.initializer[0].data_type = TensorProto.INT8
    t.graph.initializer[0].dims[:] = [1 << 37]
    del t.graph.initializer[0].external_data[2]  # no length: only the file size can refuse it
    bad("external_huge_dims.onnx", "is too short", "external data of 2^37 bytes in a 16-byte file", t)
    # valid: a file next to the model
    w = np.array([0.5, -1.0, 2.0, 3.25], dtype=np.float32)
    write("external_ok.bin", w.tobytes())
    x = np.array([1.0, 2.0, -3.0, 0.0], dtype=np.float32)
    add("external_ok.onnx", 0, 0, "-", "valid: external data inside the model's folder",
        inputs=[save_npy("external_ok.x.npy", x)], outputs=[("y.npy", save_npy("external_ok.y.npy", x + w))],
        data=external("external_ok.bin"))


def gen_opsets_and_ops():
    bad("unsupported_op.onnx", "unsupported operator NotAnOnnxOp", "an operator korch does not know",
        model([helper.make_node("NotAnOnnxOp", ["x"], ["y"], name="n")], [vi("x", [2])], [vi("y", [2])]))
    bad("custom_domain.onnx", "custom domain", "an operator from domain com.example",
        model([helper.make_node("Relu", ["x"], ["y"], name="n", domain="com.example")], [vi("x", [2])],
              [vi("y", [2])], extra_opsets=[helper.make_opsetid("com.example", 1)]))
    bad("opset_99.onnx", "opset 99", "the model imports ONNX opset 99", relu_model(opset=99))
    # ONNX Runtime's QOperator contrib operators with inputs left out
    # (lowered at validation, src/frontend/contrib_qlinear.c): named refusals
    ms = [helper.make_opsetid("com.microsoft", 1)]
    U = TensorProto.UINT8
    bad("qlinearadd_no_scales.onnx", "needs A, B, their scales", "QLinearAdd with its scales left out",
        model([helper.make_node("QLinearAdd", ["a", "", "", "b", "", "", "", "z"], ["y"], name="qadd",
                                domain="com.microsoft")],
              [vi("a", [2, 3], U), vi("b", [2, 3], U), vi("z", [], U)], [vi("y", [2, 3], U)], extra_opsets=ms))
    bad("qgemm_no_scales.onnx", "needs A, B and their scales", "QGemm with its scales left out",
        model([helper.make_node("QGemm", ["a", "", "", "b", "", ""], ["y"], name="qgemm", domain="com.microsoft")],
              [vi("a", [2, 3], U), vi("b", [3, 4], U)], [vi("y", [2, 4])], extra_opsets=ms))
    bad("qlinearconcat_short.onnx", "triple per input", "QLinearConcat with a triple cut short",
        model([helper.make_node("QLinearConcat", ["s", "z", "a", "s"], ["y"], name="qcat", axis=0,
                                domain="com.microsoft")],
              [vi("s", []), vi("z", [], U), vi("a", [2], U)], [vi("y", [2], U)], extra_opsets=ms))
    bad("qlinearpool_channels_last.onnx", "channels_last=1", "QLinearGlobalAveragePool with channels_last=1",
        model([helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["y"], name="qgap",
                                channels_last=1, domain="com.microsoft")],
              [vi("x", [1, 4, 4, 3], U), vi("s", []), vi("z", [], U)], [vi("y", [1, 1, 1, 3], U)],
              extra_opsets=ms))
    n = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    n.attribute.append(helper.make_attribute("allowzero", "yes"))
    shape = numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "shape")
    bad("attr_wrong_type.onnx", "attribute \"allowzero\" has type STRING, expected INT",
        "Reshape with a string allowzero attribute",
        model([n], [vi("x", [2, 3])], [vi("y", [3, 2])], [shape], opset=14))
    n = helper.make_node("Constant", [], ["c"], name="const", value_float=1.0,
                         value=numpy_helper.from_array(np.ones(2, dtype=np.float32)))
    bad("constant_two_values.onnx", "exactly one value attribute", "a Constant with value and value_float",
        model([n, helper.make_node("Add", ["x", "c"], ["y"], name="add")], [vi("x", [2])], [vi("y", [2])]))
    shape = numpy_helper.from_array(np.array([4, 2], dtype=np.int64), "shape")
    bad("reshape_count_mismatch.onnx", "element counts differ", "Reshape 2x3 to 4x2",
        model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [vi("x", [2, 3])],
              [vi("y", [4, 2])], [shape]))
    bad("add_no_broadcast.onnx", "do not broadcast", "Add of 2x3 and 4",
        model([helper.make_node("Add", ["x", "z"], ["y"], name="add")], [vi("x", [2, 3]), vi("z", [4])],
              [vi("y", [2, 3])]))
    # 1024x1024 (4 MiB, folded), reshaped to 2^20x1 and 1x2^20 and added: 2^40
    # floats (4 TiB). Folding must leave that node alone instead of trying to
    # allocate it; `korch check` must pass. (No run: whether a 4 TiB calloc
    # fails cleanly depends on the kernel's overcommit policy.)
    consts = [numpy_helper.from_array(np.ones((1024, 1), dtype=np.float32), "a"),
              numpy_helper.from_array(np.ones((1, 1024), dtype=np.float32), "b"),
              numpy_helper.from_array(np.array([1 << 20, 1], dtype=np.int64), "col"),
              numpy_helper.from_array(np.array([1, 1 << 20], dtype=np.int64), "row")]
    add("fold_huge.onnx", 0, "-", "-",
        "valid: constants whose folded sum would be 2^40 floats; folding must not materialise it",
        data=model([helper.make_node("Add", ["a", "b"], ["ab"], name="outer"),
                    helper.make_node("Reshape", ["ab", "col"], ["c"], name="as_col"),
                    helper.make_node("Reshape", ["ab", "row"], ["r"], name="as_row"),
                    helper.make_node("Add", ["c", "r"], ["huge"], name="huge_sum"),
                    helper.make_node("Add", ["x", "huge"], ["y"], name="add")],
                   [vi("x", [1])], [vi("y", [1 << 20, 1 << 20])], consts))


def gen_nn_ops():
    w = numpy_helper.from_array(np.ones((4, 2, 3, 3), dtype=np.float32), "w")
    bad("conv_channel_mismatch.onnx", "channel", "Conv of a 3-channel input with 2-channel weights (group 1)",
        model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [vi("x", [1, 3, 8, 8])],
              [vi("y", [1, 4, 6, 6])], [w]), needs_op="Conv")
    b = numpy_helper.from_array(np.ones((4, 5), dtype=np.float32), "b")
    bad("matmul_inner_mismatch.onnx", "2x3", "MatMul of 2x3 and 4x5",
        model([helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")], [vi("a", [2, 3])], [vi("y", [2, 5])],
              [b]), needs_op="MatMul")
    bad("transpose_bad_perm.onnx", "perm", "Transpose with perm [0, 0, 1]",
        model([helper.make_node("Transpose", ["x"], ["y"], name="transpose", perm=[0, 0, 1])], [vi("x", [2, 3, 4])],
              [vi("y", [2, 2, 3])]), needs_op="Transpose")
    consts = [numpy_helper.from_array(np.array(v, dtype=np.int64), n)
              for n, v in (("starts", [0]), ("ends", [5]), ("axes", [0]), ("steps", [0]))]
    bad("slice_step_zero.onnx", "step", "Slice with steps [0]",
        model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")],
              [vi("x", [10])], [vi("y", [5])], consts), needs_op="Slice")
    idx = numpy_helper.from_array(np.array([0, 5], dtype=np.int64), "idx")
    bad("gather_const_oob.onnx", "out of range", "Gather of a 3x4 input with constant indices [0, 5] on axis 0",
        model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=0)], [vi("x", [3, 4])],
              [vi("y", [2, 4])], [idx]), needs_op="Gather")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    add("gather_input_oob.onnx", 0, 1, "out of range",
        "Gather whose indices arrive at run time with an out-of-range value (7 for a dimension of 3): "
        "check passes, the run must fail cleanly",
        needs_op="Gather",
        inputs=[save_npy("gather_input_oob.x.npy", x),
                save_npy("gather_input_oob.idx.npy", np.array([0, 7], dtype=np.int64))],
        data=model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=0)],
                   [vi("x", [3, 4]), vi("idx", [2], I64)], [vi("y", [2, 4])]))


def gen_index_ops():
    """Operators that address by run-time values or sort (GatherElements,
    GatherND, ScatterND, Scatter, TopK) and the masks transformer exports
    write (Trilu, EyeLike): valid models whose outputs numpy computes here."""
    rng = np.random.default_rng(24)
    x = rng.standard_normal((2, 6, 8)).astype(np.float32)
    idx = np.array([[1, 4], [0, 0], [1, 2]], dtype=np.int64)  # distinct (batch, row) tuples
    upd = rng.standard_normal((3, 8)).astype(np.float32)
    s = x @ x.transpose(0, 2, 1)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :3]
    relu = np.maximum(x, 0)
    scattered = x.copy()
    for t in range(3):
        scattered[idx[t, 0], idx[t, 1]] += upd[t]
    k2 = numpy_helper.from_array(np.array(2, dtype=np.int64), "k2")
    K = numpy_helper.from_array(np.array([3], dtype=np.int64), "K")
    axes0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0")
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], name="xt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["x", "xt"], ["s"], name="scores"),
        helper.make_node("ReduceSum", ["s", "axes0"], ["s2"], name="s2", keepdims=0),
        helper.make_node("EyeLike", ["s2"], ["eye"], name="eye", k=1),
        helper.make_node("Trilu", ["s"], ["low"], name="tril", upper=0),
        helper.make_node("Add", ["low", "eye"], ["y1"], name="y1"),
        helper.make_node("Trilu", ["x", "k2"], ["y2"], name="triu_k2"),
        helper.make_node("TopK", ["x", "K"], ["y3", "y4"], name="topk", axis=-1),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("GatherElements", ["r", "y4"], ["y5"], name="gather_elements", axis=2),
        helper.make_node("GatherND", ["x", "idx"], ["nd"], name="gather_nd"),
        helper.make_node("Add", ["nd", "nd"], ["y6"], name="y6"),
        helper.make_node("ScatterND", ["x", "idx", "upd"], ["y7"], name="scatter_nd", reduction="add"),
    ]
    outs = {"y1": np.tril(s) + np.eye(6, 6, k=1, dtype=np.float32), "y2": np.triu(x, 2),
            "y3": np.take_along_axis(x, order, -1), "y4": order, "y5": np.take_along_axis(relu, order, -1),
            "y6": 2 * x[idx[:, 0], idx[:, 1]], "y7": scattered}
    shapes = {"y1": [2, 6, 6], "y2": [2, 6, 8], "y3": [2, 6, 3], "y4": [2, 6, 3], "y5": [2, 6, 3], "y6": [3, 8],
              "y7": [2, 6, 8]}
    add("index_ops.onnx", 0, 0, "-",
        "valid: Trilu (a causal mask, and k=2), EyeLike, TopK feeding GatherElements, GatherND and ScatterND "
        "(add) at run-time indices",
        inputs=[save_npy("index_ops.x.npy", x), save_npy("index_ops.idx.npy", idx),
                save_npy("index_ops.upd.npy", upd)],
        outputs=[(f"{n}.npy", save_npy(f"index_ops.{n}.npy", v)) for n, v in outs.items()],
        data=model(nodes, [vi("x", [2, 6, 8]), vi("idx", [3, 2], I64), vi("upd", [3, 8])],
                   [vi(n, shapes[n], I64 if n == "y4" else F) for n in outs], [k2, K, axes0], opset=17))

    # opset 9: TopK's K is an attribute, Scatter is ScatterElements' old name
    a = rng.standard_normal((3, 5)).astype(np.float32)
    sidx = np.array([[4, 0], [1, 3], [2, 2]], dtype=np.int64)
    sidx[2, 1] = 0  # distinct within each row: no update overwrites another
    u = rng.standard_normal((3, 2)).astype(np.float32)
    sc = a.copy()
    for r in range(3):
        for c in range(2):
            sc[r, sidx[r, c]] = u[r, c]
    top = np.argsort(-a, axis=1, kind="stable")[:, :2]
    add("index_ops_opset9.onnx", 0, 0, "-",
        "valid: opset 9 TopK with its k attribute and Scatter (axis 1) at run-time indices",
        inputs=[save_npy("index_ops_opset9.a.npy", a), save_npy("index_ops_opset9.sidx.npy", sidx),
                save_npy("index_ops_opset9.u.npy", u)],
        outputs=[("v.npy", save_npy("index_ops_opset9.v.npy", np.take_along_axis(a, top, 1))),
                 ("i.npy", save_npy("index_ops_opset9.i.npy", top)),
                 ("sc.npy", save_npy("index_ops_opset9.sc.npy", sc))],
        data=model([helper.make_node("TopK", ["a"], ["v", "i"], name="topk", k=2, axis=1),
                    helper.make_node("Scatter", ["a", "sidx", "u"], ["sc"], name="scatter", axis=1)],
                   [vi("a", [3, 5]), vi("sidx", [3, 2], I64), vi("u", [3, 2])],
                   [vi("v", [3, 2]), vi("i", [3, 2], I64), vi("sc", [3, 5])], opset=9))
    bad("gather_elements_oob.onnx", "out of range", "GatherElements with a constant index 3 on an axis of 3",
        model([helper.make_node("GatherElements", ["x", "gi"], ["y"], name="gather_elements", axis=1)],
              [vi("x", [2, 3])], [vi("y", [2, 1])],
              [numpy_helper.from_array(np.array([[0], [3]], dtype=np.int64), "gi")]), needs_op="GatherElements")
    bad("topk_k_too_large.onnx", "outside [0, 5]", "TopK of 6 elements on an axis of 5",
        model([helper.make_node("TopK", ["x", "K"], ["v", "i"], name="topk")], [vi("x", [2, 5])],
              [vi("v", [2, 6]), vi("i", [2, 6], I64)],
              [numpy_helper.from_array(np.array([6], dtype=np.int64), "K")], opset=11), needs_op="TopK")
    add("scatter_nd_input_oob.onnx", 0, 1, "out of range",
        "ScatterND whose index tuple arrives at run time out of range: check passes, the run fails cleanly",
        needs_op="ScatterND",
        inputs=[save_npy("scatter_nd_input_oob.x.npy", a),
                save_npy("scatter_nd_input_oob.ti.npy", np.array([[0, 7]], dtype=np.int64)),
                save_npy("scatter_nd_input_oob.tu.npy", np.ones(1, dtype=np.float32))],
        data=model([helper.make_node("ScatterND", ["x", "ti", "tu"], ["y"], name="scatter_nd")],
                   [vi("x", [3, 5]), vi("ti", [1, 2], I64), vi("tu", [1])], [vi("y", [3, 5])], opset=13))


def gen_einsum():
    """Einsum in the forms exporters write; numpy.einsum computes the outputs.
    Fission turns the one- and two-operand ones into sums, transposes and a
    MatMul (rules_einsum.c); the diagonal and the three-operand one stay whole."""
    rng = np.random.default_rng(29)
    q = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    a = rng.standard_normal((4, 5, 3)).astype(np.float32)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    m = rng.standard_normal((5, 5)).astype(np.float32)
    forms = [("y1", "bhqd,bhkd->bhqk", ["q", "k"]), ("y2", "bsd,df->bsf", ["a3", "w"]),
             ("y3", "ijk,jl->li", ["a", "w"]), ("y4", "ij->ji", ["m"]), ("y5", "ijk->j", ["a"]),
             ("y6", "...qd,...kd->...kq", ["q", "k"]), ("y7", "ij,jk", ["m", "w"]), ("y8", "i,j->ij", ["v", "u"]),
             ("y9", "ii->i", ["m"]), ("y10", "ij,jk,kl->il", ["m", "m", "w"]), ("y11", "bhqk,bhkd->bqhd", ["s", "k"])]
    a3 = rng.standard_normal((2, 3, 5)).astype(np.float32)
    v = rng.standard_normal(5).astype(np.float32)
    u = rng.standard_normal(3).astype(np.float32)
    s = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    vals = {"q": q, "k": k, "a": a, "w": w, "m": m, "a3": a3, "v": v, "u": u, "s": s}
    inputs = ["q", "k", "a", "m", "a3", "v", "u", "s"]  # w is a constant (projection weights)
    nodes, outs, infos = [], [], []
    for name, eq, ins in forms:
        y = np.ascontiguousarray(np.einsum(eq, *[vals[i] for i in ins]).astype(np.float32))
        nodes.append(helper.make_node("Einsum", ins, [name], name="einsum_" + name, equation=eq))
        outs.append((f"{name}.npy", save_npy(f"einsum_forms.{name}.npy", y)))
        infos.append(vi(name, list(y.shape)))
    add("einsum_forms.onnx", 0, 0, "-",
        "valid: Einsum as attention products, projections, transposes, sums, an implicit output, an outer "
        "product, a diagonal and three operands",
        inputs=[save_npy(f"einsum_forms.{n}.npy", vals[n]) for n in inputs], outputs=outs,
        data=model(nodes, [vi(n, list(vals[n].shape)) for n in inputs], infos,
                   [numpy_helper.from_array(w, "w")], opset=12))
    bad("einsum_too_many_products.onnx", "products (more than 2^40)",
        "Einsum of five 4096-vectors into a scalar: 2^60 products for the reference to walk",
        model([helper.make_node("Einsum", ["a", "b", "c", "d", "e"], ["y"], name="einsum", equation="a,b,c,d,e->")],
              [vi(n, [4096]) for n in "abcde"], [vi("y", [])], opset=12), needs_op="Einsum")
    bad("dft_too_long.onnx", "korch's reference stops at 2^36",
        "DFT of a 2^20-point signal: the direct transform would take 2^43 flops",
        model([helper.make_node("DFT", ["x"], ["y"], name="dft")], [vi("x", [1, 1 << 20, 1])],
              [vi("y", [1, 1 << 20, 2])], opset=17), needs_op="DFT")
    bad("einsum_bad_equation.onnx", "has 2 letters for an input of rank 3", "Einsum whose term is shorter than its input",
        model([helper.make_node("Einsum", ["x"], ["y"], name="einsum", equation="ij->i")], [vi("x", [2, 3, 4])],
              [vi("y", [2])], opset=12), needs_op="Einsum")


def conv2d_reference(x, w, pads):
    """Plain numpy NCHW convolution (stride 1, no dilation, one group)."""
    top, left, bottom, right = pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,mcij->nmhw", windows, w, dtype=np.float64).astype(np.float32)


def gen_conv_padding():
    # found by fuzzing: with a left padding wider than the input, the im2col
    # block boundary fell inside an output row's leading zero run and Conv
    # wrote past its column buffer (ASan: heap-buffer-overflow in im2col)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 12, 15)).astype(np.float32)
    w = rng.standard_normal((2, 3, 12, 15)).astype(np.float32)
    pads = [17, 41, 1, 1]  # ONNX order: top, left, bottom, right
    y = conv2d_reference(x, w, (pads[0], pads[1], pads[2], pads[3]))
    add("conv_wide_left_padding.onnx", 0, 0, "-",
        "valid: Conv 2x3x12x15 * 2x3x12x15 with pads [17, 41, 1, 1] (output 2x2x19x43)",
        inputs=[save_npy("conv_wide_left_padding.x.npy", x)],
        outputs=[("y.npy", save_npy("conv_wide_left_padding.y.npy", y))],
        data=model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=pads)], [vi("x", [2, 3, 12, 15])],
                   [vi("y", [2, 2, 19, 43])], [numpy_helper.from_array(w, "w")]))


def gen_empty_outputs():
    # found by fuzzing: a 0-element output whose other axes are huge is valid
    # and costs nothing, but Resize and Pad sized their per-axis index maps by
    # the output dims and failed ("out of memory for index maps") after trying
    # to allocate 64 GB / 512 GB (smaller sizes were allocated and filled)
    x = np.zeros((1, 3, 0, 8), dtype=np.float32)
    save_npy("empty_input.x.npy", x)
    scales = numpy_helper.from_array(np.array([1, 1, 1, 1e9], dtype=np.float32), "scales")
    add("resize_empty_huge_axis.onnx", 0, 0, "-",
        "valid: Resize of a 1x3x0x8 input by [1, 1, 1, 1e9]: an empty 1x3x0x8000000000 result",
        inputs=["empty_input.x.npy"],
        outputs=[("y.npy", save_npy("resize_empty_huge_axis.y.npy", np.zeros((1, 3, 0, 8000000000), np.float32)))],
        data=model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")], [vi("x", [1, 3, 0, 8])],
                   [vi("y", [1, 3, 0, 8000000000])], [scales]))
    pads = numpy_helper.from_array(np.array([0, 0, 0, 0, 0, 0, 0, 1 << 36], dtype=np.int64), "pads")
    add("pad_empty_huge_axis.onnx", 0, 0, "-",
        "valid: Pad of a 1x3x0x8 input by 2^36 at the end of the last axis: an empty result",
        inputs=["empty_input.x.npy"],
        outputs=[("y.npy", save_npy("pad_empty_huge_axis.y.npy", np.zeros((1, 3, 0, 8 + (1 << 36)), np.float32)))],
        data=model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")], [vi("x", [1, 3, 0, 8])],
                   [vi("y", [1, 3, 0, 8 + (1 << 36)])], [pads]))


def gen_hostile_attributes():
    """Attribute and constant-input values no operator may trust."""
    x = [vi("x", [1, 3, 8, 8])]
    y = [onnx.ValueInfoProto(name="y")]  # untyped: the operator decides
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), dtype=np.float32), "w")

    def const(name, value, dtype=np.int64):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    def node(op, inputs, **attrs):
        return helper.make_node(op, inputs, ["y"], name=op.lower(), **attrs)

    cases = [
        ("conv_stride_zero", "strides[0] = 0", "Conv with strides [0, 0]",
         [node("Conv", ["x", "w"], strides=[0, 0])], [w]),
        ("conv_huge_pads", "pads[0] = 1099511627776", "Conv with pads of 2^40",
         [node("Conv", ["x", "w"], pads=[1 << 40] * 4)], [w]),
        ("maxpool_kernel_zero", "kernel_shape[0] = 0", "MaxPool with kernel_shape [0, 0]",
         [node("MaxPool", ["x"], kernel_shape=[0, 0])], []),
        ("concat_axis_out_of_range", "axis 7 is out of range", "Concat on axis 7 of rank-4 inputs",
         [node("Concat", ["x", "x"], axis=7)], []),
        ("softmax_axis_out_of_range", "axis -9 is out of range", "Softmax on axis -9 of a rank-4 input",
         [node("Softmax", ["x"], axis=-9)], []),
        ("depth_to_space_blocksize_zero", "blocksize 0", "DepthToSpace with blocksize 0",
         [node("DepthToSpace", ["x"], blocksize=0)], []),
        ("range_delta_zero", "delta is 0", "Range(0, 10, 0): an endless range",
         [node("Range", ["s", "l", "d"])], [const("s", 0.0, np.float32), const("l", 10.0, np.float32),
                                             const("d", 0.0, np.float32)]),
        ("range_limit_nan", "nan", "Range(0, NaN, 1)",
         [node("Range", ["s", "l", "d"])], [const("s", 0.0, np.float32), const("l", np.nan, np.float32),
                                             const("d", 1.0, np.float32)]),
        ("resize_scale_nan", "scale nan", "Resize with a NaN scale",
         [node("Resize", ["x", "", "sc"])], [const("sc", [1, 1, np.nan, 2], np.float32)]),
        ("tile_huge", "absurd shape", "Tile by 2^20 x 2^20: a 2^48-element result",
         [node("Tile", ["x", "r"])], [const("r", [1 << 20, 1 << 20, 1, 1])]),
        ("pad_huge", "absurd shape", "Pad by 2^40 on both sides of an axis",
         [node("Pad", ["x", "p"])], [const("p", [0, 0, 1 << 40, 0, 0, 0, 1 << 40, 0])]),
        ("split_sizes_mismatch", "sums to 7", "Split of 3 channels into [2, 5]",
         [helper.make_node("Split", ["x", "s"], ["y", "z"], name="split", axis=1)], [const("s", [2, 5])]),
    ]
    for name, substring, description, nodes, inits in cases:
        outs = y + ([onnx.ValueInfoProto(name="z")] if name.startswith("split") else [])
        ins = [] if name.startswith("range") else x
        bad(name + ".onnx", substring, description, model(nodes, ins, outs, inits))

    # valid: a step of INT64_MIN must neither overflow nor loop; the slice is empty
    consts = [const("starts", [0]), const("ends", [1 << 62]), const("axes", [2]), const("steps", [-(1 << 63)])]
    xv = np.arange(192, dtype=np.float32).reshape(1, 3, 8, 8)
    add("slice_step_int64_min.onnx", 0, 0, "-", "valid: Slice with step -2^63 from 0: an empty result",
        inputs=[save_npy("slice_step_int64_min.x.npy", xv)],
        outputs=[("y.npy", save_npy("slice_step_int64_min.y.npy", xv[:, :, 0:0, :]))],
        data=model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")],
                   x, [vi("y", [1, 3, 0, 8])], consts))


def gen_valid():
    # a 10k-node chain: recursion over the graph would blow the stack
    n_nodes = 10000
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i}"], [f"t{i + 1}" if i + 1 < n_nodes else "y"],
                              name=f"relu{i}") for i in range(n_nodes)]
    x = np.array([[-1.5, 0.0, 2.0, 3.5]], dtype=np.float32)
    add("deep_chain.onnx", 0, 0, "-", "valid: a chain of 10,000 Relu nodes",
        inputs=[save_npy("deep_chain.x.npy", x)], outputs=[("y.npy", save_npy("deep_chain.y.npy", np.maximum(x, 0)))],
        data=model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])]))
    cyc = list(nodes)
    cyc[0] = helper.make_node("Add", ["x", "y"], ["t1"], name="relu0")
    bad("deep_cycle.onnx", "cycle", "a 10,000-node ring: the first node reads the last node's output",
        model(cyc, [vi("x", [1, 4])], [vi("y", [1, 4])]))

    w = numpy_helper.from_array(np.ones(3, dtype=np.float32), "w")
    x0 = np.zeros((0, 3), dtype=np.float32)
    add("zero_size.onnx", 0, 0, "-", "valid: a 0x3 input through Relu and a broadcast Add",
        inputs=[save_npy("zero_size.x.npy", x0)], outputs=[("y.npy", save_npy("zero_size.y.npy", x0 + 1))],
        data=model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                    helper.make_node("Add", ["r", "w"], ["y"], name="add")], [vi("x", [0, 3])], [vi("y", [0, 3])],
                   [w]))

    # Names that break naive printing, C emission and file naming. Valid ONNX.
    x_name = 'x "quoted"\nnewline */ #include <stdio.h> \\back\\slash ünïcödé'
    w_name = "w'*/\\\"\r\n#define W 1 /* 重み"
    r_name = "relu out\t\"*/\x7f"
    y_name = '../y "out"\n*/#include "evil.h"\\ é'
    x = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 4.0]], dtype=np.float32)
    wv = np.array([1.0, -1.0, 0.5], dtype=np.float32)
    w = numpy_helper.from_array(wv, w_name)
    hostile = model([helper.make_node("Relu", [x_name], [r_name], name='node "relu"\n*/ #include'),
                     helper.make_node("Add", [r_name, w_name], [y_name], name="node\\add\u00e9 */")],
                    [vi(x_name, [2, 3])], [vi(y_name, [2, 3])], [w], name='graph "g"\n*/ #include <x>')
    add("hostile_names.onnx", 0, 0, "-",
        "valid: tensor, node and graph names with quotes, newlines, */, #include, backslashes and non-ASCII",
        inputs=[save_npy("hostile_names.x.npy", x)],
        outputs=[(sanitize(y_name) + ".npy", save_npy("hostile_names.y.npy", np.maximum(x, 0) + wv))],
        data=hostile)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def plan_file(graph, weights, text_edit=None):
    """A self-contained plan (docs/plan-format.md, format 3) around `graph`
    and `weights`, with valid checksums: damaged afterwards by the caller.
    No kernel lines: every entry fails at the checksums, before the model or
    the kernels are looked at."""
    off = (len(graph) + 63) // 64 * 64
    body = ("korch-plan 3\n# korch execution plan; format: docs/plan-format.md\n"
            "model path=/models/relu.onnx sha256=" + "a" * 64 + "\n"
            "embedded graph-bytes=%d graph-crc32c=%08x weights-offset=%d weights-bytes=%d weights-crc32c=%08x\n"
            "machine cpu=Imaginary%%20CPU isa=avx2\ninput name=x shape=2x3\n"
            "fission version=korch-0.1.0 pgraph-hash=0123456789abcdef pgraph-nodes=1 layout=channels-last\n"
            "strategy name=none threads=1 predicted-ms=0.001\n"
            % (len(graph), crc32c(graph), off, len(weights), crc32c(weights))).encode()
    if text_edit:
        body = text_edit(body)
    text = body + b"end kernels=0 crc32c=%08x\n" % crc32c(body)
    start = (len(text) // 64 + 1) * 64
    return text + b"\0" * (start - len(text)) + graph + b"\0" * (off - len(graph)) + weights


def gen_plans():
    """Damaged self-contained plans: `korch check` and `korch run` refuse each
    with one line naming the file and the damage."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "korch:plan-weights"), ("offset", "0"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    graph = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])],
                  inits=[t]).SerializeToString()
    good = plan_file(graph, w.tobytes())
    start = (good.index(b"\0") // 64 + 1) * 64
    flipped = bytearray(good)
    flipped[-5] ^= 0x40
    add("plan_weights_damaged.plan", 1, 1, "is damaged: the checksum of its weight section",
        "a self-contained plan with one byte of its weight section flipped", data=bytes(flipped))
    flipped = bytearray(good)
    flipped[start + 7] ^= 0x40
    add("plan_graph_damaged.plan", 1, 1, "is damaged: the checksum of its graph section",
        "a self-contained plan with one byte of its graph section flipped", data=bytes(flipped))
    flipped = bytearray(good)
    flipped[good.index(b"threads=1") + 8] = ord("7")
    add("plan_text_damaged.plan", 1, 1, "is damaged: the checksum of its text does not match",
        "a self-contained plan whose threads=1 became threads=7 after it was written", data=bytes(flipped))
    add("plan_truncated.plan", 1, 1, "is truncated", "a self-contained plan cut inside its graph section",
        data=good[:start + 10])
    add("plan_trailing_bytes.plan", 1, 1, "unexpected bytes after its weight section",
        "a self-contained plan with 64 bytes appended", data=good + b"\0" * 64)
    add("plan_v2_nul.plan", 1, 1, "contains a NUL byte", "a format-2 plan (no sections) with a NUL byte after its text",
        data=b"korch-plan 2\nmodel path=/m.onnx sha256=" + b"a" * 64 +
        b"\nfission version=korch-0.1.0 pgraph-hash=0123456789abcdef pgraph-nodes=1\nend kernels=0\n\0")


def main():
    if os.path.isdir(OUT):
        for f in os.listdir(OUT):
            if f.endswith((".onnx", ".npy", ".bin", ".plan")) or f == "MANIFEST.tsv":
                os.remove(os.path.join(OUT, f))
    os.makedirs(OUT, exist_ok=True)
    gen_bytes_level()
    gen_nesting()
    gen_control_flow()
    gen_structure()
    gen_tensors()
    gen_external()
    gen_opsets_and_ops()
    gen_nn_ops()
    gen_index_ops()
    gen_einsum()
    gen_hostile_attributes()
    gen_conv_padding()
    gen_empty_outputs()
    gen_valid()
    gen_plans()
    with open(os.path.join(OUT, "MANIFEST.tsv"), "w") as f:
        f.write("# Generated by scripts/gen-bad-models.py; do not edit by hand.\n")
        f.write("# file\tcheck_exit\trun_exit\terror_substring\tneeds_op\trun_inputs\trun_outputs\tdescription\n")
        for e in entries:
            assert all("\t" not in str(c) and "\n" not in str(c) for c in e), e
            f.write("\t".join(str(c) for c in e) + "\n")
    print(f"wrote {len(entries)} entries to {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
