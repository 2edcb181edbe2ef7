"""Profiles taken under load, then an idle optimise (issue 16, "done when"):
is the plan's predicted latency still within 15% of its measured latency?

    python -m bench.load.poisoned [--models mobilenetv2,resnet50] [--threads 2]
                                  [--load cpu2] [--runs 20] [--closed-loop N] [--no-record]

Per model, with a fresh private database: (1) `korch optimize` while the load
runs (bench/load/load.c; by default two CPU-bound processes), so every
profile it stores is taken on a disturbed machine; (2) the load stops and
`korch bench MODEL --db SAME` runs on the idle machine: it optimises the three
strategies from that database (re-measuring what docs/profiling.md's rules
say must be re-measured) and prints predicted vs measured per plan. The
table records both and their ratio; the target is |measured/predicted - 1|
<= 15% for every strategy. Appended to bench/load/RESULTS.md unless --no-record.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess

from bench.harness import cpu_model, git_commit
from bench.load.run import LOADS, ROOT, Load, add_common_args, log, prepare

# korch bench's table (src/cli/cmd_bench.c): strategy, measured ms, predicted ms, kernels, ...
ROW = re.compile(r"^(none|greedy|optimal)\s+([0-9.]+)\s+([0-9.]+)\s+\d+\s", re.M)


def korch(args, argv, env=None):
    p = subprocess.run([args.korch] + argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"korch {argv[0]} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return p.stdout + p.stderr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap)
    ap.add_argument("--load", default="cpu2", choices=[k for k in LOADS if k != "none"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--closed-loop", type=int, default=0,
                    help="pass --closed-loop N to the idle korch bench (docs/orchestration.md): "
                         "each plan is run in place and kernels off their profiles re-costed")
    args = ap.parse_args(argv)
    shutil.rmtree(os.path.join(ROOT, "build", "bench", "poisoned"), ignore_errors=True)
    cmd, work, exe = prepare(args, argv, "poisoned", "poisoned")
    rows = []
    for m in args.models.split(","):
        model = os.path.join(args.models_dir, m + ".onnx")
        db = os.path.join(work, m + ".db")
        common = ["--db", db, "--cache-dir", db + ".kernels", "--threads", str(args.threads)]
        log(f"{m}: optimise under load {args.load}")
        with Load(exe, LOADS[args.load]):
            loaded = korch(args, ["optimize", model, "-o", os.path.join(work, m + ".plan")] + common)
        with open(os.path.join(work, m + ".loaded.log"), "w") as fh:
            fh.write(loaded)
        log(f"{m}: bench on the idle machine")
        extra = ["--closed-loop", str(args.closed_loop)] if args.closed_loop else []
        out = korch(args, ["bench", model, "--runs", str(args.runs)] + extra + common)
        with open(os.path.join(work, m + ".idle.log"), "w") as fh:
            fh.write(out)
        found = ROW.findall(out)
        if not found:
            raise RuntimeError(f"{m}: no 'measured ... predicted' rows in korch bench's output "
                               f"(see {work}/{m}.idle.log)")
        for strat, meas, pred in found:
            rows.append((m, strat, float(pred), float(meas)))
            log(f"{m} {strat}: predicted {float(pred):.3f} ms, measured {float(meas):.3f} ms")
    md = ["", f"## Profiled under load, optimised idle: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
              f"{cpu_model()}, {args.threads} threads", "",
          f"Command: `{cmd}` (korch {git_commit()}); profiles taken under load `{args.load}`, "
          f"then `korch bench --runs {args.runs}"
          f"{' --closed-loop ' + str(args.closed_loop) if args.closed_loop else ''}` on the idle machine with the same database", "",
          "| model | strategy | predicted ms | measured ms | measured/predicted |", "|---|---|---:|---:|---:|"]
    worst = 0.0
    for m, s, p, me in rows:
        md.append(f"| {m} | {s} | {p:.3f} | {me:.3f} | {me / p:.2f} |")
        worst = max(worst, abs(me / p - 1))
    md.append("")
    md.append(f"Worst |measured/predicted - 1|: {100 * worst:.1f}% (target: at most 15%).")
    text = "\n".join(md) + "\n"
    print(text)
    if not args.no_record:
        with open(args.out, "a") as fh:
            fh.write(text)
        log(f"appended to {args.out}")


if __name__ == "__main__":
    main()
