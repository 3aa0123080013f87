// shape-infer + fold-constants to a fixed point: an If whose condition only
// folding gives (a count over a 96-element ConstantOfShape, too large for
// shape-infer's side values) with branches of different ranks. The first
// sweep folds the condition and splices the then branch (squeezed, rank 2);
// shape-infer then types the Neg behind it, and the second sweep turns the
// MatMul into a dot. One sweep alone left the MatMul unranked.
// RUN: %galv-opt --passes=shape-infer,fold-constants,dce %s | %FileCheck %s
// CHECK-NOT: "galv.if"
// CHECK: %0 = "galv.squeeze"(%arg0) {axes = array<i64: 0>} : (tensor<1x3x4xf32>) -> tensor<3x4xf32> loc("/then/Squeeze"("Squeeze"))
// CHECK-NEXT: %1 = "galv.neg"(%0) : (tensor<3x4xf32>) -> tensor<3x4xf32> loc("/Neg"("Neg"))
// CHECK-NEXT: %2 = "galv.dot"(%1, %arg1) {{.*}} : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: galv.matmul
"galv.func"() ({
^bb0(%arg0: tensor<1x3x4xf32>, %arg1: tensor<4x6xf32>):
  %0 = "galv.constant"() {value = dense<[96]> : tensor<1xi64>} : () -> tensor<1xi64> loc("/n"("Constant"))
  %1 = "galv.constant_of_shape"(%0) {value = dense<1.0> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<*x!galv.any> loc("/ones"("ConstantOfShape"))
  %2 = "galv.reduce_sum"(%1) {keepdims = 0 : i64} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/count"("ReduceSum"))
  %3 = "galv.constant"() {value = dense<50.0> : tensor<f32>} : () -> tensor<f32> loc("/half"("Constant"))
  %4 = "galv.greater"(%2, %3) : (tensor<*x!galv.any>, tensor<f32>) -> tensor<*x!galv.any> loc("/cond"("Greater"))
  %5 = "galv.if"(%4) ({
    %8 = "galv.squeeze"(%arg0) {axes = array<i64: 0>} : (tensor<1x3x4xf32>) -> tensor<*x!galv.any> loc("/then/Squeeze"("Squeeze"))
    "galv.yield"(%8) : (tensor<*x!galv.any>) -> () loc("/then/yield")
  }, {
    "galv.yield"(%arg0) : (tensor<1x3x4xf32>) -> () loc("/else/yield")
  }) : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/If"("If"))
  %6 = "galv.neg"(%5) : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Neg"("Neg"))
  %7 = "galv.matmul"(%6, %arg1) : (tensor<*x!galv.any>, tensor<4x6xf32>) -> tensor<*x!galv.any> loc("/MatMul"("MatMul"))
  "galv.return"(%7) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
