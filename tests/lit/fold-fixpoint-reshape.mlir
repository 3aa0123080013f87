// shape-infer + fold-constants to a fixed point: a computed Reshape target
// (the batch dim from Shape, the rest a count that only folding evaluates)
// folds; shape-infer then types the Add behind the reshape (left ?x? by the
// first sweep) and the second sweep lowers the MatMul into a dot.
// RUN: %galv-opt --passes=shape-infer,fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.reshape"(%arg0) : (tensor<2x8x12xf32>) -> tensor<2x96xf32> loc("/Reshape"("Reshape"))
// CHECK-NEXT: %1 = "galv.add"(%0, %0) : (tensor<2x96xf32>, tensor<2x96xf32>) -> tensor<2x96xf32> loc("/Add"("Add"))
// CHECK-NEXT: %2 = "galv.dot"(%1, %arg1) {{.*}} : (tensor<2x96xf32>, tensor<96x4xf32>) -> tensor<2x4xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: tensor<?
"galv.func"() ({
^bb0(%arg0: tensor<2x8x12xf32>, %arg1: tensor<96x4xf32>):
  %0 = "galv.constant"() {value = dense<[96]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/n"("Constant"))
  %1 = "galv.constant_of_shape"(%0) {value = dense<1.0> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<*x!galv.any> loc("/ones"("ConstantOfShape"))
  %2 = "galv.reduce_sum"(%1) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/count"("ReduceSum"))
  %3 = "galv.cast"(%2) {to = i64} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Cast"("Cast"))
  %4 = "galv.shape"(%arg0) {end = 1 : i64} : (tensor<2x8x12xf32>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %5 = "galv.concat"(%4, %3) {axis = 0 : i64} : (tensor<*x!galv.any>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Concat"("Concat"))
  %6 = "galv.reshape"(%arg0, %5) : (tensor<2x8x12xf32>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Reshape"("Reshape"))
  %7 = "galv.add"(%6, %6) : (tensor<*x!galv.any>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Add"("Add"))
  %8 = "galv.matmul"(%7, %arg1) : (tensor<*x!galv.any>, tensor<96x4xf32>) -> tensor<*x!galv.any> loc("/MatMul"("MatMul"))
  "galv.return"(%8) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
