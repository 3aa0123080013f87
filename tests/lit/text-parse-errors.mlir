// Each malformed input gets one error line with its position.
// RUN: /usr/lib/llvm-19/bin/split-file %s %t
// RUN: not %galv-opt %t/unknown-op.mlir 2>&1 | %FileCheck %s --check-prefix=UNKNOWN
// RUN: not %galv-opt %t/type-mismatch.mlir 2>&1 | %FileCheck %s --check-prefix=TYPE
// RUN: not %galv-opt %t/redefined.mlir 2>&1 | %FileCheck %s --check-prefix=REDEF
// RUN: not %galv-opt %t/operands.mlir 2>&1 | %FileCheck %s --check-prefix=COUNT
// RUN: not %galv-opt %t/string.mlir 2>&1 | %FileCheck %s --check-prefix=STRING
// RUN: not %galv-opt %t/truncated.mlir 2>&1 | %FileCheck %s --check-prefix=TRUNC
// RUN: not %galv-opt %t/no-return.mlir 2>&1 | %FileCheck %s --check-prefix=VERIFY

// UNKNOWN: galv-opt: error: {{.*}}unknown-op.mlir:3:8: unknown op 'galv.frobnicate'
// TYPE: galv-opt: error: {{.*}}type-mismatch.mlir:3:19: operand 0 has type tensor<4xf32> but is declared tensor<4xf16>
// REDEF: galv-opt: error: {{.*}}redefined.mlir:4:3: redefinition of value '%0'
// COUNT: galv-opt: error: {{.*}}operands.mlir:3:8: galv.add takes 2 operands, got 1
// STRING: galv-opt: error: {{.*}}string.mlir:3:62: unterminated string
// TRUNC: galv-opt: error: {{.*}}truncated.mlir:4:1: unexpected end of input, expected '>'
// VERIFY: galv-opt: error: {{.*}}no-return.mlir: node 'n' (neg): the function body does not end in galv.return

//--- unknown-op.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.frobnicate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
}) : () -> ()
//--- type-mismatch.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf16>) -> tensor<4xf32>
}) : () -> ()
//--- redefined.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
}) : () -> ()
//--- operands.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.add"(%x) : (tensor<4xf32>) -> tensor<4xf32>
}) : () -> ()
//--- string.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("abc
}) : () -> ()
//--- truncated.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32
//--- no-return.mlir
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("n"("neg"))
}) : () -> ()
