/* fold_constants.c — STUB: being written. */
#include "passes.h"

int gv_pass_fold_constants(gv_module *m) {
  (void)m;
  return 0;
}
