// shape-infer propagates values through the ONNX shape chain
// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the reshape gets
// a static result type, and the chain itself is left in place (folding it
// into constants is fold-constants' job).
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.shape"(%arg0) : (tensor<2x3x4xf32>) -> tensor<3xi64>
// CHECK: "galv.gather"(%0, %1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
// CHECK: "galv.unsqueeze"(%2) {axes = array<i64: 0>} : (tensor<i64>) -> tensor<1xi64>
// CHECK: "galv.concat"(%3, %4) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
// CHECK: "galv.reshape"(%arg0, %5) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK: "galv.return"(%6) : (tensor<2x12xf32>) -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x3x4xf32>):
  %0 = "galv.shape"(%arg0) : (tensor<2x3x4xf32>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %1 = "galv.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64> loc("/c0"("Constant"))
  %2 = "galv.gather"(%0, %1) {axis = 0 : i64} : (tensor<*x!galv.any>, tensor<i64>) -> tensor<*x!galv.any> loc("/Gather"("Gather"))
  %3 = "galv.unsqueeze"(%2) {axes = array<i64: 0>} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Unsqueeze"("Unsqueeze"))
  %4 = "galv.constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64> loc("/cm1"("Constant"))
  %5 = "galv.concat"(%3, %4) {axis = 0 : i64} : (tensor<*x!galv.any>, tensor<1xi64>) -> tensor<*x!galv.any> loc("/Concat"("Concat"))
  %6 = "galv.reshape"(%arg0, %5) : (tensor<2x3x4xf32>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Reshape"("Reshape"))
  "galv.return"(%6) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
