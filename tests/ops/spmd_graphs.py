"""Helper-built ONNX graphs that put the index ops' sharding rules to work
on 2 ranks (tests/index_ops.sh, galvc --gpus 2 --target cpu):

spmd_index_dp: batch-first inputs x [4, 6, 8], upd [4, 3, 8] and token
  ids [4, 2, 1] under dp. GatherElements / ScatterElements along axis 1
  (the batch dim passes), GatherND of a replicated table [50, 8] by the ids
  (the ids' batch dim passes to the result), GatherND / ScatterND of rows
  of the transposed x [6, 4, 8] (the batch is a trailing dim of data and
  updates: it passes), and ScatterND of rows of x itself (the batch is the
  indexed dim: x is gathered first).
spmd_index_tp: x [4, 8] -> MatMul(w1 [8, 16]) -> Relu (column-parallel:
  the 16 features split over tp), then GatherElements / ScatterElements
  along axis 0 and GatherND / ScatterND of rows: the feature dim passes
  through all four; MatMul(w2 [16, 8]) is row-parallel (one all_reduce).

    python3 tests/ops/spmd_graphs.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh


def save(path, nodes, inputs, outputs, inits):
    for n in nodes:
        n.name = "/" + n.output[0]  # the collective table names the node
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(n, TP.FLOAT, None) for n in outputs],
                     [nh.from_array(a, n) for n, a in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    onnx.save(m, path)


def dp_graph(path):
    r = np.random.RandomState(7)
    ge = r.randint(-6, 6, (4, 3, 8)).astype(np.int64)
    se = np.stack([np.stack([r.permutation(6)[:3] for _ in range(8)], -1) for _ in range(4)]).astype(np.int64)
    rows = np.array([[1], [5], [-3]], np.int64)
    nodes = [
        h.make_node("GatherElements", ["x", "ge"], ["gather_elements"], axis=1),
        h.make_node("ScatterElements", ["x", "se", "upd"], ["scatter_elements"], axis=1, reduction="add"),
        h.make_node("GatherND", ["table", "ids"], ["gather_nd_ids"]),
        h.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        h.make_node("Transpose", ["upd"], ["ut"], perm=[1, 0, 2]),
        h.make_node("GatherND", ["xt", "rows"], ["gather_nd_rows"]),
        h.make_node("ScatterND", ["xt", "rows", "ut"], ["scatter_nd_rows"]),
        h.make_node("ScatterND", ["x", "rows2", "x2"], ["scatter_nd_batch"], reduction="add"),
    ]
    save(path, nodes,
         [("x", TP.FLOAT, [4, 6, 8]), ("upd", TP.FLOAT, [4, 3, 8]), ("ids", TP.INT64, [4, 2, 1]),
          ("x2", TP.FLOAT, [2, 6, 8])],
         ["gather_elements", "scatter_elements", "gather_nd_ids", "gather_nd_rows", "scatter_nd_rows",
          "scatter_nd_batch"],
         [("ge", ge), ("se", se), ("rows", rows), ("rows2", np.array([[3], [0]], np.int64)),
          ("table", r.randn(50, 8).astype(np.float32))])


def tp_graph(path):
    r = np.random.RandomState(8)
    ge = r.randint(-4, 4, (3, 16)).astype(np.int64)
    se = np.stack([r.permutation(4)[:3] for _ in range(16)], -1).astype(np.int64)
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["a"]),
        h.make_node("Relu", ["a"], ["h"]),
        h.make_node("GatherElements", ["h", "ge"], ["g"], axis=0),
        h.make_node("ScatterElements", ["h", "se", "g"], ["s"], axis=0),
        h.make_node("GatherND", ["s", "rows"], ["n"]),
        h.make_node("ScatterND", ["s", "rows2", "n"], ["t"], reduction="add"),
        h.make_node("MatMul", ["t", "w2"], ["y"]),
    ]
    save(path, nodes, [("x", TP.FLOAT, [4, 8])], ["y"],
         [("w1", r.randn(8, 16).astype(np.float32)), ("w2", r.randn(16, 8).astype(np.float32)), ("ge", ge),
          ("se", se), ("rows", np.array([[2], [0], [3]], np.int64)), ("rows2", np.array([[1], [-1], [1]], np.int64))])


def train_graph(path):
    """A token model for 2-rank dp training (labels [4, 8], cross entropy):
    ids [4, 8] -> GatherND(emb [50, 16], ids[..., None]) -> h [4, 8, 16];
    GatherElements / ScatterElements (add) along the sequence; GatherND of
    3 sequence rows of the transposed [8, 4, 16] view, MatMul(w_upd) of
    them, ScatterND back into the view (the batch a trailing dim); logits =
    MatMul(w_out [16, 50]). The batch split passes through every index op
    forward; the gradients of the tables are scatters of every rank's rows."""
    r = np.random.RandomState(3)
    perm = np.broadcast_to(np.array([3, 1, 0, 7, 2, 2, 5, 4])[None, :, None], (4, 8, 16)).astype(np.int64).copy()
    perm2 = np.broadcast_to(np.array([0, 0, 1, 2, 3, 5, 6, 7])[None, :, None], (4, 8, 16)).astype(np.int64).copy()
    nodes = [
        h.make_node("Unsqueeze", ["input_ids", "ax"], ["ids3"]),
        h.make_node("GatherND", ["emb", "ids3"], ["h"]),
        h.make_node("GatherElements", ["h", "perm"], ["h3"], axis=1),
        h.make_node("ScatterElements", ["h3", "perm2", "h"], ["h4"], axis=1, reduction="add"),
        h.make_node("Transpose", ["h4"], ["ht"], perm=[1, 0, 2]),
        h.make_node("GatherND", ["ht", "rows"], ["g"]),
        h.make_node("MatMul", ["g", "w_upd"], ["u"]),
        h.make_node("ScatterND", ["ht", "rows", "u"], ["ht2"]),
        h.make_node("Transpose", ["ht2"], ["h5"], perm=[1, 0, 2]),
        h.make_node("MatMul", ["h5", "w_out"], ["logits"]),
    ]
    save(path, nodes, [("input_ids", TP.INT64, [4, 8])], ["logits"],
         [("ax", np.array([-1], np.int64)), ("emb", (r.randn(50, 16) * 0.5).astype(np.float32)),
          ("perm", perm), ("perm2", perm2), ("rows", np.array([[1], [5], [-1]], np.int64)),
          ("w_upd", (r.randn(16, 16) * 0.3).astype(np.float32)), ("w_out", (r.randn(16, 50) * 0.3).astype(np.float32))])


if __name__ == "__main__":
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    dp_graph(os.path.join(d, "spmd_index_dp.onnx"))
    tp_graph(os.path.join(d, "spmd_index_tp.onnx"))
    train_graph(os.path.join(d, "train_index_dp.onnx"))
