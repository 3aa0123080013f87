// autodiff of layer_norm (statistics recomputed from x: mean, variance,
// rsqrt) and softmax (y (g - sum(g y))); scale and bias gradients summed
// over the leading dims.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: "galv.reduce_sum"{{.*}}{axes = array<i64: 1>, keepdims = 1 : i64}{{.*}}loc("/sm/grad"("Softmax"))
// CHECK: "galv.reduce_mean"(%arg0) {axes = array<i64: 1>, keepdims = 1 : i64}{{.*}}loc("/ln/grad"("LayerNormalization"))
// CHECK: "galv.sqrt"
// CHECK-NEXT: "galv.reciprocal"
// CHECK: "galv.return"(%3, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>):
  %0 = "galv.layer_norm"(%arg0, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("/ln"("LayerNormalization"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/sm"("Softmax"))
  %2 = "galv.mul"(%1, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/m"("Mul"))
  %3 = "galv.reduce_sum"(%2) {keepdims = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%3) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.param}, {galv.name = "g", galv.param}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
