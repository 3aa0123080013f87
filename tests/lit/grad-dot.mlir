// autodiff of dot_general: d lhs = dot(dy, rhs) over rhs's free dims, d rhs
// = dot(lhs, dy) over lhs's free dims: the operands in the order that gives
// w's own dim order [16, 4], so no transpose follows (before: dot(dy, lhs)
// -> [4, 16], then transposed); the input x is no parameter and gets no
// gradient; fan-out of w sums with add.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: %[[ACC:[0-9]+]] = "galv.add"(%{{[0-9]+}}, %{{[0-9]+}}) : (tensor<2x8x4xf32>, tensor<2x8x4xf32>)
// CHECK: "galv.dot"(%arg0, %[[ACC]]) {lhs_batch = array<i64>, lhs_contract = array<i64: 0, 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0, 1>} : (tensor<2x8x16xf32>, tensor<2x8x4xf32>) -> tensor<16x4xf32>
// CHECK-NOT: galv.transpose
// CHECK: "galv.return"(%{{[0-9]+}}, %{{[0-9]+}})
// CHECK-SAME: (tensor<f32>, tensor<16x4xf32>)
"galv.func"() ({
^bb0(%arg0: tensor<2x8x16xf32>, %arg1: tensor<16x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32> loc("/mm"("MatMul"))
  %1 = "galv.mul"(%0, %0) : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32> loc("/sq"("Mul"))
  %2 = "galv.reduce_mean"(%1) {keepdims = 0 : i64} : (tensor<2x8x4xf32>) -> tensor<f32> loc("/mean"("ReduceMean"))
  "galv.return"(%2) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
