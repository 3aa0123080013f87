/* canonicalize.c — STUB: being written. */
#include "passes.h"

int gv_pass_canonicalize(gv_module *m) {
  (void)m;
  return 0;
}
