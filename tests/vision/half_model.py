#!/usr/bin/env python3
"""half_model.py — stores an fp32 ONNX model's float weights in fp16 or
bf16 (onnx.numpy_helper): every float initializer of more than one element
becomes a 16-bit initializer NAME followed by a Cast to float named as the
original, so the graph computes in fp32 on the rounded weights.

usage: half_model.py IN.onnx OUT.onnx fp16|bf16"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (NaN stays NaN)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(a), np.uint16(0x7FC0), r)


def main():
    src, dst, kind = sys.argv[1:4]
    m = onnx.load(src)
    g = m.graph
    inits, casts = [], []
    for t in g.initializer:
        a = numpy_helper.to_array(t)
        if t.data_type != TensorProto.FLOAT or a.size <= 1:
            inits.append(t)
            continue
        name = t.name + "__" + kind
        if kind == "fp16":
            h = numpy_helper.from_array(a.astype(np.float16), name)
        else:
            h = helper.make_tensor(name, TensorProto.BFLOAT16, a.shape, bf16_bits(a).tobytes(), raw=True)
        inits.append(h)
        casts.append(helper.make_node("Cast", [name], [t.name], to=TensorProto.FLOAT, name="/" + name + "/Cast"))
    del g.initializer[:]
    g.initializer.extend(inits)
    nodes = casts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(m, dst)


if __name__ == "__main__":
    main()
