// fuse: a lone elementwise op (between non-elementwise ones) is not wrapped.
// RUN: %galv-opt --passes=fuse --verify-each %s | %FileCheck %s
// CHECK-NOT: galv.fused
// CHECK: %1 = "galv.relu"(%0)
// CHECK-NOT: galv.fused
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>):
  %0 = "galv.dot"(%x, %w) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %1 = "galv.relu"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %2 = "galv.softmax"(%1) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sm")
  "galv.return"(%2) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
