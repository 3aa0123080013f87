// Megatron vocab-parallel cross entropy (tp preset): the head is split on
// its vocab dim, the logits stay split (no all_gather): per row the local
// max is all_reduce(max)'d, the local sum of exp(x - max) all_reduce(sum)'d,
// the label's logit picked only by the rank whose vocab block holds it
// (labels shifted by galv.axis_index x 4) and all_reduce(sum)'d; the
// gradient reuses those row statistics and needs no communication.
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// PROP: "galv.dot"(%arg0, %arg1) {{.*}}sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>
// PROP-NOT: galv.reshard
// PROP: "galv.cross_entropy_grad"({{.*}}sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>
// The planner's prediction from the global program (planner/comm_predict.c):
// 8 rows x 4 bytes all-reduced over tp (p = 2) three times, 2*1*32/2 = 32
// each, and the logits' gradient gathered at the return (2x4x4 x 4 bytes,
// 1 * 128):
// CHECK: "galv.mesh"() {axes = #galv.axes<["tp"=2]>, predicted_bytes = [96, 128, 0, 0], sym_name = "m"}
// CHECK: ^bb0(%arg0: tensor<2x4x6xf32>, %arg1: tensor<6x4xf32>, %arg2: tensor<2x4xi64>)
// CHECK-NOT: galv.all_gather
// CHECK: %[[MX:[0-9]+]] = "galv.reduce_max"(%{{[0-9]+}}) {axes = array<i64: 2>{{.*}} : (tensor<2x4x4xf32>) -> tensor<2x4x1xf32>
// CHECK: "galv.all_reduce"(%[[MX]]) {axes = ["tp"], bytes = 32 : i64, mesh = "m", reduce = "max"}
// CHECK: "galv.exp"
// CHECK: "galv.all_reduce"(%{{[0-9]+}}) {axes = ["tp"], bytes = 32 : i64, mesh = "m", reduce = "sum"}
// CHECK: "galv.log"
// CHECK: "galv.axis_index"() {axes = ["tp"], mesh = "m"} : () -> tensor<i64>
// CHECK: "galv.equal"({{.*}} : (tensor<2x4x1xi64>, tensor<4xi64>) -> tensor<2x4x4xi1>
// CHECK-NOT: galv.all_gather
// CHECK: "galv.all_reduce"(%{{[0-9]+}}) {axes = ["tp"], bytes = 32 : i64, mesh = "m", reduce = "sum"}
// CHECK-NOT: galv.cross_entropy
// CHECK-NOT: galv.all_
// CHECK: "galv.all_gather"({{.*}}loc("return")
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x6xf32>, %arg1: tensor<6x8xf32>, %arg2: tensor<2x4xi64>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32> loc("/lm_head"("MatMul"))
  %1 = "galv.cross_entropy"(%0, %arg2) {ignore_index = -100 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32> loc("loss/cross_entropy")
  %2 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/one")
  %3 = "galv.cross_entropy_grad"(%2, %0, %arg2) {ignore_index = -100 : i64} : (tensor<f32>, tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("loss/cross_entropy/grad")
  "galv.return"(%1, %3) : (tensor<f32>, tensor<2x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "h"}, {galv.name = "w", galv.param}, {galv.name = "labels"}], res_attrs = [{}, {}], sym_name = "main"} : () -> ()
