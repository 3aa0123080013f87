// A reduce_mean over dims split over p ranks is rescaled by 1/p in the local
// program (the pending sum adds p local means) for every local extent: 1
// (one row per rank, %1: 4 rows over a 2x2 mesh, p = 4; %3: no axes, the
// whole tensor, as mse's loss), 2 (%2: 4 rows over "a"), and a negative
// axis (%4: axes -2 = dim 0, p = 4). A mean over an unsplit dim (%5) is
// not rescaled. The rescale multiplies by a constant 1/p before the
// all_reduce that completes the sum.
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: %[[M1:.*]] = "galv.reduce_mean"(%arg0) {axes = array<i64: 0>{{.*}}partial={"a":sum, "b":sum}>} : (tensor<1x6xf32>) -> tensor<6xf32>
// CHECK: %[[C1:.*]] = "galv.constant"() {value = dense<2.5{{0*}}e-01> : tensor<f32>}
// CHECK: "galv.mul"(%[[M1]], %[[C1]])
// CHECK: %[[M2:.*]] = "galv.reduce_mean"(%arg1) {axes = array<i64: 0>{{.*}}partial={"a":sum}>} : (tensor<2x6xf32>) -> tensor<6xf32>
// CHECK: %[[C2:.*]] = "galv.constant"() {value = dense<5.0{{0*}}e-01> : tensor<f32>}
// CHECK: "galv.mul"(%[[M2]], %[[C2]])
// CHECK: %[[M3:.*]] = "galv.reduce_mean"(%arg0) {keepdims = 0 {{.*}}} : (tensor<1x6xf32>) -> tensor<f32>
// CHECK: %[[C3:.*]] = "galv.constant"() {value = dense<2.5{{0*}}e-01> : tensor<f32>}
// CHECK: "galv.mul"(%[[M3]], %[[C3]])
// CHECK: %[[M4:.*]] = "galv.reduce_mean"(%arg0) {axes = array<i64: -2>, keepdims = 1 {{.*}}} : (tensor<1x6xf32>) -> tensor<1x6xf32>
// CHECK: %[[C4:.*]] = "galv.constant"() {value = dense<2.5{{0*}}e-01> : tensor<f32>}
// CHECK: "galv.mul"(%[[M4]], %[[C4]])
// CHECK: "galv.reduce_mean"(%arg0) {axes = array<i64: 1>{{.*}}} : (tensor<1x6xf32>) -> tensor<1xf32>
// CHECK-NOT: "galv.mul"
// CHECK: "galv.return"
"galv.mesh"() {axes = #galv.axes<["a"=2, "b"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x6xf32>, %arg1: tensor<4x6xf32>):
  %1 = "galv.reduce_mean"(%arg0) {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x6xf32>) -> tensor<6xf32> loc("/m1")
  %2 = "galv.reduce_mean"(%arg1) {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<4x6xf32>) -> tensor<6xf32> loc("/m2")
  %3 = "galv.reduce_mean"(%arg0) {keepdims = 0 : i64} : (tensor<4x6xf32>) -> tensor<f32> loc("/m3")
  %4 = "galv.reduce_mean"(%arg0) {axes = array<i64: -2>, keepdims = 1 : i64} : (tensor<4x6xf32>) -> tensor<1x6xf32> loc("/m4")
  %5 = "galv.reduce_mean"(%arg0) {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x6xf32>) -> tensor<4xf32> loc("/m5")
  "galv.return"(%1, %2, %3, %4, %5) : (tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<1x6xf32>, tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{"a", "b"}, {}]>}, {galv.name = "z", galv.sharding = #galv.sharding<@m, [{"a"}, {}]>}], res_attrs = [{}, {}, {}, {}, {}], sym_name = "main"} : () -> ()
