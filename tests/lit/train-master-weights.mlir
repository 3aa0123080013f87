// master-weights: a trained parameter stored bf16 (a model saved in 16 bits)
// becomes an fp32 master, cast to bf16 first in the body where the model read
// it, so the AdamW pass updates fp32 values (before the pass it stopped:
// "operand dtypes bf16 and f32 differ"). A frozen bf16 parameter stays bf16;
// an fp32 model is left alone.
// RUN: %galv-opt --passes=master-weights,loss,autodiff,optimizer --verify-each %s | %FileCheck %s
// RUN: %galv-opt --passes=master-weights %s | %FileCheck %s --check-prefix=PASS
// CHECK: ^bb0(%arg0: tensor<2x4xf32>, %arg1: tensor<2xi64>, %arg2: tensor<4x3xf32>, %arg3: tensor<3xbf16>,
// CHECK: "galv.cast"(%arg2) {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16> loc("/fc/cast"("Cast"))
// CHECK: loc("optimizer/adamw/w")
// CHECK-NOT: loc("optimizer/adamw/b")
// PASS: %0 = "galv.cast"(%arg1) {to = bf16} : (tensor<4x3xf32>) -> tensor<4x3xbf16>
// PASS-NEXT: %1 = "galv.cast"(%0) {to = f32}
// PASS-NOT: "galv.cast"(%arg2) {to = bf16}
"galv.func"() ({
^bb0(%x: tensor<2x4xf32>, %w: tensor<4x3xbf16>, %b: tensor<3xbf16>):
  %0 = "galv.cast"(%w) {to = f32} : (tensor<4x3xbf16>) -> tensor<4x3xf32> loc("/fc/cast"("Cast"))
  %1 = "galv.dot"(%x, %0) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("/fc"("MatMul"))
  %2 = "galv.cast"(%b) {to = f32} : (tensor<3xbf16>) -> tensor<3xf32> loc("/fc/bcast"("Cast"))
  %3 = "galv.add"(%1, %2) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("/fc/add"("Add"))
  "galv.return"(%3) : (tensor<2x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}, {galv.name = "b", galv.param, galv.frozen}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
