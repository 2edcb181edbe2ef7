#!/bin/sh
# Creates (idempotently) build/venv-quant: the Python of the quantized-model
# tests (tests/quant). ONNX Runtime's quantization tools
# (onnxruntime.quantization) need onnx >= 1.16 and ml_dtypes; build/venv
# (scripts/python-env.sh) has Debian's onnx 1.12, which the rest of the
# suite is built against, so rather than upgrading it this venv layers the
# two on top of it: a .pth file puts build/venv's packages (onnxruntime,
# torch, numpy) behind its own.
#
# Usage: scripts/python-env-quant.sh [--quiet]   (prints the venv's python)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE="$ROOT/build/venv"
VENV="$ROOT/build/venv-quant"
PY="$VENV/bin/python"
QUIET=0
[ "${1:-}" = "--quiet" ] && QUIET=1

"$ROOT/scripts/python-env.sh" --quiet
if [ ! -x "$PY" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
SITE=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
BASESITE=$("$BASE/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$BASESITE" > "$SITE/zz_build_venv.pth"

check() {
    "$PY" - <<'PYEOF' 2>/dev/null
import numpy, torch, onnx, onnxruntime.quantization
assert numpy.__version__.split(".")[0] == "1", numpy.__version__
PYEOF
}

if ! check; then
    CONS="$VENV/constraints.txt"
    echo "numpy==$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')" > "$CONS"
    echo "python-env-quant: pip install 'onnx>=1.16' ml_dtypes (numpy pinned)" >&2
    if ! "$PY" -m pip install -q --disable-pip-version-check -c "$CONS" "onnx>=1.16" ml_dtypes >&2 || ! check; then
        echo "python-env-quant: could not set up onnxruntime.quantization; tests/quant will be skipped" >&2
        exit 1
    fi
fi
[ "$QUIET" = 1 ] || echo "$PY"
