// galv.frozen only marks a parameter: on another argument it is an error.
// RUN: not %galv-opt %s 2>&1 | %FileCheck %s
// CHECK: argument 'x' is galv.frozen but not galv.param
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>):
  "galv.return"(%arg0) : (tensor<2x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.frozen, galv.name = "x"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
