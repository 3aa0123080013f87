/* fuzz_plan.c — libFuzzer target for the plan.json readers (gv_plan_read,
 * gv_plan_read_microbatches, gv_plan_read_recompute, gv_plan_read_numerics; passes/
 * plan_sharding.c): the input is the file, read through the readers'
 * own path (open, regular-file and size checks, JSON, every field's range)
 * for a model of 3 planning units. A rejected input must be one error line
 * naming the file, never a crash or a leak. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>

#include "passes/plan_sharding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gv_plan p;
  const char *path = fuzz_file(data, size), *rc;
  int64_t B;
  bool each;
  (void)gv_plan_read(path, &p, 3);
  (void)gv_plan_read_microbatches(path, &B, &each);
  (void)gv_plan_read_recompute(path, &rc);
  gv_plan_numerics num;
  (void)gv_plan_read_numerics(path, &num);
  fuzz_fds_check();
  return 0;
}
