"""Per-call overhead of korch.InferenceSession.run over the C API.

    nice -n 19 build/venv/bin/python bench/python/overhead.py [--model build/models/mobilenetv2.onnx]

Makes (once) the model's optimal plan into build/bench-python (its own
profile database and kernel cache there), builds c_loop.c against
build/libkorch.so, then measures, in interleaved rounds:

  C       korch_session_run in a C loop (c_loop.c), per call
  Python  session.run(None, {name: x}) per call (same input pattern)
  split   inside session.run, the time spent in the korch_session_run call
          against the whole call: the Python side's own time, measured in
          the same calls (no run-to-run noise of the model in it)
  stubbed session.run with korch_session_run replaced by a no-op: the
          Python side's work for this model's bindings alone

each for both paths of session.run: "fast", the C extension korch._fast
(the korch_session_run call timed inside it, bench_mode 1; skipped,
bench_mode 2), and "ctypes", the fallback (korch_session_run wrapped in
Python, as before the extension). --paths picks them.

and the same for a one-node model (Relu on 1x1000 floats), where the run
itself takes a few microseconds and the overhead shows directly. Medians in
microseconds. Not a test: nothing is asserted (bench/python/RESULTS.md)."""
import argparse
import glob
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(ROOT, "build", "bench-python")
os.makedirs(WORK, exist_ok=True)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(WORK, "cache"))
if os.path.exists(os.path.join(ROOT, "build", "libkorch.so")):
    os.environ.setdefault("KORCH_LIBRARY", os.path.join(ROOT, "build", "libkorch.so"))
for _m in glob.glob(os.path.join(ROOT, "build", "python", "korch", "_fast*.so")):
    os.environ.setdefault("KORCH_FAST_MODULE", _m)  # make build's korch._fast
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import korch  # noqa: E402
import korch.session  # noqa: E402


def fill(shape):
    """The input pattern of c_loop.c."""
    n = int(np.prod(shape))
    k = np.arange(n, dtype=np.int64)
    return (((k * 7919) % 1000).astype(np.float32) / np.float32(1000.0) - np.float32(0.5)).reshape(shape)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def build_c_loop():
    exe = os.path.join(WORK, "c_loop")
    lib = os.path.dirname(os.environ["KORCH_LIBRARY"])
    subprocess.run(["cc", "-O2", "-I", os.path.join(ROOT, "include"), os.path.join(ROOT, "bench", "python", "c_loop.c"),
                    "-L", lib, "-lkorch", "-Wl,-rpath," + lib, "-o", exe], check=True)
    return exe


def c_times(exe, path, runs, threads):
    out = subprocess.run([exe, path, str(runs), str(threads)], check=True, capture_output=True, text=True).stdout
    return [float(v) for v in out.split()]


class TimedLib:
    """korch.session's library, with korch_session_run timed: the split of
    one session.run into the C call and the rest."""

    def __init__(self, lib, stub=False):
        self._lib = lib
        self.c_ns = 0
        run = lib.korch_session_run

        def timed_run(h):
            t0 = time.perf_counter_ns()
            st = run(h)
            self.c_ns = time.perf_counter_ns() - t0
            return st

        # stub: no run at all; what is left is session.run's own work for
        # this model's bindings (feed checks, output arrays, set_output)
        self.korch_session_run = (lambda h: 0) if stub else timed_run
        for name in ("korch_session_set_input", "korch_session_set_output"):
            setattr(self, name, getattr(lib, name))  # no __getattr__ detour in the timed path

    def __getattr__(self, name):
        return getattr(self._lib, name)


# the fast path's time outside the C call, in the order it is spent
# (korch._fast's split_ns; the last part is back in Python, up to the
# caller's next statement: here the timer's own call)
PARTS = ["call -> turn taken", "inputs, outputs, GIL release", "run end -> GIL taken back",
         "results list, return", "back in Python"]


GLOBAL_TIMER = False


def py_times(path, runs, threads, split=False, stub=False, fast=True, parts=None):
    """Per call of session.run, us: (whole calls, their korch_session_run
    calls). fast: the korch._fast path, else the ctypes one. parts: a list
    that gets, per call of the fast path, the PARTS' times."""
    korch.session._use_fast = fast
    try:
        s = korch.InferenceSession(path, threads=threads)
    finally:
        korch.session._use_fast = True
    if fast and s._runner is None:
        raise SystemExit("overhead: korch._fast is not built (%s)" % korch.fast_path_info)
    arg = s.get_inputs()[0]
    feeds = {arg.name: fill(arg.shape)}
    saved = korch.session._lib_
    timed = None
    if fast:
        s._runner.bench_mode = 2 if stub else 1 if split else 0
    elif split or stub:
        timed = TimedLib(saved, stub)
        korch.session._lib_ = timed
    # the timer as a local: after a model's run the lookups of
    # time.perf_counter_ns (two dictionaries) miss too, and they are the
    # harness's, not session.run's (--global-timer: as in runs 1-3)
    clock = time.perf_counter_ns
    try:
        total, inner = [], []
        for _ in range(runs):
            if GLOBAL_TIMER:
                t0 = time.perf_counter_ns()
                s.run(None, feeds)
                t1 = time.perf_counter_ns()
            else:
                t0 = clock()
                s.run(None, feeds)
                t1 = clock()
            total.append((t1 - t0) / 1e3)
            if split:
                inner.append((s._runner.last_run_ns if fast else timed.c_ns) / 1e3)
            if split and fast and parts is not None:  # perf_counter_ns is CLOCK_MONOTONIC, as split_ns
                turn, start, end, back, ret = s._runner.split_ns
                parts.append([(turn - t0) / 1e3, (start - turn) / 1e3, (back - end) / 1e3, (ret - back) / 1e3,
                              (t1 - ret) / 1e3])
    finally:
        korch.session._lib_ = saved
    s.close()
    return total, inner


def tiny_model():
    path = os.path.join(WORK, "relu_1000.onnx")
    if not os.path.exists(path):
        import onnx
        from onnx import TensorProto, helper
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "models", "mobilenetv2.onnx"))
    ap.add_argument("--runs", type=int, default=300, help="timed calls per round and side")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--skip-tiny", action="store_true", help="only the model's plan")
    ap.add_argument("--paths", default="fast,ctypes", help="session.run paths measured: fast (korch._fast), ctypes")
    ap.add_argument("--global-timer", action="store_true",
                    help="time with time.perf_counter_ns() looked up at each call (runs 1-3 did)")
    a = ap.parse_args()
    global GLOBAL_TIMER
    GLOBAL_TIMER = a.global_timer
    paths = [p for p in a.paths.split(",") if p]
    if not set(paths) <= {"fast", "ctypes"}:
        ap.error("--paths: fast and/or ctypes")
    name = os.path.splitext(os.path.basename(a.model))[0]
    plan = os.path.join(WORK, name + ".plan")
    if not os.path.exists(plan):
        print("making %s (korch.optimize, %d threads)" % (plan, a.threads), flush=True)
        korch.optimize(a.model, plan, threads=a.threads, progress=False)
    exe = build_c_loop()
    print("CPU: %s, %d cores; korch %s; Python %s; numpy %s; korch._fast: %s; load average %s" % (
        cpu_model(), os.cpu_count(), korch.__version__, platform.python_version(), np.__version__,
        korch.fast_path_info, " ".join("%.1f" % v for v in os.getloadavg())))
    cases = [(name + " plan", plan, a.threads)]
    if not a.skip_tiny:
        cases.append(("Relu 1x1000 (ONNX)", tiny_model(), 1))
    for label, path, threads in cases:
        rows = {"C korch_session_run": []}
        for p in paths:
            for what in ("session.run", "outside C", "C stubbed"):
                rows["%s %s" % (p, what)] = []
        parts = {k: [] for k in PARTS}
        for _ in range(a.rounds):  # interleaved: C, then each path, in every round
            rows["C korch_session_run"].append(statistics.median(c_times(exe, path, a.warmup + a.runs,
                                                                         threads)[a.warmup:]))
            for p in paths:
                calls = []
                total, inner = py_times(path, a.warmup + a.runs, threads, split=True, fast=p == "fast", parts=calls)
                total, inner = total[a.warmup:], inner[a.warmup:]
                for k, name in enumerate(PARTS if calls else []):
                    parts[name].append(statistics.median(c[k] for c in calls[a.warmup:]))
                rows[p + " session.run"].append(statistics.median(total))
                rows[p + " outside C"].append(statistics.median(t - i for t, i in zip(total, inner)))
            for p in paths:
                stub = py_times(path, a.warmup + a.runs, threads, stub=True, fast=p == "fast")[0][a.warmup:]
                rows[p + " C stubbed"].append(statistics.median(stub))
        print("\n%s, %d threads, %d rounds of %d calls (medians per round, us; then median [min-max] of rounds):"
              % (label, threads, a.rounds, a.runs))
        for key, vals in rows.items():
            print("  %-28s %s   | %.1f [%.1f-%.1f]" % (key, " ".join("%9.1f" % v for v in vals),
                                                     statistics.median(vals), min(vals), max(vals)))
        if parts[PARTS[0]]:
            print("  fast outside C, by part (medians per round):")
            for key, vals in parts.items():
                print("    %-30s %s   | %.2f [%.2f-%.2f]" % (key, " ".join("%7.2f" % v for v in vals),
                                                           statistics.median(vals), min(vals), max(vals)))


if __name__ == "__main__":
    main()
