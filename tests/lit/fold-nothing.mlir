
// fold-constants must do nothing when every op has a non-constant operand.
// RUN: %galv-opt --passes=fold-constants %s | %FileCheck %s
// CHECK: %0 = "galv.constant"()
// CHECK-NEXT: %1 = "galv.mul"(%arg0, %0)
// CHECK-NEXT: %2 = "galv.cast"(%1) {to = i64}
// CHECK-NEXT: %3 = "galv.add"(%2, %arg1)
// CHECK-NEXT: "galv.return"(%3)
// CHECK-NOT: "galv.constant"
"galv.func"() ({
^bb0(%arg0: tensor<3xf32>, %arg1: tensor<3xi64>):
  %0 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/Constant"("Constant"))
  %1 = "galv.mul"(%arg0, %0) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32> loc("/Mul"("Mul"))
  %2 = "galv.cast"(%1) {to = i64} : (tensor<3xf32>) -> tensor<3xi64> loc("/Cast"("Cast"))
  %3 = "galv.add"(%2, %arg1) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64> loc("/Add"("Add"))
  "galv.return"(%3) : (tensor<3xi64>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "s"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
