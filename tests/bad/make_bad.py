#!/usr/bin/env python3
"""Write the bad-input corpus: one small ONNX file per case, plus cases.txt.

    python3 tests/bad/make_bad.py OUTDIR

cases.txt has one line per case, FILE<TAB>EXPECTED, where EXPECTED is a
substring the compiler's one-line error must contain (empty: the file is
valid and must import without error).  Files are rebuilt from scratch on
every run (the output is deterministic); nothing here is committed.
"""

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def model(nodes, inputs, outputs, inits=(), opset=OPSET, name="bad"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)]
    m = helper.make_model(g, opset_imports=ops, producer_name="galvc-make_bad")
    m.ir_version = helper.find_min_ir_version_for(ops) if opset >= 7 else 3
    return m


def vi(name, dims, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, dims)


def valid_model():
    """A small valid model (MatMul + Add + Relu) with a 64x64 weight."""
    w = numpy_helper.from_array(np.random.RandomState(0).standard_normal((64, 64)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.zeros(64, np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="/fc/MatMul"),
             helper.make_node("Add", ["h", "b"], ["h2"], name="/fc/Add"),
             helper.make_node("Relu", ["h2"], ["y"], name="/act/Relu")]
    return model(nodes, [vi("x", ["batch", 64])], [vi("y", ["batch", 64])], [w, bias])


def external_model(location, offset=0, length=64, nfloat=16):
    """Model whose one initializer 'w' [nfloat] lives in external data."""
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.append(nfloat)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="/Add")]
    return model(nodes, [vi("x", [nfloat])], [vi("y", [nfloat])], [t])


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def must_not_parse(data):
    try:
        onnx.load_model_from_string(data)
    except Exception:
        return True
    return False


def main(argv):
    if len(argv) != 2:
        print("usage: make_bad.py OUTDIR", file=sys.stderr)
        return 2
    out = argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = []

    def case(fname, expect):
        cases.append((fname, expect))
        return os.path.join(out, fname)

    # --- parse errors -----------------------------------------------------
    data = valid_model().SerializeToString()
    cut = data[: len(data) // 2]  # lands inside the 16 KB raw_data of 'w'
    assert must_not_parse(cut), "truncated model still parses"
    with open(case("truncated.onnx", "cannot parse"), "wb") as f:
        f.write(cut)

    rng = np.random.RandomState(7)
    junk = bytes([0xFF]) + rng.bytes(2047)  # 0xFF: field 31, wire type 7 (invalid) up front
    assert must_not_parse(junk), "random bytes parse"
    with open(case("random.onnx", "cannot parse"), "wb") as f:
        f.write(junk)

    # --- graph structure ----------------------------------------------------
    save(model([helper.make_node("MatMul", ["x", "w_missing"], ["y"], name="/fc/MatMul")],
               [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("missing_init.onnx", "undefined value"))

    save(model([helper.make_node("Add", ["a", "b"], ["y"], name="/Add")],
               [vi("a", [3, 4]), vi("b", [5])], [vi("y", [3, 4])]),
         case("wrong_rank.onnx", "shape"))

    save(model([helper.make_node("FancyOp", ["x"], ["y"], name="/fancy/FancyOp")],
               [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("unknown_op.onnx", "unsupported operator"))

    save(model([helper.make_node("Relu", ["x"], ["y"], name="/Relu")],
               [vi("x", [2, 4])], [vi("nowhere", [2, 4])]),
         case("dangling.onnx", "undefined value"))

    save(model([helper.make_node("Relu", ["x"], ["y"], name="/Relu")],
               [vi("x", [2, -3])], [vi("y", [2, -3])]),
         case("negative_dim.onnx", "negative dimension"))

    save(model([helper.make_node("Relu", ["x"], ["y"], name="/Relu")],
               [vi("x", [2 ** 40, 2 ** 40])], [vi("y", [2 ** 40, 2 ** 40])]),
         case("overflow.onnx", "overflow"))

    save(model([helper.make_node("Add", ["x", "x"], ["y"], name="/Add")],
               [vi("x", [2, 4])], [vi("y", [2, 4])], opset=7),
         case("bad_opset.onnx", "opset"))

    # If whose condition depends on the input's values, not its shape
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t_out"], name="/then/Relu")],
                               "then_branch", [], [vi("t_out", None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"], name="/else/Neg")],
                               "else_branch", [], [vi("e_out", None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="/ReduceSum", keepdims=0),
             helper.make_node("Constant", [], ["zero"], name="/Constant",
                              value=numpy_helper.from_array(np.array(0.0, np.float32))),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="/Greater"),
             helper.make_node("If", ["cond"], ["y"], name="/If", then_branch=then_g, else_branch=else_g)]
    m = model(nodes, [vi("x", [2, 4])], [vi("y", [2, 4])])
    onnx.checker.check_model(m)
    save(m, case("if_nonconst.onnx", "If"))

    # --- malformed vision / recurrent ops (one line naming the node) ---------
    x4 = [vi("x", [2, 3, 8, 8])]
    f32 = lambda *s: numpy_helper.from_array(np.ones(s, np.float32), "w")  # noqa: E731
    i64 = lambda n, *v: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    for fname, node, inits, ins, expect in [
        ("maxpool_no_kernel.onnx", helper.make_node("MaxPool", ["x"], ["y"], name="/pool/MaxPool"), [], x4,
         "(MaxPool): needs kernel_shape"),
        ("maxpool_big_window.onnx", helper.make_node("MaxPool", ["x"], ["y"], name="/pool/MaxPool", kernel_shape=[9, 9]),
         [], x4, "pool window does not fit"),
        ("avgpool_big_pad.onnx", helper.make_node("AveragePool", ["x"], ["y"], name="/pool/AveragePool",
                                                  kernel_shape=[2, 2], pads=[2, 2, 2, 2]), [], x4,
         "pads must be smaller than the kernel extent"),
        ("maxpool_indices.onnx", helper.make_node("MaxPool", ["x"], ["y", "idx"], name="/pool/MaxPool",
                                                  kernel_shape=[2, 2]), [], x4, "at most 1 supported"),
        ("pad_mode.onnx", helper.make_node("Pad", ["x", "p"], ["y"], name="/Pad", mode="mirror"),
         [i64("p", 0, 0, 1, 1, 0, 0, 1, 1)], x4, "unsupported Pad mode 'mirror'"),
        ("pad_count.onnx", helper.make_node("Pad", ["x", "p"], ["y"], name="/Pad"), [i64("p", 1, 1)], x4,
         "pads has 2 values for 4 axes"),
        ("pad_reflect_big.onnx", helper.make_node("Pad", ["x", "p"], ["y"], name="/Pad", mode="reflect"),
         [i64("p", 0, 0, 8, 0, 0, 0, 0, 0)], x4, "reflect pads (8, 0) do not fit axis 2 of size 8"),
        ("resize_mode.onnx", helper.make_node("Resize", ["x", "", "s"], ["y"], name="/Resize", mode="lanczos"),
         [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")], x4, "unsupported Resize mode 'lanczos'"),
        ("resize_exclude_outside.onnx", helper.make_node("Resize", ["x", "", "s"], ["y"], name="/Resize", mode="cubic",
                                                         exclude_outside=2),
         [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")], x4,
         "attribute 'exclude_outside' must be 0 or 1, got 2"),
        ("resize_cubic_coeff.onnx", helper.make_node("Resize", ["x", "", "s"], ["y"], name="/Resize", mode="cubic",
                                                     cubic_coeff_a="-0.5"),
         [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")], x4,
         "attribute 'cubic_coeff_a' must be a float, got a string"),
        ("resize_dynamic.onnx", helper.make_node("Resize", ["x", "", "s"], ["y"], name="/Resize"), [],
         x4 + [vi("s", [4])], "dynamic shape"),
        ("convtranspose_same_beyond.onnx", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="/up/ConvTranspose",
                                                            strides=[2, 2], auto_pad="SAME_UPPER"),
         [f32(3, 2, 1, 1)], x4, "output size 16 beyond the full output 15 with auto_pad SAME_UPPER"),
        ("convtranspose_channels.onnx", helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="/up/ConvTranspose"),
         [f32(4, 2, 2, 2)], x4, "input channels 3 do not match weight 4"),
        ("batchnorm_running_outputs.onnx", helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                                            ["y", "rm", "rv"], name="/bn/BatchNormalization"),
         [numpy_helper.from_array(np.ones(3, np.float32), n) for n in "sbmv"], x4, "need training_mode=1"),
        ("lstm_clip.onnx", helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="/rnn/LSTM", hidden_size=2, clip=1.0),
         [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "W"),
          numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "R")], [vi("x", [3, 2, 4])], "(LSTM): unsupported: clip"),
        ("gru_shapes.onnx", helper.make_node("GRU", ["x", "W", "R"], ["y"], name="/rnn/GRU", hidden_size=3),
         [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "W"),
          numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "R")], [vi("x", [3, 2, 4])],
         "W / R shapes do not match 1 directions, 3 gates and hidden_size 3"),
    ]:
        m = model([node], ins, [vi(node.output[0], [])], inits)
        save(m, case(fname, expect))

    # opset-18+ Resize attributes at values the importer refuses (one line each)
    rz = [vi("x", [2, 3, 8, 8])]
    for fname, attrs, expect in (("resize_antialias.onnx", dict(mode="linear", antialias=1),
                                  "(Resize): unsupported: Resize antialias=1"),
                                 ("resize_keep_aspect.onnx", dict(mode="linear", keep_aspect_ratio_policy="not_larger"),
                                  "(Resize): unsupported keep_aspect_ratio_policy 'not_larger'")):
        node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="/Resize", axes=[2, 3], **attrs)
        save(model([node], rz, [vi("y", [])], [numpy_helper.from_array(np.array([4, 6], np.int64), "sz")], opset=21),
             case(fname, expect))

    # valid, but names that break naive C strings / comments / MLIR text
    evil = 'evil */ "quoted" back\\slash\nnewline'
    x, h, y = 'in */ "x"\\\n', 'mid */ "h" \\n\n', 'out "y" */\\'
    w = numpy_helper.from_array(np.full((4,), 0.5, np.float32), 'w "*/\\\n')
    nodes = [helper.make_node("Mul", [x, w.name], [h], name=evil + " 1"),
             helper.make_node("Relu", [h], [y], name=evil + " 2")]
    m = model(nodes, [vi(x, [2, 4])], [vi(y, [2, 4])], [w], name='graph "*/\\\n')
    onnx.checker.check_model(m)
    save(m, case("hostile_names.onnx", ""))

    # --- attributes against the schema; several unsupported ops in one line ---
    sm = helper.make_node("Softmax", ["x"], ["y"], name="/attn/Softmax")
    sm.attribute.append(helper.make_attribute("axis", "-1"))  # a string where the schema has an int
    save(model([sm], [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("softmax_axis_string.onnx", "node '/attn/Softmax' (Softmax): attribute 'axis' must be an int, got a string"))
    save(model([helper.make_node("ReduceSum", ["x"], ["y"], name="/sum", keepdims=2)],
               [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("keepdims_two.onnx", "node '/sum' (ReduceSum): attribute 'keepdims' must be 0 or 1, got 2"))
    save(model([helper.make_node("Gelu", ["x"], ["y"], name="/gelu", approximate="fast")],
               [vi("x", [2, 4])], [vi("y", [2, 4])], opset=20),
         case("gelu_approximate.onnx", "node '/gelu' (Gelu): attribute 'approximate' has the value 'fast'"))
    save(model([helper.make_node("Scan", ["x"], ["y"], name="/a/Scan"),
                helper.make_node("NonZero", ["x"], ["z1"], name="/moe/NonZero"),
                helper.make_node("Scan", ["x"], ["y2"], name="/b/Scan"),
                helper.make_node("com.x.Fancy", ["x"], ["z2"], name="/f", domain="com.x")],
               [vi("x", [2, 4]), vi("n", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL)], [vi("y", [2, 4])]),
         case("several_unsupported.onnx", "4 unsupported operator nodes: Scan x2 (first '/a/Scan'), "
                                          "NonZero x1 (first '/moe/NonZero': its output shape depends on its input's values), "
                                          "com.x::com.x.Fancy x1 (first '/f')"))
    save(model([helper.make_node("Loop", ["n", "", "x"], ["y"], name="/l/Loop")],
               [vi("x", [2, 4]), vi("n", [], TensorProto.INT64)], [vi("y", [2, 4])]),
         case("loop_no_body.onnx", "node '/l/Loop' (Loop): Loop needs a body graph"))
    lb = helper.make_graph([helper.make_node("Identity", ["ci"], ["co"])], "body",
                           [vi("i", [], TensorProto.INT64), vi("ci", [], TensorProto.BOOL)], [vi("co", [], TensorProto.BOOL)])
    save(model([helper.make_node("Loop", ["n", "", "x"], ["y"], name="/l/Loop", body=lb)],
               [vi("x", [2, 4]), vi("n", [], TensorProto.INT64)], [vi("y", [2, 4])]),
         case("loop_body_arity.onnx", "node '/l/Loop' (Loop): Loop with 1 carried values: its body has 2 inputs and 1 "
                                      "outputs, the node 1 outputs"))
    # a Loop whose unrolling would pass the budget: refused before any iteration
    bn = [helper.make_node("Identity", ["ci"], ["co"])] + [
        helper.make_node("Neg", ["x1" if k == 0 else "t%d" % (k - 1)], ["t%d" % k]) for k in range(1100)]
    bn.append(helper.make_node("Identity", ["t1099"], ["y1"]))
    big = helper.make_graph(bn, "body", [vi("i", [], TensorProto.INT64), vi("ci", [], TensorProto.BOOL), vi("x1", [4])],
                            [vi("co", [], TensorProto.BOOL), vi("y1", [4])])
    save(model([helper.make_node("Loop", ["m", "", "x"], ["y"], name="/big/Loop", body=big)],
               [vi("x", [4])], [vi("y", [4])], inits=[numpy_helper.from_array(np.array(4096, np.int64), "m")]),
         case("loop_huge.onnx", "node '/big/Loop' (Loop): unsupported: a Loop of 4096 iterations over 1102 body nodes "
                                "(it is unrolled at import: at most 4096 iterations and 4194304 ops in all)"))
    save(model([helper.make_node("SequenceEmpty", [], ["s"], name="/s/Empty"),
                helper.make_node("ConcatFromSequence", ["s"], ["y"], name="/s/Concat", axis=0)],
               [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("concat_empty_sequence.onnx", "node '/s/Concat' (ConcatFromSequence): unsupported: ConcatFromSequence of "
                                            "an empty sequence"))
    save(model([helper.make_node("Relu", ["x"], ["r"], name="/s/Relu"),
                helper.make_node("SequenceAt", ["r", "x"], ["y"], name="/s/At")],
               [vi("x", [2, 4])], [vi("y", [2, 4])]),
         case("sequence_at_tensor.onnx", "node '/s/At' (SequenceAt): 'r' is a tensor where a sequence is expected"))
    save(model([helper.make_node("NonZero", ["x"], ["i"], name="/moe/NonZero"),
                helper.make_node("Transpose", ["i"], ["y"], name="/moe/Transpose")],
               [vi("x", [2, 4])], [vi("y", None, TensorProto.INT64)]),
         case("nonzero.onnx", "node '/moe/NonZero' (NonZero): unsupported operator: its output shape depends on its "
                              "input's values"))

    # --- malformed index ops ----------------------------------------------------
    idx = numpy_helper.from_array(np.array([[0], [1]], np.int64), "i")
    save(model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="/sc", reduction="avg")],
               [vi("x", [4, 3]), vi("u", [2, 3])], [vi("y", [4, 3])], [idx]),
         case("scatternd_reduction.onnx", "node '/sc' (ScatterND): attribute 'reduction' has the value 'avg', not one of"))
    save(model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="/sc")],
               [vi("x", [4, 3]), vi("u", [2, 5])], [vi("y", [4, 3])], [idx]),
         case("scatternd_updates.onnx", "node '/sc' (ScatterND): shape mismatch: scatter_nd updates tensor<2x5xf32>"))
    save(model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="/sc")],
               [vi("x", [4, 3]), vi("u", [2, 3])], [vi("y", [4, 3])],
               [numpy_helper.from_array(np.array([[0, 1, 2], [1, 0, 0]], np.int64), "i")]),
         case("scatternd_tuple.onnx", "node '/sc' (ScatterND): shape: scatter_nd index tuples of 3 coordinates"))
    # constant data and indices: the fold evaluates it, and the index 7 is out of range for 4 rows
    save(model([helper.make_node("ScatterND", ["x0", "i", "u"], ["s"], name="/sc"),
                helper.make_node("Add", ["s", "x"], ["y"], name="/add")],
               [vi("x", [4, 3], TensorProto.INT64)], [vi("y", [4, 3], TensorProto.INT64)],
               [numpy_helper.from_array(np.array([[0], [7]], np.int64), "i"),
                numpy_helper.from_array(np.ones((4, 3), np.int64), "x0"),
                numpy_helper.from_array(np.ones((2, 3), np.int64), "u")]),
         case("scatternd_range.onnx", "node '/sc' (ScatterND): scatter_nd index tuple 1 out of range"))
    save(model([helper.make_node("GatherND", ["x", "i"], ["y"], name="/g", batch_dims=1)],
               [vi("x", [2, 4])], [vi("y", [3])], [numpy_helper.from_array(np.array([[0], [1], [2]], np.int64), "i")]),
         case("gathernd_batch_dims.onnx", "node '/g' (GatherND): batch dim 0 of the indices (3) differs from the data's (2)"))
    save(model([helper.make_node("GatherND", ["x", "i"], ["y"], name="/g", batch_dims=2)],
               [vi("x", [2, 4])], [vi("y", [2])], [idx]),
         case("gathernd_batch_dims_range.onnx", "node '/g' (GatherND): batch_dims 2 out of range"))
    save(model([helper.make_node("GatherND", ["x", "i"], ["y"], name="/g")],
               [vi("x", [2, 4]), vi("i", [2, 1], TensorProto.FLOAT)], [vi("y", [2])]),
         case("gathernd_float_indices.onnx", "node '/g' (GatherND): shape: gather_nd indices must be i64 or i32, got f32"))
    save(model([helper.make_node("GatherElements", ["x", "i"], ["y"], name="/ge", axis=3)],
               [vi("x", [2, 4])], [vi("y", [2, 1])], [idx]),
         case("gatherelements_axis.onnx", "node '/ge' (GatherElements): shape: gather_elements axis 3 out of range"))
    save(model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="/se")],
               [vi("x", [2, 4, 3]), vi("u", [2, 1])], [vi("y", [2, 4, 3])], [idx]),
         case("scatterelements_rank.onnx", "node '/se' (ScatterElements): shape mismatch: scatter_elements indices"))
    # TopK: k negative, k larger than the axis, k a graph input (the output
    # shape would depend on data), an axis out of range
    topk_out = [vi("v", None), vi("ix", None, TensorProto.INT64)]
    for fname, kval, want in (("topk_k_negative.onnx", -2, "node '/tk' (TopK): k -2 is negative"),
                              ("topk_k_too_big.onnx", 9, "node '/tk' (TopK): k 9 exceeds the size 6 of axis -1")):
        save(model([helper.make_node("TopK", ["x", "k"], ["v", "ix"], name="/tk")], [vi("x", [2, 6])], topk_out,
                   [numpy_helper.from_array(np.array([kval], np.int64), "k")]), case(fname, want))
    save(model([helper.make_node("TopK", ["x", "k"], ["v", "ix"], name="/tk")],
               [vi("x", [2, 6]), vi("k", [1], TensorProto.INT64)], topk_out),
         case("topk_k_input.onnx", "node '/tk' (TopK): unsupported: dynamic shape (k must be a constant"))
    save(model([helper.make_node("TopK", ["x", "k"], ["v", "ix"], name="/tk", axis=2)], [vi("x", [2, 6])], topk_out,
               [numpy_helper.from_array(np.array([1], np.int64), "k")]),
         case("topk_axis.onnx", "node '/tk' (TopK): axis 2 out of range for an input of rank 2"))
    save(model([helper.make_node("MatMul", ["a", "b"], ["y"], name="/mm")],
               [vi("a", [3, 2, 4]), vi("b", [2, 4, 5])], [vi("y", [3, 2, 5])]),
         case("matmul_batch.onnx", "node '/mm' (MatMul): shape mismatch: matmul batch dims do not broadcast (3 vs 2)"))

    # --- external data ---------------------------------------------------------
    save(external_model("../secret.bin"), case("external_outside.onnx", "external data"))
    save(external_model("/etc/passwd"), case("external_abs.onnx", "external data"))

    # a symlink inside the folder that points outside it (to a real, readable
    # file, so only the symlink check can stop it)
    os.symlink("/etc/passwd", os.path.join(out, "external_symlink.bin"))
    save(external_model("external_symlink.bin"), case("external_symlink.onnx", "external data"))

    save(external_model("external_missing.bin"), case("external_missing.onnx", "external data"))

    with open(os.path.join(out, "external_short.bin"), "wb") as f:
        f.write(np.arange(16, dtype=np.float32).tobytes()[:16])  # 16 bytes only
    save(external_model("external_short.bin", offset=8, length=64), case("external_short.onnx", "external data"))

    with open(os.path.join(out, "cases.txt"), "w") as f:
        for fname, expect in cases:
            f.write("%s\t%s\n" % (fname, expect))
    print("%s: %d cases" % (out, len(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
