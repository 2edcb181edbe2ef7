#!/usr/bin/env python3
"""Same plans before and after a change: two korch binaries optimise every
zoo model under each strategy with --estimate (latencies from the roofline
model, so the plans do not depend on the machine's noise), and the plans and
their exported C are compared.

    same_plans.py --old OLD_KORCH --new NEW_KORCH --out DIR [MODEL.onnx ...]
        [--strategies none,greedy,optimal] [--threads 2] [--no-export]

Each binary gets private databases and kernel caches under DIR (one per
model), never the user's. What is compared:

  plan   the plan's text (up to the first NUL: an embedded model follows)
         without the lines and fields that name the file, the machine, the
         korch version or a checksum of any of those (plan_key below);
         everything else (inputs, the fission's graph hash and node count,
         strategy and predicted time, verification record, every kernel line
         with its nodes, inputs, outputs, schedule, implementation and
         latency) must be equal.
  export `korch export PLAN -o DIR` of each binary's own plan: every file
         byte for byte (the korch version string masked), column "export".
  kernels the same files without the fixed text every export carries: the
         support sources (src/export/support/*.inc of each side's tree,
         --old-src/--new-src) and cgen's prelude (the helpers before the
         first generated function). What is left is what the plan makes:
         the generated kernel functions, the reference and oneDNN
         parameters, the memory plan and weights layout, the call sequence
         and the weights file. Column "kernels": a change of the runtime
         around the kernels (a new dtype in model.h, say) shows in "export"
         only; a change of any kernel shows in both.

--reuse compares what an earlier run left in DIR without optimising again.

Writes DIR/summary.tsv (one row per model and strategy) and prints it; the
exit status is 1 when any row differs. docs/architecture.md ("Same plans")
records a run."""
import argparse
import difflib
import os
import re
import subprocess
import sys
import time

# plan lines that name the file, the machine or the build, not the plan
DROP_LINES = ("model", "embedded", "machine")
# fields that are checksums of the text or name the korch build
DROP_FIELDS = {"end": ("crc32c",), "fission": ("version",)}


def plan_key(path):
    """The plan's text as a list of lines that must match."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.split(b"\0", 1)[0].decode("utf-8", "replace")
    out = []
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        if line.startswith("korch-plan "):
            continue  # the format version: 2 before embedded plans, 3 after
        words = line.split()
        if words[0] in DROP_LINES:
            continue
        drop = DROP_FIELDS.get(words[0], ())
        words = [w for w in words if w.split("=", 1)[0] not in drop]
        if words[0] == "fission" and not any(w.startswith("layout=") for w in words):
            # plans from before --layout name no layout: korch lowered
            # channels-last then unless KORCH_LAYOUT said otherwise (cleared
            # for these runs, clean_env); the pgraph hash still tells them apart
            words.append("layout=channels-last")
        out.append(" ".join(words))
    return out


VERSION_RE = re.compile(r"korch [0-9]+\.[0-9]+[^ \n]*")


def support_texts(src):
    """The support sources of a source tree, longest first."""
    if not src:
        return []
    d = os.path.join(src, "src", "export", "support")
    texts = []
    for n in sorted(os.listdir(d)):
        if n.endswith(".inc"):
            with open(os.path.join(d, n), encoding="utf-8") as f:
                texts.append((n, f.read()))
    return sorted(texts, key=lambda t: -len(t[1]))


PRELUDE_RE = re.compile(r"(/\* ---- generated kernels \(korch's cgen backend\) ---- \*/\n).*?(?=^int korch_k)",
                        re.S | re.M)


def export_key(folder, support=None):
    """{file name: bytes} of an export, korch's version string masked; with
    support (support_texts), the fixed text removed as well."""
    files = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                b = f.read()
            if not n.endswith(".weights"):
                t = VERSION_RE.sub("korch VERSION", b.decode("utf-8", "replace"))
                if support is not None:
                    for name, text in support:
                        t = t.replace(text, f"<support {name}>")
                    t = PRELUDE_RE.sub(r"\1<cgen prelude>\n", t)
                b = t.encode()
            files[os.path.relpath(p, folder)] = b
    return files


def clean_env():
    """The environment without KORCH_* settings: both binaries run on their
    defaults (older ones read some settings from the environment)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KORCH_")}


def run(cmd, log):
    t = time.monotonic()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=clean_env())
    return r.returncode, time.monotonic() - t


def optimise(korch, model, strategy, work, threads, reuse=False):
    os.makedirs(work, exist_ok=True)
    plan = os.path.join(work, f"{strategy}.plan")
    if reuse:
        return (plan if os.path.exists(plan) else None), 0 if os.path.exists(plan) else 1, 0.0
    cmd = [korch, "optimize", model, "-o", plan, "--estimate", "--threads", str(threads), "--strategy", strategy,
           "--db", os.path.join(work, "profile.db"), "--cache-dir", os.path.join(work, "kernels")]
    rc, secs = run(cmd, os.path.join(work, f"{strategy}.optimize.log"))
    return (plan if rc == 0 else None), rc, secs


def export(korch, plan, work, strategy, reuse=False):
    folder = os.path.join(work, f"{strategy}.export")
    if reuse:
        return folder if os.path.exists(os.path.join(folder, "model.c")) else None
    rc, _ = run([korch, "export", plan, "-o", folder], os.path.join(work, f"{strategy}.export.log"))
    return folder if rc == 0 else None


def first_diff(a, b, limit=6):
    d = list(difflib.unified_diff(a, b, "old", "new", n=0, lineterm=""))
    return d[2:2 + limit]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--strategies", default="none,greedy,optimal")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-export", action="store_true")
    ap.add_argument("--old-src", help="the old binary's source tree (its export support sources)")
    ap.add_argument("--new-src", help="the new binary's source tree")
    ap.add_argument("--reuse", action="store_true", help="compare an earlier run's files, optimise nothing")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, differs = [], False
    summary = open(os.path.join(a.out, "summary-reuse.tsv" if a.reuse else "summary.tsv"), "w")
    sup_old, sup_new = support_texts(a.old_src), support_texts(a.new_src)
    head = "model\tstrategy\tkernels\tplan\texport\tkernel_code\told_s\tnew_s\tnote"
    print(head, flush=True)
    summary.write(head + "\n")
    for model in a.models:
        name = os.path.basename(model)[:-5] if model.endswith(".onnx") else os.path.basename(model)
        for strategy in a.strategies.split(","):
            res = {}
            for side, korch in (("old", a.old), ("new", a.new)):
                work = os.path.join(a.out, side, name)
                plan, rc, secs = optimise(korch, model, strategy, work, a.threads, a.reuse)
                res[side] = (plan, rc, secs, work)
            (po, rco, so, wo), (pn, rcn, sn, wn) = res["old"], res["new"]
            note, plan_eq, exp_eq, code_eq, kernels = "", "-", "-", "-", "-"
            if po and pn:
                ko, kn = plan_key(po), plan_key(pn)
                kernels = str(sum(1 for l in kn if l.startswith("kernel ")))
                plan_eq = "same" if ko == kn else "DIFFERS"
                if ko != kn:
                    note = " | ".join(first_diff(ko, kn))
                    with open(os.path.join(a.out, f"{name}.{strategy}.plan.diff"), "w") as f:
                        f.write("\n".join(difflib.unified_diff(ko, kn, "old", "new", lineterm="")) + "\n")
                if not a.no_export:
                    eo, en = export(a.old, po, wo, strategy, a.reuse), export(a.new, pn, wn, strategy, a.reuse)
                    if eo and en:
                        fo, fn = export_key(eo), export_key(en)
                        bad = sorted(n for n in set(fo) | set(fn) if fo.get(n) != fn.get(n))
                        exp_eq = "same" if not bad else "differs:" + ",".join(bad)
                        fo, fn = export_key(eo, sup_old), export_key(en, sup_new)
                        bad = sorted(n for n in set(fo) | set(fn) if fo.get(n) != fn.get(n))
                        code_eq = "same" if not bad else "DIFFERS:" + ",".join(bad)
                        for n in bad:
                            with open(os.path.join(a.out, f"{name}.{strategy}.{n}.diff"), "w") as f:
                                f.write("\n".join(difflib.unified_diff(
                                    fo.get(n, b"").decode("utf-8", "replace").splitlines(),
                                    fn.get(n, b"").decode("utf-8", "replace").splitlines(), "old", "new",
                                    lineterm="")) + "\n")
                    elif not eo and not en:
                        exp_eq = code_eq = "both-refused"  # e.g. a ref kernel with no standalone C: same verdict
                    else:
                        exp_eq = f"DIFFERS:old={'ok' if eo else 'refused'},new={'ok' if en else 'refused'}"
            elif not po and not pn:
                plan_eq = "both-failed"
            else:
                plan_eq = f"DIFFERS:old-rc={rco},new-rc={rcn}"
            if "DIFFERS" in plan_eq or "DIFFERS" in exp_eq or "DIFFERS" in code_eq:
                differs = True
            row = f"{name}\t{strategy}\t{kernels}\t{plan_eq}\t{exp_eq}\t{code_eq}\t{so:.1f}\t{sn:.1f}\t{note}"
            print(row, flush=True)
            summary.write(row + "\n")
            summary.flush()
    summary.close()
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
