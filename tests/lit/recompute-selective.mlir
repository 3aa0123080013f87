// recompute --recompute=selective: only the attention core (scores dot,
// scale, softmax) is cloned before its first backward use, and the
// backward reads the clones; the Q / K / V projections, the PV dot and the
// MLP activation are not cloned (their values stay stored).
// RUN: %galv-opt --passes=autodiff,recompute --recompute=selective %s | %FileCheck %s
// CHECK: %[[S:[0-9]+]] = "galv.dot"(%[[Q:[0-9]+]], %[[K:[0-9]+]]){{.*}}loc("/h.0/attn/scores"("MatMul"))
// CHECK: %[[P:[0-9]+]] = "galv.softmax"{{.*}}loc("/h.0/attn/Softmax"("Softmax"))
// CHECK: "galv.dot"(%[[P]], {{.*}}loc("/h.0/attn/pv"("MatMul"))
// the backward: the tanh gradient reads the stored forward value
// CHECK: "galv.mul"(%[[T:[0-9]+]], %[[T]]){{.*}}loc("/h.0/mlp/act/grad"("Tanh"))
// CHECK: %[[RS:[0-9]+]] = "galv.dot"(%[[Q]], %[[K]]){{.*}}loc("/h.0/attn/scores/recompute"("MatMul"))
// CHECK-NEXT: %[[RM:[0-9]+]] = "galv.mul"(%[[RS]], {{.*}}loc("/h.0/attn/Mul/recompute"("Mul"))
// CHECK-NEXT: %[[RP:[0-9]+]] = "galv.softmax"(%[[RM]]){{.*}}loc("/h.0/attn/Softmax/recompute"("Softmax"))
// CHECK-NOT: recompute
// CHECK: "galv.dot"(%[[RP]], {{%[0-9]+}}){{.*}}loc("/h.0/attn/pv/grad"("MatMul"))
// CHECK: "galv.mul"({{%[0-9]+}}, %[[RP]]){{.*}}loc("/h.0/attn/Softmax/grad"("Softmax"))
// CHECK-NOT: "galv.softmax"
// CHECK-NOT: %[[P]]{{[,)]}}
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
  %7 = "galv.dot"(%6, %2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  %8 = "galv.tanh"(%7) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/mlp/act"("Tanh"))
  %9 = "galv.reduce_sum"(%8) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%9) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "wq", galv.param}, {galv.name = "wk", galv.param}, {galv.name = "wv", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
