// dce keeps every op whose result is used (nothing to do here), the
// terminator, and multi-result ops with one used result.
// RUN: %galv-opt --passes=dce %s | %FileCheck %s
// CHECK: %0 = "galv.constant"()
// CHECK-NEXT: %1 = "galv.add"(%arg0, %0)
// CHECK-NEXT: %2:2 = "galv.split"(%1)
// CHECK-NEXT: %3 = "galv.exp"(%2#0)
// CHECK-NEXT: "galv.return"(%3)
// CHECK-NOT: "galv.
"galv.func"() ({
^bb0(%arg0: tensor<2x4xf32>):
  %0 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/c"("Constant"))
  %1 = "galv.add"(%arg0, %0) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("/add"("Add"))
  %2:2 = "galv.split"(%1) {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) loc("/split"("Split"))
  %3 = "galv.exp"(%2#0) : (tensor<2x2xf32>) -> tensor<2x2xf32> loc("/exp"("Exp"))
  "galv.return"(%3) : (tensor<2x2xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
