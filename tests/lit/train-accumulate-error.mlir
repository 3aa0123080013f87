// accumulate splits dim 0 of every data input: a scalar input is an error
// naming it; before autodiff (no loss gradient seed) the pass says what to
// run first.
// RUN: not %galv-opt --passes=loss,autodiff,accumulate --microbatches=2 %s 2>&1 | %FileCheck %s
// RUN: not %galv-opt --passes=loss,accumulate --microbatches=2 %s 2>&1 | %FileCheck %s --check-prefix=ORDER
// CHECK: error: {{.*}}--microbatches: input 's' has rank 0: microbatches split dim 0 of every data input
// ORDER: error: {{.*}}accumulate: no loss gradient seed (loc autodiff/seed): run autodiff first
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<f32>, %arg2: tensor<8x6xf32>):
  %0 = "galv.gather"(%arg2, %arg0) {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/emb"("Gather"))
  %1 = "galv.mul"(%0, %arg1) : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32> loc("/scale"("Mul"))
  "galv.return"(%1) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "s"}, {galv.name = "emb", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
