"""Recurrent benchmark (issue 18): CRNN-style recognizers (4 convolutions,
a 2-layer bidirectional LSTM or GRU of hidden size 256 over 32 image
columns, a classifier) exported from PyTorch, optimized by korch, timed
against ONNX Runtime in the same run on the same input and thread count.

    python bench/recurrent/bench.py --korch build/korch --work build/bench-recurrent
        [--threads 2] [--runs 50] [--rounds 5] [--optimize-args "..."]
        [--plan-suffix S] [--baseline OTHER_KORCH]

For each model: korch optimize (once; plans are kept in WORK), then ROUNDS
alternating rounds of `korch run PLAN --bench RUNS` and ONNX Runtime
(intra_op_num_threads=THREADS, all graph optimisations, RUNS timed runs
after one warm-up); the table gives the median of the per-round medians and
the ratio. Outputs are checked against ONNX Runtime first (issue 18's
tolerance). Prints a Markdown table.

--baseline OTHER_KORCH also runs the same plan with another korch binary
(e.g. the build before a change) in every round, between korch and ONNX
Runtime, so that a change is measured against its own past in the same run.
--plan-suffix names the plan file (crnn_CELL_SIZE.SUFFIX.plan), so plans
made with different --optimize-args can sit side by side in WORK."""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = os.path.join(HERE, "..", "..", "tests", "recurrent", "make_crnn.py")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def ort_time(model, x, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feed = {s.get_inputs()[0].name: x}
    s.run(None, feed)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feed)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts), s.run(None, feed)[0]


def korch_time(korch, plan, inp, threads, runs):
    r = subprocess.run([korch, "run", plan, "--input", "image=" + inp, "--threads", str(threads), "--bench", str(runs)],
                       capture_output=True, text=True, check=True)
    m = re.search(r"median_ms=([0-9.]+) min_ms=([0-9.]+)", r.stdout.strip().splitlines()[-1])
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--korch", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cells", default="lstm,gru")
    ap.add_argument("--optimize-args", default="")
    ap.add_argument("--size", choices=["tiny", "bench"], default="bench")
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--plan-suffix", default="")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    mins = []  # fastest single run of korch, ORT, baseline over all rounds
    for cell in a.cells.split(","):
        name = os.path.join(a.work, "crnn_%s_%s" % (cell, a.size))
        if not os.path.exists(name + ".onnx"):
            subprocess.run(["/usr/bin/python3", MAKE, a.work, "--cell", cell, "--size", a.size], check=True)
        plan = name + (("." + a.plan_suffix) if a.plan_suffix else "") + ".plan"
        if not os.path.exists(plan):
            t0 = time.time()
            subprocess.run([a.korch, "optimize", name + ".onnx", "-o", plan, "--threads", str(a.threads)] +
                           a.optimize_args.split(), check=True)
            print("optimize %s: %.0f s" % (cell, time.time() - t0), file=sys.stderr)
        x = np.load(name + ".input.npy")
        out = name + ".plan.out"
        subprocess.run([a.korch, "run", plan, "--input", "image=" + name + ".input.npy", "--output-dir", out],
                       capture_output=True, check=True)
        # the first run of a plan compiles the kernels missing from the cache
        korch_time(a.korch, plan, name + ".input.npy", a.threads, 1)
        if a.baseline:
            korch_time(a.baseline, plan, name + ".input.npy", a.threads, 1)
        k_ms, o_ms, b_ms = [], [], []
        k_min, o_min, b_min = [], [], []
        want = None
        for _ in range(a.rounds):
            ms, lo = korch_time(a.korch, plan, name + ".input.npy", a.threads, a.runs)
            k_ms.append(ms)
            k_min.append(lo)
            if a.baseline:
                ms, lo = korch_time(a.baseline, plan, name + ".input.npy", a.threads, a.runs)
                b_ms.append(ms)
                b_min.append(lo)
            ms, lo, want = ort_time(name + ".onnx", x, a.threads, a.runs)
            o_ms.append(ms)
            o_min.append(lo)
        got = np.load(os.path.join(out, "logits.npy"))
        err = float(np.abs(got - want).max())
        tol = 1e-4 + 1e-3 * float(np.abs(want).max())
        k, o = statistics.median(k_ms), statistics.median(o_ms)
        rows.append(("crnn_%s_%s" % (cell, a.size), k, o, o / k, err, tol, k_ms, o_ms, b_ms))
        mins.append((min(k_min), min(o_min), min(b_min) if b_min else 0))
    print("CPU: %s; %d threads; %d rounds x %d runs" % (cpu_model(), a.threads, a.rounds, a.runs))
    print()
    base = " baseline ms | ORT / baseline |" if a.baseline else ""
    print("| model | korch plan ms | ONNX Runtime ms | ORT / korch |%s max error vs ORT (tolerance) |" % base)
    print("|---|---|---|---|%s---|" % ("---|---|" if a.baseline else ""))
    for cell, k, o, ratio, err, tol, k_ms, o_ms, b_ms in rows:
        b = statistics.median(b_ms) if b_ms else 0
        extra = " %.3f | %.2fx |" % (b, o / b) if b_ms else ""
        print("| %s | %.3f | %.3f | %.2fx |%s %.2g (%.2g) |" % (cell, k, o, ratio, extra, err, tol))
    print()
    for cell, k, o, ratio, err, tol, k_ms, o_ms, b_ms in rows:
        line = "%s rounds: korch %s; ORT %s" % (cell, " ".join("%.3f" % v for v in k_ms), " ".join("%.3f" % v for v in o_ms))
        if b_ms:
            line += "; baseline %s" % " ".join("%.3f" % v for v in b_ms)
        print(line)
    # the fastest run of each: what a quiet moment of a busy machine gives
    for row, (k, o, b) in zip(rows, mins):
        print("%s fastest run ms: korch %.3f; ORT %.3f (ORT/korch %.2fx)%s" %
              (row[0], k, o, o / k, "; baseline %.3f (ORT/baseline %.2fx)" % (b, o / b) if b else ""))
    # per round: the ratio of ORT's time to korch's in the same round
    for cell, k, o, ratio, err, tol, k_ms, o_ms, b_ms in rows:
        print("%s ORT/korch per round: %s" % (cell, " ".join("%.2f" % (y / x) for x, y in zip(k_ms, o_ms))))
    sys.exit(0 if all(r[4] <= r[5] for r in rows) else 1)


if __name__ == "__main__":
    main()
