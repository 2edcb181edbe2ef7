#!/bin/sh
# Runs tests/api/test_threads.c built with ThreadSanitizer: configures a tree
# of its own with -DKORCH_TSAN=ON (the whole library instrumented), builds
# only that test, and runs it with OMP_NUM_THREADS=1. libgomp is not
# instrumented, so OpenMP worker threads would give false reports; the test's
# sessions use one thread each and the concurrency under test is between the
# application's threads. Any race report fails the test (exit 66).
#
# usage: run_tsan.sh SOURCE_DIR WORK_DIR [CC]
set -u
src=$1
work=$2
cc=${3:-cc}
mkdir -p "$work" || exit 2
log="$work/build.log"
probe="$work/probe"
printf 'int main(void){return 0;}\n' >"$probe.c"
if ! "$cc" -fsanitize=thread "$probe.c" -o "$probe" 2>/dev/null || ! "$probe"; then
    echo "$cc cannot build or run -fsanitize=thread programs: skipped"
    exit 77
fi
start=$(date +%s)
if ! cmake -S "$src" -B "$work" -DKORCH_TSAN=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER="$cc" >"$log" 2>&1 ||
   ! cmake --build "$work" -j 2 --target api_test_threads >>"$log" 2>&1; then
    tail -40 "$log"
    echo "building the ThreadSanitizer tree failed (log: $log)"
    exit 1
fi
built=$(date +%s)
echo "TSan tree built in $((built - start)) s"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$src/tests/api/tsan.supp" OMP_NUM_THREADS=1 KORCH_SOURCE_DIR="$src" \
    "$work/tests/api_test_threads"
rc=$?
echo "test ran in $(($(date +%s) - built)) s under ThreadSanitizer (exit $rc)"
exit $rc
