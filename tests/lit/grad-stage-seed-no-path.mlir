// autodiff on a pipeline stage's seed ("pp.seed", passes/stage_extract.c) that
// depends on the received value pp.12.0 (counted as a parameter) through a
// comparison only (a float attention mask made into a where's condition, as
// a cut of a Llama export leaves it): no gradient path, so its gradient is
// zeros rather than an error (an ordinary loss like this one is refused:
// train-all-frozen.mlir).
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: %[[C:[0-9]+]] = "galv.constant"() {value = dense<0.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("autodiff")
// CHECK: %[[Z:[0-9]+]] = "galv.expand"(%[[C]]) : (tensor<f32>) -> tensor<2x8xf32>
// CHECK: "galv.return"(%{{[0-9]+}}, %[[Z]])
// CHECK: res_attrs = [{galv.name = "pp.seed"}, {galv.name = "grad:pp.12.0"}]
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>):
  %0 = "galv.constant"() {value = dense<0.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/zero"("Constant"))
  %1 = "galv.constant"() {value = dense<-1.000000000e+04> : tensor<f32>} : () -> tensor<f32> loc("/neg"("Constant"))
  %2 = "galv.equal"(%arg0, %0) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1> loc("/eq"("Equal"))
  %3 = "galv.where"(%2, %1, %0) : (tensor<2x8xi1>, tensor<f32>, tensor<f32>) -> tensor<2x8xf32> loc("/where"("Where"))
  %4 = "galv.mul"(%3, %arg1) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("pipeline/seed")
  %5 = "galv.reduce_sum"(%4) {keepdims = 0 : i64} : (tensor<2x8xf32>) -> tensor<f32> loc("pipeline/seed")
  "galv.return"(%5) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "pp.12.0", galv.param}, {galv.name = "gin:pp.12.0"}], res_attrs = [{galv.name = "pp.seed"}], sym_name = "main"} : () -> ()
