"""Small ONNX graphs (onnx.helper) for sequences and Loop, the forms torch
exports (repeat_interleave as SplitToSequence + a Loop inserting into a
sequence + ConcatFromSequence: GPT-J) and the rest of the sequence ops:
SequenceEmpty / Construct / Insert / Erase / At / Length, SplitToSequence
without split (keepdims 0 and 1), with a scalar split (a smaller last part)
and with sizes, ConcatFromSequence with and without new_axis, Loops with
carried tensors and scan outputs, a condition that ends the loop early, a
trip count read from a shape, a carried sequence. Plus two graphs galvc must
refuse in one line (bad_*.onnx): a trip count from a graph input's values,
a sequence position out of range.

    python3 tests/ops/make_seq_graphs.py OUTDIR   (prints the good graphs' names)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

OPSET = 17


def model(nodes, inputs, outputs, inits=(), int_inputs=()):
    vi = [h.make_tensor_value_info(n, TP.FLOAT, s) for n, s in inputs]
    vi += [h.make_tensor_value_info(n, TP.INT64, s) for n, s in int_inputs]
    g = h.make_graph(nodes, "m", vi, [h.make_tensor_value_info(n, TP.FLOAT, None) for n in outputs],
                     [nh.from_array(a, n) for n, a in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)  # validates the graph
    return m


def i64(*v):
    return np.array(v, np.int64)


def s64(v):  # a scalar: positions, a scalar split, trip counts
    return np.array(v, np.int64)


def body(nodes, inputs, outputs):
    """A Loop body: inputs / outputs as (name, elem_type, shape or None)."""
    return h.make_graph(nodes, "body", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                        [h.make_tensor_value_info(n, t, s) for n, t, s in outputs])


def graphs():
    out = {}
    # SplitToSequence without split, keepdims 0: rows; first + last, times the length
    out["seq_split_rows"] = model(
        [h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
         h.make_node("SequenceAt", ["s", "m1"], ["a"]), h.make_node("SequenceAt", ["s", "z"], ["b"]),
         h.make_node("SequenceLength", ["s"], ["n"]), h.make_node("Cast", ["n"], ["nf"], to=TP.FLOAT),
         h.make_node("Add", ["a", "b"], ["ab"]), h.make_node("Mul", ["ab", "nf"], ["y"])],
        [("x", [3, 4])], ["y"], [("m1", s64(-1)), ("z", s64(0))])
    # sizes [1, 2, 3] along axis 0; erase the middle part, insert x's first row at the front, concat
    out["seq_split_sizes"] = model(
        [h.make_node("SplitToSequence", ["x", "sz"], ["s"], axis=0),
         h.make_node("SequenceErase", ["s", "one"], ["s2"]),
         h.make_node("Slice", ["x", "z1", "o1", "z1"], ["r0"]),
         h.make_node("SequenceInsert", ["s2", "r0", "z"], ["s3"]),
         h.make_node("ConcatFromSequence", ["s3"], ["y"], axis=0)],
        [("x", [6, 4])], ["y"], [("sz", i64(1, 2, 3)), ("one", s64(1)), ("z", s64(0)), ("z1", i64(0)), ("o1", i64(1))])
    # a scalar split of 4 over 10 columns (4, 4, 2), keepdims; concatenated back in reverse order
    out["seq_split_scalar"] = model(
        [h.make_node("SplitToSequence", ["x", "four"], ["s"], axis=1),
         h.make_node("SequenceAt", ["s", "two"], ["c2"]), h.make_node("SequenceAt", ["s", "one"], ["c1"]),
         h.make_node("SequenceAt", ["s", "z"], ["c0"]),
         h.make_node("SequenceConstruct", ["c2", "c1", "c0"], ["r"]),
         h.make_node("ConcatFromSequence", ["r"], ["y"], axis=1)],
        [("x", [3, 10])], ["y"], [("four", s64(4)), ("two", s64(2)), ("one", s64(1)), ("z", s64(0))])
    # stacking along a new last axis; SequenceErase without a position drops the last
    out["seq_stack"] = model(
        [h.make_node("SequenceConstruct", ["a", "b", "a"], ["s"]), h.make_node("SequenceErase", ["s"], ["s2"]),
         h.make_node("ConcatFromSequence", ["s2"], ["y"], axis=-1, new_axis=1)],
        [("a", [2, 3]), ("b", [2, 3])], ["y"])
    # Loop, 3 iterations: x <- x * 2 + i, scan output x (stacked [3, 2, 3])
    b = body([h.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT), h.make_node("Mul", ["xin", "two"], ["x2"]),
              h.make_node("Add", ["x2", "fi"], ["xo"]), h.make_node("Identity", ["cin"], ["cout"]),
              h.make_node("Identity", ["xo"], ["scan"])],
             [("i", TP.INT64, []), ("cin", TP.BOOL, []), ("xin", TP.FLOAT, [2, 3])],
             [("cout", TP.BOOL, []), ("xo", TP.FLOAT, [2, 3]), ("scan", TP.FLOAT, [2, 3])])
    out["loop_scan"] = model(
        [h.make_node("Loop", ["three", "", "x"], ["xf", "ys"], body=b),
         h.make_node("ReduceSum", ["ys", "ax0"], ["ysum"], keepdims=0), h.make_node("Add", ["xf", "ysum"], ["y"])],
        [("x", [2, 3])], ["y"], [("three", s64(3)), ("ax0", i64(0)), ("two", np.array(2.0, np.float32))])
    # the condition ends it: cond_out = i < 3, so iterations 0..3 run (trip count 10)
    b = body([h.make_node("Less", ["i", "lim"], ["cout"]), h.make_node("Add", ["xin", "xin"], ["xo"])],
             [("i", TP.INT64, []), ("cin", TP.BOOL, []), ("xin", TP.FLOAT, [4])],
             [("cout", TP.BOOL, []), ("xo", TP.FLOAT, [4])])
    out["loop_cond"] = model([h.make_node("Loop", ["ten", "t", "x"], ["y"], body=b)], [("x", [4])], ["y"],
                             [("ten", s64(10)), ("t", np.array(True)), ("lim", s64(3))])
    # GPT-J's repeat_interleave: each row of x twice, as torch 1.13 exports it (trip count from a shape)
    b = body([h.make_node("SequenceAt", ["rows", "i"], ["r"]), h.make_node("Unsqueeze", ["r", "ax0"], ["r1"]),
              h.make_node("Expand", ["r1", "shp"], ["rr"]), h.make_node("SequenceInsert", ["sin", "rr"], ["sout"]),
              h.make_node("Identity", ["cin"], ["cout"])],
             [("i", TP.INT64, []), ("cin", TP.BOOL, []), ("sin", TP.FLOAT, None)],
             [("cout", TP.BOOL, []), ("sout", TP.FLOAT, None)])
    b.input[2].type.CopyFrom(h.make_sequence_type_proto(h.make_tensor_type_proto(TP.FLOAT, None)))
    b.output[1].type.CopyFrom(h.make_sequence_type_proto(h.make_tensor_type_proto(TP.FLOAT, None)))
    out["loop_repeat_interleave"] = model(
        [h.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
         h.make_node("Shape", ["x"], ["xs"]), h.make_node("Gather", ["xs", "z"], ["n"]),
         h.make_node("SequenceEmpty", [], ["e"], dtype=TP.FLOAT),
         h.make_node("Loop", ["n", "", "e"], ["s"], body=b),
         h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
        [("x", [3, 5])], ["y"], [("z", s64(0)), ("ax0", i64(0)), ("shp", i64(2, 5))])
    return out


def bad_graphs():
    out = {}
    b = body([h.make_node("Identity", ["xin"], ["xo"]), h.make_node("Identity", ["cin"], ["cout"])],
             [("i", TP.INT64, []), ("cin", TP.BOOL, []), ("xin", TP.FLOAT, [4])],
             [("cout", TP.BOOL, []), ("xo", TP.FLOAT, [4])])
    out["bad_loop_trip"] = model([h.make_node("Loop", ["n", "", "x"], ["y"], body=b)], [("x", [4])], ["y"],
                                 int_inputs=[("n", [])])
    out["bad_seq_pos"] = model(
        [h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0), h.make_node("SequenceAt", ["s", "p"], ["y"])],
        [("x", [3, 4])], ["y"], [("p", s64(5))])
    return out


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for n, m in {**graphs(), **bad_graphs()}.items():
        onnx.save(m, os.path.join(d, n + ".onnx"))
    print(" ".join(graphs()))


if __name__ == "__main__":
    main()
