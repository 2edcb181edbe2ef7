"""float16 and bfloat16 models through korch against ONNX Runtime (issue 19).

The models are made here, at test time (nothing binary is committed):
  conv16   a small conv net (Conv, BatchNorm, ReLU, pooling, Linear) from
           PyTorch with .half(): float16 input, weights and output
  mlp16    a small MLP with LayerNorm, GELU and Softmax from PyTorch, .half()
  mixed16  onnx.helper: float32 input, Casts to float16 and back around
           float16 MatMul/Add/Relu/ReduceMean, float16 initializers stored as
           int32_data (the form ONNX's helpers write without raw=True)
  bf16     onnx.helper: bfloat16 input and output, bfloat16 initializers in
           raw_data and in int32_data, Casts around float32 compute (ONNX
           Runtime has no bfloat16 MatMul on the CPU; Cast it has)
Each is checked, run by the reference executor, optimized (roofline
estimates), run as a plan and exported to C, built and run; every output is
compared with ONNX Runtime's on the same file. The tolerance is the 16-bit
format's: korch keeps float32 between operators where ONNX Runtime may round
to float16 after each (docs/precision.md), so they may differ by a few units
in the last place of the output format, never by more.
Exit 77 (skipped) without onnx/onnxruntime/torch.
usage: python half_ort.py KORCH WORKDIR [--no-export]"""
import argparse
import os
import subprocess
import sys

import numpy as np

try:
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("skipped: onnx/onnxruntime not importable")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None


def bf16_bits(a):
    """float32 array -> bfloat16 bits (uint16), rounded to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def export_torch(model, example, path, names):
    torch.onnx.export(model, (example,), path, input_names=[names[0]], output_names=[names[1]], opset_version=13,
                      do_constant_folding=True)


def make_conv16(work, rng):
    torch.manual_seed(1)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 5)).eval()
    with torch.no_grad():  # a BatchNorm that does something
        m[1].running_mean.uniform_(-0.5, 0.5)
        m[1].running_var.uniform_(0.5, 1.5)
    x = rng.standard_normal((2, 3, 12, 12)).astype(np.float16)
    path = os.path.join(work, "conv16.onnx")
    # exported in float32, then converted below: torch on the CPU lacks some
    # float16 kernels that tracing would run
    export_torch(m, torch.from_numpy(x.astype(np.float32)), path, ("x", "y"))
    to_float16(path)
    return path, {"x": x}


def make_mlp16(work, rng):
    torch.manual_seed(2)

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 32)
            self.n = torch.nn.LayerNorm(32)
            self.b = torch.nn.Linear(32, 10)

        def forward(self, x):
            h = torch.nn.functional.gelu(self.a(x))
            return torch.softmax(self.b(self.n(h)), dim=-1)

    m = MLP().eval()
    x = rng.standard_normal((4, 16)).astype(np.float16)
    path = os.path.join(work, "mlp16.onnx")
    export_torch(m, torch.from_numpy(x.astype(np.float32)), path, ("x", "y"))
    to_float16(path)
    return path, {"x": x}


def to_float16(path):
    """A float32 model made float16 throughout, as converters do: initializers,
    Constant values, graph inputs/outputs and value_info; Casts to float
    become Casts to float16."""
    m = onnx.load(path)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            n = numpy_helper.from_array(a, t.name)
            g.initializer[i].CopyFrom(n)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.checker.check_model(m)
    onnx.save(m, path)


def make_mixed16(work, rng):
    w1 = rng.standard_normal((8, 12)).astype(np.float16)
    b1 = rng.standard_normal((12,)).astype(np.float16)
    # helper.make_tensor without raw=True stores float16 as int32_data (it
    # takes the float values and writes their bits)
    w1_t = helper.make_tensor("w1", TensorProto.FLOAT16, w1.shape, w1.astype(np.float32).ravel())
    b1_t = helper.make_tensor("b1", TensorProto.FLOAT16, b1.shape, b1.astype(np.float32).ravel())
    assert len(w1_t.int32_data) == w1.size and np.array_equal(numpy_helper.to_array(w1_t), w1)
    nodes = [
        helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16),
        helper.make_node("MatMul", ["xh", "w1"], ["m"]),
        helper.make_node("Add", ["m", "b1"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["mean"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["r", "mean"], ["c"]),
        helper.make_node("Cast", ["c"], ["y"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Sigmoid", ["mf"], ["s"]),
        helper.make_node("Cast", ["s"], ["z"], to=TensorProto.FLOAT16),
    ]
    g = helper.make_graph(nodes, "mixed16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 12]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT16, [3, 12])], [w1_t, b1_t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    path = os.path.join(work, "mixed16.onnx")
    onnx.save(m, path)
    return path, {"x": (rng.standard_normal((3, 8)) * 2).astype(np.float32)}


def make_bf16(work, rng):
    w = bf16_bits(rng.standard_normal((6, 4)).astype(np.float32))
    b = bf16_bits(rng.standard_normal((4,)).astype(np.float32))
    w_t = helper.make_tensor("w", TensorProto.BFLOAT16, w.shape, w.tobytes(), raw=True)
    b_t = helper.make_tensor("b", TensorProto.BFLOAT16, b.shape, [0] * b.size)
    b_t.int32_data[:] = b.astype(np.int32).ravel().tolist()  # the bits, as ONNX stores bfloat16 in int32_data
    nodes = [
        helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["xf", "wf"], ["m"]),
        helper.make_node("Add", ["m", "bf"], ["a"]),
        helper.make_node("Cast", ["a"], ["ab"], to=TensorProto.BFLOAT16),  # rounds in the middle
        helper.make_node("Cast", ["ab"], ["af"], to=TensorProto.FLOAT),
        helper.make_node("Tanh", ["af"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=TensorProto.BFLOAT16),
    ]
    g = helper.make_graph(nodes, "bf16", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [5, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [5, 4])], [w_t, b_t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    path = os.path.join(work, "bf16.onnx")
    onnx.save(m, path)
    # korch reads a bfloat16 input from a float32 .npy (docs/precision.md):
    # values that are bfloat16 already, so both runtimes see the same input
    x = bf16_to_f32(bf16_bits(rng.standard_normal((5, 6)).astype(np.float32)))
    return path, {"x": x}


def ort_run(path, feeds):
    model = onnx.load(path)
    # ORT's Python API cannot hand out a bfloat16 output: such outputs are
    # widened by an appended Cast (exact) in the copy ORT runs
    for o in model.graph.output:
        if o.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            inner = o.name + "__bf16"
            for n in model.graph.node:
                n.output[:] = [inner if x == o.name else x for x in n.output]
                n.input[:] = [inner if x == o.name else x for x in n.input]
            model.graph.node.append(helper.make_node("Cast", [inner], [o.name], to=TensorProto.FLOAT))
            o.type.tensor_type.elem_type = TensorProto.FLOAT
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ins, wrapped = {}, False
    for i in sess.get_inputs():
        a = feeds[i.name]
        if i.type == "tensor(bfloat16)":  # ORT's Python API takes bfloat16 as its bits
            a = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bf16_bits(a), TensorProto.BFLOAT16)
            wrapped = True
        ins[i.name] = a
    if wrapped:
        ins = {k: (v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v)) for k, v in ins.items()}
        outs = [v.numpy() for v in sess.run_with_ort_values(None, ins)]
    else:
        outs = sess.run(None, ins)
    return {meta.name: v for meta, v in zip(sess.get_outputs(), outs)}


def ulp_of(dtype_name):
    return {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}.get(dtype_name, 2.0 ** -23)


def compare(label, got, want, fmt, failures):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{label}: shape {got.shape}, ONNX Runtime {want.shape}")
        return
    # a few units in the last place of the format, relative to the output's scale
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    tol = 4 * ulp_of(fmt) * (np.abs(want) + 0.05 * scale)
    err = np.abs(got - want)
    bad = err > tol
    worst = float(np.max(err / np.maximum(tol, 1e-30))) if want.size else 0.0
    # the error in units of the last place of the format at each reference value
    mant, emin = (10, -14) if fmt == "float16" else (7, -126)
    e = np.floor(np.log2(np.maximum(np.abs(want), 2.0 ** emin)))
    ulps = float(np.max(err / 2.0 ** (e - mant))) if want.size else 0.0
    print(f"  {label}: max |diff| {float(np.max(err)) if want.size else 0:.3g}, {ulps:.2f} units of {fmt} "
          f"({worst:.2f} of the tolerance)")
    if np.any(bad):
        failures.append(f"{label}: {int(np.sum(bad))} of {want.size} elements beyond the tolerance")


def run(cmd, failures, label):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{label}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-600:]}")
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("korch")
    ap.add_argument("work")
    ap.add_argument("--no-export", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(19)
    makers = [make_mixed16, make_bf16]
    if torch is not None:
        makers = [make_conv16, make_mlp16] + makers
    else:
        print("note: no torch: the PyTorch-made models are left out")
    failures = []
    for make in makers:
        path, feeds = make(args.work, rng)
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"{name}:")
        model = onnx.load(path)
        # the model's compute format sets the tolerance of every output: a
        # float32 output of float16 arithmetic carries float16 rounding
        fmt = "bfloat16" if name.startswith("bf16") else "float16"
        fmt_of = {o.name: fmt for o in model.graph.output}
        declared = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
        inputs = []
        for k, v in feeds.items():
            p = os.path.join(args.work, f"{name}.{k}.npy")
            np.save(p, v)
            inputs += ["--input", f"{k}={p}"]
        want = ort_run(path, feeds)
        k = args.korch
        base = os.path.join(args.work, name)
        if not run([k, "check", path], failures, f"{name}: check"):
            continue
        outs = {}
        if run([k, "run", path] + inputs + ["--output-dir", base + ".ref"], failures, f"{name}: run"):
            outs["reference"] = base + ".ref"
        plan = base + ".plan"
        if run([k, "optimize", path, "-o", plan, "--threads", "2", "--estimate"], failures, f"{name}: optimize"):
            if run([k, "run", plan] + inputs + ["--output-dir", base + ".plan.out"], failures, f"{name}: run plan"):
                outs["plan"] = base + ".plan.out"
            if not args.no_export and run([k, "export", plan, "-o", base + ".c", "-q"], failures, f"{name}: export"):
                if run(["make", "-s", "-C", base + ".c", "CFLAGS_EXTRA=-Werror"], failures, f"{name}: build export"):
                    exe = os.path.join(base + ".c", "model_run")
                    ex_inputs = list(inputs)
                    if run([exe] + ex_inputs + ["--output-dir", base + ".c.out"], failures, f"{name}: model_run"):
                        outs["export"] = base + ".c.out"
        for where, d in outs.items():
            for oname, w in want.items():
                f = os.path.join(d, oname + ".npy")
                if not os.path.exists(f):
                    failures.append(f"{name} {where}: no output {oname}")
                    continue
                got = np.load(f)
                if declared[oname] == TensorProto.FLOAT16 and got.dtype != np.float16:
                    failures.append(f"{name} {where}: output {oname} is {got.dtype}, the model declares float16")
                compare(f"{name} {where} {oname}", got, w, fmt_of[oname], failures)
    for f in failures:
        print("FAIL", f)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
