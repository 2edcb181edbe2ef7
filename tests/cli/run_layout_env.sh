#!/bin/sh
# A plan means the same under any environment: KORCH_LAYOUT chooses the
# layout pass when `optimize` makes a plan, the plan records it (layout=),
# and `run` rebuilds that graph whatever KORCH_LAYOUT says then (it used to
# change the pgraph hash, so the plan was refused).
#   run_layout_env.sh KORCH MODEL WORKDIR
set -u
korch=$1 model=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for made in nchw nhwc; do
    plan=$work/$made.plan
    if ! KORCH_LAYOUT=$made "$korch" optimize "$model" -o "$plan" --estimate --strategy greedy -q \
        --db "$work/profile.db" --cache-dir "$work/kernels" >"$work/$made.log" 2>&1; then
        fail "optimize with KORCH_LAYOUT=$made: $(tail -2 "$work/$made.log")"
        continue
    fi
    want=channels-last
    [ "$made" = nchw ] && want=nchw
    grep -q "^fission .* layout=$want\$" "$plan" || fail "plan made with KORCH_LAYOUT=$made does not record layout=$want"
    for at in unset nchw nhwc; do
        if [ "$at" = unset ]; then
            env -u KORCH_LAYOUT "$korch" run "$plan" --bench 1 >"$work/run.log" 2>&1
        else
            KORCH_LAYOUT=$at "$korch" run "$plan" --bench 1 >"$work/run.log" 2>&1
        fi
        [ $? -eq 0 ] || fail "plan made with KORCH_LAYOUT=$made, run with KORCH_LAYOUT $at: $(tail -1 "$work/run.log")"
    done
done
# the two layouts are different graphs (else this test proves nothing); -a: a
# self-contained plan has binary sections after its text
h1=$(grep -a '^fission' "$work/nchw.plan" 2>/dev/null | sed 's/.*pgraph-hash=\([0-9a-f]*\).*/\1/')
h2=$(grep -a '^fission' "$work/nhwc.plan" 2>/dev/null | sed 's/.*pgraph-hash=\([0-9a-f]*\).*/\1/')
[ -n "$h1" ] && [ "$h1" != "$h2" ] || fail "the nchw and channels-last plans have the same pgraph hash ($h1): pick a model with a convolution"
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "plans load under any KORCH_LAYOUT (made with nchw and channels-last, run with unset/nchw/nhwc)"
