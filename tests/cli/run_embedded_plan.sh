#!/bin/sh
# CLI test: self-contained plans (issue 23, docs/plan-format.md). A plan made
# by `korch optimize` is copied alone to another folder and the model is
# deleted; `korch run`, `explain`, `export`, `info` and `bench` then work from
# the plan alone, and run's outputs match the reference executor's on the
# original model. A flipped byte in the weight or graph section and a
# truncated plan are refused with one error naming the file; a plan tuned on
# another CPU runs and says so in one note; `--no-embed` keeps the old form,
# which needs its model. Nothing here depends on timing.
# usage: run_embedded_plan.sh KORCH MODEL INPUT_NPY TENSOR_COMPARE_TOOL WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
need_args 5 "KORCH MODEL INPUT_NPY TENSOR_COMPARE_TOOL WORK_DIR" $#
korch=$1 model_src=$2 x=$3 compare=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to damage plans"; exit 77; }
expect_timeout=900
start_work "$work/made" "$work/shipped"
private_cache "$work/cache"

# same_outputs LABEL DIR: every output of the reference run matches
same_outputs() {
    n=0
    for f in "$work/ref"/*.npy; do
        n=$((n + 1))
        if "$compare" "$2/$(basename "$f")" "$f" >"$work/cmp" 2>&1; then pass; else
            fail "$1: $(basename "$f"): $(cat "$work/cmp")"
        fi
    done
    [ "$n" -gt 0 ] || fail "$1: the reference run wrote no outputs"
}

model="$work/made/model.onnx"
cp "$model_src" "$model"
expect "reference run" 0 run "$model" --input "$x" --output-dir "$work/ref"
expect "optimize" 0 optimize "$model" -o "$work/made/model.plan" --threads 1 --strategy greedy -q
expect "optimize --no-embed" 0 optimize "$model" -o "$work/made/external.plan" --threads 1 --strategy greedy -q --no-embed
plan="$work/shipped/model.plan"
cp "$work/made/model.plan" "$plan"
cp "$work/made/external.plan" "$work/shipped/external.plan"
rm -f "$model"

# the plan alone
expect "run the plan alone" 0 run "$plan" --input "$x" --output-dir "$work/out" && same_outputs "run" "$work/out"
if [ -s "$err" ]; then fail "run the plan alone: stderr is not empty"; else pass; fi
expect "run --verify" 0 run "$plan" --verify && has "run --verify" "$out" "matches the reference executor"
expect "run --bench" 0 run "$plan" --bench 2 && has "run --bench" "$out" "median_ms="
expect "explain" 0 explain "$plan" && has "explain" "$out" "model: embedded" && has "explain memory" "$out" "peak arena bytes"
has "explain names the machine" "$out" "tuned on: "
expect "info" 0 info "$plan" && has "info" "$out" "plan: format 3, the model embedded" && has "info parameters" "$out" "parameters: "
expect "export" 0 export "$plan" -o "$work/exported" && [ -f "$work/exported/model.c" ] && pass
expect "bench" 0 bench "$plan" --runs 1 --threads 1 && has "bench" "$out" "optimal_ms="
expect "optimize the plan again" 0 optimize "$plan" -o "$work/shipped/again.plan" --threads 1 --strategy greedy -q &&
    expect "run the plan made from a plan" 0 run "$work/shipped/again.plan" --input "$x" --output-dir "$work/again" &&
    same_outputs "plan from a plan" "$work/again"

# the external form needs its model
if grep -aq '^embedded ' "$work/shipped/external.plan"; then fail "--no-embed wrote an embedded plan"; else pass; fi
expect "--no-embed without its model" 1 run "$work/shipped/external.plan" --input "$x" --output-dir "$work/ext" &&
    one_error "--no-embed without its model" "model.onnx"
cp "$model_src" "$work/shipped/model.onnx" # beside the plan, as before
expect "--no-embed beside its model" 0 run "$work/shipped/external.plan" --input "$x" --output-dir "$work/ext" &&
    same_outputs "--no-embed" "$work/ext"
rm -f "$work/shipped/model.onnx"

# damage is refused, naming the file
python3 "$here/plan_damage.py" flip-weights "$plan" "$work/shipped/w.plan"
expect "a weight byte flipped" 1 run "$work/shipped/w.plan" --input "$x" --output-dir "$work/bad" &&
    one_error "a weight byte flipped" "plan \"$work/shipped/w.plan\" is damaged: the checksum of its weight section"
expect "explain refuses it too" 1 explain "$work/shipped/w.plan" && one_error "explain a damaged plan" "weight section"
python3 "$here/plan_damage.py" flip-graph "$plan" "$work/shipped/g.plan"
expect "a graph byte flipped" 1 run "$work/shipped/g.plan" --bench 1 && one_error "a graph byte flipped" "graph section"
python3 "$here/plan_damage.py" truncate "$plan" "$work/shipped/t.plan"
expect "a truncated plan" 1 run "$work/shipped/t.plan" --bench 1 &&
    one_error "a truncated plan" "plan \"$work/shipped/t.plan\" is truncated"
expect "info on a truncated plan" 1 info "$work/shipped/t.plan" && one_error "info truncated" "is truncated"

# tuned on another CPU: runs, matches, one note
python3 "$here/plan_damage.py" foreign "$plan" "$work/shipped/f.plan"
expect "a foreign plan" 0 run "$work/shipped/f.plan" --input "$x" --output-dir "$work/foreign" &&
    same_outputs "foreign" "$work/foreign"
if [ "$(wc -l <"$err")" -eq 1 ] && grep -q '^korch: note: plan .* is foreign: tuned on Imaginary CPU 9000' "$err"; then
    pass
else
    fail "a foreign plan: expected one \"korch: note: ... is foreign\" line"
fi

echo "embedded plans: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
