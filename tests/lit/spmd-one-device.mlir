// On a 1-device mesh partitioning is the identity: the same ops and types
// as the input, only sharding attributes added (and no collective).
// RUN: %galv-opt --strategy=dp,tp --passes=propagate-sharding,spmd-partition %s | sed -e 's/, sharding = #galv.sharding<[^>]*>//g' -e 's/ {sharding = #galv.sharding<[^>]*>}//g' -e 's/, galv.sharding = #galv.sharding<[^>]*>//g' > %t
// RUN: %galv-opt %s | diff - %t
"galv.mesh"() {axes = #galv.axes<["dp"=1, "tp"=1]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>):
  %0 = "galv.dot"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("/fc1"("MatMul"))
  %1 = "galv.gelu"(%0) {approximate = "none"} : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("/act"("Gelu"))
  %2 = "galv.dot"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc("/fc2"("MatMul"))
  %3 = "galv.add"(%2, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/res"("Add"))
  "galv.return"(%3) : (tensor<4x8xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "y"}], sym_name = "main"} : () -> ()
