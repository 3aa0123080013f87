
// fold-constants: a shape chain (Shape -> Gather -> Unsqueeze -> Concat)
// folds in one sweep; the Reshape then takes its static form (one operand,
// static result type) and dce removes the dead constants.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.reshape"(%arg0) : (tensor<2x3x4xf32>) -> tensor<2x12xf32> loc("/Reshape"("Reshape"))
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: "galv.shape"
// CHECK-NOT: "galv.concat"
"galv.func"() ({
^bb0(%arg0: tensor<2x3x4xf32>):
  %0 = "galv.shape"(%arg0) : (tensor<2x3x4xf32>) -> tensor<3xi64> loc("/Shape"("Shape"))
  %1 = "galv.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64> loc("/Constant"("Constant"))
  %2 = "galv.gather"(%0, %1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64> loc("/Gather"("Gather"))
  %3 = "galv.unsqueeze"(%2) {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64> loc("/Unsqueeze"("Unsqueeze"))
  %4 = "galv.constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant_1"("Constant"))
  %5 = "galv.concat"(%3, %4) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64> loc("/Concat"("Concat"))
  %6 = "galv.reshape"(%arg0, %5) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32> loc("/Reshape"("Reshape"))
  "galv.return"(%6) : (tensor<2x12xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
