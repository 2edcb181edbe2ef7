"""korch.optimize, korch.check and korch.info: `korch optimize`, `korch
check` and `korch info` as calls (C API: korch_optimize,
korch_model_describe)."""
import ctypes
import json
import os
import sys

from . import _lib
from ._errors import InvalidArgumentError, KorchError
from ._types import numpy_dtype, type_string
from .session import _shape_spec, _threads_arg

_lib_ = _lib.lib


class OptimizeReport:
    """What korch.optimize returns: the plan's path and strategy, its
    predicted latency (sum of the chosen kernels' profiled latencies, ms),
    kernel counts, the model's primitive count and the call's wall time."""

    __slots__ = ("plan_path", "strategy", "predicted_ms", "kernels", "fused_kernels", "primitives", "seconds")

    def __init__(self, plan_path, r):
        self.plan_path = plan_path
        self.strategy = r.strategy.decode()
        self.predicted_ms = r.predicted_ms
        self.kernels = r.kernels
        self.fused_kernels = r.fused_kernels
        self.primitives = r.primitives
        self.seconds = r.seconds

    def __repr__(self):
        return ("OptimizeReport(plan_path=%r, strategy=%r, predicted_ms=%.4f, kernels=%d, fused_kernels=%d, "
                "primitives=%d, seconds=%.1f)" % (self.plan_path, self.strategy, self.predicted_ms, self.kernels,
                                                   self.fused_kernels, self.primitives, self.seconds))


def _print_line(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def optimize(model_path, plan_path, strategy="optimal", threads=None, db=None, budget=None, progress=True,
             input_shapes=None, estimate=False, time_limit=None, embed=True, precision="fp32"):
    """Finds the fastest set of kernels for the ONNX model on this machine and
    writes the plan (`korch optimize MODEL -o PLAN`, with the CLI's defaults).

    strategy: "optimal" (the binary linear program), "greedy" or "none".
    threads: threads kernels are tuned and run with (None: all cores).
    db: profile database path (None: $XDG_CACHE_HOME/korch/profile.db).
    budget: bound on the total kernel tuning time, seconds (None: default).
    progress: True prints what the CLI prints (to sys.stdout, and the
    progress bar on a terminal's stderr); False is quiet; a callable gets
    each line (str) instead. An exception raised by the callable is raised
    again when the optimisation is over (it cannot stop it).
    input_shapes: {"name": (1, 3, 224, 224)} fixes symbolic dimensions.
    Shape buckets (one plan file holding a plan per shape, as `korch
    optimize --input-shape 'x=1x{4,8,16}'` makes it): a dimension given as
    a list of values, {"x": (1, [4, 8, 16])}, or the CLI's syntax,
    {"x": "1x{4,8,16}"} or {"x": "1x{16..512}"} (the powers of two from 16
    to 512); equal lists of two inputs are tied (one sequence length).
    InferenceSession then picks the bucket by the feed's shapes.
    estimate: latencies from a roofline model, nothing timed (quick, rough;
    `--estimate`). time_limit: wall clock for the binary programs, seconds
    (None: 120, the CLI's default). embed: the plan carries the model's
    graph and weights (default; it runs without the model file); False
    names the model by path instead (`--no-embed`, for huge models).
    precision: "fp32" (the model's own), "bf16": convolutions and matmuls
    on bfloat16 operands with float32 sums where that is measurably faster
    (each timed alone in both precisions; the others stay float32), or
    "bf16-all": every one in bf16 (`--precision`; needs a CPU with
    AVX512_BF16, else korch.UnsupportedError; docs/precision.md).

    The GIL is released while it runs. Calls take turns within a process
    (the solver is not thread-safe). Returns an OptimizeReport (with shape
    buckets: kernels, latencies and primitives summed over the buckets)."""
    if strategy not in ("optimal", "greedy", "none"):
        raise InvalidArgumentError("strategy must be 'optimal', 'greedy' or 'none', got %r" % (strategy,))
    if precision not in ("fp32", "bf16", "bf16-all"):
        raise InvalidArgumentError("precision must be 'fp32', 'bf16' or 'bf16-all', got %r" % (precision,))
    for name, value in (("budget", budget), ("time_limit", time_limit)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            raise InvalidArgumentError("%s must be a positive number of seconds or None, got %r" % (name, value))
    if progress is True:
        sink = _print_line
    elif progress is False or progress is None:
        sink = None
    elif callable(progress):
        sink = progress
    else:
        raise InvalidArgumentError("progress must be True, False or a callable, got %r" % (progress,))
    raised = []

    def on_line(_user, raw):
        if raised:
            return
        try:
            sink(raw.decode("utf-8", "replace"))
        except BaseException as e:  # noqa: B902 -- kept and raised after the C call (KeyboardInterrupt too)
            raised.append(e)

    callback = _lib.LOG_CALLBACK(on_line) if sink else _lib.LOG_CALLBACK()
    opts = _lib.OptimizeOptions(
        threads=_threads_arg(threads), strategy=strategy.encode(),
        db_path=os.fsencode(os.fspath(db)) if db is not None else None, budget_s=float(budget or 0),
        input_shapes=_shape_spec(input_shapes), log=callback, log_user=None, progress_bar=int(progress is True),
        time_limit_s=float(time_limit or 0), estimate=int(bool(estimate)), no_embed=int(not embed),
        precision=precision.encode())
    report = _lib.OptimizeReport()
    plan_path = os.fspath(plan_path)
    status = _lib_.korch_optimize(os.fsencode(os.fspath(model_path)), os.fsencode(plan_path), ctypes.byref(opts),
                                  ctypes.byref(report))
    if raised:
        raise raised[0]
    _lib.check_status(status)
    return OptimizeReport(plan_path, report)


def _describe(path, input_shapes):
    out = ctypes.c_void_p()
    _lib.check_status(_lib_.korch_model_describe(os.fsencode(os.fspath(path)), _shape_spec(input_shapes),
                                                 ctypes.byref(out)))
    try:
        text = ctypes.string_at(out.value).decode("utf-8", "surrogateescape")
    finally:
        _lib_.korch_string_free(out)
    d = json.loads(text)
    for key in ("inputs", "outputs"):
        for v in d[key]:
            code = v.pop("dtype")
            dt = numpy_dtype(code)
            v["type"] = type_string(code)
            v["dtype"] = dt.name if dt is not None else None
    return d


def info(path, input_shapes=None):
    """What `korch info` prints, as a dict: path, graph, ir_version, opset,
    inputs and outputs ([{name, shape, type, dtype}]), nodes_in_file, nodes
    (after constant folding), parameters, parameter_bytes, flops (one run),
    symbolic_inputs, operators ([{op, count, flops}], most frequent first).
    An ONNX file. With inputs whose symbolic dimensions input_shapes leaves
    open (symbolic_inputs > 0), shapes are as the file declares them (a
    symbolic dimension by name, an unknown one None) and nodes and flops
    are None.
    Raises a KorchError subclass when korch cannot load the model."""
    return _describe(path, input_shapes)


def check(path, input_shapes=None):
    """`korch check`: can korch run this ONNX model? Returns
    {"ok": True, "nodes", "nodes_after_folding", "inputs", "outputs"} (counts)
    and "shapes_checked" (False when inputs have symbolic dimensions that
    input_shapes leaves open: everything else was checked, and
    "nodes_after_folding" is None), or {"ok": False, "status":
    "KORCH_ERR_...", "error": "<the reason>"}."""
    try:
        d = _describe(path, input_shapes)
    except KorchError as e:
        return {"ok": False, "status": e.status, "error": e.message}
    return {"ok": True, "nodes": d["nodes_in_file"], "nodes_after_folding": d["nodes"], "inputs": len(d["inputs"]),
            "outputs": len(d["outputs"]), "shapes_checked": d["symbolic_inputs"] == 0}
