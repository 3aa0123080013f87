// batch_split with batch_axes (docs/pipeline.md, "Cross-mesh transfers"):
// galvc compiles a stage whose crossing values stay split over dp by naming
// them on the return with the axes; propagate-sharding returns such a
// result with dim 0 over those axes whatever its own sharding: here
// "pp.7.0", computed whole from a whole input, is returned as this rank's
// rows (a local slice: no collective, tensor<2x3>), while "pp.8.0", listed
// too but whose dim 0 (3) does not split 2 ways, and "out" (not listed) stay
// whole.
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK: predicted_bytes = [0, 0, 0, 0]
// CHECK-NOT: "galv.all_
// CHECK: "galv.return"({{.*}}) {batch_axes = ["dp"], batch_split = ["pp.7.0", "pp.8.0"]} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>)
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x3xf32>, %arg1: tensor<3x4xf32>):
  %0 = "galv.tanh"(%arg0) : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("a")
  %1 = "galv.tanh"(%arg1) : (tensor<3x4xf32>) -> tensor<3x4xf32> loc("b")
  "galv.return"(%0, %1, %0) {batch_axes = ["dp"], batch_split = ["pp.7.0", "pp.8.0"]} : (tensor<4x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "y"}], res_attrs = [{galv.name = "pp.7.0"}, {galv.name = "pp.8.0"}, {galv.name = "out"}], sym_name = "main"} : () -> ()
