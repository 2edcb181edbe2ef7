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
    # a plan whose model changed is refused with the library's message
    import os
    import shutil
    d = os.path.join(os.path.dirname(path), "..", "changed")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(path, "rb") as f:
        text = f.read()
    model, _ = zoo_model(PLAN_MODEL)
    copy = os.path.join(d, "model.onnx")
    shutil.copy(model, copy)
    with open(copy, "ab") as f:
        f.write(b"\x00")  # other bytes, other SHA-256
    changed_plan = os.path.join(d, "changed.plan")
    with open(changed_plan, "wb") as f:
        f.write(text.replace(os.path.abspath(model).encode(), os.path.abspath(copy).encode()))
    if text == open(changed_plan, "rb").read():
        pytest.skip("the plan does not name its model by absolute path")
    with pytest.raises(korch.KorchError, match="changed since the plan was made"):
        korch.InferenceSession(changed_plan)
