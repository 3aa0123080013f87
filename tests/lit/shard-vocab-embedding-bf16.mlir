// shard-vocab-embedding.mlir's vocab-parallel embedding with every f32
// value stored bf16 (the storage pass on the global program,
// --precision=bf16): the masked lookup (galv.where after the local gather)
// is stored like the gather, so its all_reduce moves 2 bytes per element,
// what the planner predicted from the global gather (96 bytes, half the
// f32 192); stored f32 it moved 192 and spmd-partition refused the
// program (the predicted-bytes check).
// RUN: %galv-opt --strategy=tp --precision=bf16 --passes=propagate-sharding,storage,spmd-partition %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["tp"=2]>, predicted_bytes = [96, 0, 0, 0], sym_name = "m"}
// CHECK: %[[G:[0-9]+]] = "galv.gather"(%arg1, %{{[0-9]+}}) {axis = 0 : i64, sharding = #galv.sharding<@m, [{}, {}, {}], partial={"tp":sum}>, storage = ["bf16"]}
// CHECK: %[[W:[0-9]+]] = "galv.where"(%{{[0-9]+}}, %[[G]], %{{[0-9]+}}) {sharding = {{.*}}, storage = ["bf16"]}
// CHECK: "galv.all_reduce"(%[[W]]) {axes = ["tp"], bytes = 96 : i64, mesh = "m", reduce = "sum", sharding = {{.*}}, storage = ["bf16"]}
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4xi64>, %arg1: tensor<16x6xf32>):
  %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<16x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32> loc("/wte"("Gather"))
  %1 = "galv.tanh"(%0) : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32> loc("/t"("Tanh"))
  "galv.return"(%1) : (tensor<2x4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "ids"}, {galv.name = "wte", galv.param}], res_attrs = [{}], sym_name = "main"} : () -> ()
