// The head stage of a bf16 training pipeline with tied embeddings (the
// stage program galvc builds: the received hidden state "pp.60.0" and the
// labels split over dp, the tied embedding read through a transpose; results
// the loss, the embedding's gradient and d hidden sent back, "grad:pp.60.0").
// The stage's results are whole for the runtime, but its return does not ask
// propagation for replicated values: d hidden = d logits . W is computed
// split over dp like d logits and all-gathered at the return ([4,2,4] bf16:
// 32 bytes per device), not d logits ([4,2,8]) before it (the all_gather of
// /lm_head/MatMul/grad that made every dp plan of a bf16 head stage fail the
// byte check: it moved fp32, 128 bytes, where the planner predicted 64).
// RUN: %galv-opt --precision=bf16 --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --precision=bf16 --passes=propagate-sharding,storage,spmd-partition %s | %FileCheck %s
// PROP: "galv.cross_entropy_grad"({{.*}}sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>
// PROP-NOT: "galv.reshard"(%{{[0-9]+}}) {sharding = #galv.sharding<@m, [{}, {}, {}]>} : (tensor<4x2x8xf32>)
// PROP: "galv.dot"({{.*}}sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32> loc("/lm_head/MatMul/grad")
// CHECK: "galv.mesh"() {axes = #galv.axes<["dp"=2]>, predicted_bytes = [136, 32, 0, 0], sym_name = "m"}
// CHECK-NOT: "galv.all_gather"({{.*}}tensor<2x2x8xf32>
// CHECK: "galv.all_reduce"({{.*}}bytes = 128 : i64{{.*}} : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("return")
// CHECK: "galv.all_gather"({{.*}}bytes = 32 : i64{{.*}}storage = ["bf16"]} : (tensor<2x2x4xf32>) -> tensor<4x2x4xf32> loc("return")
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2xi64>, %arg1: tensor<8x4xf32>, %arg2: tensor<4x2x4xf32>):
  %0 = "galv.transpose"(%arg1) {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32> loc("/lm_head/Transpose")
  %1 = "galv.dot"(%arg2, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32> loc("/lm_head/MatMul")
  %2 = "galv.cross_entropy"(%1, %arg0) {ignore_index = -100 : i64} : (tensor<4x2x8xf32>, tensor<4x2xi64>) -> tensor<f32> loc("loss/cross_entropy")
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("autodiff/seed")
  %4 = "galv.cross_entropy_grad"(%3, %1, %arg0) {ignore_index = -100 : i64} : (tensor<f32>, tensor<4x2x8xf32>, tensor<4x2xi64>) -> tensor<4x2x8xf32> loc("loss/cross_entropy/grad")
  %5 = "galv.dot"(%4, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32> loc("/lm_head/MatMul/grad")
  %6 = "galv.dot"(%4, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 0, 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0, 1>} : (tensor<4x2x8xf32>, tensor<4x2x4xf32>) -> tensor<8x4xf32> loc("/lm_head/MatMul/grad")
  "galv.return"(%2, %6, %5) : (tensor<f32>, tensor<8x4xf32>, tensor<4x2x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "labels", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>}, {galv.name = "transformer.wte.weight", galv.param}, {galv.name = "pp.60.0", galv.sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}], res_attrs = [{galv.name = "loss"}, {galv.name = "grad:transformer.wte.weight"}, {galv.name = "grad:pp.60.0"}], sym_name = "main"} : () -> ()
