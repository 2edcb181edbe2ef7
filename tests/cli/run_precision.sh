#!/bin/sh
# korch optimize --precision fp32|bf16|bf16-all (docs/precision.md, "Computing in bfloat16"):
#  - a bad value is a usage error (exit 2) naming the flag;
#  - on a CPU with AVX512_BF16, with bf16-all (every linear primitive bf16,
#    so that what follows does not depend on timings): the plan records precision=bf16 and its
#    primitive graph's hash differs from the fp32 plan's; its convolutions run
#    oneDNN bf16 kernels (explain); its verification reports the distance from
#    the float32 reference, in the log, in explain and in the plan's checked
#    lines; run --verify passes; the plan's outputs differ from the fp32
#    plan's (bf16 really computed) but by less than 5% of their magnitude;
#    its standalone C export builds and computes what the plan does;
#  - with bf16 (the per-primitive choice, "Where bf16 pays"): the log says
#    how many linear primitives stay bf16 and how many are kept in float32,
#    and, when some are, which of that plan and the all-bf16 one it kept;
#    the plan lists as many on its fission line (fp32-linear=), and it
#    loads and passes run --verify (which lowers the model with that list);
#    which ones are kept depends on timings, so only the agreement is checked;
#  - on a CPU without it: optimize is refused naming AVX512_BF16, no plan.
# The bf16 plan's kernels are timed (so that explain names oneDNN's
# implementations); nothing checked depends on the times.
#   run_precision.sh KORCH MODEL PYTHON WORKDIR   (PYTHON: with numpy, or "" to skip the output comparison)
set -u
korch=$1 model=$2 py=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
opt() { # opt NAME ARGS...: optimise $model into $work/NAME.plan, log in $work/NAME.log
    name=$1
    shift
    "$korch" optimize "$model" -o "$work/$name.plan" --strategy greedy \
        --db "$work/profile.db" --cache-dir "$work/kernels" "$@" >"$work/$name.log" 2>&1
}

opt bad --precision fp16
rc=$?
[ $rc = 2 ] || fail "--precision fp16: exit $rc, expected 2"
grep -q -- '--precision expects fp32, bf16 or bf16-all' "$work/bad.log" || fail "--precision fp16: $(tail -1 "$work/bad.log")"
[ -e "$work/bad.plan" ] && fail "--precision fp16 wrote a plan"

if ! grep -q avx512_bf16 /proc/cpuinfo; then
    opt bf16 --precision bf16 && fail "--precision bf16 succeeded on a CPU without AVX512_BF16"
    grep -q 'needs a CPU with AVX512_BF16' "$work/bf16.log" || fail "no AVX512_BF16: $(tail -1 "$work/bf16.log")"
    [ -e "$work/bf16.plan" ] && fail "--precision bf16 wrote a plan on a CPU without AVX512_BF16"
    [ $fails = 0 ] && echo "no AVX512_BF16 here: --precision bf16 refused as it should be (the bf16 path is tested on CPUs with it)"
    exit $((fails > 0))
fi

opt fp32 --precision fp32 --estimate || fail "optimize --precision fp32: $(tail -2 "$work/fp32.log")"
opt bf16 --precision bf16-all || fail "optimize --precision bf16-all: $(tail -2 "$work/bf16.log")"
grep -q '^precision: timing' "$work/bf16.log" && fail "bf16-all timed the primitives for a choice it must not make"
grep -q '^fission .*fp32-linear=' "$work/bf16.plan" && fail "the bf16-all plan keeps primitives in float32"

opt chosen --precision bf16 || fail "optimize --precision bf16: $(tail -2 "$work/chosen.log")"
summary=$(grep '^precision: [0-9]* of [0-9]* linear primitives in bf16, [0-9]* kept in float32' "$work/chosen.log")
[ -n "$summary" ] || fail "the bf16 log does not say which precision each linear primitive got"
kept=$(echo "$summary" | sed -n 's/.* \([0-9]*\) kept in float32.*/\1/p')
listed=$(sed -n 's/^fission .*fp32-linear=\([0-9,]*\).*/\1/p' "$work/chosen.plan" | tr ',' '\n' | grep -c .)
# a plan that keeps some is compared with the every-primitive-bf16 one, and
# the log says which was kept: that one's list is in the plan
if [ "${kept:-0}" -gt 0 ]; then
    verdict=$(grep '^precision: the plan with [0-9]* linear primitives\? in float32 is predicted .*: kept ' "$work/chosen.log")
    [ -n "$verdict" ] || fail "the plan keeping $kept primitives in float32 was not compared with the all-bf16 one"
    case "$verdict" in *"kept every one in bf16") kept=0 ;; esac
fi
[ "$kept" = "$listed" ] || fail "the log keeps ${kept:-?} primitives in float32, the plan lists $listed"
grep -q '^fission .* precision=bf16' "$work/chosen.plan" || fail "the bf16 plan does not record precision=bf16"
if [ "${listed:-0}" -gt 0 ]; then
    "$korch" explain "$work/chosen.plan" 2>&1 | grep -q "$listed linear primitives\? kept in float32" ||
        fail "explain of the chosen-precision plan does not say that $listed primitives are kept in float32"
fi
"$korch" run "$work/chosen.plan" --verify >"$work/verify-chosen.txt" 2>&1 ||
    fail "run --verify of the chosen-precision plan: $(tail -2 "$work/verify-chosen.txt")"
grep -q '^fission .* precision=bf16' "$work/bf16.plan" || fail "the bf16 plan does not record precision=bf16"
grep -q '^fission .*precision=' "$work/fp32.plan" && fail "the fp32 plan records a precision= field (fp32 plans stay as before)"
h32=$(sed -n 's/^fission .*pgraph-hash=\([0-9a-f]*\).*/\1/p' "$work/fp32.plan")
h16=$(sed -n 's/^fission .*pgraph-hash=\([0-9a-f]*\).*/\1/p' "$work/bf16.plan")
[ -n "$h16" ] && [ "$h16" != "$h32" ] || fail "bf16 and fp32 plans share the pgraph hash '$h16'"
grep -q 'linear primitives in bf16' "$work/bf16.log" || fail "the log does not say the linear primitives are bf16"
grep -q '^verification: bf16 plan .* off the float32 reference' "$work/bf16.log" ||
    fail "the log does not report the bf16 plan's distance from the float32 reference"
grep -q '^checked .* fp32-max-rel=' "$work/bf16.plan" || fail "the bf16 plan's checked lines lack fp32-max-rel="

"$korch" explain "$work/bf16.plan" >"$work/explain.txt" 2>&1 || fail "explain: $(tail -1 "$work/explain.txt")"
grep -q 'precision bf16' "$work/explain.txt" || fail "explain does not show the precision"
grep -q 'linear.conv.*bf16' "$work/explain.txt" || fail "explain shows no bf16 convolution primitive"
grep -q 'implementation: dnnl .*bf16' "$work/explain.txt" || fail "explain shows no oneDNN bf16 kernel"
grep -q 'off the float32 reference by' "$work/explain.txt" || fail "explain does not report the distance from float32"

"$korch" run "$work/bf16.plan" --verify >"$work/verify.txt" 2>&1 || fail "run --verify: $(tail -2 "$work/verify.txt")"
grep -q 'matches the reference executor .*bf16' "$work/verify.txt" || fail "run --verify: $(head -1 "$work/verify.txt")"

# the standalone C export of a bf16 plan computes what the plan does
"$korch" export "$work/bf16.plan" -o "$work/export" >"$work/export.log" 2>&1 ||
    fail "export of the bf16 plan: $(tail -1 "$work/export.log")"
make -C "$work/export" >"$work/export-build.log" 2>&1 || fail "the bf16 export does not build: $(tail -3 "$work/export-build.log")"
# values read only by bf16 primitives are stored in bfloat16: oneDNN kernels
# writing and reading 16 bits (docs/precision.md, "Values stored in bfloat16")
grep -q -- ' ->bf16 \*/' "$work/export/model.c" || fail "no exported oneDNN kernel writes a bfloat16 destination"
grep -q -- ' src-bf16 ' "$work/export/model.c" || fail "no exported oneDNN kernel reads a bfloat16 source"

# the chosen-precision plan exports too (its kept primitives lowered float32)
"$korch" export "$work/chosen.plan" -o "$work/export-chosen" >"$work/export-chosen.log" 2>&1 ||
    fail "export of the chosen-precision plan: $(tail -1 "$work/export-chosen.log")"
make -C "$work/export-chosen" >"$work/export-chosen-build.log" 2>&1 ||
    fail "the chosen-precision export does not build: $(tail -3 "$work/export-chosen-build.log")"

# the outputs: bf16 really computed (they differ from fp32), and close
if [ -n "$py" ]; then
    # one float32 input, shaped as korch info says ("  input  NAME  float32  1x3x128x128")
    set -- $("$korch" info "$model" | awk '$1 == "input" { print $2, $4; exit }')
    "$py" -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(7).uniform(-1, 1, [int(d) for d in sys.argv[2].split('x')]).astype(np.float32))" \
        "$work/x.npy" "$2" || fail "could not make an input of shape '$2'"
    for p in fp32 bf16; do
        mkdir -p "$work/out-$p"
        "$korch" run "$work/$p.plan" --input "$1=$work/x.npy" --output-dir "$work/out-$p" >"$work/run-$p.log" 2>&1 ||
            fail "run $p: $(tail -1 "$work/run-$p.log")"
    done
    for p in export export-chosen; do
        mkdir -p "$work/out-$p"
        "$work/$p/model_run" --input "$1=$work/x.npy" --output-dir "$work/out-$p" >"$work/run-$p.log" 2>&1 ||
            fail "model_run of $p: $(tail -1 "$work/run-$p.log")"
    done
    mkdir -p "$work/out-chosen"
    "$korch" run "$work/chosen.plan" --input "$1=$work/x.npy" --output-dir "$work/out-chosen" >"$work/run-chosen.log" 2>&1 ||
        fail "run chosen: $(tail -1 "$work/run-chosen.log")"
    "$py" - "$work/out-fp32" "$work/out-bf16" "$work/out-export" "$work/out-chosen" "$work/out-export-chosen" <<'PYEOF' || fail "outputs: see above"
import os, sys
import numpy as np
a_dir, b_dir, e_dir, c_dir, ce_dir = sys.argv[1:6]
names = sorted(f for f in os.listdir(a_dir) if f.endswith(".npy"))
assert names, "no outputs"
for f in names:
    a, b = np.load(os.path.join(a_dir, f)).astype(np.float64), np.load(os.path.join(b_dir, f)).astype(np.float64)
    rel = np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30)
    print(f"{f}: bf16 vs fp32 plan: max relative difference {rel:.3g}")
    if rel == 0:
        sys.exit(f"{f}: identical: the bf16 plan computed in float32")
    if rel > 0.05:
        sys.exit(f"{f}: {rel:.3g} apart: more than bf16 rounding explains")
    e = np.load(os.path.join(e_dir, f)).astype(np.float64)
    erel = np.max(np.abs(e - b)) / max(np.max(np.abs(b)), 1e-30)
    print(f"{f}: the export vs the bf16 plan: {erel:.3g}")
    if erel > 1e-5:  # the same oneDNN kernels, the same conversions: float32 noise at most
        sys.exit(f"{f}: the bf16 export differs from the bf16 plan by {erel:.3g}")
    c, ce = np.load(os.path.join(c_dir, f)).astype(np.float64), np.load(os.path.join(ce_dir, f)).astype(np.float64)
    crel = np.max(np.abs(c - a)) / max(np.max(np.abs(a)), 1e-30)
    cerel = np.max(np.abs(ce - c)) / max(np.max(np.abs(c)), 1e-30)
    print(f"{f}: chosen-precision plan vs fp32 plan {crel:.3g}; its export vs the plan {cerel:.3g}")
    if crel > 0.05:
        sys.exit(f"{f}: the chosen-precision plan is {crel:.3g} from the fp32 plan")
    if cerel > 1e-5:
        sys.exit(f"{f}: the chosen-precision export differs from its plan by {cerel:.3g}")
PYEOF
fi
[ $fails = 0 ] && echo "precision: bf16 plan recorded, verified, explained, run and exported as documented"
exit $((fails > 0))
