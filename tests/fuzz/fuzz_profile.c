/* fuzz_profile.c — libFuzzer target for the --profile readers
 * (planner/profile.c gv_profile_parse: Galvatron's profiled inputs and the
 * galvc-profile format, over planner/json.c). The input is the text as
 * galv_read_whole hands it over: its bytes and a NUL after them. A rejected
 * input must be one error line, never a crash or a leak; an accepted one is
 * queried at a few points. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  static gv_profile p;
  if (gv_profile_parse(text, size, "fuzz.json", &p) == 0) {
    double f, b, r, a;
    for (int64_t tp = 1; tp <= 8; tp *= 2)
      for (int64_t mb = 1; mb <= 16; mb *= 4) {
        (void)gv_profile_time(&p.layer, mb, tp, &f, &b, &r);
        (void)gv_profile_time(&p.outer, mb, tp, &f, &b, &r);
        (void)gv_profile_act(&p.layer, mb, tp, false, &a);
        (void)gv_profile_act(&p.layer, mb, tp, true, &a);
      }
    (void)gv_profile_check(&p, 2, 64, 32, 128);
  }
  free(text);
  return 0;
}
