
// fold-constants: ops whose operands are all constants are evaluated; the
// new constant keeps the folded node's location. An op with a non-constant
// operand (the Add) stays.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.constant"() {value = dense<[-2.000000000e+00, -4.000000000e+00, -6.000000000e+00]> : tensor<3xf32>} : () -> tensor<3xf32> loc("/Neg"("Neg"))
// CHECK-NEXT: %1 = "galv.add"(%arg0, %0)
// CHECK-NEXT: "galv.return"(%1)
// CHECK-NOT: "galv.mul"
"galv.func"() ({
^bb0(%arg0: tensor<3xf32>):
  %0 = "galv.constant"() {value = dense<[1.000000000e+00, 2.000000000e+00, 3.000000000e+00]> : tensor<3xf32>} : () -> tensor<3xf32> loc("/Constant"("Constant"))
  %1 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/Constant_1"("Constant"))
  %2 = "galv.mul"(%0, %1) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32> loc("/Mul"("Mul"))
  %3 = "galv.neg"(%2) : (tensor<3xf32>) -> tensor<3xf32> loc("/Neg"("Neg"))
  %4 = "galv.add"(%arg0, %3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("/Add"("Add"))
  "galv.return"(%4) : (tensor<3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
