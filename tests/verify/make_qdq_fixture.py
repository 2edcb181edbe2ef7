#!/usr/bin/env python3
"""Writes tests/verify/fixtures/tiny_net_qdq.onnx: the bundled example
(examples/tiny_net.onnx) quantized by onnxruntime.quantization.quantize_static
in QDQ form (uint8 activations, per-channel int8 weights), calibrated on four
seeded random inputs. The fault test runs on it (verify/test_verify_faults_qdq)
to prove that the quantization noise rule of plan verification
(src/verify/plan_check.c) still refuses broken kernels.

    build/venv-quant/bin/python tests/verify/make_qdq_fixture.py

(scripts/python-env-quant.sh makes that Python.) The file is committed: it
is small and the test must not depend on onnxruntime."""
import os
import sys

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "examples", "tiny_net.onnx")
DST = os.path.join(HERE, "fixtures", "tiny_net_qdq.onnx")


class Seeded(CalibrationDataReader):
    def __init__(self, name, shape):
        self.name, self.shape, self.n = name, shape, 0

    def get_next(self):
        if self.n >= 4:
            return None
        self.n += 1
        return {self.name: np.random.default_rng(self.n).uniform(-1, 1, self.shape).astype(np.float32)}


def main():
    m = onnx.load(SRC)
    x = m.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    os.makedirs(os.path.dirname(DST), exist_ok=True)
    quantize_static(SRC, DST, Seeded(x.name, shape), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    print("wrote", DST, os.path.getsize(DST), "bytes")


if __name__ == "__main__":
    sys.exit(main())
