/* fuzz_frontend.c — libFuzzer target for the ONNX frontend.
 *
 * Each input is taken as the bytes of a .onnx file and imported through
 * gv_import_onnx_buffer with no model folder (so external data is always
 * rejected and nothing outside the input is read). Any input must either
 * import or fail with one error line; crashes, leaks, sanitizer reports and
 * aborts are bugs. Built and run by tests/fuzz/run.sh (clang
 * -fsanitize=fuzzer,address,undefined); not part of ctest. */
#include <stddef.h>
#include <stdint.h>

#include "frontend/onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* unrolled Loops capped low: a 4096-iteration Loop of a large body is a real model's, not a hang */
  gv_import_options opt = {.batch = 2, .seq = 8, .load_weights = true, .max_unrolled_ops = 1 << 15};
  gv_module *m = gv_import_onnx_buffer(data, size, "fuzz.onnx", NULL, &opt);
  gv_module_free(m);
  /* shapes-only path too: it takes different branches for weights */
  opt.load_weights = false;
  m = gv_import_onnx_buffer(data, size, "fuzz.onnx", NULL, &opt);
  gv_module_free(m);
  return 0;
}
