#!/bin/sh
# Creates (idempotently) the Python environment used by the model zoo
# (models/) and the peer benchmark harness (bench/):
#
#   build/venv   venv on top of Debian's /usr/bin/python3 with
#                --system-site-packages, so Debian's python3-torch 1.13,
#                python3-torchvision 0.14 and python3-numpy 1.24 are visible;
#                onnx, onnxruntime and matplotlib come from PyPI.
#
# numpy is pinned to the version Debian ships (constraint file below): the
# newest onnx/onnxruntime/matplotlib wheels would otherwise pull numpy 2.x,
# against which Debian's torch 1.13 (built for numpy 1.x) cannot import.
#
# Quiet when everything is already installed. The last line printed is the
# venv's python; other scripts can also just use build/venv/bin/python.
#
# Usage: scripts/python-env.sh [--quiet]   (--quiet: print nothing on success)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV="$ROOT/build/venv"
PY="$VENV/bin/python"
SYSPY=/usr/bin/python3
QUIET=0
[ "${1:-}" = "--quiet" ] && QUIET=1

say() { [ "$QUIET" = 1 ] || echo "$@"; }

if [ ! -x "$SYSPY" ]; then
    echo "python-env: $SYSPY not found; run scripts/install-deps.sh" >&2
    exit 1
fi
if ! "$SYSPY" -c "import torch, torchvision, numpy" 2>/dev/null; then
    echo "python-env: Debian torch/torchvision/numpy missing; run scripts/install-deps.sh" >&2
    exit 1
fi

if [ ! -x "$PY" ]; then
    echo "python-env: creating $VENV" >&2
    mkdir -p "$ROOT/build"
    "$SYSPY" -m venv --system-site-packages "$VENV"
fi

check() {
    "$PY" - <<'PYEOF' 2>/dev/null
import numpy, torch, torchvision, onnx, onnxruntime, matplotlib
assert numpy.__version__.split(".")[0] == "1", numpy.__version__
PYEOF
}

if ! check; then
    NPVER=$("$SYSPY" -c "import numpy; print(numpy.__version__)")
    CONS="$ROOT/build/venv/constraints.txt"
    echo "numpy==$NPVER" > "$CONS"
    echo "python-env: pip install onnx onnxruntime matplotlib (numpy pinned to $NPVER)" >&2
    if ! "$PY" -m pip install -q --disable-pip-version-check -c "$CONS" \
        onnx onnxruntime matplotlib >&2; then
        echo "python-env: pip could not install onnx onnxruntime matplotlib from PyPI (it needs network" >&2
        echo "python-env: access to pypi.org, or a mirror in PIP_INDEX_URL); once it can, run" >&2
        echo "python-env:   $PY -m pip install -c $CONS onnx onnxruntime matplotlib" >&2
        echo "python-env: or simply scripts/python-env.sh again" >&2
        exit 1
    fi
    if ! check; then
        echo "python-env: environment still broken after install:" >&2
        "$PY" -c "import numpy, torch, torchvision, onnx, onnxruntime, matplotlib" >&2 || true
        exit 1
    fi
fi

say "$PY"
