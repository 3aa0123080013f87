
// canonicalize: RMSNorm computed in f32 with a cast back to f16 before the
// f16 weight: rms_norm in f32 (weight cast up), result cast down.
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.cast"(%arg1) {to = f32} : (tensor<8xf16>) -> tensor<8xf32>
// CHECK-NEXT: %1 = "galv.rms_norm"(%arg0, %0) {axis = -1 : i64, epsilon = 9.999999975e-07 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = "galv.cast"(%1) {to = f16} : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: "galv.reciprocal"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf16>):
  %0 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant"("Constant"))
  %1 = "galv.pow"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/norm/Pow"("Pow"))
  %2 = "galv.reduce_mean"(%1) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/norm/ReduceMean"("ReduceMean"))
  %3 = "galv.constant"() {value = dense<9.999999975e-07> : tensor<f32>} : () -> tensor<f32> loc("/norm/Constant_1"("Constant"))
  %4 = "galv.add"(%2, %3) : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32> loc("/norm/Add"("Add"))
  %5 = "galv.sqrt"(%4) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/norm/Sqrt"("Sqrt"))
  %6 = "galv.reciprocal"(%5) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/norm/Reciprocal"("Reciprocal"))
  %7 = "galv.mul"(%arg0, %6) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/norm/Mul"("Mul"))
  %8 = "galv.cast"(%7) {to = f16} : (tensor<2x8xf32>) -> tensor<2x8xf16> loc("/norm/Cast"("Cast"))
  %9 = "galv.mul"(%arg1, %8) : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16> loc("/norm/Mul_1"("Mul_1"))
  "galv.return"(%9) : (tensor<2x8xf16>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
