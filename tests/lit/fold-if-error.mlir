// fold-constants: an if whose condition is not a compile-time constant is an
// error, one line naming the node.
// RUN: not %galv-opt --passes=fold-constants %s 2>&1 | %FileCheck %s
// CHECK: galv-opt: error: {{.*}}fold-if-error.mlir: node '/decoder/If' (If): If condition is not a compile-time constant
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<4xf32>, %arg1: tensor<i1>):
  %0 = "galv.if"(%arg1) ({
    "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("then")
  }, {
    %1 = "galv.neg"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/else/Neg"("Neg"))
    "galv.yield"(%1) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<4xf32> loc("/decoder/If"("If"))
  "galv.return"(%0) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "c"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
