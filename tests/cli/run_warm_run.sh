#!/bin/sh
# The first `korch run` of a plan `korch optimize` has just written compiles
# nothing: every generated kernel the plan uses was compiled by the tuner,
# and optimize leaves a link to it in the kernel cache (src/backend/cgen/
# links.c). Compiles are counted, not timed: KORCH_CC is a wrapper that
# records each call, then runs cc. Against that, a run with an empty kernel
# cache does compile, so the count can tell the two apart.
#   run_warm_run.sh KORCH MODEL WORKDIR
set -u
korch=$1 model=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cat >"$work/count-cc" <<EOS
#!/bin/sh
echo "\$*" >>"$work/compiles"
exec cc "\$@"
EOS
chmod +x "$work/count-cc"
export KORCH_CC="$work/count-cc"
compiles() { if [ -f "$work/compiles" ]; then wc -l <"$work/compiles" | tr -d ' '; else echo 0; fi; }
XDG_CACHE_HOME="$work/cache" "$korch" optimize "$model" -o "$work/p.plan" --db "$work/profile.db" --budget 5 -q \
    >"$work/optimize.log" 2>&1 || fail "optimize: $(tail -2 "$work/optimize.log")"
after_optimize=$(compiles)
[ "$after_optimize" -gt 0 ] || fail "optimize compiled nothing (no generated kernels to check with)"
grep -aq 'cgen' "$work/p.plan" || fail "the plan uses no generated kernel: nothing to check"
XDG_CACHE_HOME="$work/cache" "$korch" run "$work/p.plan" --bench 1 >"$work/run.log" 2>&1 ||
    fail "run: $(tail -2 "$work/run.log")"
after_run=$(compiles)
[ "$after_run" -eq "$after_optimize" ] ||
    fail "the first run after optimize compiled $((after_run - after_optimize)) time(s): $(tail -n +$((after_optimize + 1)) "$work/compiles" | cut -c1-200)"
# the same run with an empty kernel cache compiles: the count sees compiles
XDG_CACHE_HOME="$work/empty-cache" "$korch" run "$work/p.plan" --bench 1 >"$work/run-empty.log" 2>&1 ||
    fail "run with an empty cache: $(tail -2 "$work/run-empty.log")"
[ "$(compiles)" -gt "$after_run" ] || fail "a run with an empty kernel cache compiled nothing: the count is blind"
if [ "$fails" -ne 0 ]; then
    echo "cli/warm_run: $fails failure(s) (logs in $work)"
    exit 1
fi
echo "cli/warm_run: optimize compiled $after_optimize time(s); the first run after it compiled nothing"
