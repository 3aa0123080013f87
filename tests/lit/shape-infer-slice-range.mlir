// Value-dependent rules: a slice whose starts/ends/steps come from constants
// (negative step, clamped end) and a range whose bounds come from a shape: ceil((12 - 1) / 2) = 6.
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.slice"(%arg0, %0, %1, %2, %3) : (tensor<10x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x4xf32>
// CHECK: "galv.range"(%7, %9, %8) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<6xi64>
"galv.func"() ({
^bb0(%arg0: tensor<10x4xf32>):
  %0 = "galv.constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64> loc("s")
  %1 = "galv.constant"() {value = dense<-9223372036854775807> : tensor<1xi64>} : () -> tensor<1xi64> loc("e")
  %2 = "galv.constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64> loc("a")
  %3 = "galv.constant"() {value = dense<-3> : tensor<1xi64>} : () -> tensor<1xi64> loc("t")
  %4 = "galv.slice"(%arg0, %0, %1, %2, %3) : (tensor<10x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*x!galv.any> loc("/Slice"("Slice"))
  %5 = "galv.shape"(%arg0) {end = 1 : i64} : (tensor<10x4xf32>) -> tensor<*x!galv.any> loc("/Shape"("Shape"))
  %6 = "galv.squeeze"(%5) {axes = array<i64: 0>} : (tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/Squeeze"("Squeeze"))
  %7 = "galv.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64> loc("one")
  %8 = "galv.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64> loc("two")
  %9 = "galv.add"(%6, %8) : (tensor<*x!galv.any>, tensor<i64>) -> tensor<*x!galv.any> loc("/Add"("Add"))
  %10 = "galv.range"(%7, %9, %8) : (tensor<i64>, tensor<*x!galv.any>, tensor<i64>) -> tensor<*x!galv.any> loc("/Range"("Range"))
  "galv.return"(%4, %10) : (tensor<*x!galv.any>, tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{galv.name = "y"}, {galv.name = "r"}], sym_name = "main"} : () -> ()
