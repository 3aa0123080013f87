// gather_grad's sharding rule under dp: dy and the indices split on the
// batch (an index dim: a REDUCE factor), each rank scatter-adds its own
// rows of dy into a whole table, a partial sum over dp that is reduced
// like any weight gradient (one all-reduce of the table) instead of
// all-gathering dy and the indices over the batch and computing the
// gradient on every rank (before: 2 all-gathers, dy's bytes the whole
// batch's). The table dim (axis) stays whole; a dim after the indices
// passes (here the hidden dim, whole under dp).
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s -o %t && %mlir-check %t
// CHECK: ^bb0(%arg0: tensor<2x3x8xf32>, %arg1: tensor<2x3xi64>):
// CHECK-NOT: galv.all_gather
// CHECK: "galv.gather_grad"(%arg0, %arg1) {{.*}} : (tensor<2x3x8xf32>, tensor<2x3xi64>) -> tensor<10x8xf32>
// CHECK-NOT: galv.all_gather
// CHECK: "galv.all_reduce"(%{{[0-9]+}}) {axes = ["dp"]{{.*}} : (tensor<10x8xf32>) -> tensor<10x8xf32>
// CHECK-NOT: galv.all_gather
// CHECK: "galv.return"
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x3x8xf32>, %arg1: tensor<4x3xi64>):
  %0 = "galv.gather_grad"(%arg0, %arg1) {axis = 0 : i64, dim = 10 : i64} : (tensor<4x3x8xf32>, tensor<4x3xi64>) -> tensor<10x8xf32> loc("/wte/Gather/grad"("Gather"))
  "galv.return"(%0) : (tensor<10x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "dy"}, {galv.name = "ids"}], res_attrs = [{galv.name = "g"}], sym_name = "main"} : () -> ()
