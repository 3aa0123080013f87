// Sequence parallelism with a sequence (3) the tp degree (2) does not
// divide: one error line naming the first value between the blocks.
// RUN: not %galv-opt --strategy=tp,sp --passes=propagate-sharding %s 2>&1 | %FileCheck %s
// CHECK: galv-opt: error: {{.*}}node '/h.0/fc2_bias' (Add): sequence parallelism: the token dim 1 of this tensor<2x3x8xf32> does not divide into 2 shards (tp 2); the sequence length must be a multiple of the tp degree
// CHECK-NOT: error
// sp without tp: one error line.
// RUN: not %galv-opt --strategy=sp --passes=propagate-sharding %s 2>&1 | %FileCheck %s --check-prefix=NOTP
// NOTP: galv-opt: error: {{.*}}strategy sp: sequence parallelism (sp) splits the values between tensor-parallel blocks over the sequence: it needs tp
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x3x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8x16xf32>, %arg4: tensor<16x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<8x16xf32>, %arg7: tensor<16x8xf32>):
  %0 = "galv.layer_norm"(%arg0, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> loc("/h.0/ln_1"("LayerNormalization"))
  %1 = "galv.dot"(%0, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32> loc("/h.0/fc1"("MatMul"))
  %2 = "galv.gelu"(%1) {approximate = "none"} : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32> loc("/h.0/act"("Gelu"))
  %3 = "galv.dot"(%2, %arg4) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3x16xf32>, tensor<16x8xf32>) -> tensor<2x3x8xf32> loc("/h.0/fc2"("MatMul"))
  %4 = "galv.add"(%3, %arg5) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> loc("/h.0/fc2_bias"("Add"))
  %5 = "galv.add"(%4, %arg0) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("/h.0/res"("Add"))
  %6 = "galv.layer_norm"(%5, %arg1, %arg2) {axis = -1 : i64, epsilon = 9.999999747e-06 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> loc("/h.1/ln_1"("LayerNormalization"))
  %7 = "galv.dot"(%6, %arg6) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32> loc("/h.1/fc1"("MatMul"))
  %8 = "galv.gelu"(%7) {approximate = "none"} : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32> loc("/h.1/act"("Gelu"))
  %9 = "galv.dot"(%8, %arg7) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3x16xf32>, tensor<16x8xf32>) -> tensor<2x3x8xf32> loc("/h.1/fc2"("MatMul"))
  %10 = "galv.add"(%9, %5) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> loc("/h.1/res"("Add"))
  "galv.return"(%10) : (tensor<2x3x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "g", galv.param}, {galv.name = "b", galv.param}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}, {galv.name = "b2", galv.param}, {galv.name = "w3", galv.param}, {galv.name = "w4", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
