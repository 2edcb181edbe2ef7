"""A run-time If: korch's plans against ONNX Runtime (docs/control-flow.md).

    build/venv/bin/python bench/control-flow/if_conversion.py --korch K [--korch K2 ...] [--threads 2]
        [--rounds 3] [--runs 1000] [--specialize sr=16000]

silero_vad_ifless (bench/realzoo: fetch it first with bench/realzoo/fetch.py)
holds one If on its sample-rate input `sr`. Each korch binary given
optimises it at input 1x512, state 2x1x128 (with --specialize, a guarded
plan for that value), and the plans are timed with `korch run PLAN --bench
RUNS` and ONNX Runtime in process (intra-op THREADS), interleaved, for
ROUNDS rounds, with sr=16000. Give an older binary and a newer one to see
what a change did (e.g. the If opaque before if-conversion, converted
after). Prints one line per round and contender, ms and the ratio to ONNX
Runtime of the same round.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ort_ms(session, feeds, runs):
    for _ in range(min(runs, 50)):
        session.run(None, feeds)
    samples = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(runs // 5 or 1):
            session.run(None, feeds)
        samples.append((time.perf_counter() - t) / (runs // 5 or 1) * 1e3)
    return sorted(samples)[len(samples) // 2]


def korch_ms(korch, plan, inputs, threads, runs):
    args = [korch, "run", plan, "--bench", str(runs), "--threads", str(threads)]
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    r = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"median_ms=([0-9.]+)", r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"if_conversion: {korch} run {plan} failed: {(r.stdout + r.stderr)[-400:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--korch", action="append", required=True, help="a korch CLI (repeatable)")
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "realzoo", "silero_vad_ifless.onnx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--specialize", default="", help="e.g. sr=16000: guarded plans for that value")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        sys.exit(f"if_conversion: {args.model} is missing; run bench/realzoo/fetch.py --models silero_vad_ifless")
    work = tempfile.mkdtemp(prefix="korch-ifconv-")
    rng = np.random.default_rng(1)
    feeds = {"input": (rng.standard_normal((1, 512)) * 0.3).astype(np.float32),
             "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    inputs = {}
    for name, value in feeds.items():
        inputs[name] = os.path.join(work, name + ".npy")
        np.save(inputs[name], value)
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    session = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    plans = []
    for i, korch in enumerate(args.korch):
        plan = os.path.join(work, f"plan{i}.plan")
        flags = ["--specialize", args.specialize] if args.specialize else []
        subprocess.run([korch, "optimize", args.model, "-o", plan, "--db", plan + ".db", "--threads",
                        str(args.threads), "-q", "--input-shape", "input=1x512", "--input-shape", "state=2x1x128"]
                       + flags, check=True)
        out = os.path.join(work, f"out{i}")
        subprocess.run([korch, "run", plan, "--output-dir", out, "--threads", str(args.threads)]
                       + [a for n, p in inputs.items() for a in ("--input", f"{n}={p}")], check=True,
                       capture_output=True)
        err = max(float(np.abs(np.load(os.path.join(out, o.name + ".npy")) - w).max())
                  for o, w in zip(session.get_outputs(), want))
        print(f"{korch}: plan {plan}, max abs error against ONNX Runtime {err:.2e}")
        plans.append((korch, plan))
    for r in range(args.rounds):
        o = ort_ms(session, feeds, args.runs)
        line = [f"round {r + 1}: ONNX Runtime {o:.4f} ms"]
        for korch, plan in plans:
            k = korch_ms(korch, plan, inputs, args.threads, args.runs)
            line.append(f"{korch} {k:.4f} ms ({k / o:.2f}x)")
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()
