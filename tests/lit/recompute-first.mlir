// recompute --recompute=first:K: the first K layers found by structure (as
// all finds them; names play no part: these have no NAME.N segment), here
// 4 blocks of dot -> tanh found as 4 layers (the first reads the input x, the
// others the block before: the same block); first:2 clones the tanh of the
// first two blocks only, all of the four; first:0 nothing.
// RUN: %galv-opt --passes=autodiff,recompute --recompute=first:2 %s | %FileCheck %s --check-prefix=TWO
// RUN: %galv-opt --passes=autodiff,recompute --recompute=all %s | %FileCheck %s --check-prefix=ALL
// RUN: %galv-opt --passes=autodiff,recompute --recompute=first:0 %s | %FileCheck %s --check-prefix=ZERO
// RUN: not %galv-opt --passes=autodiff,recompute --recompute=first:5 %s 2>&1 | %FileCheck %s --check-prefix=MANY
// RUN: not %galv-opt --passes=autodiff,recompute --recompute=first:x %s 2>&1 | %FileCheck %s --check-prefix=BAD
// RUN: not %galv-opt --passes=autodiff,recompute --recompute=0 %s 2>&1 | %FileCheck %s --check-prefix=NAMED
// TWO-NOT: /{{[cd]}}/act/recompute
// TWO: "galv.tanh"({{.*}}loc("/b/act/recompute"("Tanh"))
// TWO-NOT: /c/act/recompute
// TWO: "galv.tanh"({{.*}}loc("/a/act/recompute"("Tanh"))
// TWO-NOT: /recompute
// TWO: "galv.return"
// ALL: loc("/d/act/recompute"("Tanh"))
// ALL: loc("/c/act/recompute"("Tanh"))
// ALL: loc("/b/act/recompute"("Tanh"))
// ALL: loc("/a/act/recompute"("Tanh"))
// ZERO-NOT: /recompute
// ZERO: "galv.return"
// MANY: error: {{.*}}recompute: --recompute=first:5: the program has 4 layers
// BAD: error: {{.*}}recompute: --recompute=first:x: expected first:K (K a number of layers, e.g. first:4)
// NAMED: error: {{.*}}--recompute=0 selects no layer (layers are named by a NAME.N segment
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("/a/mm"("MatMul"))
  %1 = "galv.tanh"(%0) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/a/act"("Tanh"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("/b/mm"("MatMul"))
  %3 = "galv.tanh"(%2) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/b/act"("Tanh"))
  %4 = "galv.dot"(%3, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("/c/mm"("MatMul"))
  %5 = "galv.tanh"(%4) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/c/act"("Tanh"))
  %6 = "galv.dot"(%5, %arg4) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("/d/mm"("MatMul"))
  %7 = "galv.tanh"(%6) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/d/act"("Tanh"))
  %8 = "galv.reduce_sum"(%7) {keepdims = 0 : i64} : (tensor<2x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%8) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "w3", galv.param}, {galv.name = "w4", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
