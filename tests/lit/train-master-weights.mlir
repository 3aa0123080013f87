// master-weights: a trained parameter stored bf16 (a model saved in 16 bits)
// becomes an fp32 master, so the AdamW pass updates fp32 values (before the
// pass it stopped: "operand dtypes bf16 and f32 differ"). Read through the
// model's cast to f32 (w), that cast reads the master itself (no bf16 value
// left); read as bf16 by bf16 ops (s), a cast of the master to bf16 takes its
// place. A frozen bf16 parameter (b) stays bf16.
// RUN: %galv-opt --passes=master-weights,loss,autodiff,optimizer --verify-each %s | %FileCheck %s
// RUN: %galv-opt --passes=master-weights --verify-each %s | %FileCheck %s --check-prefix=PASS
// CHECK: ^bb0(%arg0: tensor<2x4xf32>, %arg1: tensor<2xi64>, %arg2: tensor<4x3xf32>, %arg3: tensor<3xbf16>, %arg4: tensor<3xf32>,
// CHECK: loc("optimizer/adamw/w")
// CHECK-NOT: loc("optimizer/adamw/b")
// CHECK: loc("optimizer/adamw/s")
// PASS: ^bb0(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf32>, %arg2: tensor<3xbf16>, %arg3: tensor<3xf32>):
// PASS-NEXT: %0 = "galv.cast"(%arg3) {to = bf16} : (tensor<3xf32>) -> tensor<3xbf16> loc("/s/sq"("Mul"))
// PASS-NEXT: "galv.dot"(%arg0, %arg1)
// PASS-NOT: "galv.cast"(%arg1)
// PASS: "galv.cast"(%arg2) {to = f32}
// PASS: "galv.mul"(%0, %0)
"galv.func"() ({
^bb0(%x: tensor<2x4xf32>, %w: tensor<4x3xbf16>, %b: tensor<3xbf16>, %s: tensor<3xbf16>):
  %0 = "galv.cast"(%w) {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32> loc("/fc/cast"("Cast"))
  %1 = "galv.dot"(%x, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("/fc"("MatMul"))
  %2 = "galv.cast"(%b) {to = f32} : (tensor<3xbf16>) -> tensor<3xf32> loc("/fc/bcast"("Cast"))
  %3 = "galv.add"(%1, %2) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("/fc/add"("Add"))
  %4 = "galv.mul"(%s, %s) : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16> loc("/s/sq"("Mul"))
  %5 = "galv.cast"(%4) {to = f32} : (tensor<3xbf16>) -> tensor<3xf32> loc("/s/cast"("Cast"))
  %6 = "galv.add"(%3, %5) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("/s/add"("Add"))
  "galv.return"(%6) : (tensor<2x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}, {galv.name = "b", galv.param, galv.frozen}, {galv.name = "s", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
