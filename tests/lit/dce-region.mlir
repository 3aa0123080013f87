// dce recurses into if regions: dead pure ops inside a branch go, the if
// (not pure) and the yields stay, and outer values used only by dead ops in a
// region die too.
// RUN: %galv-opt --passes=dce %s | %FileCheck %s
// CHECK: "galv.func"
// CHECK-NOT: "galv.sigmoid"
// CHECK-NOT: "galv.tanh"
// CHECK: %0 = "galv.if"(%arg1) ({
// CHECK-NEXT: "galv.yield"(%arg0)
// CHECK: }, {
// CHECK-NEXT: %1 = "galv.neg"(%arg0)
// CHECK-NEXT: "galv.yield"(%1)
// CHECK: "galv.return"(%0)
"galv.func"() ({
^bb0(%arg0: tensor<4xf32>, %arg1: tensor<i1>):
  %0 = "galv.sigmoid"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/sig"("Sigmoid"))
  %1 = "galv.if"(%arg1) ({
    %2 = "galv.tanh"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc("/then/tanh"("Tanh"))
    "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("then")
  }, {
    %3 = "galv.neg"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/else/neg"("Neg"))
    "galv.yield"(%3) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<4xf32> loc("/If"("If"))
  "galv.return"(%1) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "c"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
