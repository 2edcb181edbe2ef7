#!/bin/sh
# Test double for build/korch (see fake_korch.py).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec "$ROOT/build/venv/bin/python" "$ROOT/bench/fake_korch.py" "$@"
