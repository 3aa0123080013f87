#!/usr/bin/env python3
"""Small helper-built ONNX graphs of the vision and recurrent ops (pools,
Clip, BatchNormalization, Pad, ConvTranspose, Resize, LSTM, GRU) in the
forms the torch / torchvision exports use and the spec's other modes, for
tests/vision_ops.sh (galv-eval and the CPU program against onnxruntime).

usage: make_op_models.py OUTDIR   (writes OUTDIR/NAME.onnx, one per case)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

R = np.random.RandomState(3)


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def f32(*s):
    return R.randn(*s).astype(np.float32)


def i64(*v):
    return np.array(v, np.int64)


def cases():
    X4 = [("x", [2, 3, 9, 9])]
    yield "gap", model("gap", [helper.make_node("GlobalAveragePool", ["x"], ["y"])], [("x", [2, 3, 5, 7])], ["y"])
    yield "gmp", model("gmp", [helper.make_node("GlobalMaxPool", ["x"], ["y"])], [("x", [2, 3, 5, 7])], ["y"])
    yield "maxpool_k3s2p1", model("m", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                                        pads=[1, 1, 1, 1])], X4, ["y"], opset=14)
    yield "maxpool_ceil", model("m", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                                      ceil_mode=1)], [("x", [2, 3, 8, 8])], ["y"])
    yield "maxpool_dil_1d", model("m", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], dilations=[2],
                                                        pads=[1, 0])], [("x", [2, 3, 11])], ["y"])
    yield "maxpool_same", model("m", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                                      auto_pad="SAME_UPPER")], [("x", [1, 2, 7, 8])], ["y"])
    for cip in (0, 1):
        yield f"avgpool_p1_cip{cip}", model("a", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                                                   strides=[2, 2], pads=[1, 1, 1, 1],
                                                                   count_include_pad=cip)], X4, ["y"])
        yield f"avgpool_ceil_cip{cip}", model("a", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2],
                                                                     strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1,
                                                                     count_include_pad=cip)], X4, ["y"])
    yield "avgpool_k2", model("a", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                              [("x", [2, 4, 8, 8])], ["y"], opset=14)
    yield "clip_both", model("c", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], X4, ["y"],
                             [("lo", np.float32(-0.5)), ("hi", np.float32(0.7))])
    yield "clip_min", model("c", [helper.make_node("Clip", ["x", "lo"], ["y"])], X4, ["y"], [("lo", np.float32(0.1))])
    yield "relu6", model("c", [helper.make_node("Constant", [], ["lo"], value=numpy_helper.from_array(np.float32(0))),
                               helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.float32(6))),
                               helper.make_node("Mul", ["x", "k"], ["x4"]),
                               helper.make_node("Clip", ["x4", "lo", "hi"], ["y"])], X4, ["y"], [("k", np.float32(4))])
    C = 3
    bn = [("s", f32(C)), ("b", f32(C)), ("mean", f32(C)), ("var", np.abs(f32(C)) + 0.5)]
    yield "bn_infer", model("bn", [helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"],
                                                    epsilon=1e-3)], X4, ["y"], bn, opset=14)
    yield "bn_infer_3d", model("bn", [helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"])],
                               [("x", [2, 3, 10])], ["y"], bn, opset=15)
    yield "bn_train", model("bn", [helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"],
                                                    ["y", "rm", "rv"], training_mode=1, momentum=0.8)],
                            X4, ["y", "rm", "rv"], bn, opset=15)
    P = [("x", [2, 3, 5, 6])]
    yield "pad_const", model("p", [helper.make_node("Pad", ["x", "pads", "v"], ["y"])], P, ["y"],
                             [("pads", i64(0, 0, 1, 2, 0, 1, 2, 0)), ("v", np.float32(1.5))])
    yield "pad_zero", model("p", [helper.make_node("Pad", ["x", "pads"], ["y"])], P, ["y"],
                            [("pads", i64(0, 0, 0, 3, 0, 0, 0, 0))], opset=14)
    yield "pad_reflect", model("p", [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")], P, ["y"],
                               [("pads", i64(0, 0, 2, 1, 0, 0, 4, 5))])
    yield "pad_edge", model("p", [helper.make_node("Pad", ["x", "pads"], ["y"], mode="edge")], P, ["y"],
                            [("pads", i64(0, 0, 3, 1, 0, 0, 1, 2))])
    yield "pad_wrap", model("p", [helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")], P, ["y"],
                            [("pads", i64(0, 0, 2, 1, 0, 0, 1, 3))], opset=19)
    yield "pad_negative", model("p", [helper.make_node("Pad", ["x", "pads"], ["y"])], P, ["y"],
                                [("pads", i64(0, 0, -1, 2, 0, 0, 1, -2))])
    yield "pad_axes", model("p", [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")], P, ["y"],
                            [("pads", i64(1, 2, 2, 1)), ("axes", i64(-1, 2))], opset=18)
    yield "convt_s2_op1", model("t", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                                                       strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
                                [("x", [2, 4, 5, 5])], ["y"], [("w", f32(4, 3, 3, 3)), ("b", f32(3))])
    yield "convt_k2s2", model("t", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[2, 2],
                                                     strides=[2, 2])], [("x", [2, 4, 5, 6])], ["y"],
                              [("w", f32(4, 2, 2, 2)), ("b", f32(2))], opset=14)
    yield "convt_group_dil", model("t", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2, dilations=[2, 1],
                                                          pads=[0, 1, 1, 0])], [("x", [1, 4, 4, 5])], ["y"],
                                   [("w", f32(4, 3, 3, 2))])
    yield "convt_outshape_1d", model("t", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3],
                                                            output_shape=[14])], [("x", [2, 2, 5])], ["y"],
                                     [("w", f32(2, 3, 4))])
    # output_shape one beyond the full output on both axes (10 x 10 from 9 x 9): the last row and column
    # are zeros, then the bias (onnxruntime reads past its buffer for larger differences)
    yield "convt_outshape_larger", model("t", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3, 2],
                                                                output_shape=[10, 10])],
                                         [("x", [1, 2, 3, 4])], ["y"], [("w", f32(2, 3, 3, 3)), ("b", f32(3))])
    empty = np.zeros(0, np.float32)

    def rs(name, attrs, scales=None, sizes=None, shape=(2, 3, 4, 5), opset=17, const=False):
        ins = ["x", "roi", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
        while not ins[-1]:
            ins.pop()
        inits = [("roi", empty)]
        if scales is not None:
            inits.append(("scales", np.array(scales, np.float32)))
        if sizes is not None:
            inits.append(("sizes", i64(*sizes)))
        nodes = [helper.make_node("Resize", ins, ["y"], **attrs)]
        if const:  # scales as a Constant node (torch's form) rather than an initializer
            nodes.insert(0, helper.make_node("Constant", [], ["scales"], value=numpy_helper.from_array(inits.pop()[1])))
        return name, model("r", nodes, [("x", list(shape))], ["y"], inits, opset=opset)
    yield rs("resize_nearest_torch", dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                          nearest_mode="floor"), scales=[1, 1, 2, 2], opset=14)
    yield rs("resize_nearest_default", dict(mode="nearest"), scales=[1, 1, 1.5, 0.6])
    yield rs("resize_bilinear_torch", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
             scales=[1, 1, 2, 2], const=True)
    yield rs("resize_bilinear_align", dict(mode="linear", coordinate_transformation_mode="align_corners"),
             sizes=[2, 3, 7, 9])
    yield rs("resize_linear_down", dict(mode="linear"), scales=[1, 1, 0.5, 0.6])
    yield rs("resize_linear_1d", dict(mode="linear", coordinate_transformation_mode="asymmetric"), scales=[1, 1, 2.5],
             shape=(2, 3, 6))
    yield rs("resize_nearest_ceil_sizes", dict(mode="nearest", nearest_mode="round_prefer_ceil",
                                               coordinate_transformation_mode="half_pixel"), sizes=[2, 3, 9, 3])
    yield rs("resize_axes", dict(mode="linear", axes=[3, 2]), scales=[2.0, 1.5], opset=18, const=True)
    # cubic: torch's bicubic export (A -0.75, align_corners 0 -> half_pixel; 1 -> align_corners),
    # downsampling, A -0.5 with exclude_outside, asymmetric, sizes (onnxruntime's cubic takes 4-D inputs
    # resized on the last two axes)
    yield rs("resize_cubic_torch", dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel",
                                        cubic_coeff_a=-0.75), scales=[1, 1, 2, 2], const=True)
    yield rs("resize_cubic_align", dict(mode="cubic", coordinate_transformation_mode="align_corners"),
             sizes=[2, 3, 7, 9])
    yield rs("resize_cubic_down_excl", dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
             scales=[1, 1, 0.5, 0.6])
    yield rs("resize_cubic_up_excl", dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
             scales=[1, 1, 1.7, 2.5])
    yield rs("resize_cubic_asym", dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
             scales=[1, 1, 2.5, 1.4])
    yield rs("resize_cubic_half_sym", dict(mode="cubic", coordinate_transformation_mode="half_pixel_symmetric"),
             sizes=[2, 3, 9, 3], opset=19)
    S, B, I, H = 5, 2, 4, 3

    def rnn(name, op, D, extra, attrs, opset=14, gates=4):
        W, Rr, Bb = f32(D, gates * H, I), f32(D, gates * H, H), f32(D, 2 * gates * H)
        ins = ["x", "W", "R", "B"] + extra
        inits = [("W", W), ("R", Rr), ("B", Bb)]
        gin = [("x", [S, B, I])]
        if "h0" in extra:
            gin.append(("h0", [D, B, H]))
        if "c0" in extra:
            gin.append(("c0", [D, B, H]))
        outs = ["y", "yh", "yc"] if op == "LSTM" else ["y", "yh"]
        return name, model(name, [helper.make_node(op, ins, outs, hidden_size=H, **attrs)], gin, outs, inits, opset)
    yield rnn("lstm_fwd", "LSTM", 1, [], {})
    yield rnn("lstm_bidir_init", "LSTM", 2, ["", "h0", "c0"], dict(direction="bidirectional"))
    yield rnn("lstm_reverse", "LSTM", 1, [], dict(direction="reverse"), opset=17)
    yield rnn("gru_lbr1", "GRU", 1, ["", "h0"], dict(linear_before_reset=1), gates=3)
    yield rnn("gru_lbr0_bidir", "GRU", 2, [], dict(direction="bidirectional"), gates=3, opset=17)


def train_model():
    """conv -> relu -> max pool -> avg pool (ceil, no pad count) -> ConvTranspose -> global avg pool -> Gemm:
    the pools' and ConvTranspose's gradient rules, trained in tests/vision_ops.py"""
    n = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
         helper.make_node("ConvTranspose", ["a", "tw", "tb"], ["t"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["t"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1)]
    return model("cnn_train", n, [("x", [2, 3, 10, 10])], ["logits"],
                 [("cw", f32(4, 3, 3, 3)), ("cb", f32(4)), ("tw", f32(4, 6, 2, 2)), ("tb", f32(6)),
                  ("fw", f32(5, 6)), ("fb", f32(5))])


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, m in cases():
        onnx.save(m, os.path.join(out, name + ".onnx"))
        print(name)
