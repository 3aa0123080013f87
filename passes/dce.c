/* dce.c — STUB: being written. */
#include "passes.h"

int gv_pass_dce(gv_module *m) {
  (void)m;
  return 0;
}
