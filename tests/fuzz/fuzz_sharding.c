/* fuzz_sharding.c — libFuzzer target for the sharding file reader
 * (passes/propagate_sharding.c, --sharding FILE): the input is the file,
 * pinned onto a small Megatron MLP on a dp=2 x tp=2 mesh by the
 * propagate-sharding pass, read through the reader's own open, size and
 * line checks. A rejected input must be one error line naming the file and
 * line, never a crash or a leak. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"

static const char model[] =
    "\"galv.mesh\"() {axes = #galv.axes<[\"dp\"=2, \"tp\"=2]>, sym_name = \"m\"} : () -> ()\n"
    "\"galv.func\"() ({\n"
    "^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>):\n"
    "  %0 = \"galv.dot\"(%arg0, %arg1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, "
    "rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc(\"/fc1\"(\"MatMul\"))\n"
    "  %1 = \"galv.gelu\"(%0) {approximate = \"none\"} : (tensor<4x16xf32>) -> tensor<4x16xf32> loc(\"/act\"(\"Gelu\"))\n"
    "  %2 = \"galv.dot\"(%1, %arg2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, "
    "rhs_contract = array<i64: 0>} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32> loc(\"/fc2\"(\"MatMul\"))\n"
    "  %3 = \"galv.add\"(%2, %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc(\"/res\"(\"Add\"))\n"
    "  \"galv.return\"(%3) : (tensor<4x8xf32>) -> () loc(\"return\")\n"
    "}) {arg_attrs = [{galv.name = \"x\"}, {galv.name = \"w1\", galv.param}, {galv.name = \"w2\", galv.param}], "
    "res_attrs = [{galv.name = \"y\"}], sym_name = \"main\"} : () -> ()\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gv_module *m = gv_parse_module(model, sizeof model - 1, "fuzz-model.mlir");
  if (!m) abort();
  gv_shard_opts.file = fuzz_file(data, size);
  gv_shard_opts.quiet = true;
  (void)gv_pass_propagate_sharding(m);
  gv_module_free(m);
  fuzz_fds_check();
  return 0;
}
