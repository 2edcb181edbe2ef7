"""Single-operator models vs ONNX Runtime and OpenVINO FP32 (issue 20).

Builds single-operator models from code (onnx.helper, fixed seeds),
optimizes each with korch (a private profile database and kernel cache
under build/single-ops/), then times, in interleaved rounds in the same
minutes:

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

Two sets of models (--set; --models picks any by name instead):
  ops      the five of issue 20's operator table: depthwise, 1x1 and 3x3
           convs, softmax 8192x1024, the conv test model
  classes  issue 20's memory-bound shape classes: softmax and log-softmax
           over long (1k-32k) and short (attention, 197) rows, layer,
           instance and group norm, reductions over the inner and the outer
           axis, 2-D to 5-D transposes, concats along axis 1 and the last
           axis, elementwise chains with broadcasts, a depthwise conv with a
           folded-BatchNorm bias and ReLU6 epilogue, nearest and linear Resize
  all      both
The default is ops, so the commands recorded in RESULTS.md before the
classes existed still time what they timed.

    build/venv/bin/python bench/kernels/single_ops.py [--set ops|classes|all] [--rounds 7] [--bench-k 20]
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


def _rand(shape, seed, scale=1.0, offset=0.0):
    """offset + scale * N(0, 1) of `shape`, float32, from its own fixed seed."""
    return (offset + scale * np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def _chain_model(name, feeds, out_shape, steps, inits=None, opset=OPSET):
    """A chain of nodes, the form of every model here. feeds (graph input
    name -> float32 array) and inits (initializer name -> array) are the
    leaves; each step (op, extra inputs[, attributes]) takes the previous
    step's value (the first feed for the first step), then its extra inputs
    ("" leaves an optional input out). The values are named c, c1, c2, ...;
    the last step writes the graph output y of shape out_shape. Returns
    (graph, feeds, opset), what write_model takes."""
    from onnx import TensorProto, helper, numpy_helper
    nodes, prev = [], next(iter(feeds))
    for i, (op, extra, *attrs) in enumerate(steps):
        out = "y" if i == len(steps) - 1 else ("c" if i == 0 else f"c{i}")
        nodes.append(helper.make_node(op, [prev] + list(extra), [out], **(attrs[0] if attrs else {})))
        prev = out
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape))
                           for k, v in feeds.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
                          [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return g, feeds, opset


def _one_node(name, op, shapes, out_shape, inits=None, extra=None, opset=OPSET, scale=1.0, **attrs):
    """One `op` node over random feeds (input name -> shape; the i-th drawn
    with seed i) and then inits, or the inputs `extra` names after the first
    feed when given (for optional inputs left out)."""
    feeds = {k: _rand(s, i, scale) for i, (k, s) in enumerate(shapes.items())}
    if extra is None:
        extra = list(feeds)[1:] + list(inits or {})
    return _chain_model(name, feeds, out_shape, [(op, extra, attrs)], inits, opset)


def _conv_model(name, n, c, h, w, m, k, group=1, pad=1, act=None, bn=False, seed=0):
    """Conv with bias, then act: None, "relu" or "relu6" (Clip(0, 6)). bn
    folds a random inference BatchNormalization into the weights and bias,
    as exporters do, so the graph holds only the conv and its epilogue."""
    rng = np.random.default_rng(seed)
    wt = (rng.standard_normal((m, c // group, k, k)) / np.sqrt(c // group * k * k)).astype(np.float32)
    b = (0.1 * rng.standard_normal(m)).astype(np.float32)
    if bn:
        gamma = 1 + 0.1 * rng.standard_normal(m)
        beta, mean = 0.1 * rng.standard_normal((2, m))
        s = gamma / np.sqrt(rng.uniform(0.1, 1.0, m) + 1e-5)  # small running variances: some outputs pass 6
        wt = (wt * s[:, None, None, None]).astype(np.float32)
        b = ((b - mean) * s + beta).astype(np.float32)
    ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    inits = {"w": wt, "b": b}
    steps = [("Conv", ["w", "b"], dict(kernel_shape=[k, k], pads=[pad] * 4, group=group))]
    if act == "relu":
        steps.append(("Relu", []))
    elif act == "relu6":
        inits.update(lo=np.array(0, np.float32), hi=np.array(6, np.float32))
        steps.append(("Clip", ["lo", "hi"]))
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    return _chain_model(name, {"x": x}, [n, m, ho, wo], steps, inits)


def _softmax_model(name, *shape, op="Softmax"):
    """Softmax or LogSoftmax over the last axis; inputs 4 N(0, 1), so rows
    have a few dominant entries and exp() is exercised over a wide range."""
    return _one_node(name, op, {"x": shape}, shape, scale=4, axis=-1)


def _norm_model(name, op, shape, nparam, opset=OPSET, **attrs):
    """LayerNormalization or InstanceNormalization with random scale and bias of nparam."""
    inits = {"gamma": _rand(nparam, 101, 0.1, 1.0), "beta": _rand(nparam, 102, 0.1)}
    return _one_node(name, op, {"x": shape}, shape, inits, opset=opset, epsilon=1e-5, **attrs)


def _group_norm_model(name, n, c, h, w, groups):
    """GroupNormalization as exporters write it below opset 18 (the installed
    onnx 1.12 stops at opset 17): Reshape to [N, G, -1], InstanceNormalization
    with unit scale and zero bias, Reshape back, per-channel Mul and Add."""
    shape = (n, c, h, w)
    inits = {"gshape": np.array([n, groups, -1], np.int64), "ones": np.ones(groups, np.float32),
             "zeros": np.zeros(groups, np.float32), "xshape": np.array(shape, np.int64),
             "gamma": _rand((c, 1, 1), 101, 0.1, 1.0), "beta": _rand((c, 1, 1), 102, 0.1)}
    steps = [("Reshape", ["gshape"]), ("InstanceNormalization", ["ones", "zeros"], dict(epsilon=1e-5)),
             ("Reshape", ["xshape"]), ("Mul", ["gamma"]), ("Add", ["beta"])]
    return _chain_model(name, {"x": _rand(shape, 0)}, shape, steps, inits)


def _transpose_model(name, shape, perm):
    return _one_node(name, "Transpose", {"x": shape}, [shape[p] for p in perm], perm=list(perm))


def _concat_model(name, shape, n, axis):
    """n inputs of the same shape, concatenated along axis (feeds, not initializers)."""
    out = list(shape)
    out[axis] *= n
    return _one_node(name, "Concat", {f"x{i}": shape for i in range(n)}, out, axis=axis)


def _resize_model(name, shape, scale, **attrs):
    """Resize by `scale` in H and W; no roi (an empty optional input)."""
    inits = {"scales": np.array([1, 1, scale, scale], np.float32)}
    out = list(shape[:2]) + [int(d * scale) for d in shape[2:]]
    return _one_node(name, "Resize", {"x": shape}, out, inits, extra=["", "scales"], **attrs)


def _silu_affine_model(name, shape):
    """x * Sigmoid(x * s + b), s and b per channel ([1, C, 1, 1] broadcasts)."""
    c = (1, shape[1], 1, 1)
    inits = {"s": _rand(c, 101, 0.5, 1.0), "b": _rand(c, 102, 0.1)}
    steps = [("Mul", ["s"]), ("Add", ["b"]), ("Sigmoid", []), ("Mul", ["x"])]
    return _chain_model(name, {"x": _rand(shape, 0)}, shape, steps, inits)


def _bias_relu_model(name, rows, cols):
    """Relu(x + b), b of one row broadcast over every row (a Linear's epilogue)."""
    steps = [("Add", ["b"]), ("Relu", [])]
    return _chain_model(name, {"x": _rand((rows, cols), 0)}, (rows, cols), steps, {"b": _rand(cols, 101)})


# name -> (what the table says, builder of that name). The conv test model
# is 20x16x50x40 with a 3x3 kernel as in the issue; its channel count out
# (16) and padding (none, the ONNX default) are this benchmark's choice.
OP_MODELS = {
    "dwconv3x3_relu": ("depthwise conv 3x3 + ReLU, 1x144x56x56",
                       lambda n: _conv_model(n, 1, 144, 56, 56, 144, 3, group=144, act="relu")),
    "conv1x1_256_64": ("conv 1x1 256->64, 56x56", lambda n: _conv_model(n, 1, 256, 56, 56, 64, 1, pad=0)),
    "conv3x3_64_64": ("conv 3x3 64->64, 56x56", lambda n: _conv_model(n, 1, 64, 56, 56, 64, 3)),
    "softmax_8192x1024": ("softmax over rows, 8192x1024", lambda n: _softmax_model(n, 8192, 1024)),
    "convtest_20x16x50x40": ("conv test model 20x16x50x40, 3x3, 16->16, no padding",
                             lambda n: _conv_model(n, 20, 16, 50, 40, 16, 3, pad=0)),
}

# Issue 20's memory-bound shape classes, one or more models each; the sizes
# are this benchmark's choice (common CNN and transformer activations).
NCHW112 = (1, 64, 112, 112)
CLASS_MODELS = {
    "softmax_2048x4096": ("softmax, long rows, 2048x4096", lambda n: _softmax_model(n, 2048, 4096)),
    "softmax_256x32768": ("softmax, long rows, 256x32768", lambda n: _softmax_model(n, 256, 32768)),
    "softmax_attn_12x197": ("softmax, short rows (attention), 1x12x197x197, axis -1",
                            lambda n: _softmax_model(n, 1, 12, 197, 197)),
    "logsoftmax_8192x1024": ("log-softmax over rows, 8192x1024",
                             lambda n: _softmax_model(n, 8192, 1024, op="LogSoftmax")),
    "layernorm_8192x768": ("LayerNormalization (opset 17), 8192x768, gamma/beta",
                           lambda n: _norm_model(n, "LayerNormalization", (8192, 768), 768, 17, axis=-1)),
    "layernorm_384x768": ("LayerNormalization (opset 17), 384x768, gamma/beta",
                          lambda n: _norm_model(n, "LayerNormalization", (384, 768), 768, 17, axis=-1)),
    "instnorm_64x112x112": ("InstanceNormalization, 1x64x112x112",
                            lambda n: _norm_model(n, "InstanceNormalization", NCHW112, 64)),
    "groupnorm_256x56x56_g32": ("group norm, 32 groups, 1x256x56x56 (decomposed: Reshape, "
                                "InstanceNorm, Reshape, Mul, Add)",
                                lambda n: _group_norm_model(n, 1, 256, 56, 56, 32)),
    "reducemean_inner_4096": ("ReduceMean, inner axis, 4096x4096 -> 4096x1",
                              lambda n: _one_node(n, "ReduceMean", {"x": (4096, 4096)}, (4096, 1), axes=[1],
                                                  keepdims=1)),
    "reducesum_outer_4096": ("ReduceSum, outer axis 0, 4096x4096 -> 1x4096",
                             lambda n: _one_node(n, "ReduceSum", {"x": (4096, 4096)}, (1, 4096),
                                                 {"axes": np.array([0], np.int64)}, keepdims=1)),
    "transpose2d_4096": ("transpose 2-D (1,0), 4096x4096",
                         lambda n: _transpose_model(n, (4096, 4096), (1, 0))),
    "transpose3d_64x512x512": ("transpose 3-D (0,2,1), 64x512x512",
                               lambda n: _transpose_model(n, (64, 512, 512), (0, 2, 1))),
    "transpose4d_heads": ("transpose 4-D (0,2,1,3), 1x384x12x64",
                          lambda n: _transpose_model(n, (1, 384, 12, 64), (0, 2, 1, 3))),
    "transpose_nchw_nhwc": ("transpose NCHW->NHWC (0,2,3,1), 1x64x112x112",
                            lambda n: _transpose_model(n, NCHW112, (0, 2, 3, 1))),
    "transpose5d": ("transpose 5-D (0,1,3,4,2), 1x16x32x32x32",
                    lambda n: _transpose_model(n, (1, 16, 32, 32, 32), (0, 1, 3, 4, 2))),
    "concat3_axis1": ("concat of 3 inputs, axis 1, 3x 1x64x112x112",
                      lambda n: _concat_model(n, NCHW112, 3, 1)),
    "concat3_lastaxis": ("concat of 3 inputs, last axis, 3x 1x64x112x112",
                         lambda n: _concat_model(n, NCHW112, 3, 3)),
    "silu_affine_64x112x112": ("x * Sigmoid(x*s + b), s, b [1,64,1,1], x 1x64x112x112",
                               lambda n: _silu_affine_model(n, NCHW112)),
    "bias_relu_4096x1024": ("Relu(x + b), row broadcast [4096,1024] + [1024]",
                            lambda n: _bias_relu_model(n, 4096, 1024)),
    "dwconv3x3_bn_relu6": ("depthwise conv 3x3 + folded BatchNorm bias + Clip(0,6), 1x96x112x112",
                           lambda n: _conv_model(n, 1, 96, 112, 112, 96, 3, group=96, act="relu6", bn=True)),
    "resize_nearest2x": ("Resize nearest 2x (asymmetric, floor), 1x64x56x56",
                         lambda n: _resize_model(n, (1, 64, 56, 56), 2, mode="nearest",
                                                 coordinate_transformation_mode="asymmetric",
                                                 nearest_mode="floor")),
    "resize_linear2x": ("Resize linear 2x (half_pixel), 1x64x56x56",
                        lambda n: _resize_model(n, (1, 64, 56, 56), 2, mode="linear",
                                                coordinate_transformation_mode="half_pixel")),
}
MODELS = {**OP_MODELS, **CLASS_MODELS}
SETS = {"ops": list(OP_MODELS), "classes": list(CLASS_MODELS), "all": list(MODELS)}


def write_model(name, work):
    """Writes WORK/NAME.onnx and one .npy per graph input; returns the model's
    path, its feeds, their files and the graph's output names (what korch
    run writes to --output-dir)."""
    import onnx
    from onnx import helper
    g, feeds, opset = MODELS[name][1](name)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="korch-single-ops")
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    files = {}
    for k, v in feeds.items():
        files[k] = os.path.join(work, f"{name}.{sanitize(k)}.npy")
        np.save(files[k], v)
    return path, feeds, files, [o.name for o in m.graph.output]


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
    path, feeds, files, outputs = write_model(name, work)
    cons = [Batched(OrtContender(path, feeds, args.threads), args.bench_k)]
    if not args.no_openvino:
        cons.append(Batched(OpenVinoContender(path, feeds, args.threads, "f32"), args.bench_k))
    for lay in args.layouts:
        cons.append(KorchLayout(args.korch, lay, path, files, outputs, work, args.threads, args.bench_k,
                                args.db, args.cache_dir, has_flag))
    res = {"name": name, "what": MODELS[name][0], "c": {}}
    ref = []

    def check(c, outs, r):
        if not ref:
            ref.extend(outs)
        _, rel, err = compare(outs, ref)
        r["rel"] = rel
        r["ok"] = err is None and rel is not None and rel <= 1e-3
        for k in ("predicted_ms", "plan_layout", "layout_line"):
            if getattr(c, k, None) is not None:
                r[k] = getattr(c, k)
        return f"max rel {rel}{'' if r['ok'] else ', MISMATCH'}"

    prepare_all(cons, res, name, check)
    run_rounds(cons, args.rounds, res)
    log(f"{name}: " + ", ".join(f"{n} {r.get('median', float('nan')):.3f}" for n, r in res["c"].items()))
    return res


def prepare_all(cons, res, name, check):
    """Prepares every contender; check(c, outputs, r) fills r (res["c"][name])
    from its outputs and returns the words logged. One that fails to prepare
    gets its error (reported as n/a) and stays out of the rounds."""
    for c in cons:
        r = res["c"].setdefault(c.name, {})
        try:
            outs = c.prepare()
            log(f"{name}: {c.name} ready ({check(c, outs, r)})")
        except Exception as e:  # noqa: BLE001 - report it in the table
            c.error = str(e)
            r["na"] = c.error
            log(f"{name}: {c.name} n/a: {c.error}")


def run_rounds(cons, rounds, res):
    """Warm-up, then `rounds` rounds in which every prepared contender
    (error None) runs once, the order rotated each round; a contender that
    fails drops out with its error. Fills res["c"][name] with median, lo,
    hi, n and res with the CpuMeter's reading; closes every contender."""
    live = [c for c in cons if c.error is None]
    for c in live:  # warm-up
        c.once()
    samples = {c.name: [] for c in live}
    meter = CpuMeter()
    for rnd in range(rounds):
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
    ap.add_argument("--set", default="ops", choices=list(SETS),
                    help="models to run: ops (issue 20's operator table), classes (its memory-bound shape "
                    "classes) or all; default ops")
    ap.add_argument("--models", default=None,
                    help="comma-separated models instead of --set, of " + ",".join(MODELS))
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
    names = [n for n in args.models.split(",") if n] if args.models is not None else SETS[args.set]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        ap.error(f"unknown models: {','.join(unknown)}" if unknown else "no models")
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
    results = [bench_one(n, args, args.work, has_flag) for n in names]
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
