"""The eviction check of bench/python/RESULTS.md: session.run's own time
(korch_session_run stubbed) with warm caches, and with a 32 MiB buffer
written between calls (what a model's run does to the caches).

    nice -n 19 build/venv/bin/python bench/python/evict_check.py   (after overhead.py made the plan)
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.argv = sys.argv[:1]
sys.path.insert(0, HERE)
import overhead as ov  # noqa: E402  (sets the library, the cache and sys.path)
import numpy as np  # noqa: E402

import korch  # noqa: E402
import korch.session  # noqa: E402

plan = os.path.join(ov.WORK, "mobilenetv2.plan")
big = np.zeros(32 << 20 >> 2, np.float32)
for evict in (False, True):
    s = korch.InferenceSession(plan, threads=1)
    arg = s.get_inputs()[0]
    feeds = {arg.name: ov.fill(arg.shape)}
    saved = korch.session._lib_
    t = ov.TimedLib(saved, stub=True)

    def stub(h, t=t, evict=evict):
        t0 = time.perf_counter_ns()
        if evict:
            big[:] += 1
        t.c_ns = time.perf_counter_ns() - t0
        return 0

    t.korch_session_run = stub
    korch.session._lib_ = t
    out = []
    for i in range(200):
        t0 = time.perf_counter_ns()
        s.run(None, feeds)
        out.append((time.perf_counter_ns() - t0 - t.c_ns) / 1e3)
    korch.session._lib_ = saved
    print("%-34s session.run outside the stub: median %.1f us" % (
        "32 MiB written between calls:" if evict else "warm caches:", statistics.median(out[20:])))
