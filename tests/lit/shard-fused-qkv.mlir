// Fused qkv projection (ViT): [B,T,3*H*Dh] -> [B,T,3,H,Dh] with H = 2 heads
// and tp 2. A block split of the 24-wide dim is no head split (rank 0 would
// hold q and half of k), so it must never be taken for one (the ViT bug:
// the reshape's H split was mapped to a column split of the projection).
//
// tp preset: the fused projection stays replicated (no column split), the
// heads are split after the reshape with a shard_slice (no communication).
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s --check-prefix=TP
// TP-NOT: galv.all_gather
// TP: "galv.dot"{{.*}} : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
// TP: "galv.reshape"{{.*}} : (tensor<2x4x24xf32>) -> tensor<2x4x3x2x4xf32>
// TP-NEXT: "galv.shard_slice"({{.*}}) {axes = ["tp"], bytes = 0 : i64, dim = 3 : i64{{.*}} : (tensor<2x4x3x2x4xf32>) -> tensor<2x4x3x1x4xf32>
// TP: "galv.softmax"{{.*}} -> tensor<2x4x3x1x4xf32>
//
// Pinned by hand: the weight column-split and the reshape's result
// head-split (the combination the bug produced): the projection's blocks
// are gathered before the reshape, whose result is then sliced per head.
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %S/Inputs/fused-qkv-pinned.ir | %FileCheck %s --check-prefix=PIN
// PIN: "galv.dot"{{.*}} -> tensor<2x4x12xf32>
// PIN-NEXT: "galv.all_gather"({{.*}}) {axes = ["tp"], bytes = 384 : i64, dim = 2 : i64{{.*}} : (tensor<2x4x12xf32>) -> tensor<2x4x24xf32>
// PIN-NEXT: "galv.reshape"{{.*}} : (tensor<2x4x24xf32>) -> tensor<2x4x3x2x4xf32>
// PIN-NEXT: "galv.shard_slice"({{.*}}) {axes = ["tp"], bytes = 0 : i64, dim = 3 : i64{{.*}} -> tensor<2x4x3x1x4xf32>
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8x24xf32>, %arg2: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc("/qkv"("MatMul"))
  %1 = "galv.reshape"(%0) : (tensor<2x4x24xf32>) -> tensor<2x4x3x2x4xf32> loc("/split_qkv_heads"("Reshape"))
  %2 = "galv.softmax"(%1) {axis = -1 : i64} : (tensor<2x4x3x2x4xf32>) -> tensor<2x4x3x2x4xf32> loc("/sm"("Softmax"))
  %3 = "galv.slice"(%2) {axes = array<i64: 2>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<2x4x3x2x4xf32>) -> tensor<2x4x1x2x4xf32> loc("/q"("Slice"))
  %4 = "galv.reshape"(%3) : (tensor<2x4x1x2x4xf32>) -> tensor<2x4x8xf32> loc("/merge_heads"("Reshape"))
  %5 = "galv.dot"(%4, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("/proj"("MatMul"))
  "galv.return"(%5) : (tensor<2x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "wqkv", galv.param}, {galv.name = "wo", galv.param}], res_attrs = [{}], sym_name = "main"} : () -> ()
