// autodiff of topk: x's gradient is the values' gradient scattered (add)
// into zeros at the indices (the op's second result) along the normalised
// axis; the indices, an integer result, get none.
// RUN: %galv-opt --passes=autodiff %s | %FileCheck %s
// CHECK: %[[T:[0-9]+]]:2 = "galv.topk"(%arg0)
// CHECK: "galv.scatter_elements"(%{{[0-9]+}}, %[[T]]#1, %{{[0-9]+}}) {axis = 1 : i64, reduction = "add"} : (tensor<2x5xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x5xf32> loc("/TopK/grad"("TopK"))
"galv.func"() ({
^bb0(%arg0: tensor<2x5xf32>):
  %0:2 = "galv.topk"(%arg0) {axis = -1 : i64, k = 3 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) loc("/TopK"("TopK"))
  %1 = "galv.mul"(%0#0, %0#0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("/sq"("Mul"))
  %2 = "galv.reduce_sum"(%1) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%2) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
