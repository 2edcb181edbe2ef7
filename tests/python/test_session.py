"""korch.InferenceSession on ONNX models (the reference executor): the
interface, zero-copy binding, and every error it raises."""
import os

import numpy as np
import pytest

import korch
from conftest import FIXTURES, max_error

SMALL = os.path.join(FIXTURES, "small_net.onnx")  # x 1x3x16x16 -> y 1x8, pooled 1x8x8x8


def small_input():
    return np.load(os.path.join(FIXTURES, "small_net.x.npy"))


def test_inputs_and_outputs_like_onnxruntime():
    s = korch.InferenceSession(SMALL)
    (x,) = s.get_inputs()
    assert (x.name, x.shape, x.type, x.dtype) == ("x", [1, 3, 16, 16], "tensor(float)", np.float32)
    assert [(o.name, o.shape, o.type) for o in s.get_outputs()] == [("y", [1, 8], "tensor(float)"),
                                                                    ("pooled", [1, 8, 8, 8], "tensor(float)")]
    assert "NodeArg(name='x'" in repr(x)
    # the lists are copies: changing them changes nothing
    s.get_inputs().clear()
    assert len(s.get_inputs()) == 1


def test_run_all_and_named_outputs():
    s = korch.InferenceSession(SMALL, threads=1)
    x = small_input()
    y, pooled = s.run(None, {"x": x})
    assert y.shape == (1, 8) and pooled.shape == (1, 8, 8, 8) and y.dtype == np.float32
    assert np.all(np.isfinite(y)) and np.any(y != 0)
    # a subset, in the order asked, equal to the full run
    p2, y2 = s.run(["pooled", "y"], {"x": x})
    assert np.array_equal(p2, pooled) and np.array_equal(y2, y)
    # every run returns new arrays
    (y3,) = s.run(["y"], {"x": x})
    assert y3 is not y and not np.shares_memory(y3, y)
    # pooled is the max-pool of a conv: it depends on the input
    (p4,) = s.run(["pooled"], {"x": x + 1})
    assert not np.array_equal(p4, pooled)


def test_outputs_held_are_never_written_again():
    """The session reuses an output array only when nobody else holds it
    (its reference count): whatever the caller keeps, a view included,
    stays as its run left it."""
    s = korch.InferenceSession(SMALL, threads=1)
    x = small_input()
    fresh = lambda v: korch.InferenceSession(SMALL, threads=1).run(None, {"x": v})  # noqa: E731
    want = [fresh(x + k) for k in range(4)]
    r0 = s.run(None, {"x": x})
    r1 = s.run(None, {"x": x + 1})
    view = r1[1][0, :2]  # holds r1's pooled output through its base
    r1 = None
    r2 = s.run(None, {"x": x + 2})
    for got, w in zip(r0, want[0]):
        assert np.array_equal(got, w)
    assert np.array_equal(view, want[1][1][0, :2])
    for got, w in zip(r2, want[2]):
        assert np.array_equal(got, w)
    # dropped results are reused: a loop that drops them allocates nothing
    del r0, r2, view
    first = s.run(None, {"x": x + 3})
    ids = [id(a) for a in first]
    del first
    again = s.run(None, {"x": x + 3})
    assert [id(a) for a in again] == ids
    for got, w in zip(again, want[3]):
        assert np.array_equal(got, w)
    # an output not asked for is in the pool too, and right when asked again
    (y,) = s.run(["y"], {"x": x})
    assert np.array_equal(y, want[0][0])
    assert np.array_equal(s.run(["pooled"], {"x": x + 1})[0], want[1][1])


def test_zero_copy_input_binding():
    s = korch.InferenceSession(SMALL)
    x = small_input()
    assert x.flags.c_contiguous and x.dtype == np.float32
    y1, _ = s.run(None, {"x": x})
    # the session keeps the caller's array itself (its pointer is bound), no copy
    assert s._bound_inputs()[0] is x
    # the same array with new contents: read in place (bound once), and right
    x += 0.5
    y2, _ = s.run(None, {"x": x})
    assert s._bound_inputs()[0] is x
    (y_fresh, _) = korch.InferenceSession(SMALL).run(None, {"x": x.copy()})
    assert np.array_equal(y2, y_fresh) and not np.array_equal(y1, y2)


def test_non_contiguous_input_is_copied_and_right():
    s = korch.InferenceSession(SMALL)
    x = small_input()
    strided = np.asfortranarray(x)
    assert not strided.flags.c_contiguous
    want = s.run(None, {"x": x})
    got = s.run(None, {"x": strided})
    assert s._bound_inputs()[0] is None  # a converted copy is not kept
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    # a nested list of the right dtype is accepted too (copied)
    got = s.run(None, {"x": np.array(x.tolist(), dtype=np.float32)})
    assert max_error(got[0], want[0]) == 0


def test_feed_errors_name_the_input():
    s = korch.InferenceSession(SMALL)
    x = small_input()
    with pytest.raises(korch.InvalidArgumentError, match=r"expects tensor\(float\) \(float32\), got float64"):
        s.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(korch.InvalidArgumentError, match=r"input \"x\" expects shape \(1, 3, 16, 16\), got \(3, 16, 16\)"):
        s.run(None, {"x": x[0]})
    with pytest.raises(korch.InvalidArgumentError, match=r"no input named 'z'.*input 'x' not given"):
        s.run(None, {"z": x})
    with pytest.raises(korch.InvalidArgumentError, match=r"input 'x' not given"):
        s.run(None, {})
    with pytest.raises(korch.InvalidArgumentError, match=r"no output named 'nope'"):
        s.run(["y", "nope"], {"x": x})
    # InvalidArgumentError is a ValueError and a KorchError with its status
    try:
        s.run(None, {})
    except ValueError as e:
        assert isinstance(e, korch.KorchError) and e.status == "KORCH_ERR_INVALID_ARGUMENT"
    # after errors, the session still runs
    assert s.run(["y"], {"x": x})[0].shape == (1, 8)


def test_load_errors_carry_the_library_message(workdir):
    missing = os.path.join(workdir, "absent.onnx")
    with pytest.raises(korch.FileError) as e:
        korch.InferenceSession(missing)
    assert isinstance(e.value, OSError) and e.value.status == "KORCH_ERR_IO"
    assert "absent.onnx" in str(e.value)  # the C library names the file
    garbage = os.path.join(workdir, "garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(b"\xff\x00 this is not a protobuf \x12\x34" * 10)
    with pytest.raises(korch.KorchError) as e:
        korch.InferenceSession(garbage)
    assert type(e.value) in (korch.ParseError, korch.InvalidModelError) and str(e.value)
    with pytest.raises(korch.InvalidArgumentError, match="threads"):
        korch.InferenceSession(SMALL, threads=0)


def test_symbolic_dimensions_need_input_shapes(workdir):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "sym",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(workdir, "sym.onnx")
    onnx.save(model, path)
    with pytest.raises(korch.KorchError, match="N|symbolic|x"):
        korch.InferenceSession(path)
    s = korch.InferenceSession(path, input_shapes={"x": (3, 4)})
    assert s.get_inputs()[0].shape == [3, 4]
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    (y,) = s.run(None, {"x": x})
    assert np.array_equal(y, np.maximum(x, 0))
    # the C library's spelling works too
    assert korch.InferenceSession(path, input_shapes="x=3x4").get_outputs()[0].shape == [3, 4]


def test_close_and_context_manager():
    x = small_input()
    with korch.InferenceSession(SMALL) as s:
        s.run(None, {"x": x})
    with pytest.raises(korch.InvalidArgumentError, match="closed"):
        s.run(None, {"x": x})
    s.close()  # twice is fine


def test_onnxruntime_style_arguments_accepted():
    class Options:
        intra_op_num_threads = 1
    s = korch.InferenceSession(SMALL, sess_options=Options(), providers=["CPUExecutionProvider"])
    assert s.get_providers() == ["KorchExecutionProvider"]
    assert len(s.run(None, {"x": small_input()})) == 2
