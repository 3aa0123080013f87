// fuse: a chain of elementwise ops of one shape becomes one galv.fused op;
// the broadcast bias stays an operand (a block argument), intermediates are
// not yielded, the fused op takes the last op's location, and the text
// round-trips (block arguments printed and parsed) and MLIR reads it.
// RUN: %galv-opt --passes=fuse %s | %FileCheck %s
// RUN: %galv-opt --passes=fuse %s -o %t1 && %galv-opt %t1 -o %t2 && diff %t1 %t2 && %mlir-check %t1
// RUN: %galv-opt --passes=fuse,shape-infer --verify-each %s | %FileCheck %s
// CHECK:      %0 = "galv.fused"(%arg0, %arg1) ({
// CHECK-NEXT:   ^bb0(%arg2: tensor<2x16x64xf32>, %arg3: tensor<64xf32>):
// CHECK-NEXT:     %1 = "galv.add"(%arg2, %arg3) : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32> loc("/add"("Add"))
// CHECK-NEXT:     %2 = "galv.gelu"(%1) {approximate = "tanh"}
// CHECK-NEXT:     %3 = "galv.mul"(%2, %2)
// CHECK-NEXT:     "galv.yield"(%3) : (tensor<2x16x64xf32>) -> () loc("/mul"("Mul"))
// CHECK-NEXT: }) : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32> loc("/mul"("Mul"))
// CHECK-NEXT: "galv.return"(%0)
// CHECK-NOT: galv.fused
"galv.func"() ({
^bb0(%x: tensor<2x16x64xf32>, %b: tensor<64xf32>):
  %0 = "galv.add"(%x, %b) : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32> loc("/add"("Add"))
  %1 = "galv.gelu"(%0) {approximate = "tanh"} : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32> loc("/gelu"("Gelu"))
  %2 = "galv.mul"(%1, %1) : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32> loc("/mul"("Mul"))
  "galv.return"(%2) : (tensor<2x16x64xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
