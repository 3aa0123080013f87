// spmd-predicted-bytes.mlir's program with every f32 value stored bf16
// (the storage pass on the global program, --precision=bf16: an inference
// program): the prediction from the global program and the partitioned
// collectives' bytes both count 2 bytes per element, half the f32 figures.
// RUN: %galv-opt --passes=storage,spmd-partition --precision=bf16 %s | %FileCheck %s
// CHECK: "galv.mesh"() {axes = #galv.axes<["a"=2, "b"=4]>, predicted_bytes = [96, 128, 48, 24], sym_name = "m"}
// CHECK: "galv.reduce_scatter"({{.*}}bytes = 48 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["a"], bytes = 16 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["b"], bytes = 96 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["a"], bytes = 16 : i64
// CHECK: "galv.all_to_all"({{.*}}axes = ["b"], bytes = 24 : i64
// CHECK: "galv.all_reduce"({{.*}}axes = ["b"], bytes = 96 : i64
"galv.mesh"() {axes = #galv.axes<["a"=2, "b"=4]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x16xf32>, %arg1: tensor<16x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@m, [{"a"}, {}], partial={"b":sum}>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32> loc("/mm"("MatMul"))
  %1 = "galv.reshard"(%0) {sharding = #galv.sharding<@m, [{"a"}, {"b"}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/rs")
  %2 = "galv.reshard"(%1) {sharding = #galv.sharding<@m, [{}, {}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/ag")
  %3 = "galv.reshard"(%1) {sharding = #galv.sharding<@m, [{"b"}, {"a"}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/mv")
  %4 = "galv.reshard"(%0) {sharding = #galv.sharding<@m, [{"a"}, {}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/ar")
  "galv.return"(%2, %3, %4) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{"a"}, {"b"}]>}, {galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{"b"}, {}]>}], res_attrs = [{}, {}, {}], sym_name = "main"} : () -> ()
