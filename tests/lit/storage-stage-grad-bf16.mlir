// storage: an earlier pipeline stage's backward entry under --precision=bf16
// --grad-dtype=bf16, its ranks data-parallel (the received gradient
// "gin:pp.3.0" and the stash split over dp): the bias's gradient, a
// reduce_sum before the dp all-reduce, is a parameter gradient although the
// entry has no loss to follow (it flows into the result "grad:fc.bias"), so
// it is stored bf16 as the dW GEMM's, and the all-reduce moves bf16 on both
// sides (bytes 2 x (2 - 1) x 16 / 2 = 16). Once it stayed fp32 (a
// statistic's rule) while the all-reduce's result took the gradient's bf16:
// the program's all-reduce moved 8 fp32 elements into a 16-byte slot (the
// element after it overwritten; every other element of the runtime's bf16
// sum half an fp32, a NaN in one bias after a few steps).
// RUN: %galv-opt --passes=propagate-sharding,storage,spmd-partition,storage --precision=bf16 --grad-dtype=bf16 %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["dp"=2]>, predicted_bytes = [144, 0, 0, 0], sym_name = "m"}
// CHECK: %0 = "galv.reduce_sum"(%arg0) {{.*}}storage = ["bf16"]} : (tensor<2x2x8xf32>) -> tensor<8xf32> loc("/fc/Add/grad")
// CHECK: %1 = "galv.dot"(%arg1, %arg0) {{.*}}storage = ["bf16"]} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
// CHECK: %2 = "galv.all_reduce"(%0) {axes = ["dp"], bytes = 16 : i64, {{.*}}storage = ["bf16"]} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: %3 = "galv.all_reduce"(%1) {axes = ["dp"], bytes = 128 : i64, {{.*}}storage = ["bf16"]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: "galv.return"(%2, %3) {arg_storage = ["bf16", "bf16", "f32", "f32"]}
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<4x2x8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8x8xf32>):
  %0 = "galv.reduce_sum"(%arg0) {axes = array<i64: 0, 1>, keepdims = 0 : i64} : (tensor<4x2x8xf32>) -> tensor<8xf32> loc("/fc/Add/grad")
  %1 = "galv.dot"(%arg1, %arg0) {lhs_batch = array<i64>, lhs_contract = array<i64: 0, 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0, 1>} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<8x8xf32> loc("/fc/MatMul/grad")
  "galv.return"(%0, %1) : (tensor<8xf32>, tensor<8x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "gin:pp.3.0", galv.sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}, {galv.name = "stash.0", galv.sharding = #galv.sharding<@m, [{"dp"}, {}, {}]>}, {galv.name = "fc.bias", galv.param}, {galv.name = "fc.weight", galv.param}], res_attrs = [{galv.name = "grad:fc.bias"}, {galv.name = "grad:fc.weight"}], sym_name = "main"} : () -> ()
