"""torchvision models: ResNet-50, MobileNetV2, ViT-B/16 (random weights), and
tiny variants built from the same torchvision classes so they exercise the
same operators."""
import torch
import torch.nn as nn
import torchvision
from torchvision.models.resnet import ResNet, Bottleneck
from torchvision.models.mobilenetv2 import MobileNetV2
from torchvision.models.vision_transformer import VisionTransformer


class TinyResNet(ResNet):
    """torchvision's ResNet (same forward, same Bottleneck blocks), with the
    stage widths 64/128/256/512 divided by 8 and one block per stage."""

    def __init__(self, num_classes=10):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = 8
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(Bottleneck, 8, 1)
        self.layer2 = self._make_layer(Bottleneck, 16, 1, stride=2)
        self.layer3 = self._make_layer(Bottleneck, 32, 1, stride=2)
        self.layer4 = self._make_layer(Bottleneck, 64, 1, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64 * Bottleneck.expansion, num_classes)


def resnet50(tiny: bool):
    if tiny:
        return TinyResNet(), (1, 3, 64, 64)
    return torchvision.models.resnet50(weights=None), (1, 3, 224, 224)


def mobilenetv2(tiny: bool):
    if tiny:
        setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2], [6, 64, 1, 2]]
        return MobileNetV2(num_classes=10, width_mult=0.5,
                           inverted_residual_setting=setting), (1, 3, 32, 32)
    return torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224)


def vit_b16(tiny: bool):
    if tiny:
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=32, mlp_dim=64, num_classes=10)
        shape = (1, 3, 32, 32)
    else:
        m = torchvision.models.vit_b_16(weights=None)
        shape = (1, 3, 224, 224)
    # torchvision zero-initialises the classifier and the class token, which
    # would make the output constant (all zeros): randomise them.
    with torch.no_grad():
        nn.init.normal_(m.heads.head.weight, std=0.02)
        nn.init.normal_(m.heads.head.bias, std=0.02)
        nn.init.normal_(m.class_token, std=0.02)
    return m, shape
