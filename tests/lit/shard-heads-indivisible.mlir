// Head split when tp does not divide H (3 heads, tp 2; 12 = 3x4 is even):
// under the tp preset a clear error; with the same split pinned by hand the
// reshape falls back to replicate-then-reshape (an all_gather before it),
// never a wrong split.
// RUN: not %galv-opt --strategy=tp --passes=propagate-sharding %s 2>&1 | %FileCheck %s --check-prefix=ERR
// ERR: galv-opt: error: {{.*}}node '/split_heads' (Reshape): sharding: dim 2 (size 12) split 2 ways does not fit the reshape to tensor<2x4x3x4xf32>; the tensor-parallel degree must divide the head count
// RUN: %galv-opt --sharding=%S/Inputs/heads3.txt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: "galv.dot"{{.*}} -> tensor<2x4x6xf32>
// CHECK-NEXT: "galv.all_gather"({{.*}}) {axes = ["tp"], bytes = 192 : i64, dim = 2 : i64{{.*}} : (tensor<2x4x6xf32>) -> tensor<2x4x12xf32>
// CHECK-NEXT: "galv.reshape"{{.*}} -> tensor<2x4x3x4xf32>
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<2x4x16xf32>, %arg1: tensor<16x12xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4x16xf32>, tensor<16x12xf32>) -> tensor<2x4x12xf32> loc("/q"("MatMul"))
  %1 = "galv.reshape"(%0) : (tensor<2x4x12xf32>) -> tensor<2x4x3x4xf32> loc("/split_heads"("Reshape"))
  %2 = "galv.softmax"(%1) {axis = -1 : i64} : (tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32> loc("/sm"("Softmax"))
  "galv.return"(%2) : (tensor<2x4x3x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "wq", galv.param}], res_attrs = [{}], sym_name = "main"} : () -> ()
