// autodiff through data movement: slice -> slice_grad (zeros around the
// window), split -> concat (zeros for the unused part), transpose -> the
// inverse permutation, reshape -> reshape back.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: "galv.slice_grad"(%{{[0-9]+}}) {axes = array<i64: 1>, ends = array<i64: 3>, shape = array<i64: 4, 6>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<4x2xf32>) -> tensor<4x6xf32>
// CHECK: "galv.reshape"(%{{[0-9]+}}) : (tensor<4x6xf32>) -> tensor<6x4xf32>
// CHECK: "galv.transpose"(%{{[0-9]+}}) {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK: "galv.expand"
// CHECK: "galv.concat"(%{{[0-9]+}}, %{{[0-9]+}}) {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>):
  %0:2 = "galv.split"(%arg0) {axis = 1 : i64, sizes = array<i64: 6, 2>} : (tensor<4x8xf32>) -> (tensor<4x6xf32>, tensor<4x2xf32>) loc("/split"("Split"))
  %1 = "galv.transpose"(%0#0) {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32> loc("/t"("Transpose"))
  %2 = "galv.reshape"(%1) : (tensor<6x4xf32>) -> tensor<4x6xf32> loc("/r"("Reshape"))
  %3 = "galv.slice"(%2) {axes = array<i64: 1>, ends = array<i64: 3>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<4x6xf32>) -> tensor<4x2xf32> loc("/s"("Slice"))
  %4 = "galv.reduce_sum"(%3) {keepdims = 0 : i64} : (tensor<4x2xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%4) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "p", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
