// recompute --recompute=selective:h.1: the core is found by structure (dot
// -> div -> where(mask) -> softmax -> mul(dropout keep-mask) -> dot), all
// of it cloned up to the dropped-out probabilities; layer h.0's core is
// not in the list and stays stored (no clone of it).
// RUN: %galv-opt --passes=autodiff,recompute --recompute=selective:h.1 %s | %FileCheck %s
// CHECK: "galv.softmax"{{.*}}loc("/h.0/attn/Softmax"("Softmax"))
// CHECK: "galv.dot"(%[[Q1:[a-z0-9]+]], %[[K1:[a-z0-9]+]]){{.*}}loc("/h.1/attn/scores"("MatMul"))
// CHECK-NOT: /h.0/{{[a-zA-Z/]*}}/recompute
// CHECK: "galv.dot"(%[[Q1]], %[[K1]]){{.*}}loc("/h.1/attn/scores/recompute"("MatMul"))
// CHECK-NEXT: "galv.div"{{.*}}loc("/h.1/attn/Div/recompute"("Div"))
// CHECK-NEXT: "galv.where"{{.*}}loc("/h.1/attn/Where/recompute"("Where"))
// CHECK-NEXT: "galv.softmax"{{.*}}loc("/h.1/attn/Softmax/recompute"("Softmax"))
// CHECK-NEXT: "galv.mul"{{.*}}loc("/h.1/attn/Dropout/recompute"("Mul"))
// CHECK-NOT: /recompute
// CHECK: "galv.return"
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>, %arg2: tensor<2x4x8xf32>, %arg3: tensor<4x4xi1>, %arg4: tensor<2x4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  %3 = "galv.tanh"(%2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/mlp/act"("Tanh"))
  %4 = "galv.dot"(%3, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/scores"("MatMul"))
  %5 = "galv.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32> loc("/h.1/attn/scale"("Constant"))
  %6 = "galv.div"(%4, %5) : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Div"("Div"))
  %7 = "galv.constant"() {value = dense<-1.0e4> : tensor<f32>} : () -> tensor<f32> loc("/h.1/attn/neg"("Constant"))
  %8 = "galv.where"(%arg3, %6, %7) : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Where"("Where"))
  %9 = "galv.softmax"(%8) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Softmax"("Softmax"))
  %10 = "galv.mul"(%9, %arg4) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Dropout"("Mul"))
  %11 = "galv.dot"(%10, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/attn/pv"("MatMul"))
  %12 = "galv.reduce_sum"(%11) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%12) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q", galv.param}, {galv.name = "k", galv.param}, {galv.name = "v", galv.param}, {galv.name = "mask"}, {galv.name = "keep"}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
