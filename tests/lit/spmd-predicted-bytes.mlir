// The planner's prediction of each rank's sent bytes, made from the GLOBAL
// program before partitioning (planner/comm_predict.c) and recorded on the
// mesh as predicted_bytes = [all_reduce, all_gather, reduce_scatter,
// all_to_all]; spmd-partition then checks its own collectives against it.
// Hand-computed on a mesh a=2 x b=4 (f32, 4 bytes):
//   %0 = x[8x16 split a,b] . w[16x8 split b]: 8x8 split a on dim 0, pending
//        sum over b; each rank holds 4x8 = 128 bytes.
//   /rs : pending b -> split dim 1 by b: reduce_scatter over b (p=4):
//         3 * 128 / 4 = 96.
//   /ag : [a][b] (4x2 = 32 bytes) -> replicated: all_gather over a
//         (1 * 32) then over b (now 8x2 = 64 bytes: 3 * 64 = 192): 224.
//   /mv : [a][b] -> [b][a]: dim 0's a is gathered (1 * 32), dim 1's b moves
//         to dim 0 (all_to_all over b of 8x2 = 64 bytes: 3 * 64 / 4 = 48),
//         a is sliced into dim 1 (free).
//   /ar : pending b -> [a][]: all_reduce over b: 2 * 3 * 128 / 4 = 192.
// Totals: all_reduce 192, all_gather 224 + 32 = 256, reduce_scatter 96,
// all_to_all 48. The partitioned collectives carry the same bytes.
// RUN: %galv-opt --passes=spmd-partition %s | %FileCheck %s
// RUN: %galv-opt --passes=spmd-partition %s -o %t && %mlir-check %t && %galv-opt %t | %FileCheck %s --check-prefix=ROUND
// CHECK: "galv.mesh"() {axes = #galv.axes<["a"=2, "b"=4]>, predicted_bytes = [192, 256, 96, 48], sym_name = "m"}
// CHECK: "galv.reduce_scatter"({{.*}}bytes = 96 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["a"], bytes = 32 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["b"], bytes = 192 : i64
// CHECK: "galv.all_gather"({{.*}}axes = ["a"], bytes = 32 : i64
// CHECK: "galv.all_to_all"({{.*}}axes = ["b"], bytes = 48 : i64
// CHECK: "galv.all_reduce"({{.*}}axes = ["b"], bytes = 192 : i64
// ROUND: predicted_bytes = [192, 256, 96, 48]
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
