// fold-constants: a constant false condition takes the else branch; an if
// nested in the taken branch is resolved as well, and a branch that only
// yields an outer value leaves no ops behind.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK-NOT: "galv.if"
// CHECK-NOT: "galv.yield"
// CHECK: %0 = "galv.neg"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/else/Neg"("Neg"))
// CHECK-NEXT: "galv.return"(%0, %arg0)
"galv.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "galv.constant"() {value = dense<false> : tensor<i1>} : () -> tensor<i1> loc("/Constant"("Constant"))
  %1 = "galv.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1> loc("/Constant_1"("Constant"))
  %2 = "galv.if"(%0) ({
    %3 = "galv.exp"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/then/Exp"("Exp"))
    "galv.yield"(%3) : (tensor<4xf32>) -> () loc("then")
  }, {
    %4 = "galv.if"(%1) ({
      %5 = "galv.neg"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/else/Neg"("Neg"))
      "galv.yield"(%5) : (tensor<4xf32>) -> () loc("inner-then")
    }, {
      "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("inner-else")
    }) : (tensor<i1>) -> tensor<4xf32> loc("/else/If"("If"))
    "galv.yield"(%4) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<4xf32> loc("/If"("If"))
  %6 = "galv.if"(%0) ({
    %7 = "galv.exp"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/then2/Exp"("Exp"))
    "galv.yield"(%7) : (tensor<4xf32>) -> () loc("then")
  }, {
    "galv.yield"(%arg0) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<4xf32> loc("/If_1"("If"))
  "galv.return"(%2, %6) : (tensor<4xf32>, tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}, {galv.name = "z"}], sym_name = "main"} : () -> ()
