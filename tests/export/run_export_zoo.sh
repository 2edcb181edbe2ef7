#!/bin/sh
# The tiny zoo models (scripts/build-models.sh) through `korch optimize
# --estimate`, `korch export`, the generated Makefile (CFLAGS_EXTRA=-Werror)
# and model_run on the zoo's input files; outputs compared with the
# reference executor (scale-relative 1e-4) and with `korch run PLAN` (1e-6);
# `korch run PLAN` with OMP_WAIT_POLICY=passive (what the CLI chooses on a
# busy machine) must give the same bits as without: a plan fixes every
# kernel's schedule (an estimated plan once left cgen's default to the run,
# which followed the wait policy, and candy's output moved by 1.8e-6).
# Exit 77 (skipped) when there are no models.
#
# usage: run_export_zoo.sh KORCH COMPARE MODELS_DIR WORK_DIR
set -u
korch=$1
compare=$2
models=$3
work=$4
ls "$models"/*_tiny.onnx >/dev/null 2>&1 || { echo "no tiny models in $models (scripts/build-models.sh): skipped"; exit 77; }
rm -rf "$work"
mkdir -p "$work" || exit 2
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$work/cache}"
passed=0
failed=0
for m in "$models"/*_tiny.onnx; do
    name=$(basename "$m" .onnx)
    d="$work/$name"
    mkdir -p "$d/out" "$d/ref" "$d/plan_out" "$d/plan_passive"
    ins=""
    for f in "$models/$name".input.*.npy; do
        input=${f#"$models/$name".input.}
        ins="$ins --input ${input%.npy}=$f"
    done
    echo "=== $name"
    ok=yes
    start=$(date +%s)
    # shellcheck disable=SC2086
    # no wall-clock limit for the solver: the plan cannot depend on the load
    if ! "$korch" optimize "$m" -o "$d/plan" --estimate --time-limit 1000000 -q >"$d/log" 2>&1 ||
        ! "$korch" export "$d/plan" -o "$d/export" >>"$d/log" 2>&1; then
        echo "FAIL $name: $(tail -3 "$d/log")"
        ok=no
    elif ! make -s -C "$d/export" CFLAGS_EXTRA=-Werror >"$d/build.log" 2>&1; then
        echo "FAIL $name: the export does not build with -Werror: $(head -5 "$d/build.log")"
        ok=no
    elif ! "$d/export/model_run" $ins --output-dir "$d/out" >>"$d/log" 2>&1 ||
        ! "$korch" run "$m" $ins --output-dir "$d/ref" >>"$d/log" 2>&1 ||
        ! "$korch" run "$d/plan" $ins --output-dir "$d/plan_out" >>"$d/log" 2>&1 ||
        ! OMP_WAIT_POLICY=passive "$korch" run "$d/plan" $ins --output-dir "$d/plan_passive" >>"$d/log" 2>&1; then
        echo "FAIL $name: a run failed: $(tail -3 "$d/log")"
        ok=no
    else
        grep '^exported' "$d/log"
        for want in "$d/ref"/*.npy; do
            got="$d/out/$(basename "$want")"
            if ! "$compare" "$got" "$want" 1e-4 2>>"$d/compare.log"; then
                echo "FAIL $name: $(basename "$want") vs the reference executor: $(tail -1 "$d/compare.log")"
                ok=no
            fi
            if ! "$compare" "$got" "$d/plan_out/$(basename "$want")" 1e-6 2>>"$d/compare.log"; then
                echo "FAIL $name: $(basename "$want") vs korch run PLAN: $(tail -1 "$d/compare.log")"
                ok=no
            fi
            if ! "$compare" "$d/plan_passive/$(basename "$want")" "$d/plan_out/$(basename "$want")" 0 \
                2>>"$d/compare.log"; then
                echo "FAIL $name: $(basename "$want"): korch run PLAN with passive waiting differs: $(tail -1 "$d/compare.log")"
                ok=no
            fi
        done
    fi
    echo "$name: $ok ($(($(date +%s) - start)) s)"
    if [ $ok = yes ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "run_export_zoo: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
