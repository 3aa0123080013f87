// spmd-mean-extent.mlir's program with every f32 value stored bf16 (the
// storage pass on the global program, --precision=bf16): the 1/p rescale
// that stands for a split reduce_mean's pending sum is stored like the mean,
// so the all_reduces move 2 bytes per element, the 51 bytes per device the
// planner predicted from the global program (stored f32 they moved 102 and
// spmd-partition refused the program).
// RUN: %galv-opt --precision=bf16 --passes=propagate-sharding,storage,spmd-partition %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["a"=2, "b"=2]>, predicted_bytes = [51, 6, 0, 0], sym_name = "m"}
// CHECK: %[[M1:[0-9]+]] = "galv.mul"({{.*}}partial={"a":sum, "b":sum}>, storage = ["bf16"]} : (tensor<6xf32>, tensor<f32>)
// CHECK: %[[M2:[0-9]+]] = "galv.mul"({{.*}}partial={"a":sum}>, storage = ["bf16"]} : (tensor<6xf32>, tensor<f32>)
// CHECK: "galv.all_reduce"(%[[M1]]) {axes = ["a", "b"], bytes = 18 : i64, {{.*}}storage = ["bf16"]}
// CHECK: "galv.all_reduce"(%[[M2]]) {axes = ["a"], bytes = 12 : i64, {{.*}}storage = ["bf16"]}
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
