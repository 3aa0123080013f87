// fold-constants: a 2-D lhs against a batched rhs (numpy: [batch, M, N])
// is a dot ([M, batch, N]) and the transpose that puts the batch first.
// RUN: %galv-opt --passes=shape-infer,fold-constants %s | %FileCheck %s
// CHECK: %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>} : (tensor<3x4xf32>, tensor<2x4x6xf32>) -> tensor<3x2x6xf32>
// CHECK-NEXT: %1 = "galv.transpose"(%0) {perm = array<i64: 1, 0, 2>} : (tensor<3x2x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: "galv.return"(%1)
"galv.func"() ({
^bb0(%arg0: tensor<3x4xf32>, %arg1: tensor<2x4x6xf32>):
  %0 = "galv.matmul"(%arg0, %arg1) : (tensor<3x4xf32>, tensor<2x4x6xf32>) -> tensor<*xf32> loc("/MatMul"("MatMul"))
  "galv.return"(%0) : (tensor<*xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
