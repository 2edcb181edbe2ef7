#!/bin/sh
# The tiny zoo models through `korch fission`, in one of two modes:
#   run  the written ONNX model gives the outputs of the original in
#        `korch run` (fission_compare); prints the fission statistics;
#   ort  ... and in ONNX Runtime (ort_check.py), with PYTHON (the venv that
#        scripts/python-env.sh makes: onnxruntime comes from PyPI). Exit 77
#        (skipped) when PYTHON cannot import onnxruntime.
# Exit 77 (skipped) when there are no models (the suite builds them:
# tests/zoo).
#
# usage: zoo_fission.sh run|ort KORCH FISSION_COMPARE MODELS_DIR WORK_DIR [PYTHON]
set -u
if [ $# -lt 5 ]; then
    echo "usage: $0 run|ort KORCH FISSION_COMPARE MODELS_DIR WORK_DIR [PYTHON]" >&2
    exit 2
fi
mode=$1
korch=$2
compare=$3
models=$4
work=$5
python=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
ls "$models"/*_tiny.onnx >/dev/null 2>&1 || {
    echo "no tiny models in $models (zoo/tiny_models builds them; it needs python3-torch): skipped"
    exit 77
}
if [ "$mode" = ort ] && ! { [ -x "$python" ] && "$python" -c "import onnxruntime" 2>/dev/null; }; then
    echo "no Python with onnxruntime at '$python' (scripts/python-env.sh makes one; it needs PyPI): skipped"
    exit 77
fi
rm -rf "$work"
mkdir -p "$work" || exit 2
passed=0
failed=0
for m in "$models"/*_tiny.onnx; do
    name=$(basename "$m" .onnx)
    ins=""
    for f in "$models/$name".input.*.npy; do
        input=${f#"$models/$name".input.}
        ins="$ins --input ${input%.npy}=$f"
    done
    out="$work/$name"
    mkdir -p "$out/orig" "$out/fission"
    echo "=== $name"
    if ! "$korch" fission "$m" -o "$out/fission.onnx" --stats >"$out/stats.txt" 2>"$out/err"; then
        failed=$((failed + 1))
        echo "FAIL $name: korch fission: $(cat "$out/err")"
        continue
    fi
    sed -n '/^primitives:/p;/^opaque primitives/,$p' "$out/stats.txt"
    if [ "$mode" = ort ]; then
        if "$python" "$here/ort_check.py" "$m" "$out/fission.onnx" "$models" "$name" >"$out/ort.txt" 2>&1; then
            cat "$out/ort.txt"
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL $name: ONNX Runtime: $(tail -3 "$out/ort.txt")"
        fi
        continue
    fi
    # shellcheck disable=SC2086
    if ! "$korch" run "$m" $ins --output-dir "$out/orig" >/dev/null 2>"$out/err" ||
        ! "$korch" run "$out/fission.onnx" $ins --output-dir "$out/fission" >/dev/null 2>>"$out/err"; then
        failed=$((failed + 1))
        echo "FAIL $name: korch run: $(cat "$out/err")"
        continue
    fi
    ok=yes
    for o in "$out/orig"/*.npy; do
        if ! "$compare" "$out/fission/$(basename "$o")" "$o" 2>>"$out/err"; then
            ok=no
            echo "FAIL $name: korch run output $(basename "$o"): $(tail -1 "$out/err")"
        fi
    done
    if [ $ok = yes ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "zoo_fission ($mode): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
