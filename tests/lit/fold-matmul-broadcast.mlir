// fold-constants: a galv.matmul whose batch dims broadcast (Falcon's
// multi-query attention: 4 query heads against 1 key head) becomes a static
// expand of the operand with the 1 and a dot over equal batch dims.
// RUN: %galv-opt --passes=shape-infer,fold-constants %s | %FileCheck %s
// CHECK: %0 = "galv.expand"(%arg1) : (tensor<2x1x8x5xf32>) -> tensor<2x4x8x5xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: %1 = "galv.dot"(%arg0, %0) {lhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_batch = array<i64: 0, 1>, rhs_contract = array<i64: 2>} : (tensor<2x4x3x8xf32>, tensor<2x4x8x5xf32>) -> tensor<2x4x3x5xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: "galv.return"(%1)
// CHECK-NOT: galv.matmul
"galv.func"() ({
^bb0(%arg0: tensor<2x4x3x8xf32>, %arg1: tensor<2x1x8x5xf32>):
  %0 = "galv.matmul"(%arg0, %arg1) : (tensor<2x4x3x8xf32>, tensor<2x1x8x5xf32>) -> tensor<*xf32> loc("/MatMul"("MatMul"))
  "galv.return"(%0) : (tensor<*xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q"}, {galv.name = "k"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
