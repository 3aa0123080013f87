// storage: a collective moves its operand's elements unconverted, so its
// result is stored like its operand: a training stage's forward entry whose
// sent value "pp.1.0" (16-bit: a crossing value) is a batch reduce_sum
// completed by the dp all-reduce. The crossing value's 16-bit storage
// reaches the reduce_sum (else a statistic, fp32) through the all-reduce:
// both bf16, the all-reduce moving 2 bytes per element (bytes 16). Once the
// all-reduce's result alone was bf16 (an fp32 all-reduce into a 16-byte slot).
// RUN: %galv-opt --passes=propagate-sharding,storage,spmd-partition,storage --precision=bf16 %s | %FileCheck %s
// CHECK: %1 = "galv.reduce_sum"(%0) {{.*}}storage = ["bf16"]} : (tensor<2x8xf32>) -> tensor<1x8xf32> loc("/pool/ReduceSum")
// CHECK: %2 = "galv.all_reduce"(%1) {axes = ["dp"], bytes = 16 : i64, {{.*}}storage = ["bf16"]} : (tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK: "galv.return"(%2, %3) {arg_storage = ["f32", "f32"]}
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/fc/MatMul")
  %1 = "galv.reduce_sum"(%0) {axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<1x8xf32> loc("/pool/ReduceSum")
  "galv.return"(%1, %0) : (tensor<1x8xf32>, tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>}, {galv.name = "fc.weight", galv.param}], res_attrs = [{galv.name = "pp.1.0"}, {galv.name = "stash.0"}], sym_name = "main"} : () -> ()
