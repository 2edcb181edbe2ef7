#!/bin/sh
# The CLI reads the KORCH_* variables (src/cli/cli_env.c) and passes them
# down as options; the library reads none itself (test layers/env). Here:
# the variables the library once read itself still reach it from the CLI.
#   run_env.sh KORCH MODEL WORKDIR
set -u
korch=$1 model=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
common="--db $work/profile.db --cache-dir $work/kernels --strategy none -q --no-verify --budget 1"
# KORCH_CC reaches the kernel compiler (korch_profile_options.cc): a missing
# one fails the run with a message naming it
if KORCH_CC=/nonexistent/korch-cc "$korch" optimize "$model" -o "$work/cc.plan" $common >"$work/cc.log" 2>&1; then
    fail "optimize with KORCH_CC=/nonexistent/korch-cc succeeded"
fi
grep -q '/nonexistent/korch-cc' "$work/cc.log" || fail "the error does not name KORCH_CC's compiler: $(tail -2 "$work/cc.log")"
# ... and `run` builds a plan's kernels with it too (a fresh kernel cache).
# KORCH_PROFILE_SCRUB_MB that is not a whole number of MiB in 1..4096 leaves
# the scrub off (the database's machines say so below)
if KORCH_PROFILE_SCRUB_MB=2MB "$korch" optimize "$model" -o "$work/p.plan" $common >"$work/p.log" 2>&1; then
    if KORCH_CC=/nonexistent/korch-cc "$korch" run "$work/p.plan" --bench 1 >"$work/run.log" 2>&1; then
        grep -q 'cgen' "$work/p.plan" && fail "run with KORCH_CC=/nonexistent/korch-cc built cgen kernels"
    else
        grep -q '/nonexistent/korch-cc' "$work/run.log" || fail "run's error does not name the compiler: $(tail -2 "$work/run.log")"
    fi
else
    fail "optimize: $(tail -2 "$work/p.log")"
fi
# KORCH_PROFILE_SCRUB_MB reaches the timer and the machine fingerprint
# (korch_profile_options.scrub_mib)
KORCH_PROFILE_SCRUB_MB=2 "$korch" optimize "$model" -o "$work/s.plan" $common --db "$work/scrub.db" \
    >"$work/s.log" 2>&1 || fail "optimize with KORCH_PROFILE_SCRUB_MB=2: $(tail -2 "$work/s.log")"
"$korch" db stats --db "$work/scrub.db" >"$work/stats.log" 2>&1
grep -q 'scrub=2MiB' "$work/stats.log" || fail "KORCH_PROFILE_SCRUB_MB=2: no scrub=2MiB machine in the database"
"$korch" db stats --db "$work/profile.db" >"$work/stats2.log" 2>&1
grep -q 'scrub=' "$work/stats2.log" && fail "KORCH_PROFILE_SCRUB_MB=2MB turned the scrub on"
# KORCH_PROFILE_STATE: quiet or busy; anything else is named
KORCH_PROFILE_STATE=sleepy "$korch" info "$model" >"$work/state.log" 2>&1
grep -q 'KORCH_PROFILE_STATE=sleepy' "$work/state.log" || fail "KORCH_PROFILE_STATE=sleepy: no warning"
if [ "$fails" -ne 0 ]; then
    echo "cli/env: $fails failure(s) (logs in $work)"
    exit 1
fi
echo "cli/env: KORCH_CC, KORCH_PROFILE_SCRUB_MB and KORCH_PROFILE_STATE reach the library from the CLI"
