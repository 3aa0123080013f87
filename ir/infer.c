/* infer.c — shape and dtype rules of the core ops (one function per op family,
 * named in ir/ops.def). STUB: being written. */
#include "ir.h"

int gv_infer_binary(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_cast(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_compare(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_concat(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_constant(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_constant_of_shape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_conv(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_cumsum(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_dot(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_expand(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_flatten(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_gather(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_if(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_none(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_norm(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_range(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_reduce(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_reshape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_same(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_shape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_slice(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_split(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_squeeze(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_tile(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_transpose(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_trilu(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_unary(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_unsqueeze(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

int gv_infer_where(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  return gv_error_op(m, op, "shape inference not implemented");
}

