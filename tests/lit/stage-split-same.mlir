// Same sharding on different meshes: rows split over "x" on s0 (stage 0)
// and over "x" on s1 (stage 1): each receiver gets its own rows from the
// sender with the same coordinate; bytes = the tensor once.
// RUN: %galv-opt --passes=stage-split --pipe-stats %s 2>%t.err | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=STATS < %t.err
// RUN: %galv-opt --passes=stage-split %s -o %t && %mlir-check %t
// CHECK: "galv.dot"
// CHECK-NEXT: "galv.send"(%0) {bytes = 128 : i64, dst_mesh = "s1", peer = 1 : i64, src_mesh = "s0", stage = 0 : i64, tiles = array<i64: 0, 0, 0, 0, 4, 4, 1, 1, 4, 0, 4, 4>}
// CHECK-NEXT: %[[R:[0-9]+]] = "galv.recv"() {bytes = 128 : i64, dst_mesh = "s1", dtype = f32, peer = 0 : i64, shape = array<i64: 8, 4>, sharding = #galv.sharding<@s1, [{"x"}, {}]>, src_mesh = "s0", stage = 1 : i64, tiles =
// CHECK-NEXT: "galv.gelu"(%[[R]])
// STATS: stage-split: 2 stages, 1 values cross, 128 bytes between meshes (128 without the local all-gather, 256 naive)
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s0"} : () -> ()
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s1"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@s0, [{"x"}, {}]>, stage = 0 : i64} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = "galv.gelu"(%0) {approximate = "none", sharding = #galv.sharding<@s1, [{"x"}, {}]>, stage = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  "galv.return"(%1) : (tensor<8x4xf32>) -> ()
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
