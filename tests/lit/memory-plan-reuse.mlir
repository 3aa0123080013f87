// memory-plan on a hand-computed chain of 20-byte values (x: [0,1], %0:
// [1,2], %1: [2,3], %2: [3,4] in schedule points): values whose live ranges
// overlap get different 64-byte-aligned offsets, disjoint ones share
// (%1 reuses x's bytes, %2 reuses %0's). bytes = 128; lower_bound counts
// unaligned bytes: at most two 20-byte values live at once = 40.
// RUN: %galv-opt --passes=memory-plan --verify-each %s | %FileCheck %s
// RUN: %galv-opt --passes=memory-plan,memory-plan %s | %FileCheck %s
// RUN: %galv-opt --passes=memory-plan %s -o %t1 && %galv-opt %t1 -o %t2 && diff %t1 %t2 && %mlir-check %t1
// CHECK:      ^bb0(%arg0: tensor<5xf32>):
// CHECK-NEXT: "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 128 : i64, lower_bound = 40 : i64} : () -> ()
// CHECK-NEXT: %0 = "galv.neg"(%arg0) {offsets = array<i64: 64>}
// CHECK-NEXT: %1 = "galv.exp"(%0) {offsets = array<i64: 0>}
// CHECK-NEXT: %2 = "galv.tanh"(%1) {offsets = array<i64: 64>}
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: galv.arena
"galv.func"() ({
^bb0(%x: tensor<5xf32>):
  %0 = "galv.neg"(%x) : (tensor<5xf32>) -> tensor<5xf32> loc("neg")
  %1 = "galv.exp"(%0) : (tensor<5xf32>) -> tensor<5xf32> loc("exp")
  %2 = "galv.tanh"(%1) : (tensor<5xf32>) -> tensor<5xf32> loc("tanh")
  "galv.return"(%2) : (tensor<5xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
