#!/usr/bin/env python3
"""Build small transformer-style ONNX models that look like torch.onnx.export output.

    python3 examples/make_model.py FAMILY -o out.onnx [options]

FAMILY is one of gpt2, bert, llama, vit, t5.  The graphs are written with the
onnx helpers (no torch needed) but follow the shapes torch's exporter emits:
shape chains (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) for head
split/merge, decomposed LayerNorm / RMSNorm / GELU, masks built from Range and
comparisons, Constant nodes for small constants, initializers for weights.

Inputs use symbolic dims: "batch" and "seq" (t5's decoder input also uses
"seq"; vit takes [batch, 3, 32, 32] images, patch 8).  Weights are seeded
(numpy RandomState) so the same arguments give the same bytes.

After saving, the model is checked with onnx.checker and run once through
onnxruntime with batch 2, seq 16 (skip with --no-verify).

Scaling for a big-weights benchmark: --hidden / --layers / --ffn / --vocab
scale the weights, or pass --weights-mb N to pick the layer count that makes
the weights about N MB at the given hidden size (use with --external-data).
"""

import argparse
import contextlib
import math
import os
import sys
from collections import Counter

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAMILIES = ("gpt2", "bert", "llama", "vit", "t5")
F32_MIN = float(np.finfo(np.float32).min)
INT64_MAX = int(np.iinfo(np.int64).max)


class D:
    """A dimension taken from a tensor at run time: Shape(src)[i]."""

    def __init__(self, src, i):
        self.src, self.i = src, i


class Builder:
    """Collects nodes and initializers with torch-style names and opset-aware helpers."""

    def __init__(self, opset, seed, dry=False):
        self.opset = opset
        self.rng = np.random.RandomState(seed)
        self.dry = dry
        self.nodes = []
        self.inits = []
        self.param_bytes = 0
        self.param_names = set()
        self.scope = []
        self.used = Counter()
        self.sub_stack = []  # node lists of subgraphs being built

    # ---- naming -------------------------------------------------------
    @contextlib.contextmanager
    def at(self, name):
        self.scope.append(name)
        try:
            yield
        finally:
            self.scope.pop()

    def _node_name(self, op_type):
        base = "/" + "/".join(self.scope + [op_type]) if self.scope else "/" + op_type
        n = self.used[base]
        self.used[base] += 1
        return base if n == 0 else "%s_%d" % (base, n)

    # ---- nodes ---------------------------------------------------------
    def op(self, op_type, inputs, n_out=1, **attrs):
        name = self._node_name(op_type)
        outs = ["%s_output_%d" % (name, i) for i in range(n_out)]
        node = helper.make_node(op_type, list(inputs), outs, name=name, **attrs)
        (self.sub_stack[-1] if self.sub_stack else self.nodes).append(node)
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=np.int64):
        arr = np.array(value, dtype=dtype)
        return self.op("Constant", [], value=numpy_helper.from_array(arr))

    def fconst(self, value):
        return self.const(value, np.float32)

    def param(self, name, shape, init="normal", std=0.02):
        shape = tuple(int(s) for s in shape)
        if name in self.param_names:  # a tied or merged initializer: read again, stored once
            return name
        self.param_names.add(name)
        nbytes = 4 * int(np.prod(shape))
        self.param_bytes += nbytes
        if self.dry:
            arr = np.zeros((1,), np.float32)  # placeholder; never saved
        elif getattr(self, "shape_only", None):
            # --no-weights: an external-data reference into a sparse file of
            # zeros (shapes only; galvc --no-weights never reads it)
            t = onnx.TensorProto()
            t.name, t.data_type = name, TensorProto.FLOAT
            t.dims.extend(shape)
            t.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", self.shape_only), ("offset", str(self.ext_off)), ("length", str(nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            self.ext_off += (nbytes + 4095) // 4096 * 4096
            self.inits.append(t)
            return name
        elif init == "normal":
            arr = (self.rng.standard_normal(shape) * std).astype(np.float32)
        elif init == "ones":  # norm weights: near 1, not exactly, so tests see them
            arr = (1.0 + 0.1 * self.rng.standard_normal(shape)).astype(np.float32)
        elif init == "zeros":  # biases: small, nonzero
            arr = (0.02 * self.rng.standard_normal(shape)).astype(np.float32)
        else:
            raise ValueError(init)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    # ---- opset-dependent forms ------------------------------------------
    def unsqueeze(self, x, axes):
        return self.op("Unsqueeze", [x, self.const(list(axes))])

    def squeeze(self, x, axes):
        return self.op("Squeeze", [x, self.const(list(axes))])

    def reduce(self, op_type, x, axes, keepdims=1):
        # ReduceSum takes axes as an input from opset 13, the others from 18.
        if self.opset >= 18 or (op_type == "ReduceSum" and self.opset >= 13):
            return self.op(op_type, [x, self.const(list(axes))], keepdims=keepdims)
        return self.op(op_type, [x], axes=list(axes), keepdims=keepdims)

    def split(self, x, sizes, axis):
        return self.op("Split", [x, self.const(list(sizes))], n_out=len(sizes), axis=axis)

    def slice(self, x, starts, ends, axes, steps=None):
        ins = [x, self.const(starts), self.const(ends), self.const(axes)]
        if steps is not None:
            ins.append(self.const(steps))
        return self.op("Slice", ins)

    # ---- shape chains ------------------------------------------------------
    def dim(self, src, i):
        """Scalar int64: Shape(src) -> Gather(i)."""
        return self.op("Gather", [self.op("Shape", [src]), self.const(i)], axis=0)

    def shape_of(self, parts):
        """Concat of Unsqueeze(Gather(Shape(src), i)) and Constant([v]) pieces."""
        pieces = []
        for p in parts:
            if isinstance(p, D):
                pieces.append(self.unsqueeze(self.dim(p.src, p.i), [0]))
            else:
                pieces.append(self.const([p]))
        return self.op("Concat", pieces, axis=0)

    def reshape(self, x, parts):
        return self.op("Reshape", [x, self.shape_of(parts)])

    # ---- layers ---------------------------------------------------------------
    def linear(self, x, din, dout, name, bias=True):
        with self.at(name.split(".")[-1]):
            y = self.op("MatMul", [x, self.param(name + ".weight", (din, dout))])
            if bias:
                y = self.op("Add", [self.param(name + ".bias", (dout,), "zeros"), y])
        return y

    def layernorm_decomposed(self, x, d, name, eps=1e-5):
        with self.at(name.split(".")[-1]):
            mean = self.reduce("ReduceMean", x, [-1])
            xc = self.op("Sub", [x, mean])
            var = self.reduce("ReduceMean", self.op("Pow", [xc, self.fconst(2.0)]), [-1])
            std = self.op("Sqrt", [self.op("Add", [var, self.fconst(eps)])])
            y = self.op("Div", [xc, std])
            y = self.op("Mul", [y, self.param(name + ".weight", (d,), "ones")])
            return self.op("Add", [y, self.param(name + ".bias", (d,), "zeros")])

    def layernorm(self, x, d, name, eps=1e-6):
        if self.opset < 17:  # LayerNormalization is opset 17+; torch decomposes below
            return self.layernorm_decomposed(x, d, name, eps)
        with self.at(name.split(".")[-1]):
            return self.op("LayerNormalization",
                           [x, self.param(name + ".weight", (d,), "ones"),
                            self.param(name + ".bias", (d,), "zeros")],
                           axis=-1, epsilon=eps)

    def rmsnorm(self, x, d, name, eps=1e-6, reciprocal=True, wname=None):
        with self.at(name.split(".")[-1]):
            var = self.reduce("ReduceMean", self.op("Pow", [x, self.fconst(2.0)]), [-1])
            std = self.op("Sqrt", [self.op("Add", [var, self.fconst(eps)])])
            if reciprocal:  # torch.rsqrt -> Sqrt, Reciprocal
                y = self.op("Mul", [x, self.op("Reciprocal", [std])])
            else:
                y = self.op("Div", [x, std])
            return self.op("Mul", [self.param(wname or name + ".weight", (d,), "ones"), y])

    def gelu_erf(self, x):
        with self.at("act"):
            e = self.op("Erf", [self.op("Div", [x, self.fconst(math.sqrt(2.0))])])
            y = self.op("Mul", [x, self.op("Add", [e, self.fconst(1.0)])])
            return self.op("Mul", [y, self.fconst(0.5)])

    def gelu_tanh(self, x):
        with self.at("act"):
            c = self.op("Mul", [self.op("Pow", [x, self.fconst(3.0)]), self.fconst(0.044715)])
            t = self.op("Add", [x, c])
            t = self.op("Mul", [t, self.fconst(math.sqrt(2.0 / math.pi))])
            t = self.op("Add", [self.op("Tanh", [t]), self.fconst(1.0)])
            h = self.op("Mul", [x, self.fconst(0.5)])
            return self.op("Mul", [h, t])

    def split_heads(self, x, heads, hd, perm=(0, 2, 1, 3)):
        """[B,T,H*D] -> Reshape [B,T,H,D] -> Transpose(perm)."""
        y = self.reshape(x, [D(x, 0), D(x, 1), heads, hd])
        return self.op("Transpose", [y], perm=list(perm))

    def merge_heads(self, x, d):
        """[B,H,T,D] -> Transpose [B,T,H,D] -> Reshape [B,T,H*D]."""
        y = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        return self.reshape(y, [D(y, 0), D(y, 1), d])

    def attend(self, q, kt, v, scale, bias=None, softmax="op"):
        s = self.op("MatMul", [q, kt])
        if scale is not None:
            s = self.op("Div", [s, self.fconst(scale)])
        if bias is not None:
            s = self.op("Add", [s, bias])
        if softmax == "op":
            p = self.op("Softmax", [s], axis=-1)
        else:  # hand-written stable softmax
            m = self.reduce("ReduceMax", s, [-1])
            e = self.op("Exp", [self.op("Sub", [s, m])])
            p = self.op("Div", [e, self.reduce("ReduceSum", e, [-1])])
        return self.op("MatMul", [p, v])


def sym_input(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


# --------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------

def lm_head_weight(b, a, wte, d, v):
    """The LM head's [d, v] weight: its own, or with --tie-embeddings the token
    embedding [v, d] transposed (as torch exports a tied nn.Linear)."""
    if getattr(a, "tie_embeddings", False):
        return b.op("Transpose", [b.param(wte, (v, d))], perm=[1, 0])
    return b.param("lm_head.weight", (d, v))


def norm_name(a, name):
    """--share-norms: every norm weight is one initializer (torch.onnx.export
    merges initializers of equal value, so a freshly initialised model's
    all-ones norm weights export as one); biases stay per layer."""
    return "shared_norm" if getattr(a, "share_norms", False) else name


def dropout(b, a, x):
    """gpt2 --dropout P: training-mode Dropout (ratio P, training_mode true), as
    torch exports nn.Dropout in train mode; x itself without it."""
    if not a.dropout:
        return x
    tm = b.op("Constant", [], value=numpy_helper.from_array(np.array(True)))
    return b.op("Dropout", [x, b.fconst(a.dropout), tm])


def build_gpt2(b, a):
    D_, H, V, F, L = a.hidden, a.heads, a.vocab, a.ffn, a.layers
    hd = D_ // H
    ids = "input_ids"
    inputs = [sym_input(ids, TensorProto.INT64, ["batch", "seq"])]
    with b.at("transformer"):
        seq = b.dim(ids, 1)
        pos = b.op("Range", [b.const(0), seq, b.const(1)])
        pos = b.unsqueeze(pos, [0])
        with b.at("wte"):
            tok = b.op("Gather", [b.param("transformer.wte.weight", (V, D_)), ids])
        with b.at("wpe"):
            pe = b.op("Gather", [b.param("transformer.wpe.weight", (a.max_pos, D_)), pos])
        h = b.op("Add", [tok, pe])
        # causal mask: True where attention is NOT allowed
        with b.at("mask"):
            if b.opset >= 14:
                ones = b.op("ConstantOfShape", [b.shape_of([D(ids, 1), D(ids, 1)])],
                            value=numpy_helper.from_array(np.array([1.0], np.float32)))
                tril = b.op("Trilu", [ones], upper=0)
                masked = b.op("Equal", [tril, b.fconst(0.0)])
            else:
                r = b.op("Range", [b.const(0), b.dim(ids, 1), b.const(1)])
                masked = b.op("Less", [b.unsqueeze(r, [1]), b.unsqueeze(r, [0])])
        for i in range(L):
            p = "transformer.h.%d" % i
            with b.at("h.%d" % i):
                x = b.layernorm_decomposed(h, D_, p + ".ln_1")
                with b.at("attn"):
                    qkv = b.linear(x, D_, 3 * D_, p + ".attn.c_attn")
                    if a.qkv_layout == "megatron":
                        # Megatron-LM's fused layout: columns per head [q k v], so a
                        # column split of c_attn over tp keeps whole heads
                        qkv = b.reshape(qkv, [D(qkv, 0), D(qkv, 1), H, 3 * hd])
                        q, k, v = b.split(qkv, [hd, hd, hd], axis=3)
                        q = b.op("Transpose", [q], perm=[0, 2, 1, 3])
                        k = b.op("Transpose", [k], perm=[0, 2, 3, 1])
                        v = b.op("Transpose", [v], perm=[0, 2, 1, 3])
                    else:
                        q, k, v = b.split(qkv, [D_, D_, D_], axis=2)
                        q = b.split_heads(q, H, hd)
                        k = b.split_heads(k, H, hd, perm=(0, 2, 3, 1))
                        v = b.split_heads(v, H, hd)
                    s = b.op("MatMul", [q, k])
                    s = b.op("Div", [s, b.fconst(math.sqrt(hd))])
                    s = b.op("Where", [masked, b.fconst(F32_MIN), s])
                    pr = b.op("Softmax", [s], axis=-1)
                    pr = dropout(b, a, pr)
                    o = b.op("MatMul", [pr, v])
                    # merge like HF: Shape -> Slice(:-2) -> Concat(H*D)
                    o = b.op("Transpose", [o], perm=[0, 2, 1, 3])
                    shp = b.slice(b.op("Shape", [o]), [0], [-2], [0])
                    o = b.op("Reshape", [o, b.op("Concat", [shp, b.const([D_])], axis=0)])
                    o = dropout(b, a, b.linear(o, D_, D_, p + ".attn.c_proj"))
                h = b.op("Add", [o, h])
                x = b.layernorm_decomposed(h, D_, p + ".ln_2")
                with b.at("mlp"):
                    f = b.linear(x, D_, F, p + ".mlp.c_fc")
                    f = b.gelu_tanh(f)
                    f = dropout(b, a, b.linear(f, F, D_, p + ".mlp.c_proj"))
                h = b.op("Add", [h, f])
        h = b.layernorm_decomposed(h, D_, "transformer.ln_f")
    with b.at("lm_head"):
        logits = b.op("MatMul", [h, lm_head_weight(b, a, "transformer.wte.weight", D_, V)])
    return inputs, logits, ["batch", "seq", V]


def build_bert(b, a):
    D_, H, V, F, L = a.hidden, a.heads, a.vocab, a.ffn, a.layers
    hd = D_ // H
    ids, tt, am = "input_ids", "token_type_ids", "attention_mask"
    inputs = [sym_input(n, TensorProto.INT64, ["batch", "seq"]) for n in (ids, tt, am)]
    with b.at("bert"):
        with b.at("embeddings"):
            seq = b.dim(ids, 1)
            pos = b.unsqueeze(b.op("Range", [b.const(0), seq, b.const(1)]), [0])
            e = b.op("Gather", [b.param("bert.embeddings.word_embeddings.weight", (V, D_)), ids])
            t = b.op("Gather", [b.param("bert.embeddings.token_type_embeddings.weight", (2, D_)), tt])
            e = b.op("Add", [e, t])
            pe = b.op("Gather", [b.param("bert.embeddings.position_embeddings.weight", (a.max_pos, D_)), pos])
            e = b.op("Add", [e, pe])
            h = b.layernorm_decomposed(e, D_, "bert.embeddings.LayerNorm", eps=1e-12)
        # extended attention mask: (1 - mask[:, None, None, :]) * -10000
        m = b.unsqueeze(am, [1, 2])
        m = b.op("Cast", [m], to=TensorProto.FLOAT)
        m = b.op("Sub", [b.fconst(1.0), m])
        ext = b.op("Mul", [m, b.fconst(-10000.0)])
        with b.at("encoder"):
            for i in range(L):
                p = "bert.encoder.layer.%d" % i
                with b.at("layer.%d" % i):
                    with b.at("attention"), b.at("self"):
                        q = b.split_heads(b.linear(h, D_, D_, p + ".attention.self.query"), H, hd)
                        k = b.split_heads(b.linear(h, D_, D_, p + ".attention.self.key"), H, hd)
                        v = b.split_heads(b.linear(h, D_, D_, p + ".attention.self.value"), H, hd)
                        kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
                        o = b.attend(q, kt, v, math.sqrt(hd), bias=ext)
                        o = b.merge_heads(o, D_)
                    with b.at("attention"), b.at("output"):
                        o = b.linear(o, D_, D_, p + ".attention.output.dense")
                        h = b.layernorm_decomposed(b.op("Add", [o, h]), D_,
                                                   p + ".attention.output.LayerNorm", eps=1e-12)
                    with b.at("intermediate"):
                        f = b.gelu_erf(b.linear(h, D_, F, p + ".intermediate.dense"))
                    with b.at("output"):
                        f = b.linear(f, F, D_, p + ".output.dense")
                        h = b.layernorm_decomposed(b.op("Add", [f, h]), D_,
                                                   p + ".output.LayerNorm", eps=1e-12)
    with b.at("cls"), b.at("predictions"):
        with b.at("transform"):
            x = b.gelu_erf(b.linear(h, D_, D_, "cls.predictions.transform.dense"))
            x = b.layernorm_decomposed(x, D_, "cls.predictions.transform.LayerNorm", eps=1e-12)
        logits = b.linear(x, D_, V, "cls.predictions.decoder")
    return inputs, logits, ["batch", "seq", V]


def build_llama(b, a):
    D_, H, K, V, F, L = a.hidden, a.heads, a.kv_heads, a.vocab, a.ffn, a.layers
    hd = D_ // H
    n_rep = H // K
    ids = "input_ids"
    inputs = [sym_input(ids, TensorProto.INT64, ["batch", "seq"])]
    with b.at("model"):
        with b.at("embed_tokens"):
            h = b.op("Gather", [b.param("model.embed_tokens.weight", (V, D_)), ids])
        with b.at("rotary_emb"):
            pos = b.op("Range", [b.const(0), b.dim(ids, 1), b.const(1)])
            pos = b.unsqueeze(b.op("Cast", [pos], to=TensorProto.FLOAT), [1])  # [T,1]
            inv = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
            freqs = b.op("Mul", [pos, b.fconst(inv[None, :])])  # [T, hd/2]
            emb = b.op("Concat", [freqs, freqs], axis=-1)
            cos = b.op("Cos", [emb])
            sin = b.op("Sin", [emb])
        with b.at("causal_mask"):
            rows = b.op("Range", [b.const(0), b.dim(ids, 1), b.const(1)])
            ones = b.op("ConstantOfShape", [b.shape_of([D(ids, 1)])],
                        value=numpy_helper.from_array(np.array([1], np.int64)))
            cols = b.op("Sub", [b.op("CumSum", [ones, b.const(0)]), b.const(1)])
            keep = b.op("LessOrEqual", [b.unsqueeze(cols, [0]), b.unsqueeze(rows, [1])])
            mask = b.op("Where", [keep, b.fconst(0.0), b.fconst(F32_MIN)])

        def rope(x):
            x1 = b.slice(x, [0], [hd // 2], [-1])
            x2 = b.slice(x, [hd // 2], [INT64_MAX], [-1])
            rot = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
            return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rot, sin])])

        def repeat_kv(x):
            if n_rep == 1:
                return x
            y = b.unsqueeze(x, [2])
            y = b.op("Expand", [y, b.shape_of([D(x, 0), K, n_rep, D(x, 2), hd])])
            return b.reshape(y, [D(x, 0), H, D(x, 2), hd])

        with b.at("layers"):
            for i in range(L):
                p = "model.layers.%d" % i
                with b.at(str(i)):
                    x = b.rmsnorm(h, D_, p + ".input_layernorm", wname=norm_name(a, p + ".input_layernorm" + ".weight"))
                    with b.at("self_attn"):
                        q = b.split_heads(b.linear(x, D_, H * hd, p + ".self_attn.q_proj", bias=False), H, hd)
                        k = b.split_heads(b.linear(x, D_, K * hd, p + ".self_attn.k_proj", bias=False), K, hd)
                        v = b.split_heads(b.linear(x, D_, K * hd, p + ".self_attn.v_proj", bias=False), K, hd)
                        q, k = rope(q), rope(k)
                        k, v = repeat_kv(k), repeat_kv(v)
                        kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
                        o = b.attend(q, kt, v, math.sqrt(hd), bias=mask)
                        o = b.merge_heads(o, D_)
                        o = b.linear(o, D_, D_, p + ".self_attn.o_proj", bias=False)
                    h = b.op("Add", [h, o])
                    x = b.rmsnorm(h, D_, p + ".post_attention_layernorm", wname=norm_name(a, p + ".post_attention_layernorm" + ".weight"))
                    with b.at("mlp"):
                        g = b.linear(x, D_, F, p + ".mlp.gate_proj", bias=False)
                        u = b.linear(x, D_, F, p + ".mlp.up_proj", bias=False)
                        with b.at("act_fn"):
                            g = b.op("Mul", [g, b.op("Sigmoid", [g])])
                        f = b.linear(b.op("Mul", [g, u]), F, D_, p + ".mlp.down_proj", bias=False)
                    h = b.op("Add", [h, f])
        h = b.rmsnorm(h, D_, "model.norm", wname=norm_name(a, "model.norm" + ".weight"))
    with b.at("lm_head"):
        logits = b.op("MatMul", [h, lm_head_weight(b, a, "model.embed_tokens.weight", D_, V)])
    return inputs, logits, ["batch", "seq", V]


def build_vit(b, a):
    D_, H, F, L = a.hidden, a.heads, a.ffn, a.layers
    hd = D_ // H
    P, img, C = a.patch, a.image, a.classes
    n_patch = (img // P) ** 2
    px = "pixel_values"
    inputs = [sym_input(px, TensorProto.FLOAT, ["batch", 3, img, img])]
    with b.at("patch_embed"), b.at("proj"):
        x = b.op("Conv", [px, b.param("patch_embed.proj.weight", (D_, 3, P, P)),
                          b.param("patch_embed.proj.bias", (D_,), "zeros")],
                 kernel_shape=[P, P], strides=[P, P])
    with b.at("patch_embed"):
        x = b.reshape(x, [D(x, 0), D(x, 1), -1])  # flatten(2)
        x = b.op("Transpose", [x], perm=[0, 2, 1])  # [B, N, D]
    cls = b.op("Tile", [b.param("cls_token", (1, 1, D_)), b.shape_of([D(px, 0), 1, 1])])
    x = b.op("Concat", [cls, x], axis=1)
    x = b.op("Add", [x, b.param("pos_embed", (1, n_patch + 1, D_))])
    for i in range(L):
        p = "blocks.%d" % i
        with b.at("blocks"), b.at(str(i)):
            y = b.layernorm(x, D_, p + ".norm1")
            with b.at("attn"):
                qkv = b.linear(y, D_, 3 * D_, p + ".attn.qkv")
                qkv = b.reshape(qkv, [D(qkv, 0), D(qkv, 1), 3, H, hd])
                qkv = b.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
                q = b.op("Gather", [qkv, b.const(0)], axis=0)
                k = b.op("Gather", [qkv, b.const(1)], axis=0)
                v = b.op("Gather", [qkv, b.const(2)], axis=0)
                s = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
                s = b.op("Mul", [s, b.fconst(hd ** -0.5)])
                o = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
                o = b.merge_heads(o, D_)
                o = b.linear(o, D_, D_, p + ".attn.proj")
            x = b.op("Add", [x, o])
            y = b.layernorm(x, D_, p + ".norm2")
            with b.at("mlp"):
                f = b.gelu_erf(b.linear(y, D_, F, p + ".mlp.fc1"))
                f = b.linear(f, F, D_, p + ".mlp.fc2")
            x = b.op("Add", [x, f])
    x = b.layernorm(x, D_, "norm")
    x = b.slice(x, [0], [1], [1])  # x[:, 0:1]
    x = b.squeeze(x, [1])
    x = b.op("Flatten", [x], axis=1)
    with b.at("head"):
        logits = b.op("Gemm", [x, b.param("head.weight", (C, D_)), b.param("head.bias", (C,), "zeros")],
                      alpha=1.0, beta=1.0, transB=1)
    return inputs, logits, ["batch", C]


def build_t5(b, a):
    D_, H, V, F, L = a.hidden, a.heads, a.vocab, a.ffn, a.layers
    hd = D_ // H
    NB, MAXD = 32, 128
    ids, dids = "input_ids", "decoder_input_ids"
    inputs = [sym_input(ids, TensorProto.INT64, ["batch", "seq"]),
              sym_input(dids, TensorProto.INT64, ["batch", "seq"])]
    shared = b.param("shared.weight", (V, D_), std=1.0)

    def rel_bias(src, bidirectional, table):
        with b.at("relative_attention_bias"):
            ctx = b.unsqueeze(b.op("Range", [b.const(0), b.dim(src, 1), b.const(1)]), [1])
            mem = b.unsqueeze(b.op("Range", [b.const(0), b.dim(src, 1), b.const(1)]), [0])
            rel = b.op("Sub", [mem, ctx])  # [T, T] int64
            nb = NB
            ret = None
            if bidirectional:
                nb //= 2
                ret = b.op("Mul", [b.op("Cast", [b.op("Greater", [rel, b.const(0)])], to=TensorProto.INT64),
                                   b.const(nb)])
                n = b.op("Abs", [rel])
            else:
                n = b.op("Max", [b.op("Neg", [rel]), b.const(0)])
            max_exact = nb // 2
            small = b.op("Less", [n, b.const(max_exact)])
            lg = b.op("Log", [b.op("Div", [b.op("Cast", [n], to=TensorProto.FLOAT), b.fconst(float(max_exact))])])
            lg = b.op("Div", [lg, b.fconst(math.log(MAXD / max_exact))])
            lg = b.op("Mul", [lg, b.fconst(float(nb - max_exact))])
            large = b.op("Add", [b.const(max_exact), b.op("Cast", [lg], to=TensorProto.INT64)])
            large = b.op("Min", [large, b.const(nb - 1)])
            bucket = b.op("Where", [small, n, large])
            if ret is not None:
                bucket = b.op("Add", [ret, bucket])
            vals = b.op("Gather", [table, bucket])  # [T, T, H]
            vals = b.op("Transpose", [vals], perm=[2, 0, 1])
            return b.unsqueeze(vals, [0])  # [1, H, T, T]

    def heads(x, src_name, p):
        return b.split_heads(b.linear(x, D_, D_, p + "." + src_name, bias=False), H, hd)

    def ff(x, p):
        with b.at("DenseReluDense"):
            y = b.op("Relu", [b.linear(x, D_, F, p + ".DenseReluDense.wi", bias=False)])
            return b.linear(y, F, D_, p + ".DenseReluDense.wo", bias=False)

    with b.at("encoder"):
        with b.at("embed_tokens"):
            x = b.op("Gather", [shared, ids])
        with b.at("block.0"), b.at("layer.0"), b.at("SelfAttention"):
            enc_bias = rel_bias(ids, True, b.param("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", (NB, H)))
        for i in range(L):
            p = "encoder.block.%d" % i
            with b.at("block.%d" % i):
                with b.at("layer.0"):
                    y = b.rmsnorm(x, D_, p + ".layer.0.layer_norm", reciprocal=False)
                    with b.at("SelfAttention"):
                        q = heads(y, "q", p + ".layer.0.SelfAttention")
                        k = heads(y, "k", p + ".layer.0.SelfAttention")
                        v = heads(y, "v", p + ".layer.0.SelfAttention")
                        o = b.attend(q, b.op("Transpose", [k], perm=[0, 1, 3, 2]), v, None, bias=enc_bias)
                        o = b.linear(b.merge_heads(o, D_), D_, D_, p + ".layer.0.SelfAttention.o", bias=False)
                    x = b.op("Add", [x, o])
                with b.at("layer.1"):
                    y = b.rmsnorm(x, D_, p + ".layer.1.layer_norm", reciprocal=False)
                    x = b.op("Add", [x, ff(y, p + ".layer.1")])
        enc = b.rmsnorm(x, D_, "encoder.final_layer_norm", reciprocal=False)

    with b.at("decoder"):
        with b.at("embed_tokens"):
            x = b.op("Gather", [b.op("Identity", [shared]), dids])
        with b.at("causal_mask"):
            r = b.op("Range", [b.const(0), b.dim(dids, 1), b.const(1)])
            keep = b.op("LessOrEqual", [b.unsqueeze(r, [0]), b.unsqueeze(r, [1])])
            cm = b.op("Sub", [b.fconst(1.0), b.op("Cast", [keep], to=TensorProto.FLOAT)])
            cm = b.op("Mul", [cm, b.fconst(-1e9)])
        with b.at("block.0"), b.at("layer.0"), b.at("SelfAttention"):
            pb = rel_bias(dids, False, b.param("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", (NB, H)))
            # scripted guard: if seq > 0: bias = pb + mask else: bias = pb
            cond = b.op("Greater", [b.dim(dids, 1), b.const(0)])
            out_then = "/decoder/if_then/Add_output_0"
            out_else = "/decoder/if_else/Identity_output_0"
            then_g = helper.make_graph(
                [helper.make_node("Add", [pb, cm], [out_then], name="/decoder/if_then/Add")],
                "then_branch", [], [helper.make_tensor_value_info(out_then, TensorProto.FLOAT, None)])
            else_g = helper.make_graph(
                [helper.make_node("Identity", [pb], [out_else], name="/decoder/if_else/Identity")],
                "else_branch", [], [helper.make_tensor_value_info(out_else, TensorProto.FLOAT, None)])
            dec_bias = b.op("If", [cond], then_branch=then_g, else_branch=else_g)
        for i in range(L):
            p = "decoder.block.%d" % i
            with b.at("block.%d" % i):
                with b.at("layer.0"):
                    y = b.rmsnorm(x, D_, p + ".layer.0.layer_norm", reciprocal=False)
                    with b.at("SelfAttention"):
                        q = heads(y, "q", p + ".layer.0.SelfAttention")
                        k = heads(y, "k", p + ".layer.0.SelfAttention")
                        v = heads(y, "v", p + ".layer.0.SelfAttention")
                        o = b.attend(q, b.op("Transpose", [k], perm=[0, 1, 3, 2]), v, None, bias=dec_bias)
                        o = b.linear(b.merge_heads(o, D_), D_, D_, p + ".layer.0.SelfAttention.o", bias=False)
                    x = b.op("Add", [x, o])
                with b.at("layer.1"):
                    y = b.rmsnorm(x, D_, p + ".layer.1.layer_norm", reciprocal=False)
                    with b.at("EncDecAttention"):
                        q = heads(y, "q", p + ".layer.1.EncDecAttention")
                        k = heads(enc, "k", p + ".layer.1.EncDecAttention")
                        v = heads(enc, "v", p + ".layer.1.EncDecAttention")
                        o = b.attend(q, b.op("Transpose", [k], perm=[0, 1, 3, 2]), v, None, softmax="manual")
                        o = b.linear(b.merge_heads(o, D_), D_, D_, p + ".layer.1.EncDecAttention.o", bias=False)
                    x = b.op("Add", [x, o])
                with b.at("layer.2"):
                    y = b.rmsnorm(x, D_, p + ".layer.2.layer_norm", reciprocal=False)
                    x = b.op("Add", [x, ff(y, p + ".layer.2")])
        x = b.rmsnorm(x, D_, "decoder.final_layer_norm", reciprocal=False)
        x = b.op("Mul", [x, b.fconst(D_ ** -0.5)])
    with b.at("lm_head"):
        logits = b.op("MatMul", [x, b.param("lm_head.weight", (D_, V))])
    return inputs, logits, ["batch", "seq", V]


BUILDERS = {"gpt2": build_gpt2, "bert": build_bert, "llama": build_llama, "vit": build_vit, "t5": build_t5}


# --------------------------------------------------------------------------------------

_shape_only = [None, 0]  # --no-weights: data file name, its size


def build(args, dry=False):
    b = Builder(args.opset, args.seed, dry=dry)
    b.shape_only, b.ext_off = (None if dry else _shape_only[0]), 0
    inputs, logits, out_dims = BUILDERS[args.family](b, args)
    if b.shape_only:
        _shape_only[1] = b.ext_off
    for n in b.nodes:  # the last node writes "logits" directly, as torch names outputs
        if n.output[0] == logits:
            n.output[0] = "logits"
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_dims)
    graph = helper.make_graph(b.nodes, "main_graph", inputs, [out], initializer=b.inits)
    opsets = [helper.make_opsetid("", args.opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="galvc-make_model",
                              producer_version="1")
    model.ir_version = helper.find_min_ir_version_for(opsets)
    model.doc_string = "%s tiny (%s)" % (args.family, " ".join(
        "%s=%s" % (k, getattr(args, k)) for k in ("layers", "hidden", "heads", "kv_heads", "vocab", "ffn", "seed")))
    return model, b.param_bytes


def iter_nodes(graph):
    for n in graph.node:
        yield n
        for at in n.attribute:
            if at.type == onnx.AttributeProto.GRAPH:
                yield from iter_nodes(at.g)
            for g in at.graphs:
                yield from iter_nodes(g)


def random_feeds(model, args, batch=2, seq=16):
    rng = np.random.RandomState(1234)
    feeds = {}
    for vi in model.graph.input:
        dims = []
        for d in vi.type.tensor_type.shape.dim:
            dims.append({"batch": batch, "seq": seq}.get(d.dim_param, d.dim_value) if d.dim_param else d.dim_value)
        if vi.name == "pixel_values":
            feeds[vi.name] = rng.standard_normal(dims).astype(np.float32)
        elif vi.name == "token_type_ids":
            feeds[vi.name] = rng.randint(0, 2, dims).astype(np.int64)
        elif vi.name == "attention_mask":
            m = np.ones(dims, np.int64)
            m[:, -3:] = 0  # some padding
            feeds[vi.name] = m
        else:
            feeds[vi.name] = rng.randint(0, args.vocab, dims).astype(np.int64)
    return feeds


def verify(path, model, args):
    onnx.checker.check_model(path, full_check=True)
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = random_feeds(model, args)
    (y,) = sess.run(["logits"], feeds)
    if not np.all(np.isfinite(y)):
        raise SystemExit("make_model: error: non-finite logits from onnxruntime")
    return y.shape


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family", choices=FAMILIES)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=None, help="llama only (default: the largest divisor of --heads up to half of them)")
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--ffn", type=int, default=None, help="default 4*hidden (llama: 8/3*hidden rounded)")
    ap.add_argument("--max-pos", type=int, default=128, help="gpt2/bert position table size")
    ap.add_argument("--classes", type=int, default=10, help="vit classes")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="gpt2: training-mode Dropout of this ratio on the attention probabilities and both residual "
                         "branches (Megatron's attention and hidden dropout; default none)")
    ap.add_argument("--external-data", action="store_true",
                    help="store weights in OUTPUT.data next to the model (relative location)")
    ap.add_argument("--weights-mb", type=float, default=None,
                    help="choose --layers so the weights total about this many MB")
    ap.add_argument("--no-weights", action="store_true",
                    help="shapes only: weights are external-data references into a sparse file (for --plan-only)")
    ap.add_argument("--stats", action="store_true", help="print node count and op histogram")
    ap.add_argument("--no-verify", action="store_true", help="skip checker + onnxruntime run")
    ap.add_argument("--qkv-layout", choices=["hf", "megatron"], default="hf",
                    help="gpt2: c_attn's columns as HF GPT-2 ([q | k | v], each by heads) or Megatron-LM "
                         "(per head [q k v]: a tp column split keeps whole heads)")
    ap.add_argument("--tie-embeddings", action="store_true",
                    help="gpt2/llama: the LM head reads the token embedding transposed (one parameter)")
    ap.add_argument("--share-norms", action="store_true",
                    help="llama: every RMSNorm weight is one initializer (as torch merges equal ones)")
    a = ap.parse_args(argv)

    if not 13 <= a.opset <= 21:
        ap.error("--opset must be in 13..21")
    if a.hidden % a.heads:
        ap.error("--hidden must be a multiple of --heads")
    if a.kv_heads is not None and a.family != "llama":
        ap.error("--kv-heads applies to llama only")
    if a.kv_heads is None:  # llama: the largest divisor of the heads up to half of them (others: not used)
        a.kv_heads = max(d for d in range(1, max(1, a.heads // 2) + 1) if a.heads % d == 0) if a.family == "llama" \
            else max(1, a.heads // 2)
    if a.family == "llama" and a.heads % a.kv_heads:
        ap.error("--heads must be a multiple of --kv-heads")
    if a.ffn is None:
        a.ffn = (int(8 * a.hidden / 3) + 7) // 8 * 8 if a.family == "llama" else 4 * a.hidden
    if (a.hidden // a.heads) % 2:
        ap.error("head dim (hidden/heads) must be even")
    a.image, a.patch = 32, 8
    if a.family == "gpt2" or a.family == "bert":
        a.max_pos = max(a.max_pos, 16)

    if a.weights_mb is not None:
        a.layers = 1
        _, b1 = build(a, dry=True)
        a.layers = 2
        _, b2 = build(a, dry=True)
        per, base = b2 - b1, b1 - (b2 - b1)
        a.layers = max(1, int(round((a.weights_mb * 1e6 - base) / per)))

    out = a.output
    if a.no_weights:
        a.no_verify = True
        _shape_only[0] = os.path.basename(out) + ".data"
    model, nbytes = build(a)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    if a.no_weights:
        data = os.path.join(os.path.dirname(os.path.abspath(out)), _shape_only[0])
        with open(data, "wb") as f:
            f.truncate(_shape_only[1])  # sparse: no disk blocks
        onnx.save_model(model, out)
    elif a.external_data:
        loc = os.path.basename(out) + ".data"
        if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(out)), loc)):
            os.remove(os.path.join(os.path.dirname(os.path.abspath(out)), loc))  # onnx appends otherwise
        onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=loc, size_threshold=1024)
    else:
        onnx.save_model(model, out)

    shape = None
    if not a.no_verify:
        shape = verify(out, model, a)
    nodes = list(iter_nodes(model.graph))
    print("%s: %s opset %d, %d layers, %d nodes, %.2f MB weights%s" % (
        out, a.family, a.opset, a.layers, len(nodes), nbytes / 1e6,
        ", onnxruntime ok, logits %s" % (list(shape),) if shape else ""))
    if a.stats:
        hist = Counter(n.op_type for n in nodes)
        for op, c in sorted(hist.items()):
            print("  %-20s %d" % (op, c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
