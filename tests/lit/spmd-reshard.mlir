// Each reshard lowering on a 2x2 mesh: partial -> replicated (all_reduce),
// partial -> split (reduce_scatter), split -> replicated (all_gather), split
// moved between dims (all_to_all), replicated -> split (shard_slice), with
// the bytes each rank sends (runtime/galv_comm.h formulas).
// RUN: %galv-opt --passes=spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --passes=spmd-partition %s -o %t && %mlir-check %t
// CHECK: "galv.all_reduce"(%{{.*}}) {axes = ["b"], bytes = 128 : i64, mesh = "m", reduce = "sum", sharding = #galv.sharding<@m, [{"a"}, {}]>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: "galv.reduce_scatter"(%{{.*}}) {axes = ["b"], bytes = 64 : i64, dim = 1 : i64, mesh = "m", reduce = "sum", sharding = {{.*}}} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: "galv.all_gather"(%{{.*}}) {axes = ["a"], bytes = 128 : i64, dim = 0 : i64, mesh = "m", sharding = {{.*}}} : (tensor<4x8xf32>) -> tensor<8x8xf32>
// CHECK: "galv.all_to_all"(%{{.*}}) {axes = ["a"], bytes = 64 : i64, concat_dim = 0 : i64, mesh = "m", sharding = {{.*}}, split_dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK: "galv.shard_slice"(%{{.*}}) {axes = ["b"], bytes = 0 : i64, dim = 0 : i64, mesh = "m", sharding = {{.*}}} : (tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: "galv.return"
"galv.mesh"() {axes = #galv.axes<["a"=2, "b"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>, sharding = #galv.sharding<@m, [{"a"}, {}], partial={"b":sum}>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("/mm"("MatMul"))
  %1 = "galv.reshard"(%0) {sharding = #galv.sharding<@m, [{"a"}, {}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/ar")
  %2 = "galv.reshard"(%0) {sharding = #galv.sharding<@m, [{"a"}, {"b"}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/rs")
  %3 = "galv.reshard"(%1) {sharding = #galv.sharding<@m, [{}, {}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/ag")
  %4 = "galv.reshard"(%1) {sharding = #galv.sharding<@m, [{}, {"a"}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/a2a")
  %5 = "galv.reshard"(%3) {sharding = #galv.sharding<@m, [{"b"}, {}]>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/slice")
  "galv.return"(%2, %4, %5) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{"a"}, {"b"}]>}, {galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{"b"}, {}]>}], res_attrs = [{}, {}, {}], sym_name = "main"} : () -> ()
