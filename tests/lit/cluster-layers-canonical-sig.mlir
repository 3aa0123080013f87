// cluster-layers: a group's signature does not depend on the program order
// of its independent ops. Two copies of one block (exp and tanh of the
// input, then their sum); the second copy computes its tanh before its exp.
// Both groups hash alike: the second is the first's block (layer_block 0),
// so the stage DP costs one and reuses it (before, the second copy was a
// block of its own and every range across it was costed apart).
// RUN: %galv-opt --passes=cluster-layers --layers=2 %s | %FileCheck %s
// CHECK: "galv.exp"(%arg0) {layer = 0 : i64, layer_block = 0 : i64
// CHECK: "galv.tanh"(%arg0) {layer = 0 : i64, layer_block = 0 : i64
// CHECK: "galv.add"({{.*}}) {layer = 0 : i64, layer_block = 0 : i64
// CHECK: "galv.tanh"({{.*}}) {layer = 1 : i64, layer_block = 0 : i64
// CHECK: "galv.exp"({{.*}}) {layer = 1 : i64, layer_block = 0 : i64
// CHECK: "galv.add"({{.*}}) {layer = 1 : i64, layer_block = 0 : i64
"galv.func"() ({
^bb0(%arg0: tensor<64x64xf32>):
  %1 = "galv.exp"(%arg0) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l0/exp"("Exp"))
  %2 = "galv.tanh"(%arg0) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l0/tanh"("Tanh"))
  %3 = "galv.add"(%1, %2) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l0/add"("Add"))
  %4 = "galv.tanh"(%3) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l1/tanh"("Tanh"))
  %5 = "galv.exp"(%3) : (tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l1/exp"("Exp"))
  %6 = "galv.add"(%5, %4) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("/l1/add"("Add"))
  "galv.return"(%6) : (tensor<64x64xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
