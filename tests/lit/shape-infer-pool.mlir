// galv.pool's shape rule: floor and ceil_mode output sizes (a last window
// starting in the end padding is dropped), 1-D with dilation, and pool_grad
// typed as its x; a window that does not fit and a bad mode are one error
// line naming the node.
// RUN: %galv-opt %s --passes=shape-infer | %FileCheck %s
// CHECK: "galv.pool"(%arg0) {{.*}} : (tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32>
// CHECK: "galv.pool"(%arg0) {{.*}}ceil_mode = 1{{.*}} : (tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32>
// CHECK: "galv.pool"(%arg1) {{.*}} : (tensor<2x3x11xf32>) -> tensor<2x3x10xf32>
// CHECK: "galv.pool_grad"(%arg0, %0) {{.*}} -> tensor<2x3x9x9xf32>
// RUN: sed -e 's/kernel = array<i64: 3, 3>, mode = "max"/kernel = array<i64: 12, 3>, mode = "max"/' %s > %t.bad.mlir && not %galv-opt %t.bad.mlir --passes=shape-infer 2>&1 | %FileCheck %s --check-prefix=FIT
// FIT: error: {{.*}}node '/pool/MaxPool' (MaxPool): shape: pool window does not fit spatial dim 0 of size 9
// RUN: sed -e 's/mode = "avg"/mode = "sum"/' %s > %t.bad.mlir && not %galv-opt %t.bad.mlir --passes=shape-infer 2>&1 | %FileCheck %s --check-prefix=MODE
// MODE: error: {{.*}}node '/pool/AveragePool' (AveragePool): shape: pool mode must be "max" or "avg"
"galv.func"() ({
^bb0(%arg0: tensor<2x3x9x9xf32>, %arg1: tensor<2x3x11xf32>):
  %0 = "galv.pool"(%arg0) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, mode = "max", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x9x9xf32>) -> tensor<*x!galv.any> loc("/pool/MaxPool"("MaxPool"))
  %1 = "galv.pool"(%arg0) {ceil_mode = 1 : i64, count_include_pad = 1 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, mode = "avg", pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x9x9xf32>) -> tensor<*x!galv.any> loc("/pool/AveragePool"("AveragePool"))
  %2 = "galv.pool"(%arg1) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 2>, kernel = array<i64: 2>, mode = "max", pads = array<i64: 1, 0>, strides = array<i64: 1>} : (tensor<2x3x11xf32>) -> tensor<*x!galv.any> loc("/pool1d/MaxPool"("MaxPool"))
  %3 = "galv.pool_grad"(%arg0, %0) {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, mode = "max", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x9x9xf32>, tensor<*x!galv.any>) -> tensor<*x!galv.any> loc("/pool/MaxPool/grad"("MaxPool"))
  "galv.return"(%1, %2, %3) : (tensor<*x!galv.any>, tensor<*x!galv.any>, tensor<*x!galv.any>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "x1"}], res_attrs = [{galv.name = "a"}, {galv.name = "b"}, {galv.name = "c"}], sym_name = "main"} : () -> ()
