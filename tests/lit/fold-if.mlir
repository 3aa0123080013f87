// fold-constants: a galv.if whose condition folds to a constant (here
// shape(x)[1] > 0, T5's shape-only guard) is replaced by its taken branch:
// the branch's ops move in place of the if and its yielded value replaces
// the if's result; the ops moved in are folded too.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK-NOT: "galv.if"
// CHECK-NOT: "galv.yield"
// CHECK-NOT: "galv.shape"
// CHECK: %0 = "galv.constant"() {value = dense<2.000000000e+00> : tensor<4xf32>} : () -> tensor<4xf32> loc("/then/Add"("Add"))
// CHECK-NEXT: %1 = "galv.mul"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/then/Mul"("Mul"))
// CHECK-NEXT: "galv.return"(%1)
"galv.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "galv.shape"(%arg0) : (tensor<4xf32>) -> tensor<1xi64> loc("/Shape"("Shape"))
  %1 = "galv.constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant"("Constant"))
  %2 = "galv.greater"(%0, %1) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1> loc("/Greater"("Greater"))
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<4xf32>} : () -> tensor<4xf32> loc("/Constant_1"("Constant"))
  %4 = "galv.if"(%2) ({
    %5 = "galv.add"(%3, %3) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/then/Add"("Add"))
    %6 = "galv.mul"(%arg0, %5) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/then/Mul"("Mul"))
    "galv.yield"(%6) : (tensor<4xf32>) -> () loc("then")
  }, {
    %7 = "galv.neg"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("/else/Neg"("Neg"))
    "galv.yield"(%7) : (tensor<4xf32>) -> () loc("else")
  }) : (tensor<1xi1>) -> tensor<4xf32> loc("/If"("If"))
  "galv.return"(%4) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
