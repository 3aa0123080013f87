// A loss that depends on frozen parameters only has nothing to train.
// RUN: not %galv-opt --passes=loss,autodiff %s 2>&1 | %FileCheck %s
// CHECK: autodiff: the loss does not depend on any parameter that trains
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>):
  %0 = "galv.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("/pos"("Add"))
  "galv.return"(%0) : (tensor<2x3xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.frozen, galv.name = "pos", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
