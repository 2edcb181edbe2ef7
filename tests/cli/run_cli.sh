#!/bin/sh
# CLI test: korch info / check / run on the fixtures of tests/cli/fixtures
# (made by gen-cli-fixtures.py). Exit codes: 0 success, 1 bad model or failed
# run (one "korch: error:" line), 2 bad usage.
# usage: run_cli.sh KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
need_args 4 "KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR" $#
korch=$1 fx=$2 compare=$3 work=$4
expect_timeout=300
start_work

# ---- help and usage errors ----------------------------------------------
expect "korch --help" 0 --help && has "korch --help" "$out" "usage: korch <command>" && empty_stderr "korch --help"
for cmd in info check run; do
    expect "$cmd --help" 0 "$cmd" --help && has "$cmd --help" "$out" "usage: korch $cmd" && empty_stderr "$cmd --help"
    expect "$cmd -h" 0 "$cmd" -h && has "$cmd -h" "$out" "usage: korch $cmd"
    expect "$cmd --no-such-option" 2 "$cmd" "$fx/add_relu.onnx" --no-such-option &&
        has "$cmd unknown option" "$err" "unknown option --no-such-option"
    expect "$cmd without a model" 2 "$cmd"
done
expect "no command" 2
expect "unknown command" 2 frobnicate && has "unknown command" "$err" "unknown command"
expect "--version" 0 --version && has "--version" "$out" "korch "
expect "run --threads 0" 2 run "$fx/add_relu.onnx" --bench 1 --threads 0
expect "run --threads x" 2 run "$fx/add_relu.onnx" --bench 1 --threads x
expect "run --bench 0" 2 run "$fx/add_relu.onnx" --bench 0
expect "run --bench without value" 2 run "$fx/add_relu.onnx" --bench
expect "--input-shape bad dims" 2 check "$fx/symbolic.onnx" --input-shape x=4xq
expect "--input-shape without =" 2 check "$fx/symbolic.onnx" --input-shape x

# ---- info and check ------------------------------------------------------
expect "info" 0 info "$fx/add_relu.onnx" && {
    has "info" "$out" "input  x"
    has "info" "$out" "float32"
    has "info" "$out" "2x3"
    has "info" "$out" "relu out:1"
    has "info" "$out" "nodes: 3 in the file"
    has "info" "$out" "Add"
    has "info" "$out" "Relu"
    empty_stderr "info"
}
expect "check" 0 check "$fx/add_relu.onnx" && has "check" "$out" "ok: 3 nodes" && empty_stderr "check"
expect "check missing file" 1 check "$work/no-such-model.onnx" && one_error "check missing file" "cannot open"
# symbolic dims (issue 23): everything but shapes checked, the inputs named
expect "check symbolic" 0 check "$fx/symbolic.onnx" && {
    has "check symbolic" "$out" "shapes not checked: symbolic input dimensions"
    has "check symbolic: the input and its dims" "$out" "batchx3"
    has "check symbolic: what to do" "$out" "--input-shape x=DIMS"
}
expect "info symbolic" 0 info "$fx/symbolic.onnx" && {
    has "info symbolic: dims by name" "$out" "batchx3"
    has "info symbolic: FLOPs need shapes" "$out" "FLOPs and constant folding need them fixed"
    lacks "info symbolic: no FLOP figure" "$out" "GFLOPs"
}
# run needs them: from its input files or --input-shape
expect "run symbolic without shapes or inputs" 1 run "$fx/symbolic.onnx" --bench 1 &&
    one_error "run symbolic without shapes or inputs" "fix it with --input-shape x="
expect "check --input-shape" 0 check "$fx/symbolic.onnx" --input-shape x=4x3
expect "info --input-shape" 0 info "$fx/symbolic.onnx" --input-shape x=4x3 && has "info --input-shape" "$out" "4x3"
expect "--input-shape fixed dim" 1 check "$fx/add_relu.onnx" --input-shape x=5x3 && one_error "--input-shape fixed dim" "fixed to 2"
expect "--input-shape not an input" 1 check "$fx/add_relu.onnx" --input-shape nope=2x3 &&
    one_error "--input-shape not an input" "not a graph input"

# ---- run -----------------------------------------------------------------
# .npy inputs by name; output names sanitised into file names
d="$work/npy"
expect "run .npy" 0 run "$fx/add_relu.onnx" --input x="$fx/x.npy" --input y="$fx/y.npy" --output-dir "$d" && {
    empty_stderr "run .npy"
    same "run .npy relu" "$d/relu_out_1.npy" "$fx/add_relu.relu.npy"
    same "run .npy sum" "$d/.._escape.npy" "$fx/add_relu.sum.npy"
    if [ "$(ls -A "$d" | sort | tr '\n' ' ')" = ".._escape.npy relu_out_1.npy " ] && [ ! -e "$work/escape.npy" ]; then
        pass
    else
        fail "run .npy: output dir holds: $(ls -A "$d" | tr '\n' ' ')"
    fi
}
# .pb inputs, bound positionally
d="$work/pb"
expect "run .pb" 0 run "$fx/add_relu.onnx" --input "$fx/x.pb" --input "$fx/y.pb" --output-dir "$d" &&
    same "run .pb" "$d/relu_out_1.npy" "$fx/add_relu.relu.npy"

# --output-dir creates every missing level, and refuses a path through a file
d="$work/nested/a/b"
expect "run nested --output-dir" 0 run "$fx/add_relu.onnx" --input "$fx/x.pb" --input "$fx/y.pb" --output-dir "$d" &&
    same "run nested --output-dir" "$d/relu_out_1.npy" "$fx/add_relu.relu.npy"
: > "$work/plainfile"
expect "run --output-dir through a file" 1 run "$fx/add_relu.onnx" --input "$fx/x.pb" --input "$fx/y.pb" \
    --output-dir "$work/plainfile/sub" && one_error "run --output-dir through a file" "is not a directory"

expect "run wrong dtype" 1 run "$fx/add_relu.onnx" --input x="$fx/x_int64.npy" --input y="$fx/y.npy" &&
    one_error "run wrong dtype" "input \"x\" is float32, the file gives int64"
expect "run unknown input name" 2 run "$fx/add_relu.onnx" --input nope="$fx/x.npy" --input y="$fx/y.npy"
expect "run input given twice" 2 run "$fx/add_relu.onnx" --input x="$fx/x.npy" --input x="$fx/y.npy"
expect "run missing input" 2 run "$fx/add_relu.onnx" --input x="$fx/x.npy" && has "run missing input" "$err" "no --input given for graph input \"y\""
expect "run missing input file" 1 run "$fx/add_relu.onnx" --input x="$work/none.npy" --input y="$fx/y.npy" &&
    one_error "run missing input file" "cannot open"
expect "run shape mismatch" 1 run "$fx/add_relu.onnx" --input x="$fx/x4.npy" --input y="$fx/y.npy"

# threads: same answer with 1 and 2 threads
for t in 1 2; do
    expect "run --threads $t" 0 run "$fx/add_relu.onnx" --threads "$t" --input "$fx/x.npy" --input "$fx/y.npy" \
        --output-dir "$work/t$t" && same "run --threads $t" "$work/t$t/relu_out_1.npy" "$fx/add_relu.relu.npy"
done

# --bench N: the last stdout line is "median_ms=X min_ms=Y max_ms=Z runs=N", min <= median <= max
expect "run --bench 5" 0 run "$fx/add_relu.onnx" --input "$fx/x.npy" --input "$fx/y.npy" --bench 5 && {
    last=$(tail -n 1 "$out")
    if echo "$last" | grep -Eq '^median_ms=[0-9]+(\.[0-9]+)? min_ms=[0-9]+(\.[0-9]+)? max_ms=[0-9]+(\.[0-9]+)? runs=5$' &&
        echo "$last" | awk -F'[= ]' '{ exit !($4 <= $2 && $2 <= $6) }'; then
        pass
    else
        fail "run --bench 5: last line \"$last\""
    fi
}
# --bench with no inputs: seeded random data, a note per input on stderr
expect "run --bench random" 0 run "$fx/add_relu.onnx" --bench 2 && has "run --bench random" "$err" "seeded random data" &&
    has "run --bench random" "$out" "runs=2"

# symbolic dims: fixed by the input file's shape, or by --input-shape
expect "run symbolic from file" 0 run "$fx/symbolic.onnx" --input "$fx/x4.npy" --output-dir "$work/s1" &&
    same "run symbolic from file" "$work/s1/y.npy" "$fx/symbolic.y4.npy"
expect "run --input-shape" 0 run "$fx/symbolic.onnx" --input-shape x=4x3 --input "$fx/x4.npy" --output-dir "$work/s2" &&
    same "run --input-shape" "$work/s2/y.npy" "$fx/symbolic.y4.npy"
expect "run --input-shape vs file" 1 run "$fx/symbolic.onnx" --input-shape x=5x3 --input "$fx/x4.npy"
expect "run --input-shape + bench" 0 run "$fx/symbolic.onnx" --input-shape x=7x3 --bench 1 && has "run --input-shape + bench" "$out" "runs=1"
expect "run symbolic unfixed" 1 run "$fx/symbolic.onnx" --bench 1 && one_error "run symbolic unfixed" "symbolic dimension"

echo "cli: $passed checks passed, $failed failed"
[ "$failed" -eq 0 ]
