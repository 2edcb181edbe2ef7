"""The tiny zoo models the test suite needs, built by the suite itself.

    python3 tests/zoo/make_tiny_models.py SOURCE_DIR OUT_DIR

Writes, for every `<name>_tiny` model of models/zoo.py, into OUT_DIR:
  <name>_tiny.onnx                       the model (same export as `make models`)
  <name>_tiny.input.<input>.npy          its seeded input
  <name>_tiny.output.<i>.npy             PyTorch's output i for that input

It reuses the zoo's own definitions and seeds (models/build.py make_model),
so the files equal what `make models` writes, but it needs only what
scripts/install-deps.sh installs (Debian's python3-torch, -torchvision,
-numpy): no venv, no ONNX Runtime, no network. The ONNX Runtime cross-check
and the metadata of models/build.py are left to `make models`.

Everything is rebuilt on every call into a fresh folder that replaces
OUT_DIR at the end, so a run never sees models of an earlier one. Exit 77
(skipped, for CTest) when torch or torchvision cannot be imported; any other
failure exits 1.
"""
import os
import shutil
import sys
import warnings


def main(argv):
    if len(argv) != 3:
        print("usage: make_tiny_models.py SOURCE_DIR OUT_DIR", file=sys.stderr)
        return 2
    src, out = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    try:
        import numpy as np
        import torch
        import torchvision  # noqa: F401 (the zoo's CNNs need it)
    except ImportError as e:
        print(f"make_tiny_models: {e}: needs python3-torch, python3-torchvision and python3-numpy "
              "(scripts/install-deps.sh); skipped")
        return 77
    sys.path.insert(0, src)
    from models import common
    from models.build import make_model
    from models.zoo import ALL_NAMES, lookup

    torch.set_num_threads(2)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    names = [n for n in ALL_NAMES if n.endswith("_tiny")]
    for name in names:
        spec, tiny = lookup(name)
        model, x = make_model(spec, tiny)
        with torch.no_grad():
            ref = model(x)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), os.path.join(tmp, name + ".onnx"), opset_version=spec.opset,
                              input_names=[spec.input_name], output_names=list(spec.output_names),
                              do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
        np.save(os.path.join(tmp, f"{name}.input.{common.sanitize(spec.input_name)}.npy"), x.numpy())
        for i, r in enumerate(refs):
            np.save(os.path.join(tmp, f"{name}.output.{i}.npy"), r.detach().numpy())
        print(f"{name}: {len(refs)} output(s)")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    print(f"make_tiny_models: {len(names)} models in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
