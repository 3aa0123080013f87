// Sequence parallelism (--strategy=tp,sp, Megatron-SP): two MLP blocks. Under
// tp the row-parallel fc2's pending sum is all-reduced (twice, 2(p-1)n/p =
// 256 bytes each); under tp,sp the values between the blocks (bias add,
// residual add, the next block's norm) are split over the sequence (dim 1)
// on tp: the pending sum is reduce-scattered into that split (128 bytes),
// the norm runs on 2 of the 4 positions, and the column-parallel fc1 of
// the next block all-gathers its input (128 bytes): the same 256 bytes as
// the all_reduce. The block's first norm reads a function argument (no
// pending sum before it): it stays whole, and the residual add takes a
// slice of that argument (no communication); the result leaves the split
// region through an all_gather (outputs are whole).
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s --check-prefix=TP
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// The same as a sharding file: the Megatron weights pinned by hand and the
// directive `@sequence_parallel tp` (Inputs/seq-parallel.txt).
// RUN: %galv-opt --sharding=%S/Inputs/seq-parallel.txt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// TP: predicted_bytes = [512, 0, 0, 0]
// TP-COUNT-2: "galv.all_reduce"{{.*}}bytes = 256
// TP-NOT: galv.reduce_scatter
// PROP: "galv.reshard"(%3) {sharding = #galv.sharding<@m, [{}, {"tp"}, {}]>}
// PROP-NEXT: "galv.add"{{.*}}sharding = #galv.sharding<@m, [{}, {"tp"}, {}]>
// PROP: "galv.layer_norm"{{.*}}sharding = #galv.sharding<@m, [{}, {"tp"}, {}]>{{.*}}loc("/h.1/ln_1"
// PROP-NEXT: "galv.reshard"{{.*}}sharding = #galv.sharding<@m, [{}, {}, {}]>}
// PROP-NEXT: "galv.dot"{{.*}}sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>
// CHECK: predicted_bytes = [0, 256, 256, 0]
// CHECK: %[[P:[0-9]+]] = "galv.dot"{{.*}}partial={"tp":sum}
// CHECK-NEXT: "galv.reduce_scatter"(%[[P]]) {axes = ["tp"], bytes = 128 : i64, dim = 1 : i64, {{.*}} : (tensor<2x4x8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: "galv.add"{{.*}} -> tensor<2x2x8xf32> loc("/h.0/fc2_bias"
// CHECK-NEXT: "galv.shard_slice"(%arg0) {axes = ["tp"], bytes = 0 : i64, dim = 1 : i64
// CHECK-NEXT: "galv.add"{{.*}} -> tensor<2x2x8xf32> loc("/h.0/res"
// CHECK-NEXT: %[[N:[0-9]+]] = "galv.layer_norm"{{.*}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[G:[0-9]+]] = "galv.all_gather"(%[[N]]) {axes = ["tp"], bytes = 128 : i64, dim = 1 : i64{{.*}} -> tensor<2x4x8xf32>
// CHECK-NEXT: "galv.dot"(%[[G]], %arg6)
// CHECK: "galv.reduce_scatter"{{.*}}bytes = 128 : i64, dim = 1 : i64
// CHECK-NEXT: "galv.add"{{.*}} -> tensor<2x2x8xf32> loc("/h.1/res"
// CHECK-NEXT: "galv.all_gather"{{.*}} -> tensor<2x4x8xf32> loc("return")
// CHECK-NOT: galv.all_reduce
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8x16xf32>, %arg4: tensor<16x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<8x16xf32>, %arg7: tensor<16x8xf32>):
  %0 = "galv.layer_norm"(%arg0, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.0/ln_1"("LayerNormalization"))
  %1 = "galv.dot"(%0, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/h.0/fc1"("MatMul"))
  %2 = "galv.gelu"(%1) {approximate = "none"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/h.0/act"("Gelu"))
  %3 = "galv.dot"(%2, %arg4) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/fc2"("MatMul"))
  %4 = "galv.add"(%3, %arg5) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.0/fc2_bias"("Add"))
  %5 = "galv.add"(%4, %arg0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/res"("Add"))
  %6 = "galv.layer_norm"(%5, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.1/ln_1"("LayerNormalization"))
  %7 = "galv.dot"(%6, %arg6) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/h.1/fc1"("MatMul"))
  %8 = "galv.gelu"(%7) {approximate = "none"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/h.1/act"("Gelu"))
  %9 = "galv.dot"(%8, %arg7) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/fc2"("MatMul"))
  %10 = "galv.add"(%9, %5) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/res"("Add"))
  "galv.return"(%10) : (tensor<2x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "g", galv.param}, {galv.name = "b", galv.param}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "b2", galv.param}, {galv.name = "w3", galv.param}, {galv.name = "w4", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
