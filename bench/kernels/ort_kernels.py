"""ONNX Runtime on the same single-op models as bench_kernels.c.

Usage: ort_kernels.py [THREADS]. Prints a Markdown table: median latency over
repeats after warm-up (as korch does), and GB/s with bytes = inputs + outputs.
Input and output are bound once (IOBinding), as korch's timer reuses its
buffers.
"""
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 2


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "k", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def chain5(n=16 << 20):
    nodes = [helper.make_node("Mul", ["x", "a"], ["t1"]), helper.make_node("Add", ["t1", "b"], ["t2"]),
             helper.make_node("Relu", ["t2"], ["t3"]), helper.make_node("Mul", ["t3", "c"], ["t4"]),
             helper.make_node("Add", ["t4", "d"], ["y"])]
    inits = [const("a", 1.5), const("b", -0.25), const("c", 0.5), const("d", 2.0)]
    return model(nodes, [vi("x", [n])], [vi("y", [n])], inits), [n]


def softmax():
    s = [8192, 1024]
    return model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", s)], [vi("y", s)]), s


def layernorm(rows):
    s = [rows, 768]
    inits = [const("g", np.linspace(1, 2, 768)), const("b", np.linspace(0, 1, 768))]
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)
    return model([node], [vi("x", s)], [vi("y", s)], inits), s


def instancenorm_relu():
    s = [1, 64, 112, 112]
    inits = [const("g", np.ones(64)), const("b", np.zeros(64))]
    nodes = [helper.make_node("InstanceNormalization", ["x", "g", "b"], ["t"], epsilon=1e-5),
             helper.make_node("Relu", ["t"], ["y"])]
    return model(nodes, [vi("x", s)], [vi("y", s)], inits), s


def gelu():
    s = [4096, 3072]
    inits = [const("r2", 1.4142135), const("one", 1.0), const("half", 0.5)]
    nodes = [helper.make_node("Div", ["x", "r2"], ["t1"]), helper.make_node("Erf", ["t1"], ["t2"]),
             helper.make_node("Add", ["t2", "one"], ["t3"]), helper.make_node("Mul", ["x", "t3"], ["t4"]),
             helper.make_node("Mul", ["t4", "half"], ["y"])]
    return model(nodes, [vi("x", s)], [vi("y", s)], inits), s


def maxpool():
    s = [1, 64, 112, 112]
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    return model([node], [vi("x", s)], [vi("y", s)]), s


def transpose2d():
    s = [4096, 4096]
    return model([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], [vi("x", s)], [vi("y", s)]), s


def heads():
    s = [1, 384, 12, 64]
    node = helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1, 3])
    return model([node], [vi("x", s)], [vi("y", [1, 12, 384, 64])]), s


BENCHES = [("fused 5-op elementwise chain", "16M floats", chain5), ("row softmax", "[8192, 1024]", softmax),
           ("LayerNorm (+gamma, beta)", "[8192, 768]", lambda: layernorm(8192)),
           ("InstanceNorm + ReLU", "[1, 64, 112, 112]", instancenorm_relu), ("erf-GELU", "[4096, 3072]", gelu),
           ("LayerNorm (+gamma, beta)", "[384, 768]", lambda: layernorm(384)),
           ("max-pool 3x3 s1 p1", "[1, 64, 112, 112]", maxpool), ("transpose 2-D", "[4096, 4096]", transpose2d),
           ("transpose heads (0,2,1,3)", "[1, 384, 12, 64]", heads),
           ("fused 5-op elementwise chain", "256M floats", lambda: chain5(256 << 20))]


def main():
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    print(f"ONNX Runtime {ort.__version__}, {THREADS} intra-op threads, all graph optimisations\n")
    print("| kernel | shape | median ms | spread ms | GB/s |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for name, shape_text, make in BENCHES:
        m, shape = make()
        onnx.checker.check_model(m)
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        x = (rng.random(shape, dtype=np.float32) + 0.5).astype(np.float32)
        y = sess.run(None, {"x": x})[0]
        # inputs and outputs bound once, as korch's timer reuses its buffers:
        # sess.run would allocate the output on every run and time its page
        # faults (a 1 GiB output costs more in faults than in compute)
        io = sess.io_binding()
        io.bind_cpu_input("x", x)
        io.bind_ortvalue_output(sess.get_outputs()[0].name, ort.OrtValue.ortvalue_from_numpy(np.empty_like(y)))
        for _ in range(3):
            sess.run_with_iobinding(io)
        times = []
        start = time.perf_counter()
        while len(times) < 7 or (time.perf_counter() - start < 0.5 and len(times) < 200):
            t0 = time.perf_counter()
            sess.run_with_iobinding(io)
            times.append((time.perf_counter() - t0) * 1e3)
        med = statistics.median(times)
        gbs = (x.nbytes + y.nbytes) / (med * 1e-3) / 1e9
        print(f"| {name} | {shape_text} | {med:.3f} | {max(times) - min(times):.3f} | {gbs:.1f} |")


if __name__ == "__main__":
    main()
