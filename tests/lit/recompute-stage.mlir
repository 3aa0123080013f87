// recompute on a pipeline stage's training function (the shape
// gv_stage_train gives it: a received input pp.x, gin:pp.y, result pp.seed
// first): a stage of one block has no repeated block to find by structure,
// so --recompute=all takes its layer by name (h.0): the layer's forward ops
// are cloned before its first backward op and the backward reads the clones
// (so stage-stash stashes only the layer's input pp.x). A stage without a
// layer (ops of /lm_head) is left as it is, without an error; the same
// function that is no stage (no pp. names) still answers one error line.
// RUN: %galv-opt --passes=autodiff,recompute --recompute=all %s | %FileCheck %s
// RUN: sed 's#/transformer/h.0#/lm_head#g' %s > %t.head.mlir
// RUN: %galv-opt --passes=autodiff,recompute --recompute=all %t.head.mlir | %FileCheck %s --check-prefix=HEAD
// RUN: %galv-opt --passes=autodiff,recompute --recompute=selective %s | %FileCheck %s --check-prefix=HEAD
// RUN: sed 's#pp\.x#x#; s#gin:pp\.y#y#; s#pp\.seed#loss#' %t.head.mlir > %t.one.mlir
// RUN: not %galv-opt --passes=autodiff,recompute --recompute=all %t.one.mlir 2>&1 | %FileCheck %s --check-prefix=ONE
// CHECK: %[[T:[0-9]+]] = "galv.tanh"
// CHECK: "galv.reduce_sum"{{.*}}loc("pipeline/seed")
// CHECK: %[[D:[0-9]+]] = "galv.dot"(%arg0, %arg1){{.*}}loc("/transformer/h.0/mlp/MatMul/recompute"
// CHECK-NEXT: %[[T2:[0-9]+]] = "galv.tanh"(%[[D]]){{.*}}/recompute"
// CHECK-NEXT: %[[E2:[0-9]+]] = "galv.exp"(%[[T2]]){{.*}}/recompute"
// CHECK-NEXT: "galv.mul"(%{{[0-9]+}}, %[[E2]]){{.*}}Exp/grad
// CHECK-NEXT: "galv.mul"(%[[T2]], %[[T2]]){{.*}}Tanh/grad
// CHECK-NOT: %[[T]],
// CHECK: "galv.return"
// HEAD-NOT: recompute"
// HEAD: "galv.return"
// ONE: galv-opt: error: {{.*}}recompute: --recompute=all selects no layer
// ONE-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<4x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/transformer/h.0/mlp/MatMul"("MatMul"))
  %1 = "galv.tanh"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/transformer/h.0/mlp/Tanh"("Tanh"))
  %2 = "galv.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/transformer/h.0/mlp/Exp"("Exp"))
  %3 = "galv.mul"(%2, %arg2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("pipeline/seed")
  %4 = "galv.reduce_sum"(%3) {keepdims = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32> loc("pipeline/seed")
  "galv.return"(%4) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "pp.x"}, {galv.name = "w", galv.param}, {galv.name = "gin:pp.y"}], res_attrs = [{galv.name = "pp.seed"}], sym_name = "main"} : () -> ()
