// A hand-written local program for a 2x2 mesh (dp x tp), one rank's view:
// x [8,6] split over dp on dim 0, w [6,4] split over tp on dim 1, w2 [4,6]
// split over tp on dim 0. Every collective of docs/sharding.md, along leading
// and non-leading dims; all outputs replicated (tests/comm_emit.sh).
"galv.mesh"() {axes = #galv.axes<["dp"=2, "tp"=2]>, sym_name = "m"} : () -> ()
"galv.func"() ({
^bb0(%x: tensor<4x6xf32>, %w: tensor<6x2xf32>, %w2: tensor<2x6xf32>):
  %y = "galv.dot"(%x, %w) {lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>} : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32> loc("y")
  %g1 = "galv.all_gather"(%y) {axes = ["tp"], bytes = 32 : i64, dim = 1 : i64, mesh = "m"} : (tensor<4x2xf32>) -> tensor<4x4xf32> loc("g1")
  %g0 = "galv.all_gather"(%g1) {axes = ["dp"], bytes = 64 : i64, dim = 0 : i64, mesh = "m"} : (tensor<4x4xf32>) -> tensor<8x4xf32> loc("g0")
  %z = "galv.dot"(%y, %w2) {lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>} : (tensor<4x2xf32>, tensor<2x6xf32>) -> tensor<4x6xf32> loc("z")
  %ar = "galv.all_reduce"(%z) {axes = ["tp"], bytes = 96 : i64, mesh = "m", reduce = "sum"} : (tensor<4x6xf32>) -> tensor<4x6xf32> loc("ar")
  %o1 = "galv.all_gather"(%ar) {axes = ["dp"], bytes = 96 : i64, dim = 0 : i64, mesh = "m"} : (tensor<4x6xf32>) -> tensor<8x6xf32> loc("o1")
  %rs = "galv.reduce_scatter"(%z) {axes = ["tp"], bytes = 48 : i64, dim = 1 : i64, mesh = "m", reduce = "sum"} : (tensor<4x6xf32>) -> tensor<4x3xf32> loc("rs")
  %rg = "galv.all_gather"(%rs) {axes = ["tp"], bytes = 48 : i64, dim = 1 : i64, mesh = "m"} : (tensor<4x3xf32>) -> tensor<4x6xf32> loc("rg")
  %o2 = "galv.all_gather"(%rg) {axes = ["dp"], bytes = 96 : i64, dim = 0 : i64, mesh = "m"} : (tensor<4x6xf32>) -> tensor<8x6xf32> loc("o2")
  %rs0 = "galv.reduce_scatter"(%z) {axes = ["tp"], bytes = 48 : i64, dim = 0 : i64, mesh = "m", reduce = "sum"} : (tensor<4x6xf32>) -> tensor<2x6xf32> loc("rs0")
  %rg0 = "galv.all_gather"(%rs0) {axes = ["dp", "tp"], bytes = 144 : i64, dim = 0 : i64, mesh = "m"} : (tensor<2x6xf32>) -> tensor<8x6xf32> loc("rg0")
  %t = "galv.shard_slice"(%g1) {axes = ["tp"], bytes = 0 : i64, dim = 0 : i64, mesh = "m"} : (tensor<4x4xf32>) -> tensor<2x4xf32> loc("t")
  %a = "galv.all_to_all"(%t) {axes = ["tp"], bytes = 16 : i64, concat_dim = 0 : i64, mesh = "m", split_dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc("a")
  %ag = "galv.all_gather"(%a) {axes = ["tp"], bytes = 32 : i64, dim = 1 : i64, mesh = "m"} : (tensor<4x2xf32>) -> tensor<4x4xf32> loc("ag")
  %o3 = "galv.all_gather"(%ag) {axes = ["dp"], bytes = 64 : i64, dim = 0 : i64, mesh = "m"} : (tensor<4x4xf32>) -> tensor<8x4xf32> loc("o3")
  %i = "galv.axis_index"() {axes = ["dp", "tp"], mesh = "m"} : () -> tensor<i64> loc("i")
  %imax = "galv.all_reduce"(%i) {axes = ["dp", "tp"], bytes = 12 : i64, mesh = "m", reduce = "max"} : (tensor<i64>) -> tensor<i64> loc("imax")
  %isum = "galv.all_reduce"(%i) {axes = ["dp", "tp"], bytes = 12 : i64, mesh = "m", reduce = "sum"} : (tensor<i64>) -> tensor<i64> loc("isum")
  "galv.return"(%g0, %o1, %o2, %rg0, %o3, %imax, %isum) : (tensor<8x4xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x4xf32>, tensor<i64>, tensor<i64>) -> () loc("return")
}) {arg_attrs = [{galv.name = "x", galv.sharding = #galv.sharding<@m, [{"dp"}, {}]>}, {galv.name = "w", galv.param, galv.sharding = #galv.sharding<@m, [{}, {"tp"}]>}, {galv.name = "w2", galv.param, galv.sharding = #galv.sharding<@m, [{"tp"}, {}]>}], res_attrs = [{galv.name = "xw"}, {galv.name = "xww"}, {galv.name = "xww_rs"}, {galv.name = "xww_rs0"}, {galv.name = "xw_a2a"}, {galv.name = "imax"}, {galv.name = "isum"}], sym_name = "main"} : () -> ()
