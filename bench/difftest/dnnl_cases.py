#!/usr/bin/env python3
"""Minimal reproducers of the oneDNN-kernel failures korch-difftest found
(bench/difftest/RESULTS.md). Writes one tiny ONNX model per case and runs
korch-difftest --model on it (every strategy, every forced candidate).

    python3 bench/difftest/dnnl_cases.py [--build build] [--out DIR]

Needs the onnx and numpy modules (Debian's python3-onnx, or
scripts/python-env.sh). Prints one line per case: pass / FAIL and the
failing kernel."""
import argparse, os, subprocess, sys
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

CASES = {}


def model(name, nodes, inits, ins, expect):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in ins],
                     [h.make_tensor_value_info("z", T.FLOAT, None)],
                     [nh.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    CASES[name] = (m, expect)


r = np.random.default_rng(0)
W = r.uniform(-.5, .5, (6, 7))
X = [("x", [5, 6])]
S = lambda v: np.float32(v)


def mm(name, tail, inits, expect):
    model(name, [h.make_node("MatMul", ["x", "w"], ["y"])] + tail, dict(w=W, **inits), X, expect)


# 1. an eltwise algorithm with parameters twice in one kernel (linear, clip): the second
#    instance computes with the first's parameters (oneDNN 2.6.3; mm_mul_relu_mul gives
#    y * 0.3 * 0.3 instead of y * 0.3 * 1.5)
mm("mm_mul_mul", [h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Mul", ["y1", "b"], ["z"])],
   {"a": S(0.3), "b": S(1.5)}, "fail: linear+linear")
mm("mm_add_mul", [h.make_node("Add", ["y", "a"], ["y1"]), h.make_node("Mul", ["y1", "b"], ["z"])],
   {"a": S(0.3), "b": S(1.5)}, "fail: linear+linear")
mm("mm_mul_relu_mul", [h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Relu", ["y1"], ["y2"]),
                       h.make_node("Mul", ["y2", "b"], ["z"])], {"a": S(0.3), "b": S(1.5)},
   "fail: linear+linear, not adjacent")
mm("mm_mul_tanh_add", [h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Tanh", ["y1"], ["y2"]),
                       h.make_node("Add", ["y2", "b"], ["z"])], {"a": S(0.3), "b": S(1.5)},
   "fail: linear+linear, not adjacent")
mm("mm_hardsigmoid_mul", [h.make_node("HardSigmoid", ["y"], ["y2"]), h.make_node("Mul", ["y2", "b"], ["z"])],
   {"b": S(1.5)}, "fail: HardSigmoid's affine + linear")
mm("mm_mul_sub", [h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Sub", ["b", "y1"], ["z"])],
   {"a": S(0.3), "b": S(1.5)}, "fail: linear + (c - x)")
model("gemm_alpha_c_selu", [h.make_node("Gemm", ["x", "w", "c"], ["y"], alpha=1.5), h.make_node("Selu", ["y"], ["z"])],
      {"w": W, "c": r.uniform(-.5, .5, (5, 7))}, X, "fail: alpha + Selu's scale")
model("conv_mul_add", [h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1]),
                       h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Add", ["y1", "b"], ["z"])],
      {"w": r.uniform(-.5, .5, (4, 3, 1, 1)), "a": S(1.5), "b": S(0.3)}, [("x", [1, 3, 5, 5])],
      "fail: the known Conv -> Mul -> Add")
mm("mm_sigmoid_sigmoid", [h.make_node("Sigmoid", ["y"], ["y1"]), h.make_node("Sigmoid", ["y1"], ["z"])], {},
   "pass: repeated, but without parameters")
mm("mm_clip_clip", [h.make_node("Clip", ["y", "lo", "hi"], ["y1"]), h.make_node("Clip", ["y1", "lo2", "hi2"], ["z"])],
   {"lo": S(-0.5), "hi": S(0.4), "lo2": S(-0.2), "hi2": S(0.3)}, "fail: a repeated eltwise algorithm (clip)")
mm("mm_tanh_relu_tanh", [h.make_node("Tanh", ["y"], ["y1"]), h.make_node("Relu", ["y1"], ["y2"]),
                         h.make_node("Tanh", ["y2"], ["z"])], {}, "pass: repeated, but without parameters")
# Clip with only a minimum (max = +inf) twice (campaign seed 5244)
mm("mm_clipmin_clipmin", [h.make_node("Clip", ["y", "lo"], ["y1"]), h.make_node("Clip", ["y1", "lo2"], ["z"])],
   {"lo": S(-1.0), "lo2": S(0.5)}, "fail: clip twice, one-sided")
mm("mm_clipmin_clipmin_recip", [h.make_node("Clip", ["y", "lo"], ["y1"]), h.make_node("Clip", ["y1", "lo2"], ["y2"]),
                                h.make_node("Reciprocal", ["y2"], ["z"])],
   {"lo": S(-1.0), "lo2": S(0.5)}, "fail: clip twice, one-sided, then 1/x")
# controls: one linear post-op
mm("mm_mul", [h.make_node("Mul", ["y", "a"], ["z"])], {"a": S(1.5)}, "pass")
mm("mm_mul_relu", [h.make_node("Mul", ["y", "a"], ["y1"]), h.make_node("Relu", ["y1"], ["z"])], {"a": S(1.5)}, "pass")
model("gemm_alpha_c", [h.make_node("Gemm", ["x", "w", "c"], ["z"], alpha=1.5)],
      {"w": W, "c": r.uniform(-.5, .5, (5, 7))}, X, "pass")

# 2. channels-last Conv + a binary post-op whose operand broadcasts over part of (C, H, W)
for name, shape, expect in [("chan_C11", (4, 1, 1), "pass"), ("CHW", (4, 5, 6), "pass"),
                            ("row_H1", (5, 1), "fail"), ("col_W", (6,), "fail"), ("HW", (5, 6), "fail"),
                            ("C1W", (4, 1, 6), "fail"), ("CH1", (4, 5, 1), "fail"), ("1H1", (1, 5, 1), "fail")]:
    model("conv_add_" + name, [h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1]),
                               h.make_node("Add", ["y", "c"], ["z"])],
          {"w": r.uniform(-.5, .5, (4, 3, 1, 1)), "c": r.uniform(-.5, .5, shape)}, [("x", [1, 3, 5, 6])],
          expect + ("" if expect == "pass" else ": partial broadcast in NHWC"))
# 3. gemm:jit channels-last Conv whose kernel is wider than the image + a full-tensor operand
#    (campaign seed 25932: 5x5 pads [3,4,4,1] over the 1x1 output of a GlobalAveragePool)
model("conv_wide_kernel_add_full", [h.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 5], pads=[0, 2, 0, 2]),
                                    h.make_node("Add", ["y", "c"], ["z"])],
      {"w": r.uniform(-.5, .5, (15, 14, 1, 5)), "c": r.uniform(-.5, .5, (2, 15, 1, 1))}, [("x", [2, 14, 1, 1])],
      "fail: kernel wider than the image, full operand")
model("conv_min_row", [h.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[1, 1]),
                       h.make_node("Min", ["y", "c"], ["z"])],
      {"w": r.uniform(-.5, .5, (4, 3, 1, 1)), "b": r.uniform(-.5, .5, 4), "c": r.uniform(-.5, .5, (5, 1))},
      [("x", [1, 3, 5, 5])], "fail: partial broadcast in NHWC")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="/tmp/korch-dnnl-cases")
    a = ap.parse_args()
    binary = os.path.join(a.build, "tests/difftest/korch-difftest")
    os.makedirs(a.out, exist_ok=True)
    bad = 0
    for name, (m, expect) in CASES.items():
        path = os.path.join(a.out, name + ".onnx")
        onnx.save(m, path)
        p = subprocess.run([binary, "--model", path, "--seed", "1", "--max-forced", "0", "--keep",
                            os.path.join(a.out, "failures")], capture_output=True, text=True)
        fails = [l for l in p.stdout.splitlines() if l.startswith("FAIL") or l.startswith("CULPRIT")]
        culprit = next((l.split(": ", 1)[1] for l in fails if l.startswith("CULPRIT")), "")
        got = "FAIL" if p.returncode else "pass"
        print(f"{name:22s} {got:5s} expected {expect:40s} {culprit}")
        bad += p.returncode != 0
    print(f"{bad} of {len(CASES)} cases fail")


if __name__ == "__main__":
    sys.exit(main())
