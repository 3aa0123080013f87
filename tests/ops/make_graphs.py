"""Small ONNX graphs (onnx.helper) for the index and contraction ops the
transformers exports use: ScatterND (Llama's padding-mask assignment, row
and add forms), GatherND, MatMul with broadcast batch dims (Falcon's
multi-query attention), a 2-D lhs against a batched rhs, and a lower-rank
operand, TopK (opsets 14, 17, 21; smallest, ties, k from a shape); plus
`train_nd.onnx`, a tiny token model whose gradient flows through GatherND,
ScatterND (data and updates), TopK and a broadcasting MatMul.

    python3 tests/ops/make_graphs.py OUTDIR

Index tensors are initializers (constants), as they are in the exports once
folded; data and updates are graph inputs, so the ops run in the program.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

OPSET = 17


def model(name, nodes, inputs, outputs, inits=(), opset=OPSET):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, TP.FLOAT, s) for n, s in inputs],
                     [h.make_tensor_value_info(*(n if isinstance(n, tuple) else (n, TP.FLOAT)), None) for n in outputs],
                     [nh.from_array(a, n) for n, a in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    return m


def graphs():
    out = {}
    # Llama: every element of a [B, 1, S, S] mask addressed by a 4-tuple
    idx = np.stack(np.indices((2, 1, 8, 8)), -1).astype(np.int64)
    out["scatternd_mask"] = model("m", [h.make_node("ScatterND", ["x", "i", "u"], ["y"])],
                                  [("x", [2, 1, 8, 8]), ("u", [2, 1, 8, 8])], ["y"], [("i", idx)])
    rows = np.array([[1], [4], [-1]], np.int64)  # a negative index wraps
    out["scatternd_rows"] = model("m", [h.make_node("ScatterND", ["x", "i", "u"], ["y"])],
                                  [("x", [6, 4]), ("u", [3, 4])], ["y"], [("i", rows)])
    dup = np.array([[1, 0], [1, 0], [2, 3]], np.int64)  # a repeated tuple sums
    out["scatternd_add"] = model("m", [h.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
                                 [("x", [3, 4, 5]), ("u", [3, 5])], ["y"], [("i", dup)])
    # mul / max / min (opset 18) with repeated tuples: every update of a row combines in
    rep = np.array([[1, 0], [2, 3], [1, 0], [-2, 3], [0, 4]], np.int64)
    for red in ("mul", "max", "min"):
        out["scatternd_" + red] = model("m", [h.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=red)],
                                        [("x", [3, 5, 4]), ("u", [5, 4])], ["y"], [("i", rep)], opset=18)
        out["scatterelements_" + red] = model(
            "m", [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction=red)],
            [("x", [3, 4]), ("u", [3, 5])], ["y"], [("i", np.array([[1, 1, 0, 3, 1], [-1, 2, 2, 0, 3], [0, 0, 0, 0, 2]],
                                                                   np.int64))], opset=18)
    gi = np.array([[[0, 1], [2, 3]], [[1, -1], [0, 0]]], np.int64)
    out["gathernd"] = model("m", [h.make_node("GatherND", ["x", "i"], ["y"])], [("x", [3, 4, 5])], ["y"],
                            [("i", gi)])
    # batch_dims 1: per batch row 3 tuples of 2 coordinates; batch_dims 2: per (b, c) 2 rows (negative wraps)
    gb = np.array([[[0, 1], [2, -1], [1, 3]], [[2, 2], [0, 0], [-1, 1]]], np.int64)
    out["gathernd_batch1"] = model("m", [h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)], [("x", [2, 3, 4, 5])],
                                   ["y"], [("i", gb)])
    gb2 = np.array([[[[3], [0]], [[1], [-1]], [[2], [2]]], [[[0], [1]], [[3], [3]], [[-2], [0]]]], np.int64)
    out["gathernd_batch2"] = model("m", [h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=2)], [("x", [2, 3, 4, 5])],
                                   ["y"], [("i", gb2)])
    ge = np.array([[[0, 2, 1, -1]], [[1, 1, 0, 2]]], np.int64)  # [2, 1, 4] against data [2, 3, 4], axis 1
    out["gatherelements"] = model("m", [h.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], [("x", [2, 3, 4])],
                                  ["y"], [("i", ge)])
    se = np.array([[1, 0, 2], [0, 2, 1]], np.int64)
    out["scatterelements"] = model("m", [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
                                   [("x", [3, 3]), ("u", [2, 3])], ["y"], [("i", se)])
    sa = np.array([[1, 1, 0], [-1, 2, 2]], np.int64)  # repeated targets sum
    out["scatterelements_add"] = model("m", [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1,
                                                         reduction="add")],
                                       [("x", [3, 3]), ("u", [2, 3])], ["y"], [("i", sa)])
    for name, eq, shapes in (("einsum_bmm", "bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
                             ("einsum_attn", "bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]]),
                             ("einsum_outer", "i,j->ij", [[6], [4]]),
                             ("einsum_inner", "i,i", [[6], [6]]),
                             ("einsum_transpose", "ij->ji", [[3, 5]]),
                             ("einsum_sum", "ijk->j", [[2, 3, 4]]),
                             ("einsum_proj", "bid,jd->bji", [[2, 3, 4], [5, 4]])):
        ins = [(chr(ord("a") + k), s) for k, s in enumerate(shapes)]
        out[name] = model("m", [h.make_node("Einsum", [n for n, _ in ins], ["y"], equation=eq)], ins, ["y"])
    oh_i = np.array([[0, 3, -1], [2, 1, -4]], np.int64)
    for name, axis in (("onehot_last", -1), ("onehot_axis0", 0), ("onehot_axis1", 1)):
        out[name] = model("m", [h.make_node("OneHot", ["i", "d", "v"], ["oh"], axis=axis),
                                h.make_node("Mul", ["oh", "x"], ["y"])],
                          [("x", [1])], ["y"],
                          [("i", oh_i), ("d", np.array(4, np.int64)), ("v", np.array([-0.5, 2.0], np.float32))])
    div = np.array([3.0, -2.5, 1.5, -4.0], np.float32)
    out["mod_fmod"] = model("m", [h.make_node("Mod", ["x", "d"], ["y"], fmod=1)], [("x", [2, 4])], ["y"], [("d", div)])
    idiv = np.array([[3], [-5]], np.int64)
    g = h.make_graph([h.make_node("Mod", ["i", "d"], ["y"])], "m", [h.make_tensor_value_info("i", TP.INT64, [2, 6])],
                     [h.make_tensor_value_info("y", TP.INT64, None)], [nh.from_array(idiv, "d")])
    out["mod_int"] = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    out["mod_int"].ir_version = 8
    for name, op, kw in (("argmax_last", "ArgMax", dict(axis=-1, keepdims=0)),
                         ("argmin_axis1", "ArgMin", dict(axis=1, select_last_index=1))):
        g = h.make_graph([h.make_node(op, ["x"], ["y"], **kw)], "m", [h.make_tensor_value_info("x", TP.FLOAT, [2, 5, 3])],
                         [h.make_tensor_value_info("y", TP.INT64, None)])
        out[name] = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
        out[name].ir_version = 8
    # TopK: k a constant input (its values and indices both compared), at the
    # opsets whose form differs (10: no largest / sorted; 11+: both)
    for op_ in (14, 17, 21):
        out["topk_last_o%d" % op_] = model("m", [h.make_node("TopK", ["x", "k"], ["v", "i"])], [("x", [2, 3, 6])],
                                           ["v", ("i", TP.INT64)], [("k", np.array([3], np.int64))], opset=op_)
    out["topk_smallest_axis1"] = model("m", [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)],
                                       [("x", [2, 5, 4])], ["v", ("i", TP.INT64)], [("k", np.array([2], np.int64))], opset=21)
    # ties (Floor of the inputs): equal values keep the lower index first
    out["topk_ties"] = model("m", [h.make_node("Floor", ["x"], ["f"]), h.make_node("TopK", ["f", "k"], ["v", "i"])],
                             [("x", [3, 8])], ["v", ("i", TP.INT64)], [("k", np.array([5], np.int64))], opset=21)
    # k computed from the input's shape (Slice of Shape): known at import
    out["topk_k_shape"] = model("m", [h.make_node("Shape", ["x"], ["s"]),
                                      h.make_node("Slice", ["s", "z", "o"], ["k"]),
                                      h.make_node("TopK", ["x", "k"], ["v", "i"], axis=0)],
                                [("x", [2, 5])], ["v", ("i", TP.INT64)], [("z", np.array([0], np.int64)),
                                                              ("o", np.array([1], np.int64))], opset=17)
    out["matmul_mqa"] = model("m", [h.make_node("MatMul", ["q", "k"], ["y"])],
                              [("q", [2, 4, 3, 8]), ("k", [2, 1, 8, 5])], ["y"])
    out["matmul_2d_3d"] = model("m", [h.make_node("MatMul", ["a", "b"], ["y"])], [("a", [3, 4]), ("b", [2, 4, 6])],
                                ["y"])
    out["matmul_ranks"] = model("m", [h.make_node("MatMul", ["a", "b"], ["y"])],
                                [("a", [2, 1, 3, 4]), ("b", [5, 4, 6])], ["y"])
    return out


def emu_model():
    """One graph with every recently added op that has its own kernel, for the
    CUDA target under the execution layer (tests/cuda_emu_ops.sh: one emu build
    instead of one per op): GatherND, ScatterND (add, max, min, a repeated
    tuple), GatherElements, ScatterElements (add, mul, repeated targets), Mod (float fmod;
    integer, the divisor's sign), MaxPool (pads, stride), AveragePool
    (ceil_mode, count_include_pad), TopK (values and indices, ties), CumSum
    (exclusive, along the first axis, integers reversed)."""
    gi = np.array([[[0, 1], [2, 3]], [[1, -1], [0, 0]]], np.int64)
    dup = np.array([[1, 0], [1, 0], [2, 3]], np.int64)
    ge = np.array([[[0, 2, 1, -1]], [[1, 1, 0, 2]]], np.int64)
    sa = np.array([[1, 1, 0], [-1, 2, 2]], np.int64)
    nodes = [
        h.make_node("GatherND", ["d", "gi"], ["gathernd"]),
        h.make_node("ScatterND", ["d", "dup", "du"], ["scatternd_add"], reduction="add"),
        h.make_node("GatherElements", ["e", "ge"], ["gatherelements"], axis=1),
        h.make_node("ScatterElements", ["s", "sa", "su"], ["scatterelements_add"], axis=1, reduction="add"),
        h.make_node("ScatterND", ["d", "dup", "du"], ["scatternd_max"], reduction="max"),
        h.make_node("ScatterND", ["d", "dup", "du"], ["scatternd_min"], reduction="min"),
        h.make_node("ScatterElements", ["s", "sa", "su"], ["scatterelements_mul"], axis=1, reduction="mul"),
        h.make_node("Mod", ["m", "div"], ["mod_fmod"], fmod=1),
        h.make_node("Mod", ["mi", "idiv"], ["mod_int"]),
        h.make_node("MaxPool", ["x"], ["maxpool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("AveragePool", ["x"], ["avgpool"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                    ceil_mode=1, count_include_pad=1),
        h.make_node("Floor", ["t"], ["tf"]),
        h.make_node("TopK", ["tf", "k"], ["topk_values", "topk_indices"]),
        h.make_node("CumSum", ["t", "ax1"], ["cumsum_excl"], exclusive=1),
        h.make_node("CumSum", ["d", "ax0"], ["cumsum_axis0"]),
        h.make_node("CumSum", ["mi", "ax1"], ["cumsum_int_rev"], reverse=1),
    ]
    f = TP.FLOAT
    ins = [("d", f, [3, 4, 5]), ("du", f, [3, 5]), ("e", f, [2, 3, 4]), ("s", f, [3, 3]), ("su", f, [2, 3]),
           ("m", f, [2, 4]), ("mi", TP.INT64, [2, 6]), ("x", f, [2, 3, 9, 9]), ("t", f, [3, 8])]
    outs = [("gathernd", f), ("scatternd_add", f), ("gatherelements", f), ("scatterelements_add", f),
            ("scatternd_max", f), ("scatternd_min", f), ("scatterelements_mul", f), ("mod_fmod", f),
            ("mod_int", TP.INT64), ("maxpool", f), ("avgpool", f), ("topk_values", f), ("topk_indices", TP.INT64),
            ("cumsum_excl", f), ("cumsum_axis0", f), ("cumsum_int_rev", TP.INT64)]
    g = h.make_graph(nodes, "emu_ops", [h.make_tensor_value_info(n, t, s) for n, t, s in ins],
                     [h.make_tensor_value_info(n, t, None) for n, t in outs],
                     [nh.from_array(gi, "gi"), nh.from_array(dup, "dup"), nh.from_array(ge, "ge"),
                      nh.from_array(sa, "sa"), nh.from_array(np.array([3.0, -2.5, 1.5, -4.0], np.float32), "div"),
                      nh.from_array(np.array([[3], [-5]], np.int64), "idiv"), nh.from_array(np.array([5], np.int64), "k"),
                      nh.from_array(np.array(1, np.int64), "ax1"), nh.from_array(np.array(0, np.int64), "ax0")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])  # ScatterND / ScatterElements max and min
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    return m


def emu_topk_model():
    """TopK for the CUDA target's bf16 storage (tests/cuda_emu_ops.sh,
    --precision bf16): rows of integer inputs (token ids in [0, 50): values a
    bf16 holds exactly, with ties) cast to float and scaled by 0.25, along the
    last axis, largest, and along a middle axis, smallest: values and indices
    (a rounding of random floats to bf16 would reorder near-equal values)."""
    f = TP.FLOAT
    nodes = [
        h.make_node("Cast", ["t"], ["tc"], to=f),
        h.make_node("Mul", ["tc", "quarter"], ["tf"]),
        h.make_node("TopK", ["tf", "k"], ["topk_values", "topk_indices"]),
        h.make_node("Cast", ["u"], ["uf"], to=f),
        h.make_node("TopK", ["uf", "k2"], ["topk_small_values", "topk_small_indices"], axis=1, largest=0),
    ]
    i64 = TP.INT64
    g = h.make_graph(nodes, "emu_topk", [h.make_tensor_value_info("t", i64, [3, 8]), h.make_tensor_value_info("u", i64, [2, 5, 4])],
                     [h.make_tensor_value_info("topk_values", f, None), h.make_tensor_value_info("topk_indices", i64, None),
                      h.make_tensor_value_info("topk_small_values", f, None),
                      h.make_tensor_value_info("topk_small_indices", i64, None)],
                     [nh.from_array(np.array(0.25, np.float32), "quarter"), nh.from_array(np.array([5], np.int64), "k"),
                      nh.from_array(np.array([2], np.int64), "k2")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    return m


def train_model():
    """ids [2, 8] -> Gather(emb) h [2, 8, 16]; GatherND picks 3 (batch, position)
    rows, MatMul(w_upd) makes the updates, ScatterND puts them back; logits =
    MatMul(h2, w_out [1, 16, 50]) (batch dim 1 broadcasts); GatherElements
    and ScatterElements (add) of a [2, 8, 16] view along the sequence,
    Mod (fmod) by a constant, and TopK (the 10 largest of 16 features: the
    gradient flows back only to the selected ones) before the output
    MatMul (w_out [1, 10, 50])."""
    r = np.random.RandomState(3)
    idx = np.array([[0, 1], [1, 5], [0, 7]], np.int64)
    nodes = [
        h.make_node("Gather", ["emb", "input_ids"], ["h"]),
        h.make_node("GatherND", ["h", "idx"], ["g"]),
        h.make_node("MatMul", ["g", "w_upd"], ["u"]),
        h.make_node("ScatterND", ["h", "idx", "u"], ["h2"]),
        h.make_node("GatherElements", ["h2", "perm"], ["h3"], axis=1),
        h.make_node("ScatterElements", ["h3", "perm2", "h2"], ["h4"], axis=1, reduction="add"),
        h.make_node("Constant", [], ["modc"], value=nh.from_array(np.array([1.5], np.float32))),
        h.make_node("Mod", ["h4", "modc"], ["h5"], fmod=1),
        h.make_node("TopK", ["h5", "topk_k"], ["h6", "h6_idx"]),
        h.make_node("MatMul", ["h6", "w_out"], ["logits"]),
    ]
    g = h.make_graph(nodes, "train_nd", [h.make_tensor_value_info("input_ids", TP.INT64, [2, 8])],
                     [h.make_tensor_value_info("logits", TP.FLOAT, None)],
                     [nh.from_array((r.randn(50, 16) * 0.5).astype(np.float32), "emb"),
                      nh.from_array(idx, "idx"),
                      nh.from_array(np.broadcast_to(np.array([3, 1, 0, 7, 2, 2, 5, 4])[None, :, None],
                                                    (2, 8, 16)).astype(np.int64).copy(), "perm"),
                      nh.from_array(np.broadcast_to(np.array([0, 0, 1, 2, 3, 5, 6, 7])[None, :, None],
                                                    (2, 8, 16)).astype(np.int64).copy(), "perm2"),
                      nh.from_array((r.randn(16, 16) * 0.3).astype(np.float32), "w_upd"),
                      nh.from_array(np.array([10], np.int64), "topk_k"),
                      nh.from_array((r.randn(1, 10, 50) * 0.3).astype(np.float32), "w_out")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    return m


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, m in graphs().items():
        onnx.save(m, os.path.join(d, name + ".onnx"))
    onnx.save(train_model(), os.path.join(d, "train_nd.onnx"))
    onnx.save(emu_model(), os.path.join(d, "emu_ops.onnx"))
    onnx.save(emu_topk_model(), os.path.join(d, "emu_topk.onnx"))
    print(" ".join(sorted(graphs())))


if __name__ == "__main__":
    main()
