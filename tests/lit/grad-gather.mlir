// autodiff of gather: the table's gradient is galv.gather_grad (scatter-add
// into dim rows); the integer indices get none.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: "galv.gather_grad"(%{{[0-9]+}}, %arg0) {axis = 0 : i64, dim = 64 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<64x16xf32> loc("/emb/grad"("Gather"))
"galv.func"() ({
^bb0(%arg0: tensor<2x8xi64>, %arg1: tensor<64x16xf32>):
  %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<64x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32> loc("/emb"("Gather"))
  %1 = "galv.reduce_sum"(%0) {keepdims = 0 : i64} : (tensor<2x8x16xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%1) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "wte", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
