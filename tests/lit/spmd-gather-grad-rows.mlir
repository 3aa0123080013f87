// gather_grad of a table whose gradient is taken split on its rows (here
// by the update of the tp-split table it returns, as an optimizer's; the
// same for the sum with a tied head's vocab-parallel gradient or a pipeline
// stage's split return): propagate-sharding computes it split (the rule's result-only
// table factor) instead of whole and sliced (a 10x8 buffer, then a
// shard_slice), and spmd-partition makes each rank scatter-add only the ids
// of its rows: the ids shifted by the rank's first row (axis_index x 5),
// those outside its rows sent to row 0 with their dy rows zeroed (Megatron's
// vocab-parallel embedding backward). dy and the ids stay whole (pinned so:
// forward propagation records the gradient whole before its use is seen).
// RUN: %galv-opt --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// PROP: "galv.gather_grad"(%0, %arg1) {axis = 0 : i64, dim = 10 : i64, sharding = #galv.sharding<@m, [{"tp"}, {}]>}
// PROP-NOT: galv.reshard
// PROP: "galv.sub"
// CHECK-NOT: galv.shard_slice
// CHECK: "galv.axis_index"() {axes = ["tp"]
// CHECK: "galv.mul"({{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK: "galv.sub"(%arg1,
// CHECK: "galv.where"({{.*}} : (tensor<4x3xi1>, tensor<4x3xi64>, tensor<i64>) -> tensor<4x3xi64>
// CHECK: "galv.reshape"({{.*}} : (tensor<4x3xi1>) -> tensor<4x3x1xi1>
// CHECK: "galv.where"({{.*}} : (tensor<4x3x1xi1>, tensor<4x3x8xf32>, tensor<f32>) -> tensor<4x3x8xf32>
// CHECK: "galv.gather_grad"({{.*}}) {axis = 0 : i64, dim = 5 : i64{{.*}} : (tensor<4x3x8xf32>, tensor<4x3xi64>) -> tensor<5x8xf32>
// CHECK-NOT: galv.shard_slice
// CHECK: "galv.sub"(%arg2, {{.*}} : (tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<5x8xf32>
// CHECK-NOT: galv.all_
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x3x8xf32>, %arg1: tensor<4x3xi64>, %arg2: tensor<10x8xf32>):
  %0 = "galv.neg"(%arg0) : (tensor<4x3x8xf32>) -> tensor<4x3x8xf32> loc("/n"("Neg"))
  %1 = "galv.gather_grad"(%0, %arg1) {axis = 0 : i64, dim = 10 : i64} : (tensor<4x3x8xf32>, tensor<4x3xi64>) -> tensor<10x8xf32> loc("/wte/Gather/grad"("Gather"))
  %2 = "galv.sub"(%arg2, %1) : (tensor<10x8xf32>, tensor<10x8xf32>) -> tensor<10x8xf32> loc("update")
  "galv.return"(%2) : (tensor<10x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "dy", galv.sharding = #galv.sharding<@m, [{}, {}, {}]>}, {galv.name = "ids", galv.sharding = #galv.sharding<@m, [{}, {}]>}, {galv.name = "w", galv.sharding = #galv.sharding<@m, [{"tp"}, {}]>}], res_attrs = [{galv.name = "w", galv.updates = 2 : i64}], sym_name = "main"} : () -> ()
