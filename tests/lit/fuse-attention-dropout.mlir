// fuse-attention fuses a chain with galv.dropout on the probabilities
// (docs/fused-attention.md): h.1's dot -> softmax -> dropout -> dot becomes
// one galv.attention that carries the dropout's mask attributes (ratio,
// seed, id) and draws the same mask per score; h.0's bare chain fuses as
// before; h.2's chain stays, its dropped probabilities having another use
// (a sum). After autodiff the gradient op carries the same attributes.
// RUN: %galv-opt --passes=fuse-attention %s | %FileCheck %s
// RUN: %galv-opt --passes=fuse-attention,autodiff %s | %FileCheck %s --check-prefix=GRAD
// RUN: %galv-opt --passes=fuse-attention,autodiff %s -o %t && %mlir-check %t
// CHECK: "galv.attention"(%arg0, %arg1, %arg2) {k_contract = 2 : i64, score = "", v_contract = 1 : i64}
// CHECK-NOT: "galv.dropout"
// CHECK: "galv.attention"(%{{[0-9]+}}, %arg1, %arg2) {id = 0 : i64, k_contract = 2 : i64, ratio = 1.000000015e-01 : f32, score = "", seed = 0 : i64, v_contract = 1 : i64}{{.*}}loc("/h.1/attn/Softmax"("Softmax"))
// CHECK-NOT: "galv.attention"
// CHECK: "galv.softmax"{{.*}}loc("/h.2/attn/Softmax"("Softmax"))
// CHECK-NEXT: "galv.dropout"{{.*}}loc("/h.2/attn/Dropout"("Dropout"))
// CHECK-NEXT: "galv.dot"{{.*}}loc("/h.2/attn/pv"("MatMul"))
// CHECK-NOT: "galv.attention"
// GRAD: "galv.attention_grad"({{.*}}) {id = 0 : i64, k_contract = 2 : i64, ratio = 1.000000015e-01 : f32, score = "", seed = 0 : i64, v_contract = 1 : i64}{{.*}}loc("/h.1/attn/Softmax/grad"("Softmax"))
// GRAD: "galv.attention_grad"({{.*}}) {k_contract = 2 : i64, score = "", v_contract = 1 : i64}{{.*}}loc("/h.0/attn/Softmax/grad"("Softmax"))
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>, %arg2: tensor<2x4x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  %3 = "galv.tanh"(%2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/mlp/act"("Tanh"))
  %4 = "galv.dot"(%3, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/scores"("MatMul"))
  %5 = "galv.softmax"(%4) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Softmax"("Softmax"))
  %6 = "galv.dropout"(%5) {id = 0 : i64, ratio = 1.000000015e-01 : f32, seed = 0 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Dropout"("Dropout"))
  %7 = "galv.dot"(%6, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/attn/pv"("MatMul"))
  %8 = "galv.dot"(%7, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/scores"("MatMul"))
  %9 = "galv.softmax"(%8) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/Softmax"("Softmax"))
  %10 = "galv.dropout"(%9) {id = 1 : i64, ratio = 1.000000015e-01 : f32, seed = 0 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/Dropout"("Dropout"))
  %11 = "galv.dot"(%10, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.2/attn/pv"("MatMul"))
  %12 = "galv.reduce_sum"(%11) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  %13 = "galv.reduce_sum"(%10) {keepdims = 0 : i64} : (tensor<2x4x4xf32>) -> tensor<f32> loc("/h.2/attn/probs_sum"("ReduceSum"))
  %14 = "galv.add"(%12, %13) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("/loss"("Add"))
  "galv.return"(%14) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q", galv.param}, {galv.name = "k", galv.param}, {galv.name = "v", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
