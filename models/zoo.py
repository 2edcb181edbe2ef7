"""Registry of the benchmark models.

Each entry: name -> Spec. Every model also has a `<name>_tiny` variant (same
operator types, a few blocks, small resolution) for the C test suite.
"""
from dataclasses import dataclass
from typing import Callable, Tuple

from . import bert, candy, efficientvit, segformer, tv, yolov4, yolox


@dataclass(frozen=True)
class Spec:
    name: str
    build: Callable            # build(tiny: bool) -> (nn.Module, input_shape)
    source: str                # module file defining the architecture (for the stamp)
    opset: int
    input_name: str = "input"
    input_kind: str = "image"  # "image": float32 N(0,1); "ids": int64 token ids
    output_names: Tuple[str, ...] = ("output",)
    description: str = ""


SPECS = [
    Spec("candy", candy.build, "candy.py", 13,
         description="fast-neural-style TransformerNet (reflection pad, InstanceNorm, "
                     "5 residual blocks, nearest upsample)"),
    Spec("segformer_b0", segformer.build, "segformer.py", 17,
         description="SegFormer-B0: MiT-b0 encoder + all-MLP decode head (150 classes)"),
    Spec("yolox_nano", yolox.build, "yolox.py", 13,
         description="YOLOX-Nano: depthwise CSPDarknet d0.33 w0.25, PAFPN, decoupled head, "
                     "decoding"),
    Spec("yolov4", yolov4.build, "yolov4.py", 13,
         output_names=("out_s8", "out_s16", "out_s32"),
         description="YOLOv4: CSPDarknet53 (Mish), SPP, PANet, three heads"),
    Spec("efficientvit", efficientvit.build, "efficientvit.py", 13,
         description="EfficientViT-B1-style segmentation: MBConv + ReLU linear attention"),
    Spec("resnet50", tv.resnet50, "tv.py", 13, description="torchvision ResNet-50"),
    Spec("mobilenetv2", tv.mobilenetv2, "tv.py", 13, description="torchvision MobileNetV2"),
    Spec("vit_b16", tv.vit_b16, "tv.py", 17, description="torchvision ViT-B/16"),
    Spec("bert_base", bert.build, "bert.py", 17, input_name="input_ids", input_kind="ids",
         output_names=("last_hidden_state", "pooler_output"),
         description="BERT-base encoder, 12 layers, seq 128, int64 token ids"),
]

BY_NAME = {s.name: s for s in SPECS}
FULL_NAMES = [s.name for s in SPECS]
ALL_NAMES = FULL_NAMES + [n + "_tiny" for n in FULL_NAMES]


def lookup(name: str):
    """Return (spec, tiny) for 'resnet50' or 'resnet50_tiny'."""
    if name in BY_NAME:
        return BY_NAME[name], False
    if name.endswith("_tiny") and name[:-5] in BY_NAME:
        return BY_NAME[name[:-5]], True
    raise KeyError(f"unknown model {name!r}; known: {', '.join(ALL_NAMES)}")
