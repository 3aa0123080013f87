// A Llama-style squeeze exported as an If whose branches yield different
// ranks (squeezed or not): the importer gives the if an unranked result and
// records the MatMul behind it as galv.matmul; shape-infer evaluates the
// condition (shape(x)[0] == 1) and types the if by its taken branch,
// fold-constants splices the branch and turns the matmul into a dot.
// RUN: %galv-opt --passes=shape-infer,fold-constants,dce %s | %FileCheck %s
// CHECK-NOT: "galv.if"
// CHECK: %0 = "galv.squeeze"(%arg0) {axes = array<i64: 0>} : (tensor<1x3x4xf32>) -> tensor<3x4xf32> loc("/then/Squeeze"("Squeeze"))
// CHECK-NEXT: %1 = "galv.dot"(%0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<3x6xf32> loc("/MatMul"("MatMul"))
// CHECK-NEXT: "galv.return"(%1)
// CHECK-NOT: galv.matmul
"galv.func"() ({
^bb0(%arg0: tensor<1x3x4xf32>, %arg1: tensor<4x6xf32>):
  %0 = "galv.shape"(%arg0) {end = 1 : i64, start = 0 : i64} : (tensor<1x3x4xf32>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %1 = "galv.constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64> loc("/Constant"("Constant"))
  %2 = "galv.equal"(%0, %1) : (tensor<*x!galv.any>, tensor<1xi64>) -> tensor<*xi1> loc("/Equal"("Equal"))
  %3 = "galv.if"(%2) ({
    %4 = "galv.squeeze"(%arg0) {axes = array<i64: 0>} : (tensor<1x3x4xf32>) -> tensor<3x4xf32> loc("/then/Squeeze"("Squeeze"))
    "galv.yield"(%4) : (tensor<3x4xf32>) -> () loc("then")
  }, {
    "galv.yield"(%arg0) : (tensor<1x3x4xf32>) -> () loc("else")
  }) : (tensor<*xi1>) -> tensor<*xf32> loc("/If"("If"))
  %5 = "galv.matmul"(%3, %arg1) : (tensor<*xf32>, tensor<4x6xf32>) -> tensor<*xf32> loc("/MatMul"("MatMul"))
  "galv.return"(%5) : (tensor<*xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
