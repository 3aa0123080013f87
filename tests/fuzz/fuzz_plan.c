/* fuzz_plan.c — libFuzzer target for the plan.json reader (gv_plan_read,
 * passes/plan_sharding.c): the input is the file, read through the reader's
 * own path (open, regular-file and size checks, JSON, every field's range)
 * for a model of 3 planning units. A rejected input must be one error line
 * naming the file, never a crash or a leak. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>

#include "passes/plan_sharding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gv_plan p;
  (void)gv_plan_read(fuzz_file(data, size), &p, 3);
  fuzz_fds_check();
  return 0;
}
