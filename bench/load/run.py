"""Behaviour under load (issue 16): korch and ONNX Runtime side by side while
standard competing loads run, each one's slowdown against its own idle time.

Run with build/venv/bin/python from the repository root:

    python -m bench.load.run [--models mobilenetv2,resnet50] [--threads 2]
                             [--rounds 7] [--k 20] [--loads none,cpu1,cpu2,stream1]
                             [--no-record] [--korch-env VAR=VALUE ...]
                             [--variant NAME:VAR=VALUE[,VAR=VALUE]] ...

Loads (bench/load/load.c, built into build/bench/load/):
  none     nothing else running (the baseline)
  cpu1     one CPU-bound process (a register-only loop)
  cpu2     two CPU-bound processes
  stream1  one memory-bandwidth-bound process (STREAM triad, 3 x 64 MiB)

Method: korch optimises each model once (strategy optimal, a private profile
database in build/bench/load/, on the idle machine), then for every load: the
load starts, 1 s passes, and R rounds follow; in each round korch runs one
`korch run PLAN --bench K` process (its median) and ORT K in-process runs (their
median), in an order alternated every round, with 0.2 s of pause before
each (ORT's pool threads spin for ~40 ms after a run). A contender's figure under a load
is the median of its round medians; its slowdown is that figure over its
figure with no load. Both contenders see the same load at the same minutes,
so the comparison is the ratio of slowdowns, not absolute times. A --variant
adds a korch contender run with extra environment variables (the same plan),
timed in the same rounds: e.g. `--variant passive:OMP_WAIT_POLICY=passive`.
Results are appended to bench/load/RESULTS.md (with the CPU model and the
exact command) unless --no-record.
"""
import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

from bench.harness import BENCH_LINE, apply_nice, cpu_model, git_commit, sanitize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOADS = {"none": [], "cpu1": ["cpu"], "cpu2": ["cpu", "cpu"], "stream1": ["stream"]}


def log(*a):
    print("load:", *a, file=sys.stderr, flush=True)


def build_load(work):
    exe = os.path.join(work, "load")
    src = os.path.join(ROOT, "bench", "load", "load.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
    return exe


class Load:
    """The competing processes of one load, started and stopped together."""

    def __init__(self, exe, kinds):
        self.exe, self.kinds, self.procs = exe, kinds, []

    def __enter__(self):
        self.procs = [subprocess.Popen([self.exe, k]) for k in self.kinds]
        if self.procs:
            time.sleep(1.0)  # the stream load's arrays are allocated and touched
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"load process '{self.exe}' exited with {p.returncode}")
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


class Korch:
    def __init__(self, args, name, meta, work, label="korch", extra_env=()):
        self.args, self.meta, self.work, self.label = args, meta, work, label
        self.models_dir = args.models_dir
        self.plan = os.path.join(work, name + ".plan")
        self.out = os.path.join(work, name + ".out")
        self.env = dict(os.environ)
        for kv in list(args.korch_env) + list(extra_env):
            k, _, v = kv.partition("=")
            self.env[k] = v

    def _run(self, argv, timeout=3600):
        p = subprocess.run([self.args.korch] + argv, capture_output=True, text=True,
                           timeout=timeout, env=self.env)
        if p.returncode != 0:
            raise RuntimeError(f"korch {argv[0]} failed ({p.returncode}): {p.stderr.strip()[-300:]}")
        return p

    def optimize(self, model):
        db = os.path.join(self.work, "profile.db")
        t0 = time.perf_counter()
        self._run(["optimize", model, "-o", self.plan, "--strategy", "optimal",
                   "--threads", str(self.args.threads), "--db", db,
                   "--cache-dir", db + ".kernels"])
        return time.perf_counter() - t0

    def run_args(self):
        a = ["run", self.plan]
        for i in self.meta["inputs"]:
            a += ["--input", f"{i['name']}={os.path.join(self.models_dir, i['file'])}"]
        return a + ["--threads", str(self.args.threads)]

    def outputs(self):
        os.makedirs(self.out, exist_ok=True)
        self._run(self.run_args() + ["--output-dir", self.out])
        return [np.load(os.path.join(self.out, sanitize(o["name"]) + ".npy"))
                for o in self.meta["outputs"]]

    def once(self):
        p = self._run(self.run_args() + ["--bench", str(self.args.k)])
        m = BENCH_LINE.search(p.stdout.strip().splitlines()[-1])
        if not m:
            raise RuntimeError("no median_ms= line from korch run --bench")
        return float(m.group(1))


class Ort:
    label = "ORT"

    def __init__(self, args, path, feeds):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.feeds, self.k = feeds, args.k

    def outputs(self):
        return self.sess.run(None, self.feeds)

    def once(self):
        ts = []
        for _ in range(self.k):
            t0 = time.perf_counter()
            self.sess.run(None, self.feeds)
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)


# A pause before each contender's turn: ORT's pool threads spin about 40 ms
# after its last run (measured on this VM), and korch's CLI, which looks at
# the runnable tasks when it starts (src/cli/omp_policy.c), would otherwise
# count the previous contender as a competing load.
SETTLE_S = 0.2


def bench_model(name, args, exe, work):
    with open(os.path.join(args.models_dir, name + ".json")) as fh:
        meta = json.load(fh)
    path = os.path.join(args.models_dir, name + ".onnx")
    feeds = {i["name"]: np.load(os.path.join(args.models_dir, i["file"])) for i in meta["inputs"]}
    korch = Korch(args, name, meta, work)
    log(f"{name}: optimising (idle machine)")
    opt_s = korch.optimize(path)
    ort = Ort(args, path, feeds)
    for a, b in zip(korch.outputs(), ort.outputs()):
        err = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
        if err > 1e-3 * max(1.0, float(np.max(np.abs(b)))):
            raise RuntimeError(f"{name}: korch and ORT disagree (max abs {err:.3g})")
    cons = [korch] + [Korch(args, name, meta, work, label, env) for label, env in args.variants] + [ort]
    res = {"model": name, "optimize_s": opt_s, "loads": {}}
    for load in args.loads:
        rounds = {c.label: [] for c in cons}
        with Load(exe, LOADS[load]):
            for r in range(args.rounds):
                for i in range(len(cons)):  # the order rotates every round
                    c = cons[(i + r) % len(cons)]
                    time.sleep(SETTLE_S)
                    rounds[c.label].append(c.once())
        res["loads"][load] = {c: {"median": statistics.median(v), "rounds": v} for c, v in rounds.items()}
        log(f"{name} {load}: " + ", ".join(f"{c} {statistics.median(v):.3f} ms" for c, v in rounds.items()))
    return res


def markdown(results, args, cmd):
    lines = ["", f"## {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {cpu_model()}, "
                 f"{args.threads} threads", "",
             f"Command: `{cmd}` (korch {git_commit()}); {args.rounds} rounds of K={args.k} runs"
             f"{'; korch env ' + ' '.join(args.korch_env) if args.korch_env else ''}", "",
             "| model | load | contender | ms | slowdown | slowdown / ORT's |",
             "|---|---|---|---:|---:|---:|"]
    for r in results:
        base = r["loads"]["none"]
        for load, v in r["loads"].items():
            ort = v["ORT"]["median"] / base["ORT"]["median"]
            for c, m in v.items():
                sd = m["median"] / base[c]["median"]
                lines.append(f"| {r['model']} | {load} | {c} | {m['median']:.3f} | {sd:.2f}x | {sd / ort:.2f} |")
    return "\n".join(lines) + "\n"


def add_common_args(ap):
    """The options bench.load.run and bench.load.poisoned share."""
    ap.add_argument("--models", default="mobilenetv2,resnet50")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nice", type=lambda v: None if v == "none" else int(v),
                    default=-20 if os.geteuid() == 0 else None,
                    help="niceness of the bench and all it starts, its loads included (default -20 as root, "
                         "as bench/harness.py: its own loads then compete with korch and ORT as "
                         "equals, and other tenants' work is kept out)")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "load", "RESULTS.md"))


def prepare(args, argv, module, work_name):
    """The recorded command, the work folder, the load program; nice applied
    and the models built."""
    cmd = f"python -m bench.load.{module} " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    nice = apply_nice(args.nice)
    cmd += f" (nice {nice})" if nice else ""
    work = os.path.join(ROOT, "build", "bench", work_name)
    os.makedirs(work, exist_ok=True)
    exe = build_load(work)
    subprocess.run([os.path.join(ROOT, "scripts", "build-models.sh")] + args.models.split(","),
                   check=True, stdout=subprocess.DEVNULL)
    return cmd, work, exe


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--k", type=int, default=20, help="runs per round and contender")
    ap.add_argument("--loads", default="none,cpu1,cpu2,stream1")
    ap.add_argument("--korch-env", action="append", default=[],
                    help="VAR=VALUE set for korch's processes only (e.g. OMP_WAIT_POLICY=passive)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                    help="another korch contender with extra environment variables")
    args = ap.parse_args(argv)
    args.loads = args.loads.split(",")
    args.variants = []
    for v in args.variant:
        label, _, envs = v.partition(":")
        if not label or "=" not in envs:
            ap.error(f"--variant {v}: expected NAME:VAR=VALUE[,VAR=VALUE]")
        args.variants.append(("korch-" + label, envs.split(",")))
    for l in args.loads:
        if l not in LOADS:
            ap.error(f"--loads: unknown load '{l}' (one of {', '.join(LOADS)})")
    if args.loads[0] != "none":
        args.loads.insert(0, "none")
    cmd, work, exe = prepare(args, argv, "run", "load")
    results = [bench_model(m, args, exe, work) for m in args.models.split(",")]
    md = markdown(results, args, cmd)
    print(md)
    if not args.no_record:
        with open(args.out, "a") as fh:
            fh.write(md)
        log(f"appended to {args.out}")


if __name__ == "__main__":
    main()
