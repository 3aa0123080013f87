#!/usr/bin/python3
"""Tiny PyTorch GPT-2, BERT, Llama, ViT and T5, exported with torch.onnx.export.

    /usr/bin/python3 examples/torch_models.py OUTDIR [--opsets 13,17] [--families gpt2,...]

Run with Debian's python3 (the one that has torch; it needs no onnx package).
Writes OUTDIR/FAMILY_opN.onnx with dynamic axes "batch" and "seq" (vit:
"batch", images 3x32x32, patch 8).  Weights are seeded, so reruns give the
same numbers.  The committed copies live in examples/models/torch/; check
them with onnxruntime via examples/list_ops.py --run.
"""

import argparse
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN, HEADS, LAYERS, VOCAB, MAXPOS = 32, 4, 2, 128, 64


# ---------------------------------------------------------------------------- GPT-2
def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.d = h, d
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x, causal):
        B, T, _ = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(self.d, dim=2)
        hd = self.d // self.h
        q = q.view(B, T, self.h, hd).transpose(1, 2)
        k = k.view(B, T, self.h, hd).transpose(1, 2)
        v = v.view(B, T, self.h, hd).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(w.softmax(dim=-1), v)
        a = a.transpose(1, 2).contiguous()
        a = a.view(a.size()[:-2] + (self.d,))
        x = x + self.c_proj(a)
        return x + self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, n=LAYERS, vocab=VOCAB):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(MAXPOS, d)
        self.h = nn.ModuleList(GPT2Block(d, h) for _ in range(n))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        T = input_ids.size(1)
        pos = torch.arange(0, T, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        r = torch.arange(0, T, dtype=torch.long)
        causal = r.unsqueeze(0) <= r.unsqueeze(1)  # [T, T] True = may attend
        for blk in self.h:
            x = blk(x, causal)
        return self.lm_head(self.ln_f(x))


# ---------------------------------------------------------------------------- BERT
class BertLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.d = h, d
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dense = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.inter = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def heads(self, x):
        B, T = x.size(0), x.size(1)
        return x.view(B, T, self.h, self.d // self.h).permute(0, 2, 1, 3)

    def forward(self, x, ext):
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d // self.h) + ext
        a = torch.matmul(F.softmax(s, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size(0), a.size(1), self.d)
        x = self.ln1(self.dense(a) + x)
        return self.ln2(self.out(F.gelu(self.inter(x))) + x)


class Bert(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, n=LAYERS, vocab=VOCAB):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(MAXPOS, d)
        self.token_type = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, h) for _ in range(n))
        self.transform = nn.Linear(d, d)
        self.tln = nn.LayerNorm(d, eps=1e-12)
        self.decoder = nn.Linear(d, vocab)

    def forward(self, input_ids, token_type_ids, attention_mask):
        T = input_ids.size(1)
        pos = torch.arange(T, dtype=torch.long).unsqueeze(0)
        x = self.ln(self.word(input_ids) + self.token_type(token_type_ids) + self.pos(pos))
        ext = attention_mask[:, None, None, :].to(torch.float32)
        ext = (1.0 - ext) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        return self.decoder(self.tln(F.gelu(self.transform(x))))


# ---------------------------------------------------------------------------- Llama
class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, d, h, kvh, ffn):
        super().__init__()
        self.d, self.h, self.kvh, self.hd = d, h, kvh, d // h
        self.input_layernorm = RMSNorm(d)
        self.q_proj = nn.Linear(d, h * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kvh * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kvh * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)

    def repeat_kv(self, x):
        n_rep = self.h // self.kvh
        B, K, T, Dh = x.shape
        return x[:, :, None, :, :].expand(B, K, n_rep, T, Dh).reshape(B, K * n_rep, T, Dh)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        y = self.input_layernorm(x)
        q = self.q_proj(y).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        v = self.v_proj(y).view(B, T, self.kvh, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + mask
        a = torch.matmul(F.softmax(s, dim=-1), v).transpose(1, 2).reshape(B, T, self.d)
        x = x + self.o_proj(a)
        y = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class Llama(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, kvh=2, n=LAYERS, vocab=VOCAB, ffn=88):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaLayer(d, h, kvh, ffn) for _ in range(n))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        hd = d // h
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)), persistent=False)

    def forward(self, input_ids):
        T = input_ids.size(1)
        x = self.embed_tokens(input_ids)
        t = torch.arange(T, dtype=torch.float32)
        freqs = t[:, None] * self.inv_freq[None, :]  # torch.outer would export as Einsum
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        r = torch.arange(T)
        mask = torch.where(r.unsqueeze(0) <= r.unsqueeze(1), torch.tensor(0.0),
                           torch.tensor(torch.finfo(torch.float32).min))
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


# ---------------------------------------------------------------------------- ViT
class ViTBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.d, self.h = d, h
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, N, C = x.shape
        hd = C // self.h
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q @ k.transpose(-2, -1)) * (hd ** -0.5)
        a = (a.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, n=LAYERS, classes=10, img=32, patch=8):
        super().__init__()
        self.proj = nn.Conv2d(3, d, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, (img // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.ModuleList(ViTBlock(d, h) for _ in range(n))
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)

    def forward(self, pixel_values):
        x = self.proj(pixel_values).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0].flatten(1))


# ---------------------------------------------------------------------------- T5
@torch.jit.script
def shape_guarded_bias(bias: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    # scripted control flow -> an ONNX If whose condition only depends on a shape
    # (the size must be read inside the scripted code; an int argument would be
    # traced as a constant and the If folded away)
    if mask.size(-1) > 0:
        out = bias + mask
    else:
        out = bias * 1.0
    return out


def relative_position_bucket(rel, bidirectional: bool, num_buckets=32, max_distance=128):
    ret = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        ret = ret + (rel > 0).to(torch.long) * num_buckets
        n = torch.abs(rel)
    else:
        n = -torch.min(rel, torch.zeros_like(rel))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return ret + torch.where(is_small, n, large)


class T5Attention(nn.Module):
    def __init__(self, d, h, bias_table=False):
        super().__init__()
        self.d, self.h = d, h
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.relative_attention_bias = nn.Embedding(32, h) if bias_table else None

    def heads(self, x):
        return x.view(x.size(0), x.size(1), self.h, self.d // self.h).transpose(1, 2)

    def position_bias(self, T, bidirectional):
        r = torch.arange(T, dtype=torch.long)
        rel = r[None, :] - r[:, None]
        b = self.relative_attention_bias(relative_position_bucket(rel, bidirectional))
        return b.permute(2, 0, 1).unsqueeze(0)

    def forward(self, x, kv, bias):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(kv)), self.heads(self.v(kv))
        s = torch.matmul(q, k.transpose(3, 2))
        if bias is not None:
            s = s + bias
        a = torch.matmul(F.softmax(s.float(), dim=-1), v).transpose(1, 2).contiguous()
        return self.o(a.view(a.size(0), -1, self.d))


class T5FF(nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.layer_norm = RMSNorm(d)
        self.wi = nn.Linear(d, ffn, bias=False)
        self.wo = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        return x + self.wo(F.relu(self.wi(self.layer_norm(x))))


class T5Block(nn.Module):
    def __init__(self, d, h, ffn, decoder, first):
        super().__init__()
        self.ln_sa = RMSNorm(d)
        self.sa = T5Attention(d, h, bias_table=first)
        self.decoder = decoder
        if decoder:
            self.ln_ca = RMSNorm(d)
            self.ca = T5Attention(d, h)
        self.ff = T5FF(d, ffn)

    def forward(self, x, bias, enc=None):
        y = self.ln_sa(x)
        x = x + self.sa(y, y, bias)
        if self.decoder:
            x = x + self.ca(self.ln_ca(x), enc, None)
        return self.ff(x)


class T5(nn.Module):
    def __init__(self, d=HIDDEN, h=HEADS, n=LAYERS, vocab=VOCAB, ffn=64):
        super().__init__()
        self.d = d
        self.shared = nn.Embedding(vocab, d)
        self.enc = nn.ModuleList(T5Block(d, h, ffn, False, i == 0) for i in range(n))
        self.enc_norm = RMSNorm(d)
        self.dec = nn.ModuleList(T5Block(d, h, ffn, True, i == 0) for i in range(n))
        self.dec_norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids, decoder_input_ids):
        x = self.shared(input_ids)
        bias = self.enc[0].sa.position_bias(input_ids.size(1), True)
        for blk in self.enc:
            x = blk(x, bias)
        enc = self.enc_norm(x)
        T = decoder_input_ids.size(1)
        y = self.shared(decoder_input_ids)
        r = torch.arange(T)
        causal = (1.0 - (r[None, :] <= r[:, None]).to(torch.float32)) * -1e9
        bias = shape_guarded_bias(self.dec[0].sa.position_bias(T, False), causal)
        for blk in self.dec:
            y = blk(y, bias, enc)
        y = self.dec_norm(y) * (self.d ** -0.5)
        return self.lm_head(y)


# ---------------------------------------------------------------------------- export
def make(family):
    g = torch.Generator().manual_seed(0)
    B, T = 2, 8
    if family == "gpt2":
        m = GPT2()
        args = (torch.randint(0, VOCAB, (B, T), generator=g),)
        names, axes = ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}}
    elif family == "bert":
        m = Bert()
        args = (torch.randint(0, VOCAB, (B, T), generator=g), torch.randint(0, 2, (B, T), generator=g),
                torch.ones(B, T, dtype=torch.long))
        names = ["input_ids", "token_type_ids", "attention_mask"]
        axes = {n: {0: "batch", 1: "seq"} for n in names}
    elif family == "llama":
        m = Llama()
        args = (torch.randint(0, VOCAB, (B, T), generator=g),)
        names, axes = ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}}
    elif family == "vit":
        m = ViT()
        args = (torch.randn(B, 3, 32, 32, generator=g),)
        names, axes = ["pixel_values"], {"pixel_values": {0: "batch"}}
    elif family == "t5":
        m = T5()
        args = (torch.randint(0, VOCAB, (B, T), generator=g), torch.randint(0, VOCAB, (B, T), generator=g))
        names = ["input_ids", "decoder_input_ids"]
        axes = {n: {0: "batch", 1: "seq"} for n in names}
    else:
        raise ValueError(family)
    axes = dict(axes)
    axes["logits"] = {0: "batch"} if family == "vit" else {0: "batch", 1: "seq"}
    return m.eval(), args, names, axes


FAMILIES = ["gpt2", "bert", "llama", "vit", "t5"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--opsets", default="13,17")
    ap.add_argument("--families", default=",".join(FAMILIES))
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    for fam in a.families.split(","):
        for opset in (int(o) for o in a.opsets.split(",")):
            torch.manual_seed(0)
            m, args, names, axes = make(fam)
            path = os.path.join(a.outdir, "%s_op%d.onnx" % (fam, opset))
            with torch.no_grad():
                torch.onnx.export(m, args, path, input_names=names, output_names=["logits"],
                                  dynamic_axes=axes, opset_version=opset, do_constant_folding=True)
            print("%s: %d bytes" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
