"""Compares korch's outputs of a CRNN model with ONNX Runtime's (or, without
onnxruntime, with PyTorch's stored output), at issue 18's tolerance:
max |got - want| <= 1e-4 + 1e-3 * max |want|.
usage: compare.py MODEL INPUT.npy TORCH.npy GOT.npy [GOT.npy ...]"""
import sys

import numpy as np

model, inp, torch_out, gots = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
want, source = np.load(torch_out), "PyTorch"
try:
    import onnxruntime as ort
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    want, source = s.run(None, {s.get_inputs()[0].name: np.load(inp)})[0], "ONNX Runtime"
except ImportError:
    pass
tol = 1e-4 + 1e-3 * float(np.abs(want).max())
bad = 0
for g in gots:
    got = np.load(g)
    err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
    print("%s: max error %.3g vs %s (tolerance %.3g)" % (g, err, source, tol))
    bad += not err <= tol
sys.exit(1 if bad else 0)
