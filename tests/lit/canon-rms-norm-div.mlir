
// canonicalize: T5 RMSNorm written with Div(x, sqrt); the scalar Mul after
// the weight is not part of the norm and stays.
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.rms_norm"(%arg0, %arg1) {axis = -1 : i64, epsilon = 9.999999975e-07 : f32}
// CHECK-NEXT: %1 = "galv.constant"() {value = dense<1.767766923e-01> : tensor<f32>}
// CHECK-NEXT: %2 = "galv.mul"(%0, %1)
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: "galv.div"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>):
  %0 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant"("Constant"))
  %1 = "galv.pow"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/norm/Pow"("Pow"))
  %2 = "galv.reduce_mean"(%1) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/norm/ReduceMean"("ReduceMean"))
  %3 = "galv.constant"() {value = dense<9.999999975e-07> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant_1"("Constant"))
  %4 = "galv.add"(%2, %3) : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32> loc("/norm/Add"("Add"))
  %5 = "galv.sqrt"(%4) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/norm/Sqrt"("Sqrt"))
  %6 = "galv.div"(%arg0, %5) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/norm/Div"("Div"))
  %8 = "galv.mul"(%arg1, %6) : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/norm/Mul"("Mul"))
  %9 = "galv.constant"() {value = dense<1.767766923e-01> : tensor<f32>} : () -> tensor<f32> loc("/Constant"("Constant"))
  %10 = "galv.mul"(%8, %9) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/Mul"("Mul"))
  "galv.return"(%10) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
