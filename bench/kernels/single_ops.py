"""Single-operator models vs ONNX Runtime and OpenVINO FP32 (issue 20).

Builds the single-operator models of issue 20's table from code
(onnx.helper, fixed seeds), optimizes each with korch (a private profile
database and kernel cache under build/single-ops/), then times, in
interleaved rounds in the same minutes:

  korch        `korch run PLAN --bench K` (one process per round, its median_ms)
               for each layout asked for (--layouts: default, nchw,
               channels-last, auto; `korch optimize --layout X`)
  ORT          onnxruntime, 2 intra-op threads, all graph optimisations
  OpenVINO-f32 CPU plugin, INFERENCE_PRECISION_HINT=f32, latency hint

An in-process contender's sample is the median of K calls, as korch's is,
so both sides report a median of K. Outputs are checked against ORT's.
Appends a markdown section (command, CPU model, korch commit, load) to
bench/kernels/RESULTS.md. Run it as root for nice -20 (bench/harness.py's
apply_nice), the project's benchmark convention.

    build/venv/bin/python bench/kernels/single_ops.py [--rounds 7] [--bench-k 20]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from bench.harness import (BENCH_LINE, CpuMeter, OpenVinoContender, OrtContender,  # noqa: E402
                           apply_nice, compare, cpu_model, git_commit, sanitize)
import bench.harness  # noqa: E402

bench.harness.np = np  # the harness imports numpy lazily, in its own main()

OPSET = 13
PREDICTED = re.compile(r"predicted ([0-9.]+) ms")
LAYOUT_LINE = re.compile(r"^layout: nchw (plan|and) .*$", re.M)  # --layout auto's decision


def log(msg):
    print(f"[single-ops] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ models


def _conv_model(name, n, c, h, w, m, k, group=1, pad=1, relu=False, seed=0):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    wt = (rng.standard_normal((m, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
    b = (0.1 * rng.standard_normal(m)).astype(np.float32)
    ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y" if not relu else "c"], kernel_shape=[k, k],
                              pads=[pad] * 4, group=group)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m, ho, wo])],
                          [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    return g, {"x": x}


def _softmax_model(name, rows, cols, seed=0):
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])])
    return g, {"x": (4 * rng.standard_normal((rows, cols))).astype(np.float32)}


# name -> (what the table says, builder). The conv test model is 20x16x50x40
# with a 3x3 kernel as in the issue; its channel count out (16) and padding
# (none, the ONNX default) are this benchmark's choice.
MODELS = {
    "dwconv3x3_relu": ("depthwise conv 3x3 + ReLU, 1x144x56x56",
                       lambda: _conv_model("dwconv3x3_relu", 1, 144, 56, 56, 144, 3, group=144, relu=True)),
    "conv1x1_256_64": ("conv 1x1 256->64, 56x56",
                       lambda: _conv_model("conv1x1_256_64", 1, 256, 56, 56, 64, 1, pad=0)),
    "conv3x3_64_64": ("conv 3x3 64->64, 56x56",
                      lambda: _conv_model("conv3x3_64_64", 1, 64, 56, 56, 64, 3)),
    "softmax_8192x1024": ("softmax over rows, 8192x1024",
                          lambda: _softmax_model("softmax_8192x1024", 8192, 1024)),
    "convtest_20x16x50x40": ("conv test model 20x16x50x40, 3x3, 16->16, no padding",
                             lambda: _conv_model("convtest_20x16x50x40", 20, 16, 50, 40, 16, 3, pad=0)),
}


def write_model(name, work):
    import onnx
    from onnx import helper
    g, feeds = MODELS[name][1]()
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="korch-single-ops")
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    files = {}
    for k, v in feeds.items():
        files[k] = os.path.join(work, f"{name}.{sanitize(k)}.npy")
        np.save(files[k], v)
    return path, feeds, files


# ------------------------------------------------------------- contenders


class Batched:
    """An in-process contender whose sample is the median of K calls."""

    def __init__(self, inner, k):
        self.inner, self.k = inner, k
        self.name, self.kind, self.error = inner.name, "inproc", None

    def prepare(self):
        return self.inner.prepare()

    def once(self):
        return statistics.median(self.inner.once() for _ in range(self.k))

    def close(self):
        self.inner.close()


class KorchLayout:
    """`korch optimize --layout L` once, then `korch run --bench K` per round."""
    kind = "proc"

    def __init__(self, korch, layout, model, files, outputs, work, threads, k, db, cache, has_flag):
        self.korch, self.layout, self.model, self.files = korch, layout, model, files
        self.outputs, self.work, self.threads, self.k = outputs, work, threads, k
        self.db, self.cache, self.has_flag = db, cache, has_flag
        self.name = f"korch {layout}"
        self.error = None
        self.predicted_ms = self.plan_layout = self.layout_line = None

    def _run(self, args, env=None):
        p = subprocess.run([self.korch] + args, capture_output=True, text=True, timeout=3600, env=env)
        if p.returncode != 0:
            lines = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()] or ["no output"]
            raise RuntimeError(f"korch {args[0]} exit {p.returncode}: {lines[-1][:200]}")
        return p

    def prepare(self):
        stem = os.path.splitext(os.path.basename(self.model))[0] + "." + self.layout
        self.plan = os.path.join(self.work, stem + ".plan")
        self.out_dir = os.path.join(self.work, stem + ".out")
        os.makedirs(self.out_dir, exist_ok=True)
        args = ["optimize", self.model, "-o", self.plan, "--threads", str(self.threads), "--db", self.db,
                "--cache-dir", self.cache]
        env = dict(os.environ)
        env.pop("KORCH_LAYOUT", None)
        if self.layout != "default":
            if self.has_flag:
                args += ["--layout", self.layout]
            elif self.layout == "nchw":
                env["KORCH_LAYOUT"] = "nchw"  # a korch older than --layout
            else:
                raise RuntimeError(f"this korch has no --layout flag ({self.layout})")
        p = self._run(args, env)
        text = p.stdout + p.stderr
        with open(self.plan + ".log", "w") as fh:
            fh.write(text)
        m = PREDICTED.search(text)
        self.predicted_ms = float(m.group(1)) if m else None
        m = LAYOUT_LINE.search(text)
        self.layout_line = m.group(0) if m else None
        with open(self.plan, "rb") as fh:  # a format-3 plan embeds its binary weights after the text
            m = re.search(rb"\blayout=(\S+)", fh.read())
        self.plan_layout = m.group(1).decode("ascii", "replace") if m else "?"
        self._run(self._args())
        return [np.load(os.path.join(self.out_dir, sanitize(o) + ".npy")) for o in self.outputs]

    def _args(self):
        a = ["run", self.plan, "--threads", str(self.threads), "--output-dir", self.out_dir]
        for k, f in self.files.items():
            a += ["--input", f"{k}={f}"]
        return a

    def once(self):
        # ONNX Runtime's and OpenVINO's pools, which ran just before in this
        # process, keep spinning for tens of ms; korch's start-up look at the
        # machine (src/cli/omp_policy.c) would count them as load and make
        # its threads wait passively (a futex wake per kernel and run: the
        # bimodal 0.128 / 0.257 ms of the depthwise row, 2026-11-27);
        # bench/harness.py and bench/realzoo/run.py pause the same way
        time.sleep(0.2)
        p = self._run(self._args() + ["--bench", str(self.k)])
        lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
        m = BENCH_LINE.search(lines[-1]) if lines else None
        if not m:
            raise RuntimeError("no median_ms line from korch run --bench")
        return float(m.group(1))

    def close(self):
        pass


# ----------------------------------------------------------------- running


def bench_one(name, args, work, has_flag):
    path, feeds, files = write_model(name, work)
    cons = [Batched(OrtContender(path, feeds, args.threads), args.bench_k)]
    if not args.no_openvino:
        cons.append(Batched(OpenVinoContender(path, feeds, args.threads, "f32"), args.bench_k))
    for lay in args.layouts:
        cons.append(KorchLayout(args.korch, lay, path, files, ["y"], work, args.threads, args.bench_k,
                                args.db, args.cache_dir, has_flag))
    res = {"name": name, "what": MODELS[name][0], "c": {}}
    ref = None
    for c in cons:
        r = res["c"].setdefault(c.name, {})
        try:
            outs = c.prepare()
            if ref is None:
                ref = outs
            _, rel, err = compare(outs, ref)
            r["rel"] = rel
            r["ok"] = err is None and rel is not None and rel <= 1e-3
            for k in ("predicted_ms", "plan_layout", "layout_line"):
                if getattr(c, k, None) is not None:
                    r[k] = getattr(c, k)
            log(f"{name}: {c.name} ready (max rel {rel}{'' if r['ok'] else ', MISMATCH'})")
        except Exception as e:  # noqa: BLE001 - report it in the table
            c.error = str(e)
            r["na"] = c.error
            log(f"{name}: {c.name} n/a: {c.error}")
    live = [c for c in cons if c.error is None]
    for c in live:  # warm-up
        c.once()
    samples = {c.name: [] for c in live}
    meter = CpuMeter()
    for rnd in range(args.rounds):
        k = rnd % max(len(live), 1)
        for c in live[k:] + live[:k]:
            try:
                samples[c.name].append(c.once())
            except Exception as e:  # noqa: BLE001
                c.error = str(e)
                res["c"][c.name]["na"] = c.error
        live = [c for c in live if c.error is None]
    res.update(meter.stop())
    for c in cons:
        s = samples.get(c.name)
        if s and c.error is None:
            res["c"][c.name].update(median=statistics.median(s), lo=min(s), hi=max(s), n=len(s))
        c.close()
    log(f"{name}: " + ", ".join(f"{n} {r.get('median', float('nan')):.3f}" for n, r in res["c"].items()))
    return res


def fmt(r):
    if "median" not in r:
        return "n/a"
    s = f"{r['median']:.3f}"
    if r.get("n", 0) > 1:
        s += f" ({r['lo']:.3f}-{r['hi']:.3f})"
    if r.get("ok") is False:
        s += " MISMATCH"
    return s


def report(results, args, command, nice, load):
    names = list(results[0]["c"].keys())
    korchs = [n for n in names if n.startswith("korch")]
    peers = [n for n in names if not n.startswith("korch")]
    lines = [f"## Single-operator models ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Command: `{command}`  ",
             f"CPU: {cpu_model()}; {args.threads} threads; korch commit {git_commit()}; nice {nice}; "
             f"load average before {load[0]}, after {load[1]}  ",
             f"{args.rounds} interleaved rounds; every sample is a median of {args.bench_k} runs "
             "(korch: `korch run --bench`; ORT/OpenVINO: in-process calls); ms, median over rounds "
             "(min-max). Predicted: the plan's predicted latency and its recorded layout.", "",
             "| model | " + " | ".join(names) + " | korch predicted (layout) | best korch / best peer |",
             "|---|" + "---:|" * len(names) + "---|---:|"]
    for res in results:
        c = res["c"]
        pred = "; ".join(f"{n.split(' ', 1)[1]}: {c[n]['predicted_ms']:.3f} ({c[n].get('plan_layout', '?')})"
                         for n in korchs if c[n].get("predicted_ms") is not None)
        bk = [c[n]["median"] for n in korchs if "median" in c[n]]
        bp = [c[n]["median"] for n in peers if "median" in c[n]]
        ratio = f"{min(bk) / min(bp):.2f}" if bk and bp else "-"
        lines.append(f"| {res['what']} | " + " | ".join(fmt(c[n]) for n in names) + f" | {pred} | {ratio} |")
    foreign = [r.get("foreign_cpu_pct") for r in results if r.get("foreign_cpu_pct") is not None]
    if foreign:
        lines += ["", f"CPU time used by other processes while measuring: {min(foreign)}-{max(foreign)} % "
                  "of the machine (bench/harness.py CpuMeter)."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--layouts", default="default,nchw,auto",
                    help="korch plans to time: default, nchw, channels-last, auto (comma-separated)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bench-k", type=int, default=20)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "single-ops"))
    ap.add_argument("--db", default=None, help="profile database (default WORK/profile.db)")
    ap.add_argument("--cache-dir", default=None, help="kernel cache (default WORK/kernels)")
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--nice", type=int, default=-20, help="niceness (needs root for < 0; default -20)")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "kernels", "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args()
    args.layouts = [x for x in args.layouts.split(",") if x]
    os.makedirs(args.work, exist_ok=True)
    args.db = args.db or os.path.join(args.work, "profile.db")
    args.cache_dir = args.cache_dir or os.path.join(args.work, "kernels")
    for v in ("OMP_NUM_THREADS", "KORCH_LAYOUT"):
        os.environ.pop(v, None)
    py = os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT + os.sep) else sys.executable
    command = f"{py} bench/kernels/single_ops.py " + " ".join(sys.argv[1:])
    nice = apply_nice(args.nice)
    h = subprocess.run([args.korch, "optimize", "--help"], capture_output=True, text=True).stdout
    has_flag = "--layout" in h
    if not has_flag:
        args.layouts = [x for x in args.layouts if x in ("default", "nchw")]
    if args.no_openvino is False:
        try:
            import openvino  # noqa: F401
        except ImportError:
            log("openvino not installed: OpenVINO column skipped")
            args.no_openvino = True
    load0 = open("/proc/loadavg").read().split()[0]
    results = [bench_one(n, args, args.work, has_flag) for n in args.models.split(",") if n]
    load1 = open("/proc/loadavg").read().split()[0]
    text = report(results, args, command, nice, (load0, load1))
    for res in results:
        for n, r in res["c"].items():
            if r.get("layout_line"):
                text += f"\n- {res['name']}, {n}: `{r['layout_line']}`"
    print(text)
    if not args.no_write:
        with open(args.results, "a") as fh:
            fh.write("\n" + text.rstrip("\n") + "\n")
        log(f"appended to {os.path.relpath(args.results, ROOT)}")


if __name__ == "__main__":
    main()
