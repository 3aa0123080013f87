// Replicated -> sharded: both senders hold the whole tensor; the receivers
// split the rows over "y"; the senders are balanced (rank 0 sends rows 0-3,
// rank 1 rows 4-7), bytes = the tensor once (naive: twice).
// RUN: %galv-opt --passes=stage-split --pipe-stats %s 2>%t.err | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=STATS < %t.err
// CHECK: "galv.send"(%0) {{.*}}tiles = array<i64: 0, 0, 0, 0, 4, 4, 1, 1, 4, 0, 4, 4>
// CHECK: %[[R:[0-9]+]] = "galv.recv"() {{.*}}sharding = #galv.sharding<@s1, [{"y"}, {}]>
// CHECK-NOT: galv.reshard
// CHECK: "galv.gelu"(%[[R]])
// STATS: 128 bytes between meshes (128 without the local all-gather, 256 naive)
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s0"} : () -> ()
"galv.mesh"() {axes = #galv.axes<["y"=2]>, sym_name = "s1"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@s0, [{}, {}]>, stage = 0 : i64} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = "galv.reshard"(%0) {sharding = #galv.sharding<@s1, [{"y"}, {}]>, stage = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = "galv.gelu"(%1) {approximate = "none", sharding = #galv.sharding<@s1, [{"y"}, {}]>, stage = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  "galv.return"(%2) : (tensor<8x4xf32>) -> ()
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
