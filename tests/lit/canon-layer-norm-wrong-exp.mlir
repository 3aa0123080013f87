
// canonicalize must do nothing: a LayerNorm-like pattern whose variance
// uses pow(d, 3) is not a LayerNorm (nor an RMSNorm).
// RUN: %galv-opt --passes=canonicalize %s | %FileCheck %s
// CHECK-NOT: "galv.layer_norm"
// CHECK-NOT: "galv.rms_norm"
// CHECK: "galv.reduce_mean"(%arg0)
// CHECK: "galv.pow"(%1, %2)
// CHECK: "galv.div"(%1, %7)
// CHECK: %10 = "galv.add"(%9, %arg2)
"galv.func"() ({
^bb0(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>):
  %0 = "galv.reduce_mean"(%arg0) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/ln/ReduceMean"("ReduceMean"))
  %1 = "galv.sub"(%arg0, %0) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/ln/Sub"("Sub"))
  %2 = "galv.constant"() {value = dense<3.000000000e+00> : tensor<f32>} : () -> tensor<f32> loc("/ln/Constant"("Constant"))
  %3 = "galv.pow"(%1, %2) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32> loc("/ln/Pow"("Pow"))
  %4 = "galv.reduce_mean"(%3) {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x8xf32>) -> tensor<2x1xf32> loc("/ln/ReduceMean_1"("ReduceMean_1"))
  %5 = "galv.constant"() {value = dense<9.999999960e-13> : tensor<f32>} : () -> tensor<f32> loc("/ln/Constant_1"("Constant"))
  %6 = "galv.add"(%4, %5) : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32> loc("/ln/Add"("Add"))
  %7 = "galv.sqrt"(%6) : (tensor<2x1xf32>) -> tensor<2x1xf32> loc("/ln/Sqrt"("Sqrt"))
  %8 = "galv.div"(%1, %7) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32> loc("/ln/Div"("Div"))
  %9 = "galv.mul"(%8, %arg1) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("/ln/Mul"("Mul"))
  %10 = "galv.add"(%9, %arg2) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("/ln/Add_1"("Add_1"))
  "galv.return"(%10) : (tensor<2x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w", galv.param}, {galv.name = "b", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
