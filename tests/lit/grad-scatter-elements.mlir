// autodiff of gather_elements and scatter_elements: gather_elements' data
// gets dy scatter-added into zeros (scatter_elements add); scatter_elements'
// data gets dy with the written elements zeroed and its updates dy gathered
// at the indices; the integer indices get none.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK-DAG: "galv.gather_elements"(%{{[0-9]+}}, %arg0) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32> loc("/scatter/grad"("ScatterElements"))
// CHECK-DAG: "galv.scatter_elements"(%{{[0-9]+}}, %arg0, %{{[0-9]+}}) {axis = 1 : i64, reduction = "none"} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32> loc("/scatter/grad"("ScatterElements"))
// CHECK-DAG: "galv.scatter_elements"(%{{[0-9]+}}, %arg0, %{{[0-9]+}}) {axis = 1 : i64, reduction = "add"} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32> loc("/gather/grad"("GatherElements"))
"galv.func"() ({
^bb0(%arg0: tensor<2x2xi64>, %arg1: tensor<2x3xf32>, %arg2: tensor<2x3xf32>):
  %0 = "galv.gather_elements"(%arg2, %arg0) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32> loc("/gather"("GatherElements"))
  %1 = "galv.scatter_elements"(%arg1, %arg0, %0) {axis = 1 : i64, reduction = "none"} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32> loc("/scatter"("ScatterElements"))
  %2 = "galv.mul"(%1, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("/sq"("Mul"))
  %3 = "galv.reduce_sum"(%2) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%3) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "idx"}, {galv.name = "x", galv.param}, {galv.name = "y", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
