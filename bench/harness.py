"""Peer benchmark harness: ONNX Runtime, PyTorch eager and korch, interleaved.

Run with build/venv/bin/python (scripts/bench.sh does everything):

    python -m bench.harness [--models a,b] [--threads T] [--runs N] ...

Method (details in bench/README.md):
  1. machine probes (C, bench/probe/probe.c): FMA peak and STREAM triad,
     1 and T threads; "suspect" when T-thread FMA < 1.4x 1-thread FMA;
  2. per model: load every contender, check that outputs agree (ORT against
     the stored PyTorch reference, PyTorch and korch against ORT);
  3. warm-up, then R rounds; in each round every contender runs once, in an
     order rotated every round. In-process contenders (ORT, PyTorch) time one
     inference; korch runs one `korch run ... --bench K` process per round
     and contributes that process's median;
  4. report median and min-max over rounds, and ratio to ORT's median.
Results are appended to bench/RESULTS.md; a bar chart (latency relative to
ORT) goes to bench/results-latest.png and raw data to bench/results-latest.json.
A contender that cannot run is reported "n/a (reason)"; nothing aborts the run.
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

# numpy is imported in main(), after preload_blas(): Debian's numpy links
# libblas.so.3 too, and whichever libblas.so.3 is loaded first is the one
# torch gets.
np = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT_MODELS = ["candy", "segformer_b0", "yolox_nano", "yolov4", "efficientvit",
                  "resnet50", "mobilenetv2", "vit_b16", "bert_base"]
RTOL = 1e-3          # outputs agree when max|a-b| <= RTOL * max|reference|
RTOL_REDUCED = 5e-2  # bf16 contenders: 8 mantissa bits through a deep network (docs/precision.md)
SUSPECT_SCALING = 1.4


def log(*a):
    print("[bench]", *a, flush=True)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def compare(outs, refs):
    """Worst (max_abs, max_rel) over outputs; rel is relative to max|ref|."""
    if len(outs) != len(refs):
        return None, None, f"{len(outs)} outputs vs {len(refs)}"
    worst_abs, worst_rel = 0.0, 0.0
    for o, r in zip(outs, refs):
        o = np.asarray(o)
        r = np.asarray(r)
        if o.shape != r.shape:
            return None, None, f"shape {list(o.shape)} vs {list(r.shape)}"
        if not o.size:
            continue
        d = float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64))))
        if not np.isfinite(d):
            return float("inf"), float("inf"), "non-finite values"
        scale = float(np.max(np.abs(r)))
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / scale if scale > 0 else d)
    return worst_abs, worst_rel, None


# ------------------------------------------------------------ PyTorch BLAS


def preload_blas(args):
    """Make PyTorch use OpenBLAS instead of Debian's default reference BLAS.

    Debian's python3-torch links libblas.so.3, which by default is netlib's
    reference BLAS: ~3 GFLOP/s for PyTorch's Linear/matmul, which would make
    PyTorch an absurd straw man on the transformer models. bench.sh extracts
    Debian's libopenblas0-openmp (OpenMP build, so it shares libgomp with
    torch instead of oversubscribing the cores) into build/openblas without
    installing it. Loading its libblas.so.3 with RTLD_GLOBAL before torch is
    imported makes the dynamic linker reuse it (matched by SONAME) for torch,
    in this process only; korch subprocesses are not affected.
    OpenBLAS 0.3.21 detects this Zen 5 as Haswell (AVX2 kernels); on AVX-512
    machines OPENBLAS_CORETYPE=SkylakeX roughly doubles sgemm speed.
    Returns a description for the report.
    """
    import ctypes
    d = args.torch_blas
    if not d or d == "system":
        return "system libblas.so.3 (as installed)"
    lib = os.path.join(d, "libblas.so.3")
    if not os.path.exists(lib):
        return f"system libblas.so.3 ({lib} missing)"
    ct = args.openblas_coretype
    if ct == "auto":
        ct = "SkylakeX" if "avx512f" in cpu_flags() else ""
    if ct:
        os.environ["OPENBLAS_CORETYPE"] = ct
    else:
        os.environ.pop("OPENBLAS_CORETYPE", None)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    try:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        lapack = os.path.join(d, "liblapack.so.3")
        if os.path.exists(lapack):
            ctypes.CDLL(lapack, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        return f"system libblas.so.3 (preloading {lib} failed: {e})"
    return (f"OpenBLAS from {os.path.relpath(d, ROOT)} (OpenMP build), "
            f"OPENBLAS_CORETYPE={ct or 'auto-detected'}")


def torch_sgemm_probe(threads):
    """GFLOP/s of a PyTorch Linear 197x768 -> 3072 (ViT-B MLP shape)."""
    import torch
    torch.set_num_threads(threads)
    a, w = torch.randn(197, 768), torch.randn(3072, 768)
    torch.nn.functional.linear(a, w)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.3 or n < 3:
        torch.nn.functional.linear(a, w)
        n += 1
    return 2 * 197 * 768 * 3072 * n / (time.perf_counter() - t0) / 1e9


def mapped_blas():
    """Which BLAS library is actually mapped into this process."""
    try:
        with open("/proc/self/maps") as fh:
            libs = {ln.split()[-1] for ln in fh if "blas" in ln.lower() and "/" in ln}
        return ", ".join(sorted(os.path.basename(x) for x in libs)) or "none"
    except OSError:
        return "?"


# ----------------------------------------------------------------- machine


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    fl = line.split(":", 1)[1].split()
                    return [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni",
                                        "amx_tile") if f in fl]
    except OSError:
        pass
    return []


def run_probes(probe, threads):
    """Run the C probes; returns dict or {'error': ...}."""
    res = {"binary": probe}
    if not probe or not os.path.exists(probe):
        return {"error": f"probe binary missing ({probe})"}
    for kind in ("fma", "triad"):
        for t in sorted({1, threads}):
            try:
                p = subprocess.run([probe, kind, str(t)], capture_output=True, text=True,
                                   timeout=300)
                res[f"{kind}_{t}t"] = json.loads(p.stdout.strip().splitlines()[-1])
            except Exception as e:  # noqa: BLE001 - report, don't crash
                res[f"{kind}_{t}t"] = {"error": str(e)}
    try:
        f1 = res["fma_1t"]["best"]
        ft = res[f"fma_{threads}t"]["best"]
        res["fma_scaling"] = ft / f1
        res["suspect"] = threads > 1 and ft < SUSPECT_SCALING * f1
    except (KeyError, TypeError, ZeroDivisionError):
        res["suspect"] = None
    return res


def core_probe(probe):
    """`probe cores 2`: how far apart the host placed the first two vCPUs
    (a cache line's round trip; reading what the other one wrote). On a VM
    this changes between minutes, and with it every multi-threaded timing:
    a plan's kernels read what other threads wrote (docs/profiling.md,
    "Where the host puts two vCPUs"). Returns the probe's dict or
    {'error': ...}."""
    if not probe or not os.path.exists(probe):
        return {"error": f"probe binary missing ({probe})"}
    try:
        p = subprocess.run([probe, "cores", "2"], capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - report, don't crash
        return {"error": str(e)}


def core_probe_line(before, after):
    """One report line for the core probe at the start and the end of a run."""
    def one(c):
        if "round_trip_ns" not in c:
            return c.get("error", "n/a")
        return (f"round trip {c['round_trip_ns']:.0f} ns, 8 MiB the other CPU wrote read at "
                f"{c['read_other_gbs']:.0f} GB/s (its own {c['read_own_gbs']:.0f})")
    cpus = before.get("cpus") or after.get("cpus") or ["?", "?"]
    return (f"- Cores {cpus[0]} and {cpus[1]} (bench/probe `cores`): at start {one(before)}; at the end "
            f"{one(after)} (about 60-75 ns: one CCX; 350 ns and more: two, and multi-threaded "
            f"timings are slower)")


def apply_nice(value):
    """Scheduling niceness for this process and everything it starts later;
    returns what was applied (for the report) or None."""
    if value is None:
        return None
    applied = None
    try:  # threads and child processes created later inherit it
        os.setpriority(os.PRIO_PROCESS, 0, value)
        applied = str(os.getpriority(os.PRIO_PROCESS, 0))
    except (OSError, AttributeError) as e:
        log(f"could not set nice {value}: {e}")
    # With sched_autogroup (the default on Debian kernels), nice only ranks
    # processes inside one session; sessions share the CPUs equally. The
    # autogroup's own nice is what competes with other tenants' sessions.
    try:
        with open("/proc/self/autogroup") as fh:
            old = fh.read().split("nice")[-1].strip()

        def restore(old=old):  # the session outlives us: put it back
            try:
                with open("/proc/self/autogroup", "w") as fh:
                    fh.write(old)
            except OSError:
                pass
        import atexit
        atexit.register(restore)
        with open("/proc/self/autogroup", "w") as fh:
            fh.write(str(value))
        with open("/proc/self/autogroup") as fh:
            applied = (applied or "?") + " (autogroup " + fh.read().split("nice")[-1].strip() + ")"
    except OSError:
        pass
    return applied


def git_commit():
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return c + ("-dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        return "unknown"


def versions():
    import onnx
    import onnxruntime
    import torch
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__,
         "torch": torch.__version__, "korch_commit": git_commit(),
         "kernel": platform.release()}
    try:
        v["cc"] = subprocess.run(["cc", "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.splitlines()[0]
    except Exception:  # noqa: BLE001
        pass
    return v


class CpuMeter:
    """CPU time used by *other* processes (and VM steal) while we measure.

    /proc/stat gives machine-wide busy time; os.times() gives ours (and our
    finished children's, i.e. korch processes). Busy time that is not ours
    is foreign load that perturbs the timings."""

    def __init__(self):
        self.t0 = self._read()

    @staticmethod
    def _read():
        try:
            with open("/proc/stat") as fh:
                f = [int(v) for v in fh.readline().split()[1:]]
            hz = os.sysconf("SC_CLK_TCK")
            idle = f[3] + (f[4] if len(f) > 4 else 0)
            steal = f[7] if len(f) > 7 else 0
            total = sum(f[:8])
            t = os.times()
            own = t.user + t.system + t.children_user + t.children_system
            return total / hz, (total - idle - steal) / hz, steal / hz, own, time.monotonic()
        except (OSError, ValueError, IndexError):
            return None

    def stop(self):
        t1 = self._read()
        if not self.t0 or not t1:
            return {}
        total, busy, steal = (t1[i] - self.t0[i] for i in range(3))
        own = t1[3] - self.t0[3]
        if total <= 0:
            return {}
        return {"foreign_cpu_pct": round(100 * max(busy - own, 0) / total, 1),
                "steal_pct": round(100 * steal / total, 1)}


# ------------------------------------------------------------- contenders


class Contender:
    name = "?"
    kind = "inproc"     # "inproc": time one call; "proc": one process per round
    error = None        # set -> "n/a (error)"

    def prepare(self):
        """Load; return list of output arrays (for the agreement check)."""
        raise NotImplementedError

    def once(self):
        """One timed sample in ms."""
        raise NotImplementedError

    def close(self):
        pass


class OrtContender(Contender):
    name = "ORT"

    def __init__(self, path, feeds, threads):
        self.path, self.feeds, self.threads = path, feeds, threads

    def prepare(self):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        t0 = time.perf_counter()
        self.sess = ort.InferenceSession(self.path, so, providers=["CPUExecutionProvider"])
        self.load_s = time.perf_counter() - t0
        return self.sess.run(None, self.feeds)

    def once(self):
        t0 = time.perf_counter()
        self.sess.run(None, self.feeds)
        return (time.perf_counter() - t0) * 1e3

    def close(self):
        self.sess = None


class OpenVinoContender(Contender):
    """OpenVINO (PyPI `openvino`) on the CPU plugin, latency hint, T threads.
    precision "f32" forces FP32 (INFERENCE_PRECISION_HINT=f32); "default"
    takes the plugin's default, bf16 on CPUs with AVX512_BF16 (the precision
    it runs in is recorded). A model with dynamic input dims is reshaped to
    the feeds' shapes first (third-party models: bench/realzoo). Its output
    check is reported like the others'; at bf16 a relative error of ~1e-2 is
    expected, not a fault."""

    def __init__(self, path, feeds, threads, precision):
        self.path, self.feeds, self.threads, self.precision = path, feeds, threads, precision
        self.name = "OpenVINO-f32" if precision == "f32" else "OpenVINO"

    def prepare(self):
        import openvino as ov
        core = ov.Core()
        cfg = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY",
               "NUM_STREAMS": 1}
        if self.precision == "f32":
            cfg["INFERENCE_PRECISION_HINT"] = "f32"
        t0 = time.perf_counter()
        model = core.read_model(self.path)
        if any(i.get_partial_shape().is_dynamic for i in model.inputs):
            model.reshape({name: list(v.shape) for name, v in self.feeds.items() if v.ndim})
        self.compiled = core.compile_model(model, "CPU", cfg)
        self.load_s = time.perf_counter() - t0
        ran = self.compiled.get_property("INFERENCE_PRECISION_HINT")
        self.ran_precision = ran.get_type_name() if hasattr(ran, "get_type_name") else str(ran)
        self.req = self.compiled.create_infer_request()
        self.req.infer(self.feeds)
        return [self.req.get_output_tensor(i).data.copy() for i in range(len(self.compiled.outputs))]

    def once(self):
        t0 = time.perf_counter()
        self.req.infer(self.feeds)
        return (time.perf_counter() - t0) * 1e3

    def close(self):
        self.req = self.compiled = None


class TorchContender(Contender):
    name = "PyTorch"

    def __init__(self, model_name, x, threads):
        self.model_name, self.x, self.threads = model_name, x, threads

    def prepare(self):
        import torch
        from models import build as mbuild
        from models.zoo import lookup
        torch.set_num_threads(self.threads)
        spec, tiny = lookup(self.model_name)
        t0 = time.perf_counter()
        self.model, x = mbuild.make_model(spec, tiny)
        self.load_s = time.perf_counter() - t0
        self.x = torch.from_numpy(self.x)
        if not torch.equal(x, self.x):
            raise RuntimeError("regenerated input differs from the stored one "
                               "(models out of date? run scripts/build-models.sh)")
        self.ctx = torch.inference_mode
        with self.ctx():
            out = self.model(self.x)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o.numpy() for o in out]

    def once(self):
        with self.ctx():
            t0 = time.perf_counter()
            self.model(self.x)
            return (time.perf_counter() - t0) * 1e3

    def close(self):
        self.model = None


BENCH_LINE = re.compile(r"median_ms=([0-9.eE+-]+)\s+min_ms=([0-9.eE+-]+)\s+"
                        r"max_ms=([0-9.eE+-]+)\s+runs=(\d+)")


OPT_PLAN = re.compile(r"plan: \w+ strategy, (\d+) kernels \((\d+) fused\) for (\d+) primitives, "
                      r"predicted ([0-9.]+) ms")
OPT_CANDS = re.compile(r"^\s*total: (\d+) sets, (\d+) candidates, (\d+) kept", re.M)


def parse_optimize(text):
    """Kernel and candidate counts and the predicted latency from `korch optimize`'s log."""
    out = {}
    m = OPT_PLAN.search(text)
    if m:
        out.update(kernels=int(m.group(1)), fused=int(m.group(2)), primitives=int(m.group(3)),
                   predicted_ms=float(m.group(4)))
    m = OPT_CANDS.search(text)
    if m:
        out["candidates"] = int(m.group(2))
    return out


class KorchContender(Contender):
    """korch CLI: optional `korch optimize`, then `korch run --bench K` per round."""
    kind = "proc"

    def __init__(self, korch, strategy, model_path, meta, models_dir, threads, work,
                 bench_k, db=None, budget=None, timeout=1800, max_run_s=30.0, cold=False,
                 precision=None):
        self.korch, self.strategy = korch, strategy
        self.precision = precision  # None: fp32; "bf16": `korch optimize --precision bf16`
        self.cold = cold
        self.model_path, self.meta, self.models_dir = model_path, meta, models_dir
        self.threads, self.work, self.bench_k = threads, work, bench_k
        self.db, self.budget, self.timeout = db, budget, timeout
        self.max_run_s = max_run_s
        self.name = f"korch-{strategy}" if strategy != "onnx" else "korch (no plan)"
        if precision:
            self.name += f"-{precision}"
        self.optimize_s = None
        self.warm_optimize_s = None
        self.opt_stats = {}  # parsed from `korch optimize`: candidates, kernels, predicted_ms
        self.inner = []  # per-round (median, min, max, runs) as printed by korch

    def _run(self, args, timeout=None):
        p = subprocess.run([self.korch] + args, capture_output=True, text=True,
                           timeout=timeout or self.timeout)
        if p.returncode != 0:
            lines = [ln.strip() for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
            errs = [ln for ln in lines if "error" in ln.lower()] or lines or ["no output"]
            raise RuntimeError(f"`korch {args[0]}` exit {p.returncode}: {errs[0][:160]}")
        return p

    def _run_args(self, out_dir):
        args = ["run", self.target]
        for i in self.meta["inputs"]:
            args += ["--input", f"{i['name']}={os.path.join(self.models_dir, i['file'])}"]
        return args + ["--output-dir", out_dir, "--threads", str(self.threads)]

    def prepare(self):
        if not os.path.exists(self.korch):
            raise RuntimeError("korch CLI not built")
        stem = f"{self.meta['name']}.{self.strategy}" + (f".{self.precision}" if self.precision else "")
        self.out_dir = os.path.join(self.work, stem + ".out")
        os.makedirs(self.out_dir, exist_ok=True)
        if self.strategy == "onnx":
            self.target = self.model_path
        else:
            self.target = os.path.join(self.work, stem + ".plan")
            args = ["optimize", self.model_path, "-o", self.target, "--strategy", self.strategy,
                    "--threads", str(self.threads)]
            if self.db:
                args += ["--db", self.db]
            if self.precision:
                args += ["--precision", self.precision]
            if self.budget is not None:
                args += ["--budget", str(self.budget)]
            if self.cold:
                # a cold start: an empty profile database and kernel cache for
                # this model (they then serve the other strategies warm)
                cache = self.db + ".kernels"
                for f in (self.db, self.db + "-wal", self.db + "-shm"):
                    if os.path.exists(f):
                        os.unlink(f)
                shutil.rmtree(cache, ignore_errors=True)
                args += ["--cache-dir", cache]
            elif self.db and os.path.isdir(self.db + ".kernels"):
                args += ["--cache-dir", self.db + ".kernels"]
            t0 = time.perf_counter()
            p = self._run(args)
            self.optimize_s = time.perf_counter() - t0
            with open(self.target + ".log", "w") as fh:  # for diagnosis: what optimize said
                fh.write(p.stdout + p.stderr)
            self.opt_stats = parse_optimize(p.stdout + p.stderr)
            if self.cold:
                t0 = time.perf_counter()
                self._run(args[:-2])  # same database and cache, now warm
                self.warm_optimize_s = time.perf_counter() - t0
        for f in os.listdir(self.out_dir):
            os.unlink(os.path.join(self.out_dir, f))
        t0 = time.perf_counter()
        self._run(self._run_args(self.out_dir), timeout=self.max_run_s * 4)
        first = time.perf_counter() - t0
        if first > self.max_run_s:
            raise RuntimeError(f"too slow to benchmark: first run took {first:.0f} s "
                               f"(limit {self.max_run_s:.0f} s, --korch-max-run-s)")
        outs = []
        for o in self.meta["outputs"]:
            f = os.path.join(self.out_dir, sanitize(o["name"]) + ".npy")
            if not os.path.exists(f):
                raise RuntimeError(f"korch wrote no {os.path.basename(f)}")
            outs.append(np.load(f))
        return outs

    def once(self):
        p = self._run(self._run_args(self.out_dir) + ["--bench", str(self.bench_k)])
        lines = [ln for ln in p.stdout.strip().splitlines() if ln.strip()]
        m = BENCH_LINE.search(lines[-1]) if lines else None
        if not m:
            raise RuntimeError("no 'median_ms=... runs=N' last line from korch run --bench")
        med, lo, hi, n = float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))
        self.inner.append((med, lo, hi, n))
        return med


# ------------------------------------------------------------ benchmarking


def bench_model(name, args, probes):
    models_dir = args.models_dir
    with open(os.path.join(models_dir, name + ".json")) as fh:
        meta = json.load(fh)
    path = os.path.join(models_dir, name + ".onnx")
    feeds = {i["name"]: np.load(os.path.join(models_dir, i["file"])) for i in meta["inputs"]}
    refs = [np.load(os.path.join(models_dir, o["file"])) for o in meta["outputs"]]
    x = next(iter(feeds.values()))

    cons = []
    if "ort" in args.contenders:
        cons.append(OrtContender(path, feeds, args.threads))
    if "torch" in args.contenders:
        cons.append(TorchContender(name, x, args.threads))
    if "openvino" in args.contenders:
        cons.append(OpenVinoContender(path, feeds, args.threads, "f32"))
        cons.append(OpenVinoContender(path, feeds, args.threads, "default"))
    if "korch" in args.contenders:
        db = args.korch_db
        if args.korch_cold:
            db = os.path.join(args.work, f"{name}.profile.db")
        # optimal first: with --korch-cold it is the cold run, and the other
        # strategies then reuse its profiles
        strategies = sorted(args.korch_strategies, key=lambda s: s != "optimal")
        first = True
        for s in strategies:
            cold = args.korch_cold and first and s != "onnx"
            first = first and not cold
            cons.append(KorchContender(args.korch, s, path, meta, models_dir, args.threads,
                                       args.work, args.korch_bench_k, db,
                                       args.korch_budget, max_run_s=args.korch_max_run_s,
                                       cold=cold))
    if "korch-bf16" in args.contenders:
        # issue 19: the bf16 plan against OpenVINO's default (bf16) precision,
        # sharing the fp32 contenders' profile database (other kernel keys)
        db = args.korch_db
        if args.korch_cold:
            db = os.path.join(args.work, f"{name}.profile.db")
        cons.append(KorchContender(args.korch, "optimal", path, meta, models_dir, args.threads,
                                   args.work, args.korch_bench_k, db, args.korch_budget,
                                   max_run_s=args.korch_max_run_s, precision="bf16"))

    res = {"model": name, "gflops": meta.get("gflops"), "param_bytes": meta.get("param_bytes"),
           "opset": meta.get("opset"), "contenders": {}}
    ort_out = None
    for c in cons:
        r = res["contenders"].setdefault(c.name, {"kind": c.kind})
        try:
            outs = c.prepare()
            if isinstance(c, OrtContender):
                ort_out = outs
                a, rel, err = compare(outs, refs)
                r["check_against"] = "PyTorch reference (build time)"
            else:
                if ort_out is None:
                    a, rel, err = compare(outs, refs)
                    r["check_against"] = "PyTorch reference (build time)"
                else:
                    a, rel, err = compare(outs, ort_out)
                    r["check_against"] = "ORT"
            r["max_abs"], r["max_rel"] = a, rel
            # a reduced-precision contender (OpenVINO's bf16 default, korch
            # --precision bf16) is held to RTOL_REDUCED; its error is reported
            reduced = getattr(c, "precision", None) == "bf16" or any(
                t in str(getattr(c, "ran_precision", "")) for t in ("bf16", "bfloat16"))
            r["check_ok"] = err is None and rel is not None and rel <= (RTOL_REDUCED if reduced else RTOL)
            if reduced:
                r["check_rtol"] = RTOL_REDUCED
            if err:
                r["check_error"] = err
            for k in ("load_s", "optimize_s", "warm_optimize_s"):
                if getattr(c, k, None) is not None:
                    r[k] = round(getattr(c, k), 3)
            if getattr(c, "opt_stats", None):
                r.update(c.opt_stats)
            if getattr(c, "cold", False):
                r["cold"] = True
            if getattr(c, "ran_precision", None):
                r["precision"] = c.ran_precision
            log(f"{name}: {c.name} ready; max_abs={a} max_rel={rel} "
                f"{'ok' if r['check_ok'] else 'MISMATCH ' + (err or '')}")
        except Exception as e:  # noqa: BLE001
            c.error = str(e) or type(e).__name__
            r["na"] = c.error
            log(f"{name}: {c.name} n/a ({c.error})")
            if args.verbose:
                traceback.print_exc()
    live = [c for c in cons if c.error is None]

    # warm-up, and a cost estimate for choosing the number of rounds
    round_cost = 0.0
    slow = {}
    for c in live:
        try:
            t0 = time.perf_counter()
            for _ in range(args.warmup if c.kind == "inproc" else 1):
                warm = c.once()
            dt = (time.perf_counter() - t0) / (args.warmup if c.kind == "inproc" else 1)
            if c.kind == "proc" and dt > args.korch_max_round_s:
                # Far too slow to interleave (e.g. a reference executor): keep
                # the warm-up process's own median as a single sample.
                slow[c.name] = (warm, c.inner[-1] if c.inner else None, dt)
                c.error = "slow"
                log(f"{name}: {c.name} takes {dt:.1f} s per round: not interleaved, "
                    f"reporting its warm-up process only")
                continue
            round_cost += dt
        except Exception as e:  # noqa: BLE001
            c.error = str(e)
            res["contenders"][c.name]["na"] = c.error
            log(f"{name}: {c.name} n/a in warm-up ({c.error})")
        if c.kind == "proc" and c.error is None:
            c.inner.clear()
    live = [c for c in cons if c.error is None]
    if args.runs:
        rounds = args.runs
    else:
        rounds = int(args.time_per_model / max(round_cost, 1e-6))
        rounds = max(args.min_runs, min(args.max_runs, rounds))
    log(f"{name}: {rounds} rounds (round ~{round_cost * 1e3:.0f} ms, "
        f"{len(live)} contenders)")

    samples = {c.name: [] for c in live}
    meter = CpuMeter()
    t_start = time.perf_counter()
    for rnd in range(rounds):
        k = rnd % max(len(live), 1)
        for c in live[k:] + live[:k]:     # rotate the order each round
            if c.error:
                continue
            try:
                samples[c.name].append(c.once())
            except Exception as e:  # noqa: BLE001
                c.error = str(e)
                res["contenders"][c.name]["na"] = f"failed in round {rnd}: {c.error}"
            if args.gap_ms:
                time.sleep(args.gap_ms / 1e3)
    res["bench_seconds"] = round(time.perf_counter() - t_start, 1)
    res.update(meter.stop())
    res["rounds"] = rounds

    for c in cons:
        r = res["contenders"][c.name]
        s = samples.get(c.name, [])
        if c.name in slow:
            med, inner, dt = slow[c.name]
            lo, hi = (inner[1], inner[2]) if inner else (med, med)
            r.update(median_ms=med, min_ms=lo, max_ms=hi, n=1, not_interleaved=True,
                     note=f"not interleaved: {dt:.1f} s per `--bench {args.korch_bench_k}` "
                          f"process; one process's median/min/max")
        elif c.error is None and s:
            r.update(median_ms=statistics.median(s), min_ms=min(s), max_ms=max(s), n=len(s),
                     samples_ms=[round(v, 4) for v in s])
            if c.kind == "proc":
                r["per_process_bench_k"] = args.korch_bench_k
        c.close()
    ort = res["contenders"].get("ORT", {}).get("median_ms")
    for r in res["contenders"].values():
        if ort and "median_ms" in r:
            r["ratio_vs_ort"] = r["median_ms"] / ort
        if "median_ms" in r and r.get("predicted_ms"):
            r["measured_vs_predicted"] = r["median_ms"] / r["predicted_ms"]
    # roofline-style floor from the probes: compute-bound and weight-streaming
    try:
        peak = probes[f"fma_{args.threads}t"]["best"]
        bw = probes[f"triad_{args.threads}t"]["best"]
        res["floor_ms"] = max(meta["gflops"] / peak, meta["param_bytes"] / 1e9 / bw) * 1e3
    except (KeyError, TypeError):
        pass
    gc.collect()
    return res


# ---------------------------------------------------------------- reporting


def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def contender_order(results):
    names = []
    for r in results:
        for n in r["contenders"]:
            if n not in names:
                names.append(n)
    return names


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def bf16_summary(results):
    """Issue 19's comparison: korch --precision bf16 against OpenVINO at its
    default precision (bf16 on AVX512_BF16 CPUs), times and the distance of
    each from ONNX Runtime's FP32 outputs (max |x - ort| / max |ort|), side by
    side; FP32 of both for scale."""
    rows = []
    for r in results:
        c = r["contenders"]
        kb, ov = c.get("korch-optimal-bf16", {}), c.get("OpenVINO", {})
        if "median_ms" not in kb or "median_ms" not in ov:
            continue
        k32, ov32 = c.get("korch-optimal", {}), c.get("OpenVINO-f32", {})

        def ms(x):
            return fmt_ms(x["median_ms"]) if "median_ms" in x else "n/a"

        def rel(x):
            return f"{x['max_rel']:.2g}" if x.get("max_rel") is not None else "n/a"
        rows.append(f"| {r['model']} | {ms(kb)} | {ms(ov)} ({ov.get('precision', '?')}) | "
                    f"{kb['median_ms'] / ov['median_ms']:.2f} | {rel(kb)} | {rel(ov)} | {ms(k32)} | {ms(ov32)} |")
    if not rows:
        return []
    return ["Reduced precision (issue 19): korch `optimize --precision bf16` against OpenVINO at its "
            "default precision; ratio = korch / OpenVINO median (lower is better); error = max |out - ORT FP32| "
            "/ max |ORT FP32| over the outputs:", "",
            "| model | korch bf16 ms | OpenVINO ms (precision) | ratio | korch bf16 error | OpenVINO error | "
            "korch fp32 ms | OpenVINO f32 ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"] + rows + [""]


def korch_summary(results):
    """korch's optimiser per model: candidates, optimise times, kernels,
    measured/predicted, optimal vs greedy and vs ORT, with geomeans."""
    strategies = [s for s in ("none", "greedy", "optimal")
                  if any(f"korch-{s}" in r["contenders"] for r in results)]
    if not strategies:
        return []
    L = ["korch's optimiser (candidates and optimise times of the optimal strategy; "
         "kernels and measured/predicted latency per strategy none / greedy / optimal; "
         "greedy/optimal and ORT/optimal are speed-ups, higher is better):", ""]
    L.append("| model | candidates | optimise cold s | optimise warm s | kernels | "
             "measured/predicted | greedy/optimal | ORT/optimal |")
    L.append("|---|---:|---:|---:|---|---|---:|---:|")
    gv, ov, mp_all = [], [], []
    for r in results:
        cs = {s: r["contenders"].get(f"korch-{s}", {}) for s in strategies}
        opt = cs.get("optimal", {})
        kern = " / ".join(str(cs[s].get("kernels", "-")) for s in strategies)
        mps = []
        for s in strategies:
            v = cs[s].get("measured_vs_predicted")
            mps.append(f"{v:.2f}" if v else "-")
            if v:
                mp_all.append(v)
        g = cs.get("greedy", {}).get("median_ms")
        o = opt.get("median_ms")
        ort = r["contenders"].get("ORT", {}).get("median_ms")
        gs = g / o if g and o else None
        os_ = ort / o if ort and o else None
        if gs:
            gv.append(gs)
        if os_:
            ov.append(os_)
        cold = f"{opt['optimize_s']:.0f}" if "optimize_s" in opt else "-"
        if not opt.get("cold") and "optimize_s" in opt:
            cold += " (db not empty)"
        warm = f"{opt['warm_optimize_s']:.1f}" if "warm_optimize_s" in opt else "-"
        L.append(f"| {r['model']} | {opt.get('candidates', '-')} | {cold} | {warm} | {kern} | "
                 f"{' / '.join(mps)} | {f'{gs:.2f}' if gs else '-'} | "
                 f"{f'{os_:.2f}' if os_ else '-'} |")
    gg, go = geomean(gv), geomean(ov)
    L.append("")
    L.append(f"Geomean speed-up of korch-optimal over korch-greedy: "
             f"{f'{gg:.2f}x' if gg else 'n/a'} ({len(gv)} models); over ORT: "
             f"{f'{go:.2f}x' if go else 'n/a'} ({len(ov)} models). "
             f"measured/predicted over all plans: "
             + (f"{min(mp_all):.2f} to {max(mp_all):.2f}" if mp_all else "n/a") + ".")
    L.append("")
    return L


def markdown(results, probes, vers, args, started, elapsed):
    L = []
    L.append(f"## Run {started.strftime('%Y-%m-%d %H:%M UTC')}")
    L.append("")
    L.append(f"Command: `{args.command}`")
    L.append("")
    L.append(f"- Machine: {cpu_model()}, {os.cpu_count()} logical CPUs, flags: "
             f"{' '.join(cpu_flags())}; load average at start: {args.loadavg}")
    pr = []
    for kind, unit in (("fma", "GFLOP/s"), ("triad", "GB/s")):
        for t in sorted({1, args.threads}):
            p = probes.get(f"{kind}_{t}t", {})
            if "best" in p:
                pr.append(f"{kind} {t}T best {p['best']:.0f} (median {p['median']:.0f}) {unit}")
            else:
                pr.append(f"{kind} {t}T n/a")
    L.append("- Probes: " + "; ".join(pr) + (f" (other load during probes "
             f"{probes['foreign_cpu_pct']}%)" if "foreign_cpu_pct" in probes else ""))
    if "cores_start" in probes:
        L.append(core_probe_line(probes["cores_start"], probes.get("cores_end", {})))
    if probes.get("suspect"):
        L.append(f"- **suspect: vCPUs may share a physical core** ({args.threads}-thread FMA "
                 f"is only {probes['fma_scaling']:.2f}x the 1-thread FMA; want >= "
                 f"{SUSPECT_SCALING}x; other processes used "
                 f"{probes.get('foreign_cpu_pct', '?')}% of the CPUs during the probes, a busy "
                 f"neighbour also causes this)")
    elif probes.get("suspect") is False:
        L.append(f"- FMA scaling {args.threads}T/1T = {probes['fma_scaling']:.2f}x (not suspect)")
    L.append(f"- Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    L.append(f"- Settings: {args.threads} threads (ORT intra-op {args.threads}, inter-op 1, "
             f"sequential, all graph optimisations; torch.set_num_threads({args.threads})); "
             f"warm-up {args.warmup}; gap {args.gap_ms:g} ms between runs; nice "
             f"{args.nice_applied if args.nice_applied is not None else 'unchanged'}; rounds "
             f"{'fixed ' + str(args.runs) if args.runs else f'auto ({args.min_runs}..{args.max_runs}, ~{args.time_per_model:.0f} s/model)'}"
             f"; korch: `run --bench {args.korch_bench_k}` per round, strategies "
             f"{','.join(args.korch_strategies)}; total {elapsed / 60:.1f} min")
    L.append("")
    names = contender_order(results)
    L.append("Summary (median ms; ratio = median / ORT median, lower is better; floor = "
             "max(GFLOPs / FMA peak, weight bytes / triad bandwidth) at the bench's thread "
             "count; other load = CPU time used by other processes during the rounds):")
    L.append("")
    L.append("| model | GFLOPs | floor ms | " + " | ".join(names) + " | other load |")
    L.append("|---|---:|---:|" + "---|" * len(names) + "---:|")
    for r in results:
        cells = []
        for n in names:
            c = r["contenders"].get(n, {})
            if "median_ms" in c:
                cell = fmt_ms(c["median_ms"])
                if n != "ORT" and "ratio_vs_ort" in c:
                    cell += f" ({c['ratio_vs_ort']:.2f}x)"
                if not c.get("check_ok", True):
                    cell += " MISMATCH"
                if c.get("not_interleaved"):
                    cell += " (not interleaved)"
                cells.append(cell)
            else:
                cells.append("n/a")
        load = f"{r['foreign_cpu_pct']:.0f}%" if "foreign_cpu_pct" in r else "?"
        L.append(f"| {r['model']} | {r.get('gflops', 0):.2f} | {fmt_ms(r.get('floor_ms'))} | "
                 + " | ".join(cells) + f" | {load} |")
    L.append("")
    L.extend(korch_summary(results))
    L.extend(bf16_summary(results))
    for r in results:
        L.append(f"### {r['model']}")
        L.append("")
        noise = ""
        if "foreign_cpu_pct" in r:
            noise = (f"; other processes used {r['foreign_cpu_pct']}% of the CPUs during the "
                     f"rounds (steal {r['steal_pct']}%)")
            if r["foreign_cpu_pct"] > 10:
                noise += " **(noisy)**"
        L.append(f"{r.get('rounds', 0)} rounds, {r.get('bench_seconds', 0)} s{noise}; "
                 f"{r.get('gflops', 0):.2f} GFLOPs, {r.get('param_bytes', 0) / 1e6:.1f} MB "
                 f"weights, opset {r.get('opset')}; floor {fmt_ms(r.get('floor_ms'))} ms")
        L.append("")
        L.append("| contender | median ms | min–max ms | ratio vs ORT | output check | notes |")
        L.append("|---|---:|---:|---:|---|---|")
        for n in names:
            c = r["contenders"].get(n)
            if c is None:
                continue
            if "na" in c:
                L.append(f"| {n} | n/a ({c['na']}) | | | | |")
                continue
            chk = "-"
            if "max_rel" in c and c["max_rel"] is not None:
                chk = (f"{'ok' if c['check_ok'] else '**MISMATCH**'} vs "
                       f"{c.get('check_against', '?')}: max abs {c['max_abs']:.2g}, "
                       f"rel {c['max_rel']:.2g}")
            elif c.get("check_error"):
                chk = f"**MISMATCH** {c['check_error']}"
            notes = []
            if "optimize_s" in c:
                if c.get("cold"):
                    notes.append(f"optimise {c['optimize_s']:.1f} s cold, "
                                 f"{c.get('warm_optimize_s', float('nan')):.1f} s warm")
                else:
                    notes.append(f"optimise {c['optimize_s']:.1f} s")
            if "kernels" in c:
                notes.append(f"{c['kernels']} kernels ({c['fused']} fused) for "
                             f"{c['primitives']} primitives")
            if "candidates" in c:
                notes.append(f"{c['candidates']} candidates")
            if "predicted_ms" in c:
                mp = c.get("measured_vs_predicted")
                notes.append(f"predicted {fmt_ms(c['predicted_ms'])} ms"
                             + (f" (measured/predicted {mp:.2f})" if mp else ""))
            if c.get("note"):
                notes.append(c["note"])
            elif c.get("kind") == "proc":
                notes.append(f"median of per-process medians (--bench {c.get('per_process_bench_k')})")
            if "load_s" in c:
                notes.append(f"load {c['load_s']:.2f} s")
            if c.get("precision"):
                notes.append(f"runs in {c['precision']}")
            ratio = f"{c['ratio_vs_ort']:.2f}" if "ratio_vs_ort" in c else "-"
            L.append(f"| {n} | {fmt_ms(c.get('median_ms'))} | {fmt_ms(c.get('min_ms'))}–"
                     f"{fmt_ms(c.get('max_ms'))} | {ratio} | {chk} | {'; '.join(notes)} |")
        L.append("")
    return "\n".join(L) + "\n"


def chart(results, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, NullLocator
    names = contender_order(results)
    models = [r["model"] for r in results]
    palette = {"ORT": "#7f7f7f", "PyTorch": "#ff7f0e"}
    others = ["#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#d62728", "#8c564b"]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(models) + 2), 5))
    width = 0.8 / max(len(names), 1)
    ys_all = [1.0]
    handles = []
    k = 0
    for j, n in enumerate(names):
        color = palette.get(n)
        if color is None:
            color = others[k % len(others)]
            k += 1
        xs, ys = [], []
        for i, r in enumerate(results):
            c = r["contenders"].get(n, {})
            x = i + (j - (len(names) - 1) / 2) * width
            if "ratio_vs_ort" in c:
                xs.append(x)
                ys.append(c["ratio_vs_ort"])
            else:
                ax.text(x, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6,
                        color="grey", transform=ax.get_xaxis_transform())
        ys_all += ys
        handles.append(Patch(color=color, label=n if ys else f"{n} (n/a)"))
        bars = ax.bar(xs, ys, width, color=color)
        for b, y in zip(bars, ys):
            ax.text(b.get_x() + b.get_width() / 2, y, f"{y:.2f}", ha="center", va="bottom",
                    fontsize=6)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(range(len(models)))
    labels = []
    for r in results:
        o = r["contenders"].get("ORT", {}).get("median_ms")
        labels.append(f"{r['model']}\nORT {fmt_ms(o)} ms" if o else r["model"])
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("latency / ORT latency (median; lower is better)")
    ax.set_yscale("log")
    lo, hi = min(0.25, min(ys_all) / 1.5), max(ys_all) * 1.8
    ax.set_ylim(lo, hi)
    ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128) if lo <= t <= hi]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_yticklabels([f"{t:g}" for t in ticks])
    ax.set_title(title, fontsize=9)
    ax.legend(handles=handles, fontsize=8, ncol=min(len(names), 3), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------- main


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated model names (default: the nine full models)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=0,
                    help="rounds per model (default: auto, see --time-per-model)")
    ap.add_argument("--min-runs", type=int, default=7)
    ap.add_argument("--max-runs", type=int, default=30)
    ap.add_argument("--time-per-model", type=float, default=60.0,
                    help="auto rounds: about this many seconds of timed rounds per model")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--gap-ms", type=float, default=5.0,
                    help="idle gap between two contenders' runs, so that the spinning "
                         "worker threads of one (ORT's pool, libgomp) have parked before the "
                         "next starts")
    ap.add_argument("--contenders", default="ort,torch,openvino,korch",
                    help="of ort, torch, openvino (two contenders: FP32 forced, and OpenVINO's "
                         "default precision), korch, korch-bf16 (korch-optimal with --precision bf16; "
                         "AVX512_BF16 CPUs only)")
    ap.add_argument("--nice", type=lambda v: None if v == "none" else int(v),
                    default=-20 if os.geteuid() == 0 else None,
                    help="scheduling niceness for the harness and everything it starts "
                         "(default -20 when root: on a shared machine the benchmark then "
                         "wins the CPUs from other tenants' builds; 'other load' still "
                         "reports what they used; 'none' leaves it alone)")
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--korch-max-run-s", type=float, default=60.0,
                    help="korch contenders whose first (checking) run takes longer are n/a")
    ap.add_argument("--korch-max-round-s", type=float, default=10.0,
                    help="a korch contender whose `run --bench K` process takes longer is "
                         "not interleaved; its warm-up process's numbers are reported")
    ap.add_argument("--korch-strategies", default="none,greedy,optimal",
                    help="plans to build with `korch optimize --strategy S`; 'onnx' runs "
                         "the model file directly")
    ap.add_argument("--korch-bench-k", type=int, default=5)
    ap.add_argument("--korch-db", default=os.path.join(ROOT, "build", "bench", "profile.db"))
    ap.add_argument("--korch-cold", action="store_true",
                    help="optimise each model from an empty profile database and kernel "
                         "cache of its own (build/bench/MODEL.profile.db), time it, then "
                         "time a warm re-run; the other strategies reuse that database")
    ap.add_argument("--korch-budget", type=float, default=None,
                    help="--budget seconds passed to korch optimize")
    ap.add_argument("--torch-blas",
                    default=os.path.join(ROOT, "build", "openblas", "usr", "lib",
                                         "x86_64-linux-gnu", "openblas-openmp"),
                    help="folder with an OpenBLAS libblas.so.3 to preload for PyTorch, or "
                         "'system' (see preload_blas)")
    ap.add_argument("--openblas-coretype", default="auto",
                    help="OPENBLAS_CORETYPE for PyTorch's BLAS ('auto': SkylakeX on AVX-512 "
                         "machines, else OpenBLAS's own detection)")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--probe", default=os.path.join(ROOT, "build", "bench", "probe"))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    ap.add_argument("--chart", default=os.path.join(ROOT, "bench", "results-latest.png"))
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results-latest.json"))
    ap.add_argument("--no-record", action="store_true",
                    help="print the report only; do not touch RESULTS.md/png/json")
    ap.add_argument("--command", default=None, help="command line to record (bench.sh sets it)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.contenders = set(args.contenders.split(","))
    args.korch_strategies = [s for s in args.korch_strategies.split(",") if s]
    if args.command is None:
        args.command = "python -m bench.harness " + " ".join(shlex.quote(a) for a in argv)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so atexit handlers run
    os.makedirs(args.work, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    try:
        with open("/proc/loadavg") as fh:
            args.loadavg = " ".join(fh.read().split()[:3])
    except OSError:
        args.loadavg = "?"
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    args.nice_applied = apply_nice(args.nice)
    args.blas = preload_blas(args)   # before anything imports numpy or torch
    global np
    import numpy as np  # noqa: F811

    log(f"probes ({args.probe}) ...")
    meter = CpuMeter()
    probes = run_probes(args.probe, args.threads)
    probes.update(meter.stop())
    probes["cores_start"] = core_probe(args.probe)
    for k, v in probes.items():
        if isinstance(v, dict):
            log(f"  {k}: {v.get('best', v.get('error'))} {v.get('unit', '')}")
    if probes.get("suspect"):
        log("  suspect: vCPUs may share a physical core")
    vers = versions()
    vers["torch_blas"] = (f"{args.blas}; mapped: {mapped_blas()}; torch Linear 197x768x3072 "
                          f"{torch_sgemm_probe(args.threads):.0f} GFLOP/s")
    log("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))

    results = []
    for m in args.models:
        try:
            results.append(bench_model(m, args, probes))
        except Exception as e:  # noqa: BLE001 - one model must not stop the others
            traceback.print_exc()
            results.append({"model": m, "gflops": 0, "contenders": {
                "ORT": {"na": f"model failed: {e}"}}})
        r = results[-1]
        log(f"{m}: " + ", ".join(
            f"{n} {fmt_ms(c['median_ms'])} ms" if "median_ms" in c else f"{n} n/a"
            for n, c in r["contenders"].items()))
    elapsed = time.perf_counter() - t0
    probes["cores_end"] = core_probe(args.probe)
    md = markdown(results, probes, vers, args, started, elapsed)
    print(md)
    if not args.no_record:
        with open(args.results, "a") as fh:
            fh.write("\n" + md)
        title = (f"korch bench {started.strftime('%Y-%m-%d')}, {args.threads} threads, "
                 f"{cpu_model()}" + (" [suspect]" if probes.get("suspect") else ""))
        try:
            chart(results, args.chart, title)
        except Exception as e:  # noqa: BLE001
            log(f"chart failed: {e}")
        with open(args.json, "w") as fh:
            json.dump({"started": started.isoformat(), "command": args.command,
                       "threads": args.threads, "cpu": cpu_model(), "probes": probes,
                       "versions": vers, "results": results}, fh, indent=1)
        log(f"appended to {args.results}; chart {args.chart}; data {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
