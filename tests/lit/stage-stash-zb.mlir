// stage-stash --stash=input-grad|weight-grad (ZB-H1, docs/pipeline.md,
// "Schedules"): a backward entry (the one stage-stash.mlir's backward part
// gives: results grad:w, grad:pp.0.0; inputs w, gin:pp.2.0 and the stash
// stash.0 / stash.1 as galv.state) split into its input-gradient part and
// its weight-gradient part. Input-grad: the ops grad:pp.0.0 needs (not the
// dot that makes grad:w, nor the transpose of the stashed input feeding it);
// every state input kept (the forward entry fills the whole stash); results
// grad:pp.0.0 then what W reads: the exp of the stash (wstash.0) and the
// scaled gradient (wstash.1). Weight-grad: those two as galv.state inputs,
// the transpose and the dot, result grad:w; no gin: or stash.N input left.
// Both re-parse and MLIR reads them.
// RUN: %galv-opt --passes=stage-stash --stash=input-grad %s > %t.b.mlir
// RUN: %FileCheck %s --check-prefix=IG < %t.b.mlir
// RUN: %galv-opt %t.b.mlir | diff - %t.b.mlir
// RUN: %mlir-check %t.b.mlir
// RUN: %galv-opt --passes=stage-stash --stash=weight-grad %s > %t.w.mlir
// RUN: %FileCheck %s --check-prefix=WG < %t.w.mlir
// RUN: %galv-opt %t.w.mlir | diff - %t.w.mlir
// RUN: %mlir-check %t.w.mlir
// RUN: %galv-opt --passes=stage-stash,fuse,memory-plan --stash=weight-grad %s | %FileCheck %s --check-prefix=PLAN
// IG: ^bb0(%arg0: tensor<8x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<4x8xf32>):
// IG: %[[E:[0-9]+]] = "galv.exp"(%arg2)
// IG: %[[G:[0-9]+]] = "galv.mul"(%{{[0-9]+}}, %{{[0-9]+}}) {{.*}}loc("grad/scaled")
// IG-NOT: loc("grad/mm/xt")
// IG-NOT: loc("grad/mm/w")
// IG: loc("grad/mm/x")
// IG: %[[X:[0-9]+]] = "galv.mul"({{.*}}loc("grad/extra")
// IG-NEXT: "galv.return"(%[[X]], %[[E]], %[[G]])
// IG: arg_attrs = [{galv.name = "w", galv.param}, {galv.name = "gin:pp.2.0"}, {galv.name = "stash.0", galv.state}, {galv.name = "stash.1", galv.state}], res_attrs = [{galv.name = "grad:pp.0.0"}, {galv.name = "wstash.0"}, {galv.name = "wstash.1"}]
// WG: ^bb0(%arg0: tensor<8x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>):
// WG-NEXT: %[[T:[0-9]+]] = "galv.transpose"(%arg1) {{.*}}loc("grad/mm/xt")
// WG-NEXT: %[[D:[0-9]+]] = "galv.dot"(%[[T]], %arg2) {{.*}}loc("grad/mm/w")
// WG-NEXT: "galv.return"(%[[D]])
// WG: arg_attrs = [{galv.name = "w", galv.param}, {galv.name = "wstash.0", galv.state}, {galv.name = "wstash.1", galv.state}], res_attrs = [{galv.name = "grad:w"}]
// W's stash is not in its arena (offset -1), nor is the parameter.
// PLAN: "galv.arena"() {arg_offsets = array<i64: -1, -1, -1>
"galv.func"() ({
^bb0(%arg0: tensor<8x8xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<4x8xf32>):
  %0 = "galv.reshape"(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("/w/view")
  %1 = "galv.constant"() {value = dense<5.000000000e-01> : tensor<f32>} : () -> tensor<f32> loc("/scale")
  %2 = "galv.exp"(%arg2) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("/exp")
  %3 = "galv.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("grad/one")
  %4 = "galv.mul"(%arg3, %arg3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act/sq")
  %5 = "galv.sub"(%3, %4) : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act/d")
  %6 = "galv.mul"(%arg1, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/act")
  %7 = "galv.mul"(%6, %1) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("grad/scaled")
  %8 = "galv.transpose"(%2) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("grad/mm/xt")
  %9 = "galv.dot"(%8, %7) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32> loc("grad/mm/w")
  %10 = "galv.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("grad/mm/wt")
  %11 = "galv.dot"(%7, %10) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("grad/mm/x")
  %12 = "galv.mul"(%11, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/exp")
  %13 = "galv.mul"(%12, %arg2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("grad/extra")
  "galv.return"(%9, %13) : (tensor<8x8xf32>, tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "w", galv.param}, {galv.name = "gin:pp.2.0"}, {galv.name = "stash.0", galv.state}, {galv.name = "stash.1", galv.state}], res_attrs = [{galv.name = "grad:w"}, {galv.name = "grad:pp.0.0"}], sym_name = "main"} : () -> ()
