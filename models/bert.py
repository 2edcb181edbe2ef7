"""BERT-base encoder (Devlin et al. 2019): 12 post-LayerNorm layers, hidden 768,
12 heads, FFN 3072 with exact (erf) GELU, sequence length 128.

Input: `input_ids`, int64, 1 x 128 (token ids in [0, vocab)). The embedding
is a Gather from the 30522 x 768 word table, plus position embeddings (a
constant slice, folded at export) and the token-type-0 embedding; then
LayerNorm. No attention mask (all tokens valid, as with a full sequence).
Outputs: `last_hidden_state` 1 x 128 x 768 and `pooler_output` 1 x 768
(tanh(Linear(first token))).
"""
import math

import torch
import torch.nn as nn

from .common import static_shape


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
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
        b, n, c = static_shape(x)
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
                 max_pos=512, seq=128):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.tok_type = nn.Embedding(2, hidden)
        self.register_buffer("pos_ids", torch.arange(seq).unsqueeze(0), persistent=False)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([Layer(hidden, heads, ffn) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, input_ids):
        x = self.word(input_ids) + self.pos(self.pos_ids) + self.tok_type.weight[0]
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


def build(tiny: bool):
    if tiny:
        return Bert(vocab=1000, hidden=64, layers=2, heads=2, ffn=128, max_pos=64, seq=16), \
            (1, 16)
    return Bert(), (1, 128)
