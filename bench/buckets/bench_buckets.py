#!/usr/bin/env python3
"""Shape buckets measured (bench/buckets/RESULTS.md): one korch plan file
holding BERT-base at several sequence lengths, against ONNX Runtime on the
same dynamic-length model at each length, in the same process, interleaved.

  bench_buckets.py MODEL.onnx PLAN [--lengths 32,64,128,256] [--rounds 5]
                   [--runs 10] [--threads 2]
  bench_buckets.py MODEL.onnx PLAN --input x --shapes 1x3x320x640,1x3x640x640 ...

--lengths feeds BERT's input_ids (1, length) of random token ids; --input
NAME --shapes S1,S2,... feeds any one-input float32 model (a detector at
several image sizes) seeded normal data of each shape instead.

MODEL.onnx: the zoo's BERT-base with a symbolic sequence length
(`python -m models.bert --dynamic-seq -o MODEL.onnx`, from the repository
root with the venv's Python); PLAN: `korch optimize MODEL.onnx
--input-shape 'input_ids=1x{32,64,128,256}' -o PLAN` (RESULTS.md).

Per round and length: korch (korch.InferenceSession on the bucketed plan: the
bucket is picked by the feed's shape) and ORT (intra-op threads = --threads,
sequential), each in a process of its own (this script with --worker), one
after the other, each warmed up 3 times and then timed over --runs runs: the
process's median. Why separate processes: in one process the two engines'
idle threads (ORT's spinning thread pool, libgomp's spinning workers) take
the 2 vCPUs from each other; alternating single runs in one process measured
korch's bucket 32 at 105-129 ms where `korch run --bench` gives 60 ms
(2026-11-27). The machine is shared, so the result is the median over rounds
of the per-round ratio ORT/korch (> 1: korch faster), with the per-round
medians alongside. Also: plan load time (korch_model_load: map and checksum
the file; then the first session of each bucket: lower, build kernels from
the cache, allocate) and outputs compared with ORT (max |korch - ORT| relative to max |ORT|)."""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

import korch
from korch import _lib


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def make_feeds(a):
    rng = np.random.default_rng(20241126)
    if a.shapes:
        lengths = a.shapes.split(",")
        feeds = {s: {a.input: rng.standard_normal([int(d) for d in s.split("x")]).astype(np.float32)}
                 for s in lengths}
    else:
        lengths = [int(x) for x in a.lengths.split(",")]
        feeds = {n: {"input_ids": rng.integers(0, 30522, (1, n), dtype=np.int64)} for n in lengths}
    return lengths, feeds


def ort_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def worker(a):
    """One engine, one bucket, in this process: prints the median ms."""
    lengths, feeds = make_feeds(a)
    f = feeds[lengths[[str(x) for x in lengths].index(a.bucket)]]
    if a.worker == "korch":
        sess = korch.InferenceSession(a.plan, threads=a.threads)
    else:
        sess = ort_session(a.model, a.threads)
    for _ in range(3):  # warm-up: ORT's arena and korch's first-run work, both
        sess.run(None, f)
    print("%.4f" % median_ms(lambda: sess.run(None, f), a.runs))


def timed_in_process(a, engine, bucket):
    cmd = [sys.executable, os.path.abspath(__file__), a.model, a.plan, "--worker", engine, "--bucket", str(bucket),
           "--runs", str(a.runs), "--threads", str(a.threads)]
    cmd += ["--input", a.input, "--shapes", a.shapes] if a.shapes else ["--lengths", a.lengths]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("plan")
    ap.add_argument("--lengths", default="32,64,128,256")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--input", help="the float32 input's name, with --shapes")
    ap.add_argument("--shapes", help="comma-separated shapes AxBxC of --input, one per bucket")
    ap.add_argument("--worker", choices=["korch", "ort"], help=argparse.SUPPRESS)
    ap.add_argument("--bucket", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if bool(a.input) != bool(a.shapes):
        ap.error("--input and --shapes go together")
    if a.worker:
        worker(a)
        return
    lengths, feeds = make_feeds(a)

    # plan load: the C call alone (map, checksums, graph validated), 3 times
    loads = []
    for _ in range(3):
        m = ctypes.c_void_p()
        t0 = time.perf_counter()
        _lib.check_status(_lib.lib.korch_model_load(os.fsencode(a.plan), ctypes.byref(m)))
        loads.append((time.perf_counter() - t0) * 1e3)
        n_buckets = _lib.lib.korch_model_bucket_count(m)
        _lib.lib.korch_model_free(m)
    print("plan: %s, %d bytes, %d buckets; korch_model_load %.1f ms (median of 3: %s)"
          % (a.plan, os.path.getsize(a.plan), n_buckets, statistics.median(loads),
             ", ".join("%.1f" % x for x in loads)))

    t0 = time.perf_counter()
    sess = korch.InferenceSession(a.plan, threads=a.threads)
    print("InferenceSession(plan): %.1f ms (load, and the first bucket's session: kernels built from the cache)"
          % ((time.perf_counter() - t0) * 1e3))
    osess = ort_session(a.model, a.threads)
    for n in lengths:  # first run of each bucket: its session is made here
        t0 = time.perf_counter()
        k = sess.run(None, feeds[n])
        first = (time.perf_counter() - t0) * 1e3
        o = osess.run(None, feeds[n])
        errs = ["%.2e" % (np.abs(k[i] - o[i]).max() / max(np.abs(o[i]).max(), 1e-30)) for i in range(len(o))]
        print("bucket %s: first run %.1f ms (bucket session made, then run); max |korch - ORT| / max |ORT|: %s"
              % (n, first, " ".join(errs)))

    del sess, osess  # the timed processes run alone
    per = {n: {"korch": [], "ort": [], "ratio": []} for n in lengths}
    for r in range(a.rounds):
        for n in lengths:
            order = ["korch", "ort"] if r % 2 == 0 else ["ort", "korch"]
            t = {e: timed_in_process(a, e, n) for e in order}
            km, om = t["korch"], t["ort"]
            per[n]["korch"].append(km)
            per[n]["ort"].append(om)
            per[n]["ratio"].append(om / km)
            print("round %d bucket %s: korch %.2f ms, ORT %.2f ms, ORT/korch %.3f" % (r + 1, n, km, om, om / km))
            sys.stdout.flush()
    print("\n| bucket | korch ms (median of rounds) | ORT ms | ORT/korch (median of per-round ratios) | ratio range |")
    print("|---:|---:|---:|---:|---|")
    for n in lengths:
        p = per[n]
        print("| %s | %.2f | %.2f | %.3f | %.3f to %.3f |" % (n, statistics.median(p["korch"]), statistics.median(p["ort"]),
                                                         statistics.median(p["ratio"]), min(p["ratio"]),
                                                         max(p["ratio"])))


if __name__ == "__main__":
    main()
