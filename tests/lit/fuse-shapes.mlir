// fuse: ops whose results have different shapes are never in one group
// (the [4,1] op is alone; the [4,8] ones use it as a broadcast operand);
// compare, where and cast fuse with arithmetic of the same shape.
// RUN: %galv-opt --passes=fuse --verify-each %s | %FileCheck %s
// CHECK:      %0 = "galv.exp"(%arg1) : (tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK-NEXT: %1 = "galv.fused"(%arg0, %0) ({
// CHECK-NEXT:   ^bb0(%arg2: tensor<4x8xf32>, %arg3: tensor<4x1xf32>):
// CHECK-NEXT:     "galv.greater"(%arg2, %arg3)
// CHECK-NEXT:     "galv.where"
// CHECK-NEXT:     "galv.cast"
// CHECK-NEXT:     "galv.yield"
// CHECK-NEXT: }) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf16>
// CHECK-NOT: galv.fused
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %m: tensor<4x1xf32>):
  %0 = "galv.exp"(%m) : (tensor<4x1xf32>) -> tensor<4x1xf32> loc("exp")
  %1 = "galv.greater"(%x, %0) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi1> loc("gt")
  %2 = "galv.where"(%1, %x, %0) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> loc("where")
  %3 = "galv.cast"(%2) {to = f16} : (tensor<4x8xf32>) -> tensor<4x8xf16> loc("cast")
  "galv.return"(%3) : (tensor<4x8xf16>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "m"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
