"""Run korch on the real-model zoo and compare with ONNX Runtime.

    build/venv/bin/python bench/realzoo/run.py [--models a,b] [--threads 2]
        [--rounds 5] [--runs 20] [--no-record] [--optimize-timeout S]

Per model (fetched by fetch.py into build/realzoo):
  1. `korch check MODEL --input-shape ...`
  2. reference run: `korch run MODEL --input ...` against ONNX Runtime
  3. `korch optimize MODEL -o PLAN --threads T --input ...` (plus the
     model's optimize_flags in zoo.py, e.g. --specialize sr=16000)
  4. `korch run PLAN --input ...` against ONNX Runtime
  5. `korch export PLAN -o DIR`, `make -C DIR`, `DIR/model_run --input ...`
     against ONNX Runtime (the standalone C; a failure here is reported in
     its column and does not stop the timing)
  6. timing, interleaved: per round ORT's median of --runs in-process
     session.run calls, then one `korch run PLAN --bench RUNS` process
     (its median); the table gives the median over rounds.
Outputs match when max|korch - ort| <= 1e-4 + 1e-3 * max|ort| for every
output. The first step that fails stops that model; its one-line reason is
the "what stops it" column. Appends a section to bench/RESULTS.md unless
--no-record.

--openvino adds OpenVINO (PyPI `openvino`, CPU plugin, latency hint, the
same threads, inputs reshaped to the fixed shapes) at FP32
(INFERENCE_PRECISION_HINT=f32) and at its default precision (bf16 on CPUs
with AVX512_BF16), timed in the same rounds (each a median of RUNS
in-process calls). --bf16 adds korch's `optimize --precision bf16` plan,
timed likewise. Reduced-precision contenders are not held to the match
rule: their error, max|out - ort| / max|ort| over the outputs, is printed
beside their time. A contender that cannot load or run the model is "n/a"
with its reason; it never stops the model.
"""
import argparse
import datetime
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
import zoo  # noqa: E402
import bench.harness  # noqa: E402
from bench.harness import OpenVinoContender  # noqa: E402

bench.harness.np = np  # the harness imports numpy lazily, in its own main()

ATOL, RTOL = 1e-4, 1e-3


def log(*a):
    print("[realzoo]", *a, flush=True)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def make_inputs(model, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype, how) in model["inputs"].items():
        if how == "image":
            v = rng.uniform(-1.0, 1.0, size=shape)
        elif how == "audio":
            v = rng.normal(0.0, 0.1, size=shape)
        elif how == "zeros":
            v = np.zeros(shape)
        elif isinstance(how, tuple) and how[0] == "const":
            v = np.full(shape, how[1])
        elif isinstance(how, tuple) and how[0] == "ints":
            v = rng.integers(how[1], how[2], size=shape)
        else:
            raise ValueError(f"{model['name']}: input {name}: unknown generator {how!r}")
        feeds[name] = np.asarray(v, dtype=dtype)
    return feeds


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def korch(args, timeout):
    t0 = time.monotonic()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s", time.monotonic() - t0
    return r, None, time.monotonic() - t0


def compare(out_dir, names, refs, rtol=RTOL):
    """(ok, worst max abs error, reason); rtol: the model's own (zoo.py
    `rtol`, a stated approximation) or RTOL."""
    worst = 0.0
    for name, ref in zip(names, refs):
        path = os.path.join(out_dir, sanitize(name) + ".npy")
        if not os.path.exists(path):
            return False, None, f"output {name} not written"
        got = np.load(path)
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            return False, None, f"output {name}: shape {list(got.shape)} vs ORT {list(ref.shape)}"
        if not ref.size:
            continue
        d = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
        scale = float(np.max(np.abs(ref.astype(np.float64))))
        worst = max(worst, d)
        if not np.isfinite(d) or d > ATOL + rtol * scale:
            return False, d, f"output {name}: max abs error {d:.3g} > {ATOL + rtol * scale:.3g}"
    return True, worst, None


def rel_error(outs, refs):
    """max|out - ref| / max|ref| over all outputs (the worst)."""
    worst = 0.0
    for got, ref in zip(outs, refs):
        ref = np.asarray(ref, dtype=np.float64)
        got = np.asarray(got, dtype=np.float64)
        if got.shape != ref.shape:
            return float("inf")
        if not ref.size:
            continue
        scale = float(np.max(np.abs(ref))) or 1.0
        worst = max(worst, float(np.max(np.abs(got - ref))) / scale)
    return worst


def short(e):
    text = " ".join(str(e).split())
    return text[:120] + ("..." if len(text) > 120 else "")


def korch_median(korch_bin, plan, in_args, threads, runs, timeout):
    r, err, _ = korch([korch_bin, "run", plan] + in_args + threads + ["--bench", str(runs)], timeout)
    if err or r.returncode != 0:
        return None, err or last_line(r.stderr)
    mm = re.search(r"median_ms=([0-9.]+)", last_line(r.stdout))
    return (float(mm.group(1)), None) if mm else (None, "no median_ms line")


def run_model(m, args, korch_bin, ort):
    res = dict(name=m["name"], kind=m["kind"], check="", ref="", opt="", plan="", export="",
               ort_ms=None, plan_ms=None, stops="")
    path = os.path.join(args.zoo, m["name"] + ".onnx")
    if not os.path.exists(path):
        res["stops"] = "not fetched (bench/realzoo/fetch.py)"
        return res
    work = os.path.join(args.zoo, "run", m["name"])
    os.makedirs(work, exist_ok=True)
    feeds = make_inputs(m, args.seed)
    in_args, shape_args = [], []
    for name, v in feeds.items():
        f = os.path.join(work, "in_" + sanitize(name) + ".npy")
        np.save(f, v)
        in_args += ["--input", f"{name}={f}"]
        if v.ndim:
            shape_args += ["--input-shape", f"{name}=" + "x".join(str(d) for d in v.shape)]
    threads = ["--threads", str(args.threads)]

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    refs = sess.run(None, feeds)

    r, err, _ = korch([korch_bin, "check", path] + shape_args, 300)
    if err or r.returncode != 0:
        res["check"] = "fail"
        res["stops"] = err or last_line(r.stderr)
        return res
    res["check"] = "ok"

    ref_dir = os.path.join(work, "ref_out")
    r, err, secs = korch([korch_bin, "run", path] + in_args + ["--output-dir", ref_dir] + threads,
                         args.run_timeout)
    if err or r.returncode != 0:
        res["ref"] = "fail"
        res["stops"] = "reference run: " + (err or last_line(r.stderr))
        return res
    ok, worst, why = compare(ref_dir, out_names, refs, m.get("rtol", RTOL))
    res["ref"] = f"ok ({worst:.1e})" if ok else "wrong"
    if not ok:
        res["stops"] = "reference run vs ORT: " + why
        return res

    plan = os.path.join(work, "model.plan")
    if os.path.exists(plan):
        os.remove(plan)
    db = os.path.join(args.zoo, "profile.db")
    r, err, secs = korch([korch_bin, "optimize", path, "-o", plan, "--db", db, "-q"]
                         + shape_args + threads + in_args + m.get("optimize_flags", []), args.optimize_timeout)
    if err or r.returncode != 0:
        res["opt"] = "fail"
        res["stops"] = "optimize: " + (err or last_line(r.stderr))
        return res
    res["opt"] = f"ok ({secs:.0f} s)"

    plan_dir = os.path.join(work, "plan_out")
    r, err, _ = korch([korch_bin, "run", plan] + in_args + ["--output-dir", plan_dir] + threads,
                      args.run_timeout)
    if err or r.returncode != 0:
        res["plan"] = "fail"
        res["stops"] = "plan run: " + (err or last_line(r.stderr))
        return res
    ok, worst, why = compare(plan_dir, out_names, refs, m.get("rtol", RTOL))
    res["plan"] = f"ok ({worst:.1e})" if ok else "wrong"
    if not ok:
        res["stops"] = "plan vs ORT: " + why
        return res

    res["export"] = export_check(korch_bin, plan, work, in_args, out_names, refs, m.get("rtol", RTOL), args.run_timeout)

    # the optional contenders: OpenVINO at f32 and its default precision,
    # korch's bf16 plan; each reports "n/a (reason)" instead of stopping
    ov_cons, extra_rounds = {}, {}
    if args.openvino:
        for prec in ("f32", "default"):
            try:
                c = OpenVinoContender(path, feeds, args.threads, prec)
                outs = c.prepare()  # in the model's output order, as ONNX Runtime's
                ov_cons[prec] = c
                res[f"ov_{prec}_err"] = rel_error(outs, refs)
                res[f"ov_{prec}_prec"] = c.ran_precision
                extra_rounds[f"ov_{prec}"] = []
            except Exception as e:  # an unsupported operator, a failed reshape
                res[f"ov_{prec}_na"] = short(e)
    plan16 = None
    if args.bf16:
        plan16 = os.path.join(work, "model.bf16.plan")
        out16 = os.path.join(work, "plan_bf16_out")
        r, err, _ = korch([korch_bin, "optimize", path, "-o", plan16, "--db", db, "-q", "--precision", "bf16"]
                          + shape_args + threads + in_args + m.get("optimize_flags", []), args.optimize_timeout)
        if not err and r.returncode == 0:
            r, err, _ = korch([korch_bin, "run", plan16] + in_args + ["--output-dir", out16] + threads,
                              args.run_timeout)
        if err or r.returncode != 0:
            res["bf16_na"] = short(err or last_line(r.stderr))
            plan16 = None
        else:
            outs = [np.load(os.path.join(out16, sanitize(n) + ".npy")) for n in out_names]
            res["bf16_err"] = rel_error(outs, refs)
            extra_rounds["bf16"] = []

    ort_rounds, plan_rounds = [], []
    for _ in range(3):
        sess.run(None, feeds)
    for i in range(args.rounds):
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        ort_rounds.append(statistics.median(times))
        for prec, c in ov_cons.items():
            extra_rounds[f"ov_{prec}"].append(statistics.median(c.once() for _ in range(args.runs)))
        # ONNX Runtime's pool keeps spinning ~40 ms after a run, and korch's
        # start-up look (src/cli/omp_policy.c) would count it as load and
        # make its threads wait passively: on a plan of 118 small kernels
        # that cost 1.2 ms of futex wake-ups (ppocr_cls 1.60 ms against
        # 0.42 when started on a quiet machine); bench/harness.py pauses too
        time.sleep(0.2)
        ms, why = korch_median(korch_bin, plan, in_args, threads, args.runs, args.run_timeout)
        if ms is None:
            res["stops"] = "plan bench: " + why
            return res
        plan_rounds.append(ms)
        if plan16:
            ms, why = korch_median(korch_bin, plan16, in_args, threads, args.runs, args.run_timeout)
            if ms is None:
                res["bf16_na"], plan16 = "bench: " + short(why), None
                extra_rounds.pop("bf16", None)
            else:
                extra_rounds["bf16"].append(ms)
    res["ort_ms"] = statistics.median(ort_rounds)
    res["plan_ms"] = statistics.median(plan_rounds)
    for k, v in extra_rounds.items():
        if v:
            res[k + "_ms"] = statistics.median(v)
    return res


def export_check(korch_bin, plan, work, in_args, out_names, refs, rtol, timeout):
    """The plan as standalone C: exported, built with -Werror, its runner's
    outputs against ONNX Runtime. Returns the table cell."""
    exp = os.path.join(work, "export")
    out = os.path.join(work, "export_out")
    for d in (exp, out):
        subprocess.run(["rm", "-rf", d], check=False)
    r, err, _ = korch([korch_bin, "export", plan, "-o", exp, "-q"], timeout)
    if err or r.returncode != 0:
        return "fail: export: " + (err or last_line(r.stderr))
    try:
        b = subprocess.run(["make", "-s", "-C", exp, "CFLAGS_EXTRA=-Werror"], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"fail: make timed out after {timeout} s"
    if b.returncode != 0:
        return "fail: make: " + last_line(b.stderr or b.stdout)
    r, err, _ = korch([os.path.join(exp, "model_run")] + in_args + ["--output-dir", out], timeout)
    if err or r.returncode != 0:
        return "fail: model_run: " + (err or last_line(r.stderr))
    ok, worst, why = compare(out, out_names, refs, rtol)
    return f"ok ({worst:.1e})" if ok else "wrong: " + why


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fmt_ms(v):
    return "" if v is None else f"{v:.2f}"


def report(results, args, command, started, minutes):
    import onnxruntime as ort
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [f"## Real-model zoo, run {started:%Y-%m-%d %H:%M} UTC", "",
             f"Command: `{command}`", "",
             f"- CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; load average at start: "
             + " ".join(f"{x:.2f}" for x in os.getloadavg()),
             bench.harness.core_probe_line(args.cores[0], args.cores[-1]),
             f"- Versions: korch {commit}, onnxruntime {ort.__version__}, numpy {np.__version__}",
             f"- Settings: {args.threads} threads (korch --threads, ORT intra-op {args.threads}, "
             f"inter-op 1, sequential, all graph optimisations); {args.rounds} interleaved rounds "
             f"of {args.runs} runs, median of round medians; inputs seeded ({args.seed}); "
             f"match = max abs error <= {ATOL:g} + {RTOL:g}*max|ORT| on every output; "
             f"total {minutes:.1f} min",
             "- Models: third-party .onnx files shipped inside pinned PyPI wheels "
             "(bench/realzoo/zoo.py, fetched and sha256-checked by bench/realzoo/fetch.py)", "",
             "| model | kind | check | reference vs ORT (max abs err) | optimize | plan vs ORT | "
             "exported C vs ORT | ORT ms | plan ms | plan/ORT | what stops it |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---|"]
    for r in results:
        ratio = (f"{r['plan_ms'] / r['ort_ms']:.2f}x"
                 if r["plan_ms"] and r["ort_ms"] else "")
        stops = r["stops"].replace("|", "\\|")
        lines.append(f"| {r['name']} | {r['kind']} | {r['check']} | {r['ref']} | {r['opt']} | "
                     f"{r['plan']} | {r['export'].replace('|', '/')} | {fmt_ms(r['ort_ms'])} | {fmt_ms(r['plan_ms'])} | {ratio} | "
                     f"{stops} |")
    if args.openvino or args.bf16:
        lines += ["", "Reduced precision and OpenVINO, same rounds (ms; error = max|out - ORT| / max|ORT|; "
                  "ratios: korch FP32 plan / the faster of ORT and OpenVINO-f32, korch bf16 plan / "
                  "OpenVINO at its default precision):", "",
                  "| model | ORT | OpenVINO-f32 (error) | korch plan | FP32 ratio | OpenVINO default (precision, error) "
                  "| korch bf16 (error) | bf16 ratio |",
                  "|---|---:|---|---:|---:|---|---|---:|"]
        for r in results:
            def cell(key, extra=""):
                if r.get(key + "_na"):
                    return "n/a (" + r[key + "_na"].replace("|", "/") + ")"
                if r.get(key + "_ms") is None:
                    return ""
                return f"{r[key + '_ms']:.2f}" + (f" ({extra})" if extra else "")
            f32 = cell("ov_f32", f"{r['ov_f32_err']:.1e}" if "ov_f32_err" in r else "")
            dflt = cell("ov_default", f"{r.get('ov_default_prec', '?')}, {r['ov_default_err']:.1e}"
                        if "ov_default_err" in r else "")
            b16 = cell("bf16", f"{r['bf16_err']:.1e}" if "bf16_err" in r else "")
            peers = [v for v in (r.get("ort_ms"), r.get("ov_f32_ms")) if v]
            fr = f"{r['plan_ms'] / min(peers):.2f}x" if r.get("plan_ms") and peers else ""
            br = (f"{r['bf16_ms'] / r['ov_default_ms']:.2f}x"
                  if r.get("bf16_ms") and r.get("ov_default_ms") else "")
            lines.append(f"| {r['name']} | {fmt_ms(r.get('ort_ms'))} | {f32} | {fmt_ms(r.get('plan_ms'))} | {fr} | "
                         f"{dflt} | {b16} | {br} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build", "realzoo"))
    ap.add_argument("--korch", default=os.path.join(ROOT, "build", "korch"))
    ap.add_argument("--models", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--run-timeout", type=int, default=600)
    ap.add_argument("--optimize-timeout", type=int, default=1800)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--openvino", action="store_true",
                    help="also time OpenVINO at FP32 and at its default precision")
    ap.add_argument("--bf16", action="store_true",
                    help="also optimize and time a `--precision bf16` plan")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    ap.add_argument("--command", default="")
    args = ap.parse_args(argv)
    import onnxruntime as ort
    names = [m["name"] for m in zoo.MODELS]
    sel = [s for s in args.models.split(",") if s]
    unknown = [s for s in sel if s not in names]
    if unknown:
        raise SystemExit(f"realzoo: unknown model(s): {', '.join(unknown)}")
    started = datetime.datetime.utcnow()
    t0 = time.monotonic()
    probe = os.path.join(ROOT, "build", "bench", "probe")
    args.cores = [bench.harness.core_probe(probe)]
    results = []
    for m in zoo.MODELS:
        if sel and m["name"] not in sel:
            continue
        log(f"{m['name']} ...")
        try:
            r = run_model(m, args, args.korch, ort)
        except Exception as e:  # one model never stops the run
            r = dict(name=m["name"], kind=m["kind"], check="", ref="", opt="", plan="",
                     ort_ms=None, plan_ms=None, stops=f"runner error: {e}")
        log(f"{m['name']}: check {r['check'] or '-'}, ref {r['ref'] or '-'}, "
            f"optimize {r['opt'] or '-'}, plan {r['plan'] or '-'}, "
            f"ORT {fmt_ms(r['ort_ms']) or '-'} ms, plan {fmt_ms(r['plan_ms']) or '-'} ms"
            + "".join(f", {k} {r[k + '_ms']:.2f} ms" for k in ("ov_f32", "ov_default", "bf16")
                      if r.get(k + "_ms") is not None)
            + "".join(f", {k} n/a ({r[k + '_na']})" for k in ("ov_f32", "ov_default", "bf16") if r.get(k + "_na"))
            + (f"; stops: {r['stops']}" if r["stops"] else ""))
        results.append(r)
    command = args.command or "build/venv/bin/python bench/realzoo/run.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    args.cores.append(bench.harness.core_probe(probe))
    text = report(results, args, command.strip(), started, (time.monotonic() - t0) / 60)
    print(text)
    if not args.no_record:
        with open(args.results, "a") as f:
            f.write("\n" + text)
        log(f"appended to {os.path.relpath(args.results, ROOT)}")


if __name__ == "__main__":
    main()
