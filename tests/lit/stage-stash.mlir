// stage-stash: an earlier pipeline stage's training function (the shape
// gv_stage_train gives it: results pp.seed, grad:*, the sent pp.* values;
// input gin:pp.* per sent value) split into its forward entry and its
// backward entry. Forward: the ops the sent value needs, results = the sent
// value then the stash: the received input and the tanh the backward reads;
// not the dot result, which only the tanh reads; not the weight or its view;
// not the constant, which both entries define; not the exp, an elementwise op
// of a stashed value that the backward recomputes. Backward: the stash as
// galv.state inputs, the gradient ops, the view, the constant and the exp
// copied; no other forward op (dot, tanh) and no seed op. Both re-parse and
// MLIR reads them.
// RUN: %galv-opt --passes=stage-stash --stash=forward %s > %t.f.mlir
// RUN: %FileCheck %s --check-prefix=FWD < %t.f.mlir
// RUN: %galv-opt %t.f.mlir | diff - %t.f.mlir
// RUN: %mlir-check %t.f.mlir
// RUN: %galv-opt --passes=stage-stash --stash=backward %s > %t.b.mlir
// RUN: %FileCheck %s --check-prefix=BWD < %t.b.mlir
// RUN: %galv-opt %t.b.mlir | diff - %t.b.mlir
// RUN: %mlir-check %t.b.mlir
// RUN: %FileCheck %s --check-prefix=BWDN < %t.b.mlir
// RUN: %galv-opt --passes=stage-stash,fuse,memory-plan --stash=backward %s | %FileCheck %s --check-prefix=PLAN
// FWD: ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>):
// FWD-NEXT: %[[V:[0-9]+]] = "galv.reshape"(%arg1)
// FWD-NEXT: %[[C:[0-9]+]] = "galv.constant"
// FWD-NEXT: %[[E:[0-9]+]] = "galv.exp"(%arg0)
// FWD-NEXT: %[[D:[0-9]+]] = "galv.dot"(%[[E]], %[[V]])
// FWD-NEXT: %[[S:[0-9]+]] = "galv.mul"(%[[D]], %[[C]])
// FWD-NEXT: %[[T:[0-9]+]] = "galv.tanh"(%[[S]])
// FWD-NEXT: "galv.return"(%[[T]], %arg0, %[[T]])
// FWD-NOT: galv.
// FWD: arg_attrs = [{galv.name = "pp.0.0"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "pp.2.0"}, {galv.name = "stash.0"}, {galv.name = "stash.1"}]
// BWD: ^bb0(%arg0: tensor<8x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<4x8xf32>):
// BWD: %[[V:[0-9]+]] = "galv.reshape"(%arg0)
// BWD-NEXT: %[[C:[0-9]+]] = "galv.constant"() {value = dense<5.000000000e-01>
// BWD-NEXT: %[[E:[0-9]+]] = "galv.exp"(%arg2)
// BWD: "galv.mul"(%arg3, %arg3)
// BWD: %[[G:[0-9]+]] = "galv.mul"(%arg1,
// BWD: %[[GS:[0-9]+]] = "galv.mul"(%[[G]], %[[C]])
// BWD-NEXT: "galv.transpose"(%[[E]])
// BWD: "galv.transpose"(%[[V]])
// BWD: "galv.mul"(%{{[0-9]+}}, %[[E]])
// BWD: arg_attrs = [{galv.name = "w", galv.param}, {galv.name = "gin:pp.2.0"}, {galv.name = "stash.0", galv.state}, {galv.name = "stash.1", galv.state}], res_attrs = [{galv.name = "grad:w"}, {galv.name = "grad:pp.0.0"}]
// BWDN-NOT: "galv.tanh"
// BWDN-NOT: "galv.reduce_sum"
// BWDN-NOT: "galv.dot"(%2, %0)
// BWDN: arg_attrs
// The stash inputs are not in the backward entry's arena (offset -1).
// PLAN: "galv.arena"() {arg_offsets = array<i64: -1, 0, -1, -1>
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<4x8xf32>):
  %0 = "galv.reshape"(%arg1) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/w/view")
  %c = "galv.constant"() {value = dense<5.000000000e-01> : tensor<f32>} : () -> tensor<f32> loc("/scale")
  %e = "galv.exp"(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/exp")
  %1 = "galv.dot"(%e, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/mm")
  %s = "galv.mul"(%1, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("/scaled")
  %2 = "galv.tanh"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/act")
  %3 = "galv.mul"(%2, %arg2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("pipeline/seed")
  %4 = "galv.reduce_sum"(%3) {keepdims = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32> loc("pipeline/seed")
  %5 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("grad/one")
  %6 = "galv.mul"(%2, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act/sq")
  %7 = "galv.sub"(%5, %6) : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act/d")
  %8 = "galv.mul"(%arg2, %7) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act")
  %g = "galv.mul"(%8, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("grad/scaled")
  %9 = "galv.transpose"(%e) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("grad/mm/xt")
  %10 = "galv.dot"(%9, %g) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32> loc("grad/mm/w")
  %11 = "galv.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("grad/mm/wt")
  %12 = "galv.dot"(%g, %11) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("grad/mm/x")
  %13 = "galv.mul"(%12, %e) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/exp")
  %14 = "galv.mul"(%13, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/extra")
  "galv.return"(%4, %10, %14, %2) : (tensor<f32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "pp.0.0"}, {galv.name = "w", galv.param}, {galv.name = "gin:pp.2.0"}], res_attrs = [{galv.name = "pp.seed"}, {galv.name = "grad:w"}, {galv.name = "grad:pp.0.0"}, {galv.name = "pp.2.0"}], sym_name = "main"} : () -> ()
