// A parse error is one line naming file, line and column; nothing is printed.
// RUN: not %galv-opt %s 2>&1 | %FileCheck %s
// RUN: not %galv-opt %s -o %t 2>/dev/null && not test -s %t

// CHECK: galv-opt: error: {{.*}}text-parse-error.mlir:11:19: use of undefined value '%y'
// CHECK-NOT: error
// CHECK-NOT: galv.func
"galv.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "galv.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("ok")
  %1 = "galv.neg"(%y) : (tensor<4xf32>) -> tensor<4xf32> loc("bad")
  "galv.return"(%1) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [], sym_name = "main"} : () -> ()
