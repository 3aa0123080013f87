// The overlap pass (passes/overlap.c, docs/planner.md "Step time: two
// streams") on two dots trained with AdamW over dp=2: spmd-partition puts
// each gradient all-reduce at its parameter's update (after the whole
// backward); the pass moves w2's right after the backward dot that makes
// its gradient, before the first layer's backward, and w1's after its own;
// the updates still read them. Without the pass the order is the update's.
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition %s | %FileCheck %s --check-prefix=OFF
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap,fuse,memory-plan %s -o %t && %mlir-check %t
// CHECK: %[[G2:[0-9]+]] = "galv.dot"{{.*}} -> tensor<6x5xf32> loc("/fc2/grad"
// CHECK-NEXT: "galv.all_reduce"(%[[G2]]) {{.*}} -> tensor<6x5xf32> loc("optimizer/adamw/w2")
// CHECK-NEXT: "galv.dot"{{.*}} loc("/fc1/grad"
// CHECK: "galv.all_reduce"{{.*}} -> tensor<8x6xf32> loc("optimizer/adamw/w1")
// CHECK: loc("optimizer/adamw/w2")
// OFF: loc("/fc1/grad"
// OFF: "galv.all_reduce"{{.*}} -> tensor<{{8x6|6x5}}xf32> loc("optimizer/adamw/w{{1|2}}")
// OFF: "galv.all_reduce"{{.*}} -> tensor<{{8x6|6x5}}xf32> loc("optimizer/adamw/w{{1|2}}")
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<8x6xf32>, %arg2: tensor<6x5xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x6xf32>) -> tensor<4x2x6xf32> loc("/fc1"("MatMul"))
  %1 = "galv.dot"(%0, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x6xf32>, tensor<6x5xf32>) -> tensor<4x2x5xf32> loc("/fc2"("MatMul"))
  "galv.return"(%1) : (tensor<4x2x5xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
