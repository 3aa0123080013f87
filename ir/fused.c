/* fused.c — shape rule and reference evaluation of galv.fused.
 * STUB: being written (see docs/device-program.md). */
#include "ir.h"

int gv_infer_fused(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "fused: shape inference not implemented");
}

int gv_eval_fused(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "fused: evaluation not implemented");
}
