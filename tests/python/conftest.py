"""Shared fixtures of the Python tests (run by run_pytest.sh under CTest,
which sets KORCH_LIBRARY, KORCH_CLI, KORCH_TEST_MODELS, KORCH_TEST_WORK,
PYTHONPATH and a private XDG_CACHE_HOME).

Run by hand, after `make build` and the tiny models (ctest -R zoo/tiny_models):
    KORCH_LIBRARY=build/libkorch.so PYTHONPATH=python KORCH_TEST_MODELS=build/test-models \\
        python3 -m pytest tests/python
"""
import os
import shutil
import sys

import numpy as np
import pytest

SOURCE = os.environ.get("KORCH_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(SOURCE, "build")
os.environ.setdefault("KORCH_LIBRARY", os.path.join(BUILD, "libkorch.so"))
if os.path.join(SOURCE, "python") not in sys.path:
    sys.path.insert(0, os.path.join(SOURCE, "python"))

MODELS = os.environ.get("KORCH_TEST_MODELS") or os.path.join(BUILD, "test-models")
WORK = os.environ.get("KORCH_TEST_WORK") or os.path.join(BUILD, "tests", "python", "work")
FIXTURES = os.path.join(SOURCE, "tests", "api", "fixtures")
# the model of the shared plan (test_optimize.py::test_optimize_writes_plan)
PLAN_MODEL = "mobilenetv2_tiny"
PLAN = os.path.join(WORK, "plan", PLAN_MODEL + ".plan")


def zoo_model(name):
    """(path, feeds) of a tiny zoo model; skips without the models."""
    path = os.path.join(MODELS, name + ".onnx")
    if not os.path.exists(path):
        pytest.skip("no tiny zoo models in %s (ctest -R zoo/tiny_models builds them)" % MODELS)
    prefix = name + ".input."
    feeds = {f[len(prefix):-4]: np.load(os.path.join(MODELS, f)) for f in sorted(os.listdir(MODELS))
             if f.startswith(prefix) and f.endswith(".npy")}
    return path, feeds


def zoo_names():
    if not os.path.isdir(MODELS):
        pytest.skip("no tiny zoo models in %s (ctest -R zoo/tiny_models builds them)" % MODELS)
    return sorted(f[:-5] for f in os.listdir(MODELS) if f.endswith("_tiny.onnx"))


def max_error(got, want):
    """Largest difference relative to the output's largest magnitude (as
    tests/fission/ort_check.py measures it)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    if not want.size:
        return 0.0
    if want.dtype.kind != "f":
        return float(np.max(got != want))
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(float(np.max(np.abs(want))), 1e-30))


def ort_outputs(path, feeds):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime comes with the venv of scripts/python-env.sh")
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.fixture
def workdir(request):
    """An empty folder of this test's own, inside the build tree."""
    d = os.path.join(WORK, request.node.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


@pytest.fixture
def plan():
    """(plan path, feeds) of the shared plan; fails (not skips) without it:
    its set-up test failed."""
    _, feeds = zoo_model(PLAN_MODEL)
    assert os.path.exists(PLAN), "no plan at %s: python/test_optimize/test_optimize_writes_plan failed or did not run" % PLAN
    return PLAN, feeds


def pytest_sessionfinish(session, exitstatus):
    # CTest reads exit 77 as skipped: a test pytest skipped is not a pass
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter is not None and reporter.stats.get("skipped") and not reporter.stats.get("passed"):
        session.exitstatus = 77
