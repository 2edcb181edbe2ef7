"""korch.check, korch.info and the version: against the CLI and the C
library."""
import os
import re
import subprocess

import pytest

import korch
from conftest import FIXTURES, SOURCE, zoo_model

SMALL = os.path.join(FIXTURES, "small_net.onnx")


def test_version_is_the_library_version():
    cmake = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    want = re.search(r"project\(korch VERSION ([0-9.]+)", cmake).group(1)
    assert korch.__version__ == korch.library_version() == want
    # setup.py reads the same line (one source of truth)
    import importlib.util
    spec = importlib.util.spec_from_file_location("korch_setup_version", os.path.join(SOURCE, "python", "version.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.korch_version() == want


def test_info_matches_korch_info():
    path, _ = zoo_model("resnet50_tiny")
    d = korch.info(path)
    assert d["path"] == path and d["inputs"][0]["name"] == "input"
    assert d["inputs"][0]["type"] == "tensor(float)" and d["inputs"][0]["dtype"] == "float32"
    assert sum(op["count"] for op in d["operators"]) == d["nodes_in_file"]
    assert d["operators"][0]["count"] >= d["operators"][-1]["count"]
    cli = os.environ.get("KORCH_CLI")
    if not cli:
        pytest.skip("KORCH_CLI not set (CTest sets it)")
    text = subprocess.run([cli, "info", path], capture_output=True, text=True, check=True).stdout
    assert "nodes: %d in the file, %d after constant folding" % (d["nodes_in_file"], d["nodes"]) in text
    assert "parameters: %d " % d["parameters"] in text
    assert "FLOPs: %.3f G per run" % (d["flops"] / 1e9) in text
    conv = next(op for op in d["operators"] if op["op"] == "Conv")
    assert re.search(r"\n  Conv +%d +%.3f GFLOPs" % (conv["count"], conv["flops"] / 1e9), text)
    for v in d["inputs"] + d["outputs"]:
        assert re.search(r"%s +float32 +%s\n" % (re.escape(v["name"]), "x".join(map(str, v["shape"]))), text)


def test_info_input_shapes_and_errors(workdir):
    d = korch.info(SMALL, input_shapes={"x": (1, 3, 16, 16)})
    assert d["outputs"][1]["shape"] == [1, 8, 8, 8]
    with pytest.raises(korch.FileError, match="absent.onnx"):
        korch.info(os.path.join(workdir, "absent.onnx"))


def test_check_ok_and_failing(workdir):
    assert korch.check(SMALL) == {"ok": True, "nodes": 18, "nodes_after_folding": 18, "inputs": 1, "outputs": 2,
                                  "shapes_checked": True}
    r = korch.check(os.path.join(workdir, "absent.onnx"))
    assert r["ok"] is False and r["status"] == "KORCH_ERR_IO" and "absent.onnx" in r["error"]
    # a model that names a tensor nothing produces: the reason names it, as `korch check` does
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    bad = os.path.join(workdir, "bad.onnx")
    onnx.save(model, bad)
    r = korch.check(bad)
    assert r["ok"] is False and "ghost" in r["error"], r
    cli = os.environ.get("KORCH_CLI")
    if cli:
        p = subprocess.run([cli, "check", bad], capture_output=True, text=True)
        assert p.returncode == 1 and r["error"] in p.stderr


def test_symbolic_inputs(workdir):
    """A model with dynamic axes: info and check work without shapes, as ONNX
    Runtime's get_inputs does (a symbolic dimension by name, an unknown one
    None), and say what is left unchecked."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dyn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(workdir, "dyn.onnx")
    onnx.save(model, path)
    d = korch.info(path)
    assert d["symbolic_inputs"] == 1 and d["inputs"][0]["shape"] == ["batch", 3, None]
    assert d["flops"] is None and d["nodes"] is None and d["nodes_in_file"] == 1
    r = korch.check(path)
    assert r["ok"] is True and r["shapes_checked"] is False and r["nodes_after_folding"] is None
    fixed = korch.info(path, input_shapes={"x": (2, 3, 5)})
    assert fixed["symbolic_inputs"] == 0 and fixed["inputs"][0]["shape"] == [2, 3, 5] and fixed["flops"] == 30
    assert korch.check(path, input_shapes={"x": (2, 3, 5)})["shapes_checked"] is True

