"""freeze_models.py — the torch side of tests/train_freeze.sh: small torch
models exported with torch.onnx.export (1.13, constant folding on, opset
17) and trained by torch itself (the nn.Module, not an ONNX interpreter),
so that what trains is torch's own answer: parameters with requires_grad,
never buffers.

  reg        Linear(32, 32) + tanh + mean over the sequence + Linear(32, 1),
             MSE: the head's bias has one element (a one-element weight must
             train); the first Linear's weight exports as a folded
             "onnx::MatMul_N" (its transpose), which must train too
  reg_head   the same with only the head training (torch: the first Linear
             requires no grad; galvc: --freeze '*' --trainable 'head.*')
  buf        token embedding + a Whisper-style frozen position table
             (encoder.embed_positions.weight, requires_grad False) + LayerNorm
             + a rotary-style rotation by persistent cos/sin buffers
             (rotary.cos_cached, rotary.sin_cached) scaled by a scalar
             parameter + Linear to 16 classes, cross-entropy: the table and
             the buffers are initializers that must not train by default
  buf_frozen the same with emb.weight and norm.* frozen (torch:
             requires_grad False; galvc: --freeze emb.weight --freeze 'norm.*')

For each variant writes OUT/V/: model.onnx, the data (x.npy + target.npy or
ids.npy + labels.npy), init/KEY.npy (the state_dict before training),
torch/KEY.npy (after STEPS AdamW steps, lr 1e-2, weight decay 0.01),
torch.log ('step I loss X'), flags (galv-eval / galvc options: loss,
labels, --freeze / --trainable), trains (torch's trained keys, one a line).
Run with Debian's python3 (torch, no onnx).
usage: freeze_models.py OUT [STEPS]"""
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")


class Reg(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 32)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(torch.tanh(self.l1(x)).mean(1))


def sinusoids(length, channels):
    """Whisper's encoder position table (transformers' sinusoids)."""
    inc = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class Encoder(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.embed_positions = nn.Embedding(n, d)
        with torch.no_grad():
            self.embed_positions.weight.copy_(sinusoids(n, d))
        self.embed_positions.requires_grad_(False)


class Rotary(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        f = torch.outer(torch.arange(n).float(), inv)
        self.register_buffer("cos_cached", f.cos())
        self.register_buffer("sin_cached", f.sin())


class Buf(nn.Module):
    def __init__(self, vocab=16, n=8, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.encoder = Encoder(n, d)
        self.rotary = Rotary(n, d)
        self.norm = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.tensor(0.5))
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.norm(self.emb(ids) + self.encoder.embed_positions.weight)
        q = self.q(x)
        h = q.shape[-1] // 2
        q1, q2 = q[..., :h], q[..., h:]
        c, s = self.rotary.cos_cached, self.rotary.sin_cached
        rot = torch.cat([q1 * c - q2 * s, q1 * s + q2 * c], dim=-1)
        return self.out(x + rot * self.scale)


def variant(out, name, steps):
    torch.manual_seed(11)
    r = np.random.RandomState(3)
    if name.startswith("reg"):
        m = Reg()
        x = torch.from_numpy(r.randn(4, 6, 32).astype(np.float32))
        y = torch.from_numpy(r.randn(4, 1).astype(np.float32))
        data = {"x": x, "target": y}
        flags = ["--loss", "mse", "--labels", "target"]
        frozen = ["l1.weight", "l1.bias"] if name == "reg_head" else []
        if name == "reg_head":
            flags += ["--freeze", "*", "--trainable", "head.*"]
        loss_fn = lambda out_, t: F.mse_loss(out_, t)
        args, names = (x,), ["x"]
    else:
        m = Buf()
        ids = torch.from_numpy(r.randint(0, 16, (2, 8)).astype(np.int64))
        lab = torch.from_numpy(r.randint(0, 16, (2, 8)).astype(np.int64))
        data = {"ids": ids, "labels": lab}
        flags = ["--loss", "cross_entropy", "--labels", "labels"]
        frozen = ["emb.weight", "norm.weight", "norm.bias"] if name == "buf_frozen" else []
        if name == "buf_frozen":
            flags += ["--freeze", "emb.weight", "--freeze", "norm.*"]
        loss_fn = lambda out_, t: F.cross_entropy(out_.reshape(-1, out_.shape[-1]), t.reshape(-1))
        args, names = (ids,), ["ids"]
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "init"), exist_ok=True)
    os.makedirs(os.path.join(d, "torch"), exist_ok=True)
    m.eval()
    torch.onnx.export(m, args, os.path.join(d, "model.onnx"), opset_version=17, input_names=names,
                      output_names=["y"])
    for k, v in data.items():
        np.save(os.path.join(d, k + ".npy"), v.numpy())
    for k, v in m.state_dict().items():
        np.save(os.path.join(d, "init", k + ".npy"), v.numpy())
    for n_, p in m.named_parameters():
        if n_ in frozen:
            p.requires_grad_(False)
    params = [p for p in m.parameters() if p.requires_grad]
    with open(os.path.join(d, "trains"), "w") as f:
        for n_, p in m.named_parameters():
            if p.requires_grad:
                f.write(n_ + "\n")
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01, foreach=False)
    target = data["target" if name.startswith("reg") else "labels"]
    with open(os.path.join(d, "torch.log"), "w") as log:
        for s in range(steps):
            loss = loss_fn(m(*args), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.write("step %d loss %.9g\n" % (s, loss.item()))
    for k, v in m.state_dict().items():
        np.save(os.path.join(d, "torch", k + ".npy"), v.detach().numpy())
    with open(os.path.join(d, "flags"), "w") as f:
        f.write("\n".join(flags) + "\n")


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for v in ("reg", "reg_head", "buf", "buf_frozen"):
        variant(out, v, steps)


if __name__ == "__main__":
    main()
