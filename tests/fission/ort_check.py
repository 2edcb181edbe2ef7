"""ONNX Runtime check of a fissioned model: same outputs as the original.

usage: ort_check.py ORIGINAL.onnx FISSIONED.onnx MODELS_DIR NAME
Inputs are MODELS_DIR/NAME.input.<input name>.npy (scripts/build-models.sh).
Graph optimisations are off, so ONNX Runtime runs the primitive graph as
written. Passes when every output agrees to 1e-4 of the output's largest
magnitude (fission reassociates float arithmetic; docs/fission.md)."""
import glob
import os
import sys

import numpy as np
import onnxruntime as ort


def run(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def main():
    original, fissioned, models, name = sys.argv[1:5]
    prefix = os.path.join(models, name + ".input.")
    feeds = {f[len(prefix):-4]: np.load(f) for f in glob.glob(prefix + "*.npy")}
    want, got = run(original, feeds), run(fissioned, feeds)
    worst = 0.0
    for w, g in zip(want, got):
        if w.shape != g.shape or w.dtype != g.dtype:
            print("shape/dtype mismatch", w.shape, g.shape, w.dtype, g.dtype)
            return 1
        if w.size:
            worst = max(worst, float(np.max(np.abs(w.astype(np.float64) - g)) / max(np.max(np.abs(w)), 1e-30)))
    print("onnxruntime %s: %d outputs, max error %.3g of the largest magnitude" % (ort.__version__, len(want), worst))
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
