// A real broadcast mismatch is one error line naming the node and the word
// "shape"; no IR is printed.
// RUN: not %galv-opt %s --passes=shape-infer 2>&1 | %FileCheck %s --check-prefix=ERR
// ERR: galv-opt: error: {{.*}}: node '/bad/Add' (Add): shape mismatch: cannot broadcast tensor<2x3xf32> and tensor<4xf32>
// ERR-NOT: galv.func
"galv.func"() ({
^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<4xf32>):
  %0 = "galv.add"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<*x!galv.any> loc("/bad/Add"("Add"))
  "galv.return"(%0) : (tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "a"}, {galv.name = "b"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
