// fuse-attention: h.0's bare chain and h.1's div -> where(mask) chain
// become galv.attention (the scale a literal, the mask functor operand %0,
// the score a where branch); h.2's (a mul by a mask after the softmax: a
// dropout written out, which only galv.dropout fuses) and h.3's
// (a mask that depends on a parameter: it would need a gradient) stay
// four ops. The fused op keeps the softmax's layer group (h.1's `layer`,
// as cluster-layers sets it), its gradient does not (a backward op).
// With --fused-attention=off nothing changes; after autodiff
// each fused core has one galv.attention_grad and no S x S value; selective
// recomputation clones the cores left unfused and leaves the fused ones.
// RUN: %galv-opt --passes=fuse-attention %s | %FileCheck %s
// RUN: %galv-opt --passes=fuse-attention --fused-attention=off %s | %FileCheck %s --check-prefix=OFF
// RUN: %galv-opt --passes=fuse-attention,autodiff %s | %FileCheck %s --check-prefix=GRAD
// RUN: %galv-opt --passes=fuse-attention,autodiff,recompute --recompute=selective %s | %FileCheck %s --check-prefix=SEL
// CHECK: %[[O0:[0-9]+]]:2 = "galv.attention"(%arg0, %arg1, %arg2) {k_contract = 2 : i64, score = "", v_contract = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>) loc("/h.0/attn/Softmax"("Softmax"))
// CHECK-NEXT: "galv.tanh"(%[[O0]]#0)
// CHECK-NOT: "galv.div"
// CHECK: "galv.attention"(%{{[0-9]+}}, %arg1, %arg2, %arg3) {k_contract = 2 : i64, layer = 1 : i64, score = "div:s,2;where:%0,s,-10000", v_contract = 1 : i64}{{.*}}loc("/h.1/attn/Softmax"("Softmax"))
// CHECK: "galv.softmax"{{.*}}loc("/h.2/attn/Softmax"("Softmax"))
// CHECK: "galv.mul"{{.*}}loc("/h.2/attn/Dropout"("Mul"))
// CHECK: "galv.add"{{.*}}loc("/h.3/attn/bias"("Add"))
// CHECK-NEXT: "galv.softmax"{{.*}}loc("/h.3/attn/Softmax"("Softmax"))
// CHECK-NOT: galv.attention
// CHECK: "galv.return"
// OFF-NOT: galv.attention
// OFF-COUNT-4: "galv.softmax"
// OFF-NOT: galv.attention
// GRAD-COUNT-2: "galv.attention"(
// GRAD-NOT: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.{{[01]}}/
// GRAD: "galv.attention_grad"({{.*}}) {k_contract = 2 : i64, score = "div:s,2;where:%0,s,-10000", v_contract = 1 : i64} : {{.*}} -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) loc("/h.1/attn/Softmax/grad"("Softmax"))
// GRAD: "galv.attention_grad"({{.*}}loc("/h.0/attn/Softmax/grad"("Softmax"))
// SEL-NOT: /h.{{[01]}}/attn/{{[A-Za-z]*}}/recompute
// SEL: "galv.softmax"{{.*}}loc("/h.3/attn/Softmax/recompute"("Softmax"))
// SEL-NOT: /h.{{[01]}}/attn/{{[A-Za-z]*}}/recompute
// SEL: "galv.softmax"{{.*}}loc("/h.2/attn/Softmax/recompute"("Softmax"))
// SEL-NOT: /h.{{[01]}}/attn/{{[A-Za-z]*}}/recompute
"galv.func"() ({
^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4x8xf32>, %arg2: tensor<2x4x8xf32>, %arg3: tensor<4x4xi1>, %arg4: tensor<2x4x4xf32>, %arg5: tensor<4x4xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/scores"("MatMul"))
  %1 = "galv.softmax"(%0) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.0/attn/Softmax"("Softmax"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/attn/pv"("MatMul"))
  %3 = "galv.tanh"(%2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.0/mlp/act"("Tanh"))
  %4 = "galv.dot"(%3, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/scores"("MatMul"))
  %5 = "galv.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32> loc("/h.1/attn/scale"("Constant"))
  %6 = "galv.div"(%4, %5) : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Div"("Div"))
  %7 = "galv.constant"() {value = dense<-1.0e4> : tensor<f32>} : () -> tensor<f32> loc("/h.1/attn/neg"("Constant"))
  %8 = "galv.where"(%arg3, %6, %7) : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Where"("Where"))
  %9 = "galv.softmax"(%8) {axis = -1 : i64, layer = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.1/attn/Softmax"("Softmax"))
  %10 = "galv.dot"(%9, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.1/attn/pv"("MatMul"))
  %11 = "galv.dot"(%10, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/scores"("MatMul"))
  %12 = "galv.softmax"(%11) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/Softmax"("Softmax"))
  %13 = "galv.mul"(%12, %arg4) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.2/attn/Dropout"("Mul"))
  %14 = "galv.dot"(%13, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.2/attn/pv"("MatMul"))
  %15 = "galv.dot"(%14, %arg1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("/h.3/attn/scores"("MatMul"))
  %16 = "galv.add"(%15, %arg5) : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32> loc("/h.3/attn/bias"("Add"))
  %17 = "galv.softmax"(%16) {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("/h.3/attn/Softmax"("Softmax"))
  %18 = "galv.dot"(%17, %arg2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("/h.3/attn/pv"("MatMul"))
  %19 = "galv.reduce_sum"(%18) {keepdims = 0 : i64} : (tensor<2x4x8xf32>) -> tensor<f32> loc("/sum"("ReduceSum"))
  "galv.return"(%19) : (tensor<f32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "q", galv.param}, {galv.name = "k", galv.param}, {galv.name = "v", galv.param}, {galv.name = "mask"}, {galv.name = "keep"}, {galv.name = "bias", galv.param}], res_attrs = [{galv.name = "loss"}], sym_name = "main"} : () -> ()
