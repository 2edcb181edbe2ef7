#!/bin/sh
# Issue 15's class end to end: postops.onnx (make_postop_model.py: linear
# operators followed by chains of elementwise steps with constants of every
# broadcast class, both operand orders, activations) optimised with every
# strategy, each plan run on given inputs and compared with the reference
# executor (compare_outputs.py, the plan tolerance of docs/verification.md).
# Then the same without verification (--no-verify): the lowering itself must
# be right, not only the safety net.
#   run_postop_plans.sh KORCH WORKDIR
set -u
korch=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
export XDG_CACHE_HOME="$work/cache"
/usr/bin/python3 "$here/make_postop_model.py" "$work" || exit 1
m="$work/postops.onnx"
inputs="--input x=$work/x.npy --input a=$work/a.npy --input a2=$work/a2.npy"
# shellcheck disable=SC2086
"$korch" run "$m" $inputs --output-dir "$work/ref" >/dev/null || { echo "FAIL: reference run"; exit 1; }
fail=0
for verify in yes no; do
    for s in none greedy optimal; do
        flag=""
        [ $verify = no ] && flag=--no-verify
        plan="$work/$s-$verify.plan"
        # shellcheck disable=SC2086
        if ! "$korch" optimize "$m" -o "$plan" --strategy $s --db "$work/profile.db" $flag $inputs \
            >"$work/$s-$verify.log" 2>&1; then
            echo "FAIL: optimize --strategy $s ($verify verification): $(tail -2 "$work/$s-$verify.log")"
            fail=1
            continue
        fi
        # shellcheck disable=SC2086
        "$korch" run "$plan" $inputs --output-dir "$work/out-$s-$verify" >/dev/null || {
            echo "FAIL: run $s ($verify verification)"; fail=1; continue; }
        if ! /usr/bin/python3 "$here/compare_outputs.py" "$work/out-$s-$verify" "$work/ref"; then
            echo "FAIL: --strategy $s, verification $verify: outputs differ from the reference"
            fail=1
        else
            fused=$("$korch" explain "$plan" | grep -c '^kernel .*primitives' || true)
            excl=$(sed -n 's/.*\([0-9][0-9]*\) candidate kernels* excluded as wrong.*/\1/p' "$work/$s-$verify.log")
            echo "ok: --strategy $s, verification $verify: every output matches (excluded as wrong: ${excl:-n/a})"
        fi
    done
done
exit $fail
