// Sharded -> replicated with the local all-gather: the receivers replicate
// over "y", so the transfer delivers rows split over "y" (each byte crosses
// once: 128 bytes, not 256) and a galv.reshard to replicated on s1 follows,
// which spmd-partition lowers to an all_gather inside the receiving mesh.
// RUN: %galv-opt --passes=stage-split --pipe-stats %s 2>%t.err | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=STATS < %t.err
// RUN: %galv-opt --passes=stage-split %s -o %t && %mlir-check %t
// CHECK: %[[R:[0-9]+]] = "galv.recv"() {allgather = ["y"], {{.*}}sharding = #galv.sharding<@s1, [{"y"}, {}]>
// CHECK-NEXT: %[[G:[0-9]+]] = "galv.reshard"(%[[R]]) {sharding = #galv.sharding<@s1, [{}, {}]>, stage = 1 : i64}
// CHECK-NEXT: "galv.gelu"(%[[G]])
// STATS: 128 bytes between meshes (256 without the local all-gather, 256 naive)
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s0"} : () -> ()
"galv.mesh"() {axes = #galv.axes<["y"=2]>, sym_name = "s1"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@s0, [{"x"}, {}]>, stage = 0 : i64} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = "galv.gelu"(%0) {approximate = "none", sharding = #galv.sharding<@s1, [{}, {}]>, stage = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  "galv.return"(%1) : (tensor<8x4xf32>) -> ()
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
