// dce removes a chain of pure ops whose results end up unused, in one run.
// RUN: %galv-opt --passes=dce %s | %FileCheck %s
// CHECK: "galv.func"
// CHECK-NOT: "galv.exp"
// CHECK-NOT: "galv.neg"
// CHECK-NOT: "galv.constant"
// CHECK: %0 = "galv.relu"(%arg0)
// CHECK-NEXT: "galv.return"(%0)
"galv.func"() ({
^bb0(%arg0: tensor<2x4xf32>):
  %0 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/c"("Constant"))
  %1 = "galv.add"(%arg0, %0) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("/add"("Add"))
  %2 = "galv.exp"(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/exp"("Exp"))
  %3 = "galv.neg"(%2) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/neg"("Neg"))
  %4 = "galv.relu"(%arg0) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/relu"("Relu"))
  "galv.return"(%4) : (tensor<2x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
