// fold-constants: MatMul operands whose ranks only shape-infer finds (T5's
// `.repeat` exported as Expand(x, ConstantOfShape(Shape(repeats)))): the
// importer records galv.matmul on an unranked operand; shape-infer ranks the
// expand through the shape chain, fold-constants folds the chain and turns
// the matmul into a dot; its lhs batch dim 1 broadcasts (an expand).
// RUN: %galv-opt --passes=shape-infer,fold-constants,dce %s | %FileCheck %s
// CHECK-NOT: galv.shape
// CHECK-NOT: galv.constant_of_shape
// CHECK: %0 = "galv.expand"(%arg0) : (tensor<3x4xf32>) -> tensor<1x3x4xf32> loc("/Expand"("Expand"))
// CHECK-NEXT: %1 = "galv.expand"(%0) : (tensor<1x3x4xf32>) -> tensor<2x3x4xf32> loc("/MatMul"("MatMul"))
// CHECK: "galv.dot"({{.*}}) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x4x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NOT: galv.matmul
"galv.func"() ({
^bb0(%arg0: tensor<3x4xf32>, %arg1: tensor<2x4x6xf32>):
  %0 = "galv.constant"() {value = dense<[2, 1, 1]> : tensor<3xi64>} : () -> tensor<3xi64> loc("/repeats"("Constant"))
  %1 = "galv.shape"(%0) : (tensor<3xi64>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %2 = "galv.constant_of_shape"(%1) {value = dense<1> : tensor<1xi64>} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/ConstantOfShape"("ConstantOfShape"))
  %3 = "galv.expand"(%arg0, %2) : (tensor<3x4xf32>, tensor<*x!galv.any>) -> tensor<*xf32> loc("/Expand"("Expand"))
  %4 = "galv.matmul"(%3, %arg1) : (tensor<*xf32>, tensor<2x4x6xf32>) -> tensor<*xf32> loc("/MatMul"("MatMul"))
  "galv.return"(%4) : (tensor<*xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
