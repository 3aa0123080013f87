
// canonicalize: torch.rsqrt exported as Div(1, Sqrt) (the committed torch
// exports of llama and t5) is an RMSNorm too.
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.rms_norm"(%arg0, %arg1) {axis = -1 : i64, epsilon = 9.999999975e-07 : f32}
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: "galv.div"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>):
  %0 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant"("Constant"))
  %1 = "galv.pow"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/norm/Pow"("Pow"))
  %2 = "galv.reduce_mean"(%1) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/norm/ReduceMean"("ReduceMean"))
  %3 = "galv.constant"() {value = dense<9.999999975e-07> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant_1"("Constant"))
  %4 = "galv.add"(%2, %3) : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32> loc("/norm/Add"("Add"))
  %5 = "galv.sqrt"(%4) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/norm/Sqrt"("Sqrt"))
  %6 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant_2"("Constant"))
  %7 = "galv.div"(%6, %5) : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/norm/Div"("Div"))
  %8 = "galv.mul"(%arg0, %7) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/norm/Mul"("Mul"))
  %9 = "galv.mul"(%arg1, %8) : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/norm/Mul_1"("Mul_1"))
  "galv.return"(%9) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
