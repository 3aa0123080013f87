// fold-constants: a MatMul operand that shape-infer and folding leave
// unranked (its shape comes from a run-time value) is one error line naming
// the node.
// RUN: not %galv-opt --passes=shape-infer,fold-constants %s 2>&1 | %FileCheck %s
// CHECK: galv-opt: error: {{.*}}fold-matmul-unranked.mlir: node '/MatMul' (MatMul): cannot determine the operand ranks of MatMul (-1, 2) after shape inference and folding
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<3x4xf32>, %arg1: tensor<4x6xf32>, %arg2: tensor<?xi64>):
  %0 = "galv.expand"(%arg0, %arg2) : (tensor<3x4xf32>, tensor<?xi64>) -> tensor<*xf32> loc("/Expand"("Expand"))
  %1 = "galv.matmul"(%0, %arg1) : (tensor<*xf32>, tensor<4x6xf32>) -> tensor<*xf32> loc("/MatMul"("MatMul"))
  "galv.return"(%1) : (tensor<*xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}, {galv.name = "s"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
