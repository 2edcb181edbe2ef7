#!/bin/sh
# A CNN+LSTM and a CNN+GRU recognizer exported from PyTorch (make_crnn.py,
# tiny size) through the whole pipeline: check, reference run, optimize
# (roofline estimates: the test checks the plan's numbers, not its speed),
# plan run, standalone C export built and run; every output against ONNX
# Runtime (or PyTorch without it). Skipped (77) without torch.
# usage: run_crnn.sh KORCH WORK_DIR PYTHON_WITH_TORCH [PYTHON_WITH_ORT]
set -u
korch=$1 work=$2 py=$3 ortpy=${4:-$3}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" || exit 2
[ -x "$ortpy" ] || ortpy=$py
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
for cell in lstm gru; do
    "$py" "$here/make_crnn.py" "$work" --cell $cell --size tiny >"$work/make.log" 2>&1
    rc=$?
    [ $rc -eq 77 ] && { cat "$work/make.log"; exit 77; }
    [ $rc -eq 0 ] || { cat "$work/make.log"; fail "$cell: make_crnn.py"; continue; }
    m=$work/crnn_${cell}_tiny
    "$korch" check "$m.onnx" || fail "$cell: check"
    "$korch" run "$m.onnx" --input "image=$m.input.npy" --output-dir "$m.ref" >/dev/null || fail "$cell: run"
    "$korch" optimize "$m.onnx" -o "$m.plan" --threads 2 --estimate --max-kernel-nodes 6 >"$m.opt.log" 2>&1 ||
        { tail -3 "$m.opt.log"; fail "$cell: optimize"; continue; }
    grep -q "opaque" "$m.opt.log" && grep "opaque" "$m.opt.log"
    "$korch" run "$m.plan" --input "image=$m.input.npy" --output-dir "$m.plan.out" >/dev/null || fail "$cell: run plan"
    "$korch" export "$m.plan" -o "$m.c" -q || fail "$cell: export"
    make -s -C "$m.c" CFLAGS_EXTRA=-Werror >/dev/null 2>&1 || fail "$cell: building the export"
    "$m.c/model_run" --input "image=$m.input.npy" --output-dir "$m.c.out" >/dev/null || fail "$cell: model_run"
    "$ortpy" "$here/compare.py" "$m.onnx" "$m.input.npy" "$m.torch.npy" "$m.ref/logits.npy" "$m.plan.out/logits.npy" \
        "$m.c.out/logits.npy" || fail "$cell: outputs"
done
echo "$failed failed"
[ "$failed" -eq 0 ]
