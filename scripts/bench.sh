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
CMD="scripts/bench.sh $*"

"$ROOT/scripts/python-env.sh" --quiet
PY="$ROOT/build/venv/bin/python"

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

exec "$PY" -m bench.harness --probe "$PROBE" --command "$CMD" "$@"
