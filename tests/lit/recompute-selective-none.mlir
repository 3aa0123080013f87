// recompute --recompute=selective on a function whose softmax does not
// feed a dot (no attention core): one error line.
// RUN: not %galv-opt --passes=autodiff,recompute --recompute=selective %s 2>&1 | %FileCheck %s
// CHECK: galv-opt: error: {{.*}}recompute: --recompute=selective finds no attention core (dot -> [elementwise] -> softmax -> dot) in the forward
// CHECK-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %2 = "galv.reduce_sum"(%1) {keepdims = 0 : i64} : (tensor<2x4x4xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%2) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q", galv.param}, {galv.name = "k", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
