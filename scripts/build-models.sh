#!/bin/sh
# Builds the model zoo into build/models/ (ONNX + metadata + reference data).
#
#   scripts/build-models.sh                 all models, full and tiny
#   scripts/build-models.sh resnet50 bert_base_tiny ...   only these
#   scripts/build-models.sh --tiny          only the *_tiny variants
#   scripts/build-models.sh --full          only the full-size models
#   scripts/build-models.sh --force ...     rebuild even if up to date
#
# Up-to-date models (same generator source hash, files present) are skipped.
# Each built model is checked with onnx.checker and against ONNX Runtime.
# See models/README.md.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/python-env.sh" --quiet
PY="$ROOT/build/venv/bin/python"
cd "$ROOT"

ARGS=""
NAMES=""
for a in "$@"; do
    case "$a" in
        --tiny) NAMES="$NAMES $("$PY" -m models.build --list | grep '_tiny$' | tr '\n' ' ')" ;;
        --full) NAMES="$NAMES $("$PY" -m models.build --list | grep -v '_tiny$' | tr '\n' ' ')" ;;
        --force) ARGS="$ARGS --force" ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) NAMES="$NAMES $a" ;;
    esac
done
# shellcheck disable=SC2086
exec "$PY" -m models.build $ARGS $NAMES
