"""YOLOX-Nano (Ge et al. 2021): depthwise CSPDarknet backbone (Focus stem,
CSP layers, SPP), PAFPN neck and decoupled head, SiLU activations,
depth 0.33 / width 0.25. Inference-time box decoding (grid add, exp, stride
scale) is part of the graph, as in the official ONNX export with decoding.
Output: 1 x N x (4 + 1 + num_classes).
"""
import torch
import torch.nn as nn


class BaseConv(nn.Module):
    def __init__(self, cin, cout, k, stride, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class DWConv(nn.Module):
    def __init__(self, cin, cout, k, stride=1):
        super().__init__()
        self.dconv = BaseConv(cin, cin, k, stride, groups=cin)
        self.pconv = BaseConv(cin, cout, 1, 1)

    def forward(self, x):
        return self.pconv(self.dconv(x))


class Bottleneck(nn.Module):
    def __init__(self, cin, cout, shortcut=True, expansion=0.5, depthwise=False):
        super().__init__()
        hidden = int(cout * expansion)
        Conv = DWConv if depthwise else BaseConv
        self.conv1 = BaseConv(cin, hidden, 1, 1)
        self.conv2 = Conv(hidden, cout, 3, 1)
        self.use_add = shortcut and cin == cout

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return y + x if self.use_add else y


class SPPBottleneck(nn.Module):
    def __init__(self, cin, cout, ks=(5, 9, 13)):
        super().__init__()
        hidden = cin // 2
        self.conv1 = BaseConv(cin, hidden, 1, 1)
        self.m = nn.ModuleList([nn.MaxPool2d(k, 1, k // 2) for k in ks])
        self.conv2 = BaseConv(hidden * (len(ks) + 1), cout, 1, 1)

    def forward(self, x):
        x = self.conv1(x)
        return self.conv2(torch.cat([x] + [m(x) for m in self.m], dim=1))


class CSPLayer(nn.Module):
    def __init__(self, cin, cout, n=1, shortcut=True, expansion=0.5, depthwise=False):
        super().__init__()
        hidden = int(cout * expansion)
        self.conv1 = BaseConv(cin, hidden, 1, 1)
        self.conv2 = BaseConv(cin, hidden, 1, 1)
        self.conv3 = BaseConv(2 * hidden, cout, 1, 1)
        self.m = nn.Sequential(*[Bottleneck(hidden, hidden, shortcut, 1.0, depthwise)
                                 for _ in range(n)])

    def forward(self, x):
        return self.conv3(torch.cat([self.m(self.conv1(x)), self.conv2(x)], dim=1))


class Focus(nn.Module):
    def __init__(self, cin, cout, k=1):
        super().__init__()
        self.conv = BaseConv(cin * 4, cout, k, 1)

    def forward(self, x):
        tl = x[..., ::2, ::2]
        tr = x[..., ::2, 1::2]
        bl = x[..., 1::2, ::2]
        br = x[..., 1::2, 1::2]
        return self.conv(torch.cat([tl, bl, tr, br], dim=1))


class CSPDarknet(nn.Module):
    def __init__(self, dep_mul, wid_mul, depthwise=True):
        super().__init__()
        Conv = DWConv if depthwise else BaseConv
        bc = int(wid_mul * 64)
        bd = max(round(dep_mul * 3), 1)
        self.stem = Focus(3, bc, k=3)
        self.dark2 = nn.Sequential(Conv(bc, bc * 2, 3, 2),
                                   CSPLayer(bc * 2, bc * 2, n=bd, depthwise=depthwise))
        self.dark3 = nn.Sequential(Conv(bc * 2, bc * 4, 3, 2),
                                   CSPLayer(bc * 4, bc * 4, n=bd * 3, depthwise=depthwise))
        self.dark4 = nn.Sequential(Conv(bc * 4, bc * 8, 3, 2),
                                   CSPLayer(bc * 8, bc * 8, n=bd * 3, depthwise=depthwise))
        self.dark5 = nn.Sequential(Conv(bc * 8, bc * 16, 3, 2),
                                   SPPBottleneck(bc * 16, bc * 16),
                                   CSPLayer(bc * 16, bc * 16, n=bd, shortcut=False,
                                            depthwise=depthwise))

    def forward(self, x):
        x = self.dark2(self.stem(x))
        c3 = self.dark3(x)
        c4 = self.dark4(c3)
        c5 = self.dark5(c4)
        return c3, c4, c5


class PAFPN(nn.Module):
    def __init__(self, depth, width, depthwise=True):
        super().__init__()
        Conv = DWConv if depthwise else BaseConv
        c3, c4, c5 = (int(c * width) for c in (256, 512, 1024))
        n = round(3 * depth)
        self.backbone = CSPDarknet(depth, width, depthwise)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.lateral_conv0 = BaseConv(c5, c4, 1, 1)
        self.C3_p4 = CSPLayer(2 * c4, c4, n, False, depthwise=depthwise)
        self.reduce_conv1 = BaseConv(c4, c3, 1, 1)
        self.C3_p3 = CSPLayer(2 * c3, c3, n, False, depthwise=depthwise)
        self.bu_conv2 = Conv(c3, c3, 3, 2)
        self.C3_n3 = CSPLayer(2 * c3, c4, n, False, depthwise=depthwise)
        self.bu_conv1 = Conv(c4, c4, 3, 2)
        self.C3_n4 = CSPLayer(2 * c4, c5, n, False, depthwise=depthwise)

    def forward(self, x):
        x2, x1, x0 = self.backbone(x)
        fpn_out0 = self.lateral_conv0(x0)
        f_out0 = self.C3_p4(torch.cat([self.upsample(fpn_out0), x1], 1))
        fpn_out1 = self.reduce_conv1(f_out0)
        pan_out2 = self.C3_p3(torch.cat([self.upsample(fpn_out1), x2], 1))
        pan_out1 = self.C3_n3(torch.cat([self.bu_conv2(pan_out2), fpn_out1], 1))
        pan_out0 = self.C3_n4(torch.cat([self.bu_conv1(pan_out1), fpn_out0], 1))
        return pan_out2, pan_out1, pan_out0


class YOLOXHead(nn.Module):
    def __init__(self, num_classes, width, depthwise=True):
        super().__init__()
        Conv = DWConv if depthwise else BaseConv
        hid = int(256 * width)
        self.stems = nn.ModuleList()
        self.cls_convs = nn.ModuleList()
        self.reg_convs = nn.ModuleList()
        self.cls_preds = nn.ModuleList()
        self.reg_preds = nn.ModuleList()
        self.obj_preds = nn.ModuleList()
        for c in (256, 512, 1024):
            self.stems.append(BaseConv(int(c * width), hid, 1, 1))
            self.cls_convs.append(nn.Sequential(Conv(hid, hid, 3, 1), Conv(hid, hid, 3, 1)))
            self.reg_convs.append(nn.Sequential(Conv(hid, hid, 3, 1), Conv(hid, hid, 3, 1)))
            self.cls_preds.append(nn.Conv2d(hid, num_classes, 1))
            self.reg_preds.append(nn.Conv2d(hid, 4, 1))
            self.obj_preds.append(nn.Conv2d(hid, 1, 1))

    def forward(self, feats, strides=(8, 16, 32)):
        outs, grids, stride_t = [], [], []
        for k, x in enumerate(feats):
            x = self.stems[k](x)
            cls_out = self.cls_preds[k](self.cls_convs[k](x))
            reg_feat = self.reg_convs[k](x)
            reg_out = self.reg_preds[k](reg_feat)
            obj_out = self.obj_preds[k](reg_feat)
            outs.append(torch.cat([reg_out, obj_out.sigmoid(), cls_out.sigmoid()], 1))
            h, w = int(x.shape[2]), int(x.shape[3])
            yv, xv = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grids.append(torch.stack((xv, yv), 2).reshape(1, -1, 2).float())
            stride_t.append(torch.full((1, h * w, 1), float(strides[k])))
        out = torch.cat([o.reshape(o.shape[0], o.shape[1], -1) for o in outs],
                        dim=2).permute(0, 2, 1)
        grid = torch.cat(grids, dim=1)      # constants: folded at export
        stride = torch.cat(stride_t, dim=1)
        xy = (out[..., 0:2] + grid) * stride
        wh = torch.exp(out[..., 2:4]) * stride
        return torch.cat([xy, wh, out[..., 4:]], dim=-1)


class YOLOX(nn.Module):
    def __init__(self, depth=0.33, width=0.25, num_classes=80):
        super().__init__()
        self.neck = PAFPN(depth, width)
        self.head = YOLOXHead(num_classes, width)

    def forward(self, x):
        return self.head(self.neck(x))


def build(tiny: bool):
    if tiny:
        return YOLOX(depth=0.33, width=0.125, num_classes=8), (1, 3, 64, 64)
    return YOLOX(), (1, 3, 416, 416)
