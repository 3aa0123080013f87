// Already fully typed IR: shape-infer changes nothing (the output equals the
// input, and no unknown types appear).
// RUN: %galv-opt %s --passes=shape-infer > %t.out
// RUN: %galv-opt %s > %t.in
// RUN: diff %t.in %t.out
// RUN: %FileCheck %s < %t.out
// CHECK: "galv.dot"(%arg0, %arg1) {lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
// CHECK-NOT: ?x
// CHECK-NOT: !galv.any
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3x5xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32> loc("/MatMul"("MatMul"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32> loc("/Softmax"("Softmax"))
  "galv.return"(%1) : (tensor<2x5xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "a"}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
