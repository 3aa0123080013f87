
// canonicalize: GPT-2 tanh GELU, 0.5x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.gelu"(%arg0) {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul_3")
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: "galv.tanh"
// CHECK-NOT: "galv.pow"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>):
  %0 = "galv.constant"() {value = dense<3.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant"("Constant"))
  %1 = "galv.pow"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/act/Pow"("Pow"))
  %2 = "galv.constant"() {value = dense<4.471499845e-02> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_1"("Constant"))
  %3 = "galv.mul"(%2, %1) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul"("Mul"))
  %4 = "galv.add"(%arg0, %3) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Add"("Add"))
  %5 = "galv.constant"() {value = dense<7.978845835e-01> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_2"("Constant"))
  %6 = "galv.mul"(%5, %4) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul_1"("Mul_1"))
  %7 = "galv.tanh"(%6) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Tanh"("Tanh"))
  %8 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_3"("Constant"))
  %9 = "galv.add"(%8, %7) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Add_1"("Add_1"))
  %10 = "galv.constant"() {value = dense<5.000000000e-01> : tensor<f32>} : () -> tensor<f32> loc("/act/Constant_4"("Constant"))
  %11 = "galv.mul"(%10, %arg0) : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul_2"("Mul_2"))
  %12 = "galv.mul"(%11, %9) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul_3"("Mul_3"))
  "galv.return"(%12) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
