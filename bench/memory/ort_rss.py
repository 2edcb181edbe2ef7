"""Peak resident memory of ONNX Runtime running one model once.

usage: python ort_rss.py MODEL.onnx [NAME=FILE.npy ...] [--threads N]

Prints two lines: baseline_kb (peak RSS after importing numpy and
onnxruntime and reading the inputs, before the session exists) and peak_kb
(peak RSS after creating the session and running it once), both from
getrusage(RUSAGE_SELF).ru_maxrss. Session options as in bench/harness.py:
ORT_ENABLE_ALL, intra-op threads N, inter-op 1, sequential execution.
"""
import resource
import sys

import numpy as np
import onnxruntime as ort


def main():
    args = sys.argv[1:]
    threads = 2
    if "--threads" in args:
        i = args.index("--threads")
        threads = int(args[i + 1])
        del args[i:i + 2]
    model, feeds = args[0], {}
    for spec in args[1:]:
        name, path = spec.split("=", 1)
        feeds[name] = np.load(path)
    print("baseline_kb=%d" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    sess.run(None, feeds)
    print("peak_kb=%d" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


if __name__ == "__main__":
    main()
