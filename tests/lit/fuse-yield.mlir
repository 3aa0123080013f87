// fuse: a value used inside the group and again after it (by a
// non-elementwise op and by the return) is yielded; the outside users read
// the fused op's results. Outside operands are deduplicated block arguments.
// RUN: %galv-opt --passes=fuse --verify-each %s | %FileCheck %s
// CHECK:      %0:2 = "galv.fused"(%arg0, %arg1) ({
// CHECK-NEXT:   ^bb0(%arg2: tensor<4x8xf32>, %arg3: tensor<4x8xf32>):
// CHECK-NEXT:     %1 = "galv.sub"(%arg2, %arg3)
// CHECK-NEXT:     %2 = "galv.exp"(%1)
// CHECK-NEXT:     %3 = "galv.mul"(%2, %arg2)
// CHECK-NEXT:     "galv.yield"(%1, %3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> ()
// CHECK-NEXT: }) : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: %4 = "galv.reduce_sum"(%0#0)
// CHECK-NEXT: "galv.return"(%0#1, %4)
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>):
  %0 = "galv.sub"(%x, %y) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("sub")
  %1 = "galv.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("exp")
  %2 = "galv.mul"(%1, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("mul")
  %3 = "galv.reduce_sum"(%0) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32> loc("sum")
  "galv.return"(%2, %3) : (tensor<4x8xf32>, tensor<4x1xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "y"}], res_attrs = [{galv.name = "a"}, {galv.name = "b"}], sym_name = "main"} : () -> ()
