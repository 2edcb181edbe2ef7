#!/bin/sh
# CLI test: the command line as a new user meets it (issue 21). Each block is
# one of the issue's numbered cases, asserting on the words a user reads:
# outputs checked before any work, -q silent, plain progress lines off a
# terminal, byte-swapped .npy, input shapes named by file, file kinds named,
# usage errors pointing at --help, output folders created, reasons given.
# Nothing here depends on timing. Uses a private cache under WORK_DIR.
# usage: run_newuser.sh KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR SOURCE_DIR
set -u
. "$(dirname "$0")/lib.sh"
need_args 5 "KORCH FIXTURES_DIR TENSOR_COMPARE_TOOL WORK_DIR SOURCE_DIR" $#
korch=$1 fx=$2 compare=$3 work=$4 src=$5
expect_timeout=600
start_work
# every optimize below profiles into this private cache (never ~/.cache)
private_cache "$work/cache"

# usage_error LABEL CMD TEXT: a usage error naming TEXT that ends with the
# pointer to the command's help (docs/cli.md, "Exit codes")
usage_error() {
    has "$1" "$err" "$3"
    if [ "$(tail -n 1 "$err")" = "(see 'korch $2 --help')" ]; then pass; else fail "$1: last line is not (see 'korch $2 --help')"; fi
}

m="$fx/add_relu.onnx"
ins="--input x=$fx/x.npy --input y=$fx/y.npy"

# ---- 1. outputs are checked before any work ------------------------------
# (a cold database: the work this would cost is profiling and tuning)
expect "1: optimize -o into a missing folder" 1 optimize "$m" -o "$work/no/such/dir/x.plan" &&
    one_error "1: optimize -o into a missing folder" "no/such/dir\": No such file or directory" &&
    has "1: optimize -o names the path" "$err" "-o $work/no/such/dir/x.plan: cannot write there"
empty "1: nothing was done (no model line)" "$out"
if [ -e "$work/cache/korch/profile.db" ]; then fail "1: a profile database was made before the error"; else pass; fi
: >"$work/plainfile"
expect "1: optimize -o through a file" 1 optimize "$m" -o "$work/plainfile/x.plan" &&
    one_error "1: optimize -o through a file" "not a folder"
expect "1: optimize -o a folder" 1 optimize "$m" -o "$work" && one_error "1: optimize -o a folder" "it is a folder"
expect "1: run --output-dir through a file, before running" 1 run "$m" $ins --output-dir "$work/plainfile/o" &&
    one_error "1: run --output-dir through a file" "is not a directory"

# ---- 2, 3. -q is silent; off a terminal, plain progress lines ------------
expect "3: optimize, stderr to a file" 0 optimize "$m" -o "$work/p.plan" --threads 1 && {
    has "3: a plain progress line for profiling" "$err" "korch: profiling "
    has "3: the stage's closing line" "$err" ", done in "
    lacks "3: no terminal control codes in a log" "$err" "$(printf '\033')"
    lacks "3: no carriage returns in a log" "$err" "$(printf '\r')"
    has "3: the plan summary" "$out" "written to $work/p.plan"
}
expect "1: run PLAN --profile-csv into a missing folder" 1 run "$work/p.plan" --bench 1 --profile-csv "$work/no/p.csv" &&
    one_error "1: run PLAN --profile-csv into a missing folder" "--profile-csv $work/no/p.csv: cannot write there"
# a fresh cache again, so that kernels are compiled and tuned (the cgen
# summary line) and the busy note has a chance
XDG_CACHE_HOME="$work/cache-quiet"
KORCH_BUSY_US=1
export KORCH_BUSY_US
expect "2: optimize -q, cold cache" 0 optimize "$m" -o "$work/q.plan" --threads 1 -q && {
    empty "2: -q: stdout" "$out"
    empty "2: -q: stderr (no korch cgen lines, no progress)" "$err"
}
XDG_CACHE_HOME="$work/cache-loud"
expect "2: without -q, the cgen summary is there" 0 optimize "$m" -o "$work/l.plan" --threads 1 &&
    has "2: cgen summary without -q" "$err" "korch cgen: "
unset KORCH_BUSY_US
XDG_CACHE_HOME="$work/cache"

# ---- 4. big-endian .npy: read and byte-swapped; other dtypes in a sentence --
d="$work/be"
expect "4: big-endian .npy" 0 run "$m" --input x="$fx/x_be.npy" --input y="$fx/y.npy" --output-dir "$d" &&
    same "4: big-endian .npy gives the little-endian answer" "$d/relu_out_1.npy" "$fx/add_relu.relu.npy"
expect "4: complex .npy" 1 run "$m" --input x="$fx/x_c8.npy" --input y="$fx/y.npy" &&
    one_error "4: complex .npy" "x_c8.npy\": the .npy dtype '<c8' is not supported; korch reads float16, float32"

# ---- 5. a wrong-shape input names the file, its shape and the model's ----
expect "5: wrong-shape input file" 1 run "$m" --input x="$fx/x4.npy" --input y="$fx/y.npy" && {
    one_error "5: wrong-shape input file" "input file \"$fx/x4.npy\" holds a 4x3 tensor; the model's input \"x\" is 2x3"
    lacks "5: no flag the user never passed" "$err" "--input-shape"
}

# ---- 6. each file kind named as such --------------------------------------
expect "6: export a missing plan" 1 export "$work/nonexist.plan" -o "$work/e0" &&
    one_error "6: export a missing plan" "cannot open \"$work/nonexist.plan\": No such file or directory"
expect "6: explain a model" 1 explain "$m" &&
    one_error "6: explain a model" "is an ONNX model, not a korch plan; korch explain reads a plan (make one with korch optimize"
# info and check read plans too (issue 23); fission reads only models
expect "6: info a plan" 0 info "$work/p.plan" && has "6: info a plan" "$out" "plan: format 3, the model embedded"
expect "6: check a plan" 0 check "$work/p.plan" && has "6: check a plan" "$out" "ok: plan of "
expect "6: fission a plan" 1 fission "$work/p.plan" &&
    one_error "6: fission a plan" "is a korch plan, not an ONNX model; korch fission reads a model"
expect "6: optimize a .npy" 1 optimize "$fx/x.npy" -o "$work/n.plan" && one_error "6: optimize a .npy" "is a .npy tensor, not an ONNX model"
expect "6: run a .npy" 1 run "$fx/x.npy" && one_error "6: run a .npy" "is a .npy tensor, not an ONNX model or a korch plan"
expect "6: export a model" 1 export "$m" -o "$work/e1" && one_error "6: export a model" "is an ONNX model, not a korch plan"
expect "6: info a folder" 1 info "$work" && one_error "6: info a folder" "is a folder, not a file"

# ---- 7. optimize names the file it cannot parse ---------------------------
head -c 60 "$m" >"$work/truncated.onnx"
expect "7: optimize a truncated model" 1 optimize "$work/truncated.onnx" -o "$work/t.plan" &&
    one_error "7: optimize a truncated model" "$work/truncated.onnx: "

# ---- 8. usage errors end with the pointer to --help -----------------------
expect "8: unknown input name" 2 run "$m" --input wrong="$fx/x.npy" --input y="$fx/y.npy" &&
    usage_error "8: unknown input name" run "the model has no input named \"wrong\"; its inputs are \"x\", \"y\""
expect "8: input given twice" 2 run "$m" --input x="$fx/x.npy" --input x="$fx/y.npy" &&
    usage_error "8: input given twice" run "input \"x\" is given twice"
expect "8: missing input" 2 run "$m" --input x="$fx/x.npy" &&
    usage_error "8: missing input" run "no --input given for graph input \"y\""
expect "8: too many inputs" 2 run "$m" --input "$fx/x.npy" --input "$fx/y.npy" --input "$fx/y.npy" &&
    usage_error "8: too many inputs" run "more --input files than model inputs (it has 2: \"x\", \"y\")"
expect "8: optimize --input unknown name" 2 optimize "$m" -o "$work/u.plan" --input wrong="$fx/x.npy" &&
    usage_error "8: optimize --input unknown name" optimize "its inputs are \"x\", \"y\""

# ---- 9. export -o creates every missing level -----------------------------
expect "9: export -o a/b/c" 0 export "$work/p.plan" -o "$work/exp/a/b/c" -q &&
    if [ -f "$work/exp/a/b/c/model.c" ]; then pass; else fail "9: export -o a/b/c: no model.c"; fi

# ---- 10. fission says why it cannot write ---------------------------------
expect "10: fission -o into a missing folder" 1 fission "$m" -o "$work/nonexistent/x.onnx" &&
    one_error "10: fission -o into a missing folder" "No such file or directory"

# ---- 11. --estimate says what it did, not that kernels were tuned ---------
expect "11: optimize --estimate" 0 optimize "$m" -o "$work/est.plan" --estimate --no-verify && {
    has "11: estimates named" "$out" "estimating: "
    has "11: no tuning" "$out" "tuning: none (latencies are estimates"
    lacks "11: not 'tuned next'" "$out" "tuned next"
    lacks "11: not 'every kernel of the plan is tuned'" "$out" "every kernel of the plan is tuned"
}

# ---- 12. make models / make bench set up their Python environment --------
if (cd "$src" && make -n models bench BUILD="$work/no-build") >"$out" 2>"$err"; then
    has "12: make models runs python-env.sh" "$out" "scripts/python-env.sh"
else
    fail "12: make -n models bench failed"
fi
has "12: README names onnxruntime for make models" "$src/README.md" "onnxruntime"
has "12: README names the script that installs it" "$src/README.md" "scripts/python-env.sh"

# ---- found on a later pass: more threads than CPUs is allowed, and said ----
# (1024: more CPUs than any machine this suite runs on can give a process)
expect "later: --threads above the CPUs" 0 run "$m" $ins --threads 1024 -o "$work/threads" &&
    has "later: --threads above the CPUs" "$err" "korch: note: --threads 1024 is more than the"
expect "later: --threads within the CPUs" 0 run "$m" $ins --threads 1 -o "$work/threads1" &&
    lacks "later: --threads within the CPUs" "$err" "is more than the"
expect "later: optimize --threads above the CPUs" 2 optimize "$m" --threads 1024 &&
    has "later: optimize --threads above the CPUs" "$err" "korch: note: --threads 1024 is more than the"

# run takes -q like optimize and export: no notes, the results stay
expect "later: run -q" 0 run "$m" --input x="$fx/x.npy" --input y="$fx/y.npy" -q &&
    { empty "later: run -q" "$err"; has "later: run -q prints outputs" "$out" "min "; }
expect "later: run --bench -q" 0 run "$m" --bench 2 -q &&
    { empty "later: run --bench -q" "$err"; has "later: run --bench -q" "$out" "median_ms="; }

echo "cli/newuser: $passed checks passed, $failed failed"
[ "$failed" -eq 0 ]
