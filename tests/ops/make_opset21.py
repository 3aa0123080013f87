"""Small ONNX graphs (onnx.helper) at opset 21 for the forms opsets 18-21
introduced: reductions with axes as an input (ReduceSum / Mean / Max / Min,
keepdims 0 and 1, negative axes, noop_with_empty_axes, no axes: all dims),
Split with num_outputs (an uneven last chunk) and with a sizes input, Pad
with an axes input (negative axes; constant and edge), Resize with axes and
the opset-18 attributes at the values the exporters write (antialias 0,
keep_aspect_ratio_policy stretch), LayerNormalization variants (axis -1
with bias, axis 1 without bias, stash_type with the Mean / InvStdDev
outputs).

    python3 tests/ops/make_opset21.py OUTDIR

Prints the graph names. Parameters are initializers; data are graph inputs.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

OPSET = 21


def model(nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info(n, TP.FLOAT, s) for n, s in inputs],
                     [h.make_tensor_value_info(n, TP.FLOAT, None) for n in outputs],
                     [nh.from_array(a, n) for n, a in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 10
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph at opset 21
    return m


def i64(*v):
    return np.array(v, np.int64)


def graphs():
    out = {}
    X = [("x", [2, 3, 4])]
    for op, axes, keep in (("ReduceSum", (-1, 1), 1), ("ReduceMean", (0,), 0), ("ReduceMax", (2, 0), 0),
                           ("ReduceMin", (-2,), 1)):
        out["%s_axes_input" % op.lower()] = model([h.make_node(op, ["x", "axes"], ["y"], keepdims=keep)], X, ["y"],
                                                  [("axes", i64(*axes))])
    # empty axes with noop_with_empty_axes: the input passes through (scaled so the graph computes something)
    out["reducemean_noop_empty"] = model([h.make_node("ReduceMean", ["x", "axes"], ["r"], noop_with_empty_axes=1),
                                          h.make_node("Mul", ["r", "two"], ["y"])], X, ["y"],
                                         [("axes", np.zeros(0, np.int64)), ("two", np.array(2, np.float32))])
    out["reducemax_all"] = model([h.make_node("ReduceMax", ["x"], ["y"], keepdims=0)], X, ["y"])
    out["split_num_outputs"] = model([h.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
                                     [("x", [2, 7])], ["a", "b", "c"])
    out["split_num_outputs_even"] = model([h.make_node("Split", ["x"], ["a", "b"], axis=-2, num_outputs=2)],
                                          [("x", [6, 4])], ["a", "b"])
    out["split_sizes_input"] = model([h.make_node("Split", ["x", "s"], ["a", "b"], axis=1)], [("x", [2, 7])],
                                     ["a", "b"], [("s", i64(2, 5))])
    P = [("x", [2, 3, 4, 5])]
    out["pad_axes_const"] = model([h.make_node("Pad", ["x", "pads", "v", "axes"], ["y"])], P, ["y"],
                                  [("pads", i64(1, 0, 2, 3)), ("v", np.array(0.5, np.float32)),
                                   ("axes", i64(-1, 1))])
    out["pad_axes_edge"] = model([h.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="edge")], P, ["y"],
                                 [("pads", i64(2, 1, 0, 2)), ("axes", i64(2, -1))])
    empty = np.zeros(0, np.float32)
    out["resize_axes_sizes"] = model([h.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                                                  axes=[2, 3], antialias=0, keep_aspect_ratio_policy="stretch")],
                                     P, ["y"], [("roi", empty), ("sizes", i64(6, 8))])
    out["resize_axes_scales"] = model([h.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest",
                                                   axes=[3], antialias=0)],
                                      P, ["y"], [("roi", empty), ("scales", np.array([2.0], np.float32))])
    r = np.random.RandomState(4)
    L = [("x", [2, 3, 6])]
    out["layernorm_last_bias"] = model([h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)], L,
                                       ["y"], [("s", r.randn(6).astype(np.float32)),
                                               ("b", r.randn(6).astype(np.float32))])
    out["layernorm_axis1_nobias"] = model([h.make_node("LayerNormalization", ["x", "s"], ["y"], axis=1)], L, ["y"],
                                          [("s", r.randn(3, 6).astype(np.float32))])
    out["layernorm_stats"] = model([h.make_node("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"], axis=-1,
                                                stash_type=1)], L, ["y", "mean", "inv"],
                                   [("s", r.randn(6).astype(np.float32)), ("b", r.randn(6).astype(np.float32))])
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    g = graphs()
    for name, m in g.items():
        onnx.save(m, os.path.join(d, name + ".onnx"))
    print(" ".join(sorted(g)))


if __name__ == "__main__":
    main()
