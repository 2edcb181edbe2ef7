#!/bin/sh
# The CLI's OpenMP wait policy (src/cli/omp_policy.c, docs/cli.md
# "Environment"): with other runnable processes filling the CPUs it runs with
# passive waiting and says so before timings; a user's own setting or
# KORCH_OMP_DEFAULTS=0 is never overridden. The busy machine is made here by
# two shell loops that are runnable for the whole test, so what korch sees
# does not depend on what else the machine runs.
#   run_omp_policy.sh KORCH MODEL WORKDIR
set -u
korch=$1 model=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
sh -c 'while :; do :; done' &
hog1=$!
sh -c 'while :; do :; done' &
hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null' EXIT
run() { # run NAME ENV...: korch run --bench 1 with the environment given
    name=$1
    shift
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u KORCH_OMP_DEFAULTS -u KORCH_OMP_CHOSEN "$@" \
        "$korch" run "$model" --bench 1 >"$work/$name.out" 2>"$work/$name.err" ||
        fail "$name: korch run failed: $(tail -1 "$work/$name.err")"
    grep -q '^median_ms=' "$work/$name.out" || fail "$name: no median_ms line"
}
run busy
grep -q 'OpenMP threads wait passive (' "$work/busy.err" ||
    fail "busy machine, no policy set: passive waiting not chosen: $(cat "$work/busy.err")"
run user OMP_WAIT_POLICY=active
grep -q 'wait passive' "$work/user.err" && fail "OMP_WAIT_POLICY=active was overridden: $(cat "$work/user.err")"
run spin GOMP_SPINCOUNT=5000
grep -q 'wait passive' "$work/spin.err" && fail "GOMP_SPINCOUNT was overridden: $(cat "$work/spin.err")"
run off KORCH_OMP_DEFAULTS=0
grep -q 'wait passive' "$work/off.err" && fail "KORCH_OMP_DEFAULTS=0 was not obeyed: $(cat "$work/off.err")"
[ "$fails" -eq 0 ] && echo "omp policy: all checks passed"
exit "$fails"
