"""Build the model zoo: export each model to ONNX with reference data.

    python -m models.build [--out build/models] [--force] [--list] [names...]

For each model <name> it writes into the output folder:
  <name>.onnx                      static shapes, batch 1
  <name>.json                      metadata (inputs, outputs, opset, seed, GFLOPs,
                                   op histogram, ORT check, generator hash)
  <name>.input.<input>.npy         reference input (sanitized tensor name)
  <name>.output.<i>.npy            PyTorch output i for that input
A model is skipped when its .json records the same generator hash (sources of
the model's architecture file + shared files + torch version) and all its
files exist. Every built model is checked with onnx.checker and with ONNX
Runtime against the PyTorch output.
"""
import argparse
import collections
import hashlib
import json
import os
import sys
import time
import warnings

import numpy as np
import torch

from . import common
from .zoo import ALL_NAMES, lookup

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_SOURCES = ["common.py", "build.py", "zoo.py"]
SEED = 20240427          # torch.manual_seed for weights; SEED+1 for data
RTOL_OK = 1e-3           # ORT vs torch: max|diff| / max|ref| considered fine


def gen_hash(spec):
    h = hashlib.sha256()
    for f in SHARED_SOURCES + [spec.source]:
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read())
    h.update(torch.__version__.encode())
    return h.hexdigest()[:16]


def make_model(spec, tiny):
    torch.manual_seed(SEED)
    model, shape = spec.build(tiny)
    gen = torch.Generator().manual_seed(SEED + 1)
    common.randomize_norms(model, gen)
    if spec.input_kind == "ids":
        vocab = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding)).num_embeddings
        x = torch.randint(0, vocab, shape, generator=gen, dtype=torch.int64)
    else:
        x = torch.randn(shape, generator=gen, dtype=torch.float32)
    common.calibrate_batchnorm(model, (x,))
    model.eval()
    return model, x


def shape_map(model):
    import onnx
    shapes = {}

    def dims(t):
        return [d.dim_value if d.HasField("dim_value") else None for d in t.dims] \
            if hasattr(t, "dims") else None

    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    for vi in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None
                               for d in tt.shape.dim]
    return shapes


LINEAR_OPS = ("Conv", "MatMul", "Gemm")


def linear_shapes(m, feeds):
    """Actual shapes of the inputs/outputs of Conv/MatMul/Gemm nodes.

    Static shape inference gives up behind torch's computed-pads subgraphs
    (e.g. reflection Pad), so run the model once in ONNX Runtime (graph
    optimisations off) with those tensors exposed as extra outputs.
    """
    import onnx
    import onnxruntime as ort
    m = onnx.ModelProto.FromString(m.SerializeToString())
    inits = {i.name for i in m.graph.initializer}
    have = {o.name for o in m.graph.output}
    want = []
    for n in m.graph.node:
        if n.op_type in LINEAR_OPS:
            for t in list(n.input[:2]) + [n.output[0]]:
                if t and t not in inits and t not in have:
                    have.add(t)
                    want.append(t)
    for t in want:
        m.graph.output.append(onnx.helper.make_empty_tensor_value_info(t))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return {n: list(v.shape) for n, v in zip(names, sess.run(None, feeds))}


def analyse(path, feeds):
    """Op histograms, GFLOPs (2 x MACs of Conv/MatMul/Gemm), parameter bytes."""
    import onnx
    from onnx import numpy_helper, shape_inference
    m = onnx.load(path)
    inferred = shape_inference.infer_shapes(m)
    shapes = shape_map(inferred)
    shapes.update(linear_shapes(m, feeds))
    hist = collections.Counter(n.op_type for n in m.graph.node)
    flops = 0
    unknown = 0
    for n in m.graph.node:
        try:
            if n.op_type == "Conv":
                w = shapes[n.input[1]]
                y = shapes[n.output[0]]
                k = int(np.prod(w[1:]))
                flops += 2 * int(np.prod(y)) * k
            elif n.op_type == "MatMul":
                a = shapes[n.input[0]]
                y = shapes[n.output[0]]
                flops += 2 * int(np.prod(y)) * a[-1]
            elif n.op_type == "Gemm":
                a = shapes[n.input[0]]
                y = shapes[n.output[0]]
                ta = [x.i for x in n.attribute if x.name == "transA"]
                kdim = a[0] if ta and ta[0] else a[1]
                flops += 2 * int(np.prod(y)) * kdim
        except (KeyError, TypeError, IndexError):
            unknown += 1
    param_bytes = sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer)
    return m, dict(sorted(hist.items())), runtime_histogram(inferred, shapes), \
        flops / 1e9, unknown, param_bytes


def runtime_histogram(model, shapes):
    """Op histogram of the nodes left after constant folding.

    A node is constant when all its inputs are initializers or outputs of
    constant nodes (Constant nodes included), or when it is a Shape/Size of a
    tensor whose shape is fully static. Those nodes only need to be
    evaluated by a constant folder; the others need runtime kernels.
    """
    const = {i.name for i in model.graph.initializer}
    hist = collections.Counter()
    for n in model.graph.node:
        ins = [i for i in n.input if i]
        static = n.op_type in ("Shape", "Size") and ins and \
            shapes.get(ins[0]) is not None and None not in shapes[ins[0]]
        if static or all(i in const for i in ins):
            const.update(n.output)
        else:
            hist[n.op_type] += 1
    return dict(sorted(hist.items()))


def ort_check(path, feeds, refs, threads=2):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    res = []
    for o, r in zip(outs, refs):
        d = float(np.max(np.abs(o.astype(np.float64) - r))) if o.size else 0.0
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        res.append({"max_abs": d, "max_rel": d / scale if scale > 0 else d,
                    "ref_max_abs": scale})
    return res


def save_npy(path, arr):
    """np.save via a temporary file and rename: other processes may be
    reading build/models while it is rebuilt."""
    tmp = path + ".tmp.npy"
    np.save(tmp, arr)
    os.replace(tmp, path)


def build_one(name, out_dir, force=False, log=print):
    import onnx
    spec, tiny = lookup(name)
    h = gen_hash(spec)
    meta_path = os.path.join(out_dir, name + ".json")
    onnx_path = os.path.join(out_dir, name + ".onnx")
    if not force and os.path.exists(meta_path) and os.path.exists(onnx_path):
        try:
            with open(meta_path) as fh:
                old = json.load(fh)
            files = [os.path.join(out_dir, i["file"]) for i in old["inputs"] + old["outputs"]]
            if old.get("generator_hash") == h and all(map(os.path.exists, files)):
                log(f"[models] {name}: up to date")
                return old
        except (OSError, ValueError, KeyError):
            pass

    t0 = time.time()
    log(f"[models] {name}: building (opset {spec.opset}{', tiny' if tiny else ''})")
    torch.set_num_threads(2)
    model, x = make_model(spec, tiny)
    with torch.no_grad():
        ref = model(x)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    refs = [r.detach().numpy() for r in refs]
    if len(refs) != len(spec.output_names):
        raise RuntimeError(f"{name}: {len(refs)} outputs, expected {len(spec.output_names)}")
    for i, r in enumerate(refs):
        if not np.all(np.isfinite(r)):
            raise RuntimeError(f"{name}: output {i} has non-finite values")

    # Intrinsic conditioning: how far float32 is from float64 for this model.
    # Any backend will differ from PyTorch by about this much; it is the
    # floor for a sensible tolerance.
    fp64_rel = None
    if x.is_floating_point() or spec.input_kind == "ids":
        import copy
        m64 = copy.deepcopy(model).double()
        with torch.no_grad():
            r64 = m64(x.double() if x.is_floating_point() else x)
        r64 = list(r64) if isinstance(r64, (tuple, list)) else [r64]
        fp64_rel = max(float(np.max(np.abs(a.numpy() - b))) / max(float(np.max(np.abs(a.numpy()))), 1e-30)
                       for a, b in zip(r64, refs))
        del m64, r64

    os.makedirs(out_dir, exist_ok=True)
    tmp = onnx_path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), tmp, opset_version=spec.opset,
                          input_names=[spec.input_name],
                          output_names=list(spec.output_names),
                          do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)
    onnx.checker.check_model(tmp, full_check=True)
    os.replace(tmp, onnx_path)
    m, hist, rt_hist, gflops, unknown, param_bytes = analyse(
        onnx_path, {spec.input_name: x.numpy()})

    in_file = f"{name}.input.{common.sanitize(spec.input_name)}.npy"
    save_npy(os.path.join(out_dir, in_file), x.numpy())
    outputs = []
    for i, (oname, r) in enumerate(zip(spec.output_names, refs)):
        f = f"{name}.output.{i}.npy"
        save_npy(os.path.join(out_dir, f), r)
        outputs.append({"name": oname, "shape": list(r.shape), "dtype": str(r.dtype),
                        "file": f})
    check = ort_check(onnx_path, {spec.input_name: x.numpy()}, refs)
    worst = max(c["max_rel"] for c in check)
    meta = {
        "name": name,
        "base": spec.name,
        "tiny": tiny,
        "description": spec.description + (" (tiny variant)" if tiny else ""),
        "opset": spec.opset,
        "seed": SEED,
        "data_seed": SEED + 1,
        "inputs": [{"name": spec.input_name, "shape": list(x.shape), "dtype": str(x.numpy().dtype),
                    "file": in_file}],
        "outputs": outputs,
        "gflops": round(gflops, 4),
        "gflops_note": "2 x multiply-accumulates of Conv/MatMul/Gemm (shapes from an ORT run)",
        "params": int(sum(p.numel() for p in model.parameters())),
        "param_bytes": int(param_bytes),
        "nodes": len(m.graph.node),
        "gflops_unknown_nodes": unknown,
        "op_histogram": hist,
        "runtime_op_histogram": rt_hist,
        "ort_check": check,
        "ort_check_ok": bool(worst <= RTOL_OK),
        "torch_fp32_vs_fp64_max_rel": fp64_rel,
        "torch": torch.__version__,
        "onnx": onnx.__version__,
        "generator_hash": h,
        "build_seconds": round(time.time() - t0, 1),
    }
    with open(meta_path + ".tmp", "w") as fh:
        json.dump(meta, fh, indent=1)
    os.replace(meta_path + ".tmp", meta_path)
    status = "ok" if meta["ort_check_ok"] else f"WARNING rel diff > {RTOL_OK}"
    log(f"[models] {name}: {len(m.graph.node)} nodes, {gflops:.3f} GFLOPs, "
        f"{param_bytes / 1e6:.1f} MB weights, ORT vs torch max_abs="
        f"{max(c['max_abs'] for c in check):.3g} max_rel={worst:.3g} [{status}]; "
        f"torch fp32 vs fp64 max_rel={fp64_rel:.3g} "
        f"({meta['build_seconds']} s)")
    return meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models (default: all, full and tiny)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "build", "models"))
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--list", action="store_true", help="list model names and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(ALL_NAMES))
        return 0
    names = args.names or ALL_NAMES
    failed = []
    for n in names:
        try:
            meta = build_one(n, args.out, args.force)
            if not meta.get("ort_check_ok", False):
                failed.append(n + " (ORT mismatch)")
        except Exception as e:  # keep going; report at the end
            import traceback
            traceback.print_exc()
            print(f"[models] {n}: FAILED: {e}", file=sys.stderr)
            failed.append(n)
    if failed:
        print(f"[models] problems: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"[models] {len(names)} model(s) ready in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
