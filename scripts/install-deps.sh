#!/bin/sh
# Installs every system dependency korch needs on Debian 12 (bookworm).
# Idempotent: quiet when everything is already present.
# python3-dev: Python's headers, for korch._fast, the C extension behind
# the Python package's session.run (make build and `pip install ./python`
# compile it; docs/python.md).
# `make models` and `make bench` need Python packages Debian does not ship
# (onnxruntime, from PyPI): scripts/python-env.sh installs them into
# build/venv, and both targets run it first.
set -eu

PACKAGES="build-essential cmake clang libclang-rt-14-dev pkg-config \
libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata \
coinor-libcbc-dev libdnnl-dev libsqlite3-dev libgomp1 \
python3 python3-dev python3-venv python3-numpy python3-onnx python3-torch python3-torchvision python3-pytest"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "install-deps: installing$missing"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
