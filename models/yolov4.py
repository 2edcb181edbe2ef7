"""YOLOv4 (Bochkovskiy et al. 2020): CSPDarknet53 backbone with Mish, SPP
(5/9/13 max-pools), PANet neck with leaky ReLU, three YOLO heads (raw
1 x 3*(5+classes) x H x W maps at strides 8/16/32, no box decoding).
Layer-for-layer the darknet yolov4.cfg topology; `w` scales all channel
counts and `n` the residual-block counts (for the tiny variant).
"""
import torch
import torch.nn as nn


class CBA(nn.Module):
    """Conv (no bias) + BatchNorm + activation ('mish' | 'leaky' | 'linear')."""

    def __init__(self, cin, cout, k, stride=1, act="mish"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.Mish() if act == "mish" else nn.LeakyReLU(0.1)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class ResBlock(nn.Module):
    def __init__(self, c, hidden):
        super().__init__()
        self.c1 = CBA(c, hidden, 1)
        self.c2 = CBA(hidden, c, 3)

    def forward(self, x):
        return x + self.c2(self.c1(x))


class CSPStage(nn.Module):
    """Downsample conv, then a cross-stage-partial block of n residual blocks."""

    def __init__(self, cin, cout, n, first=False):
        super().__init__()
        part = cout if first else cout // 2
        self.down = CBA(cin, cout, 3, 2)
        self.split0 = CBA(cout, part, 1)
        self.split1 = CBA(cout, part, 1)
        self.blocks = nn.Sequential(*[ResBlock(part, cout // 2 if first else part)
                                      for _ in range(n)])
        self.post = CBA(part, part, 1)
        self.fuse = CBA(2 * part, cout, 1)

    def forward(self, x):
        x = self.down(x)
        route = self.split0(x)
        y = self.post(self.blocks(self.split1(x)))
        return self.fuse(torch.cat([y, route], 1))


def five(cin, c):
    """The 1x1 / 3x3 alternation that the neck uses (outputs c channels)."""
    return nn.Sequential(CBA(cin, c, 1, act="leaky"), CBA(c, 2 * c, 3, act="leaky"),
                         CBA(2 * c, c, 1, act="leaky"), CBA(c, 2 * c, 3, act="leaky"),
                         CBA(2 * c, c, 1, act="leaky"))


class YOLOv4(nn.Module):
    def __init__(self, w=1.0, n=(1, 2, 8, 8, 4), num_classes=80):
        super().__init__()
        C = lambda c: max(int(c * w), 4)  # noqa: E731
        out = 3 * (5 + num_classes)
        self.stem = CBA(3, C(32), 3)
        self.s1 = CSPStage(C(32), C(64), n[0], first=True)
        self.s2 = CSPStage(C(64), C(128), n[1])
        self.s3 = CSPStage(C(128), C(256), n[2])
        self.s4 = CSPStage(C(256), C(512), n[3])
        self.s5 = CSPStage(C(512), C(1024), n[4])
        # SPP block
        self.pre_spp = nn.Sequential(CBA(C(1024), C(512), 1, act="leaky"),
                                     CBA(C(512), C(1024), 3, act="leaky"),
                                     CBA(C(1024), C(512), 1, act="leaky"))
        self.pools = nn.ModuleList([nn.MaxPool2d(k, 1, k // 2) for k in (13, 9, 5)])
        self.post_spp = nn.Sequential(CBA(C(2048), C(512), 1, act="leaky"),
                                      CBA(C(512), C(1024), 3, act="leaky"),
                                      CBA(C(1024), C(512), 1, act="leaky"))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        # top-down path
        self.td5 = CBA(C(512), C(256), 1, act="leaky")
        self.lat4 = CBA(C(512), C(256), 1, act="leaky")
        self.p4 = five(C(512), C(256))
        self.td4 = CBA(C(256), C(128), 1, act="leaky")
        self.lat3 = CBA(C(256), C(128), 1, act="leaky")
        self.p3 = five(C(256), C(128))
        # heads and bottom-up path
        self.h3 = nn.Sequential(CBA(C(128), C(256), 3, act="leaky"),
                                nn.Conv2d(C(256), out, 1))
        self.bu3 = CBA(C(128), C(256), 3, 2, act="leaky")
        self.n4 = five(C(512), C(256))
        self.h4 = nn.Sequential(CBA(C(256), C(512), 3, act="leaky"),
                                nn.Conv2d(C(512), out, 1))
        self.bu4 = CBA(C(256), C(512), 3, 2, act="leaky")
        self.n5 = five(C(1024), C(512))
        self.h5 = nn.Sequential(CBA(C(512), C(1024), 3, act="leaky"),
                                nn.Conv2d(C(1024), out, 1))

    def forward(self, x):
        x = self.s2(self.s1(self.stem(x)))
        c3 = self.s3(x)
        c4 = self.s4(c3)
        c5 = self.s5(c4)
        x = self.pre_spp(c5)
        p5 = self.post_spp(torch.cat([p(x) for p in self.pools] + [x], 1))
        p4 = self.p4(torch.cat([self.lat4(c4), self.up(self.td5(p5))], 1))
        p3 = self.p3(torch.cat([self.lat3(c3), self.up(self.td4(p4))], 1))
        o3 = self.h3(p3)
        n4 = self.n4(torch.cat([self.bu3(p3), p4], 1))
        o4 = self.h4(n4)
        n5 = self.n5(torch.cat([self.bu4(n4), p5], 1))
        o5 = self.h5(n5)
        return o3, o4, o5


def build(tiny: bool):
    if tiny:
        return YOLOv4(w=1 / 8, n=(1, 1, 1, 1, 1), num_classes=3), (1, 3, 64, 64)
    return YOLOv4(), (1, 3, 416, 416)
