// Shardings that agree everywhere: nothing is inserted, not even at the
// return (x and its result are pinned split; a function result that is
// split stays so only through galv.updates, here it is replicated in and out).
// RUN: %galv-opt --passes=propagate-sharding,spmd-partition %s | %FileCheck %s
// CHECK-NOT: galv.reshard
// CHECK-NOT: galv.all_
// CHECK: "galv.relu"{{.*}} -> tensor<4x6xf32>
"galv.mesh"() {axes = #galv.axes<["tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x6xf32>):
  %0 = "galv.relu"(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32> loc("/r"("Relu"))
  %1 = "galv.neg"(%0) : (tensor<4x6xf32>) -> tensor<4x6xf32> loc("/n"("Neg"))
  "galv.return"(%1) : (tensor<4x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}], res_attrs = [{}], sym_name = "main"} : () -> ()
