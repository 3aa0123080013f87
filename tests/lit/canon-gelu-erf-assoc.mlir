
// canonicalize: erf GELU associated as (0.5 * x) * (1 + erf(1/sqrt2 * x)).
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.gelu"(%arg0) {approximate = "none"}
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: "galv.erf"
// CHECK-NOT: "galv.mul"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>):
  %0 = "galv.constant"() {value = dense<7.071067690e-01> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant"("Constant"))
  %1 = "galv.mul"(%0, %arg0) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul"("Mul"))
  %2 = "galv.erf"(%1) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Erf"("Erf"))
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_1"("Constant"))
  %4 = "galv.add"(%3, %2) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Add"("Add"))
  %6 = "galv.constant"() {value = dense<5.000000000e-01> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_2"("Constant"))
  %5 = "galv.mul"(%arg0, %6) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/act/Mul_1"("Mul_1"))
  %7 = "galv.mul"(%4, %5) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul_2"("Mul_2"))
  "galv.return"(%7) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
