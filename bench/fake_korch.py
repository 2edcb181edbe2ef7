"""A stand-in for build/korch that follows the CLI contract, for testing the
harness's korch plumbing before korch can run the models (bench/selftest.sh).

  fake-korch.sh optimize MODEL -o PLAN --strategy S --threads T [--db P] [--budget S]
      writes PLAN = a JSON file pointing at MODEL
  fake-korch.sh run MODEL|PLAN --input NAME=FILE ... --output-dir DIR --threads T [--bench N]
      runs the model in ONNX Runtime, writes DIR/<sanitized output>.npy; with
      --bench N prints 'median_ms=X min_ms=Y max_ms=Z runs=N' last.
FAKE_KORCH_FAIL=optimize|run makes that command fail (exit 1).
"""
import argparse
import json
import os
import re
import statistics
import sys
import time


def main(argv):
    if not argv or argv[0] not in ("optimize", "run"):
        print("korch: unknown command", file=sys.stderr)
        return 2
    cmd = argv[0]
    if os.environ.get("FAKE_KORCH_FAIL") == cmd:
        print(f"korch: error: injected failure in {cmd}", file=sys.stderr)
        return 1
    ap = argparse.ArgumentParser(prog="fake-korch " + cmd)
    ap.add_argument("target")
    ap.add_argument("-o")
    ap.add_argument("--strategy")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--db")
    ap.add_argument("--budget")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output-dir")
    ap.add_argument("--bench", type=int, default=0)
    a = ap.parse_args(argv[1:])
    if cmd == "optimize":
        with open(a.o, "w") as fh:
            json.dump({"model": os.path.abspath(a.target), "strategy": a.strategy}, fh)
        return 0
    import numpy as np
    import onnxruntime as ort
    model = a.target
    if not model.endswith(".onnx"):
        with open(model) as fh:
            model = json.load(fh)["model"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for spec in a.input:
        name, path = spec.split("=", 1)
        feeds[name] = np.load(path)
    outs = sess.run(None, feeds)
    if a.output_dir:
        os.makedirs(a.output_dir, exist_ok=True)
        for o, v in zip(sess.get_outputs(), outs):
            np.save(os.path.join(a.output_dir, re.sub(r"[^A-Za-z0-9._-]", "_", o.name) + ".npy"), v)
    if a.bench:
        ts = []
        for _ in range(a.bench):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            ts.append((time.perf_counter() - t0) * 1e3)
        print(f"median_ms={statistics.median(ts):.4f} min_ms={min(ts):.4f} "
              f"max_ms={max(ts):.4f} runs={a.bench}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
