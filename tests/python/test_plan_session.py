"""korch.InferenceSession on a plan (the kernels korch.optimize chose)."""
# ctest-fixtures: python_plan
import numpy as np
import pytest

import korch
from conftest import max_error, zoo_model, PLAN_MODEL


def test_plan_session_matches_reference_executor(plan):
    path, feeds = plan
    s = korch.InferenceSession(path, threads=2)
    assert [a.name for a in s.get_inputs()] == list(feeds)
    model, _ = zoo_model(PLAN_MODEL)
    want = korch.InferenceSession(model).run(None, feeds)
    for _ in range(3):  # bindings stay; runs repeat
        got = s.run(None, feeds)
        for g, w in zip(got, want):
            assert max_error(g, w) <= 1e-3


def test_plan_session_errors(plan):
    path, feeds = plan
    s = korch.InferenceSession(path)
    name = s.get_inputs()[0].name
    with pytest.raises(korch.InvalidArgumentError, match="expects shape"):
        s.run(None, {name: np.zeros((1, 1), np.float32)})


def test_plan_alone_runs_and_damage_is_refused(plan, workdir):
    """The shared plan is self-contained: copied alone to another folder it
    runs and matches; a flipped weight byte and a cut file are refused with
    messages naming the file (docs/plan-format.md)."""
    import os
    import shutil
    path, feeds = plan
    alone = os.path.join(workdir, "alone.plan")
    shutil.copy(path, alone)
    model, _ = zoo_model(PLAN_MODEL)
    want = korch.InferenceSession(model).run(None, feeds)
    for g, w in zip(korch.InferenceSession(alone, threads=2).run(None, feeds), want):
        assert max_error(g, w) <= 1e-3
    data = open(alone, "rb").read()
    assert b"\nembedded graph-bytes=" in data
    damaged = os.path.join(workdir, "damaged.plan")
    flipped = bytearray(data)
    flipped[len(data) - 100] ^= 0x40  # the weight section is last
    open(damaged, "wb").write(bytes(flipped))
    with pytest.raises(korch.KorchError, match='damaged.plan" is damaged: the checksum of its weight section'):
        korch.InferenceSession(damaged)
    cut = os.path.join(workdir, "cut.plan")
    open(cut, "wb").write(data[: len(data) // 2 + len(data) // 4])
    with pytest.raises(korch.KorchError, match='cut.plan" is truncated'):
        korch.InferenceSession(cut)


def test_external_plan_with_changed_model_is_refused(workdir):
    """embed=False: the plan names its model, and a changed model is refused
    with the library's message."""
    import os
    import shutil
    from test_optimize import SMALL, NO_LIMIT
    copy = os.path.join(workdir, "model.onnx")
    shutil.copy(SMALL, copy)
    external = os.path.join(workdir, "external.plan")
    korch.optimize(copy, external, strategy="none", threads=1, estimate=True, time_limit=NO_LIMIT, progress=False,
                   db=os.path.join(workdir, "profile.db"), embed=False)
    assert b"\nembedded " not in open(external, "rb").read()
    korch.InferenceSession(external)  # its model unchanged: loads
    with open(copy, "ab") as f:
        f.write(b"\x00")  # other bytes, other SHA-256
    with pytest.raises(korch.KorchError, match="changed since the plan was made"):
        korch.InferenceSession(external)
