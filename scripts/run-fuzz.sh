#!/bin/sh
# Configures, builds and runs the libFuzzer suite in its own clang build dir:
#   scripts/run-fuzz.sh [BUILD_DIR]          (default build-fuzz)
# It replays the committed crash reproducers and the bad-input corpus, then
# fuzzes fuzz_load (model loading) and fuzz_tensor (the .npy/.pb input
# readers) for KORCH_FUZZ_RUNS inputs each (default 1000000) and fuzz_run (load,
# then run small models with the reference kernels) for a quarter of that,
# with a fixed seed (KORCH_FUZZ_SEED, default 1): the same inputs on every
# machine, however loaded (tests/fuzz/run_fuzz_test.sh). The output ends
# with CTest's summary, which scripts/run-tests.sh reads. Needs clang with
# libFuzzer (KORCH_FUZZ_CC to pick another clang). Without clang, or with
# KORCH_SKIP_FUZZ=1, every fuzz test is reported skipped, loudly
# ("run-fuzz: all N fuzz tests skipped ..."), never passed.
set -u
cd "$(dirname "$0")/.." || exit 2
dir=${1:-build-fuzz}
cc=${KORCH_FUZZ_CC:-clang}
runs=${KORCH_FUZZ_RUNS:-1000000}
# the tests a fuzz run counts (the fuzz tests and setup/test-cache, their
# fixture), for an honest count when none can run
n_tests=$(($(grep -c 'add_test(NAME fuzz/' tests/fuzz/CMakeLists.txt) + 1))
if [ "${KORCH_SKIP_FUZZ:-0}" = 1 ]; then
    echo "run-fuzz: all $n_tests fuzz tests skipped because KORCH_SKIP_FUZZ=1 (the fuzz suite did not run)"
    exit 0
fi
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "run-fuzz: all $n_tests fuzz tests skipped: $cc not found; the fuzz suite needs clang with libFuzzer" \
        "(scripts/install-deps.sh installs it)"
    exit 0
fi
CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DKORCH_FUZZ=ON -DKORCH_FUZZ_RUNS="$runs" >/dev/null ||
    exit 1
cmake --build "$dir" -j "$(nproc)" --target fuzz_load fuzz_tensor fuzz_run fuzz_plan >/dev/null || {
    echo "run-fuzz: building the fuzz targets in $dir failed"
    exit 1
}
cd "$dir" && ctest --output-on-failure -R '^fuzz/'
