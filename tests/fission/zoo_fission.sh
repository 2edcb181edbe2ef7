#!/bin/sh
# The tiny zoo models through `korch fission`: the written ONNX model must
# give the outputs of the original in `korch run` (fission_compare), and
# in ONNX Runtime when a Python with onnxruntime is found ($KORCH_PYTHON, or
# the venv next to the models: build/venv/bin/python). Prints the fission
# statistics of each model. Exit 77 (skipped) when there are no models.
#
# usage: zoo_fission.sh KORCH FISSION_COMPARE MODELS_DIR WORK_DIR
set -u
if [ $# -ne 4 ]; then
    echo "usage: $0 KORCH FISSION_COMPARE MODELS_DIR WORK_DIR" >&2
    exit 2
fi
korch=$1
compare=$2
models=$3
work=$4
here=$(cd "$(dirname "$0")" && pwd)
ls "$models"/*_tiny.onnx >/dev/null 2>&1 || { echo "no tiny models in $models (scripts/build-models.sh): skipped"; exit 77; }
python=${KORCH_PYTHON:-$models/../venv/bin/python}
if [ -x "$python" ] && "$python" -c "import onnxruntime" 2>/dev/null; then ort=yes; else ort=no; fi
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
    if [ $ort = yes ]; then
        if "$python" "$here/ort_check.py" "$m" "$out/fission.onnx" "$models" "$name" >"$out/ort.txt" 2>&1; then
            cat "$out/ort.txt"
        else
            ok=no
            echo "FAIL $name: ONNX Runtime: $(tail -3 "$out/ort.txt")"
        fi
    fi
    if [ $ok = yes ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
[ $ort = yes ] || echo "(ONNX Runtime not found: only korch run was compared; set KORCH_PYTHON)"
echo "zoo_fission: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
