#!/usr/bin/python3
"""A tiny GPT-2 with nn.Dropout, exported by torch in train mode (tests/train_dropout.sh).

    /usr/bin/python3 tests/train/dropout_model.py OUT.onnx [P]

2 layers, hidden 32, 4 heads, vocabulary 64, dropout P (default 0.1) on the
attention probabilities and on both residual branches (Megatron's attention
and hidden dropout), dynamic axes batch / seq. torch.onnx.export with
training=TrainingMode.TRAINING writes each nn.Dropout as ONNX Dropout with
constant ratio and training_mode = true inputs. Run with Debian's python3
(the one with torch). Weights are seeded.
"""

import math
import sys
import warnings

import torch
import torch.nn as nn

D, H, L, V, MAXPOS = 32, 4, 2, 64, 64


class Block(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.c_fc, self.mlp_proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.attn_drop, self.resid_drop, self.mlp_drop = nn.Dropout(p), nn.Dropout(p), nn.Dropout(p)

    def forward(self, x, causal):
        B, T, _ = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H)
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(self.attn_drop(w.softmax(dim=-1)), v)
        a = a.transpose(1, 2).contiguous().view(B, T, D)
        x = x + self.resid_drop(self.c_proj(a))
        return x + self.mlp_drop(self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(MAXPOS, D)
        self.h = nn.ModuleList(Block(p) for _ in range(L))
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V, bias=False)

    def forward(self, input_ids):
        T = input_ids.size(1)
        x = self.wte(input_ids) + self.wpe(torch.arange(0, T, dtype=torch.long).unsqueeze(0))
        r = torch.arange(0, T, dtype=torch.long)
        causal = r.unsqueeze(0) <= r.unsqueeze(1)
        for blk in self.h:
            x = blk(x, causal)
        return self.lm_head(self.ln_f(x))


if __name__ == "__main__":
    torch.manual_seed(0)
    m = GPT(float(sys.argv[2]) if len(sys.argv) > 2 else 0.1)
    m.train()
    warnings.filterwarnings("ignore")
    torch.onnx.export(m, (torch.zeros(2, 8, dtype=torch.long),), sys.argv[1], input_names=["input_ids"],
                      output_names=["logits"], dynamic_axes={"input_ids": {0: "batch", 1: "seq"}}, opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
