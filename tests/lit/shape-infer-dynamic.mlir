// With an unknown input dim, shape-infer keeps the dim unknown instead of
// failing: the shape value is not known, so the reshape only gets its rank;
// broadcasting ? against 4 gives 4, and ? against 1 stays ?.
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.add"(%arg0, %arg1) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
// CHECK: "galv.mul"(%arg0, %arg2) : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
// CHECK: "galv.shape"(%arg0) : (tensor<?x4xf32>) -> tensor<2xi64>
// CHECK: "galv.reshape"(%0, %2) : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
// CHECK-NOT: tensor<*x
"galv.func"() ({
^bb0(%arg0: tensor<?x4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<?x1xf32>):
  %0 = "galv.add"(%arg0, %arg1) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<*x!galv.any> loc("/Add"("Add"))
  %1 = "galv.mul"(%arg0, %arg2) : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<*x!galv.any> loc("/Mul"("Mul"))
  %2 = "galv.shape"(%arg0) : (tensor<?x4xf32>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %3 = "galv.reshape"(%0, %2) : (tensor<*x!galv.any>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Reshape"("Reshape"))
  "galv.return"(%3, %1) : (tensor<*x!galv.any>, tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "b"}, {galv.name = "s"}], res_attrs = [{galv.name = "y"}, {galv.name = "z"}], sym_name = "main"} : () -> ()
