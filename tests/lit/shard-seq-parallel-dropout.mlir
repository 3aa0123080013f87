// galv.dropout under tensor and sequence parallelism (docs/training.md
// "Dropout"): the mask is a function of the global coordinates, so
// spmd-partition gives each local dropout this rank's shard offsets as an
// i64 [rank] operand, e_d x local_d x axis_index over d's axes, and `rows`
// (the global dim 0). The hidden dropout after the row-parallel fc2 sits in
// the sequence-parallel region under tp,sp: split on dim 1 (2 of the 4
// positions, offsets [0, 2, 0] x the tp index), between the reduce-scatter
// and the residual add; under tp alone it stays whole (no offsets). The
// dropout on the column-parallel activation is split on dim 2 either way
// (offsets [0, 0, 8] x the tp index).
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s --check-prefix=TP
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: %[[I:[0-9]+]] = "galv.axis_index"() {axes = ["tp"], mesh = "m"}
// CHECK-NEXT: %[[E:[0-9]+]] = "galv.constant"() {value = dense<[0, 0, 8]> : tensor<3xi64>}
// CHECK-NEXT: %[[O:[0-9]+]] = "galv.mul"(%[[E]], %[[I]])
// CHECK-NEXT: "galv.dropout"(%{{[0-9]+}}, %[[O]]) {id = 1 : i64, ratio = 1.000000015e-01 : f32, rows = 2 : i64, seed = 0 : i64, sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>} : (tensor<2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32>
// CHECK: "galv.reduce_scatter"{{.*}}dim = 1 : i64
// CHECK-NEXT: %[[B:[0-9]+]] = "galv.add"{{.*}}loc("/h.0/fc2_bias"
// CHECK-NEXT: %[[I2:[0-9]+]] = "galv.axis_index"() {axes = ["tp"], mesh = "m"}
// CHECK-NEXT: %[[E2:[0-9]+]] = "galv.constant"() {value = dense<[0, 2, 0]> : tensor<3xi64>}
// CHECK-NEXT: %[[O2:[0-9]+]] = "galv.mul"(%[[E2]], %[[I2]])
// CHECK-NEXT: %[[D:[0-9]+]] = "galv.dropout"(%[[B]], %[[O2]]) {id = 0 : i64, ratio = 1.000000015e-01 : f32, rows = 2 : i64, seed = 0 : i64, sharding = #galv.sharding<@m, [{}, {"tp"}, {}]>} : (tensor<2x2x8xf32>, tensor<3xi64>) -> tensor<2x2x8xf32>
// CHECK: "galv.add"(%[[D]], {{.*}}loc("/h.0/res"
// TP: "galv.dropout"(%{{[0-9]+}}, %{{[0-9]+}}) {id = 1 : i64{{.*}}sharding = #galv.sharding<@m, [{}, {}, {"tp"}]>} : (tensor<2x4x8xf32>, tensor<3xi64>)
// TP: "galv.all_reduce"
// TP-NEXT: "galv.add"{{.*}}loc("/h.0/fc2_bias"
// TP-NEXT: "galv.dropout"(%{{[0-9]+}}) {id = 0 : i64, ratio = 1.000000015e-01 : f32, rows = 2 : i64, seed = 0 : i64, sharding = #galv.sharding<@m, [{}, {}, {}]>} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8x16xf32>, %arg4: tensor<16x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<8x16xf32>, %arg7: tensor<16x8xf32>):
  %0 = "galv.layer_norm"(%arg0, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.0/ln_1"("LayerNormalization"))
  %1 = "galv.dot"(%0, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/h.0/fc1"("MatMul"))
  %g = "galv.gelu"(%1) {approximate = "none"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/h.0/act"("Gelu"))
  %2 = "galv.dropout"(%g) {id = 1 : i64, ratio = 1.000000015e-01 : f32, seed = 0 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/h.0/act_drop"("Dropout"))
  %3 = "galv.dot"(%2, %arg4) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/fc2"("MatMul"))
  %4 = "galv.add"(%3, %arg5) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.0/fc2_bias"("Add"))
  %d = "galv.dropout"(%4) {id = 0 : i64, ratio = 1.000000015e-01 : f32, seed = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/drop"("Dropout"))
  %5 = "galv.add"(%d, %arg0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/res"("Add"))
  %6 = "galv.layer_norm"(%5, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("/h.1/ln_1"("LayerNormalization"))
  %7 = "galv.dot"(%6, %arg6) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/h.1/fc1"("MatMul"))
  %8 = "galv.gelu"(%7) {approximate = "none"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/h.1/act"("Gelu"))
  %9 = "galv.dot"(%8, %arg7) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/fc2"("MatMul"))
  %10 = "galv.add"(%9, %5) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/res"("Add"))
  "galv.return"(%10) : (tensor<2x4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "g", galv.param}, {galv.name = "b", galv.param}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "b2", galv.param}, {galv.name = "w3", galv.param}, {galv.name = "w4", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
