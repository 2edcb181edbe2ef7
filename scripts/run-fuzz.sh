#!/bin/sh
# Configures, builds and runs the libFuzzer suite in its own clang build dir:
#   scripts/run-fuzz.sh [BUILD_DIR]          (default build-fuzz)
# It replays the committed crash reproducers and the bad-input corpus, then
# fuzzes fuzz_load (model loading) for KORCH_FUZZ_SECONDS (default 60) and
# fuzz_tensor (the .npy/.pb input readers) and fuzz_run (load, then run small
# models with the reference kernels) for half that each. The output ends with
# CTest's summary line ("...tests passed, N tests failed out of M"), which
# scripts/run-tests.sh reads. Needs clang with libFuzzer (KORCH_FUZZ_CC to
# pick another clang); KORCH_SKIP_FUZZ=1 skips it, loudly.
set -u
cd "$(dirname "$0")/.." || exit 2
dir=${1:-build-fuzz}
cc=${KORCH_FUZZ_CC:-clang}
if [ "${KORCH_SKIP_FUZZ:-0}" = 1 ]; then
    echo "run-fuzz: SKIPPED because KORCH_SKIP_FUZZ=1 (the fuzz suite did not run)"
    echo "100% tests passed, 0 tests failed out of 0"
    exit 0
fi
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "run-fuzz: $cc not found; the fuzz suite needs clang with libFuzzer (or set KORCH_SKIP_FUZZ=1)"
    exit 1
fi
seconds=${KORCH_FUZZ_SECONDS:-60}
CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DKORCH_FUZZ=ON -DKORCH_FUZZ_SECONDS="$seconds" >/dev/null ||
    exit 1
cmake --build "$dir" -j "$(nproc)" --target fuzz_load fuzz_tensor fuzz_run >/dev/null || {
    echo "run-fuzz: building the fuzz targets in $dir failed"
    exit 1
}
cd "$dir" && ctest --output-on-failure -R '^fuzz/'
