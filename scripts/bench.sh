#!/bin/sh
# Peer benchmark: ONNX Runtime vs PyTorch eager vs korch, interleaved.
#
#   scripts/bench.sh [--models a,b] [--threads T] [--runs N] [harness options...]
#
# Ensures the Python env and the models, builds the machine probes
# (bench/probe/probe.c -> build/bench/probe), then runs bench/harness.py,
# which appends a section to bench/RESULTS.md and rewrites
# bench/results-latest.png and bench/results-latest.json.
# Default: the nine full models, 2 threads, auto rounds. Other options are
# passed to the harness (see `build/venv/bin/python -m bench.harness --help`).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CMD=$(printf "scripts/bench.sh %s" "$*" | sed "s/ *$//")

"$ROOT/scripts/python-env.sh" --quiet
PY="$ROOT/build/venv/bin/python"
# OpenVINO, the CPU peer (issue 19): only the benchmark needs it, so it is not
# in the test suite's environment. Pinned; numpy stays Debian's (constraints).
OPENVINO_VERSION=2026.4.0
if ! "$PY" -c "import openvino, sys; sys.exit(openvino.__version__.split('-')[0] != '$OPENVINO_VERSION')" 2>/dev/null; then
    echo "[bench] pip install openvino==$OPENVINO_VERSION into build/venv"
    "$PY" -m pip install -q --disable-pip-version-check -c "$ROOT/build/venv/constraints.txt" \
        "openvino==$OPENVINO_VERSION"
fi

# Which models? (needed to build only those)
MODELS=""
prev=""
for a in "$@"; do
    case "$prev" in --models) MODELS="$a" ;; esac
    case "$a" in --models=*) MODELS="${a#--models=}" ;; esac
    prev="$a"
done
if [ -n "$MODELS" ]; then
    # shellcheck disable=SC2046
    "$ROOT/scripts/build-models.sh" $(echo "$MODELS" | tr ',' ' ')
else
    "$ROOT/scripts/build-models.sh" --full
fi

mkdir -p "$ROOT/build/bench"
PROBE="$ROOT/build/bench/probe"
if [ ! -x "$PROBE" ] || [ "$ROOT/bench/probe/probe.c" -nt "$PROBE" ]; then
    echo "[bench] compiling probes: cc -O3 -march=native -fopenmp bench/probe/probe.c"
    cc -O3 -march=native -fopenmp "$ROOT/bench/probe/probe.c" -o "$PROBE"
fi

# PyTorch's BLAS. Debian's python3-torch uses libblas.so.3, by default the
# netlib reference BLAS (~3 GFLOP/s sgemm). Give PyTorch OpenBLAS instead
# without touching the system: extract Debian's libopenblas0-openmp package
# into build/openblas (apt-get download + dpkg -x, no install); the harness
# preloads it for its own process only. See bench/README.md.
TORCH_BLAS=""
case " $* " in *" --torch-blas"*) TORCH_BLAS=given ;; esac
if [ -z "$TORCH_BLAS" ]; then
    SYSDIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
    LOCALDIR="$ROOT/build/openblas/usr/lib/x86_64-linux-gnu/openblas-openmp"
    if [ -e "$SYSDIR/libblas.so.3" ]; then
        TORCH_BLAS="$SYSDIR"
    else
        if [ ! -e "$LOCALDIR/libblas.so.3" ]; then
            echo "[bench] fetching Debian libopenblas0-openmp into build/openblas (not installed)"
            DL="$ROOT/build/openblas-dl"
            rm -rf "$DL" && mkdir -p "$DL"
            if (cd "$DL" && apt-get download -q libopenblas0-openmp >/dev/null 2>&1 &&
                dpkg -x "$DL"/libopenblas0-openmp_*.deb "$ROOT/build/openblas"); then
                :
            else
                echo "[bench] WARNING: could not fetch OpenBLAS; PyTorch uses the system BLAS"
            fi
            rm -rf "$DL"
        fi
        TORCH_BLAS="$LOCALDIR"
    fi
    set -- --torch-blas "$TORCH_BLAS" "$@"
fi

exec "$PY" -m bench.harness --probe "$PROBE" --command "$CMD" "$@"
