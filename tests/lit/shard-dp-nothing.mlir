// Data parallelism on an inference MLP: the batch dim of x is split on dp,
// the weights are replicated, every op works on its rows: nothing may be
// inserted until the result, which is gathered for the return.
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: ^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>)
// CHECK-NOT: galv.all_
// CHECK-NOT: galv.reduce_scatter
// CHECK: "galv.all_gather"(%{{[0-9]+}}) {axes = ["dp"], bytes = 64 : i64, dim = 0 : i64{{.*}} : (tensor<2x8xf32>) -> tensor<4x8xf32> loc("return")
// CHECK-NEXT: "galv.return"
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1"("MatMul"))
  %1 = "galv.gelu"(%0) {approximate = "none"} : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("/act"("Gelu"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/fc2"("MatMul"))
  %3 = "galv.add"(%2, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/res"("Add"))
  "galv.return"(%3) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
