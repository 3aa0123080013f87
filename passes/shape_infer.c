/* shape_infer.c — STUB: being written. */
#include "passes.h"

int gv_pass_shape_infer(gv_module *m) {
  (void)m;
  return 0;
}
