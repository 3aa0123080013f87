// Head split [B,T,H*D] -> [B,T,H,D] of a column-parallel projection when tp
// divides H (4 heads, tp 2): the split carries over to the heads dim and
// nothing is inserted before the return.
// RUN: %galv-opt --strategy=tp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: "galv.reshape"{{.*}}sharding = #galv.sharding<@m, [{}, {}, {"tp"}, {}]>} : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
// CHECK: "galv.softmax"{{.*}} -> tensor<2x4x2x4xf32>
// CHECK-NEXT: "galv.all_gather"({{.*}}) {axes = ["tp"], bytes = 256 : i64, dim = 2 : i64
// CHECK-NEXT: "galv.return"
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x16xf32>, %arg1: tensor<16x16xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32> loc("/q"("MatMul"))
  %1 = "galv.reshape"(%0) : (tensor<2x4x16xf32>) -> tensor<2x4x4x4xf32> loc("/split_heads"("Reshape"))
  %2 = "galv.softmax"(%1) {axis = -1 : i64} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> loc("/sm"("Softmax"))
  "galv.return"(%2) : (tensor<2x4x4x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "wq", galv.param}], res_attrs = [{}], sym_name = "main"} : () -> ()
