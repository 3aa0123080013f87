// gather_elements / scatter_elements sharding rules under dp: every dim but
// the axis is one factor of data, indices, updates and result, so the
// batch split passes through both ops with no collective before them (the
// only all_gathers of the first two are the return's, whose outputs are
// whole). An index tensor smaller than data on the batch dim (ONNX allows
// it) cannot share the split: data and indices are gathered first; a
// gather along the split dim itself (the axis stays whole) gathers too.
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// PROP: "galv.gather_elements"(%arg0, %arg1) {axis = 1 : i64, sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}
// PROP-NEXT: "galv.scatter_elements"(%arg0, %arg1, %arg2) {axis = 1 : i64, reduction = "add", sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}
// CHECK: ^bb0(%arg0: tensor<2x6x8xf32>, %arg1: tensor<2x3x8xi64>, %arg2: tensor<2x3x8xf32>, %arg3: tensor<1x3x8xi64>):
// CHECK-NEXT: %0 = "galv.gather_elements"(%arg0, %arg1) {{.*}} : (tensor<2x6x8xf32>, tensor<2x3x8xi64>) -> tensor<2x3x8xf32> loc("/GatherElements"("GatherElements"))
// CHECK-NEXT: %1 = "galv.scatter_elements"(%arg0, %arg1, %arg2) {{.*}} : (tensor<2x6x8xf32>, tensor<2x3x8xi64>, tensor<2x3x8xf32>) -> tensor<2x6x8xf32> loc("/ScatterElements"("ScatterElements"))
// CHECK-NEXT: %[[X:[0-9]+]] = "galv.all_gather"(%arg0) {axes = ["dp"], {{.*}}dim = 0 : i64{{.*}} : (tensor<2x6x8xf32>) -> tensor<4x6x8xf32> loc("/GatherElements_small")
// CHECK-NEXT: %[[J:[0-9]+]] = "galv.all_gather"(%arg3) {{.*}} : (tensor<1x3x8xi64>) -> tensor<2x3x8xi64> loc("/GatherElements_small")
// CHECK-NEXT: "galv.gather_elements"(%[[X]], %[[J]]) {{.*}} -> tensor<2x3x8xf32> loc("/GatherElements_small"("GatherElements"))
// CHECK-NEXT: %[[I:[0-9]+]] = "galv.all_gather"(%arg1) {{.*}} : (tensor<2x3x8xi64>) -> tensor<4x3x8xi64> loc("/GatherElements_axis0")
// CHECK-NEXT: "galv.gather_elements"(%[[X]], %[[I]]) {axis = 0 : i64{{.*}} -> tensor<4x3x8xf32> loc("/GatherElements_axis0"("GatherElements"))
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x6x8xf32>, %arg1: tensor<4x3x8xi64>, %arg2: tensor<4x3x8xf32>, %arg3: tensor<2x3x8xi64>):
  %0 = "galv.gather_elements"(%arg0, %arg1) {axis = 1 : i64} : (tensor<4x6x8xf32>, tensor<4x3x8xi64>) -> tensor<4x3x8xf32> loc("/GatherElements"("GatherElements"))
  %1 = "galv.scatter_elements"(%arg0, %arg1, %arg2) {axis = 1 : i64, reduction = "add"} : (tensor<4x6x8xf32>, tensor<4x3x8xi64>, tensor<4x3x8xf32>) -> tensor<4x6x8xf32> loc("/ScatterElements"("ScatterElements"))
  %2 = "galv.gather_elements"(%arg0, %arg3) {axis = 1 : i64} : (tensor<4x6x8xf32>, tensor<2x3x8xi64>) -> tensor<2x3x8xf32> loc("/GatherElements_small"("GatherElements"))
  %3 = "galv.gather_elements"(%arg0, %arg1) {axis = 0 : i64} : (tensor<4x6x8xf32>, tensor<4x3x8xi64>) -> tensor<4x3x8xf32> loc("/GatherElements_axis0"("GatherElements"))
  "galv.return"(%0, %1, %2, %3) : (tensor<4x3x8xf32>, tensor<4x6x8xf32>, tensor<2x3x8xf32>, tensor<4x3x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "i"}, {galv.name = "u"}, {galv.name = "j"}], res_attrs = [{galv.name = "g"}, {galv.name = "s"}, {galv.name = "g2"}, {galv.name = "g3"}], sym_name = "main"} : () -> ()
