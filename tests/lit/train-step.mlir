// loss + autodiff + optimizer: cross-entropy adds the labels input before
// the parameters; AdamW adds opt.step and m/v state args (galv.state) and
// returns loss, new params, new state, each marked galv.updates = ARG; the
// result re-parses and MLIR reads it.
// RUN: %galv-opt --passes=loss,autodiff,optimizer %s > %t.mlir
// RUN: %FileCheck %s < %t.mlir
// RUN: %galv-opt %t.mlir | diff - %t.mlir
// RUN: %mlir-check %t.mlir
// CHECK: ^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<2x4xi64>, %arg2: tensor<8x6xf32>, %arg3: tensor<f32>, %arg4: tensor<8x6xf32>, %arg5: tensor<8x6xf32>):
// CHECK: "galv.cross_entropy"(%{{[0-9]+}}, %arg1) {ignore_index = -100 : i64} : (tensor<2x4x6xf32>, tensor<2x4xi64>) -> tensor<f32> loc("loss/cross_entropy")
// CHECK: "galv.cross_entropy_grad"
// CHECK: "galv.gather_grad"
// CHECK: "galv.pow"
// CHECK: loc("optimizer/adamw/emb")
// CHECK: arg_attrs = [{galv.name = "ids"}, {galv.name = "labels"}, {galv.name = "emb", galv.param}, {galv.name = "opt.step", galv.state}, {galv.name = "opt.m:emb", galv.state}, {galv.name = "opt.v:emb", galv.state}]
// CHECK-SAME: res_attrs = [{galv.name = "loss"}, {galv.name = "emb", galv.updates = 2 : i64}, {galv.name = "opt.step", galv.updates = 3 : i64}, {galv.name = "opt.m:emb", galv.updates = 4 : i64}, {galv.name = "opt.v:emb", galv.updates = 5 : i64}]
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<8x6xf32>):
  %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/emb"("Gather"))
  "galv.return"(%0) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "emb", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
