#!/bin/sh
# Shapes as exporters write them (issue 18): an input dimension written as
# dim_value -1 or an empty dim_param is symbolic; without --input-shape
# `check` validates everything but shapes and lists the input, and a run is
# refused with one error naming the input and the flag; with it, the
# model checks, runs (reference and optimized plan) and gives the expected
# outputs. int64 and bool scalar graph inputs ride along.
# usage: run_shapes.sh KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR
set -u
[ $# -eq 4 ] || { echo "usage: $0 KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR" >&2; exit 2; }
korch=$1 fx=$2 compare=$3 work=$4
rm -rf "$work"; mkdir -p "$work" || exit 2
out="$work/stdout" err="$work/stderr"
passed=0 failed=0
fail() { echo "FAIL  $*"; echo "      stderr: $(head -c 400 "$err" | tr '\n' '|')"; failed=$((failed + 1)); }
pass() { passed=$((passed + 1)); }
expect() {
    label=$1 want=$2; shift 2
    timeout -k 5 300 "$korch" "$@" >"$out" 2>"$err"; rc=$?
    if [ "$rc" -ne "$want" ]; then fail "$label: exit $rc, expected $want"; return 1; fi
    pass
}
has_out() { if grep -qF -- "$2" "$out"; then pass; else fail "$1: no \"$2\" on stdout"; fi; }
has_err() { if grep -qF -- "$2" "$err"; then pass; else fail "$1: no \"$2\" on stderr"; fi; }
same() { if "$compare" "$2" "$3" >/dev/null 2>&1; then pass; else fail "$1: $2 differs from $3"; fi; }

ins="--input x=$fx/x5.npy --input rate=$fx/rate.npy --input flag=$fx/flag.npy"
for m in dim_minus_one dim_param_empty; do
    model=$fx/$m.onnx
    # check validates all but shapes and lists the open input (exit 0);
    # running needs the shape: one error naming the input and the flag
    expect "$m: check without --input-shape" 0 check "$model" &&
        has_out "$m: says shapes were not checked" 'shapes not checked' &&
        has_out "$m: lists the open input" '?x3'
    expect "$m: run without --input-shape" 1 run "$model" --bench 1 &&
        has_err "$m: names the input" 'graph input "x" has unknown dimension 0' &&
        has_err "$m: names the flag" '--input-shape x=...'
    expect "$m: check" 0 check "$model" --input-shape x=5x3
    expect "$m: wrong fixed dim" 1 check "$model" --input-shape x=5x4 && has_err "$m: fixed dim" 'dimension 1 is fixed to 3'
    # shellcheck disable=SC2086
    expect "$m: run" 0 run "$model" --input-shape x=5x3 $ins --output-dir "$work/$m.ref" &&
        same "$m: y" "$work/$m.ref/y.npy" "$fx/dim_minus_one.y.npy" &&
        same "$m: z" "$work/$m.ref/z.npy" "$fx/dim_minus_one.z.npy"
done
# the optimized plan keeps the fixed shape and the scalar int64/bool inputs
# shellcheck disable=SC2086
expect "optimize" 0 optimize "$fx/dim_minus_one.onnx" --input-shape x=5x3 --threads 2 -o "$work/dm.plan" $ins &&
    expect "run plan" 0 run "$work/dm.plan" $ins --output-dir "$work/plan" &&
    same "plan z" "$work/plan/z.npy" "$fx/dim_minus_one.z.npy"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
