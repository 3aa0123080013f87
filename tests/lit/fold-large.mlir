
// fold-constants: results above the limit (1 << 20 elements) are not
// materialised, and their users stay. Small ones fold. A ConstantOfShape
// over the limit becomes a static expand of its one-element value (no
// target runs galv.constant_of_shape itself: a causal mask at seq > 1024);
// ONNX's default value is a float zero.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.constant"() {value = dense<[0.000000000e+00]> : tensor<1xf32>} {{.*}} loc("/ConstantOfShape"
// CHECK-NEXT: %1 = "galv.expand"(%0) : (tensor<1xf32>) -> tensor<1025x1024xf32> loc("/ConstantOfShape"
// CHECK-NEXT: %2 = "galv.reduce_sum"(%1)
// CHECK-NEXT: %3 = "galv.constant"() {value = dense<0.000000000e+00> : tensor<f32>} {{.*}} loc("/ReduceSum_1"
// CHECK-NEXT: %4 = "galv.add"(%2, %3)
// CHECK-NOT: "galv.constant_of_shape"
"galv.func"() ({
^bb0(%arg0: tensor<2xf32>):
  %0 = "galv.constant"() {value = dense<[1025, 1024]> : tensor<2xi64>} : () -> tensor<2xi64> loc("/Constant"("Constant"))
  %1 = "galv.constant_of_shape"(%0) : (tensor<2xi64>) -> tensor<1025x1024xf32> loc("/ConstantOfShape"("ConstantOfShape"))
  %2 = "galv.constant"() {value = dense<[2, 2]> : tensor<2xi64>} : () -> tensor<2xi64> loc("/Constant_1"("Constant"))
  %3 = "galv.constant_of_shape"(%2) : (tensor<2xi64>) -> tensor<2x2xf32> loc("/ConstantOfShape_1"("ConstantOfShape_1"))
  %4 = "galv.reduce_sum"(%1) {keepdims = 0 : i64} : (tensor<1025x1024xf32>) -> tensor<f32> loc("/ReduceSum"("ReduceSum"))
  %5 = "galv.reduce_sum"(%3) {keepdims = 0 : i64} : (tensor<2x2xf32>) -> tensor<f32> loc("/ReduceSum_1"("ReduceSum_1"))
  %6 = "galv.add"(%4, %5) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("/Add"("Add"))
  %7 = "galv.add"(%arg0, %6) : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32> loc("/Add_1"("Add_1"))
  "galv.return"(%7) : (tensor<2xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
