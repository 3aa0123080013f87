// The bucket pass takes only gradient reductions: those whose first reader
// is the update ("optimizer/...") or the microbatch sums ("accumulate/...").
// A reduction read late for another reason — here a row statistic of the
// loss, as a vocab-parallel cross-entropy's is under gradient accumulation —
// stays alone: the storage plan may store it otherwise than the gradients
// (fp32 row statistics beside 16-bit gradients) and one bucket is one dtype;
// bucketed with them it was rounded (tp,sp bf16 with 2 microbatches: a
// different loss at step 0).
// RUN: %galv-opt --bucket-mb=25 --passes=bucket %s | %FileCheck %s
// CHECK: "galv.all_reduce"(%arg0) {axes = ["dp"], bytes = 16 : i64, mesh = "m", reduce = "sum"} : (tensor<4xf32>) -> tensor<4xf32> loc("loss/cross_entropy")
// CHECK: "galv.concat"
// CHECK-NEXT: "galv.all_reduce"({{.*}}) {axes = ["dp"], bucket = 2 : i64, bytes = 64 : i64,
// CHECK-NOT: bucket = 3
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%a: tensor<4xf32>, %g1: tensor<8xf32>, %g2: tensor<8xf32>):
  %0 = "galv.all_reduce"(%a) {axes = ["dp"], bytes = 16 : i64, mesh = "m", reduce = "sum"} : (tensor<4xf32>) -> tensor<4xf32> loc("loss/cross_entropy")
  %1 = "galv.all_reduce"(%g1) {axes = ["dp"], bytes = 32 : i64, mesh = "m", reduce = "sum"} : (tensor<8xf32>) -> tensor<8xf32> loc("/fc1/grad")
  %2 = "galv.all_reduce"(%g2) {axes = ["dp"], bytes = 32 : i64, mesh = "m", reduce = "sum"} : (tensor<8xf32>) -> tensor<8xf32> loc("/fc2/grad")
  %3 = "galv.mul"(%1, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("optimizer/adamw/w1")
  %4 = "galv.mul"(%2, %2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("optimizer/adamw/w2")
  %5 = "galv.reduce_sum"(%0) {keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32> loc("loss/cross_entropy")
  "galv.return"(%5, %3, %4) : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "a"}, {galv.name = "g1"}, {galv.name = "g2"}], res_attrs = [{galv.name = "loss"}, {galv.name = "w1"}, {galv.name = "w2"}], sym_name = "main"} : () -> ()
