"""EfficientViT-B1-style segmentation network (Cai et al. 2023, MIT-Han-Lab).

Backbone (B1: widths 16/32/64/128/256, depths 1/2/3/3/4, head dim 16,
expand ratio 4, Hardswish, BatchNorm): conv stem + depthwise-separable block;
two MBConv stages; two stages of (strided MBConv, then EfficientViT blocks =
ReLU linear attention "LiteMLA" with a 5x5 multi-scale aggregation branch +
MBConv). Segmentation head as in EfficientViT-Seg-B1 (ADE20K, 150 classes):
1x1 conv per stage (strides 32/16/8), upsample to stride 8, add, three MBConv
blocks, 1x1 conv expand, 1x1 classifier. The original upsamples bicubically;
this one uses bilinear (documented deviation, keeps the op set smaller).
"""
import torch
import torch.nn as nn

from .common import static_shape
import torch.nn.functional as F


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, bias=False, norm=True, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=bias)
        self.norm = nn.BatchNorm2d(cout) if norm else None
        self.act = nn.Hardswish() if act else None

    def forward(self, x):
        x = self.conv(x)
        if self.norm is not None:
            x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x


class DSConv(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.depth = ConvLayer(cin, cin, 3, stride, groups=cin)
        self.point = ConvLayer(cin, cout, 1, act=False)

    def forward(self, x):
        return self.point(self.depth(x))


class MBConv(nn.Module):
    def __init__(self, cin, cout, stride=1, expand=4, fewer_norm=False):
        super().__init__()
        mid = round(cin * expand)
        b = fewer_norm
        self.inverted = ConvLayer(cin, mid, 1, bias=b, norm=not b)
        self.depth = ConvLayer(mid, mid, 3, stride, groups=mid, bias=b, norm=not b)
        self.point = ConvLayer(mid, cout, 1, act=False)

    def forward(self, x):
        return self.point(self.depth(self.inverted(x)))


class Residual(nn.Module):
    def __init__(self, main):
        super().__init__()
        self.main = main

    def forward(self, x):
        return x + self.main(x)


class LiteMLA(nn.Module):
    """Multi-scale ReLU linear attention."""

    def __init__(self, cin, cout, dim=16, scales=(5,), eps=1e-15):
        super().__init__()
        self.dim = dim
        self.eps = eps
        heads = cin // dim
        total = heads * dim
        self.qkv = nn.Conv2d(cin, 3 * total, 1, bias=False)
        self.aggreg = nn.ModuleList([
            nn.Sequential(
                nn.Conv2d(3 * total, 3 * total, s, padding=s // 2, groups=3 * total, bias=False),
                nn.Conv2d(3 * total, 3 * total, 1, groups=3 * heads, bias=False))
            for s in scales])
        self.proj = ConvLayer(total * (1 + len(scales)), cout, 1, act=False)

    def forward(self, x):
        b, _, h, w = static_shape(x)
        h, w = int(h), int(w)
        qkv = self.qkv(x)
        qkv = torch.cat([qkv] + [op(qkv) for op in self.aggreg], dim=1)
        qkv = qkv.reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
        q, k, v = qkv[..., :self.dim], qkv[..., self.dim:2 * self.dim], qkv[..., 2 * self.dim:]
        q = F.relu(q)
        k = F.relu(k)
        # Append a ones column to v (the original uses F.pad(v, (0, 1), value=1),
        # which torch 1.13 exports with a computed-pads subgraph).
        v = torch.cat([v, torch.ones(static_shape(v)[:-1] + (1,))], dim=-1)
        kv = torch.matmul(k.transpose(-1, -2), v)      # b, heads, dim, dim+1
        out = torch.matmul(q, kv)                      # b, heads, hw, dim+1
        out = out[..., :-1] / (out[..., -1:] + self.eps)
        out = out.transpose(-1, -2).reshape(b, -1, h, w)
        return self.proj(out)


class EfficientViTBlock(nn.Module):
    def __init__(self, c, dim=16, expand=4):
        super().__init__()
        self.context = Residual(LiteMLA(c, c, dim))
        self.local = Residual(MBConv(c, c, 1, expand, fewer_norm=True))

    def forward(self, x):
        return self.local(self.context(x))


class EfficientViTSeg(nn.Module):
    def __init__(self, widths=(16, 32, 64, 128, 256), depths=(1, 2, 3, 3, 4), dim=16,
                 expand=4, head_width=64, head_depth=3, num_classes=150):
        super().__init__()
        self.stem = nn.Sequential(ConvLayer(3, widths[0], 3, 2),
                                  *[Residual(DSConv(widths[0], widths[0]))
                                    for _ in range(depths[0])])
        cin = widths[0]
        self.stages = nn.ModuleList()
        for w, d in zip(widths[1:3], depths[1:3]):
            blocks = []
            for i in range(d):
                blk = MBConv(cin, w, 2 if i == 0 else 1, expand)
                blocks.append(blk if i == 0 else Residual(blk))
                cin = w
            self.stages.append(nn.Sequential(*blocks))
        for w, d in zip(widths[3:], depths[3:]):
            blocks = [MBConv(cin, w, 2, expand, fewer_norm=True)]
            cin = w
            blocks += [EfficientViTBlock(w, dim, expand) for _ in range(d)]
            self.stages.append(nn.Sequential(*blocks))
        # head: features at strides 8 (widths[2]), 16 (widths[3]), 32 (widths[4])
        self.inputs = nn.ModuleList([ConvLayer(c, head_width, 1, act=False)
                                     for c in widths[2:]])
        self.middle = nn.Sequential(*[Residual(MBConv(head_width, head_width, 1, expand,
                                                      fewer_norm=True))
                                      for _ in range(head_depth)])
        self.final_expand = ConvLayer(head_width, head_width * 4, 1)
        self.classifier = nn.Conv2d(head_width * 4, num_classes, 1)

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for st in self.stages:
            x = st(x)
            feats.append(x)
        feats = feats[1:]  # strides 8, 16, 32
        h, w = int(feats[0].shape[2]), int(feats[0].shape[3])
        y = None
        for f, conv in zip(feats, self.inputs):
            f = conv(f)
            if int(f.shape[2]) != h:
                f = F.interpolate(f, scale_factor=float(h // int(f.shape[2])),
                                  mode="bilinear", align_corners=False)
            y = f if y is None else y + f
        y = self.middle(y)
        return self.classifier(self.final_expand(y))


def build(tiny: bool):
    if tiny:
        m = EfficientViTSeg(widths=(8, 16, 16, 32, 32), depths=(1, 1, 1, 1, 1), dim=8,
                            head_width=16, head_depth=1, num_classes=10)
        return m, (1, 3, 64, 64)
    return EfficientViTSeg(), (1, 3, 512, 512)
