"""A CRNN-style text recognizer (convolutions, then a bidirectional LSTM or
GRU over the image columns, then a per-column classifier), exported from
PyTorch the way users export theirs: the model issue 18's plan, export and
benchmark tests run on.

    python make_crnn.py OUT_DIR [--cell lstm|gru] [--size tiny|bench]

Writes OUT_DIR/crnn_<cell>_<size>.onnx, .input.npy (seeded) and .torch.npy
(PyTorch's output). tiny: 32x64 image, 16 steps, hidden 32, one layer;
bench: 32x128 image (32 steps), hidden 256, two layers, as CRNN is usually
configured. Exit 77 without torch."""
import argparse
import os
import sys
import warnings

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:
    print("make_crnn: %s; skipped" % e)
    sys.exit(77)


class CRNN(nn.Module):
    def __init__(self, cell, channels, hidden, layers, classes):
        super().__init__()
        c1, c2, c3 = channels
        self.cnn = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(c2, c3, 3, padding=1), nn.BatchNorm2d(c3), nn.ReLU(), nn.MaxPool2d((2, 1), (2, 1)),
            nn.Conv2d(c3, c3, 3, padding=1), nn.BatchNorm2d(c3), nn.ReLU(), nn.MaxPool2d((4, 1), (4, 1)))
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(c3, hidden, num_layers=layers, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        f = self.cnn(x)                     # (B, C, 1, W/4)
        f = f.squeeze(2).permute(2, 0, 1)   # (T, B, C)
        y, _ = self.rnn(f)                  # (T, B, 2H)
        return self.fc(y).log_softmax(2)    # (T, B, classes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    ap.add_argument("--size", choices=["tiny", "bench"], default="tiny")
    a = ap.parse_args()
    torch.manual_seed(18)
    torch.set_num_threads(2)
    if a.size == "tiny":
        model, shape = CRNN(a.cell, (8, 16, 32), 32, 1, 11), (1, 1, 32, 64)
    else:
        model, shape = CRNN(a.cell, (64, 128, 256), 256, 2, 37), (1, 1, 32, 128)
    model.eval()
    for m in model.modules():  # non-trivial batch-norm statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(shape)
    with torch.no_grad():
        y = model(x)
    os.makedirs(a.out, exist_ok=True)
    name = os.path.join(a.out, "crnn_%s_%s" % (a.cell, a.size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), name + ".onnx", opset_version=14, input_names=["image"],
                          output_names=["logits"], do_constant_folding=True)
    np.save(name + ".input.npy", x.numpy())
    np.save(name + ".torch.npy", y.numpy())
    print("wrote", name + ".onnx")


if __name__ == "__main__":
    main()
