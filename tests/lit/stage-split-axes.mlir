// Different axes: rows split over "x" on s0, columns over "y" on s1 (the
// reshard in stage 1 asks for it): every receiver takes a quarter from each
// sender (4 transfers of 2x2 f32 = 16 bytes).
// RUN: %galv-opt --passes=stage-split --pipe-stats %s 2>%t.err | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=STATS < %t.err
// CHECK: "galv.send"(%0) {bytes = 64 : i64, {{.*}}tiles = array<i64: 0, 0, 0, 0, 2, 2, 1, 0, 2, 0, 2, 2, 0, 1, 0, 2, 2, 2, 1, 1, 2, 2, 2, 2>}
// CHECK: %[[R:[0-9]+]] = "galv.recv"() {{.*}}sharding = #galv.sharding<@s1, [{}, {"y"}]>
// CHECK-NEXT: "galv.gelu"(%[[R]])
// STATS: 64 bytes between meshes (64 without the local all-gather, 128 naive)
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s0"} : () -> ()
"galv.mesh"() {axes = #galv.axes<["y"=2]>, sym_name = "s1"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@s0, [{"x"}, {}]>, stage = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "galv.reshard"(%0) {sharding = #galv.sharding<@s1, [{}, {"y"}]>, stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "galv.gelu"(%1) {approximate = "none", sharding = #galv.sharding<@s1, [{}, {"y"}]>, stage = 1 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  "galv.return"(%2) : (tensor<4x4xf32>) -> ()
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
