"""Threads: sessions on different threads run at once (the GIL is released
during runs), a shared session takes turns, error messages are per thread,
optimize calls take turns (docs/c-api.md, "Threads")."""
# ctest-fixtures: python_plan
import ctypes
import os
import threading

import numpy as np

import korch
from korch import _lib
from conftest import FIXTURES, max_error

SMALL = os.path.join(FIXTURES, "small_net.onnx")
N_THREADS = 4


def run_threads(target, n=N_THREADS):
    errors = [None] * n

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # reported by the main thread
            errors[i] = e

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e


def test_the_gil_is_released_in_calls():
    # ctypes.CDLL (not PyDLL) drops the GIL for the length of every foreign
    # call: korch_session_run and korch_optimize run while Python continues
    assert isinstance(_lib.lib, ctypes.CDLL) and not isinstance(_lib.lib, ctypes.PyDLL)


def test_sessions_on_threads(plan):
    path, feeds = plan
    name = next(iter(feeds))
    base = feeds[name]
    inputs = [base * (1 + 0.25 * i) for i in range(N_THREADS)]
    # expected outputs, one thread, beforehand
    ref = korch.InferenceSession(path, threads=1)
    want = [ref.run(None, {name: x}) for x in inputs]

    def work(i):
        s = korch.InferenceSession(path, threads=1)  # created concurrently too
        for _ in range(3):
            for g, w in zip(s.run(None, {name: inputs[i]}), want[i]):
                assert np.array_equal(g, w), "thread %d" % i

    run_threads(work)


def test_shared_session_takes_turns(plan):
    path, feeds = plan
    name = next(iter(feeds))
    s = korch.InferenceSession(path, threads=1)
    inputs = [feeds[name] * (1 - 0.1 * i) for i in range(N_THREADS)]
    want = [korch.InferenceSession(path, threads=1).run(None, {name: x}) for x in inputs]

    def work(i):
        for _ in range(5):
            for g, w in zip(s.run(None, {name: inputs[i]}), want[i]):
                assert np.array_equal(g, w), "thread %d" % i

    run_threads(work)


def test_error_messages_are_per_thread():
    s = [korch.InferenceSession(SMALL) for _ in range(N_THREADS)]
    barrier = threading.Barrier(N_THREADS)

    def work(i):
        barrier.wait()
        for _ in range(20):
            # the C library's message of this thread's own failure: its bytes count
            st = _lib.lib.korch_session_set_input(s[i]._handle, 0, None, 100 + i)
            assert st != 0
            msg = _lib.lib.korch_last_error().decode()
            assert msg == 'input "x" needs 3072 bytes, got %d' % (100 + i), msg

    run_threads(work)


def test_concurrent_optimize_calls(tmp_path_factory):
    d = os.environ.get("KORCH_TEST_WORK") or str(tmp_path_factory.mktemp("work"))
    d = os.path.join(d, "concurrent_optimize")
    os.makedirs(d, exist_ok=True)
    x = np.load(os.path.join(FIXTURES, "small_net.x.npy"))
    want = korch.InferenceSession(SMALL).run(None, {"x": x})
    reports = [None, None]

    def work(i):
        plan = os.path.join(d, "small.%d.plan" % i)
        reports[i] = korch.optimize(SMALL, plan, strategy=("none", "greedy")[i], threads=1, estimate=True,
                                    time_limit=1e6, progress=False)
        for g, w in zip(korch.InferenceSession(plan).run(None, {"x": x}), want):
            assert max_error(g, w) <= 1e-3

    run_threads(work, 2)
    assert [r.strategy for r in reports] == ["none", "greedy"]
