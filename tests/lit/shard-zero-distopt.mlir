// ZeRO-1/2 under 16-bit training (docs/sharding.md, "ZeRO stages", the
// distributed optimizer): w (the fp32 master weight) split over dp like its
// optimizer state; every reader but the update reads one galv.reshard of w
// to whole marked working_copy, right before the first reader, which the
// regather pass leaves alone (the backward reads the same copy); the
// storage pass gathers it as a 16-bit copy of the shard (an 8x6 f32
// weight: 48 bytes per device on the wire, not 96); the update runs on the
// shard and the step's new w is the shard (no all_gather after it). zero1
// all-reduces the gradient, zero2 reduce-scatters it. fp32: w stays whole
// (shard-zero-stages.mlir).
// RUN: %galv-opt --strategy=zero1 --precision=bf16 --passes=loss,autodiff,optimizer,propagate-sharding,regather %s | %FileCheck %s --check-prefix=P1
// RUN: %galv-opt --strategy=zero1 --precision=bf16 --passes=loss,autodiff,optimizer,propagate-sharding,regather,storage,spmd-partition %s | %FileCheck %s --check-prefix=Z1
// RUN: %galv-opt --strategy=zero2 --precision=bf16 --passes=loss,autodiff,optimizer,propagate-sharding,regather,storage,spmd-partition %s | %FileCheck %s --check-prefix=Z2
// RUN: %galv-opt --strategy=zero1 --passes=loss,autodiff,optimizer,propagate-sharding,regather %s | %FileCheck %s --check-prefix=F1
// RUN: %galv-opt --strategy=zero2 --precision=bf16 --passes=loss,autodiff,optimizer,propagate-sharding,regather,storage,spmd-partition %s -o %t && %mlir-check %t
// P1: %[[C:[0-9]+]] = "galv.reshard"(%arg2) {sharding = #galv.sharding<@m, [{}, {}]>, working_copy = 1 : i64} : (tensor<8x6xf32>) -> tensor<8x6xf32> loc("/fc"("MatMul"))
// P1-NEXT: "galv.dot"(%arg0, %[[C]])
// P1-NOT: galv.reshard"(%arg2)
// P1: "galv.dot"(%arg0, {{.*}}) {{.*}} loc("/fc/grad"("MatMul"))
// P1: galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>
// Z1: %[[H:[0-9]+]] = "galv.cast"(%arg2) {gather_copy = 1 : i64, sharding = #galv.sharding<@m, [{"dp"}, {}]>, storage = ["bf16"], to = f32} : (tensor<4x6xf32>) -> tensor<4x6xf32>
// Z1-NEXT: %[[G:[0-9]+]] = "galv.all_gather"(%[[H]]) {axes = ["dp"], bytes = 48 : i64, dim = 0 : i64, {{.*}}storage = ["bf16"], working_copy = 1 : i64} : (tensor<4x6xf32>) -> tensor<8x6xf32> loc("/fc")
// Z1-NEXT: "galv.dot"(%arg0, %[[G]]) {input_storage = "bf16"
// Z1: "galv.all_reduce"({{.*}} {axes = ["dp"], bytes = 192 : i64{{.*}} -> tensor<8x6xf32> loc("/fc/grad")
// Z1-NOT: galv.all_gather
// Z1: "galv.return"(%{{[0-9]+}}, %[[W:[0-9]+]],
// Z1-SAME: tensor<4x6xf32>
// Z1: galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>
// Z1-SAME: galv.name = "opt.m:w", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>, galv.state
// Z2: "galv.all_gather"({{.*}} {axes = ["dp"], bytes = 48 : i64{{.*}}storage = ["bf16"], working_copy = 1 : i64} : (tensor<4x6xf32>) -> tensor<8x6xf32> loc("/fc")
// Z2-NOT: galv.all_reduce{{.*}}tensor<8x6xf32>
// Z2: "galv.reduce_scatter"({{.*}} {axes = ["dp"], bytes = 96 : i64, dim = 0 : i64{{.*}} -> tensor<4x6xf32> loc("/fc/grad")
// Z2-NOT: galv.all_gather
// Z2: galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>
// F1-NOT: working_copy
// F1: galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{}, {}]>
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<8x6xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x6xf32>) -> tensor<4x2x6xf32> loc("/fc"("MatMul"))
  "galv.return"(%0) : (tensor<4x2x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
