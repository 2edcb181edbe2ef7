"""Candy: the fast-neural-style TransformerNet (Johnson et al. 2016), as in
pytorch/examples fast_neural_style and the ONNX model zoo's "candy" model.

Reflection-padded convolutions, InstanceNorm (affine), ReLU, five residual
blocks, and nearest-neighbour upsampling followed by convolutions.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, k, stride):
        super().__init__()
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(cin, cout, k, stride)

    def forward(self, x):
        return self.conv(self.pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = ConvLayer(c, c, 3, 1)
        self.in1 = nn.InstanceNorm2d(c, affine=True)
        self.conv2 = ConvLayer(c, c, 3, 1)
        self.in2 = nn.InstanceNorm2d(c, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.in1(self.conv1(x)))
        y = self.in2(self.conv2(y))
        return y + x


class UpsampleConvLayer(nn.Module):
    def __init__(self, cin, cout, k, stride, upsample):
        super().__init__()
        self.upsample = upsample
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(cin, cout, k, stride)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=self.upsample, mode="nearest")
        return self.conv(self.pad(x))


class TransformerNet(nn.Module):
    def __init__(self, c=(32, 64, 128), n_res=5):
        super().__init__()
        c1, c2, c3 = c
        self.conv1 = ConvLayer(3, c1, 9, 1)
        self.in1 = nn.InstanceNorm2d(c1, affine=True)
        self.conv2 = ConvLayer(c1, c2, 3, 2)
        self.in2 = nn.InstanceNorm2d(c2, affine=True)
        self.conv3 = ConvLayer(c2, c3, 3, 2)
        self.in3 = nn.InstanceNorm2d(c3, affine=True)
        self.res = nn.Sequential(*[ResidualBlock(c3) for _ in range(n_res)])
        self.deconv1 = UpsampleConvLayer(c3, c2, 3, 1, 2)
        self.in4 = nn.InstanceNorm2d(c2, affine=True)
        self.deconv2 = UpsampleConvLayer(c2, c1, 3, 1, 2)
        self.in5 = nn.InstanceNorm2d(c1, affine=True)
        self.deconv3 = ConvLayer(c1, 3, 9, 1)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.in1(self.conv1(x)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


def build(tiny: bool):
    if tiny:
        return TransformerNet(c=(8, 16, 32), n_res=2), (1, 3, 32, 32)
    return TransformerNet(), (1, 3, 224, 224)
