// Sequence parallelism and an embedding's gradient (passes/propagate_sharding.c,
// materialise): gather_grad reads a value of the sp region (the residual add
// after a row-parallel dot, split over the sequence on tp and the batch on
// dp) and scatters its tokens into an 8 x 8 table. Contracting the sequence
// split would leave the table a pending sum over tp (an all_reduce of the
// table, 2 x 64 elements); the op's result is more than half its operand on
// a device (64 elements against the 64 of a dp rank's [2, 4, 8]), so the
// operand is all-gathered over tp instead (128 bytes) and the table is
// reduced over dp only. The sizes compared are per device: over the whole
// batch ([4, 4, 8], 128 elements) the table would not be (the rule read
// the global sizes before, and all-reduced the table over tp).
// RUN: %galv-opt --strategy=dp,tp,sp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp,tp,sp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: "galv.reduce_scatter"{{.*}}axes = ["tp"]{{.*}} -> tensor<2x2x8xf32>
// CHECK: %[[G:[0-9]+]] = "galv.all_gather"(%{{[0-9]+}}) {axes = ["tp"]{{.*}} : (tensor<2x2x8xf32>) -> tensor<2x4x8xf32> loc("/wte/Gather/grad")
// CHECK-NEXT: "galv.gather_grad"(%[[G]], %arg3) {{.*}}partial={"dp":sum}>} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<8x8xf32>
// CHECK-NOT: "galv.all_reduce"{{.*}}"tp"
// CHECK: "galv.all_reduce"(%{{[0-9]+}}) {axes = ["dp"]{{.*}} : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NOT: "galv.all_reduce"{{.*}}"tp"
"galv.mesh"() {axes = #galv.axes<["dp"=2, "tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>, %arg3: tensor<4x4xi64>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x4x8xf32>, tensor<8x16xf32>) -> tensor<4x4x16xf32> loc("/h.0/fc1"("MatMul"))
  %1 = "galv.gelu"(%0) {approximate = "none"} : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32> loc("/h.0/act"("Gelu"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x4x16xf32>, tensor<16x8xf32>) -> tensor<4x4x8xf32> loc("/h.0/fc2"("MatMul"))
  %3 = "galv.add"(%2, %arg0) : (tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32> loc("/h.0/res"("Add"))
  %4 = "galv.gather_grad"(%3, %arg3) {axis = 0 : i64, dim = 8 : i64} : (tensor<4x4x8xf32>, tensor<4x4xi64>) -> tensor<8x8xf32> loc("/wte/Gather/grad"("Gather"))
  "galv.return"(%3, %4) : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "ids"}], res_attrs = [{galv.name = "y"}, {galv.name = "g"}], sym_name = "main"} : () -> ()
