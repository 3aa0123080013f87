// The bucket pass (passes/bucket.c, docs/planner.md "Gradient buckets") on
// two dots trained with AdamW over dp=2: after the overlap pass each
// gradient has its own all_reduce; the pass packs both gradients (flattened
// views, w2's first: the backward makes it first) into one buffer where w1's
// gradient is made, reduces it with one all_reduce (bucket = 2, bytes the
// sum 120 + 192), and slices each reduced gradient out before its update.
// The loss's scalar all_reduces are read at once and stay alone.
// RUN: %galv-opt --strategy=dp --bucket-mb=25 --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap,bucket %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --bucket-mb=25 --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap,bucket,fuse,memory-plan %s -o %t && %mlir-check %t
// CHECK: "galv.all_reduce"{{.*}} -> tensor<f32> loc("loss/cross_entropy")
// CHECK: "galv.all_reduce"{{.*}} -> tensor<f32> loc("loss/cross_entropy")
// CHECK-NOT: "galv.all_reduce"
// CHECK: %[[G1:[0-9]+]] = "galv.dot"{{.*}} -> tensor<8x6xf32> loc("/fc1/grad"
// CHECK: %[[P:[0-9]+]] = "galv.concat"({{.*}}) {axis = 0 : i64} : (tensor<30xf32>, tensor<48xf32>) -> tensor<78xf32>
// CHECK-NEXT: %[[R:[0-9]+]] = "galv.all_reduce"(%[[P]]) {axes = ["dp"], bucket = 2 : i64, bytes = 312 : i64, {{.*}} -> tensor<78xf32>
// CHECK-NOT: "galv.all_reduce"
// CHECK: "galv.slice"(%[[R]]) {axes = array<i64: 0>, ends = array<i64: 78>, starts = array<i64: 30>{{.*}} -> tensor<48xf32>
// CHECK: "galv.slice"(%[[R]]) {axes = array<i64: 0>, ends = array<i64: 30>, starts = array<i64: 0>{{.*}} -> tensor<30xf32>
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<8x6xf32>, %arg2: tensor<6x5xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x6xf32>) -> tensor<4x2x6xf32> loc("/fc1"("MatMul"))
  %1 = "galv.dot"(%0, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x6xf32>, tensor<6x5xf32>) -> tensor<4x2x5xf32> loc("/fc2"("MatMul"))
  "galv.return"(%1) : (tensor<4x2x5xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
