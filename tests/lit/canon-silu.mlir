
// canonicalize: x * sigmoid(x) becomes silu; sigmoid(x) multiplied with
// something other than x stays.
// RUN: %galv-opt --passes=canonicalize,dce %s | %FileCheck %s
// CHECK: %0 = "galv.silu"(%arg0) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul")
// CHECK-NEXT: %1 = "galv.sigmoid"(%arg0)
// CHECK-NEXT: %2 = "galv.mul"(%0, %1)
// CHECK-NEXT: "galv.return"(%2)
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>):
  %0 = "galv.sigmoid"(%arg0) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Sigmoid"("Sigmoid"))
  %1 = "galv.mul"(%arg0, %0) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/act/Mul"("Mul"))
  %2 = "galv.sigmoid"(%arg0) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("/other/Sigmoid"("Sigmoid"))
  %3 = "galv.mul"(%1, %2) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("/other/Mul"("Mul"))
  "galv.return"(%3) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
