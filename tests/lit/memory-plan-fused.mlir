// memory-plan after fuse: the fused op gets one offset per result, the ops
// in its body none (they are registers of one loop); a fused op's operands
// are live up to it. Multi-result ops (split) get one offset per result.
// Schedule: split p1, fused (neg, exp; yields both) p2, reduce p3, concat
// p4, add p5, return p6. Live: x [0,2] 256 B, split 2 x 128 B [1,4],
// fused 256 B [2,3] and [2,5], reduce 16 B [3,6], concat [4,5], add [5,6]:
// at p2 256+128+128+256+256 = 1024 bytes live (the lower bound). Largest
// first would need 1088 bytes; earliest first reaches 1024, and wins.
// RUN: %galv-opt --passes=fuse,memory-plan --verify-each %s | %FileCheck %s
// CHECK:      "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 1024 : i64, lower_bound = 1024 : i64}
// CHECK-NEXT: %0:2 = "galv.split"(%arg0) {axis = 1 : i64, offsets = array<i64: 256, 384>
// CHECK-NEXT: %1:2 = "galv.fused"(%arg0) ({
// CHECK-NOT:  offsets
// CHECK:      }) {offsets = array<i64: 512, 768>}
// CHECK-NEXT: %4 = "galv.reduce_sum"(%1#0) {{.*}}offsets = array<i64: 0>
// CHECK-NEXT: %5 = "galv.concat"(%0#0, %0#1) {axis = 1 : i64, offsets = array<i64: 512>}
// CHECK-NEXT: %6 = "galv.add"(%5, %1#1) {offsets = array<i64: 64>}
"galv.func"() ({
^bb0(%x: tensor<4x16xf32>):
  %s:2 = "galv.split"(%x) {axis = 1 : i64, sizes = array<i64: 8, 8>} : (tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) loc("split")
  %0 = "galv.neg"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("neg")
  %1 = "galv.exp"(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("exp")
  %r = "galv.reduce_sum"(%0) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x16xf32>) -> tensor<4x1xf32> loc("sum")
  %c = "galv.concat"(%s#0, %s#1) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32> loc("cat")
  %y = "galv.add"(%c, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("add")
  "galv.return"(%y, %r) : (tensor<4x16xf32>, tensor<4x1xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}, {galv.name = "r"}], sym_name = "main"} : () -> ()
