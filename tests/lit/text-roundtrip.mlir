// The text form round-trips byte-identically, prints canonically (values
// renumbered, attributes sorted, floats as %.9e, >16 elements as hex), and
// MLIR 19's own parser reads what galv-opt prints.
// RUN: %galv-opt %s | %FileCheck %s
// RUN: %galv-opt %s -o %t1 && %galv-opt %t1 -o %t2 && diff %t1 %t2
// RUN: %galv-opt %s -o %t && %mlir-check %t

"galv.func"() ({
^bb0(%ids: tensor<2x16xi64>, %wte: tensor<256x64xf32>, %c: tensor<i1>):
  %g = "galv.gather"(%wte, %ids) {axis = 0 : i64} : (tensor<256x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32> loc("/wte/Gather"("Gather"))
  %s:2 = "galv.split"(%g) {sizes = array<i64: 32, 32>, axis = 2 : i64} : (tensor<2x16x64xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>) loc("/split"("Split"))
  %r = "galv.if"(%c) ({
    %n = "galv.neg"(%s#0) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> loc("then/neg")
    "galv.yield"(%n) : (tensor<2x16x32xf32>) -> () loc("then")
  }, {
    "galv.yield"(%s#1) : (tensor<2x16x32xf32>) -> () loc("else")
  }) : (tensor<i1>) -> tensor<2x16x32xf32> loc("/If"("If"))
  %k = "galv.constant"() {value = dense<[[1.5, -2.0], [0x7FC00000, 3.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("c\0A\22*/é")
  %h = "galv.constant"() {value = dense<[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]> : tensor<17xi8>} : () -> tensor<17xi8> loc("hex")
  %b = "galv.constant"() {value = dense<[true, false, true, true, false, false, false, false, true, true, true, true, true, true, true, true, false]> : tensor<17xi1>} : () -> tensor<17xi1> loc("bits")
  %z = "galv.constant"() {value = dense<0.0> : tensor<4xf16>} : () -> tensor<4xf16> loc("splat")
  %e = "galv.cast"(%wte) {to = bf16, eps = 1.0e-5 : f32, names = ["a", "b\5C"], flag, w = array<f32: 1.0, 0xFF800000>, none = array<i64>} : (tensor<256x64xf32>) -> tensor<*x!galv.any> loc("cast")
  "galv.return"(%r, %g) : (tensor<2x16x32xf32>, tensor<2x16x64xf32>) -> () loc("return")
}) {res_attrs = [{galv.name = "logits"}, {}], arg_attrs = [{galv.name = "input_ids"}, {galv.name = "wte", galv.param}, {galv.name = "cond"}], sym_name = "main"} : () -> ()

// CHECK:      "galv.func"() ({
// CHECK-NEXT: ^bb0(%arg0: tensor<2x16xi64>, %arg1: tensor<256x64xf32>, %arg2: tensor<i1>):
// CHECK-NEXT:   %0 = "galv.gather"(%arg1, %arg0) {axis = 0 : i64} : (tensor<256x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32> loc("/wte/Gather"("Gather"))
// CHECK-NEXT:   %1:2 = "galv.split"(%0) {axis = 2 : i64, sizes = array<i64: 32, 32>} : (tensor<2x16x64xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>) loc("/split"("Split"))
// CHECK-NEXT:   %2 = "galv.if"(%arg2) ({
// CHECK-NEXT:     %3 = "galv.neg"(%1#0) : (tensor<2x16x32xf32>) -> tensor<2x16x32xf32> loc("then/neg")
// CHECK-NEXT:     "galv.yield"(%3) : (tensor<2x16x32xf32>) -> () loc("then")
// CHECK-NEXT:   }, {
// CHECK-NEXT:     "galv.yield"(%1#1) : (tensor<2x16x32xf32>) -> () loc("else")
// CHECK-NEXT:   }) : (tensor<i1>) -> tensor<2x16x32xf32> loc("/If"("If"))
// CHECK-NEXT:   %4 = "galv.constant"() {value = dense<{{\[\[}}1.500000000e+00, -2.000000000e+00], [0x7FC00000, 3.000000000e+00]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("c\0A\22*/é")
// CHECK-NEXT:   %5 = "galv.constant"() {value = dense<"0x0102030405060708090A0B0C0D0E0F1011"> : tensor<17xi8>}
// CHECK-NEXT:   %6 = "galv.constant"() {value = dense<"0x0DFF00"> : tensor<17xi1>}
// CHECK-NEXT:   %7 = "galv.constant"() {value = dense<0.000000000e+00> : tensor<4xf16>}
// CHECK-NEXT:   %8 = "galv.cast"(%arg1) {eps = 9.999999747e-06 : f32, flag, names = ["a", "b\5C"], none = array<i64>, to = bf16, w = array<f32: 1.000000000e+00, 0xFF800000>} : (tensor<256x64xf32>) -> tensor<*x!galv.any> loc("cast")
// CHECK-NEXT:   "galv.return"(%2, %0) : (tensor<2x16x32xf32>, tensor<2x16x64xf32>) -> () loc("return")
// CHECK-NEXT: }) {arg_attrs = [{galv.name = "input_ids"}, {galv.name = "wte", galv.param}, {galv.name = "cond"}], res_attrs = [{galv.name = "logits"}, {}], sym_name = "main"} : () -> ()
// CHECK-NOT:  galv
