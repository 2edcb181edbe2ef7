"""The ONNX backend tests through `korch fission -o` and ONNX Runtime.

usage: ort_conformance.py KORCH [DATA_DIR] [WORK_DIR]

For every test folder whose model korch loads as it is (tests that feed
shape-like operands as run-time inputs are not, see docs/conformance.md),
writes the fissioned model and runs it in ONNX Runtime (graph optimisations
off) on each test_data_set_*, comparing with the stored outputs like
numpy.testing.assert_allclose(rtol=1e-4, atol=1e-5). Prints one line per
failure and a summary; exit 1 when a test fails. Needs onnx and
onnxruntime (scripts/python-env.sh builds a venv with both)."""
import glob
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(t)


def main():
    korch = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/libonnx-testdata/data"
    work = sys.argv[3] if len(sys.argv) > 3 else "/tmp/korch-ort-conformance"
    os.makedirs(work, exist_ok=True)
    passed = failed = skipped = ort_limits = 0
    for model in sorted(glob.glob(os.path.join(data, "*", "*", "model.onnx"))):
        test = os.path.dirname(model)
        name = os.path.relpath(test, data)
        out = os.path.join(work, name.replace("/", "__") + ".onnx")
        r = subprocess.run([korch, "fission", model, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            skipped += 1
            continue
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - ONNX Runtime cannot run the original either
            ort_limits += 1
            continue
        try:
            sess = ort.InferenceSession(out, so, providers=["CPUExecutionProvider"])
            names = [i.name for i in sess.get_inputs()]
            ok = True
            for ds in sorted(glob.glob(os.path.join(test, "test_data_set_*"))):
                ins = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                                  key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
                want = [load_pb(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                                                   key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
                got = sess.run(None, dict(zip(names, ins)))
                for w, g in zip(want, got):
                    if w.dtype.kind == "f":
                        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
                    else:
                        np.testing.assert_array_equal(g, w)
        except Exception as e:  # noqa: BLE001 - any ORT or comparison failure is a test failure
            ok = False
            print("FAIL %s: %s" % (name, str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__))
        passed += ok
        failed += not ok
    print("ort_conformance: %d passed, %d failed, %d not loadable by korch as they are, %d that ONNX Runtime "
          "cannot run in their original form" % (passed, failed, skipped, ort_limits))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
