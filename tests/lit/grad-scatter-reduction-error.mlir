// scatter_nd / scatter_elements with reduction mul / max / min run forward
// on every target, but have no gradient rule: autodiff through one is one
// error naming the node (none and add differentiate: grad-scatter-nd).
// RUN: not %galv-opt --passes=autodiff %s 2>&1 | %FileCheck %s
// RUN: not %galv-opt --passes=autodiff %S/Inputs/grad-scatter-elements-mul.ir 2>&1 | %FileCheck %s --check-prefix=ELEM
// CHECK: error: {{.*}}node '/scatter'{{.*}}(ScatterND): gradient: scatter_nd with reduction 'max' has no gradient rule (none and add have)
// CHECK-NOT: error
// ELEM: error: {{.*}}node '/scatter'{{.*}}(ScatterElements): gradient: scatter_elements with reduction 'mul' has no gradient rule (none and add have)
// ELEM-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<2x1xi64>, %arg1: tensor<4x3xf32>, %arg2: tensor<2x3xf32>):
  %1 = "galv.scatter_nd"(%arg1, %arg0, %arg2) {reduction = "max"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32> loc("/scatter"("ScatterND"))
  %2 = "galv.mul"(%1, %1) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32> loc("/sq"("Mul"))
  %3 = "galv.reduce_sum"(%2) {keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%3) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "idx"}, {galv.name = "x", galv.param}, {galv.name = "y", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
