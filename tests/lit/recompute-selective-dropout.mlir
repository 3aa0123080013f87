// recompute --recompute=selective with attention dropout (galv.dropout on the
// probabilities, docs/training.md "Dropout"): the core cloned before its first
// backward use is scores dot, scale, softmax and the dropout, the clone with
// the forward's id, seed and ratio (the same counter-based mask, nothing
// stored); the PV dot's weight gradient reads the recomputed dropout, and the
// dropout's own gradient is a galv.dropout of dy with the same attributes
// (it reads neither the forward's input nor a mask).
// RUN: %galv-opt --passes=autodiff,recompute --recompute=selective %s | %FileCheck %s
// CHECK: %[[P:[0-9]+]] = "galv.softmax"{{.*}}loc("/h.0/attn/Softmax"("Softmax"))
// CHECK-NEXT: %[[D:[0-9]+]] = "galv.dropout"(%[[P]]) {id = 3 : i64, ratio = 1.000000015e-01 : f32, seed = 7 : i64}{{.*}}loc("/h.0/attn/drop"("Dropout"))
// CHECK: %[[DY:[0-9]+]] = "galv.dot"({{.*}}loc("/h.0/attn/pv/grad"("MatMul"))
// CHECK: %[[RS:[0-9]+]] = "galv.dot"({{.*}}loc("/h.0/attn/scores/recompute"("MatMul"))
// CHECK: %[[RP:[0-9]+]] = "galv.softmax"{{.*}}loc("/h.0/attn/Softmax/recompute"("Softmax"))
// CHECK-NEXT: %[[RD:[0-9]+]] = "galv.dropout"(%[[RP]]) {id = 3 : i64, ratio = 1.000000015e-01 : f32, seed = 7 : i64}{{.*}}loc("/h.0/attn/drop/recompute"("Dropout"))
// CHECK-NEXT: "galv.dot"(%[[RD]], {{.*}}loc("/h.0/attn/pv/grad"("MatMul"))
// CHECK-NEXT: "galv.dropout"(%[[DY]]) {id = 3 : i64, ratio = 1.000000015e-01 : f32, seed = 7 : i64}{{.*}}loc("/h.0/attn/drop/grad"("Dropout"))
// CHECK-NOT: %[[D]]{{[,)]}}
// CHECK: "galv.return"
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/q"("MatMul"))
  %1 = "galv.dot"(%arg0, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/k"("MatMul"))
  %2 = "galv.dot"(%arg0, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/v"("MatMul"))
  %3 = "galv.dot"(%0, %1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %4 = "galv.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32> loc("/h.0/attn/scale"("Constant"))
  %5 = "galv.mul"(%3, %4) : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Mul"("Mul"))
  %6 = "galv.softmax"(%5) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %d = "galv.dropout"(%6) {id = 3 : i64, ratio = 1.000000015e-01 : f32, seed = 7 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/drop"("Dropout"))
  %7 = "galv.dot"(%d, %2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  %8 = "galv.tanh"(%7) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/mlp/act"("Tanh"))
  %9 = "galv.reduce_sum"(%8) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%9) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "wq", galv.param}, {galv.name = "wk", galv.param}, {galv.name = "wv", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
