// Cheap MLIR variations parse: a module wrapper, comments, block label
// names, attributes in any order, an empty or missing attribute dict,
// parenthesised single result type, loc(unknown) or no loc at all.
// RUN: %galv-opt %s | %FileCheck %s
// RUN: %galv-opt %s -o %t && %mlir-check %t

module {
  "galv.func"() ({
  ^entry(%x : tensor<2xf32>):   // the input
    %r = "galv.softmax"(%x) {z, axis = -1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
    %s = "galv.neg"(%r) {} : (tensor<2xf32>) -> (tensor<2xf32>) loc(unknown)
    "galv.return"(%s) : (tensor<2xf32>) -> ()
  }) {sym_name = "g", arg_attrs = [{galv.param, galv.name = "x"}]} : () -> () loc("f")
}

// CHECK:      "galv.func"() ({
// CHECK-NEXT: ^bb0(%arg0: tensor<2xf32>):
// CHECK-NEXT:   %0 = "galv.softmax"(%arg0) {axis = -1 : i64, z} : (tensor<2xf32>) -> tensor<2xf32> loc("")
// CHECK-NEXT:   %1 = "galv.neg"(%0) : (tensor<2xf32>) -> tensor<2xf32> loc("")
// CHECK-NEXT:   "galv.return"(%1) : (tensor<2xf32>) -> () loc("")
// CHECK-NEXT: }) {arg_attrs = [{galv.name = "x", galv.param}], res_attrs = [], sym_name = "g"} : () -> ()
