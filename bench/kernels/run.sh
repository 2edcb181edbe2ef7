#!/bin/sh
# Kernel micro-benchmark: generated kernels vs STREAM in the same run, then
# ONNX Runtime on the same single-op models (also in this run).
#
# Usage: bench/kernels/run.sh [BUILD_DIR] [THREADS]
#   BUILD_DIR  a Release build of korch (default: build)
#   THREADS    OpenMP / intra-op threads (default: 2)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
THREADS=${2:-2}
OUT=$BUILD/bench-kernels
mkdir -p "$OUT"
# same flags as the library; links the static library
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -march=native -fopenmp \
    -I"$ROOT/include" -I"$ROOT/src" "$ROOT/bench/kernels/bench_kernels.c" "$BUILD/libkorch_static.a" \
    -o "$OUT/bench_kernels" -lprotobuf-c -lsqlite3 -ldnnl $(pkg-config --libs cbc) -lm -ldl
echo "## korch generated kernels ($(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
echo
OMP_NUM_THREADS=$THREADS OMP_PROC_BIND=true "$OUT/bench_kernels" "$THREADS"
PY=$("$ROOT/scripts/python-env.sh" --quiet >/dev/null 2>&1 && echo "$ROOT/build/venv/bin/python" || true)
if [ -x "$ROOT/build/venv/bin/python" ]; then
    echo
    "$ROOT/build/venv/bin/python" "$ROOT/bench/kernels/ort_kernels.py" "$THREADS"
else
    echo "(ONNX Runtime comparison skipped: scripts/python-env.sh could not set up build/venv)"
fi
