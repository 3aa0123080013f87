// cluster-layers: an op computed from parameters alone (a tied LM head's
// transposed embedding) is no vertex either: it takes the least group of
// its users, so the stage that reads the view holds the parameter instead
// of receiving the view from the embedding's stage every microbatch. The
// transpose is first in the body but goes to group 1 with the dot reading it.
// RUN: %galv-opt --passes=cluster-layers --layers=2 %s | %FileCheck %s
// CHECK: "galv.transpose"(%arg1) {layer = 1 : i64
// CHECK: "galv.gather"(%arg1, %arg0) {axis = 0 : i64, layer = 0 : i64
// CHECK: "galv.tanh"({{.*}}) {layer = 0 : i64
// CHECK: "galv.dot"({{.*}}) {{.*}}layer = 1 : i64
"galv.func"() ({
^bb0(%arg0: tensor<4xi64>, %arg1: tensor<16x64xf32>):
  %0 = "galv.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<16x64xf32>) -> tensor<64x16xf32> loc("/lm_head/Transpose"("Transpose"))
  %1 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<16x64xf32>, tensor<4xi64>) -> tensor<4x64xf32> loc("/wte/Gather"("Gather"))
  %2 = "galv.tanh"(%1) : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("/h.0/Tanh"("Tanh"))
  %3 = "galv.exp"(%2) : (tensor<4x64xf32>) -> tensor<4x64xf32> loc("/h.1/Exp"("Exp"))
  %4 = "galv.dot"(%3, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x64xf32>, tensor<64x16xf32>) -> tensor<4x16xf32> loc("/lm_head/MatMul"("MatMul"))
  "galv.return"(%4) : (tensor<4x16xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "input_ids"}, {galv.name = "wte", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
