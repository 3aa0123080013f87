// gather_nd / scatter_nd sharding rules under dp. gather_nd: the index
// dims but the last pass to the result's leading dims, so a batch-split
// index tensor into a replicated table gives a batch-split result with no
// collective. The k indexed dims of data stay whole: data split on its
// (indexed) batch dim is gathered once, and scatter_nd writes every update
// into a whole copy (its tuple dims and updates carry no factor).
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: ^bb0(%arg0: tensor<6x4x8xf32>, %arg1: tensor<2x2x1xi64>, %arg2: tensor<2x6x8xf32>, %arg3: tensor<3x6x8xf32>):
// CHECK-NEXT: %0 = "galv.gather_nd"(%arg0, %arg1) {sharding = #galv.sharding<@m, [{"dp"}, {}, {}, {}]>} : (tensor<6x4x8xf32>, tensor<2x2x1xi64>) -> tensor<2x2x4x8xf32> loc("/GatherND"("GatherND"))
// CHECK-NEXT: "galv.constant"
// CHECK-NEXT: %[[X:[0-9]+]] = "galv.all_gather"(%arg2) {axes = ["dp"], {{.*}}dim = 0 : i64{{.*}} : (tensor<2x6x8xf32>) -> tensor<4x6x8xf32> loc("/GatherND_rows")
// CHECK-NEXT: "galv.gather_nd"(%[[X]], %1) {{.*}} -> tensor<3x6x8xf32> loc("/GatherND_rows"("GatherND"))
// CHECK-NEXT: "galv.scatter_nd"(%[[X]], %1, %arg3) {reduction = "none", sharding = #galv.sharding<@m, [{}, {}, {}]>} : (tensor<4x6x8xf32>, tensor<3x1xi64>, tensor<3x6x8xf32>) -> tensor<4x6x8xf32>
// CHECK-NEXT: "galv.all_gather"(%0) {{.*}} loc("return")
// CHECK-NEXT: "galv.return"
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<6x4x8xf32>, %arg1: tensor<4x2x1xi64>, %arg2: tensor<4x6x8xf32>, %arg3: tensor<3x6x8xf32>):
  %0 = "galv.gather_nd"(%arg0, %arg1) : (tensor<6x4x8xf32>, tensor<4x2x1xi64>) -> tensor<4x2x4x8xf32> loc("/GatherND"("GatherND"))
  %1 = "galv.constant"() {value = dense<[[1], [3], [0]]> : tensor<3x1xi64>} : () -> tensor<3x1xi64> loc("/rows"("Constant"))
  %2 = "galv.gather_nd"(%arg2, %1) : (tensor<4x6x8xf32>, tensor<3x1xi64>) -> tensor<3x6x8xf32> loc("/GatherND_rows"("GatherND"))
  %3 = "galv.scatter_nd"(%arg2, %1, %arg3) {reduction = "none"} : (tensor<4x6x8xf32>, tensor<3x1xi64>, tensor<3x6x8xf32>) -> tensor<4x6x8xf32> loc("/ScatterND_rows"("ScatterND"))
  "galv.return"(%0, %2, %3) : (tensor<4x2x4x8xf32>, tensor<3x6x8xf32>, tensor<4x6x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "table", galv.param}, {galv.name = "ids"}, {galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "g"}, {galv.name = "g2"}, {galv.name = "s"}], sym_name = "main"} : () -> ()
