#!/bin/sh
# Runs ort_recurrent.py with the Python of scripts/python-env.sh; skipped
# (exit 77) when that Python is missing.
# usage: run_ort.sh PYTHON SCRIPT ARGS...
py=$1
shift
if [ ! -x "$py" ]; then
    echo "skipped: no Python with onnxruntime at $py (scripts/python-env.sh)"
    exit 77
fi
exec "$py" "$@"
