// Replicated on two devices -> one device (pipeline stages of 2 and 1
// devices, what runtime/pipe_xfer.c executes): one receiver tile held by
// both replicas, fewer tiles than senders, so the tile is cut between them
// along its largest dim (rows 0-3 from rank 0, rows 4-7 from rank 1); bytes
// = the tensor once = naive (one receiver).
// RUN: %galv-opt --passes=stage-split --pipe-stats %s 2>%t.err | %FileCheck %s
// RUN: %FileCheck %s --check-prefix=STATS < %t.err
// RUN: %galv-opt --passes=stage-split %s -o %t && %mlir-check %t
// CHECK: "galv.send"(%0) {bytes = 128 : i64, {{.*}}tiles = array<i64: 0, 0, 0, 0, 4, 4, 1, 0, 4, 0, 4, 4>}
// CHECK: %[[R:[0-9]+]] = "galv.recv"() {bytes = 128 : i64, {{.*}}sharding = #galv.sharding<@s1, [{}, {}]>
// CHECK-NOT: galv.reshard
// CHECK: "galv.gelu"(%[[R]])
// STATS: 128 bytes between meshes (128 without the local all-gather, 128 naive)
"galv.mesh"() {axes = #galv.axes<["x"=2]>, sym_name = "s0"} : () -> ()
"galv.mesh"() {axes = #galv.axes<["y"=1]>, sym_name = "s1"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@s0, [{}, {}]>, stage = 0 : i64} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = "galv.gelu"(%0) {approximate = "none", sharding = #galv.sharding<@s1, [{}, {}]>, stage = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  "galv.return"(%1) : (tensor<8x4xf32>) -> ()
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
