"""A plan with shape buckets (korch optimize --input-shape 'x=1x{4,8,16}x8',
docs/plan-format.md "Shape buckets") in korch.InferenceSession: each run
picks the bucket of the feed's shapes and matches the ONNX model run at that
shape; a shape no bucket holds is refused listing the buckets; input_shapes=
fixes one bucket. The plan is made with the CLI of this build (--estimate:
nothing timed). Then the same through korch.optimize(input_shapes=...) (the
C API's korch_optimize): the brace syntax, the list form, and the errors."""
import os
import subprocess

import numpy as np
import pytest

import korch
from conftest import SOURCE, WORK

FIXTURES = os.path.join(SOURCE, "tests", "buckets", "fixtures")


def _plan():
    cli = os.environ.get("KORCH_CLI") or os.path.join(SOURCE, "build", "korch")
    if not os.path.exists(cli):
        pytest.skip("no korch CLI at %s" % cli)
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "buckets.plan")
    subprocess.run([cli, "optimize", os.path.join(FIXTURES, "seq_net.onnx"), "--input-shape", "x=1x{4,8,16}x8",
                    "-o", path, "--threads", "1", "--strategy", "greedy", "--estimate", "-q"], check=True)
    return path


def test_bucketed_plan_picks_by_feed_shape():
    path = _plan()
    model = os.path.join(FIXTURES, "seq_net.onnx")
    sess = korch.InferenceSession(path)
    (x_arg,) = sess.get_inputs()
    assert x_arg.name == "x" and x_arg.shape == [1, None, 8]
    for seq in (16, 4, 8, 4):
        x = np.load(os.path.join(FIXTURES, "x%d.npy" % seq))
        (y,) = sess.run(None, {"x": x})
        ref = korch.InferenceSession(model, input_shapes={"x": x.shape})
        (want,) = ref.run(None, {"x": x})
        assert y.shape == (1, seq * 16)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(korch.ShapeError, match=r"no shape bucket for x=1x12x8; its buckets are "
                                               r"x=1x4x8, x=1x8x8, x=1x16x8"):
        sess.run(None, {"x": np.load(os.path.join(FIXTURES, "x12.npy"))})
    sess.close()
    one = korch.InferenceSession(path, input_shapes={"x": (1, 8, 8)})
    assert one.get_inputs()[0].shape == [1, 8, 8]
    with pytest.raises(korch.KorchError, match="no shape bucket for x=1x5x8"):
        korch.InferenceSession(path, input_shapes={"x": (1, 5, 8)})


def _optimize(path, input_shapes, lines=None):
    return korch.optimize(os.path.join(FIXTURES, "seq_net.onnx"), path, strategy="greedy", threads=1, estimate=True,
                          progress=lines.append if lines is not None else False, input_shapes=input_shapes)


def test_optimize_makes_buckets(workdir):
    """korch.optimize with input_shapes listing two sequence lengths (the
    CLI's brace syntax) writes one plan file of two buckets: each matches the
    ONNX model at its shape through InferenceSession, and a feed of another
    shape raises ShapeError listing the two."""
    path = os.path.join(workdir, "two.plan")
    lines = []
    report = _optimize(path, {"x": "1x{4,8}x8"}, lines)
    assert "bucket 2 of 2: x=1x8x8" in lines, lines
    assert any(line.startswith("plan: 2 shape buckets written to ") for line in lines), lines
    assert report.plan_path == path and report.strategy == "greedy" and report.kernels >= 2
    model = os.path.join(FIXTURES, "seq_net.onnx")
    sess = korch.InferenceSession(path)
    for seq in (8, 4, 8):
        x = np.load(os.path.join(FIXTURES, "x%d.npy" % seq))
        (y,) = sess.run(None, {"x": x})
        (want,) = korch.InferenceSession(model, input_shapes={"x": x.shape}).run(None, {"x": x})
        assert y.shape == (1, seq * 16)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(korch.ShapeError, match=r"no shape bucket for x=1x16x8; its buckets are x=1x4x8, x=1x8x8"):
        sess.run(None, {"x": np.load(os.path.join(FIXTURES, "x16.npy"))})
    sess.close()


def test_optimize_buckets_list_form(workdir):
    """A dimension given as a list of values is the same specification:
    {"x": (1, [4, 16], 8)} is x=1x{4,16}x8, two buckets."""
    path = os.path.join(workdir, "list.plan")
    _optimize(path, {"x": (1, [4, 16], 8)})
    x = np.load(os.path.join(FIXTURES, "x16.npy"))
    (y,) = korch.InferenceSession(path, input_shapes={"x": (1, 16, 8)}).run(None, {"x": x})
    (want,) = korch.InferenceSession(os.path.join(FIXTURES, "seq_net.onnx"), input_shapes={"x": x.shape}).run(
        None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(korch.ShapeError, match=r"no shape bucket for x=1x8x8"):
        korch.InferenceSession(path, input_shapes={"x": (1, 8, 8)})


def test_optimize_bucket_errors(workdir):
    """A malformed list, an input listed twice: InvalidArgumentError naming
    the input and the specification, and no plan written."""
    path = os.path.join(workdir, "bad.plan")
    with pytest.raises(korch.InvalidArgumentError, match=r"x=1x\{4,a\}x8: a brace list holds positive numbers"):
        _optimize(path, {"x": "1x{4,a}x8"})
    with pytest.raises(korch.InvalidArgumentError, match=r"input shape x is given twice"):
        _optimize(path, "x=1x{4,8}x8;x=1x{4,8}x8")
    with pytest.raises(korch.InvalidArgumentError, match=r"empty list"):
        _optimize(path, {"x": (1, [], 8)})
    assert not os.path.exists(path)
