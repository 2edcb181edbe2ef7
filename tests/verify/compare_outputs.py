#!/usr/bin/env python3
"""compare_outputs.py GOT_DIR WANT_DIR: every .npy in WANT_DIR against the
same file in GOT_DIR with the plan tolerance of docs/verification.md
(|got - want| <= 1e-3 |want| + 1e-4 rms(want) sqrt(16)); NaN must meet NaN.
Prints each mismatching output; exit 1 if any."""
import os
import sys

import numpy as np

got_dir, want_dir = sys.argv[1], sys.argv[2]
bad = 0
names = sorted(f for f in os.listdir(want_dir) if f.endswith(".npy"))
for f in names:
    want = np.load(os.path.join(want_dir, f)).astype(np.float64)
    path = os.path.join(got_dir, f)
    if not os.path.exists(path):
        print(f"  {f}: missing")
        bad += 1
        continue
    got = np.load(path).astype(np.float64)
    if got.shape != want.shape:
        print(f"  {f}: shape {got.shape}, reference {want.shape}")
        bad += 1
        continue
    finite = np.isfinite(want)
    rms = np.sqrt(np.mean(want[finite] ** 2)) if finite.any() else 0.0
    tol = 1e-3 * np.abs(want) + 1e-4 * rms * 4
    same_nonfinite = (np.isnan(got) & np.isnan(want)) | (np.isinf(want) & (got == want))
    ok = np.where(finite, np.abs(got - want) <= tol, same_nonfinite)
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), want.shape)
        print(f"  {f}: {np.count_nonzero(~ok)} of {want.size} differ; at {i}: {got[i]} vs {want[i]}")
        bad += 1
print(f"{len(names) - bad} of {len(names)} outputs match")
sys.exit(1 if bad else 0)
