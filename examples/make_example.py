#!/usr/bin/env python3
"""Builds examples/tiny_net.onnx, the model `make demo` runs.

A small vision model with the fusion opportunities korch is about: conv +
batch-norm + SiLU, a depthwise block with a residual add, a windowed
attention-style block (LayerNorm, MatMul, Softmax on a non-trivial axis,
GELU MLP), and a pooled classifier head. Random weights, seed 0.
Run with Debian's interpreter: /usr/bin/python3 examples/make_example.py
"""
import os
import sys

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.pw = nn.Conv2d(c, c, 1)
        self.act = nn.SiLU()

    def forward(self, x):
        return x + self.pw(self.act(self.bn(self.dw(x))))


class Attention(nn.Module):
    def __init__(self, c, heads=2):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.norm2 = nn.LayerNorm(c)
        self.mlp = nn.Sequential(nn.Linear(c, 2 * c), nn.GELU(), nn.Linear(2 * c, c))

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)  # b, hw, c
        q, k, v = self.qkv(self.norm(t)).chunk(3, dim=-1)
        d = c // self.heads
        q = q.reshape(b, -1, self.heads, d).transpose(1, 2)
        k = k.reshape(b, -1, self.heads, d).transpose(1, 2)
        v = v.reshape(b, -1, self.heads, d).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-2, -1) * d ** -0.5, dim=-1)
        t = t + self.proj((a @ v).transpose(1, 2).reshape(b, -1, c))
        t = t + self.mlp(self.norm2(t))
        return t.transpose(1, 2).reshape(b, c, h, w)


class TinyNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        self.blocks = nn.Sequential(Block(32), Block(32))
        self.down = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU())
        self.attn = Attention(64)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.attn(self.down(self.blocks(self.stem(x))))
        return torch.softmax(self.head(x.mean(dim=(2, 3))), dim=-1)


def main():
    torch.manual_seed(0)
    model = TinyNet().eval()
    for m in model.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "tiny_net.onnx")
    x = torch.randn(1, 3, 128, 128)
    with torch.no_grad():
        torch.onnx.export(model, x, out, opset_version=17, input_names=["image"], output_names=["probabilities"],
                          do_constant_folding=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
