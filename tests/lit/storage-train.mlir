// storage: mixed-precision training under --precision=bf16 (loss, autodiff,
// optimizer, fuse first): every galv.dot reads bf16 inputs (input_storage);
// activations, logits and activation gradients are stored bf16; the loss,
// the parameter gradients (the dW GEMMs, written in the parameter's dim
// order: no transpose follows) and the update stay fp32 (no storage
// attribute). With --grad-dtype=bf16 the dW GEMMs write bf16 too, and the memory plan's
// grad_bytes counts 2 bytes per parameter.
// RUN: %galv-opt --passes=loss,autodiff,optimizer,fuse,storage,memory-plan --precision=bf16 --verify-each %s | %FileCheck %s
// RUN: %galv-opt --passes=loss,autodiff,optimizer,fuse,storage,memory-plan --precision=bf16 --grad-dtype=bf16 %s | %FileCheck %s --check-prefix=G16
// CHECK:      "galv.arena"() {{{.*}}grad_bytes = 352 : i64
// CHECK:      %0 = "galv.dot"(%arg0, %arg2) {input_storage = "bf16", {{.*}}, storage = ["bf16"]}
// CHECK-NEXT: %1 = "galv.relu"(%0) {offsets = array<i64: {{[0-9]+}}>, storage = ["bf16"]}
// CHECK-NEXT: %2 = "galv.dot"(%1, %arg3) {input_storage = "bf16", {{.*}}, storage = ["bf16"]}
// CHECK-NEXT: %3 = "galv.cross_entropy"(%2, %arg1) {ignore_index = -100 : i64, offsets = array<i64: {{[0-9]+}}>} :
// CHECK:      "galv.cross_entropy_grad"({{.*}}storage = ["bf16"]}
// CHECK:      %7 = "galv.dot"(%1, %5) {input_storage = "bf16", lhs_batch = array<i64>, lhs_contract = array<i64: 0, 1>, offsets = array<i64: {{[0-9]+}}>, rhs_batch = array<i64>, rhs_contract = array<i64: 0, 1>} : (tensor<2x4x8xf32>, tensor<2x4x5xf32>) -> tensor<8x5xf32>
// CHECK-NOT:  "galv.transpose"
// G16:        "galv.arena"() {{{.*}}grad_bytes = 176 : i64
// G16:        %3 = "galv.cross_entropy"(%2, %arg1) {ignore_index = -100 : i64, offsets = array<i64: {{[0-9]+}}>} :
// G16:        %7 = "galv.dot"(%1, %5) {input_storage = "bf16", {{.*}}, storage = ["bf16"]} : {{.*}} -> tensor<8x5xf32>
// G16-NOT:    "galv.transpose"
"galv.func"() ({
^bb0(%x: tensor<2x4x6xf32>, %w1: tensor<6x8xf32>, %w2: tensor<8x5xf32>):
  %0 = "galv.dot"(%x, %w1) {lhs_contract = array<i64: 2>, rhs_contract = array<i64: 0>} : (tensor<2x4x6xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32> loc("/l1"("MatMul"))
  %1 = "galv.relu"(%0) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/act"("Relu"))
  %2 = "galv.dot"(%1, %w2) {lhs_contract = array<i64: 2>, rhs_contract = array<i64: 0>} : (tensor<2x4x8xf32>, tensor<8x5xf32>) -> tensor<2x4x5xf32> loc("/l2"("MatMul"))
  "galv.return"(%2) : (tensor<2x4x5xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
