"""BERT-base encoder (Devlin et al. 2019): 12 post-LayerNorm layers, hidden 768,
12 heads, FFN 3072 with exact (erf) GELU, sequence length 128.

Input: `input_ids`, int64, 1 x 128 (token ids in [0, vocab)). The embedding
is a Gather from the 30522 x 768 word table, plus position embeddings (a
constant slice, folded at export) and the token-type-0 embedding; then
LayerNorm. No attention mask (all tokens valid, as with a full sequence).
Outputs: `last_hidden_state` 1 x 128 x 768 and `pooler_output` 1 x 768
(tanh(Linear(first token))).

dynamic_seq=True (`python -m models.bert --dynamic-seq -o OUT.onnx`) keeps the sequence length
symbolic: the export then computes every Reshape target from Shape(x) and
slices the position table to the input's length, as a framework's
dynamic-axes export does, so the one model runs at any length up to
max_pos (korch optimize --input-shape 'input_ids=1x{32,64,128}' makes a
plan per length: bench/buckets). The weights are the same either way.
"""
import math

import torch
import torch.nn as nn

from .common import static_shape


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn, dynamic_seq=False):
        super().__init__()
        self.heads = heads
        self.dynamic_seq = dynamic_seq
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        # static: the sizes baked in as constants; dynamic: traced (Shape ops)
        b, n, c = x.shape if self.dynamic_seq else static_shape(x)
        hd = c // self.heads
        q = self.q(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
        k = self.k(x).reshape(b, n, self.heads, hd).permute(0, 2, 3, 1)
        v = self.v(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
        att = torch.softmax(torch.matmul(q, k) / math.sqrt(hd), dim=-1)
        ctx = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, n, c)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc2(self.act(self.fc1(x))))


class Bert(nn.Module):
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072,
                 max_pos=512, seq=128, dynamic_seq=False):
        super().__init__()
        self.dynamic_seq = dynamic_seq
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.tok_type = nn.Embedding(2, hidden)
        self.register_buffer("pos_ids", torch.arange(seq).unsqueeze(0), persistent=False)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([Layer(hidden, heads, ffn, dynamic_seq) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, input_ids):
        if self.dynamic_seq:  # the first n rows of the table: pos(arange(n)), n traced
            pos = self.pos.weight[:input_ids.shape[1]].unsqueeze(0)
        else:
            pos = self.pos(self.pos_ids)
        x = self.word(input_ids) + pos + self.tok_type.weight[0]
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


def build(tiny: bool, dynamic_seq: bool = False):
    if tiny:
        return Bert(vocab=1000, hidden=64, layers=2, heads=2, ffn=128, max_pos=64, seq=16,
                    dynamic_seq=dynamic_seq), (1, 16)
    return Bert(dynamic_seq=dynamic_seq), (1, 128)


def export(out, tiny=False, dynamic_seq=False, log=print):
    """The zoo's BERT (models/build.py's seeds, so the zoo's weights) exported
    to `out`; with dynamic_seq its sequence length symbolic ("seq"). Checked
    in ONNX Runtime against PyTorch at the zoo's length, and with
    dynamic_seq at half of it too. (`python -m models.build bert_base`
    builds the zoo's own copy, with reference data.)"""
    import dataclasses
    import warnings

    import numpy as np
    import onnx
    import onnxruntime as ort

    from . import build as zoo_build
    from .zoo import lookup
    spec, _ = lookup("bert_base")
    spec = dataclasses.replace(spec, build=lambda t: build(t, dynamic_seq=dynamic_seq))
    model, ids = zoo_build.make_model(spec, tiny)
    axes = {spec.input_name: {1: "seq"}, spec.output_names[0]: {1: "seq"}} if dynamic_seq else None
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (ids,), out, opset_version=spec.opset, input_names=[spec.input_name],
                          output_names=list(spec.output_names), dynamic_axes=axes, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL)
    onnx.checker.check_model(out, full_check=True)
    sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
    for n in (ids.shape[1], ids.shape[1] // 2) if dynamic_seq else (ids.shape[1],):
        x = ids[:, :n]
        with torch.no_grad():
            refs = [r.numpy() for r in model(x)]
        got = sess.run(None, {spec.input_name: x.numpy()})
        rel = max(float(np.max(np.abs(g - r))) / max(float(np.max(np.abs(r))), 1e-30) for g, r in zip(got, refs))
        log(f"[models] {out}: length {n}: ORT vs torch max_rel={rel:.3g}")
        if not rel <= zoo_build.RTOL_OK:
            raise RuntimeError(f"{out}: ONNX Runtime differs from PyTorch at length {n} (max_rel {rel:.3g})")


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(
        description="Export the zoo's BERT to one ONNX file (run from the repository root: python -m models.bert).")
    ap.add_argument("--dynamic-seq", action="store_true",
                    help="keep the sequence length symbolic, for shape buckets (bench/buckets)")
    ap.add_argument("--tiny", action="store_true", help="the tiny variant (bert_base_tiny)")
    ap.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    export(args.output, args.tiny, args.dynamic_seq)


if __name__ == "__main__":
    main()
