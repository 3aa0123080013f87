#!/usr/bin/env python3
"""half_model.py IN.onnx OUT.onnx TWIN.onnx fp16|bf16

A whole-model 16-bit export, as torch writes one for a model after .half()
(fp16) or .to(torch.bfloat16) (bf16): every float tensor of IN (initializers,
graph inputs and outputs, value_info, Constant / ConstantOfShape values, Cast
targets) becomes the 16-bit type, so the model's ops compute in it. TWIN is
IN with its float initializers and constants rounded to the 16-bit type (to
nearest even) and kept fp32: the fp32 model holding the values OUT stores.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

src, out, twin, kind = sys.argv[1:5]
DT = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}[kind]


def bits16(a):
    a = np.asarray(a, dtype=np.float32)
    if kind == "fp16":
        with np.errstate(over="ignore"):  # beyond 65504: inf, as the cast rounds
            return a.astype(np.float16).view(np.uint16)
    u = a.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def widen(b):
    if kind == "fp16":
        return b.view(np.float16).astype(np.float32)
    return (b.astype(np.uint32) << 16).view(np.float32)


def tensor16(t):  # a float TensorProto -> the 16-bit one (same name)
    a = numpy_helper.to_array(t)
    return helper.make_tensor(t.name, DT, a.shape, bits16(a).tobytes(), raw=True)


def rounded(t):  # a float TensorProto -> fp32 holding the 16-bit values
    a = numpy_helper.to_array(t)
    r = numpy_helper.from_array(widen(bits16(a)).reshape(a.shape), t.name)
    return r


for path, half in ((out, True), (twin, False)):
    m = onnx.load(src)
    g = m.graph
    conv = tensor16 if half else rounded
    for i, t in enumerate(list(g.initializer)):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(conv(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(conv(a.t))
            if half and n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = DT
    if half:
        for v in list(g.input) + list(g.output) + list(g.value_info):
            tt = v.type.tensor_type
            if tt.elem_type == TensorProto.FLOAT:
                tt.elem_type = DT
    onnx.save(m, path)
