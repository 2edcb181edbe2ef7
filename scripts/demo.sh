#!/bin/sh
# make demo: korch's main job on the bundled example model.
#   1. inspect and validate the model,
#   2. optimise it (fission, candidate kernels, profiling, binary program),
#   3. show the plan, run it, and compare it with the reference executor.
set -eu
korch=${1:-build/korch}
cd "$(dirname "$0")/.."
model=examples/tiny_net.onnx
out=build/demo
mkdir -p "$out"
# a private profile database and kernel cache, so the demo never touches the user's
export XDG_CACHE_HOME="$PWD/$out/cache"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "korch info $model"
"$korch" info "$model"

say "korch check $model"
"$korch" check "$model"

/usr/bin/python3 -c "
import numpy as np
np.save('$out/image.npy', np.random.default_rng(0).standard_normal((1, 3, 128, 128), dtype=np.float32))"

say "korch optimize (first run profiles every candidate kernel; later runs reuse the profile database)"
"$korch" optimize "$model" -o "$out/tiny_net.plan" --threads 2 --budget 120

say "korch explain (the five most expensive kernels)"
"$korch" explain "$out/tiny_net.plan" --top 5 | tail -n 12

say "reference executor vs optimized plan (2 threads, 20 runs each)"
ref=$("$korch" run "$model" --input image="$out/image.npy" --output-dir "$out/reference" --threads 2 --bench 20 | tail -1)
opt=$("$korch" run "$out/tiny_net.plan" --input image="$out/image.npy" --output-dir "$out/optimized" --threads 2 --bench 20 | tail -1)
echo "reference: $ref"
echo "optimized: $opt"
/usr/bin/python3 - "$ref" "$opt" "$out" <<'PY'
import sys, numpy as np
med = lambda line: float(line.split()[0].split("=")[1])
ref, opt, out = med(sys.argv[1]), med(sys.argv[2]), sys.argv[3]
a = np.load(f"{out}/reference/probabilities.npy")
b = np.load(f"{out}/optimized/probabilities.npy")
print(f"speed-up over the reference executor: {ref / opt:.1f}x  ({ref:.2f} ms -> {opt:.2f} ms)")
print(f"outputs agree: max |difference| = {np.abs(a - b).max():.2e}; top class {int(a.argmax())} vs {int(b.argmax())}")
PY
