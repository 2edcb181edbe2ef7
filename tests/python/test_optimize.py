"""korch.optimize: the plan it writes runs and matches the reference
executor; its report, progress and errors. Optimisations here use
estimate=True (nothing timed: a plan that does not depend on the machine's
load) and no wall-clock limit on the binary programs (docs/testing.md)."""
import os

import numpy as np
import pytest

import korch
from conftest import FIXTURES, PLAN, PLAN_MODEL, max_error, zoo_model

SMALL = os.path.join(FIXTURES, "small_net.onnx")
NO_LIMIT = 1e6


def test_optimize_writes_plan():
    """Also the set-up of the fixture python_plan: the plan other tests run."""
    path, feeds = zoo_model(PLAN_MODEL)
    os.makedirs(os.path.dirname(PLAN), exist_ok=True)
    if os.path.exists(PLAN):
        os.remove(PLAN)
    lines = []
    r = korch.optimize(path, PLAN, threads=2, estimate=True, time_limit=NO_LIMIT, progress=lines.append)
    assert os.path.exists(PLAN) and r.plan_path == PLAN
    assert r.strategy == "optimal" and r.predicted_ms > 0 and r.seconds > 0
    assert 0 < r.kernels <= r.primitives and 0 <= r.fused_kernels <= r.kernels
    # the lines `korch optimize` prints, the last two with the report's numbers
    assert lines[0].startswith("model: ") and "%d primitives" % r.primitives in lines[0]
    assert any(line.startswith("verification: ") for line in lines)
    assert lines[-2] == ("plan: optimal strategy, %d kernels (%d fused) for %d primitives, predicted %.4f ms; "
                         "written to %s" % (r.kernels, r.fused_kernels, r.primitives, r.predicted_ms, PLAN))
    assert lines[-1].startswith("optimize time: ")
    # the plan runs with its kernels and agrees with the reference executor
    want = korch.InferenceSession(path).run(None, feeds)
    got = korch.InferenceSession(PLAN).run(None, feeds)
    for g, w in zip(got, want):
        assert max_error(g, w) <= 1e-3


def test_optimize_prints_like_the_cli(workdir, capsys):
    plan = os.path.join(workdir, "small.plan")
    r = korch.optimize(SMALL, plan, strategy="none", threads=1, estimate=True, time_limit=NO_LIMIT,
                       db=os.path.join(workdir, "profile.db"))
    out = capsys.readouterr().out
    assert out.startswith("model: 18 operators -> ") and "plan: none strategy, %d kernels" % r.kernels in out
    assert r.strategy == "none" and r.fused_kernels == 0 and r.kernels == r.primitives
    x = np.load(os.path.join(FIXTURES, "small_net.x.npy"))
    want = korch.InferenceSession(SMALL).run(None, {"x": x})
    for g, w in zip(korch.InferenceSession(plan).run(None, {"x": x}), want):
        assert max_error(g, w) <= 1e-3
    # quiet
    korch.optimize(SMALL, plan, strategy="none", threads=1, estimate=True, time_limit=NO_LIMIT, progress=False)
    assert capsys.readouterr().out == ""


def test_optimize_callback_exception_is_raised_after(workdir):
    class Stop(Exception):
        pass

    def boom(line):
        raise Stop(line)

    plan = os.path.join(workdir, "small.plan")
    with pytest.raises(Stop, match="^model: "):
        korch.optimize(SMALL, plan, strategy="greedy", threads=1, estimate=True, time_limit=NO_LIMIT, progress=boom)
    # the optimisation itself finished: the plan is there
    assert os.path.exists(plan)


def test_optimize_errors(workdir):
    plan = os.path.join(workdir, "x.plan")
    with pytest.raises(korch.FileError, match="absent.onnx"):
        korch.optimize(os.path.join(workdir, "absent.onnx"), plan, progress=False)
    with pytest.raises(korch.InvalidArgumentError, match="strategy"):
        korch.optimize(SMALL, plan, strategy="best", progress=False)
    with pytest.raises(korch.InvalidArgumentError, match="budget"):
        korch.optimize(SMALL, plan, budget=-1, progress=False)
    with pytest.raises(korch.InvalidArgumentError, match="progress"):
        korch.optimize(SMALL, plan, progress="yes")
    with pytest.raises(korch.InvalidArgumentError, match="threads"):
        korch.optimize(SMALL, plan, threads=-2, progress=False)
    # an unwritable plan path: the C library's I/O error names it
    with pytest.raises(korch.FileError, match="no-such-dir"):
        korch.optimize(SMALL, os.path.join(workdir, "no-such-dir", "x.plan"), strategy="none", estimate=True,
                       time_limit=NO_LIMIT, progress=False)
    assert not os.path.exists(plan)


def _has_avx512_bf16():
    with open("/proc/cpuinfo") as fh:
        return "avx512_bf16" in fh.read()


def test_optimize_precision(workdir):
    """precision="bf16" and "bf16-all" (docs/precision.md): the plan records
    it and runs close to, but not exactly as, the float32 reference; refused
    where the CPU has no AVX512_BF16; another value is an argument error."""
    plan = os.path.join(workdir, "bf16.plan")
    with pytest.raises(korch.InvalidArgumentError, match="precision"):
        korch.optimize(SMALL, plan, precision="fp16", progress=False)
    if not _has_avx512_bf16():
        with pytest.raises(korch.UnsupportedError, match="AVX512_BF16"):
            korch.optimize(SMALL, plan, precision="bf16", estimate=True, time_limit=NO_LIMIT, progress=False)
        assert not os.path.exists(plan)
        return
    path, feeds = zoo_model(PLAN_MODEL)
    lines = []
    korch.optimize(path, plan, threads=2, estimate=True, time_limit=NO_LIMIT, progress=lines.append,
                   precision="bf16")
    with open(plan, "rb") as fh:
        text = fh.read().split(b"\0", 1)[0].decode()
    assert any(ln.startswith("fission ") and "precision=bf16" in ln for ln in text.splitlines())
    assert any("off the float32 reference" in ln for ln in lines)
    want = korch.InferenceSession(path).run(None, feeds)
    got = korch.InferenceSession(plan).run(None, feeds)
    errors = [max_error(g, w) for g, w in zip(got, want)]
    assert max(errors) > 0, "the bf16 plan computed the float32 result exactly"
    assert max(errors) <= 0.05, errors
    # "bf16-all": every linear primitive bf16, no per-primitive choice (an
    # estimated plan times nothing to choose by, so neither one times here)
    assert not any(ln.startswith("precision: timing") for ln in lines)
    plan_all = os.path.join(workdir, "bf16_all.plan")
    korch.optimize(path, plan_all, threads=2, estimate=True, time_limit=NO_LIMIT, progress=False,
                   precision="bf16-all")
    with open(plan_all, "rb") as fh:
        fission = [ln for ln in fh.read().split(b"\0", 1)[0].decode().splitlines() if ln.startswith("fission ")]
    assert fission and "precision=bf16" in fission[0] and "fp32-linear=" not in fission[0], fission
