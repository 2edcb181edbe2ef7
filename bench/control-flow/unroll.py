"""Loop unrolled at load vs kept whole (docs/control-flow.md, "Measured").

    build/venv/bin/python bench/control-flow/unroll.py [--korch build/korch] [--threads 2] [--runs 100]

Two models with the same Loop (8 iterations of h = tanh(h @ W + b + x),
h 8x256): in "unrolled" the trip count is a constant and there is no
condition input, so korch unrolls it at load; in "whole" the condition is a
graph input (given as true), so the Loop stays one opaque kernel whose body
runs in the reference executor. Each is optimised and timed with
`korch run PLAN --bench`, and with ONNX Runtime, three interleaved rounds.
"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def build(folder):
    rng = np.random.default_rng(0)
    h = 256
    w = numpy_helper.from_array((rng.normal(size=(h, h)) / np.sqrt(h)).astype(np.float32), "W")
    b = numpy_helper.from_array((rng.normal(size=(h,)) * 0.1).astype(np.float32), "b")
    m = numpy_helper.from_array(np.array(8, np.int64), "M")
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("MatMul", ["h_in", "W"], ["mm"]),
                              helper.make_node("Add", ["mm", "b"], ["a"]),
                              helper.make_node("Add", ["a", "x"], ["a2"]),
                              helper.make_node("Tanh", ["a2"], ["h_out"])], "body",
                             [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("h_in", [8, h])],
                             [vi("cond_out", [], TensorProto.BOOL), vi("h_out", [8, h])])
    feeds = {"x": rng.normal(size=(8, h)).astype(np.float32), "h0": np.zeros((8, h), np.float32)}
    for name, cond in (("unrolled", ""), ("whole", "c")):
        inputs = [vi("x", [8, h]), vi("h0", [8, h])] + ([vi("c", [], TensorProto.BOOL)] if cond else [])
        g = helper.make_graph([helper.make_node("Loop", ["M", cond, "h0"], ["h"], body=body)], "g", inputs,
                              [vi("h", [8, h])], [w, b, m])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.save(model, os.path.join(folder, name + ".onnx"))
    for k, v in dict(feeds, c=np.array(True)).items():
        np.save(os.path.join(folder, k + ".npy"), v)
    return feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="korch-unroll-")
    feeds = build(folder)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    results = {}
    for name in ("unrolled", "whole"):
        ins = ["--input", f"x={folder}/x.npy", "--input", f"h0={folder}/h0.npy"]
        if name == "whole":
            ins += ["--input", f"c={folder}/c.npy"]
        plan = os.path.join(folder, name + ".plan")
        subprocess.run([args.korch, "optimize", os.path.join(folder, name + ".onnx"), "-o", plan, "-q", "--threads",
                        str(args.threads), "--db", os.path.join(folder, "profile.db")] + ins, check=True)
        results[name] = (plan, ins)
    for rnd in range(3):
        for name, (plan, ins) in results.items():
            out = subprocess.run([args.korch, "run", plan, "--threads", str(args.threads), "--bench", str(args.runs)] + ins,
                                 capture_output=True, text=True, check=True).stdout
            line = out.strip().splitlines()[-1]
            sess = ort.InferenceSession(os.path.join(folder, name + ".onnx"), so)
            f = dict(feeds, c=np.array(True)) if name == "whole" else feeds
            for _ in range(10):
                sess.run(None, f)
            times = []
            for _ in range(args.runs):
                t = __import__("time").perf_counter()
                sess.run(None, f)
                times.append((__import__("time").perf_counter() - t) * 1e3)
            med = re.search(r"median_ms=([0-9.]+)", line).group(1)
            mn = re.search(r"min_ms=([0-9.]+)", line).group(1)
            print(f"round {rnd} {name:9s} korch median {med} ms min {mn} ms | ORT median {np.median(times):.3f} ms "
                  f"min {min(times):.3f} ms")


if __name__ == "__main__":
    main()
