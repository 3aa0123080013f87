// if: both regions are inferred first; the results take the then-branch's
// types, with dims that differ between the branches unknown.
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.neg"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: "galv.concat"(%arg0, %arg0) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// CHECK: }) : (tensor<i1>) -> tensor<2x?xf32>
// CHECK: "galv.return"(%0) : (tensor<2x?xf32>) -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<i1>):
  %0 = "galv.if"(%arg1) ({
    %1 = "galv.neg"(%arg0) : (tensor<2x3xf32>) -> tensor<*x!galv.any> loc("/then/Neg"("Neg"))
    "galv.yield"(%1) : (tensor<*x!galv.any>) -> () loc("then")
  }, {
    %2 = "galv.concat"(%arg0, %arg0) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<*x!galv.any> loc("/else/Concat"("Concat"))
    "galv.yield"(%2) : (tensor<*x!galv.any>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<*x!galv.any> loc("/If"("If"))
  "galv.return"(%0) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "c"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
