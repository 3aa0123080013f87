// A galv.attention whose score functor has an unknown step is one error line
// naming the node.
// RUN: not %galv-opt --passes=shape-infer %s 2>&1 | %FileCheck %s
// CHECK: error: {{.*}}node '/h.0/attn/Softmax' (Softmax): attention: score attribute: unknown step
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>, %arg2: tensor<2x4x8xf32>):
  %0:2 = "galv.attention"(%arg0, %arg1, %arg2) {k_contract = 2 : i64, score = "pow:s,2", v_contract = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>) loc("/h.0/attn/Softmax"("Softmax"))
  "galv.return"(%0#0) : (tensor<2x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q"}, {galv.name = "k"}, {galv.name = "v"}], sym_name = "main"} : () -> ()
