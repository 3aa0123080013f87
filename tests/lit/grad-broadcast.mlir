// autodiff: mul with a broadcast operand; the broadcast gradient is summed
// over the broadcast dim and reshaped back; res names grad:<param>.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: %[[ONE:[0-9]+]] = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>}
// CHECK: %[[DY:[0-9]+]] = "galv.expand"
// CHECK: %[[DX:[0-9]+]] = "galv.mul"(%[[DY]], %arg1) {{.*}} loc("/mul/grad"("Mul"))
// CHECK: %[[P:[0-9]+]] = "galv.mul"(%[[DY]], %arg0)
// CHECK: %[[S:[0-9]+]] = "galv.reduce_sum"(%[[P]]) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<2x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[DB:[0-9]+]] = "galv.reshape"(%[[S]]) : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK: "galv.return"(%1, %[[DX]], %[[DB]])
// CHECK: res_attrs = [{galv.name = "loss"}, {galv.name = "grad:x"}, {galv.name = "grad:b"}]
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>):
  %0 = "galv.mul"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("/mul"("Mul"))
  %1 = "galv.reduce_sum"(%0) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%1) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.param}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
