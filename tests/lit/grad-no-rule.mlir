// An op whose result needs a gradient but has no rule (galv.if) is one
// error naming the node.
// RUN: not %galv-opt --passes=autodiff %s 2>&1 | %FileCheck %s
// CHECK: error: {{.*}}node '/cond/If' (If): no gradient rule for galv.if
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<i1>, %arg1: tensor<3xf32>):
  %0 = "galv.if"(%arg0) ({
    %2 = "galv.neg"(%arg1) : (tensor<3xf32>) -> tensor<3xf32> loc("/then/Neg"("Neg"))
    "galv.yield"(%2) : (tensor<3xf32>) -> () loc("then")
  }, {
    "galv.yield"(%arg1) : (tensor<3xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<3xf32> loc("/cond/If"("If"))
  %1 = "galv.reduce_sum"(%0) {keepdims = 0 : i64} : (tensor<3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%1) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "c"}, {galv.name = "p", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
