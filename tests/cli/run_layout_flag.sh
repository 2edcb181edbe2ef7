#!/bin/sh
# korch optimize --layout nchw|channels-last|auto (docs/layout.md):
#  - nchw and channels-last are honoured (the plan records layout=), over
#    KORCH_LAYOUT;
#  - auto keeps the plan with the lower predicted latency: the log's
#    "layout: nchw plan A ms predicted, channels-last B ms: kept L" line
#    names the smaller one, the plan records it, and the summary's
#    "predicted" is its latency;
#  - on a model without convolutions auto optimises once (same graph);
#  - a bad value is a usage error naming the flag.
# Latencies come from --estimate (the roofline model): nothing is timed.
#   run_layout_flag.sh KORCH CONV_MODEL PLAIN_MODEL WORKDIR
set -u
korch=$1 model=$2 plain=$3 work=$4
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

# auto: the kept layout is the one predicted faster
if opt auto "$model" --layout auto; then
    line=$(grep '^layout: nchw plan ' "$work/auto.log")
    a=$(echo "$line" | sed -n 's/^layout: nchw plan \([0-9.]*\) ms predicted, channels-last \([0-9.]*\) ms: kept \([a-z-]*\)$/\1/p')
    b=$(echo "$line" | sed -n 's/^layout: nchw plan \([0-9.]*\) ms predicted, channels-last \([0-9.]*\) ms: kept \([a-z-]*\)$/\2/p')
    kept=$(echo "$line" | sed -n 's/^layout: nchw plan \([0-9.]*\) ms predicted, channels-last \([0-9.]*\) ms: kept \([a-z-]*\)$/\3/p')
    if [ -z "$a" ] || [ -z "$b" ] || [ -z "$kept" ]; then
        fail "--layout auto: no 'layout: nchw plan A ms predicted, channels-last B ms: kept L' line in the log"
    else
        want=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a + 0 < b + 0) ? "nchw" : "channels-last" }')
        [ "$kept" = "$want" ] || fail "--layout auto: nchw $a ms, channels-last $b ms, but the log says kept $kept"
        got=$(recorded "$work/auto.plan")
        [ "$got" = "$want" ] || fail "--layout auto: nchw $a ms, channels-last $b ms, but the plan records layout=$got"
        best=$(awk -v a="$a" -v b="$b" 'BEGIN { print (a + 0 < b + 0) ? a : b }')
        grep -q "^plan: .* predicted $best ms" "$work/auto.log" ||
            fail "--layout auto: the summary does not predict the kept plan's $best ms: $(grep '^plan:' "$work/auto.log")"
        "$korch" run "$work/auto.plan" --bench 1 >"$work/run.log" 2>&1 ||
            fail "the --layout auto plan does not run: $(tail -1 "$work/run.log")"
    fi
else
    fail "optimize --layout auto: $(tail -2 "$work/auto.log")"
fi

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
echo "--layout nchw/channels-last honoured; auto kept $kept (nchw $a ms, channels-last $b ms predicted); bad values rejected"
