
// canonicalize must do nothing: x / 1.5 inside the erf is not GELU.
// RUN: %galv-opt --passes=canonicalize %s | %FileCheck %s
// CHECK-NOT: "galv.gelu"
// CHECK: "galv.erf"
// CHECK: %7 = "galv.mul"(%5, %6)
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>):
  %0 = "galv.constant"() {value = dense<1.500000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant"("Constant"))
  %1 = "galv.div"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/act/Div"("Div"))
  %2 = "galv.erf"(%1) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Erf"("Erf"))
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_1"("Constant"))
  %4 = "galv.add"(%2, %3) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/act/Add"("Add"))
  %5 = "galv.mul"(%arg0, %4) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul"("Mul"))
  %6 = "galv.constant"() {value = dense<5.000000000e-01> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_2"("Constant"))
  %7 = "galv.mul"(%5, %6) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/act/Mul_1"("Mul_1"))
  "galv.return"(%7) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
