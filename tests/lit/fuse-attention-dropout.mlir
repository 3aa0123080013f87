// fuse-attention leaves a chain with galv.dropout on the probabilities
// unfused (docs/fused-attention.md: galv.attention has no dropout; the
// mask needs each probability's global coordinates, which the fused
// kernels' tiles do not carry): h.1's dot -> softmax -> dropout -> dot stays
// four ops while h.0's bare chain becomes galv.attention; selective
// recomputation then clones h.1's core, dropout included.
// RUN: %galv-opt --passes=fuse-attention %s | %FileCheck %s
// RUN: %galv-opt --passes=fuse-attention,autodiff,recompute --recompute=selective %s | %FileCheck %s --check-prefix=SEL
// CHECK: "galv.attention"(%arg0, %arg1, %arg2)
// CHECK: "galv.softmax"{{.*}}loc("/h.1/attn/Softmax"("Softmax"))
// CHECK-NEXT: "galv.dropout"{{.*}}loc("/h.1/attn/Dropout"("Dropout"))
// CHECK-NEXT: "galv.dot"{{.*}}loc("/h.1/attn/pv"("MatMul"))
// CHECK-NOT: "galv.attention"
// SEL: "galv.softmax"{{.*}}loc("/h.1/attn/Softmax/recompute"("Softmax"))
// SEL-NEXT: "galv.dropout"{{.*}}loc("/h.1/attn/Dropout/recompute"("Dropout"))
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
  %8 = "galv.reduce_sum"(%7) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%8) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q", galv.param}, {galv.name = "k", galv.param}, {galv.name = "v", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
