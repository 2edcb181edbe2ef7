"""The tiny zoo models in korch against ONNX Runtime (the venv of
scripts/python-env.sh; skipped without onnxruntime): every model through
the reference executor, and the plan of one through its kernels."""
# ctest-fixtures: python_plan
import korch
from conftest import PLAN_MODEL, max_error, ort_outputs, zoo_model, zoo_names


def test_zoo_models_match_onnxruntime():
    names = zoo_names()
    assert len(names) >= 9, names
    for name in names:
        path, feeds = zoo_model(name)
        want = ort_outputs(path, feeds)
        got = korch.InferenceSession(path, threads=2).run(None, feeds)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            err = max_error(g, w)
            assert err <= 1e-4, "%s output %d: error %.3g of the largest magnitude" % (name, i, err)


def test_zoo_plan_matches_onnxruntime(plan):
    path, feeds = plan
    model, _ = zoo_model(PLAN_MODEL)
    want = ort_outputs(model, feeds)
    got = korch.InferenceSession(path, threads=2).run(None, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        err = max_error(g, w)
        assert err <= 1e-3, "%s plan output %d: error %.3g of the largest magnitude" % (PLAN_MODEL, i, err)
