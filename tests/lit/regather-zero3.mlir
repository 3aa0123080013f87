// regather (passes/regather.c) and the 16-bit gather copy (passes/storage.c):
// under ZeRO-3 a parameter the backward reads is gathered again before the
// backward op that reads it, instead of the forward's whole copy staying
// alive across the later layers and the loss. Layers are found by
// structure (passes/layer_units.h): /l.0/fc and /l.1/fc are two chained
// isomorphic blocks (a dot of a computed value and a parameter), the
// input's add and the head's dot are outer (unit 0). l.1's weight (its
// backward computes the input gradient dY w1^T) is gathered in the forward
// and again at /l.1/fc/grad; l.0's weight is not read by the backward (x
// needs no gradient): one gather; the head's weight is read by its
// backward with only the loss (unit 0 too) between: one gather. The clone
// takes the location of the use it serves (its layer, its phase). Without
// ZeRO (dp) there are no parameter gathers and the pass changes nothing.
// RUN: %galv-opt --strategy=zero3 --passes=loss,autodiff,optimizer,propagate-sharding,regather %s | %FileCheck %s --check-prefix=G
// RUN: %galv-opt --strategy=zero3 --passes=loss,autodiff,optimizer,propagate-sharding,regather,spmd-partition %s | %FileCheck %s --check-prefix=L
// RUN: %galv-opt --strategy=dp --passes=loss,autodiff,optimizer,propagate-sharding,regather %s | %FileCheck %s --check-prefix=D
// RUN: %galv-opt --strategy=zero3 --passes=loss,autodiff,optimizer,propagate-sharding,regather,spmd-partition %s -o %t && %mlir-check %t
// G: %[[W0:[0-9]+]] = "galv.reshard"(%arg2) {{.*}} loc("/l.0/fc")
// G: "galv.dot"(%{{[0-9]+}}, %[[W0]])
// G: %[[W1:[0-9]+]] = "galv.reshard"(%arg3) {{.*}} loc("/l.1/fc")
// G: "galv.dot"(%{{[0-9]+}}, %[[W1]])
// G: %[[W2:[0-9]+]] = "galv.reshard"(%arg4) {{.*}} loc("/head")
// G: "galv.cross_entropy"
// G-NOT: "galv.reshard"(%arg4)
// G: "galv.dot"({{.*}}, %[[W2]]) {{.*}} loc("/head/grad"
// G-NOT: "galv.reshard"(%arg2)
// G: %[[W1B:[0-9]+]] = "galv.reshard"(%arg3) {{.*}} loc("/l.1/fc/grad")
// G-NEXT: "galv.dot"({{.*}}, %[[W1B]])
// G-NOT: "galv.reshard"(%arg2)
// G-NOT: "galv.reshard"(%arg3)
// G-NOT: "galv.reshard"(%arg4)
// L: "galv.all_gather"(%arg2) {{.*}} -> tensor<8x8xf32> loc("/l.0/fc")
// L: "galv.all_gather"(%arg3) {{.*}} -> tensor<8x8xf32> loc("/l.1/fc")
// L: "galv.all_gather"(%arg4) {{.*}} -> tensor<8x6xf32> loc("/head")
// L: "galv.all_gather"(%arg3) {{.*}} -> tensor<8x8xf32> loc("/l.1/fc/grad")
// L-NOT: "galv.all_gather"(%arg2)
// L-NOT: "galv.all_gather"(%arg4)
// D-NOT: "galv.reshard"(%arg2)
// D-NOT: "galv.reshard"(%arg3)
// bf16 training (the storage pass on the global program): each gathered
// parameter is gathered as one 16-bit copy of its shard (a galv.cast marked
// gather_copy, stored bf16), which every gather of it reads: 2 bytes per
// element on the wire ((p-1)/p x 8x8 x 2 = 64 bytes for w1).
// RUN: %galv-opt --strategy=zero3 --precision=bf16 --passes=loss,autodiff,optimizer,propagate-sharding,regather,storage,spmd-partition %s | %FileCheck %s --check-prefix=B
// B: %[[C1:[0-9]+]] = "galv.cast"(%arg3) {gather_copy = 1 : i64, {{.*}}storage = ["bf16"]
// B-NEXT: "galv.all_gather"(%[[C1]]) {axes = ["dp"], bytes = 64 : i64{{.*}} loc("/l.1/fc")
// B: "galv.all_gather"(%[[C1]]) {axes = ["dp"], bytes = 64 : i64{{.*}} loc("/l.1/fc/grad")
"galv.mesh"() {axes = #galv.axes<["dp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%arg0: tensor<4x2x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x6xf32>):
  %e = "galv.add"(%arg0, %arg0) : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32> loc("/embed"("Add"))
  %0 = "galv.dot"(%e, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("/l.0/fc"("MatMul"))
  %1 = "galv.dot"(%0, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("/l.1/fc"("MatMul"))
  %2 = "galv.dot"(%1, %arg3) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x2x8xf32>, tensor<8x6xf32>) -> tensor<4x2x6xf32> loc("/head"("MatMul"))
  "galv.return"(%2) : (tensor<4x2x6xf32>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x"}, {galv.name = "w0", galv.param}, {galv.name = "w1", galv.param}, {galv.name = "w2", galv.param}], res_attrs = [{galv.name = "logits"}], sym_name = "main"} : () -> ()
