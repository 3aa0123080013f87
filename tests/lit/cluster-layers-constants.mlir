// cluster-layers: constants are no vertices of the op graph. Two groups of
// two ops each; the constant first in the body takes the group of its only
// user (the last op), and no group consists of constants alone (which
// would make an empty pipeline stage).
// RUN: %galv-opt --passes=cluster-layers --layers=2 %s | %FileCheck %s
// CHECK: "galv.constant"() {layer = 1 : i64, layer_block = 1 : i64
// CHECK: "galv.exp"(%arg0) {layer = 0 : i64
// CHECK: "galv.tanh"({{.*}}) {layer = 0 : i64
// CHECK: "galv.neg"({{.*}}) {layer = 1 : i64
// CHECK: "galv.add"({{.*}}) {layer = 1 : i64
"galv.func"() ({
^bb0(%arg0: tensor<64x64xf32>):
  %0 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/c"("Constant"))
  %1 = "galv.exp"(%arg0) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/exp"("Exp"))
  %2 = "galv.tanh"(%1) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/tanh"("Tanh"))
  %3 = "galv.neg"(%2) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/neg"("Neg"))
  %4 = "galv.add"(%3, %0) : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> loc("/add"("Add"))
  "galv.return"(%4) : (tensor<64x64xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
