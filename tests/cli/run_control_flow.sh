#!/bin/sh
# Control flow through the whole pipeline (docs/control-flow.md), on the
# control-flow models of the bad-input corpus:
#   - `korch check` notes a run-time If and names the graph input behind it,
#     says why it is not if-converted or that it is, and says nothing for an
#     If resolved at load;
#   - `korch optimize` makes a plan (a run-time If, a while-Loop or a Scan as
#     an opaque kernel; a resolved If inlined, a short Loop unrolled) and `korch run PLAN` gives the outputs
#     stored in the corpus, for Loop bodies that declare their iteration number
#     and condition as scalars or, as paddle2onnx writes them, as [1], and
#     for bodies whose nodes are reused between iterations (control_reuse.c).
# usage: run_control_flow.sh KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR
set -u
if [ $# -ne 4 ]; then
    echo "usage: $0 KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR" >&2
    exit 2
fi
korch=$1 corpus=$2 compare=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 2
failed=0 ok=0
fail() { echo "FAIL    $*"; failed=$((failed + 1)); }
pass() { echo "ok      $*"; ok=$((ok + 1)); }

"$korch" check "$corpus/control_if_opaque.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && grep -q 'node "if_gather" (If): its condition depends on graph input "c", which is not a constant' "$work/out" &&
    grep -q 'node "if_gather" (If): not if-converted: its then_branch has node "Gather_0" (Gather), which could fail' "$work/out"
then pass "check notes the run-time If, its graph input, and why it is not if-converted"
else fail "check control_if_opaque.onnx: $(cat "$work/out" "$work/err")"; fi

"$korch" check "$corpus/control_if_nested.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && grep -q 'node "outer_if" (If): its condition is known only at run time; its branches are small and cannot fail, so both are computed' "$work/out" &&
    ! grep -q "opaque" "$work/out"
then pass "check notes the if-conversion of a run-time If with a nested If on a shape"
else fail "check control_if_nested.onnx: $(cat "$work/out" "$work/err")"; fi

"$korch" check "$corpus/control_if_convert.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && [ "$(grep -c '(if-conversion)' "$work/out")" -eq 4 ]; then pass "check notes four if-conversions"
else fail "check control_if_convert.onnx: $(cat "$work/out" "$work/err")"; fi

"$korch" check "$corpus/control_if_shape.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && ! grep -q "note:" "$work/out"; then pass "check: an If on a shape is resolved, no note"
else fail "check control_if_shape.onnx: $(cat "$work/out" "$work/err")"; fi

"$korch" check "$corpus/control_loop.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && ! grep -q "note:" "$work/out"; then pass "check: a Loop of 3 iterations is unrolled, no note"
else fail "check control_loop.onnx: $(cat "$work/out" "$work/err")"; fi

"$korch" check "$corpus/control_while_if.onnx" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && grep -q 'node "loop" (Loop): runs as one opaque kernel' "$work/out"; then
    pass "check notes a Loop with no trip count"
else fail "check control_while_if.onnx: $(cat "$work/out" "$work/err")"; fi

# optimize_and_run NAME INPUTS... -- OUTPUT:EXPECTED...
optimize_and_run() {
    name=$1
    shift
    ins=""
    while [ "$1" != "--" ]; do ins="$ins --input $corpus/$1"; shift; done
    shift
    # shellcheck disable=SC2086
    if ! "$korch" optimize "$corpus/$name.onnx" -o "$work/$name.plan" --db "$work/profile.db" --threads 1 \
        --time-limit 1000000 -q $ins >"$work/opt.out" 2>&1; then
        fail "optimize $name: $(tail -n 3 "$work/opt.out")"
        return
    fi
    # shellcheck disable=SC2086
    if ! "$korch" run "$work/$name.plan" $ins --output-dir "$work/$name.out" --threads 1 >"$work/run.out" 2>&1; then
        fail "run $name plan: $(tail -n 3 "$work/run.out")"
        return
    fi
    for pair in "$@"; do
        got=${pair%%:*} want=${pair#*:}
        if ! "$compare" "$work/$name.out/$got" "$corpus/$want" >"$work/cmp.out" 2>&1; then
            fail "$name plan output $got: $(cat "$work/cmp.out")"
            return
        fi
    done
    pass "optimize + run plan $name: outputs match"
}

optimize_and_run control_if_nested control_if_nested.x.npy control_if_nested.c.npy -- y.npy:control_if_nested.y.npy
optimize_and_run control_if_shape control_if_shape.x.npy -- y.npy:control_if_shape.y.npy
optimize_and_run control_if_convert control_if_convert.x.npy -- y1.npy:control_if_convert.y1.npy \
    y2.npy:control_if_convert.y2.npy y3.npy:control_if_convert.y3.npy y4.npy:control_if_convert.y4.npy
# an if-converted plan has no opaque kernel, so it exports
"$korch" export "$work/control_if_convert.plan" -o "$work/export_if" >"$work/out" 2>"$work/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "0 reference" "$work/out"; then pass "export of an if-converted plan"
else fail "export control_if_convert: exit $rc: $(cat "$work/out" "$work/err")"; fi
optimize_and_run control_if_opaque control_if_opaque.x.npy control_if_opaque.c.npy control_if_opaque.idx.npy -- \
    y.npy:control_if_opaque.y.npy
optimize_and_run control_loop control_loop.x.npy -- acc.npy:control_loop.acc.npy scan.npy:control_loop.scan.npy
optimize_and_run control_while_if control_while_if.x.npy control_while_if.limit.npy -- acc.npy:control_while_if.acc.npy
optimize_and_run control_loop_rank1 control_loop_rank1.src.npy -- acc.npy:control_loop_rank1.acc.npy
optimize_and_run control_while_rank1 control_while_rank1.x.npy control_while_rank1.limit.npy -- \
    acc.npy:control_while_rank1.acc.npy
optimize_and_run control_loop_carried_slice control_loop_carried_slice.src.npy control_loop_carried_slice.limit.npy -- \
    acc.npy:control_loop_carried_slice.acc.npy
optimize_and_run control_loop_reuse control_loop_reuse.src.npy control_loop_reuse.limit.npy control_loop_reuse.f.npy \
    control_loop_reuse.w.npy -- acc.npy:control_loop_reuse.acc.npy f_final.npy:control_loop_reuse.f_final.npy \
    w_final.npy:control_loop_reuse.w_final.npy
optimize_and_run control_loop_reuse_const control_loop_reuse_const.x.npy -- y.npy:control_loop_reuse_const.y.npy
optimize_and_run control_while_many control_while_many.x.npy control_while_many.limit.npy -- acc.npy:control_while_many.acc.npy
# its plan cannot be exported (an opaque Loop), and says so instead of crashing
"$korch" export "$work/control_while_many.plan" -o "$work/export_many" >"$work/out" 2>"$work/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "no standalone C for it" "$work/err"; then pass "export of a plan with a many-output Loop is refused, named"
else fail "export control_while_many: exit $rc: $(cat "$work/err")"; fi
optimize_and_run control_scan_axes control_scan_axes.s0.npy control_scan_axes.x.npy control_scan_axes.y.npy -- \
    s.npy:control_scan_axes.s.npy a.npy:control_scan_axes.a.npy b.npy:control_scan_axes.b.npy

echo "control-flow: $ok ok, $failed failed"
[ "$failed" -eq 0 ]
