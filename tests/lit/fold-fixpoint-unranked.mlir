// At the fixed point, an op whose operand is still unranked (a Reshape to a
// target of run-time length: its rank depends on data) is one error line
// naming the node; nothing is reported for the ops before it.
// RUN: not %galv-opt --passes=shape-infer,fold-constants %s 2>&1 | %FileCheck %s
// CHECK: galv-opt: error: {{.*}}fold-fixpoint-unranked.mlir: node '/Neg' (Neg): operand 0 of galv.neg stays unranked after shape inference and folding (its rank depends on run-time values)
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<2x6xf32>, %arg1: tensor<?xi64>):
  %0 = "galv.reshape"(%arg0, %arg1) : (tensor<2x6xf32>, tensor<?xi64>) -> tensor<*x!galv.any> loc("/Reshape"("Reshape"))
  %1 = "galv.neg"(%0) : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Neg"("Neg"))
  "galv.return"(%1) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "shape"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
