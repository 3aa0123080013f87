// A fused attention with dropout under data parallelism
// (docs/fused-attention.md): spmd-partition gives galv.attention and its
// galv.attention_grad this rank's shard offsets of the scores [4, 4, 4]
// split on the batch dim, [2, 0, 0] x the dp index, as a last i64 [3]
// operand, and `rows` = 4 (the global dim 0), as it gives galv.dropout:
// every rank draws the mask one device draws.
// RUN: %galv-opt --strategy=dp --passes=fuse-attention,loss,autodiff,propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --passes=fuse-attention,loss,autodiff,propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: %[[I:[0-9]+]] = "galv.axis_index"() {axes = ["dp"], mesh = "m"}
// CHECK-NEXT: %[[E:[0-9]+]] = "galv.constant"() {value = dense<[2, 0, 0]> : tensor<3xi64>}
// CHECK-NEXT: %[[O:[0-9]+]] = "galv.mul"(%[[E]], %[[I]])
// CHECK-NEXT: "galv.attention"(%{{[0-9]+}}, %arg0, %arg0, %[[O]]) {id = 2 : i64, k_contract = 2 : i64, ratio = 1.000000015e-01 : f32, rows = 4 : i64, score = "", seed = 7 : i64, {{.*}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<3xi64>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
// CHECK: %[[I2:[0-9]+]] = "galv.axis_index"() {axes = ["dp"], mesh = "m"}
// CHECK-NEXT: %[[E2:[0-9]+]] = "galv.constant"() {value = dense<[2, 0, 0]> : tensor<3xi64>}
// CHECK-NEXT: %[[O2:[0-9]+]] = "galv.mul"(%[[E2]], %[[I2]])
// CHECK-NEXT: "galv.attention_grad"({{.*}}, %[[O2]]) {id = 2 : i64, k_contract = 2 : i64, ratio = 1.000000015e-01 : f32, rows = 4 : i64, score = "", seed = 7 : i64,
// CHECK-NOT: "galv.dropout"
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x4x8xf32>, %arg1: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> tensor<4x4x8xf32> loc("/h.0/attn/q"("MatMul"))
  %1 = "galv.dot"(%0, %arg0) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %2 = "galv.softmax"(%1) {axis = -1 : i64} : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %3 = "galv.dropout"(%2) {id = 2 : i64, ratio = 1.000000015e-01 : f32, seed = 7 : i64} : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("/h.0/attn/Dropout"("Dropout"))
  %4 = "galv.dot"(%3, %arg0) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  "galv.return"(%4) : (tensor<4x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
