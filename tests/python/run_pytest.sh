#!/bin/sh
# Runs one pytest test of python/korch for CTest (tests/python/CMakeLists.txt).
#   run_pytest.sh PYTHON FILE::TEST
# PYTHON is the venv's (scripts/python-env.sh, with onnxruntime); when it is
# not there, Debian's /usr/bin/python3 runs the test and tests that need
# onnxruntime skip. Exit 77 (skipped) without pytest or numpy
# (scripts/install-deps.sh installs both), or when pytest skipped the test.
py=$1
shift
[ -x "$py" ] || py=/usr/bin/python3
if ! "$py" -c "import pytest, numpy" 2>/dev/null; then
    echo "run_pytest: $py has no pytest or numpy (scripts/install-deps.sh): skipped"
    exit 77
fi
# -p no:cacheprovider: nothing written into the source tree
exec "$py" -m pytest -q -rs -p no:cacheprovider "$@"
