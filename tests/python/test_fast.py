"""korch._fast, the C extension that runs InferenceSession.run in one C call
(python/korch/_fast.c, docs/python.md "The run path"): that the suite uses
it, that it computes what the ctypes path computes (and ONNX Runtime), that
bad feeds are errors naming the input, and the output pool's promise.

Where a test is parametrized by path, "ctypes" is the fallback taken when
the extension is not built (forced here with korch.session._use_fast)."""
# ctest-fixtures: python_plan
import array
import gc
import os
import sys
import threading
import weakref

import numpy as np
import pytest

import korch
import korch.session
from conftest import FIXTURES, max_error, ort_outputs, zoo_model

SMALL = os.path.join(FIXTURES, "small_net.onnx")  # x 1x3x16x16 -> y 1x8, pooled 1x8x8x8


def small_input():
    return np.load(os.path.join(FIXTURES, "small_net.x.npy"))


def session(path, fast, **kw):
    saved = korch.session._use_fast
    korch.session._use_fast = fast
    try:
        s = korch.InferenceSession(path, **kw)
    finally:
        korch.session._use_fast = saved
    assert (s._runner is not None) == fast
    return s


PATHS = pytest.mark.parametrize("fast", [True, False], ids=["fast", "ctypes"])


def test_the_extension_is_built_and_used():
    # the suite must exercise the C path: a missing extension fails here,
    # it does not quietly fall back
    assert korch.fast_path, "korch._fast not used: %s" % korch.fast_path_info
    want = os.environ.get("KORCH_FAST_MODULE")
    if want:  # under CTest: the module of this build tree
        assert os.path.samefile(korch.fast_path_info, want)
    s = korch.InferenceSession(SMALL, threads=1)
    assert type(s._runner).__module__ == "korch._fast" and type(s._runner).__name__ == "Runner"
    # run() goes through it: with its C call skipped, nothing is computed
    x = small_input()
    y0 = s.run(["y"], {"x": x})[0].copy()
    s._runner.bench_mode = 2
    assert s._runner.bench_mode == 2
    y1 = s.run(["y"], {"x": x + 1})[0]  # the pool's array of the first run, untouched
    assert np.array_equal(y1, y0)
    s._runner.bench_mode = 1
    y2 = s.run(["y"], {"x": x + 1})[0]
    assert not np.array_equal(y2, y0) and s._runner.last_run_ns > 0
    with pytest.raises(ValueError):
        s._runner.bench_mode = 3


def test_fast_path_matches_ctypes_and_onnxruntime():
    """Bit for bit the ctypes path's outputs (same library, one thread), on
    every tiny zoo model that has a single input set; and ONNX Runtime's
    within the zoo tests' tolerance on one of them."""
    path, feeds = zoo_model("mobilenetv2_tiny")
    fast = session(path, True, threads=1).run(None, feeds)
    slow = session(path, False, threads=1).run(None, feeds)
    assert len(fast) == len(slow) > 0
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype and np.array_equal(f, s)
    for got, want in zip(fast, ort_outputs(path, feeds)):
        assert max_error(got, want) < 1e-4


def test_plan_through_both_paths(plan):
    path, feeds = plan
    f = session(path, True, threads=1)
    c = session(path, False, threads=1)
    for k in range(3):  # the input changes between runs: read again each time
        fd = {n: v * (1 + 0.5 * k) for n, v in feeds.items()}
        for a, b in zip(f.run(None, fd), c.run(None, fd)):
            assert np.array_equal(a, b)


@PATHS
def test_feed_errors_name_the_input_and_do_not_crash(fast):
    s = session(SMALL, fast)
    x = small_input()
    cases = [
        ({"x": x.astype(np.float64)}, r"input \"x\" expects tensor\(float\) \(float32\), got float64"),
        ({"x": x.astype(np.int32)}, r"input \"x\" expects tensor\(float\) \(float32\), got int32"),
        ({"x": x.astype(">f4")}, r"input \"x\" expects tensor\(float\) \(float32\), got >f4"),
        ({"x": x[0]}, r"input \"x\" expects shape \(1, 3, 16, 16\), got \(3, 16, 16\)"),
        ({"x": x.reshape(1, 3, 256)}, r"input \"x\" expects shape \(1, 3, 16, 16\), got \(1, 3, 256\)"),
        ({"x": np.float32(1.0)}, r"input \"x\" expects shape \(1, 3, 16, 16\), got \(\)"),
        ({"x": x.tobytes()}, r"input \"x\" expects tensor\(float\)"),  # right size, no dtype: refused
        ({"x": "text"}, r"input \"x\" expects tensor\(float\)"),
        ({"x": None}, r"input \"x\" expects tensor\(float\)"),
        ({"z": x}, r"no input named 'z'; input 'x' not given; the inputs are 'x'"),
        ({}, r"input 'x' not given"),
        ({"x": x, "extra": x}, r"no input named 'extra'; the inputs are 'x'"),
        ([x], r"input_feed must be a dict"),
        (None, r"input_feed must be a dict"),
    ]
    for feed, message in cases:
        with pytest.raises(korch.InvalidArgumentError, match=message):
            s.run(None, feed)
    with pytest.raises(korch.InvalidArgumentError, match=r"no output named 'nope'; the outputs are 'y', 'pooled'"):
        s.run(["y", "nope"], {"x": x})
    with pytest.raises(korch.InvalidArgumentError, match=r"no output named \[1\]"):
        s.run([[1]], {"x": x})  # unhashable
    with pytest.raises(korch.InvalidArgumentError, match="output_names must be a list of names or None, got int"):
        s.run(5, {"x": x})
    # after all that, the session runs and is right
    want = session(SMALL, not fast).run(None, {"x": x})
    for got, w in zip(s.run(None, {"x": x}), want):
        assert np.array_equal(got, w)


@PATHS
def test_buffer_feeds_bound_without_copy(fast):
    """Any C-contiguous buffer of the right kind, item size and shape is
    bound as it is (fast path: the buffer protocol); a mapping that is not
    a dict and a strided view work too (converted)."""
    s = session(SMALL, fast)
    x = small_input()
    want = s.run(None, {"x": x})
    readonly = np.frombuffer(x.tobytes(), np.float32).reshape(x.shape)  # not writable: inputs are only read
    assert not readonly.flags.writeable
    for feed in (readonly, x[None][0], np.ascontiguousarray(np.asfortranarray(x))):
        for g, w in zip(s.run(None, {"x": feed}), want):
            assert np.array_equal(g, w)
        assert s._bound_inputs()[0] is feed
    # a strided view and a non-dict mapping: copied for that run only
    strided = np.empty((1, 3, 16, 32), np.float32)[..., ::2]
    strided[...] = x
    for g, w in zip(s.run(None, {"x": strided}), want):
        assert np.array_equal(g, w)
    assert s._bound_inputs()[0] is None

    class Feed:
        def keys(self):
            return {"x"}

        def __iter__(self):
            return iter(["x"])

        def __getitem__(self, k):
            return x

    for g, w in zip(s.run(None, Feed()), want):
        assert np.array_equal(g, w)
    if fast:  # a 1-D array.array of floats: the buffer protocol alone
        r = session(os.path.join(FIXTURES, "small_net.onnx"), True)
        flat = array.array("f", x.ravel().tolist())
        with pytest.raises(korch.InvalidArgumentError, match="expects shape"):
            r.run(None, {"x": flat})  # its shape is (768,): refused, not reinterpreted


@PATHS
def test_held_outputs_never_written(fast):
    """The pool's promise on both paths: what the caller holds (a view
    included) stays as its run left it."""
    s = session(SMALL, fast, threads=1)
    x = small_input()
    ref = session(SMALL, not fast, threads=1)
    want = [[a.copy() for a in ref.run(None, {"x": x + k})] for k in range(6)]
    held = s.run(None, {"x": x})
    view = s.run(None, {"x": x + 1})[1][0, 3:5]
    kept = [s.run(None, {"x": x + k}) for k in range(2, 6)]
    for got, w in zip(held, want[0]):
        assert np.array_equal(got, w)
    assert np.array_equal(view, want[1][1][0, 3:5])
    for k, r in enumerate(kept, start=2):
        for got, w in zip(r, want[k]):
            assert np.array_equal(got, w)


@PATHS
def test_outputs_fed_back_as_inputs(fast, workdir):
    """A recurrent loop, y = run(x=y): the output held as the next input is
    read, never written (the next output gets other memory)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "neg",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 500])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 500])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(workdir, "neg.onnx")
    onnx.save(model, path)
    s = session(path, fast, threads=1)
    x0 = np.linspace(-1, 1, 1000, dtype=np.float32).reshape(2, 500)
    y = x0
    history = []
    for k in range(6):
        before = y.copy()
        (out,) = s.run(None, {"x": y})
        assert np.array_equal(y, before) and not np.shares_memory(out, y)
        assert np.array_equal(out, -before)
        history.append(out)
        y = out
    for k, h in enumerate(history):  # all held: none written again
        assert np.array_equal(h, x0 if k % 2 else -x0)

def test_run_alone_outlives_the_session_object():
    """sess.run is the runner's own method: kept alone, it still runs (the
    runner owns the C session), and the results list a caller changed
    before dropping it is not trusted."""
    x = small_input()
    want = korch.InferenceSession(SMALL, threads=1).run(None, {"x": x})
    s = korch.InferenceSession(SMALL, threads=1)
    assert s.run.__self__ is s._runner
    run = s.run
    del s
    gc.collect()
    for _ in range(2):
        for g, w in zip(run(None, {"x": x}), want):
            assert np.array_equal(g, w)
    for change in (lambda r: r.pop(), lambda r: r.append(x), lambda r: r.reverse(), lambda r: r.clear(),
                   lambda r: r.__setitem__(0, r[1])):
        r = run(None, {"x": x + 1})
        change(r)
        del r
        y, pooled = run(None, {"x": x})
        assert np.array_equal(y, want[0]) and np.array_equal(pooled, want[1])
        del y, pooled


def test_no_reference_leaks():
    """Repeated runs leave the caller's objects' reference counts as they
    were, and closing the session lets its arrays go."""
    s = korch.InferenceSession(SMALL, threads=1)
    x = small_input()
    s.run(None, {"x": x})  # bound: the session holds x once
    feed = {"x": x}
    refs_x, refs_feed = sys.getrefcount(x), sys.getrefcount(feed)
    for _ in range(300):
        s.run(None, feed)
        s.run(["pooled"], feed)
    assert sys.getrefcount(x) == refs_x and sys.getrefcount(feed) == refs_feed
    out = s.run(None, feed)
    gone = [weakref.ref(a) for a in out] + [weakref.ref(x)]
    del out, feed, x
    s.close()
    gc.collect()
    assert all(r() is None for r in gone)


def test_the_gil_is_released_during_the_run(plan):
    """Another Python thread runs while a run is in its C call: the
    runner's `running` flag is set only while the GIL is released, so a
    Python thread that sees it set ran during a run."""
    path, feeds = plan
    s = korch.InferenceSession(path, threads=1)
    stop = threading.Event()

    def loop():
        for _ in range(500):
            if stop.is_set():
                return
            s.run(None, feeds)

    t = threading.Thread(target=loop)
    t.start()
    seen = False
    while t.is_alive() and not seen:
        seen = s._runner.running
    stop.set()
    t.join()
    assert seen


# A thread that finds the session busy must get its turn even when another
# thread calls run() in a loop (the turn used to be raced for, and the
# looping thread always won it: close() never returned, CI stop 34). The
# bound below only turns a hang into a failure; a correct wait is a run long.
STARVED_AFTER_S = 300


def looping_runner(s, feeds):
    """A thread calling s.run in a loop until the session is closed or
    `stop` is set; returns (thread, stop event, runs, errors)."""
    stop, errors, runs = threading.Event(), [], [0]

    def loop():
        try:
            while not stop.is_set():
                s.run(None, feeds)
                runs[0] += 1
        except Exception as e:  # noqa: BLE001 - every error is the test's to report
            errors.append(e)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    while runs[0] < 2 and t.is_alive():
        pass
    assert runs[0] >= 2, "the looping thread stopped: %r" % errors
    return t, stop, runs, errors


def call_bounded(fn):
    """fn() on a daemon thread; fails if it has not returned after
    STARVED_AFTER_S (it waits for a turn it never gets)."""
    done, out = threading.Event(), []

    def call():
        try:
            out.append(fn())
        finally:
            done.set()

    threading.Thread(target=call, daemon=True).start()
    assert done.wait(STARVED_AFTER_S), "starved: no turn in %d s while another thread runs in a loop" % STARVED_AFTER_S
    return out


def test_close_waits_for_a_run_and_runs_stop(plan):
    path, feeds = plan
    s = korch.InferenceSession(path, threads=1)
    t, _, _, errors = looping_runner(s, feeds)
    call_bounded(s.close)
    t.join()
    assert len(errors) == 1 and isinstance(errors[0], korch.InvalidArgumentError) and "closed" in str(errors[0]), errors


def test_a_run_gets_its_turn_beside_a_looping_thread(plan):
    path, feeds = plan
    s = korch.InferenceSession(path, threads=1)
    t, stop, _, errors = looping_runner(s, feeds)
    try:
        out = call_bounded(lambda: [a.copy() for a in s.run(None, feeds)])
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    ref = korch.InferenceSession(path, threads=1).run(None, feeds)
    assert len(out) == 1 and all(np.array_equal(a, b) for a, b in zip(out[0], ref))


def test_pip_wheel_builds_the_extension(workdir):
    """`pip wheel ./python` (what `pip install ./python` builds) compiles
    korch._fast under -Wall -Wextra -Werror and ships it, and the package
    installed from the wheel takes the C path. The library is the build
    tree's (KORCH_LIBRARY_FILE: no second CMake build here), and the
    repository's parts setup.py reads are copied, so nothing is written
    into the source tree."""
    import shutil
    import subprocess
    import zipfile
    from conftest import SOURCE
    r = subprocess.run([sys.executable, "-c", "import setuptools, wheel, pip"], capture_output=True)
    if r.returncode != 0:
        pytest.skip("this Python has no pip, setuptools or wheel (%s)" % r.stderr.decode().strip().splitlines()[-1:])
    repo = os.path.join(workdir, "repo")
    os.makedirs(repo)
    shutil.copy(os.path.join(SOURCE, "CMakeLists.txt"), repo)
    shutil.copytree(os.path.join(SOURCE, "include"), os.path.join(repo, "include"))
    shutil.copytree(os.path.join(SOURCE, "python"), os.path.join(repo, "python"),
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so"))
    env = dict(os.environ, KORCH_LIBRARY_FILE=os.path.realpath(korch.library_path()), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("KORCH_NO_EXTENSION", None)
    dist = os.path.join(workdir, "dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", dist,
                        os.path.join(repo, "python")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (whl,) = [f for f in os.listdir(dist) if f.endswith(".whl")]
    tag = "cp%d%d-cp%d%d" % (sys.version_info[:2] * 2)
    assert tag in whl and "linux" in whl, whl
    names = zipfile.ZipFile(os.path.join(dist, whl)).namelist()
    assert any(n.startswith("korch/_fast.") and n.endswith(".so") for n in names), names
    assert "korch/libkorch.so.0" in names and not any(n.endswith((".c", ".h")) for n in names), names
    # installed (unpacked) without the development tree's variables: the C path
    site = os.path.join(workdir, "site")
    zipfile.ZipFile(os.path.join(dist, whl)).extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("KORCH_LIBRARY", "KORCH_FAST_MODULE", "PYTHONPATH")}
    env["PYTHONPATH"] = site
    code = ("import korch, numpy as np; s = korch.InferenceSession(%r, threads=1); "
            "y = s.run(None, {'x': np.load(%r)}); print(korch.fast_path, korch.fast_path_info, y[0].shape)"
            % (SMALL, os.path.join(FIXTURES, "small_net.x.npy")))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=workdir)
    assert r.returncode == 0, r.stderr
    fast, where, shape = r.stdout.split()[0], r.stdout.split()[1], r.stdout.split(None, 2)[2].strip()
    assert fast == "True" and where.startswith(site) and shape == "(1, 8)", r.stdout


def test_a_package_without_the_extension_says_so(workdir):
    # a copy of the package's Python files, no korch._fast beside them: the
    # ctypes fallback, said plainly (not a warning about a "partially
    # initialized module", which read like a circular import)
    import shutil
    import subprocess
    src = os.path.dirname(korch.__file__)
    pkg = os.path.join(workdir, "nofast", "korch")
    os.makedirs(pkg)
    for f in os.listdir(src):
        if f.endswith(".py"):
            shutil.copy(os.path.join(src, f), pkg)
    env = dict(os.environ)
    env.pop("KORCH_FAST_MODULE", None)
    env["PYTHONPATH"] = os.path.dirname(pkg)
    code = "import korch; print(korch.fast_path); print(korch.fast_path_info)"
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False" and "korch._fast is not built" in lines[1], r.stdout
