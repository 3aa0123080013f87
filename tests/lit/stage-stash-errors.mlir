// stage-stash: bad input is one error line. A sent value that depends on
// a gradient input cannot be in the forward entry; a part other than
// forward / backward / input-grad / weight-grad; a function without "grad:"
// results (not an earlier stage's training function); a backward without a
// parameter gradient to split off (input-grad / weight-grad).
// RUN: not %galv-opt --passes=stage-stash --stash=forward %s 2>&1 | %FileCheck %s
// RUN: not %galv-opt --passes=stage-stash --stash=sideways %s 2>&1 | %FileCheck %s --check-prefix=PART
// RUN: not %galv-opt --passes=stage-stash --stash=backward %S/train-step.mlir 2>&1 | %FileCheck %s --check-prefix=NOTTRAIN
// RUN: not %galv-opt --passes=stage-stash --stash=input-grad %s 2>&1 | %FileCheck %s --check-prefix=NOW
// RUN: not %galv-opt --passes=stage-stash --stash=weight-grad %s 2>&1 | %FileCheck %s --check-prefix=NOW
// CHECK: galv-opt: error: {{.*}}stage-stash: the values sent on depend on the gradient input 'gin:pp.1.0'
// CHECK-NOT: error
// PART: galv-opt: error: {{.*}}stage-stash: expected the part forward, backward, input-grad or weight-grad (galv-opt --stash=forward|backward|input-grad|weight-grad), got 'sideways'
// PART-NOT: error
// NOTTRAIN: galv-opt: error: {{.*}}stage-stash: not an earlier pipeline stage's training function
// NOTTRAIN-NOT: error
// NOW: galv-opt: error: {{.*}}stage-stash: {{input|weight}}-grad needs parameter gradients ("grad:NAME" results) and other results
// NOW-NOT: error
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>):
  %0 = "galv.mul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/bad")
  %1 = "galv.reduce_sum"(%0) {keepdims = 0 : i64} : (tensor<4x8xf32>) -> tensor<f32> loc("pipeline/seed")
  "galv.return"(%1, %arg1, %0) : (tensor<f32>, tensor<4x8xf32>, tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "pp.0.0"}, {galv.name = "gin:pp.1.0"}], res_attrs = [{galv.name = "pp.seed"}, {galv.name = "grad:pp.0.0"}, {galv.name = "pp.1.0"}], sym_name = "main"} : () -> ()
