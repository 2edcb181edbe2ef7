#!/bin/sh
# Runs dnnl_model_check --fused on every tiny zoo model found in
# $KORCH_MODELS_DIR, else $KORCH_BUILD_DIR/models, else
# $KORCH_SOURCE_DIR/build/models (scripts/build-models.sh). Exit 77 (skip)
# when none is found.
check="$1"
for dir in "$KORCH_MODELS_DIR" "$KORCH_BUILD_DIR/models" "$KORCH_SOURCE_DIR/build/models"; do
    if [ -n "$dir" ] && ls "$dir"/*_tiny.onnx >/dev/null 2>&1; then
        exec "$check" --fused "$dir"/*_tiny.onnx
    fi
done
echo "no tiny zoo models found (set KORCH_MODELS_DIR or run scripts/build-models.sh): skipped"
exit 77
