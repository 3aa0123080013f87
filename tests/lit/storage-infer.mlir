// storage: under --precision=bf16 an inference program stores every f32 op
// result bf16 (storage = ["bf16"]; not the i1 result of greater, not a
// constant), views follow their root, and its f32 arguments too (converted
// on upload: arg_storage on galv.return); the memory plan then gives a 4x16
// bf16 value 128 bytes, not 256: the arena peaks at x (128) + neg's result
// (128) + the i1 mask (64) = 320 bytes, against 256 + 256 + 64 = 576 in
// fp32 (where no storage attribute is written).
// RUN: %galv-opt --passes=storage,memory-plan --precision=bf16 --verify-each %s | %FileCheck %s --check-prefix=BF16
// RUN: %galv-opt --passes=storage,memory-plan --precision=fp32 %s | %FileCheck %s --check-prefix=F32
// BF16:      "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 320 : i64, lower_bound = 320 : i64}
// BF16-NEXT: "galv.constant"() {value =
// BF16-NEXT: %1 = "galv.neg"(%arg0) {offsets = array<i64: {{[0-9]+}}>, storage = ["bf16"]}
// BF16-NEXT: %2 = "galv.reshape"(%1) {offsets = array<i64: {{[0-9]+}}>, storage = ["bf16"]}
// BF16-NEXT: %3 = "galv.greater"(%2, %0) {offsets = array<i64: {{[0-9]+}}>} :
// BF16-NEXT: %4 = "galv.exp"(%2) {offsets = array<i64: {{[0-9]+}}>, storage = ["bf16"]}
// BF16-NEXT: "galv.return"(%4, %3) {arg_storage = ["bf16"]}
// F32:      "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 576 : i64, lower_bound = 576 : i64}
// F32-NOT:  storage
"galv.func"() ({
^bb0(%x: tensor<4x16xf32>):
  %c = "galv.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32> loc("c")
  %0 = "galv.neg"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("neg")
  %r = "galv.reshape"(%0) : (tensor<4x16xf32>) -> tensor<64xf32> loc("r")
  %g = "galv.greater"(%r, %c) : (tensor<64xf32>, tensor<f32>) -> tensor<64xi1> loc("gt")
  %1 = "galv.exp"(%r) : (tensor<64xf32>) -> tensor<64xf32> loc("exp")
  "galv.return"(%1, %g) : (tensor<64xf32>, tensor<64xi1>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}, {galv.name = "m"}], sym_name = "main"} : () -> ()
