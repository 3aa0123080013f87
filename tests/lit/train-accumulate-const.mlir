// accumulate (--microbatches 3): a constant of the body (here a mask added to
// every microbatch's logits) is one op read by every microbatch's clone, not a
// copy per microbatch: B copies of a causal mask would sit in the weights
// buffer (the memory the stand-in of two microbatches prices would miss them).
// The microbatches' ops are still cloned three times.
// RUN: %galv-opt --passes=loss,autodiff,accumulate --microbatches=3 %s > %t.mlir
// RUN: %FileCheck %s < %t.mlir
// RUN: %galv-opt %t.mlir | diff - %t.mlir
// RUN: %mlir-check %t.mlir
// CHECK: %[[M:[0-9]+]] = "galv.constant"() {value = dense<5.000000000e-01> : tensor<6xf32>} : () -> tensor<6xf32> loc("/mask"("Constant"))
// CHECK-NOT: dense<5.000000000e-01>
// CHECK: "galv.add"({{%[0-9]+}}, %[[M]]) {{.*}} loc("/masked"("Add"))
// CHECK: "galv.add"({{%[0-9]+}}, %[[M]]) {{.*}} loc("/masked"("Add"))
// CHECK: "galv.add"({{%[0-9]+}}, %[[M]]) {{.*}} loc("/masked"("Add"))
// CHECK-NOT: loc("/masked"("Add"))
// CHECK: "galv.return"
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<8x6xf32>):
  %0 = "galv.constant"() {value = dense<5.000000000e-01> : tensor<6xf32>} : () -> tensor<6xf32> loc("/mask"("Constant"))
  %1 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/emb"("Gather"))
  %2 = "galv.add"(%1, %0) : (tensor<2x4x6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32> loc("/masked"("Add"))
  "galv.return"(%2) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "emb", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
