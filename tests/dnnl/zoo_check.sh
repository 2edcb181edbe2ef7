#!/bin/sh
# Runs dnnl_model_check --fused on every tiny zoo model in MODELS_DIR (the
# suite builds them: tests/zoo). Exit 77 (skipped) when there are none.
#   zoo_check.sh DNNL_MODEL_CHECK MODELS_DIR
check=$1
models=$2
if ls "$models"/*_tiny.onnx >/dev/null 2>&1; then
    exec "$check" --fused "$models"/*_tiny.onnx
fi
echo "no tiny zoo models in $models (zoo/tiny_models builds them; it needs python3-torch): skipped"
exit 77
