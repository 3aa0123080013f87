// accumulate (--microbatches 2): the function's inputs are one microbatch
// (2 rows); they become the batch (4 rows), each microbatch reads rows
// {2j + k} (reshape to [2, 2, ..], slice k on dim 1), the body is cloned per
// microbatch with autodiff's seed replaced by the microbatch's weight (its
// counted labels over all counted labels), the loss is the weighted sum and
// each gradient a sum at "accumulate/P", added where the microbatch's
// gradient is computed. The result feeds the optimizer, re-parses and MLIR
// reads it. --microbatches 1 changes nothing.
// RUN: %galv-opt --passes=loss,autodiff,accumulate --microbatches=2 %s > %t.mlir
// RUN: %FileCheck %s < %t.mlir
// RUN: %galv-opt --passes=loss,autodiff,accumulate,optimizer --microbatches=2 %s > %t2.mlir
// RUN: %galv-opt %t2.mlir | diff - %t2.mlir
// RUN: %mlir-check %t2.mlir
// RUN: %galv-opt --passes=loss,autodiff,accumulate --microbatches=1 %s | %FileCheck %s --check-prefix=ONE
// CHECK: ^bb0(%arg0: tensor<4x4xi64>, %arg1: tensor<4x4xi64>, %arg2: tensor<8x6xf32>):
// CHECK: %[[IGN:[0-9]+]] = "galv.equal"({{.*}}) : (tensor<2x2x4xi64>, tensor<i64>) -> tensor<2x2x4xi1> loc("accumulate")
// CHECK: %[[CNT:[0-9]+]] = "galv.reduce_sum"({{.*}}) {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x2x4xf32>) -> tensor<2xf32>
// CHECK: %[[TOT:[0-9]+]] = "galv.max"
// CHECK: %[[W:[0-9]+]] = "galv.div"(%[[CNT]], %[[TOT]]) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK: "galv.slice"({{.*}}) {axes = array<i64: 1>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x2x4xi64>) -> tensor<2x1x4xi64> loc("accumulate/microbatch")
// CHECK: %[[W0:[0-9]+]] = "galv.reshape"({{.*}}) : (tensor<1xf32>) -> tensor<f32> loc("accumulate/microbatch")
// CHECK: %[[L0:[0-9]+]] = "galv.cross_entropy"
// CHECK: %[[WL0:[0-9]+]] = "galv.mul"(%[[L0]], %[[W0]]) {{.*}} loc("accumulate/loss")
// CHECK: "galv.cross_entropy_grad"(%[[W0]],
// CHECK: %[[G0:[0-9]+]] = "galv.gather_grad"
// CHECK: "galv.slice"({{.*}}) {axes = array<i64: 1>, ends = array<i64: 2>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x2x4xi64>) -> tensor<2x1x4xi64> loc("accumulate/microbatch")
// CHECK: %[[W1:[0-9]+]] = "galv.reshape"({{.*}}) : (tensor<1xf32>) -> tensor<f32> loc("accumulate/microbatch")
// CHECK: %[[L1:[0-9]+]] = "galv.cross_entropy"
// CHECK: %[[WL1:[0-9]+]] = "galv.mul"(%[[L1]], %[[W1]])
// CHECK: %[[L:[0-9]+]] = "galv.add"(%[[WL0]], %[[WL1]]) {{.*}} loc("accumulate/loss")
// CHECK: "galv.cross_entropy_grad"(%[[W1]],
// CHECK: %[[G1:[0-9]+]] = "galv.gather_grad"
// CHECK: %[[G:[0-9]+]] = "galv.add"(%[[G0]], %[[G1]]) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32> loc("accumulate/emb")
// CHECK: "galv.return"(%[[L]], %[[G]])
// CHECK-NOT: "galv.cross_entropy"
// ONE: ^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<2x4xi64>, %arg2: tensor<8x6xf32>):
// ONE-NOT: accumulate
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<8x6xf32>):
  %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/emb"("Gather"))
  "galv.return"(%0) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "emb", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
