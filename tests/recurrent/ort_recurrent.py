"""LSTM, GRU and RNN in korch against ONNX Runtime on random configurations:
every direction, sequence_lens, initial states, peepholes, clip,
linear_before_reset, input_forget, layout 0 and 1, every activation the spec
allows (with and without alpha/beta), omitted outputs. Seeded; each case is
one model run by `korch run` (the reference executor) and, with --plan, also
optimized and run as a plan. ONNX Runtime has no layout=1 kernel on the CPU,
so a layout-1 case is run there as the same operator in layout 0 between
transposes. Exit 77 without onnxruntime.
usage: python ort_recurrent.py KORCH WORKDIR [--cases N] [--seed S] [--plan]"""
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

ACTS = ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
        "Softsign", "Softplus"]
USES = {"Affine": (1, 1), "LeakyRelu": (1, 0), "ThresholdedRelu": (1, 0), "ScaledTanh": (1, 1),
        "HardSigmoid": (1, 1), "Elu": (1, 0)}


def make_case(rng, k):
    op = ["LSTM", "GRU", "RNN"][k % 3]
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    nacts = {"LSTM": 3, "GRU": 2, "RNN": 1}[op]
    T, B, I, H = (int(rng.integers(1, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
    direction = ["forward", "reverse", "bidirectional"][int(rng.integers(0, 3))]
    D = 2 if direction == "bidirectional" else 1
    layout = int(rng.integers(0, 2))
    attrs = {"hidden_size": H, "direction": direction}
    if layout:
        attrs["layout"] = 1
    if rng.random() < 0.3:
        attrs["clip"] = float(rng.uniform(0.5, 3))
    if op == "GRU" and rng.random() < 0.5:
        attrs["linear_before_reset"] = 1
    if op == "LSTM" and rng.random() < 0.2:
        attrs["input_forget"] = 1
    if rng.random() < 0.5:
        names, alphas, betas = [], [], []
        for _ in range(nacts * D):
            a = ACTS[int(rng.integers(0, len(ACTS)))]
            names.append(a)
            na, nb = USES.get(a, (0, 0))
            alphas += [float(rng.uniform(0.1, 1.5)) for _ in range(na)]
            betas += [float(rng.uniform(-0.5, 0.5)) for _ in range(nb)]
        attrs["activations"] = names
        # always explicit: ONNX Runtime's defaults for missing parameters
        # differ from the spec's (docs/conformance.md, "Recurrent operators")
        if alphas:
            attrs["activation_alpha"] = alphas
        if betas:
            attrs["activation_beta"] = betas
    xs = (T, B, I) if layout == 0 else (B, T, I)
    ss = (D, B, H) if layout == 0 else (B, D, H)
    vals = {"X": rng.standard_normal(xs).astype(np.float32),
            "W": (rng.standard_normal((D, G * H, I)) * 0.5).astype(np.float32),
            "R": (rng.standard_normal((D, G * H, H)) * 0.5).astype(np.float32)}
    ins = ["X", "W", "R"]
    opt = [("B", lambda: (rng.standard_normal((D, 2 * G * H)) * 0.5).astype(np.float32)),
           ("sequence_lens", lambda: rng.integers(0 if rng.random() < 0.2 else 1, T + 1, size=B).astype(np.int32)),
           ("initial_h", lambda: rng.standard_normal(ss).astype(np.float32))]
    if op == "LSTM":
        opt += [("initial_c", lambda: rng.standard_normal(ss).astype(np.float32)),
                ("P", lambda: (rng.standard_normal((D, 3 * H)) * 0.5).astype(np.float32))]
    for name, gen in opt:
        if rng.random() < 0.55:
            vals[name] = gen()
            ins.append(name)
        else:
            ins.append("")
    while ins and ins[-1] == "":
        ins.pop()
    outs_all = ["Y", "Y_h", "Y_c"][:{"LSTM": 3, "GRU": 2, "RNN": 2}[op]]
    outs = [o if rng.random() < 0.75 else "" for o in outs_all]
    if not any(outs):
        outs[0] = "Y"
    while outs[-1] == "":
        outs.pop()
    # weights as initializers half the time (as exporters write them), else inputs
    as_init = rng.random() < 0.5
    return op, attrs, ins, outs, vals, as_init, layout


def build(op, attrs, ins, outs, vals, as_init, layout, for_ort):
    nodes, inits, graph_ins = [], [], []
    node_ins = list(ins)
    node_attrs = dict(attrs)
    if for_ort and layout == 1:
        node_attrs.pop("layout")
        for name, perm in (("X", [1, 0, 2]), ("initial_h", [1, 0, 2]), ("initial_c", [1, 0, 2])):
            if name in node_ins:
                node_ins[node_ins.index(name)] = name + "_t"
                nodes.append(helper.make_node("Transpose", [name], [name + "_t"], perm=perm))
    node_outs = [o + "_t" if (for_ort and layout == 1 and o) else o for o in outs]
    nodes.append(helper.make_node(op, node_ins, node_outs, **node_attrs))
    if for_ort and layout == 1:
        for o in outs:
            if o:
                perm = [2, 0, 1, 3] if o == "Y" else [1, 0, 2]
                nodes.append(helper.make_node("Transpose", [o + "_t"], [o], perm=perm))
    for name in ins:
        if not name:
            continue
        v = vals[name]
        dt = TensorProto.INT32 if v.dtype == np.int32 else TensorProto.FLOAT
        if as_init and name in ("W", "R", "B", "P"):
            inits.append(numpy_helper.from_array(v, name))
        else:
            graph_ins.append(helper.make_tensor_value_info(name, dt, list(v.shape)))
    graph_outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs if o]
    g = helper.make_graph(nodes, "rnn", graph_ins, graph_outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("korch")
    ap.add_argument("work")
    ap.add_argument("--cases", type=int, default=90)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--plan", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    failed = 0
    worst = 0.0
    diverged = 0
    for k in range(a.cases):
        op, attrs, ins, outs, vals, as_init, layout = make_case(rng, k)
        d = os.path.join(a.work, "case%03d" % k)
        os.makedirs(d, exist_ok=True)
        m = build(op, attrs, ins, outs, vals, as_init, layout, False)
        onnx.save(m, os.path.join(d, "model.onnx"))
        feeds = {}
        args = []
        for name in ins:
            if name and not (as_init and name in ("W", "R", "B", "P")):
                np.save(os.path.join(d, name + ".npy"), vals[name])
                feeds[name] = vals[name]
                args += ["--input", "%s=%s" % (name, os.path.join(d, name + ".npy"))]
        mo = build(op, attrs, ins, outs, vals, as_init, layout, True)
        sess = ort.InferenceSession(mo.SerializeToString(), providers=["CPUExecutionProvider"])
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        runs = [("run", [a.korch, "run", os.path.join(d, "model.onnx")] + args + ["--output-dir", d + "/ref"])]
        if a.plan:
            plan = os.path.join(d, "model.plan")
            r = subprocess.run([a.korch, "optimize", os.path.join(d, "model.onnx"), "-o", plan, "--threads", "2"] + args,
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL case %d (%s %s): optimize: %s" % (k, op, attrs, r.stderr.strip()[-300:]))
                failed += 1
                continue
            runs.append(("plan", [a.korch, "run", plan] + args + ["--output-dir", d + "/plan"]))
        for label, cmd in runs:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL case %d (%s %s) %s: %s" % (k, op, attrs, label, r.stderr.strip()))
                failed += 1
                continue
            outdir = cmd[-1]
            for o in outs:
                if not o:
                    continue
                got = np.load(os.path.join(outdir, o + ".npy"))
                w = want[o]
                # unbounded activations (Affine, Relu, Softplus) can blow up
                # over the steps; korch accumulates in double, ONNX Runtime in
                # float, so where they overflow differs: not compared, counted
                if w.size and not (np.isfinite(w).all() and np.max(np.abs(w)) < 1e4):
                    diverged += 1
                    continue
                err = float(np.max(np.abs(got - w))) if w.size else 0.0
                tol = 1e-4 + 1e-3 * float(np.max(np.abs(w))) if w.size else 0.0
                worst = max(worst, err)
                if got.shape != w.shape or not err <= tol:
                    print("FAIL case %d (%s %s, inputs %s, outputs %s) %s %s: max error %g > %g" %
                          (k, op, attrs, ins, outs, label, o, err, tol))
                    failed += 1
    print("%d cases, %d failures, largest error %.3g; %d outputs diverged (|y| >= 1e4), not compared" %
          (a.cases, failed, worst, diverged))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
