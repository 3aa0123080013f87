// The overlap pass's window (passes/overlap.c, ir/comm_sync.h): at most
// two layers' gradient reductions in flight. Three chained layers (dot +
// relu, found by structure) trained with AdamW over dp=2: each gradient
// all-reduce is posted right after the backward dot that makes it; the
// first of each layer after the first in backward order (l2's, then l1's)
// is marked wait_posted: before posting it the program waits for the calls
// posted before the previous marked one (the memory plan frees their
// operands there), the previous layer's stay in flight; l3's, the first
// posted, is not marked. Under ZeRO-2 (zero2) the reduce-scatters
// spmd-partition puts where each gradient is made are marked the same way.
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap %s | %FileCheck %s
// RUN: %galv-opt --strategy=zero2 --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap %s | %FileCheck %s --check-prefix=Z2
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,spmd-partition,overlap,fuse,memory-plan %s -o %t && %mlir-check %t
// CHECK: "galv.dot"{{.*}} loc("/l3/grad"
// CHECK: "galv.all_reduce"
// CHECK-NOT: wait_posted
// CHECK-SAME: loc("optimizer/adamw/w3")
// CHECK: "galv.dot"{{.*}} loc("/l2/grad"
// CHECK: "galv.all_reduce"{{.*}}wait_posted = 1{{.*}} loc("optimizer/adamw/w2")
// CHECK: "galv.dot"{{.*}} loc("/l1/grad"
// CHECK: "galv.all_reduce"{{.*}}wait_posted = 1{{.*}} loc("optimizer/adamw/w1")
// Z2: "galv.reduce_scatter"
// Z2-NOT: wait_posted
// Z2-SAME: loc("/l3/grad"
// Z2: "galv.reduce_scatter"{{.*}}wait_posted = 1{{.*}} loc("/l2/grad"
// Z2: "galv.reduce_scatter"{{.*}}wait_posted = 1{{.*}} loc("/l1/grad"
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("/l1"("MatMul"))
  %1 = "galv.relu"(%0) : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32> loc("/r1"("Relu"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("/l2"("MatMul"))
  %3 = "galv.relu"(%2) : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32> loc("/r2"("Relu"))
  %4 = "galv.dot"(%3, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("/l3"("MatMul"))
  %5 = "galv.relu"(%4) : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32> loc("/r3"("Relu"))
  "galv.return"(%5) : (tensor<4x2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "w3", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
