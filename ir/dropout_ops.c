/* dropout_ops.c — shape rule, reference evaluator and the mask parameters of
 * galv.dropout (ir/ops.def; docs/training.md "Dropout"). The mask itself is
 * runtime/galv_rng.h, shared with both runtimes, so the evaluator, the CPU
 * program and the CUDA program drop the same elements. */
#include "dropout.h"

#include "../runtime/galv_rng.h"
#include "shape_rules.h"

int64_t gv_eval_step;

int gv_infer_dropout(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = &op->opnds[0]->type;
  if (x->dtype != GV_DT_UNKNOWN && !gv_dtype_is_float(x->dtype))
    return gv_error_op(m, op, "shape: dropout of %s (a float type is needed)", gv_dtype_name(x->dtype));
  op->res[0]->type = *x;
  return 0;
}

int gv_dropout_params(gv_module *m, const gv_op *op, gv_dropout *p) {
  const gv_type *x = &op->opnds[0]->type;
  p->ratio = gv_get_float(op, "ratio", -1);
  if (!(p->ratio >= 0 && p->ratio < 1)) return gv_error_op(m, op, "galv.dropout: ratio must be in [0, 1)");
  p->seed = (uint64_t)gv_get_int(op, "seed", 0);
  p->id = (uint64_t)gv_get_int(op, "id", 0);
  p->thr = galv_rng_threshold(p->ratio);
  p->scale = (float)(1.0 / (1.0 - (double)p->ratio));
  const int64_t *acc;
  if (gv_get_ints(op, "acc", &acc) == 3) p->acc[0] = acc[0], p->acc[1] = acc[1], p->acc[2] = acc[2];
  else p->acc[0] = 1, p->acc[1] = 0, p->acc[2] = 1;
  p->rows = gv_get_int(op, "rows", x->rank > 0 ? x->dims[0] : 1);
  return 0;
}

int gv_eval_dropout(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_dropout p;
  if (gv_dropout_params(m, op, &p)) return -1;
  const gv_type *t = &op->res[0]->type;
  if (!gv_type_is_static(t)) return gv_error_op(m, op, "cannot evaluate: result type is not static");
  gv_tensor *o = gv_tensor_new(m->arena, *t);
  int64_t off[GV_MAX_RANK] = {0}, g[GV_MAX_RANK], idx[GV_MAX_RANK] = {0};
  for (int d = 0; op->nopnds > 1 && d < t->rank; d++) off[d] = gv_tensor_get_i(in[1], d);
  uint64_t key = galv_rng_key(p.seed, p.id, (uint64_t)gv_eval_step);
  int64_t n = gv_type_numel(t);
  for (int64_t e = 0; e < n; e++) {
    for (int d = 0; d < t->rank; d++) g[d] = idx[d] + off[d];
    if (t->rank) g[0] = galv_rng_row(g[0], p.acc[0], p.acc[1], p.acc[2], 0, p.rows);
    double v = gv_tensor_get_f(in[0], e);
    /* fp32 arithmetic as the kernels do: x * (float)(1 / (1 - ratio)) */
    double y = t->dtype == GV_DT_F32 ? (double)((float)v * p.scale) : v / (1.0 - (double)p.ratio);
    gv_tensor_set_f(o, e, galv_rng_keep(key, g, t->rank, p.thr) ? y : 0.0);
    for (int d = t->rank - 1; d >= 0; d--) {
      if (++idx[d] < t->dims[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = o;
  return 0;
}
