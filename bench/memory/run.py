"""Peak resident memory: `korch run PLAN` and the exported model (model_run)
against ONNX Runtime, per benchmark model. See bench/memory/README.md.

usage: build/venv/bin/python bench/memory/run.py [--models a,b] [--korch build/korch]
           [--models-dir build/models] [--work build/bench-memory] [--threads 2]
           [--repeat 3] [--no-export] [--record]

For every model: `korch optimize MODEL -o PLAN --estimate` (latencies from
the roofline model: the plan's kernels are real, only their choice is not
measured; memory does not depend on it), then, each --repeat times,
  korch     /usr/bin/time -f %M korch run PLAN --input ... --bench 1
  export    /usr/bin/time -f %M DIR/model_run --input ... --bench 1
  ORT       bench/memory/ort_rss.py (peak after one run; its baseline after
            importing numpy + onnxruntime, before the session, is reported too)
and reports the median peak RSS. --record appends the table to
bench/memory/RESULTS.md.
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


def inputs_of(models_dir, name):
    with open(os.path.join(models_dir, name + ".json")) as f:
        meta = json.load(f)
    return [(i["name"], os.path.join(models_dir, i["file"])) for i in meta["inputs"]]


def peak_kb(cmd, env):
    """runs cmd under /usr/bin/time; returns (peak RSS in KiB, stdout)"""
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M"] + cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd[:2]), (r.stderr or r.stdout)[-400:]))
    line = [l for l in r.stderr.splitlines() if l.startswith("maxrss_kb=")][-1]
    return int(line.split("=")[1]), r.stdout


def field(text, key):
    for line in text.splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1].split()[0]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-memory"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-export", action="store_true")
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
        ins = inputs_of(a.models_dir, name)
        plan = os.path.join(a.work, name + ".plan")
        t0 = time.time()
        subprocess.run([a.korch, "optimize", model, "-o", plan, "--estimate", "-q", "--threads", str(a.threads)],
                       check=True, env=env)
        flags = []
        for n, p in ins:
            flags += ["--input", "%s=%s" % (n, p)]
        exp = os.path.join(a.work, name + ".export")
        if not a.no_export:
            subprocess.run([a.korch, "export", plan, "-o", exp, "-q"], check=True, env=env)
            subprocess.run(["make", "-s", "-C", exp], check=True, env=env)
        korch, export, ort, base, arena = [], [], [], [], None
        for _ in range(a.repeat):
            kb, out = peak_kb([a.korch, "run", plan, "--bench", "1", "--threads", str(a.threads)] + flags, env)
            korch.append(kb)
            arena = int(field(out, "peak_arena_bytes") or 0)
            if not a.no_export:
                kb, _ = peak_kb([os.path.join(exp, "model_run"), "--bench", "1", "--threads", str(a.threads)] + flags,
                                env)
                export.append(kb)
            r = subprocess.run([sys.executable, os.path.join(HERE, "ort_rss.py"), model, "--threads", str(a.threads)] +
                               ["%s=%s" % (n, p) for n, p in ins], capture_output=True, text=True, env=env, check=True)
            ort.append(int(field(r.stdout, "peak_kb")))
            base.append(int(field(r.stdout, "baseline_kb")))
        row = {"model": name, "file_mb": os.path.getsize(model) / 2**20, "arena_mb": arena / 2**20,
               "korch_mb": statistics.median(korch) / 1024, "ort_mb": statistics.median(ort) / 1024,
               "ort_base_mb": statistics.median(base) / 1024,
               "export_mb": statistics.median(export) / 1024 if export else None}
        rows.append(row)
        print("%-13s model %7.1f MiB  arena %6.1f  korch run %7.1f  export %7s  ORT %7.1f (python+ORT import %5.1f)  "
              "[%.0f s]" % (name, row["file_mb"], row["arena_mb"], row["korch_mb"],
                            "%.1f" % row["export_mb"] if row["export_mb"] else "-", row["ort_mb"], row["ort_base_mb"],
                            time.time() - t0), flush=True)
    table = ["| model | .onnx MiB | arena MiB | korch run PLAN MiB | exported model_run MiB | ORT MiB | ORT minus "
             "its import baseline MiB | korch / ORT |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append("| %s | %.1f | %.1f | %.1f | %s | %.1f | %.1f | %.2f |" % (
            r["model"], r["file_mb"], r["arena_mb"], r["korch_mb"],
            "%.1f" % r["export_mb"] if r["export_mb"] else "-", r["ort_mb"], r["ort_mb"] - r["ort_base_mb"],
            r["korch_mb"] / r["ort_mb"]))
    print("\n".join(table))
    if a.record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n## %s, %d threads, median of %d\n\n" % (time.strftime("%Y-%m-%d %H:%M"), a.threads, a.repeat))
            f.write("Command: `%s`\n\n" % " ".join(["build/venv/bin/python", "bench/memory/run.py"] + sys.argv[1:]))
            f.write("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
