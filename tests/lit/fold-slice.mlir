
// fold-constants: a slice with constant starts/ends/axes operands takes the
// static form: all four attributes, axes non-negative, steps defaulted to 1.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.slice"(%arg0) {axes = array<i64: 2>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: "galv.constant"
"galv.func"() ({
^bb0(%arg0: tensor<2x3x4xf32>):
  %0 = "galv.constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant"("Constant"))
  %1 = "galv.constant"() {value = dense<[9223372036854775807]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant_1"("Constant"))
  %2 = "galv.constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant_2"("Constant"))
  %3 = "galv.slice"(%arg0, %0, %1, %2) : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x3xf32> loc("/Slice"("Slice"))
  "galv.return"(%3) : (tensor<2x3x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
