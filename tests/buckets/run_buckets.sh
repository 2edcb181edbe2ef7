#!/bin/sh
# CLI test: plans with shape buckets (issue 23; docs/plan-format.md "Shape
# buckets", docs/cli.md). `korch optimize --input-shape 'x=1x{4,8,16}x8'`
# writes one plan file of three buckets for seq_net.onnx (a Reshape whose
# target comes from Shape(x), then a Softmax over it): `korch run` picks the
# bucket from the input file's shape and matches the reference executor at
# each; a shape no bucket holds is refused with one error listing the
# buckets; --bench without inputs needs --input-shape to choose; info,
# explain and check list the buckets; export refuses without --input-shape
# and exports the bucket it names; a range {4..16} expands to 4, 8, 16;
# a malformed list is a usage error. Nothing here depends on timing.
# usage: run_buckets.sh KORCH FIXTURES TENSOR_COMPARE_TOOL WORK_DIR
set -u
. "$(dirname "$0")/../cli/lib.sh"
need_args 4 "KORCH FIXTURES TENSOR_COMPARE_TOOL WORK_DIR" $#
korch=$1 fx=$2 compare=$3 work=$4
expect_timeout=900
start_work

plan="$work/seq.plan"
buckets="x=1x4x8, x=1x8x8 and x=1x16x8"
expect "optimize three buckets" 0 optimize "$fx/seq_net.onnx" --input-shape 'x=1x{4,8,16}x8' -o "$plan" \
    --threads 1 --strategy greedy && {
    has "optimize says bucket 3" "$out" "bucket 3 of 3: x=1x16x8"
    has "optimize summary" "$out" "plan: 3 shape buckets written to"
}
if head -n 1 "$plan" | grep -q '^korch-plan 4$'; then pass; else fail "the bucketed plan is not format 4"; fi
if [ "$(grep -ac '^embedded ' "$plan")" -eq 1 ]; then pass; else fail "the model is not embedded once"; fi

for seq in 4 8 16; do
    expect "reference at $seq" 0 run "$fx/seq_net.onnx" --input "$fx/x$seq.npy" --output-dir "$work/ref$seq"
    expect "plan at $seq" 0 run "$plan" --input "$fx/x$seq.npy" --output-dir "$work/out$seq"
    if "$compare" "$work/out$seq/y.npy" "$work/ref$seq/y.npy" >"$work/cmp" 2>&1; then pass; else
        fail "plan at $seq: $(cat "$work/cmp")"
    fi
done
expect "a shape no bucket holds" 1 run "$plan" --input "$fx/x12.npy" --output-dir "$work/out12" &&
    one_error "a shape no bucket holds" "plan \"$plan\" has no shape bucket for x=1x12x8; its buckets are $buckets"
expect "--bench without a shape" 1 run "$plan" --bench 1 &&
    one_error "--bench without a shape" "holds 3 shape buckets ($buckets): give the input shapes"
expect "--bench --input-shape" 0 run "$plan" --bench 1 --input-shape x=1x8x8 -q && has "--bench" "$out" "median_ms="
expect "--input-shape of no bucket" 1 run "$plan" --bench 1 --input-shape x=1x5x8 &&
    one_error "--input-shape of no bucket" "no shape bucket for x=1x5x8"
expect "run --verify at 16" 0 run "$plan" --verify --input-shape x=1x16x8 &&
    has "run --verify" "$out" "matches the reference executor"

expect "info" 0 info "$plan" && has "info" "$out" "shape buckets: 3" && has "info bucket 3" "$out" "bucket 3: x=1x16x8"
expect "info --input-shape" 0 info "$plan" --input-shape x=1x16x8 && has "info shown" "$out" "shown: x=1x16x8"
expect "explain" 0 explain "$plan" && has "explain" "$out" "shape buckets: 3" &&
    has "explain bucket 2" "$out" "bucket 2: x=1x8x8:" && has "explain shows one" "$out" "input: x 1x4x8"
expect "explain --input-shape" 0 explain "$plan" --input-shape x=1x8x8 && has "explain chosen" "$out" "input: x 1x8x8"
expect "check" 0 check "$plan" && has "check bucket 3" "$out" "ok: bucket 3 (x=1x16x8)"
expect "export without a bucket" 1 export "$plan" -o "$work/exported" &&
    one_error "export without a bucket" "korch export writes one: choose it with --input-shape NAME=DIMS"
expect "export a bucket" 0 export "$plan" -o "$work/exported" --input-shape x=1x8x8 -q &&
    [ -f "$work/exported/model.c" ] && pass
expect "bench without a bucket" 1 bench "$plan" --runs 1 --threads 1 &&
    one_error "bench without a bucket" "holds 3 shape buckets ($buckets)"
expect "bench a bucket" 0 bench "$plan" --runs 1 --threads 1 --input-shape x=1x4x8 && has "bench" "$out" "optimal_ms="

# a range: the powers of two from the start, then the end
expect "optimize a range" 0 optimize "$fx/seq_net.onnx" --input-shape 'x=1x{4..16}x8' -o "$work/range.plan" \
    --threads 1 --strategy none --estimate -q &&
    expect "range buckets" 0 explain "$work/range.plan" && has "range buckets" "$out" "shape buckets: 3" &&
    has "range: 16" "$out" "bucket 3: x=1x16x8"
expect "a bad list" 2 optimize "$fx/seq_net.onnx" --input-shape 'x=1x{4,a}x8' -o "$work/bad.plan" &&
    has "a bad list" "$err" "a brace list holds positive numbers"
expect "a list not closed" 2 optimize "$fx/seq_net.onnx" --input-shape 'x=1x{4,8x8' -o "$work/bad.plan" &&
    has "a list not closed" "$err" "not closed"
# equal lists of two inputs are tied (one sequence length): two buckets, not four
expect "tied lists" 0 optimize "$fx/two_inputs.onnx" --input-shape 'x=1x{4,8}x8' --input-shape 'm=1x{4..8}x8' \
    -o "$work/two.plan" --threads 1 --strategy none --estimate -q &&
    expect "tied lists: explain" 0 explain "$work/two.plan" && has "tied lists" "$out" "shape buckets: 2" &&
    has "tied: bucket 2" "$out" "bucket 2: x=1x8x8;m=1x8x8"
# one value in braces: an ordinary plan (format 3)
expect "one value" 0 optimize "$fx/seq_net.onnx" --input-shape 'x=1x{8}x8' -o "$work/one.plan" \
    --threads 1 --strategy none --estimate -q
if head -n 1 "$work/one.plan" | grep -q '^korch-plan 3$'; then pass; else fail "one value: not format 3"; fi

echo "buckets: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
