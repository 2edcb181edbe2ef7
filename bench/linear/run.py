#!/usr/bin/env python3
"""Linear kernel benchmark driver (bench/linear/run.sh calls it).

Studies:
  ort     korch's oneDNN kernels (as plans run them: channels-last convs with
          their bias, matmuls) against ONNX Runtime on the same single-node
          models, on every distinct Conv/MatMul/Gemm shape of the chosen
          models, with the FMA peak and STREAM triad measured in every round.
  layout  every conv shape of the chosen models in four layouts (nchw,
          nchw_blocked, nhwc, native), summed per model with each shape's
          multiplicity.

Each round runs the probes, then every shape: korch then ORT back to back
(interleaved), so slow phases of a shared machine hit both. Statistics are
medians over rounds of per-round medians; ratios are per round, then the
median. Writes results JSON and prints a markdown report.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_shapes(path, models, kinds):
    out = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        kind = f[0]
        n = 5 if kind == "mm" else 16
        vals = [int(x) for x in f[1:1 + n]]
        count = int(f[1 + n])
        ms = f[2 + n].split(",")
        if kind not in kinds or not any(m in models for m in ms):
            continue
        out.append({"kind": kind, "v": vals, "count": count, "models": ms, "line": line.strip()})
    return out


def settle():
    """A pause between two contenders: worker threads of the previous one
    (ORT's spin for a while after a run; OpenMP's briefly) stop spinning and
    give the cores back. Under SCHED_FIFO a spinning thread of equal priority
    is never preempted, so without the pause the next contender's second
    thread waits for it."""
    time.sleep(0.05)


class Korch:
    def __init__(self, binary, threads, env):
        self.p = subprocess.Popen([binary, "-", "--threads", str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)

    def run(self, mode, epilogue, shape):
        settle()
        self.p.stdin.write("%s %s %s\n" % (mode, epilogue, shape["line"]))
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def probe(binary, what, threads, env):
    r = subprocess.run([binary, what, str(threads)], capture_output=True, text=True, env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- ONNX Runtime ---------------------------------------------------------------

def ort_model(shape, path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    v = shape["v"]
    inits, inputs = [], {}
    if shape["kind"] == "mm":
        B, M, K, N, wconst = v
        a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [B, M, K])
        if wconst:
            inits.append(numpy_helper.from_array((rng.standard_normal((K, N)) * 0.1).astype(np.float32), "W"))
            graph_inputs = [a]
        else:
            graph_inputs = [a, helper.make_tensor_value_info("W", TensorProto.FLOAT, [B, K, N])]
            inputs["W"] = rng.standard_normal((B, K, N)).astype(np.float32)
        inputs["A"] = rng.standard_normal((B, M, K)).astype(np.float32)
        node = helper.make_node("MatMul", ["A", "W"], ["Y"])
    else:
        N, C, H, W, M, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, g = v
        graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [N, C, H, W])]
        inputs["X"] = rng.standard_normal((N, C, H, W)).astype(np.float32)
        wshape = [M, C // g, kh, kw] if shape["kind"] == "conv" else [C, M // g, kh, kw]
        inits.append(numpy_helper.from_array((rng.standard_normal(wshape) * 0.1).astype(np.float32), "W"))
        inits.append(numpy_helper.from_array(rng.standard_normal(M).astype(np.float32), "B"))
        node = helper.make_node("Conv" if shape["kind"] == "conv" else "ConvTranspose", ["X", "W", "B"], ["Y"],
                                kernel_shape=[kh, kw], strides=[sh, sw], pads=[pt, pl, pb, pr],
                                dilations=[dh, dw], group=g)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "single", graph_inputs, [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return inputs


class Ort:
    def __init__(self, threads, tmp):
        import onnxruntime as ort
        self.ort = ort
        self.threads = threads
        self.tmp = tmp
        self.sessions = {}
        self.version = ort.__version__

    def run(self, shape, target_ms=150.0, min_reps=11):
        settle()
        key = shape["line"]
        if key not in self.sessions:
            path = os.path.join(self.tmp, "m%d.onnx" % len(self.sessions))
            inputs = ort_model(shape, path)
            so = self.ort.SessionOptions()
            so.intra_op_num_threads = self.threads
            so.inter_op_num_threads = 1
            so.execution_mode = self.ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            s = self.ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            # like korch's timer: enough input copies that they come from L3/DRAM
            footprint = sum(a.nbytes for a in inputs.values())
            copies = 1 if footprint >= (4 << 20) else min(64, -(-(4 << 20) // max(footprint, 1)))
            sets = [inputs] + [{k: a.copy() for k, a in inputs.items()} for _ in range(copies - 1)]
            self.sessions[key] = (s, sets)
        s, sets = self.sessions[key]
        t0 = time.perf_counter()
        for i in range(3):
            s.run(None, sets[i % len(sets)])
        while (time.perf_counter() - t0) < 0.02:
            s.run(None, sets[0])
        samples = []
        spent = 0.0
        while len(samples) < 400 and (len(samples) < min_reps or spent < target_ms):
            inputs = sets[len(samples) % len(sets)]
            a = time.perf_counter()
            s.run(None, inputs)
            ms = (time.perf_counter() - a) * 1e3
            samples.append(ms)
            spent += ms
        return {"median_ms": statistics.median(samples), "min_ms": min(samples), "repeats": len(samples)}


# ---- studies ----------------------------------------------------------------------

def loadavg():
    return open("/proc/loadavg").read().split()[0]


def study_ort(args, korch, ort, shapes, env):
    rounds = []
    for r in range(args.rounds):
        fma = probe(args.probe, "fma", args.threads, env)
        triad = probe(args.probe, "triad", args.threads, env)
        res = {"round": r, "load_before": loadavg(), "fma": fma, "triad": triad, "shapes": []}
        print("round %d: load %s, FMA peak %.0f GFLOP/s (median), triad %.1f GB/s" %
              (r, res["load_before"], fma["median"], triad["median"]), file=sys.stderr)
        for s in shapes:
            mode = "auto"
            epi = "none" if s["kind"] == "mm" else "bias"
            k = korch.run(mode, epi, s)
            o = ort.run(s)
            entry = {"line": s["line"], "korch": k, "ort": o}
            if s["kind"] != "mm":  # the same NCHW single-node model, transposes/reorders included
                entry["korch_nchw"] = korch.run("auto_nchw", epi, s)
            res["shapes"].append(entry)
        res["load_after"] = loadavg()
        rounds.append(res)
    return rounds


def study_layout(args, korch, shapes, env):
    rounds = []
    for r in range(args.rounds):
        fma = probe(args.probe, "fma", args.threads, env)
        res = {"round": r, "load_before": loadavg(), "fma": fma, "shapes": []}
        print("layout round %d: load %s, FMA peak %.0f GFLOP/s" % (r, res["load_before"], fma["median"]),
              file=sys.stderr)
        for s in shapes:
            entry = {"line": s["line"]}
            for mode in ("nchw", "nchw_blocked", "nhwc", "native"):
                entry[mode] = korch.run(mode, "bias", s)
            res["shapes"].append(entry)
        res["load_after"] = loadavg()
        rounds.append(res)
    return rounds


# ---- report -------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def describe(s):
    v = s["v"]
    if s["kind"] == "mm":
        return "mm %s%dx%dx%d%s" % ("%dx " % v[0] if v[0] > 1 else "", v[1], v[2], v[3], "" if v[4] else " (2 activations)")
    N, C, H, W, M, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, g = v
    kind = "dw" if g == C and g > 1 else ("g%d" % g if g > 1 else "")
    return "%s %dx%dx%d->%d k%dx%d s%d%s%s" % (s["kind"], C, H, W, M, kh, kw, sh, " p%d" % pt if pt else "",
                                              " " + kind if kind else "")


def category(s):
    v = s["v"]
    if s["kind"] == "mm":
        return "matmul"
    g, C, kh, kw = v[15], v[1], v[5], v[6]
    if g == C and g > 1:
        return "depthwise"
    if g > 1:
        return "grouped"
    if kh == 3 and kw == 3:
        return "3x3"
    if kh == 1 and kw == 1:
        return "1x1"
    return "other"


def report_ort(args, shapes, rounds, env_text):
    by = {s["line"]: s for s in shapes}
    peaks = [r["fma"]["median"] for r in rounds]
    peak_best = max(r["fma"]["best"] for r in rounds)
    triads = [r["triad"]["median"] for r in rounds]
    lines = []
    lines.append("FMA peak (probe fma %d, median of 7 per round): %s GFLOP/s; STREAM triad: %s GB/s; load average "
                 "before/after each round: %s" % (args.threads, ", ".join("%.0f" % p for p in peaks),
                                                   ", ".join("%.1f" % t for t in triads),
                                                   ", ".join("%s/%s" % (r["load_before"], r["load_after"]) for r in rounds)))
    lines.append("")
    lines.append("| shape | models (count) | category | GFLOP | korch ms | korch impl | GFLOP/s | of peak | quietest "
                 "| ORT ms | ORT/korch | quietest | korch NCHW-in/out ms | ORT/that |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for s in shapes:
        ks, os_, fr, ratio, nchw, nratio, frb, kmin, omin = [], [], [], [], [], [], [], [], []
        impl = ""
        for r in rounds:
            e = next(x for x in r["shapes"] if x["line"] == s["line"])
            k = e["korch"]
            if "error" in k:
                continue
            kn = e.get("korch_nchw")
            if kn and "error" not in kn:
                nchw.append(kn["median_ms"])
                nratio.append(e["ort"]["median_ms"] / kn["median_ms"])
            impl = k["impl"].replace("dnnl ", "").replace(" fmt=plain", "").replace("fmt=", "")
            ks.append(k["median_ms"])
            os_.append(e["ort"]["median_ms"])
            fr.append(k["gflops"] / r["fma"]["median"])
            kmin.append(k["median_ms"])
            omin.append(e["ort"]["median_ms"])
            ratio.append(e["ort"]["median_ms"] / k["median_ms"])
        if not ks:
            lines.append("| %s | %s | %s | - | failed | | | | | |" % (describe(s), ",".join(s["models"]), category(s)))
            continue
        gflop = next(x for x in rounds[0]["shapes"] if x["line"] == s["line"])["korch"].get("gflop", 0)
        row = {"shape": s, "korch_ms": med(ks), "ort_ms": med(os_), "frac": med(fr), "ratio": med(ratio),
               "gflop": gflop, "cat": category(s), "impl": impl, "nchw_ms": med(nchw) if nchw else None,
               "nratio": med(nratio) if nratio else None,
               # the least contended round: the kernel's fastest round median against the machine's peak
               # (the best FMA probe of the whole run; contention only lowers either)
               "frac_best": gflop / min(kmin) * 1e3 / peak_best,
               "ratio_best": min(omin) / min(kmin)}
        k0 = next(x for x in rounds[0]["shapes"] if x["line"] == s["line"])["korch"]
        row["gbps"] = k0.get("bytes", 0) / (row["korch_ms"] * 1e6)
        rows.append(row)
        extra = ""
        if row["cat"] == "depthwise":
            extra = " (%.1f GB/s, %.0f%% of triad)" % (row["gbps"], 100 * row["gbps"] / med(triads))
        lines.append("| %s | %s (%d) | %s | %.3f | %.4f | %s | %.0f | %.2f%s | %.2f | %.4f | %.2f | %.2f | %s | %s |" % (
            describe(s), ",".join(s["models"]), s["count"], row["cat"], gflop, row["korch_ms"], impl,
            gflop / row["korch_ms"] * 1e3, row["frac"], extra, row["frac_best"], row["ort_ms"], row["ratio"],
            row["ratio_best"],
            "%.4f" % row["nchw_ms"] if row["nchw_ms"] else "-", "%.2f" % row["nratio"] if row["nratio"] else "-"))
    lines.append("")
    # targets
    def sel(pred):
        return [r for r in rows if pred(r)]
    dense = sel(lambda r: r["cat"] in ("3x3", "1x1", "matmul") and
                any(m in ("resnet50", "segformer_b0", "bert_base") for m in r["shape"]["models"]))
    large = sel(lambda r: r["cat"] == "3x3" and r["gflop"] >= 0.2)
    lines.append("Summary (%d interleaved rounds; ORT/korch is the median of per-round ratios):" % len(rounds))
    lines.append("")
    for name, group in (("dense 3x3 + 1x1 convs and matmuls (target >= 0.6)", dense),
                        ("  of which 3x3", sel(lambda r: r in dense and r["cat"] == "3x3")),
                        ("  of which 1x1", sel(lambda r: r in dense and r["cat"] == "1x1")),
                        ("  of which matmul", sel(lambda r: r in dense and r["cat"] == "matmul")),
                        ("large 3x3 convs, >= 0.2 GFLOP (target >= 0.75)", large)):
        if not group:
            continue
        fr = [r["frac"] for r in group]
        fb = [r["frac_best"] for r in group]
        target = 0.75 if "large" in name else 0.6
        below = [describe(r["shape"]) + " %.2f" % r["frac_best"] for r in group if r["frac_best"] < target]
        lines.append("- %s: %d shapes; fraction of peak per round (median run / median probe of the round), "
                     "median over shapes %.2f (min %.2f); in the quietest round (fastest round median / best probe "
                     "of the run, %.0f GFLOP/s): median %.2f (min %.2f, FLOP-weighted %.2f); below target there: %s" % (
                         name, len(group), statistics.median(fr), min(fr), peak_best, statistics.median(fb), min(fb),
                         sum(r["frac_best"] * r["gflop"] for r in group) / sum(r["gflop"] for r in group),
                         "; ".join(below) if below else "none"))
    for model in ("resnet50", "segformer_b0", "bert_base"):
        g = [r for r in rows if model in r["shape"]["models"]]
        if g:
            lines.append("- ORT/korch geomean over the %d distinct Conv/MatMul shapes of %s: %.2f (time summed with "
                         "each shape's multiplicity: korch %.2f ms, ORT %.2f ms)" % (
                             len(g), model, geomean([r["ratio"] for r in g]),
                             sum(r["korch_ms"] * r["shape"]["count"] for r in g),
                             sum(r["ort_ms"] * r["shape"]["count"] for r in g)))
    both = [r for r in rows if any(m in ("resnet50", "segformer_b0") for m in r["shape"]["models"])]
    lines.append("- ORT/korch geomean over all %d distinct Conv and MatMul shapes of ResNet-50 and SegFormer-B0 "
                 "(target >= 1.0): %.2f with korch's kernels as plans run them (convolutions channels-last after "
                 "the layout pass); %.2f when every korch convolution must also read and write NCHW like the "
                 "single-node ONNX model (the profiler's pick among plain NCHW and reorders inside the kernel); "
                 "%.2f comparing each side's least contended round" % (
                     len(both), geomean([r["ratio"] for r in both]),
                     geomean([r["nratio"] if r["nratio"] else r["ratio"] for r in both]),
                     geomean([r["ratio_best"] for r in both])))
    dws = sel(lambda r: r["cat"] == "depthwise")
    if dws:
        lines.append("- depthwise convs (memory-bound): %s" % "; ".join(
            "%s %.1f GB/s = %.0f%% of triad" % (describe(r["shape"]), r["gbps"], 100 * r["gbps"] / med(triads))
            for r in dws))
    lines.append("")
    lines.append(env_text)
    return "\n".join(lines)


def report_layout(args, shapes, rounds):
    modes = ("nchw", "nchw_blocked", "nhwc", "native")
    lines = ["| model | convs (distinct) | " + " | ".join("%s ms" % m for m in modes) + " | nchw/nhwc | nhwc/native |",
             "|---|---|" + "---|" * len(modes) + "---|---|"]
    per_shape = {}
    for s in shapes:
        per_shape[s["line"]] = {}
        for m in modes:
            xs = []
            for r in rounds:
                e = next(x for x in r["shapes"] if x["line"] == s["line"])
                if "error" not in e[m]:
                    xs.append(e[m]["median_ms"])
            per_shape[s["line"]][m] = med(xs) if xs else None
    for model in args.models.split(","):
        group = [s for s in shapes if model in s["models"]]
        if not group:
            continue
        tot = {}
        for m in modes:
            vals = [per_shape[s["line"]][m] for s in group]
            tot[m] = None if any(v is None for v in vals) else sum(v * s["count"] for v, s in zip(vals, group))
        n = sum(s["count"] for s in group)
        fmt = lambda x: "%.2f" % x if x is not None else "n/a"
        lines.append("| %s | %d (%d) | %s | %s | %s |" % (
            model, n, len(group), " | ".join(fmt(tot[m]) for m in modes),
            fmt(tot["nchw"] / tot["nhwc"]) if tot["nchw"] and tot["nhwc"] else "n/a",
            fmt(tot["nhwc"] / tot["native"]) if tot["nhwc"] and tot["native"] else "n/a"))
    lines.append("")
    lines.append("Per shape (median ms over rounds; count = uses in the model):")
    lines.append("")
    lines.append("| shape | models (count) | " + " | ".join(modes) + " | impl (nhwc) |")
    lines.append("|---|---|" + "---|" * len(modes) + "---|")
    for s in shapes:
        impl = next(x for x in rounds[0]["shapes"] if x["line"] == s["line"])["nhwc"].get("impl", "")
        lines.append("| %s | %s (%d) | %s | %s |" % (
            describe(s), ",".join(s["models"]), s["count"],
            " | ".join("%.4f" % per_shape[s["line"]][m] if per_shape[s["line"]][m] is not None else "n/a" for m in modes),
            impl.replace("dnnl ", "").replace(" fmt=plain", "")))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench")
    ap.add_argument("--probe")
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.txt"))
    ap.add_argument("--study", choices=("ort", "layout"), default="ort")
    ap.add_argument("--models", default="resnet50,segformer_b0,bert_base")
    ap.add_argument("--kinds", default="conv,deconv,mm")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--from-json", default=None, help="rebuild the report of an earlier run (no measurement)")
    args = ap.parse_args()
    if args.from_json:
        saved = json.load(open(args.from_json))
        for k, v in saved["args"].items():
            if k not in ("from_json", "bench", "probe"):
                setattr(args, k, v)
        shapes = load_shapes(args.shapes, args.models.split(","), args.kinds.split(","))
        if args.study == "ort":
            print(report_ort(args, shapes, saved["rounds"], saved.get("env", "")))
        else:
            print(report_layout(args, shapes, saved["rounds"]) + "\n\n" + saved.get("env", ""))
        return
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(args.threads))
    shapes = load_shapes(args.shapes, args.models.split(","), args.kinds.split(","))
    korch = Korch(args.bench, args.threads, env)
    policy = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}.get(
        os.sched_getscheduler(0), "?")
    env_text = ("Environment: threads %d, OMP_NUM_THREADS=%s, GOMP_SPINCOUNT=%s, OMP_WAIT_POLICY=%s, nice %d, "
                "scheduling policy %s." % (
                    args.threads, env.get("OMP_NUM_THREADS"), env.get("GOMP_SPINCOUNT", "(default)"),
                    env.get("OMP_WAIT_POLICY", "(default)"), os.nice(0), policy))
    t0 = time.time()
    if args.study == "ort":
        with tempfile.TemporaryDirectory() as tmp:
            ort = Ort(args.threads, tmp)
            rounds = study_ort(args, korch, ort, shapes, env)
            env_text += " ONNX Runtime %s (CPUExecutionProvider, ORT_ENABLE_ALL, %d intra-op threads, sequential)." % (
                ort.version, args.threads)
        text = report_ort(args, shapes, rounds, env_text)
    else:
        rounds = study_layout(args, korch, shapes, env)
        text = report_layout(args, shapes, rounds) + "\n\n" + env_text
    korch.close()
    text += " Run time %.0f s." % (time.time() - t0)
    if args.json:
        json.dump({"args": vars(args), "rounds": rounds, "env": env_text}, open(args.json, "w"), indent=1)
    print(text)


if __name__ == "__main__":
    main()
