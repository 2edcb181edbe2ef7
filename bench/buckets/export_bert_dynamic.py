#!/usr/bin/env python3
"""BERT-base (models/bert.py's architecture and seed) exported with a dynamic
sequence length, for the shape-bucket measurement (bench/buckets/RESULTS.md).
The zoo's bert_base.onnx is traced at length 128 with static shapes (its
Reshape targets are constants), so it cannot be specialized to another
length; this export keeps the sequence dimension symbolic ("seq") and
computes Reshape targets from Shape, as a dynamic-axes export from a
framework does.

usage: export_bert_dynamic.py OUT.onnx   (run from the repository root, with
the venv's Python: torch, onnx)"""
import math
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
from models import bert  # noqa: E402


def layer_forward(self, x):
    b, n, c = x.shape
    hd = c // self.heads
    q = self.q(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
    k = self.k(x).reshape(b, n, self.heads, hd).permute(0, 2, 3, 1)
    v = self.v(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
    att = torch.softmax(torch.matmul(q, k) / math.sqrt(hd), dim=-1)
    ctx = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, n, c)
    x = self.ln1(x + self.o(ctx))
    return self.ln2(x + self.fc2(self.act(self.fc1(x))))


def bert_forward(self, input_ids):
    n = input_ids.shape[1]
    x = self.word(input_ids) + self.pos.weight[:n].unsqueeze(0) + self.tok_type.weight[0]
    x = self.ln(x)
    for layer in self.layers:
        x = layer(x)
    pooled = torch.tanh(self.pool(x[:, 0]))
    return x, pooled


def main():
    out = sys.argv[1]
    bert.Layer.forward = layer_forward
    bert.Bert.forward = bert_forward
    torch.manual_seed(20240427)  # the zoo's seed for bert_base (build/models/bert_base.json)
    model, shape = bert.build(False)
    model.eval()
    ids = torch.randint(0, 30522, shape, dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids,), out, opset_version=17, input_names=["input_ids"],
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes={"input_ids": {1: "seq"}, "last_hidden_state": {1: "seq"}},
                          do_constant_folding=True)


if __name__ == "__main__":
    main()
