// galv.topk's shape rule: values and indices (i64) with the axis cut to k
// (negative axis, a middle axis); a k larger than the axis and a negative k
// are one error line naming the node.
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.topk"(%arg0) {axis = -1 : i64, k = 3 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<2x4x6xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xi64>)
// CHECK: "galv.topk"(%arg0) {axis = 1 : i64, k = 4 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<2x4x6xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xi64>)
// RUN: sed -e 's/k = 3 : i64/k = 7 : i64/' %s > %t.bad.mlir && not %galv-opt %t.bad.mlir --passes=shape-infer 2>&1 | %FileCheck %s --check-prefix=BIG
// BIG: error: {{.*}}node '/TopK' (TopK): shape: topk k 7 exceeds dim 2 of tensor<2x4x6xf32>
// RUN: sed -e 's/k = 3 : i64/k = -1 : i64/' %s > %t.neg.mlir && not %galv-opt %t.neg.mlir --passes=shape-infer 2>&1 | %FileCheck %s --check-prefix=NEG
// NEG: error: {{.*}}node '/TopK' (TopK): shape: topk k -1 is negative
"galv.func"() ({
^bb0(%arg0: tensor<2x4x6xf32>):
  %0:2 = "galv.topk"(%arg0) {axis = -1 : i64, k = 3 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<2x4x6xf32>) -> (tensor<*x!galv.any>, tensor<*x!galv.any>) loc("/TopK"("TopK"))
  %1:2 = "galv.topk"(%arg0) {axis = 1 : i64, k = 4 : i64, largest = 0 : i64, sorted = 1 : i64} : (tensor<2x4x6xf32>) -> (tensor<*x!galv.any>, tensor<*x!galv.any>) loc("/TopK_1"("TopK"))
  "galv.return"(%0#0, %0#1, %1#0) : (tensor<*x!galv.any>, tensor<*x!galv.any>, tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "v"}, {galv.name = "i"}, {galv.name = "w"}], sym_name = "main"} : () -> ()
