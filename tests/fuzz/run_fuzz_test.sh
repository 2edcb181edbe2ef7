#!/bin/sh
# CTest driver for the libFuzzer targets (tests/fuzz/fuzz_*.c).
#   run_fuzz_test.sh regress FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       runs every committed crash reproducer of the target
#       (FUZZ_DIR/regressions/load, /tensor or /run) once, and for model targets every
#       bad-input corpus model; fails on any crash, leak or sanitizer report.
#   run_fuzz_test.sh fuzz-run FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzzes fuzz_run (load, infer, then run small models) for half that time.
#   run_fuzz_test.sh fuzz-tensor FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzzes fuzz_tensor (the .npy / .pb readers) for half that time.
#   run_fuzz_test.sh fuzz FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzzes for $KORCH_FUZZ_SECONDS s (default 60), seeded with the
#       reproducers, the bad-input corpus and the ONNX backend-test models.
#       New interesting inputs accumulate in WORK_DIR/corpus; a crash leaves
#       WORK_DIR/artifacts/crash-* (fix it, then commit it to FUZZ_DIR/regressions/<target>).
set -u
if [ $# -ne 5 ]; then
    echo "usage: $0 regress|fuzz|fuzz-run|fuzz-tensor FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR" >&2
    exit 2
fi
mode=$1 fuzzer=$2 fuzz_dir=$3 badinput=$4 work=$5
mkdir -p "$work/corpus" "$work/artifacts" || exit 2
common="-rss_limit_mb=2048 -timeout=10 -artifact_prefix=$work/artifacts/"

case "$mode" in
regress)
    # reproducers live in regressions/<target without "fuzz_">; models also replay the corpus
    target=$(basename "$fuzzer")
    set --
    for f in "$fuzz_dir/regressions/${target#fuzz_}"/*; do
        [ -f "$f" ] && set -- "$@" "$f"
    done
    if [ "$target" = fuzz_load ] || [ "$target" = fuzz_run ]; then
        for f in "$badinput"/*.onnx; do set -- "$@" "$f"; done
    fi
    echo "$target: replaying $# inputs"
    [ $# -gt 0 ] || exit 0 # without inputs libFuzzer would start fuzzing
    # shellcheck disable=SC2086
    exec "$fuzzer" $common "$@"
    ;;
fuzz | fuzz-run)
    seeds="$fuzz_dir/regressions/load $fuzz_dir/regressions/run $badinput"
    seconds=${KORCH_FUZZ_SECONDS:-60}
    [ "$mode" = fuzz-run ] && seconds=$((seconds / 2))
    for d in /usr/share/libonnx-testdata/data/node /usr/share/libonnx-testdata/data/simple; do
        [ -d "$d" ] && seeds="$seeds $d"
    done
    # shellcheck disable=SC2086
    "$fuzzer" $common -max_total_time="$seconds" -max_len=131072 -print_final_stats=1 \
        "$work/corpus" $seeds
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$(basename "$fuzzer"): FAILED (exit $rc); reproducers:" $(ls "$work/artifacts")
        echo "replay one with: $fuzzer $work/artifacts/<file>"
    fi
    exit $rc
    ;;
fuzz-tensor)
    # seeds: tensor files with the selector byte in front (0: .npy, 1: .pb)
    mkdir -p "$work/seeds"
    n=0
    for f in "$fuzz_dir"/regressions/tensor/* "$badinput"/*.npy "$fuzz_dir"/../cli/fixtures/*.npy "$fuzz_dir"/../cli/fixtures/*.pb \
        /usr/share/libonnx-testdata/data/node/test_*/test_data_set_0/*.pb; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        [ "$n" -gt 400 ] && break
        case "$f" in
        */regressions/*) cp "$f" "$work/seeds/$n" ;; # already has its selector byte
        *.npy) { printf '\000'; cat "$f"; } >"$work/seeds/$n" ;;
        *) { printf '\001'; cat "$f"; } >"$work/seeds/$n" ;;
        esac
    done
    # shellcheck disable=SC2086
    "$fuzzer" $common -max_total_time="$(( ${KORCH_FUZZ_SECONDS:-60} / 2 ))" -max_len=65536 -print_final_stats=1 \
        "$work/corpus" "$work/seeds"
    rc=$?
    [ $rc -ne 0 ] && echo "fuzz_tensor: FAILED (exit $rc); reproducers:" $(ls "$work/artifacts")
    exit $rc
    ;;
*)
    echo "$0: unknown mode $mode" >&2
    exit 2
    ;;
esac
