// The verifier's attribute ranges: an axis outside its operand's rank, a
// repeated or out-of-range reduction axis, a transpose perm that is not a
// permutation. Each is one error line naming the op, before any pass runs
// (galv-opt runs passes on parsed IR without shape-infer).
// RUN: /usr/lib/llvm-19/bin/split-file %s %t
// RUN: not %galv-opt --passes=spmd-partition,fuse,memory-plan %t/gather.mlir 2>&1 | %FileCheck %s --check-prefix=GATHER
// RUN: not %galv-opt %t/softmax.mlir 2>&1 | %FileCheck %s --check-prefix=SOFTMAX
// RUN: not %galv-opt %t/reduce.mlir 2>&1 | %FileCheck %s --check-prefix=REDUCE
// RUN: not %galv-opt %t/perm.mlir 2>&1 | %FileCheck %s --check-prefix=PERM
// RUN: %galv-opt %t/ok.mlir | %FileCheck %s --check-prefix=OK

// GATHER: galv-opt: error: {{.*}}node 'g'{{.*}}galv.gather: axis 99999999999 is out of range for an operand of rank 2
// GATHER-NOT: error
// SOFTMAX: galv-opt: error: {{.*}}node 'sm'{{.*}}galv.softmax: axis -3 is out of range for an operand of rank 2
// REDUCE: galv-opt: error: {{.*}}node 'r'{{.*}}galv.reduce_sum: axes names dim 1 twice
// PERM: galv-opt: error: {{.*}}node 't'{{.*}}galv.transpose: perm entry 2 is out of range for rank 2
// OK: "galv.gather"(%arg0, %arg1) {axis = -2 : i64}

//--- gather.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %i: tensor<3xi64>):
  %0 = "galv.gather"(%x, %i) {axis = 99999999999 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32> loc("g")
  "galv.return"(%0) : (tensor<3x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "i"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- softmax.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.softmax"(%x) {axis = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("sm")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- reduce.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.reduce_sum"(%x) {axes = array<i64: 1, -1>, keepdims = 0 : i64} : (tensor<4x8xf32>) -> tensor<4xf32> loc("r")
  "galv.return"(%0) : (tensor<4xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- perm.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>):
  %0 = "galv.transpose"(%x) {perm = array<i64: 0, 2>} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("t")
  "galv.return"(%0) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
//--- ok.mlir
"galv.func"() ({
^bb0(%x: tensor<4x8xf32>, %i: tensor<3xi64>):
  %0 = "galv.gather"(%x, %i) {axis = -2 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32> loc("g")
  "galv.return"(%0) : (tensor<3x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "i"}], res_attrs = [{}], sym_name = "main"} : () -> ()
