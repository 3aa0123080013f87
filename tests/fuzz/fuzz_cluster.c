/* fuzz_cluster.c — libFuzzer target for the cluster JSON reader
 * (planner/cluster.c gv_cluster_parse, over planner/json.c). The input is
 * the text as galv_read_whole hands it over: its bytes and a NUL after them.
 * A rejected input must be one error line, never a crash or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  gv_cluster c;
  if (gv_cluster_parse(text, size, "fuzz.json", &c) == 0) (void)gv_cluster_devices(&c), (void)gv_cluster_flops(&c, GV_DT_F32);
  free(text);
  return 0;
}
