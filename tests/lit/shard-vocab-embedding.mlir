// Vocab-parallel embedding (tp preset): the table is split on its vocab
// dim; each rank looks up the ids in its range (galv.axis_index gives its
// coordinate), zeros elsewhere, and an all_reduce completes the sum.
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: ^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<8x6xf32>)
// CHECK: %[[C:[0-9]+]] = "galv.axis_index"() {axes = ["tp"], mesh = "m"} : () -> tensor<i64>
// CHECK: "galv.mul"(%[[C]], %{{[0-9]+}})
// CHECK: %[[IN:[0-9]+]] = "galv.and"
// CHECK: %[[IDX:[0-9]+]] = "galv.where"(%[[IN]], %{{[0-9]+}}, %{{[0-9]+}}) : (tensor<2x4xi1>, tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
// CHECK: %[[M:[0-9]+]] = "galv.reshape"(%[[IN]]) : (tensor<2x4xi1>) -> tensor<2x4x1xi1>
// CHECK: %[[G:[0-9]+]] = "galv.gather"(%arg1, %[[IDX]]) {axis = 0 : i64, sharding = #galv.sharding<@m, [{}, {}, {}], partial={"tp":sum}>} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
// CHECK: %[[W:[0-9]+]] = "galv.where"(%[[M]], %[[G]], %{{[0-9]+}})
// CHECK: "galv.all_reduce"(%[[W]]) {axes = ["tp"], bytes = 192 : i64, mesh = "m", reduce = "sum"
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<16x6xf32>):
  %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<16x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/wte"("Gather"))
  %1 = "galv.tanh"(%0) : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32> loc("/t"("Tanh"))
  "galv.return"(%1) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "wte", galv.param}], res_attrs = [{}], sym_name = "main"} : () -> ()
