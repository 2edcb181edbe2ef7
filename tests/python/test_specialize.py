"""Guarded specialization (docs/control-flow.md): `korch optimize
--specialize sr=16000` on a model whose If depends on a graph input. The plan
inlines the branch for 16000, matches ONNX Runtime for that value, and every
consumer (korch run, the C API session through korch.InferenceSession, the
exported C) refuses any other value with a message that says how to make a
plan for it. The model is built here with onnx.helper."""
import os
import subprocess

import numpy as np
import pytest

import korch
from conftest import max_error, ort_outputs

ABOUT = "the plan is specialized for sr=16000"


def cli():
    path = os.environ.get("KORCH_CLI")
    if not path:
        pytest.skip("KORCH_CLI not set (CTest sets it)")
    return path


def build_model(d):
    """y = Relu(x @ W1) if sr == 16000 else Sigmoid(x @ W2); x 8x16 float32,
    sr an int64 scalar, as silero-vad's sample rate."""
    onnx = pytest.importorskip("onnx", reason="onnx comes with the venv of scripts/python-env.sh")
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((16, 4)).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    then = h.make_graph([h.make_node("MatMul", ["x", "W1"], ["t0"]), h.make_node("Relu", ["t0"], ["y_then"])],
                        "then", [], [h.make_tensor_value_info("y_then", T.FLOAT, [8, 4])])
    other = h.make_graph([h.make_node("MatMul", ["x", "W2"], ["e0"]), h.make_node("Sigmoid", ["e0"], ["y_else"])],
                         "else", [], [h.make_tensor_value_info("y_else", T.FLOAT, [8, 4])])
    nodes = [h.make_node("Constant", [], ["k"], value=h.make_tensor("k", T.INT64, [], [16000])),
             h.make_node("Equal", ["sr", "k"], ["c"]),
             h.make_node("If", ["c"], ["y"], name="rate_if", then_branch=then, else_branch=other)]
    g = h.make_graph(nodes, "if_on_sr",
                     [h.make_tensor_value_info("x", T.FLOAT, [8, 16]), h.make_tensor_value_info("sr", T.INT64, [])],
                     [h.make_tensor_value_info("y", T.FLOAT, [8, 4])],
                     [nh.from_array(w1, "W1"), nh.from_array(w2, "W2")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = os.path.join(d, "if_on_sr.onnx")
    onnx.save(m, path)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    files = {}
    for name, v in [("x", x), ("sr16k", np.array(16000, np.int64)), ("sr8k", np.array(8000, np.int64)),
                    ("sr_float", np.array(16000, np.float32))]:
        files[name] = os.path.join(d, name + ".npy")
        np.save(files[name], v)
    return path, x, files


def plan_text(plan):
    """A plan's text part (a self-contained plan carries binary model
    sections after it: docs/plan-format.md)."""
    return open(plan, "rb").read().decode("utf-8", errors="replace")


def optimize(d, model, *flags, name="model.plan"):
    plan = os.path.join(d, name)
    r = subprocess.run([cli(), "optimize", model, "-o", plan, "--threads", "1", "--estimate", "-q",
                        "--db", os.path.join(d, "profile.db"), *flags], capture_output=True, text=True)
    return plan, r


def run_plan(plan, files, sr, out_dir=None, *extra):
    args = [cli(), "run", plan, "--input", "x=" + files["x"], "--input", "sr=" + files[sr], "--threads", "1"]
    if out_dir:
        args += ["--output-dir", out_dir]
    return subprocess.run(args + list(extra), capture_output=True, text=True)


@pytest.fixture
def specialized(workdir):
    model, x, files = build_model(workdir)
    plan, r = optimize(workdir, model, "--specialize", "sr=16000")
    assert r.returncode == 0, r.stderr
    return model, x, files, plan


def test_plan_records_the_guard_and_inlines_the_branch(specialized):
    model, _, _, plan = specialized
    text = plan_text(plan)
    # 16000 as little-endian int64: 0x3e80
    assert "\nspecialize name=sr dtype=int64 shape=scalar value=803e000000000000\n" in text
    # the If was resolved at load: no opaque (ref) kernel runs it, the then-branch's MatMul is planned
    assert "backend=ref" not in text and "rate_if/MatMul" in text, text
    out = subprocess.run([cli(), "explain", plan], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "input: sr scalar, specialized for int64 16000" in out.stdout


def test_specialized_plan_matches_onnxruntime(specialized, workdir):
    model, x, files, plan = specialized
    (want,) = ort_outputs(model, {"x": x, "sr": np.array(16000, np.int64)})
    out = os.path.join(workdir, "out")
    r = run_plan(plan, files, "sr16k", out)
    assert r.returncode == 0, r.stderr
    assert max_error(np.load(os.path.join(out, "y.npy")), want) < 1e-5
    # the C API session, through the Python binding
    (got,) = korch.InferenceSession(plan, threads=1).run(None, {"x": x, "sr": np.array(16000, np.int64)})
    assert max_error(got, want) < 1e-5
    # verification against the reference executor uses sr=16000 (seeded inputs) ...
    r = subprocess.run([cli(), "run", plan, "--verify", "--threads", "1"], capture_output=True, text=True)
    assert r.returncode == 0 and "matches the reference executor" in r.stdout, r.stdout + r.stderr
    # ... and refuses given inputs with another value
    r = run_plan(plan, files, "sr8k", None, "--verify")
    assert r.returncode != 0
    assert 'the given input "sr" is 8000, but the model is specialized for sr=16000' in r.stderr, r.stderr


def test_other_value_is_refused_by_every_consumer(specialized, workdir):
    model, x, files, plan = specialized
    r = run_plan(plan, files, "sr8k", os.path.join(workdir, "out8"))
    assert r.returncode != 0
    for part in ['input "sr" is 8000', "specialized for sr=16000", "korch optimize MODEL --specialize sr=8000"]:
        assert part in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(workdir, "out8", "y.npy"))
    s = korch.InferenceSession(plan, threads=1)
    with pytest.raises(korch.InvalidArgumentError) as e:
        s.run(None, {"x": x, "sr": np.array(8000, np.int64)})
    assert 'input "sr" is 8000' in str(e.value) and "sr=16000" in str(e.value)
    # the session still runs the value it was made for
    (got,) = s.run(None, {"x": x, "sr": np.array(16000, np.int64)})
    (want,) = ort_outputs(model, {"x": x, "sr": np.array(16000, np.int64)})
    assert max_error(got, want) < 1e-5


def test_exported_c_checks_the_guard(specialized, workdir):
    _, _, files, plan = specialized
    exported = os.path.join(workdir, "exported")
    r = subprocess.run([cli(), "export", plan, "-o", exported], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["make", "-s", "-C", exported, "CFLAGS_EXTRA=-Werror"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    runner = os.path.join(exported, "model_run")
    ok = subprocess.run([runner, "--input", "x=" + files["x"], "--input", "sr=" + files["sr16k"], "--output-dir",
                         os.path.join(workdir, "c16")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    ref = run_plan(plan, files, "sr16k", os.path.join(workdir, "k16"))
    assert ref.returncode == 0, ref.stderr
    assert max_error(np.load(os.path.join(workdir, "c16", "y.npy")), np.load(os.path.join(workdir, "k16", "y.npy"))) < 1e-6
    bad = subprocess.run([runner, "--input", "x=" + files["x"], "--input", "sr=" + files["sr8k"]],
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert 'input "sr" is not the value this model was specialized for (sr=16000)' in bad.stderr, bad.stderr


def test_unspecialized_plan_takes_every_value(workdir):
    model, x, files = build_model(workdir)
    plan, r = optimize(workdir, model)
    assert r.returncode == 0, r.stderr
    assert "\nspecialize " not in plan_text(plan)
    for sr in (16000, 8000):
        (want,) = ort_outputs(model, {"x": x, "sr": np.array(sr, np.int64)})
        (got,) = korch.InferenceSession(plan, threads=1).run(None, {"x": x, "sr": np.array(sr, np.int64)})
        assert max_error(got, want) < 1e-5, sr


def test_bad_specialize_values_are_named(workdir):
    model, _, files = build_model(workdir)
    cases = [
        ("rate=16000", '--specialize names "rate", which is not a graph input (the model\'s inputs: "x", "sr")'),
        ("sr=abc", '--specialize sr=abc: "abc" is not a valid int64 value'),
        ("sr=1.5", '"1.5" is not a valid int64 value'),
        ("sr=99999999999999999999", "is not a valid int64 value"),
        ("sr=" + files["sr_float"], '--specialize sr: the value is float32, but graph input "sr" is int64'),
        ("sr=" + os.path.join(workdir, "missing.npy"), "missing.npy"),
        ("sr", "--specialize expects NAME=VALUE"),
        ("x=1", 'graph input "x" has shape 8x16, and a literal gives one value; give a .npy or .pb file'),
        ("x=" + files["x"], "korch specializes inputs of at most 256 bytes"),
    ]
    for flag, message in cases:
        plan, r = optimize(workdir, model, "--specialize", flag)
        assert r.returncode != 0 and message in r.stderr, (flag, r.stderr)
        assert not os.path.exists(plan), flag
    _, r = optimize(workdir, model, "--specialize", "sr=16000", "--specialize", "sr=8000")
    assert r.returncode != 0 and "--specialize sr is given twice" in r.stderr, r.stderr


def test_plan_reader_checks_the_guard_record(specialized, workdir):
    model, _, files, _ = specialized
    # a plan that is text only (--no-embed), so that its lines can be edited
    # without breaking a section checksum
    plan, r = optimize(workdir, model, "--specialize", "sr=16000", "--no-embed", name="named.plan")
    assert r.returncode == 0, r.stderr
    text = open(plan).read()
    for bad in ["value=803e0000", "value=zz3e000000000000", "dtype=int32", "shape=1"]:
        key = bad.split("=")[0]
        good = {"value": "value=803e000000000000", "dtype": "dtype=int64", "shape": "shape=scalar"}[key]
        broken = os.path.join(workdir, "broken.plan")
        with open(broken, "w") as f:
            f.write(text.replace("specialize name=sr dtype=int64 shape=scalar value=803e000000000000",
                                 "specialize name=sr dtype=int64 shape=scalar value=803e000000000000".replace(good, bad)))
        r = run_plan(broken, files, "sr16k")
        assert r.returncode != 0 and "specialize" in r.stderr, (bad, r.stderr)
