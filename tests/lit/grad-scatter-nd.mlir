// autodiff of scatter_nd and gather_nd: scatter_nd's data gets dy with the
// scattered rows zeroed (scatter_nd of zeros), its updates dy gathered at
// the tuples (gather_nd); gather_nd's data gets dy scatter-added into zeros
// (scatter_nd add); the integer indices get none.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK-DAG: "galv.gather_nd"(%{{[0-9]+}}, %arg0) : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32> loc("/scatter/grad"("ScatterND"))
// CHECK-DAG: "galv.scatter_nd"(%{{[0-9]+}}, %arg0, %{{[0-9]+}}) {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("/scatter/grad"("ScatterND"))
// CHECK-DAG: "galv.scatter_nd"(%{{[0-9]+}}, %arg0, %{{[0-9]+}}) {reduction = "add"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("/gather/grad"("GatherND"))
"galv.func"() ({
^bb0(%arg0: tensor<2x1xi64>, %arg1: tensor<4x3xf32>, %arg2: tensor<4x3xf32>):
  %0 = "galv.gather_nd"(%arg2, %arg0) : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32> loc("/gather"("GatherND"))
  %1 = "galv.scatter_nd"(%arg1, %arg0, %0) {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("/scatter"("ScatterND"))
  %2 = "galv.mul"(%1, %1) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/sq"("Mul"))
  %3 = "galv.reduce_sum"(%2) {keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%3) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "idx"}, {galv.name = "x", galv.param}, {galv.name = "y", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
