// Sequence parallelism with no pending tp sum (one column-parallel dot,
// no row-parallel one): no region, one warning line, and the program is
// plain tp's (no reduce_scatter, the same collectives).
// RUN: %galv-opt --strategy=tp,sp --passes=propagate-sharding,spmd-partition %s 2>&1 | %FileCheck %s
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s 2>&1 | %FileCheck %s --check-prefix=TP
// CHECK: galv-opt: warning: sequence parallelism over tp finds no value between tensor-parallel blocks to split over the sequence: the program is plain tp
// CHECK-NOT: galv.reduce_scatter
// CHECK: "galv.dot"{{.*}} -> tensor<2x4x8xf32>
// CHECK-NEXT: "galv.gelu"
// CHECK-NEXT: "galv.all_gather"{{.*}}bytes = 256 : i64, dim = 2 : i64
// TP-NOT: warning
// TP: "galv.dot"{{.*}} -> tensor<2x4x8xf32>
// TP-NEXT: "galv.gelu"
// TP-NEXT: "galv.all_gather"{{.*}}bytes = 256 : i64, dim = 2 : i64
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<8x16xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("/fc1"("MatMul"))
  %1 = "galv.gelu"(%0) {approximate = "none"} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32> loc("/act"("Gelu"))
  "galv.return"(%1) : (tensor<2x4x16xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
