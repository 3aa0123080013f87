// memory-plan: parameters, constants and views of them are not in the arena
// (-1); a view aliases its operand and keeps it live (%r is returned, so %0
// lives to the end); graph outputs live to the end. Live ranges (points):
// x [0,5], %0 [3,10], %1 [5,6], %2 [6,7], %3 [7,8], %4 [8,10], %5 [9,10],
// all 256 bytes: three live at once at most, so the arena is 768 bytes,
// equal to the lower bound.
// RUN: %galv-opt --passes=memory-plan --verify-each %s | %FileCheck %s
// CHECK:      "galv.arena"() {arg_offsets = array<i64: 0, -1>, bytes = 768 : i64, lower_bound = 768 : i64}
// CHECK-NEXT: %0 = "galv.constant"() {value =
// CHECK-NEXT: %1 = "galv.reshape"(%arg1) {offsets = array<i64: -1>}
// CHECK-NEXT: %2 = "galv.add"(%arg0, %1) {offsets = array<i64: 256>}
// CHECK-NEXT: %3 = "galv.reshape"(%2) {offsets = array<i64: 256>}
// CHECK-NEXT: %4 = "galv.neg"(%arg0) {offsets = array<i64: 512>}
// CHECK-NEXT: %5 = "galv.exp"(%4) {offsets = array<i64: 0>}
// CHECK-NEXT: %6 = "galv.add"(%5, %0) {offsets = array<i64: 512>}
// CHECK-NEXT: %7 = "galv.sqrt"(%6) {offsets = array<i64: 0>}
// CHECK-NEXT: %8 = "galv.abs"(%3) {offsets = array<i64: 512>}
// CHECK-NEXT: %9 = "galv.reshape"(%0) {offsets = array<i64: -1>}
// CHECK-NEXT: "galv.return"(%7, %8, %3, %9)
"galv.func"() ({
^bb0(%x: tensor<4x16xf32>, %w: tensor<16xf32>):
  %c = "galv.constant"() {value = dense<1.0> : tensor<16xf32>} : () -> tensor<16xf32> loc("c")
  %v = "galv.reshape"(%w) : (tensor<16xf32>) -> tensor<1x16xf32> loc("v")
  %0 = "galv.add"(%x, %v) : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32> loc("add0")
  %r = "galv.reshape"(%0) : (tensor<4x16xf32>) -> tensor<64xf32> loc("r")
  %1 = "galv.neg"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("neg")
  %2 = "galv.exp"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("exp")
  %3 = "galv.add"(%2, %c) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("add1")
  %4 = "galv.sqrt"(%3) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("sqrt")
  %5 = "galv.abs"(%r) : (tensor<64xf32>) -> tensor<64xf32> loc("abs")
  %cr = "galv.reshape"(%c) : (tensor<16xf32>) -> tensor<2x8xf32> loc("cr")
  "galv.return"(%4, %5, %r, %cr) : (tensor<4x16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}], res_attrs = [{galv.name = "a"}, {galv.name = "b"}, {galv.name = "c"}, {galv.name = "d"}], sym_name = "main"} : () -> ()
