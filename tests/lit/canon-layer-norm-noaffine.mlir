
// canonicalize: LayerNorm without gamma/beta, variance as d*d, eps on the
// left, normalised by multiplying with reciprocal(sqrt): the scale and bias
// are materialised as ones / zeros of the normalised shape.
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<8xf32>}
// CHECK-NEXT: %1 = "galv.constant"() {value = dense<0.000000000e+00> : tensor<8xf32>}
// CHECK-NEXT: %2 = "galv.layer_norm"(%arg0, %0, %1) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32}
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: "galv.mul"
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>):
  %0 = "galv.reduce_mean"(%arg0) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/ln/ReduceMean"("ReduceMean"))
  %1 = "galv.sub"(%arg0, %0) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/ln/Sub"("Sub"))
  %3 = "galv.mul"(%1, %1) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/ln/Mul"("Mul"))
  %4 = "galv.reduce_mean"(%3) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/ln/ReduceMean_1"("ReduceMean_1"))
  %5 = "galv.constant"() {value = dense<9.999999747e-06> : tensor<f32>} : () -> tensor<f32> loc("/ln/Constant_1"("Constant"))
  %6 = "galv.add"(%5, %4) : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32> loc("/ln/Add"("Add"))
  %7 = "galv.sqrt"(%6) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/ln/Sqrt"("Sqrt"))
  %8 = "galv.reciprocal"(%7) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/ln/Reciprocal"("Reciprocal"))
  %9 = "galv.mul"(%8, %1) : (tensor<2x1xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/ln/Mul_1"("Mul_1"))
  "galv.return"(%9) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
