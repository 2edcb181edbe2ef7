#!/bin/sh
# korch optimize --layout nchw|channels-last|auto (docs/layout.md):
#  - nchw and channels-last are honoured (the plan records layout=), over
#    KORCH_LAYOUT;
#  - auto keeps the nchw plan only if it is predicted at least 5% faster:
#    the log's "layout: nchw plan A ms predicted, channels-last B ms: kept L"
#    line names the one that rule picks, the plan records it, and the
#    summary's "predicted" is its latency;
#  - on a model without convolutions auto optimises once (same graph);
#  - a bad value is a usage error naming the flag.
# Latencies come from --estimate (the roofline model): nothing is timed.
#   run_layout_flag.sh KORCH CONV_MODEL DEPTHWISE_MODEL PLAIN_MODEL WORKDIR
set -u
korch=$1 model=$2 dw=$3 plain=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
opt() { # opt NAME MODEL ARGS...: optimise into $work/NAME.plan, log in $work/NAME.log
    name=$1 m=$2
    shift 2
    "$korch" optimize "$m" -o "$work/$name.plan" --estimate --strategy greedy \
        --db "$work/profile.db" --cache-dir "$work/kernels" "$@" >"$work/$name.log" 2>&1
}
recorded() { sed -n 's/^fission .* layout=\([a-z-]*\)$/\1/p' "$1" 2>/dev/null; }

# fixed layouts, also against the environment variable they override
for want in nchw channels-last; do
    other=nhwc
    [ "$want" = channels-last ] && other=nchw
    if KORCH_LAYOUT=$other opt "$want" "$model" --layout "$want"; then
        got=$(recorded "$work/$want.plan")
        [ "$got" = "$want" ] || fail "--layout $want (KORCH_LAYOUT=$other) wrote a plan with layout=$got"
    else
        fail "optimize --layout $want: $(tail -2 "$work/$want.log")"
    fi
done
h1=$(sed -n 's/^fission .*pgraph-hash=\([0-9a-f]*\).*/\1/p' "$work/nchw.plan" 2>/dev/null)
h2=$(sed -n 's/^fission .*pgraph-hash=\([0-9a-f]*\).*/\1/p' "$work/channels-last.plan" 2>/dev/null)
[ -n "$h1" ] && [ "$h1" != "$h2" ] || fail "nchw and channels-last plans share pgraph hash '$h1': use a model with a convolution"

# auto: the kept layout is nchw only if predicted at least 5% faster.
# check_auto NAME MODEL; sets $kept
check_auto() {
    name=$1
    kept=
    if ! opt "$name" "$2" --layout auto; then
        fail "optimize --layout auto ($name): $(tail -2 "$work/$name.log")"
        return
    fi
    line=$(grep '^layout: nchw plan ' "$work/$name.log")
    pat='^layout: nchw plan \([0-9.]*\) ms predicted, channels-last \([0-9.]*\) ms: kept \([a-z-]*\).*$'
    a=$(echo "$line" | sed -n "s/$pat/\1/p")
    b=$(echo "$line" | sed -n "s/$pat/\2/p")
    kept=$(echo "$line" | sed -n "s/$pat/\3/p")
    if [ -z "$a" ] || [ -z "$b" ] || [ -z "$kept" ]; then
        fail "--layout auto ($name): no 'layout: nchw plan A ms predicted, channels-last B ms: kept L' line in the log"
        return
    fi
    want=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a + 0 < 0.95 * b) ? "nchw" : "channels-last" }')
    [ "$kept" = "$want" ] || fail "--layout auto ($name): nchw $a ms, channels-last $b ms, but the log says kept $kept"
    got=$(recorded "$work/$name.plan")
    [ "$got" = "$want" ] || fail "--layout auto ($name): nchw $a ms, channels-last $b ms, but the plan records layout=$got"
    best=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a + 0 < 0.95 * b) ? a : b }')
    grep -q "^plan: .* predicted $best ms" "$work/$name.log" ||
        fail "--layout auto ($name): the summary does not predict the kept plan's $best ms: $(grep '^plan:' "$work/$name.log")"
    "$korch" run "$work/$name.plan" --bench 1 >"$work/run.log" 2>&1 ||
        fail "the --layout auto plan ($name) does not run: $(tail -1 "$work/run.log")"
    echo "auto ($name): nchw $a ms, channels-last $b ms predicted: kept $kept"
}
check_auto auto "$model"
# the depthwise model exercises the other branch: under --estimate its
# channels-last plan is the convolution plus two transposes of the same size
check_auto auto_dw "$dw"
[ "$kept" = nchw ] || fail "--layout auto kept '$kept' on the depthwise model: the nchw branch is not exercised"

# auto on a model the layout pass does not change: one optimisation
if opt plain "$plain" --layout auto; then
    grep -q '^layout: nchw and channels-last lower to the same primitive graph' "$work/plain.log" ||
        fail "--layout auto on a model without convolutions did not notice the graphs are the same"
    grep -q 'optimising nchw (2 of 2)' "$work/plain.log" && fail "--layout auto optimised a conv-free model twice"
    got=$(recorded "$work/plain.plan")
    [ "$got" = channels-last ] || fail "--layout auto on a conv-free model recorded layout=$got"
else
    fail "optimize --layout auto (no convolution): $(tail -2 "$work/plain.log")"
fi

# a bad value: exit 2, the flag named, no plan written
"$korch" optimize "$model" -o "$work/bad.plan" --estimate --layout nhcw >"$work/bad.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--layout nhcw: exit $rc, expected 2"
grep -q -- '--layout' "$work/bad.log" || fail "--layout nhcw: the error does not name --layout: $(cat "$work/bad.log")"
[ -e "$work/bad.plan" ] && fail "--layout nhcw wrote a plan"
"$korch" optimize "$model" -o "$work/bad2.plan" --layout >"$work/bad2.log" 2>&1
[ $? -eq 2 ] || fail "--layout without a value: expected exit 2"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "--layout nchw/channels-last honoured; auto keeps the plan its rule picks; bad values rejected"
