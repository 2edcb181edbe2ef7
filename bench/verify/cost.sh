#!/bin/sh
# What verification costs `korch optimize` (issue 15's target: at most 10% of
# the optimise wall time on the zoo). For every model: a cold optimise (empty
# profile database and kernel cache), then a warm one (same database), both
# with verification, and the time verification took inside them, read from
# the log: the kernel checks ("N kernels checked against the interpreter (X
# s)") and the whole-plan check ("matches the reference executor (...; Y
# s)"). Overhead = verification / (optimise time - verification): what the
# same optimise would have taken without it, measured in the same process.
#
#   bench/verify/cost.sh [--models a,b,...] [--threads N] [--out FILE] [--korch PATH]
# Default: the nine zoo models, 2 threads, results appended to
# bench/verify/RESULTS.md with the CPU model and the exact command.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KORCH="$ROOT/build/korch"
MODELS="candy,segformer_b0,yolox_nano,yolov4,efficientvit,resnet50,mobilenetv2,vit_b16,bert_base"
THREADS=2
OUT="$ROOT/bench/verify/RESULTS.md"
CMD="bench/verify/cost.sh $*"
while [ $# -gt 0 ]; do
    case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --korch) KORCH=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "cost.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$KORCH" ] || { echo "cost.sh: build korch first (make)" >&2; exit 1; }
WORK="$ROOT/build/bench/verify"
mkdir -p "$WORK"
names=$(echo "$MODELS" | tr ',' ' ')
# shellcheck disable=SC2086
"$ROOT/scripts/build-models.sh" $names >/dev/null
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
rows=""
for m in $names; do
    onnx="$ROOT/build/models/$m.onnx"
    rm -rf "$WORK/$m" && mkdir -p "$WORK/$m"
    for phase in cold warm; do
        log="$WORK/$m/$phase.log"
        echo "cost.sh: $m $phase" >&2
        XDG_CACHE_HOME="$WORK/$m/cache" "$KORCH" optimize "$onnx" -o "$WORK/$m/plan" --threads "$THREADS" \
            --db "$WORK/$m/profile.db" >"$log" 2>&1 || { echo "cost.sh: $m $phase failed: $(tail -2 "$log")" >&2; exit 1; }
        total=$(sed -n 's/^optimize time: \([0-9.]*\) s$/\1/p' "$log")
        kern=$(sed -n 's/.*kernels checked against the interpreter (\([0-9.]*\) s).*/\1/p' "$log" | tail -1)
        plan=$(sed -n 's/.*matches the reference executor (.*; \([0-9.]*\) s)$/\1/p' "$log" | tail -1)
        checked=$(sed -n 's/^verification: \([0-9]*\) kernels checked.*/\1/p' "$log" | tail -1)
        excl=$(sed -n 's/.*, \([0-9]*\) candidate kernels* excluded as wrong/\1/p' "$log" | tail -1)
        # the margins (docs/verification.md): the worst error/tolerance ratio of
        # a kernel the plan uses, and of a plan output, as the plan records them
        kworst=$(grep -ao ' verified=[0-9.eE+-]*' "$WORK/$m/plan" | cut -d= -f2 | sort -g | tail -1)
        pworst=$(LC_ALL=C sed -n 's/^checked .* worst=\([0-9.eE+-]*\) .*/\1/p' "$WORK/$m/plan" | sort -g | tail -1)
        row=$(awk -v m="$m" -v p="$phase" -v t="$total" -v k="${kern:-0}" -v c="${plan:-0}" -v n="${checked:-0}" \
                  -v e="${excl:-0}" -v kw="${kworst:-nan}" -v pw="${pworst:-nan}" 'BEGIN { v = k + c; b = t - v;
                  o = b > 0 ? 100 * v / b : 0
                  printf "| %s | %s | %.1f | %d | %.1f | %.1f | %.1f%% | %d | %.2g | %.2g |", m, p, t, n, k, c, o, e, kw, pw }')
        echo "$row" >&2
        rows="$rows$row
"
    done
done
{
    echo
    echo "## $(date -u '+%Y-%m-%d %H:%M') UTC, $cpu, $THREADS threads"
    echo
    echo "Command: \`$CMD\` (korch $(git -C "$ROOT" rev-parse --short HEAD))"
    echo
    echo "| model | optimise | wall s | kernels checked | kernel checks s | plan check s | overhead | excluded | worst kernel err/tol | worst output err/tol |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s' "$rows"
} >>"$OUT"
echo "cost.sh: appended to $OUT" >&2
