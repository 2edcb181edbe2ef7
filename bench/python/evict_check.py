"""The eviction check of bench/python/RESULTS.md: session.run's own time
(korch_session_run stubbed) with warm caches, and with a 32 MiB buffer
written before each call (what a model's run does to the caches), for both
paths of session.run: korch._fast (bench_mode 2: the C call skipped) and
ctypes (korch_session_run replaced by a Python no-op).

    nice -n 19 build/venv/bin/python bench/python/evict_check.py   (after overhead.py made the plan)

Runs 1-3 wrote the buffer inside the stub (the steps before the run then
ran warm); since run 4 it is written before the call, outside the timed
region, so every step of the call is timed cold.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.argv = sys.argv[:1]
sys.path.insert(0, HERE)
import overhead as ov  # noqa: E402  (sets the library, korch._fast, the cache and sys.path)
import numpy as np  # noqa: E402

import korch  # noqa: E402
import korch.session  # noqa: E402

plan = os.path.join(ov.WORK, "mobilenetv2.plan")
big = np.zeros(32 << 20 >> 2, np.float32)
clock = time.perf_counter_ns
for fast in (True, False):
    if fast and not korch.fast_path:
        print("korch._fast: not built (%s)" % korch.fast_path_info)
        continue
    for evict in (False, True):
        korch.session._use_fast = fast
        s = korch.InferenceSession(plan, threads=1)
        korch.session._use_fast = True
        arg = s.get_inputs()[0]
        feeds = {arg.name: ov.fill(arg.shape)}
        saved = korch.session._lib_
        if fast:
            s._runner.bench_mode = 2
        else:
            korch.session._lib_ = ov.TimedLib(saved, stub=True)
        out = []
        for i in range(200):
            if evict:
                big[:] += 1
            t0 = clock()
            s.run(None, feeds)
            out.append((clock() - t0) / 1e3)
        korch.session._lib_ = saved
        s.close()
        print("%-7s %-34s session.run, run stubbed: median %.1f us" % (
            "fast" if fast else "ctypes", "32 MiB written before each call:" if evict else "warm caches:",
            statistics.median(out[20:])))
