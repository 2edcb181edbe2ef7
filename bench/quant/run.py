#!/usr/bin/env python3
"""Quantized models: korch against ONNX Runtime and OpenVINO, same run.

Each model of the zoo named by --models (build/models, `make models`) is
quantized here by onnxruntime.quantization.quantize_static in QDQ form
(uint8 activations, per-channel int8 weights, four seeded calibration
inputs), each named by --qoperator-models the same way in QOperator form
(QLinearConv, and ONNX Runtime's QLinearAdd, QLinearGlobalAveragePool,
QGemm), and each named by --dynamic-models by quantize_dynamic (int8
weights; DynamicQuantizeLinear, MatMulInteger, as ONNX Runtime writes a
dynamically quantized transformer), as a user's quantization pipeline would
write them. QDQ models run on a seeded random input, dynamic ones on the
zoo's stored input (BERT's token ids). Then, interleaved over R rounds:

  - korch: `korch optimize` once (private database and kernel cache under
    --work; the plan is verified against the reference executor as always),
    then one `korch run --bench K` process per round;
  - ONNX Runtime (its QDQ fusion: int8 kernels), K in-process calls;
  - OpenVINO (its low-precision transformations: int8), K calls.

Outputs are compared with the reference executor's (korch run of the model
itself): ONNX Runtime's and OpenVINO's int8 kernels round differently, so
their distance is reported, not bounded. Needs the Python of
scripts/python-env-quant.sh (onnxruntime.quantization wants onnx >= 1.16):

    build/venv-quant/bin/python bench/quant/run.py [--models mobilenetv2,resnet50]
        [--qoperator-models mobilenetv2,resnet50] [--dynamic-models bert_base] [--rounds 5]

Appends a table to bench/quant/RESULTS.md (--no-record: print only)."""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from bench.harness import OpenVinoContender, OrtContender, cpu_model, git_commit, sanitize  # noqa: E402
from bench.kernels.single_ops import Batched, KorchLayout, prepare_all, run_rounds  # noqa: E402


def log(msg):
    print("[quant]", msg, flush=True)


def quantize(src, dst, seed=1, fmt="qdq", stored=None):
    """stored: the zoo's stored inputs (a model whose input is not an
    image, BERT's token ids), which then also calibrate"""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    m = onnx.load(src)
    x = m.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]

    class Seeded(CalibrationDataReader):
        def __init__(self):
            self.n = 0

        def get_next(self):
            if self.n >= 4:
                return None
            self.n += 1
            if stored:
                return dict(stored)
            return {x.name: np.random.default_rng(seed + self.n).standard_normal(shape).astype(np.float32)}

    quantize_static(src, dst, Seeded(), quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return x.name, shape, [o.name for o in m.graph.output]


def stored_inputs(models_dir, name):
    """The zoo's stored inputs of a model whose inputs are not float32 (token
    ids), else None (an image model runs on a seeded random image)."""
    import json
    meta_path = os.path.join(models_dir, name + ".json")
    if not os.path.exists(meta_path):
        return None
    with open(meta_path) as fh:
        meta = json.load(fh)
    feeds = {i["name"]: np.load(os.path.join(models_dir, i["file"])) for i in meta["inputs"]}
    return feeds if any(v.dtype != np.float32 for v in feeds.values()) else None


def quantize_dyn(src, dst, models_dir, name):
    import json
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
    with open(os.path.join(models_dir, name + ".json")) as fh:
        meta = json.load(fh)
    feeds = {i["name"]: np.load(os.path.join(models_dir, i["file"])) for i in meta["inputs"]}
    return feeds, [o["name"] for o in meta["outputs"]]


def rel_dist(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def bench_model(name, args, work, kind="qdq"):
    src = os.path.join(args.models_dir, name + ".onnx")
    path = os.path.join(work, f"{name}_{kind}.onnx")
    if kind in ("qdq", "qop"):
        stored = stored_inputs(args.models_dir, name)
        xname, shape, outputs = quantize(src, path, fmt=kind, stored=stored)
        feeds = stored or {xname: np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)}
    else:
        feeds, outputs = quantize_dyn(src, path, args.models_dir, name)
    files = {}
    for k, v in feeds.items():
        files[k] = os.path.join(work, f"{name}_{kind}.{sanitize(k)}.npy")
        np.save(files[k], v)
    inputs = [a for k, f in files.items() for a in ("--input", f"{k}={f}")]
    # the reference executor's outputs (ONNX semantics)
    ref_dir = os.path.join(work, f"{name}_{kind}.ref")
    os.makedirs(ref_dir, exist_ok=True)
    subprocess.run([args.korch, "run", path] + inputs + ["--output-dir", ref_dir, "--threads", str(args.threads)],
                   check=True, capture_output=True)
    ref = [np.load(os.path.join(ref_dir, sanitize(o) + ".npy")) for o in outputs]
    cons = [KorchLayout(args.korch, "default", path, files, outputs, work, args.threads, args.bench_k,
                        os.path.join(work, "profile.db"), os.path.join(work, "kernels"), True),
            Batched(OrtContender(path, feeds, args.threads), args.bench_k)]
    if not args.no_openvino:
        cons.append(Batched(OpenVinoContender(path, feeds, args.threads, "default"), args.bench_k))
    res = {"name": name, "kind": kind, "c": {}}
    def check(c, outs, r):
        r["rel"] = max(rel_dist(o, w) for o, w in zip(outs, ref))
        return f"max |out - reference| / max|reference| = {r['rel']:.3g}"

    prepare_all(cons, res, name, check)
    run_rounds(cons, args.rounds, res)
    log(f"{name}: " + ", ".join(f"{n} {r.get('median', float('nan')):.3f}" for n, r in res["c"].items()))
    return res


def report(results, args, command):
    names = list(results[0]["c"].keys())
    lines = [f"## Quantized models ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"Command: `{command}`  ",
             f"CPU: {cpu_model()}; {args.threads} threads; korch commit {git_commit()}; {args.rounds} interleaved "
             f"rounds, each sample a median of {args.bench_k} runs; ms, median (min-max); in brackets the "
             "largest |output - reference executor| relative to the reference's largest |value|.", "",
             "| model | " + " | ".join(names) + " | korch / best peer |", "|---|" + "---:|" * len(names) + "---:|"]
    for res in results:
        c = res["c"]
        cells = []
        for n in names:
            r = c[n]
            na = r.get("na", "")
            if "Summary:" in na:  # OpenVINO's conversion errors end with the operators it could not convert
                na = na[na.index("Summary:") + len("Summary:"):]
            na = " ".join(na.split())  # one line: a table cell
            cells.append(f"{r['median']:.3f} ({r['lo']:.3f}-{r['hi']:.3f}) [{r.get('rel', float('nan')):.2g}]"
                         if "median" in r else f"n/a ({na[:120]})")
        k = c.get("korch default", {}).get("median")
        peers = [c[n]["median"] for n in names if not n.startswith("korch") and "median" in c[n]]
        ratio = f"{k / min(peers):.2f}" if k and peers else "-"
        label = {"qdq": "QDQ", "qop": "QOperator"}.get(res["kind"], "dynamic (quantize_dynamic)")
        lines.append(f"| {res['name']} {label} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--models", default="mobilenetv2,resnet50")
    ap.add_argument("--dynamic-models", default="bert_base",
                    help="zoo models quantized by quantize_dynamic ('' for none)")
    ap.add_argument("--qoperator-models", default="mobilenetv2,resnet50",
                    help="zoo models quantized by quantize_static in QOperator form ('' for none)")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bench-k", type=int, default=10)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-quant"))
    ap.add_argument("--no-openvino", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    results = [bench_model(m, args, args.work) for m in args.models.split(",") if m]
    results += [bench_model(m, args, args.work, "qop") for m in args.qoperator_models.split(",") if m]
    results += [bench_model(m, args, args.work, "dynamic") for m in args.dynamic_models.split(",") if m]
    text = report(results, args, " ".join(["python", "bench/quant/run.py"] + sys.argv[1:]))
    print(text)
    if not args.no_record:
        with open(os.path.join(ROOT, "bench", "quant", "RESULTS.md"), "a") as fh:
            fh.write("\n" + text)


if __name__ == "__main__":
    sys.exit(main())
