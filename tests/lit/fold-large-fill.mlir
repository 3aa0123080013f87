// fold-constants: a ConstantOfShape over the fold limit with a value
// attribute (the causal mask's ones at seq 1100) becomes galv.expand of that
// value; its users (trilu) keep the expanded tensor and their static forms.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.constant"() {value = dense<[1.000000000e+00]> : tensor<1xf32>} {{.*}} loc("/mask/ConstantOfShape"
// CHECK-NEXT: %1 = "galv.expand"(%0) : (tensor<1xf32>) -> tensor<1100x1100xf32> loc("/mask/ConstantOfShape"
// CHECK-NEXT: %2 = "galv.trilu"(%1) {k = 0 : i64, upper = 0 : i64}
// CHECK-NOT: "galv.constant_of_shape"
"galv.func"() ({
^bb0(%arg0: tensor<1100x1100xf32>):
  %0 = "galv.constant"() {value = dense<[1100, 1100]> : tensor<2xi64>} : () -> tensor<2xi64> loc("/mask/Concat"("Concat"))
  %1 = "galv.constant_of_shape"(%0) {value = dense<[1.0]> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<1100x1100xf32> loc("/mask/ConstantOfShape"("ConstantOfShape"))
  %2 = "galv.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64> loc("/mask/k"("Constant"))
  %3 = "galv.trilu"(%1, %2) {upper = 0 : i64} : (tensor<1100x1100xf32>, tensor<i64>) -> tensor<1100x1100xf32> loc("/mask/Trilu"("Trilu"))
  %4 = "galv.add"(%arg0, %3) : (tensor<1100x1100xf32>, tensor<1100x1100xf32>) -> tensor<1100x1100xf32> loc("/Add"("Add"))
  "galv.return"(%4) : (tensor<1100x1100xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
