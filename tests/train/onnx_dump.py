"""onnx_dump.py — writes an ONNX model's graph as JSON plus one .npy per
initializer, for tests/train/torch_train.py (Debian's torch has no onnx
package). Run with the python that has onnx: onnx_dump.py MODEL.onnx DIR."""
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attr_value(a):
    if a.type == onnx.AttributeProto.INT:
        return a.i
    if a.type == onnx.AttributeProto.FLOAT:
        return a.f
    if a.type == onnx.AttributeProto.STRING:
        return a.s.decode()
    if a.type == onnx.AttributeProto.INTS:
        return list(a.ints)
    if a.type == onnx.AttributeProto.FLOATS:
        return list(a.floats)
    if a.type == onnx.AttributeProto.TENSOR:
        t = numpy_helper.to_array(a.t)
        return {"tensor": t.tolist(), "dtype": str(t.dtype), "shape": list(t.shape)}
    if a.type == onnx.AttributeProto.GRAPH:  # a Loop body (its initializers inline, as constants)
        return {"graph": dump_graph(a.g)}
    raise SystemExit("onnx_dump: attribute %s of type %d not supported" % (a.name, a.type))


def dump_nodes(g):
    return [{"op": n.op_type, "name": n.name, "inputs": list(n.input), "outputs": list(n.output),
             "attrs": {a.name: attr_value(a) for a in n.attribute}} for n in g.node]


def dump_graph(g):
    consts = []
    for t in g.initializer:
        a = numpy_helper.to_array(t)
        consts.append({"name": t.name, "tensor": a.tolist(), "dtype": str(a.dtype), "shape": list(a.shape)})
    return {"nodes": dump_nodes(g), "consts": consts, "inputs": [i.name for i in g.input],
            "outputs": [o.name for o in g.output]}


def main():
    model, out = sys.argv[1], sys.argv[2]
    m = onnx.load(model)
    g = m.graph
    os.makedirs(out, exist_ok=True)
    inits = []
    for i, t in enumerate(g.initializer):
        a = numpy_helper.to_array(t)
        if a.dtype.name == "bfloat16":  # Debian's numpy cannot read it back; float32 holds every bfloat16 exactly
            a = a.astype(np.float32)
        f = "init%d.npy" % i
        np.save(os.path.join(out, f), a)
        inits.append({"name": t.name, "file": f})
    nodes = dump_nodes(g)
    json.dump({"nodes": nodes, "initializers": inits, "inputs": [i.name for i in g.input],
               "outputs": [o.name for o in g.output]}, open(os.path.join(out, "graph.json"), "w"))


if __name__ == "__main__":
    main()
