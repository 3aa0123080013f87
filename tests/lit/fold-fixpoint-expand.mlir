// shape-infer + fold-constants to a fixed point, T5's `.repeat`: torch
// exports it as Expand(x, ConstantOfShape(Shape(repeats))), all unranked at
// import, with the MatMul behind it recorded as galv.matmul. The chain folds
// to a constant [1, 1, 1], the expand takes its static form (rank 3) and the
// matmul becomes a dot with the broadcast batch dim expanded.
// RUN: %galv-opt --passes=shape-infer,fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.expand"(%arg0) : (tensor<4x5xf32>) -> tensor<1x4x5xf32> loc("/Expand"("Expand"))
// CHECK-NEXT: %1 = "galv.expand"(%0) : (tensor<1x4x5xf32>) -> tensor<2x4x5xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: %2 = "galv.dot"(%1, %arg1) {{.*}} : (tensor<2x4x5xf32>, tensor<2x5x6xf32>) -> tensor<2x4x6xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: galv.constant_of_shape
// CHECK-NOT: galv.matmul
"galv.func"() ({
^bb0(%arg0: tensor<4x5xf32>, %arg1: tensor<2x5x6xf32>):
  %0 = "galv.constant"() {value = dense<[2, 1, 1]> : tensor<3xi64>} : () -> tensor<3xi64> loc("/repeats"("Constant"))
  %1 = "galv.shape"(%0) : (tensor<3xi64>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %2 = "galv.constant_of_shape"(%1) {value = dense<1> : tensor<1xi64>} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/ConstantOfShape"("ConstantOfShape"))
  %3 = "galv.expand"(%arg0, %2) : (tensor<4x5xf32>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Expand"("Expand"))
  %4 = "galv.matmul"(%3, %arg1) : (tensor<*x!galv.any>, tensor<2x5x6xf32>) -> tensor<*x!galv.any> loc("/MatMul"("MatMul"))
  "galv.return"(%4) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
