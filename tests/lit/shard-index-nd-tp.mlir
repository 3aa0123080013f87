// gather_nd / scatter_nd with the data's trailing (non-indexed) dim pinned
// over tp: data's dims past the index depth pass to the result (gather_nd:
// its trailing dims; scatter_nd: with the updates' trailing dims, which
// the unpinned argument u takes), no collective before either. Data pinned
// on the indexed dim 0 cannot keep it: the split moves to the passing dim
// 2 (all_to_all), which the updates share.
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: ^bb0(%arg0: tensor<6x4x4xf32>, %arg1: tensor<3x4x4xf32>, %arg2: tensor<3x4x8xf32>):
// CHECK-NEXT: "galv.constant"
// CHECK-NEXT: %1 = "galv.gather_nd"(%arg0, %0) {sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>} : (tensor<6x4x4xf32>, tensor<3x1xi64>) -> tensor<3x4x4xf32>
// CHECK-NEXT: %2 = "galv.scatter_nd"(%arg0, %0, %arg1) {reduction = "add", sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>} : (tensor<6x4x4xf32>, tensor<3x1xi64>, tensor<3x4x4xf32>) -> tensor<6x4x4xf32>
// CHECK-NEXT: %[[Y:[0-9]+]] = "galv.all_to_all"(%arg2) {axes = ["tp"], {{.*}}concat_dim = 0 : i64{{.*}}split_dim = 2 : i64} : (tensor<3x4x8xf32>) -> tensor<6x4x4xf32> loc("/ScatterND_indexed")
// CHECK-NEXT: "galv.scatter_nd"(%[[Y]], %0, %arg1) {reduction = "none", sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>}
// CHECK: galv.name = "u", galv.sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<6x4x8xf32>, %arg1: tensor<3x4x8xf32>, %arg2: tensor<6x4x8xf32>):
  %0 = "galv.constant"() {value = dense<[[1], [5], [0]]> : tensor<3x1xi64>} : () -> tensor<3x1xi64> loc("/rows"("Constant"))
  %1 = "galv.gather_nd"(%arg0, %0) : (tensor<6x4x8xf32>, tensor<3x1xi64>) -> tensor<3x4x8xf32> loc("/GatherND"("GatherND"))
  %2 = "galv.scatter_nd"(%arg0, %0, %arg1) {reduction = "add"} : (tensor<6x4x8xf32>, tensor<3x1xi64>, tensor<3x4x8xf32>) -> tensor<6x4x8xf32> loc("/ScatterND"("ScatterND"))
  %3 = "galv.scatter_nd"(%arg2, %0, %arg1) {reduction = "none"} : (tensor<6x4x8xf32>, tensor<3x1xi64>, tensor<3x4x8xf32>) -> tensor<6x4x8xf32> loc("/ScatterND_indexed"("ScatterND"))
  "galv.return"(%1, %2, %3) : (tensor<3x4x8xf32>, tensor<6x4x8xf32>, tensor<6x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>}, {galv.name = "u"}, {galv.name = "y", galv.sharding = #galv.sharding<@m, [{"tp"}, {}, {}]>}], res_attrs = [{galv.name = "g"}, {galv.name = "s"}, {galv.name = "s2"}], sym_name = "main"} : () -> ()
