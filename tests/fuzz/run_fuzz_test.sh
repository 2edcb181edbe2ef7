#!/bin/sh
# CTest driver for the libFuzzer targets (tests/fuzz/fuzz_*.c).
#   run_fuzz_test.sh regress FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       runs every committed crash reproducer of the target
#       (FUZZ_DIR/regressions/load, /tensor, /run or /plan) once, and for model targets every
#       bad-input corpus model; fails on any crash, leak or sanitizer report.
#   run_fuzz_test.sh fuzz FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzz_load for $KORCH_FUZZ_RUNS inputs (default 1000000), seeded with
#       the reproducers, the bad-input corpus and the ONNX backend-test models;
#   run_fuzz_test.sh fuzz-run FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzz_run (load, infer, then run small models), same seeds, a quarter
#       of the inputs;
#   run_fuzz_test.sh fuzz-tensor FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzz_tensor (the .npy / .pb readers), seeded with tensor files.
#   run_fuzz_test.sh fuzz-plan FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR
#       fuzz_plan (plan files and embedded models), seeded with the
#       committed plans, a quarter of the inputs.
# Fuzzing is deterministic (issue 16): a fixed -seed, a number of inputs
# (-runs) instead of a time, and a corpus that starts empty every run, so a
# run finds the same inputs on any machine at any load, and a finding is
# reproduced by running the test again. New interesting inputs go to
# WORK_DIR/corpus; a crash leaves WORK_DIR/artifacts/MODE/crash-* (fix it, then
# commit it to FUZZ_DIR/regressions/<target>). -timeout (one input) is a hang
# guard only. libFuzzer's own exit code for a finding is 77, CTest's skip
# code: findings exit 1 here, and 77 means skipped (no inputs to replay).
set -u
if [ $# -ne 5 ]; then
    echo "usage: $0 regress|fuzz|fuzz-run|fuzz-tensor|fuzz-plan FUZZER FUZZ_DIR BADINPUT_CORPUS WORK_DIR" >&2
    exit 2
fi
mode=$1 fuzzer=$2 fuzz_dir=$3 badinput=$4 work=$5
runs=${KORCH_FUZZ_RUNS:-1000000}
seed=${KORCH_FUZZ_SEED:-1}
artifacts=$work/artifacts/$mode
rm -rf "$work/corpus" "$work/seeds" "$artifacts"
mkdir -p "$work/corpus" "$artifacts" || exit 2
common="-rss_limit_mb=2048 -timeout=300 -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix=$artifacts/"
fuzz_args="-seed=$seed -reload=0 -print_final_stats=1"

# libFuzzer feeds the values the target compares back into its mutations
# (-use_cmp), and pointer comparisons put addresses there: with address
# space randomisation two runs of one seed part ways after some thousand
# inputs (measured). setarch -R turns it off for the fuzzer.
norandom=""
if setarch "$(uname -m)" -R true 2>/dev/null; then
    norandom="setarch $(uname -m) -R"
else
    echo "warning: setarch -R is not allowed here: address randomisation stays on, runs may differ"
fi

# runs a fuzzer; any failure, libFuzzer's 77 included, exits 1
run_fuzzer() {
    $norandom "$fuzzer" "$@"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$(basename "$fuzzer"): FAILED (exit $rc); reproducers:" $(ls "$artifacts")
        echo "replay one with: $fuzzer $artifacts/<file>"
        exit 1
    fi
    exit 0
}

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
    # without inputs libFuzzer would start fuzzing: nothing to replay is a skip
    [ $# -gt 0 ] || { echo "no reproducers for $target: skipped"; exit 77; }
    # shellcheck disable=SC2086
    run_fuzzer $common "$@"
    ;;
fuzz | fuzz-run)
    seeds="$fuzz_dir/regressions/load $fuzz_dir/regressions/run $badinput"
    [ "$mode" = fuzz-run ] && runs=$((runs / 4))
    for d in /usr/share/libonnx-testdata/data/node /usr/share/libonnx-testdata/data/simple; do
        [ -d "$d" ] && seeds="$seeds $d"
    done
    echo "$(basename "$fuzzer"): $runs inputs, seed $seed"
    # shellcheck disable=SC2086
    run_fuzzer $common $fuzz_args -runs="$runs" -max_len=131072 "$work/corpus" $seeds
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
    echo "$(basename "$fuzzer"): $runs inputs, seed $seed"
    # shellcheck disable=SC2086
    run_fuzzer $common $fuzz_args -runs="$runs" -max_len=65536 "$work/corpus" "$work/seeds"
    ;;
fuzz-plan)
    # seeds: the committed plans (a plan of each format and form, damaged
    # ones; selector byte already in front) and the same plans with their
    # checksums intact but the text edited (the parser behind the checksum)
    mkdir -p "$work/seeds"
    n=0
    for f in "$fuzz_dir"/regressions/plan/*; do
        [ -f "$f" ] || continue
        n=$((n + 1))
        cp "$f" "$work/seeds/$n"
    done
    echo "$(basename "$fuzzer"): $((runs / 4)) inputs, seed $seed"
    # shellcheck disable=SC2086
    run_fuzzer $common $fuzz_args -runs="$((runs / 4))" -max_len=65536 "$work/corpus" "$work/seeds"
    ;;
*)
    echo "$0: unknown mode $mode" >&2
    exit 2
    ;;
esac
