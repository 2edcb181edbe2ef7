#!/bin/bash
# The difftest campaign: N random graphs (korch-difftest, docs/difftest.md),
# split over J processes, then a summary of counts and failures grouped by
# the fused kernel at fault.
#
#   bench/difftest/run.sh [--graphs N] [--first SEED] [--jobs J] [--threads T]
#                         [--build DIR] [--out DIR] [-- korch-difftest options]
#
# Defaults: 10000 graphs from seed 1, 2 jobs of 1 thread, build/, output in
# bench/difftest/out-<date>/ (logs, kept failures, summary.md). Progress:
# tail OUT/stderr-*.txt. Stop early: kill -TERM $(cat OUT/pid-*).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
graphs=10000 first=1 jobs=2 threads=1 build="$root/build" out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --graphs) graphs=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin="$build/tests/difftest/korch-difftest"
[ -x "$bin" ] || { echo "run.sh: $bin not built (make build)" >&2; exit 2; }
out=${out:-"$here/out-$(date +%Y%m%d-%H%M%S)"}
mkdir -p "$out/failures"
echo "campaign: $graphs graphs from seed $first, $jobs jobs x $threads threads, into $out"
start=$(date +%s)
# One job: seeds lo..hi. A crash (a kernel that segfaults) is a finding: it is
# logged as a FAIL line with the seed (from --state) and the job resumes after it.
job() {
    local j=$1 lo=$2 hi=$3; shift 3
    while [ "$lo" -le "$hi" ]; do
        local rc=0
        OMP_NUM_THREADS=$threads "$bin" --seeds $lo-$hi --threads "$threads" --keep "$out/failures" --coverage \
            --state "$out/state-$j" "$@" >> "$out/log-$j.txt" 2>> "$out/stderr-$j.txt" &
        echo $! > "$out/pid-$j"
        wait $! || rc=$?
        [ $rc -lt 128 ] && return 0
        local s; s=$(cat "$out/state-$j")
        # the crashed run printed no summary: count its graphs (the crashing one included)
        echo "difftest (crashed run): $((s - lo + 1)) graphs (0 primitives), 0 plans compared, 1 failures" \
             "(0 refused models), 0 known, 0 xpass, 0 fused kernels exercised" >> "$out/log-$j.txt"
        echo "FAIL seed $s crash: korch-difftest died with signal $((rc - 128)) (reproduce: korch-difftest --seed $s $*)" >> "$out/log-$j.txt"
        echo "CULPRIT seed $s crash: signal $((rc - 128))" >> "$out/log-$j.txt"
        lo=$((s + 1))
    done
}
per=$(( (graphs + jobs - 1) / jobs ))
pids=()
for ((j = 0; j < jobs; j++)); do
    lo=$(( first + j * per )); hi=$(( lo + per - 1 )); last=$(( first + graphs - 1 ))
    [ $hi -gt $last ] && hi=$last
    [ $lo -gt $hi ] && continue
    job "$j" "$lo" "$hi" "$@" &
    pids+=($!)
done
# To stop early: kill -TERM $(cat $out/pid-*) (the korch-difftest processes);
# each finishes its current seed and prints its summary, and the campaign
# summary covers what ran.
status=0
for p in "${pids[@]}"; do
    while kill -0 "$p" 2>/dev/null; do wait "$p" || true; done
    wait "$p" 2>/dev/null || status=$?
done
secs=$(( $(date +%s) - start )); [ "$secs" -gt 0 ] || secs=1

# ---- summary -----------------------------------------------------------------
set +e +o pipefail # grep finding nothing (no failure) is not an error here
g=$(grep -h '^difftest' "$out"/log-*.txt | sed -E 's/^difftest[^:]*: ([0-9]+) graphs.*/\1/' | paste -sd+ | bc)
plans=$(grep -h '^difftest' "$out"/log-*.txt | sed -E 's/.* ([0-9]+) plans compared.*/\1/' | paste -sd+ | bc)
fails=$(grep -h '^difftest' "$out"/log-*.txt | sed -E 's/.* ([0-9]+) failures.*/\1/' | paste -sd+ | bc)
fused=$(grep -h '^difftest' "$out"/log-*.txt | sed -E 's/.* ([0-9]+) fused kernels.*/\1/' | paste -sd+ | bc)
failing_seeds=$(grep -h '^FAIL seed' "$out"/log-*.txt | awk '{print $3}' | sort -un | wc -l)
{
    echo "# difftest campaign $(date -u +%Y-%m-%d)"
    echo
    echo "- command: \`bench/difftest/run.sh --graphs $graphs --first $first --jobs $jobs --threads $threads${*:+ -- $*}\`"
    echo "- korch: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
    echo "- wall time: ${secs} s ($(echo "scale=2; $g / $secs" | bc) graphs/s)"
    echo "- graphs: $g of $graphs requested$(grep -h '^stopped before' "$out"/log-*.txt | sed 's/^/; /' | tr '\n' ' ')"
    echo "- plans compared: $plans; fused kernels exercised: $fused"
    echo "- failures: $fails in $failing_seeds seeds"
    echo
    echo "## Failing fused kernels (forced candidates), by primitive sequence"
    echo
    echo "| seeds | backend: primitives |"
    echo "|---|---|"
    grep -h '^CULPRIT' "$out"/log-*.txt | sed -E 's/^CULPRIT seed ([0-9]+) (.*)$/\1\t\2/' | sort -u \
        | awk -F'\t' '{n[$2]++; if (!($2 in s)) s[$2]=$1; else if (length(s[$2]) < 60) s[$2]=s[$2]" "$1}
                      END {for (k in n) printf "%d\t| %d (e.g. %s) | %s |\n", n[k], n[k], s[k], k}' \
        | sort -t$'\t' -k1,1nr | cut -f2-
    echo
    echo "## Failing seeds and what failed"
    echo
    grep -h '^FAIL seed' "$out"/log-*.txt | awk '{print $3, $4}' | sed 's/:$//' \
        | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k":"a[k]}' | sort -n | head -300 | sed 's/^/    /'
} > "$out/summary.md"
cat "$out/summary.md"
exit $status
