/* p2p.c — shape rules of galv.send / galv.recv (ir/ops.def, docs/pipeline.md). */
#include <string.h>

#include "ir.h"

int gv_infer_send(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  if (gv_get_int(op, "peer", -1) < 0) return gv_error_op(m, op, "galv.send: needs peer = STAGE : i64");
  return 0;
}

int gv_infer_recv(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  if (gv_get_int(op, "peer", -1) < 0) return gv_error_op(m, op, "galv.recv: needs peer = STAGE : i64");
  const int64_t *dims;
  int n = gv_get_ints(op, "shape", &dims);
  const gv_attr *dt = gv_get_attr(op, "dtype");
  if (n < 0 || n > GV_MAX_RANK || !dt || dt->kind != GV_ATTR_TYPE)
    return gv_error_op(m, op, "galv.recv: needs shape = array<i64: ...> and dtype = TYPE");
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) return gv_error_op(m, op, "galv.recv: negative dim in shape");
  op->res[0]->type = gv_type_make(dt->u.ty, n, dims);
  return 0;
}
