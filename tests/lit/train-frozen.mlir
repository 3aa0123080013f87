// A frozen parameter (galv.frozen) is read but not trained: autodiff gives
// it no gradient (only grad:w and grad:b; the one-element bias b trains like
// any parameter), the optimizer no update (no galv.updates) and no state
// (AdamW state for w and b only). The attribute round-trips, MLIR reads it.
// RUN: %galv-opt --passes=loss,autodiff %s > %t.grad.mlir
// RUN: %FileCheck %s --check-prefix=GRAD < %t.grad.mlir
// RUN: %galv-opt --passes=loss,autodiff,optimizer %s > %t.mlir
// RUN: %FileCheck %s < %t.mlir
// RUN: %galv-opt %t.mlir | diff - %t.mlir
// RUN: %mlir-check %t.mlir
// GRAD: arg_attrs = [{galv.name = "x"}, {galv.name = "labels"}, {galv.name = "w", galv.param}, {galv.frozen, galv.name = "pos", galv.param}, {galv.name = "b", galv.param}]
// GRAD-SAME: res_attrs = [{galv.name = "loss"}, {galv.name = "grad:w"}, {galv.name = "grad:b"}]
// CHECK-NOT: optimizer/adamw/pos
// CHECK: arg_attrs = [{galv.name = "x"}, {galv.name = "labels"}, {galv.name = "w", galv.param}, {galv.frozen, galv.name = "pos", galv.param}, {galv.name = "b", galv.param}, {galv.name = "opt.step", galv.state}, {galv.name = "opt.m:w", galv.state}, {galv.name = "opt.v:w", galv.state}, {galv.name = "opt.m:b", galv.state}, {galv.name = "opt.v:b", galv.state}]
// CHECK-SAME: res_attrs = [{galv.name = "loss"}, {galv.name = "w", galv.updates = 2 : i64}, {galv.name = "b", galv.updates = 4 : i64}, {galv.name = "opt.step", galv.updates = 5 : i64}, {galv.name = "opt.m:w", galv.updates = 6 : i64}, {galv.name = "opt.m:b", galv.updates = 8 : i64}, {galv.name = "opt.v:w", galv.updates = 7 : i64}, {galv.name = "opt.v:b", galv.updates = 9 : i64}]
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<2x3xf32>, %arg3: tensor<1xf32>):
  %0 = "galv.add"(%arg0, %arg2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("/pos"("Add"))
  %1 = "galv.dot"(%0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("/head"("MatMul"))
  %2 = "galv.add"(%1, %arg3) : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32> loc("/head/bias"("Add"))
  "galv.return"(%2) : (tensor<2x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}, {galv.frozen, galv.name = "pos", galv.param}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
