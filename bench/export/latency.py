"""Latency of an exported model (model_run) against `korch run PLAN` on the
same plan, interleaved. See bench/export/README.md.

usage: build/venv/bin/python bench/export/latency.py [--models a,b] [--korch build/korch]
           [--models-dir build/models] [--work build/bench-export] [--threads 2]
           [--rounds 15] [--runs 10] [--plan-dir DIR] [--record]

Per model: the plan (DIR/<model>.plan when --plan-dir has one, else
`korch optimize --estimate`: real kernels with default schedules, chosen by
estimated latencies; both sides run the same plan either way), `korch export`
and `make`; then --rounds rounds, each running `korch run PLAN --bench N` and
`model_run --bench N` (which one goes first alternates), both with the zoo's
inputs. Each process does one warm-up run and N timed runs and prints their
median. Reported per side: the median and the minimum over rounds of those
medians; and the median over rounds of the paired ratio export / korch (the
two runs of a round are seconds apart, so they see about the same machine
load: on this shared machine the load changes 3x between rounds, and the
paired ratio is the estimate that survives it).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ["resnet50", "mobilenetv2", "efficientvit", "segformer_b0", "vit_b16", "bert_base", "candy", "yolov4",
          "yolox_nano"]


def median_ms(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd[0], r.stderr[-400:]))
    last = r.stdout.strip().splitlines()[-1]
    if not last.startswith("median_ms="):
        raise RuntimeError("%s: unexpected last line %r" % (cmd[0], last))
    return float(last.split()[0].split("=")[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-export"))
    ap.add_argument("--plan-dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env.setdefault("XDG_CACHE_HOME", os.path.join(a.work, "cache"))
    rows = []
    for name in a.models.split(","):
        model = os.path.join(a.models_dir, name + ".onnx")
        if not os.path.exists(model):
            print("%s: missing (scripts/build-models.sh %s)" % (name, name), file=sys.stderr)
            continue
        with open(os.path.join(a.models_dir, name + ".json")) as f:
            ins = [(i["name"], os.path.join(a.models_dir, i["file"])) for i in json.load(f)["inputs"]]
        flags = []
        for n, p in ins:
            flags += ["--input", "%s=%s" % (n, p)]
        plan = os.path.join(a.plan_dir, name + ".plan") if a.plan_dir else ""
        source = "given"
        if not plan or not os.path.exists(plan):
            plan = os.path.join(a.work, name + ".plan")
            source = "estimate"
            subprocess.run([a.korch, "optimize", model, "-o", plan, "--estimate", "-q", "--threads", str(a.threads)],
                           check=True, env=env)
        exp = os.path.join(a.work, name + ".export")
        subprocess.run([a.korch, "export", plan, "-o", exp, "-q"], check=True, env=env)
        subprocess.run(["make", "-s", "-C", exp], check=True, env=env)
        korch_cmd = [a.korch, "run", plan, "--bench", str(a.runs), "--threads", str(a.threads)] + flags
        export_cmd = [os.path.join(exp, "model_run"), "--bench", str(a.runs), "--threads", str(a.threads)] + flags
        k, e = [], []
        for r in range(a.rounds):
            if r % 2 == 0:
                k.append(median_ms(korch_cmd, env))
                e.append(median_ms(export_cmd, env))
            else:
                e.append(median_ms(export_cmd, env))
                k.append(median_ms(korch_cmd, env))
        km, em = statistics.median(k), statistics.median(e)
        ratio = statistics.median([b / a for a, b in zip(k, e)])
        row = {"model": name, "plan": source, "korch": km, "export": em, "korch_min": min(k), "export_min": min(e),
               "ratio": ratio, "korch_rounds": k, "export_rounds": e}
        rows.append(row)
        print("%-13s korch run %9.3f ms (min %.3f)  export %9.3f ms (min %.3f)  paired export/korch %.3f" % (
            name, km, min(k), em, min(e), ratio), flush=True)
    table = ["| model | plan | korch run PLAN ms (median, min) | exported model_run ms (median, min) | "
             "median of paired ratios export / korch |", "|---|---|---|---|---|"]
    for r in rows:
        table.append("| %s | %s | %.3f, %.3f | %.3f, %.3f | %.3f |" % (r["model"], r["plan"], r["korch"], r["korch_min"],
                                                                     r["export"], r["export_min"], r["ratio"]))
    print("\n".join(table))
    if a.record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n## %s, %d threads, %d rounds x %d runs\n\n" % (time.strftime("%Y-%m-%d %H:%M"), a.threads,
                                                                      a.rounds, a.runs))
            f.write("Command: `%s`\n\n" % " ".join(["build/venv/bin/python", "bench/export/latency.py"] + sys.argv[1:]))
            f.write("\n".join(table) + "\n\nPer-round medians (ms):\n\n")
            for r in rows:
                f.write("- %s: korch %s; export %s\n" % (r["model"], " ".join("%.3f" % x for x in r["korch_rounds"]),
                                                        " ".join("%.3f" % x for x in r["export_rounds"])))


if __name__ == "__main__":
    main()
