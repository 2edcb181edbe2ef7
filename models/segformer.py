"""SegFormer-B0 (Xie et al. 2021): Mix Transformer (MiT-b0) encoder plus the
all-MLP decode head.

Encoder: overlapping patch embeddings (7x7/s4, then 3x3/s2 convolutions with
LayerNorm), efficient self-attention with spatial-reduction ratios 8/4/2/1
(a strided conv + LayerNorm shrinks K/V), Mix-FFN (Linear, 3x3 depthwise conv,
GELU, Linear), pre-LayerNorm blocks. Decode head: per-stage Linear to 256
channels, bilinear upsampling to 1/4 resolution, concat, 1x1 conv + BN + ReLU,
1x1 conv to 150 classes (ADE20K). Output is 1/4 resolution (no final resize).
"""
import torch
import torch.nn as nn

from .common import static_shape
import torch.nn.functional as F


class OverlapPatchEmbed(nn.Module):
    def __init__(self, k, stride, cin, dim):
        super().__init__()
        self.proj = nn.Conv2d(cin, dim, k, stride, padding=k // 2)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.proj(x)
        b, c, h, w = static_shape(x)
        x = x.reshape(b, c, h * w).transpose(1, 2)
        return self.norm(x), int(h), int(w)


class EfficientSelfAttention(nn.Module):
    def __init__(self, dim, heads, sr):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)
        self.sr_ratio = sr
        if sr > 1:
            self.sr = nn.Conv2d(dim, dim, sr, sr)
            self.norm = nn.LayerNorm(dim)

    def forward(self, x, h, w):
        b, n, c = static_shape(x)
        hd = c // self.heads
        q = self.q(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
        if self.sr_ratio > 1:
            x_ = x.permute(0, 2, 1).reshape(b, c, h, w)
            x_ = self.sr(x_).reshape(b, c, -1).permute(0, 2, 1)
            x_ = self.norm(x_)
        else:
            x_ = x
        kv = self.kv(x_).reshape(b, -1, 2, self.heads, hd).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class MixFFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x, h, w):
        x = self.fc1(x)
        b, n, c = static_shape(x)
        x = x.transpose(1, 2).reshape(b, c, h, w)
        x = self.dwconv(x).reshape(b, c, n).transpose(1, 2)
        return self.fc2(self.act(x))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, sr):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = EfficientSelfAttention(dim, heads, sr)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MixFFN(dim, dim * mlp_ratio)

    def forward(self, x, h, w):
        x = x + self.attn(self.norm1(x), h, w)
        x = x + self.mlp(self.norm2(x), h, w)
        return x


class MiT(nn.Module):
    def __init__(self, dims, heads, depths, srs, mlp_ratio=4):
        super().__init__()
        self.embeds = nn.ModuleList()
        self.stages = nn.ModuleList()
        self.norms = nn.ModuleList()
        cin = 3
        for i, (d, hh, n, sr) in enumerate(zip(dims, heads, depths, srs)):
            k, s = (7, 4) if i == 0 else (3, 2)
            self.embeds.append(OverlapPatchEmbed(k, s, cin, d))
            self.stages.append(nn.ModuleList([Block(d, hh, mlp_ratio, sr) for _ in range(n)]))
            self.norms.append(nn.LayerNorm(d))
            cin = d

    def forward(self, x):
        outs = []
        b = static_shape(x)[0]
        for embed, blocks, norm in zip(self.embeds, self.stages, self.norms):
            x, h, w = embed(x)
            for blk in blocks:
                x = blk(x, h, w)
            x = norm(x)
            x = x.reshape(b, h, w, -1).permute(0, 3, 1, 2)
            outs.append(x)
        return outs


class SegFormerHead(nn.Module):
    def __init__(self, in_dims, embed_dim, num_classes):
        super().__init__()
        self.mlps = nn.ModuleList([nn.Linear(d, embed_dim) for d in in_dims])
        self.fuse = nn.Sequential(
            nn.Conv2d(embed_dim * len(in_dims), embed_dim, 1, bias=False),
            nn.BatchNorm2d(embed_dim), nn.ReLU())
        self.dropout = nn.Dropout(0.1)
        self.pred = nn.Conv2d(embed_dim, num_classes, 1)

    def forward(self, feats):
        b, _, h0, w0 = static_shape(feats[0])
        h0, w0 = int(h0), int(w0)
        ups = []
        for f, mlp in zip(feats, self.mlps):
            _, c, h, w = static_shape(f)
            y = mlp(f.reshape(b, c, h * w).transpose(1, 2))
            y = y.permute(0, 2, 1).reshape(b, -1, int(h), int(w))
            if int(h) != h0:
                # scale_factor (exact here) rather than size=: size= exports a
                # Shape -> Slice -> Concat chain for Resize's sizes input.
                y = F.interpolate(y, scale_factor=float(h0 // h), mode="bilinear",
                                  align_corners=False)
            ups.append(y)
        x = self.fuse(torch.cat(ups[::-1], dim=1))
        return self.pred(self.dropout(x))


class SegFormer(nn.Module):
    def __init__(self, dims=(32, 64, 160, 256), heads=(1, 2, 5, 8), depths=(2, 2, 2, 2),
                 srs=(8, 4, 2, 1), decoder_dim=256, num_classes=150):
        super().__init__()
        self.encoder = MiT(dims, heads, depths, srs)
        self.head = SegFormerHead(dims, decoder_dim, num_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def build(tiny: bool):
    if tiny:
        # Same four stages and sr ratios; 1 block each, narrow, 64 px.
        m = SegFormer(dims=(8, 16, 24, 32), heads=(1, 2, 3, 4), depths=(1, 1, 1, 1),
                      srs=(8, 4, 2, 1), decoder_dim=32, num_classes=10)
        return m, (1, 3, 64, 64)
    return SegFormer(), (1, 3, 512, 512)
