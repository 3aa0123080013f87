"""no_grad_model.py — writes a tiny ONNX model whose output goes through an
If on a run-time condition (galv.if has no gradient rule), for the error
test in tests/train_torch.sh. usage: no_grad_model.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.ones((3, 3), np.float32), "w")
then_g = helper.make_graph([helper.make_node("Mul", ["y", "y"], ["t"], name="/if_then/Mul")], "then", [],
                           [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
else_g = helper.make_graph([helper.make_node("Neg", ["y"], ["e"], name="/if_else/Neg")], "else", [],
                           [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["y"], name="/MatMul"),
    helper.make_node("ReduceSum", ["x"], ["s"], name="/ReduceSum", keepdims=0),
    helper.make_node("Greater", ["s", "zero"], ["c"], name="/Greater"),
    helper.make_node("If", ["c"], ["logits"], name="/cond/If", then_branch=then_g, else_branch=else_g),
]
zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 3])], initializer=[w, zero])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
