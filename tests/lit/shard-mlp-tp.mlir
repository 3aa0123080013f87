// Megatron MLP under --strategy=tp: fc1 column-parallel (w1 split on its
// output dim), fc2 row-parallel (w2 split on its input dim) gives a partial
// sum that one all_reduce completes before the residual add.
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding %s | %FileCheck %s --check-prefix=PROP
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// PROP: "galv.dot"(%arg0, %arg1) {{.*}}sharding = #galv.sharding<@m, [{}, {"tp"}]>
// PROP: "galv.dot"(%1, %arg2) {{.*}}sharding = #galv.sharding<@m, [{}, {}], partial={"tp":sum}>
// PROP: "galv.reshard"(%2) {sharding = #galv.sharding<@m, [{}, {}]>}
// PROP: galv.name = "w1", galv.param, galv.sharding = #galv.sharding<@m, [{}, {"tp"}]>
// PROP-SAME: galv.name = "w2", galv.param, galv.sharding = #galv.sharding<@m, [{"tp"}, {}]>
// CHECK: ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>)
// CHECK: "galv.gelu"{{.*}} -> tensor<4x8xf32>
// CHECK: %[[P:[0-9]+]] = "galv.dot"
// CHECK-NEXT: %[[R:[0-9]+]] = "galv.all_reduce"(%[[P]]) {axes = ["tp"], bytes = 128 : i64, mesh = "m", reduce = "sum"
// CHECK-NEXT: "galv.add"(%[[R]], %arg0)
// CHECK-NOT: galv.all_
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1"("MatMul"))
  %1 = "galv.gelu"(%0) {approximate = "none"} : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("/act"("Gelu"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/fc2"("MatMul"))
  %3 = "galv.add"(%2, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/res"("Add"))
  "galv.return"(%3) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
