#!/bin/sh
# Self-test of the benchmark harness on two tiny models, with a fake korch
# that follows the CLI contract (and one that fails), without recording.
# Exits non-zero if the harness does not produce the expected table.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/python-env.sh --quiet
scripts/build-models.sh resnet50_tiny bert_base_tiny >/dev/null
mkdir -p build/bench
cc -O3 -march=native -fopenmp bench/probe/probe.c -o build/bench/probe
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
build/venv/bin/python -m bench.harness --models resnet50_tiny,bert_base_tiny --runs 3 \
    --korch bench/fake-korch.sh --korch-strategies onnx,greedy --korch-bench-k 2 \
    --korch-db build/bench/selftest.db --no-record --probe build/bench/probe >"$OUT" 2>&1
fail=0
check() { grep -q -- "$1" "$OUT" || { echo "selftest: missing: $1"; fail=1; }; }
check "| resnet50_tiny |"
check "| bert_base_tiny |"
check "korch-greedy | [0-9.]* | "
check "ok vs ORT"
check "optimise"
check "Cores [0-9]* and [0-9]* (bench/probe .cores.): at start round trip [0-9]* ns"
FAKE_KORCH_FAIL=run build/venv/bin/python -m bench.harness --models resnet50_tiny --runs 2 \
    --korch bench/fake-korch.sh --korch-strategies greedy --no-record \
    --probe build/bench/probe >"$OUT" 2>&1
check "n/a (\`korch run\` exit 1: korch: error: injected failure in run)"
build/venv/bin/python -m bench.harness --models resnet50_tiny --runs 2 \
    --korch build/does-not-exist --korch-strategies greedy --contenders ort,korch --no-record \
    --probe build/bench/probe >"$OUT" 2>&1
check "n/a (korch CLI not built)"
if [ "$fail" = 0 ]; then echo "bench selftest: 1 passed, 0 failed"; else
    echo "bench selftest: 0 passed, 1 failed"; cat "$OUT"; exit 1; fi
