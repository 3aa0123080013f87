/* eval.c — reference evaluator of the core ops (plain C, named in
 * ir/ops.def). STUB: being written. */
#include "ir.h"

int gv_eval_binary(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_cast(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_concat(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_constant(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_constant_of_shape(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_conv(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_copy(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_cumsum(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_dot(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_expand(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_gather(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_none(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_norm(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_range(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_reduce(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_shape(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_slice(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_softmax(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_split(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_tile(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_transpose(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_trilu(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_unary(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

int gv_eval_where(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  (void)out;
  return gv_error_op(m, op, "evaluation not implemented");
}

