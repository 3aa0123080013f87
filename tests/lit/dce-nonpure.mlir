// dce never removes an op that is not pure: a galv.if whose result is unused
// stays (with its yields); the dead pure op next to it goes.
// RUN: %galv-opt --passes=dce %s | %FileCheck %s
// CHECK: "galv.func"
// CHECK-NOT: "galv.exp"
// CHECK: %0 = "galv.if"(%arg1) ({
// CHECK-NEXT: "galv.yield"(%arg0)
// CHECK: "galv.return"(%arg0)
"galv.func"() ({
^bb0(%arg0: tensor<4xf32>, %arg1: tensor<i1>):
  %0 = "galv.exp"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/exp"("Exp"))
  %1 = "galv.if"(%arg1) ({
    "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("then")
  }, {
    "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<4xf32> loc("/If"("If"))
  "galv.return"(%arg0) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "c"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
