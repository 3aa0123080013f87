// topk's sharding rule: under dp the batch dim of x stays split through
// both results (values, indices) with nothing inserted before the return;
// a topk along the split dim itself cannot keep the split (the axis is
// unsharded in the rule), so x is gathered on that dim first.
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: ^bb0(%arg0: tensor<2x8xf32>)
// CHECK: "galv.topk"(%arg0) {{.*}} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) loc("/TopK"("TopK"))
// CHECK-NEXT: "galv.all_gather"(%arg0) {axes = ["dp"], {{.*}}dim = 0 : i64{{.*}} : (tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: "galv.topk"(%{{[0-9]+}}) {axis = 0 : i64{{.*}} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi64>) loc("/TopK_batch"("TopK"))
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>):
  %0:2 = "galv.topk"(%arg0) {axis = -1 : i64, k = 3 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>) loc("/TopK"("TopK"))
  %1:2 = "galv.topk"(%arg0) {axis = 0 : i64, k = 2 : i64, largest = 1 : i64, sorted = 1 : i64} : (tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xi64>) loc("/TopK_batch"("TopK"))
  "galv.return"(%0#0, %0#1, %1#0) : (tensor<4x3xf32>, tensor<4x3xi64>, tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "v"}, {galv.name = "i"}, {galv.name = "w"}], sym_name = "main"} : () -> ()
