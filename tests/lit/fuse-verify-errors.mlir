// The verifier's galv.fused and galv.arena rules: each broken form is one
// error line naming the op.
// RUN: /usr/lib/llvm-19/bin/split-file %s %t
// RUN: not %galv-opt %t/not-elementwise.mlir 2>&1 | %FileCheck %s --check-prefix=ELTWISE
// RUN: not %galv-opt %t/outer-value.mlir 2>&1 | %FileCheck %s --check-prefix=OUTER
// RUN: not %galv-opt %t/arg-count.mlir 2>&1 | %FileCheck %s --check-prefix=ARGS
// RUN: not %galv-opt %t/shape.mlir 2>&1 | %FileCheck %s --check-prefix=SHAPE
// RUN: not %galv-opt %t/arena-late.mlir 2>&1 | %FileCheck %s --check-prefix=ARENA
// RUN: %galv-opt %t/ok.mlir | %FileCheck %s --check-prefix=OK

// ELTWISE: galv-opt: error: {{.*}}node 'sm'{{.*}}galv.softmax inside galv.fused is not elementwise
// OUTER: galv-opt: error: {{.*}}node 'neg'{{.*}}operand 0 is defined outside its galv.fused region
// ARGS: galv-opt: error: {{.*}}galv.fused has 1 operands but its block has 2 arguments
// SHAPE: galv-opt: error: {{.*}}node 'b'{{.*}}result 0 inside galv.fused is tensor<4x1xf32>, not the iteration shape tensor<4x8xf32>
// ARENA: galv-opt: error: {{.*}}galv.arena is not the first op of the function body
// OK: "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 128 : i64, lower_bound = 128 : i64}
// OK: "galv.fused"

//--- not-elementwise.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.fused"(%x) ({
  ^bb0(%a: tensor<4x8xf32>):
    %1 = "galv.softmax"(%a) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sm")
    "galv.yield"(%1) : (tensor<4x8xf32>) -> () loc("y")
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("f")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- outer-value.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.fused"(%x) ({
  ^bb0(%a: tensor<4x8xf32>):
    %1 = "galv.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
    "galv.yield"(%1) : (tensor<4x8xf32>) -> () loc("y")
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("f")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- arg-count.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.fused"(%x) ({
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
    %1 = "galv.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add")
    "galv.yield"(%1) : (tensor<4x8xf32>) -> () loc("y")
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("f")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- shape.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %z: tensor<4x1xf32>):
  %0 = "galv.fused"(%x, %z) ({
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<4x1xf32>):
    %1 = "galv.neg"(%c) : (tensor<4x1xf32>) -> tensor<4x1xf32> loc("b")
    %2 = "galv.add"(%a, %1) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> loc("add")
    "galv.yield"(%2) : (tensor<4x8xf32>) -> () loc("y")
  }) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> loc("f")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "z"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- arena-late.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
  "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 256 : i64, lower_bound = 256 : i64} : () -> () loc("arena")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- ok.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  "galv.arena"() {arg_offsets = array<i64: 0>, bytes = 128 : i64, lower_bound = 128 : i64} : () -> () loc("arena")
  %0 = "galv.fused"(%x) ({
  ^bb0(%a: tensor<4x8xf32>):
    %1 = "galv.neg"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
    %2 = "galv.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("exp")
    "galv.yield"(%2) : (tensor<4x8xf32>) -> () loc("y")
  }) {offsets = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("f")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
