// slice_grad's sharding rule (the slice's, read backwards): under dp the
// batch dim of dy, which the window leaves whole, stays split through the
// result (the rotary embedding's slice gradients: before, each was
// all-gathered over the batch and computed on every rank), and the local
// op's `shape` attribute is the local result's; a window on the split dim
// itself gathers dy first.
// RUN: %galv-opt --strategy=dp --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: ^bb0(%arg0: tensor<2x3x2xf32>, %arg1: tensor<1x3x4xf32>)
// CHECK-NOT: galv.all_gather{{.*}}tensor<2x3x2xf32>) -> tensor<4x3x2xf32>
// CHECK: "galv.slice_grad"(%arg0) {axes = array<i64: 2>, ends = array<i64: 4>, shape = array<i64: 2, 3, 4>, {{.*}}starts = array<i64: 2>{{.*}} : (tensor<2x3x2xf32>) -> tensor<2x3x4xf32> loc("/Slice/grad"("Slice"))
// CHECK: "galv.all_gather"(%arg1) {axes = ["dp"], {{.*}}dim = 0 : i64{{.*}} : (tensor<1x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: "galv.slice_grad"(%{{[0-9]+}}) {axes = array<i64: 0>, ends = array<i64: 3>, shape = array<i64: 4, 3, 4>, {{.*}}starts = array<i64: 1>{{.*}} : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32> loc("/Slice_batch/grad"("Slice"))
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x3x2xf32>, %arg1: tensor<2x3x4xf32>):
  %0 = "galv.slice_grad"(%arg0) {axes = array<i64: 2>, ends = array<i64: 4>, shape = array<i64: 4, 3, 4>, starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<4x3x2xf32>) -> tensor<4x3x4xf32> loc("/Slice/grad"("Slice"))
  %1 = "galv.slice_grad"(%arg1) {axes = array<i64: 0>, ends = array<i64: 3>, shape = array<i64: 4, 3, 4>, starts = array<i64: 1>, steps = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x4xf32> loc("/Slice_batch/grad"("Slice"))
  "galv.return"(%0, %1) : (tensor<4x3x4xf32>, tensor<4x3x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "dy"}, {galv.name = "dz"}], res_attrs = [{galv.name = "g"}, {galv.name = "h"}], sym_name = "main"} : () -> ()
