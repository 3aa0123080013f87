// A pipeline stage's crossing results kept split over the batch
// (docs/pipeline.md, "Cross-mesh transfers"): the head stage of a training
// pipeline (the received hidden state "pp.60.0" and the labels split over
// dp; results the loss, the embedding's gradient and d hidden sent back,
// "grad:pp.60.0"). Its return names grad:pp.60.0 in batch_split without
// batch_axes: the result stays in its own sharding, dim 0 over dp (a batch
// split), so no all_gather at the return (each rank sends its rows back);
// the loss and the embedding's gradient (not listed) are reduced as before.
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["dp"=2]>, predicted_bytes = [{{[0-9]+}}, 0, 0, 0], sym_name = "m"}
// CHECK-NOT: "galv.all_gather"
// CHECK: "galv.all_reduce"({{.*}} : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("return")
// CHECK-NOT: "galv.all_gather"
// CHECK: "galv.return"({{.*}}) {batch_split = ["grad:pp.60.0"]} : (tensor<f32>, tensor<8x4xf32>, tensor<2x2x4xf32>)
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
  "galv.return"(%2, %6, %5) {batch_split = ["grad:pp.60.0"]} : (tensor<f32>, tensor<8x4xf32>, tensor<4x2x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "labels", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>}, {galv.name = "transformer.wte.weight", galv.param}, {galv.name = "pp.60.0", galv.sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}], res_attrs = [{galv.name = "loss"}, {galv.name = "grad:transformer.wte.weight"}, {galv.name = "grad:pp.60.0"}], sym_name = "main"} : () -> ()
