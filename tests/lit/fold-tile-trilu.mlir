
// fold-constants: tile and trilu with constant repeats / k take the static
// attribute forms; a reshape to the same static type and a cast to the same
// dtype are dropped.
// RUN: %galv-opt --passes=fold-constants,dce %s | %FileCheck %s
// CHECK: %0 = "galv.tile"(%arg0) {repeats = array<i64: 3, 1>} : (tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %1 = "galv.trilu"(%arg1) {k = -1 : i64, upper = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %2 = "galv.concat"(%0, %1)
// CHECK-NEXT: "galv.return"(%2)
// CHECK-NOT: "galv.reshape"
// CHECK-NOT: "galv.cast"
"galv.func"() ({
^bb0(%arg0: tensor<1x4xf32>, %arg1: tensor<4x4xf32>):
  %0 = "galv.constant"() {value = dense<[3, 1]> : tensor<2xi64>} : () -> tensor<2xi64> loc("/Constant"("Constant"))
  %1 = "galv.tile"(%arg0, %0) : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<3x4xf32> loc("/Tile"("Tile"))
  %2 = "galv.constant"() {value = dense<-1> : tensor<i64>} : () -> tensor<i64> loc("/Constant_1"("Constant"))
  %3 = "galv.trilu"(%arg1, %2) {upper = 0 : i64} : (tensor<4x4xf32>, tensor<i64>) -> tensor<4x4xf32> loc("/Trilu"("Trilu"))
  %4 = "galv.reshape"(%3) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("/Reshape"("Reshape"))
  %5 = "galv.cast"(%4) {to = f32} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("/Cast"("Cast"))
  %6 = "galv.concat"(%1, %5) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<7x4xf32> loc("/Concat"("Concat"))
  "galv.return"(%6) : (tensor<7x4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "m"}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
