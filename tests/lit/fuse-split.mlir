// fuse: a non-elementwise op that uses the group's value ends the group;
// the ops after it form a second group. An independent op in between is
// skipped over (stays in place, before the fused op).
// RUN: %galv-opt --passes=fuse --verify-each %s | %FileCheck %s
// CHECK:      %0 = "galv.softmax"(%arg1)
// CHECK-NEXT: %1 = "galv.fused"(%arg0) ({
// CHECK:        "galv.neg"
// CHECK-NEXT:   "galv.exp"
// CHECK-NEXT:   "galv.yield"
// CHECK:      %4 = "galv.transpose"(%1)
// CHECK-NEXT: %5 = "galv.fused"(%4, %0) ({
// CHECK:        "galv.tanh"
// CHECK-NEXT:   "galv.add"
// CHECK-NEXT:   "galv.yield"
// CHECK:      "galv.return"(%5)
"galv.func"() ({
^bb0(%x: tensor<8x8xf32>, %z: tensor<8x8xf32>):
  %0 = "galv.neg"(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("neg")
  %s = "galv.softmax"(%z) {axis = -1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("indep")
  %1 = "galv.exp"(%0) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("exp")
  %2 = "galv.transpose"(%1) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("t")
  %3 = "galv.tanh"(%2) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("tanh")
  %4 = "galv.add"(%3, %s) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("add")
  "galv.return"(%4) : (tensor<8x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "z"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
