// Vocab-parallel cross entropy's gradient lowered by spmd-partition (here
// over dp rows) is stored as the storage pass stored cross_entropy_grad's
// result on the global program (bf16), so a reshard of it moves the 2-byte
// elements the planner predicted. d hidden is pinned replicated (the
// propagation a stage's return used to ask for): d logits [4,2,8] is
// all-gathered after the loss's gradient, 64 bytes per device, as predicted
// (stored fp32 it moved 128 and spmd-partition refused the program).
// RUN: %galv-opt --precision=bf16 --passes=propagate-sharding,storage,spmd-partition %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["dp"=2]>, predicted_bytes = [136, 64, 0, 0], sym_name = "m"}
// CHECK: %[[G:[0-9]+]] = "galv.mul"({{.*}}storage = ["bf16"]} : (tensor<2x2x8xf32>, tensor<f32>) -> tensor<2x2x8xf32> loc("loss/cross_entropy/grad")
// CHECK: "galv.all_gather"(%[[G]]) {axes = ["dp"], bytes = 64 : i64{{.*}}storage = ["bf16"]} : (tensor<2x2x8xf32>) -> tensor<4x2x8xf32>
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2xi64>, %arg1: tensor<8x4xf32>, %arg2: tensor<4x2x4xf32>):
  %0 = "galv.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32> loc("/lm_head/Transpose")
  %1 = "galv.dot"(%arg2, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32> loc("/lm_head/MatMul")
  %2 = "galv.cross_entropy"(%1, %arg0) {ignore_index = -100 : i64} : (tensor<4x2x8xf32>, tensor<4x2xi64>) -> tensor<f32> loc("loss/cross_entropy")
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("autodiff/seed")
  %4 = "galv.cross_entropy_grad"(%3, %1, %arg0) {ignore_index = -100 : i64} : (tensor<f32>, tensor<4x2x8xf32>, tensor<4x2xi64>) -> tensor<4x2x8xf32> loc("loss/cross_entropy/grad")
  %5 = "galv.dot"(%4, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>, sharding = #galv.sharding<@m, [{}, {}, {}]>} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32> loc("/lm_head/MatMul/grad")
  %6 = "galv.dot"(%4, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 0, 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0, 1>} : (tensor<4x2x8xf32>, tensor<4x2x4xf32>) -> tensor<8x4xf32> loc("/lm_head/MatMul/grad")
  "galv.return"(%2, %6, %5) : (tensor<f32>, tensor<8x4xf32>, tensor<4x2x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "labels", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>}, {galv.name = "transformer.wte.weight", galv.param}, {galv.name = "pp.60.0", galv.sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}], res_attrs = [{galv.name = "loss"}, {galv.name = "grad:transformer.wte.weight"}, {galv.name = "grad:pp.60.0"}], sym_name = "main"} : () -> ()
