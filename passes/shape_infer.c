/* shape_infer.c — the shape-infer pass: gives every value a type.
 *
 * Walks the function body in order (regions of an if before the if itself)
 * and calls each op's infer rule. Rules whose result shape depends on data
 * (reshape, expand, slice, tile, constant_of_shape, range) need the values of
 * shape operands, which ONNX exports compute at run time from Shape ops
 * (Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), ...))). So the pass
 * propagates values on the side: constants, shapes of values whose dims are
 * known, and the results of small ops whose operands are all known (evaluated
 * with the reference evaluator) go into a table indexed by value id. The IR
 * itself is not changed beyond result types: turning known values into
 * constants is fold-constants' job. Values that stay unknown are not an
 * error here. */
#include <stdlib.h>

#include "../ir/attention.h"
#include "passes.h"

/* Results evaluated on the side: any small tensor, and larger integer/bool
 * ones (index and mask arithmetic), but never big float activations. */
#define SMALL_ANY 64
#define SMALL_INT 4096

typedef struct {
  gv_module *m;
  const gv_tensor **tab; /* known value per value id, or NULL */
} ctx;

static int number_block(gv_block *b, int n) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
    for (int r = 0; r < op->nregions; r++) n = number_block(op->regions[r], n);
  }
  return n;
}

static bool small_result(const gv_type *t) {
  if (t->dtype == GV_DT_UNKNOWN || !gv_type_is_static(t)) return false;
  int64_t n = gv_type_numel(t);
  if (n < 0) return false;
  return n <= SMALL_ANY || ((gv_dtype_is_int(t->dtype) || t->dtype == GV_DT_BOOL) && n <= SMALL_INT);
}

/* shape's value is known once the dims it reads are known, even when the
 * operand itself is not. Mirrors gv_eval_shape's indexing. */
static bool shape_value_known(const gv_op *op) {
  const gv_type *x = &op->opnds[0]->type, *r = &op->res[0]->type;
  if (x->rank < 0 || !gv_type_is_static(r)) return false;
  int64_t s = gv_get_int(op, "start", 0);
  if (s < 0) s += x->rank;
  if (s < 0) s = 0;
  for (int64_t i = 0; i < r->dims[0]; i++)
    if (s + i >= x->rank || x->dims[s + i] < 0) return false;
  return true;
}

static int infer_block(ctx *c, gv_block *b, bool propagate);

static int infer_op(ctx *c, gv_op *op, bool propagate) {
  const gv_tensor *vbuf[16], **vals = vbuf;
  if (op->nopnds > 16) {
    vals = malloc((size_t)op->nopnds * sizeof *vals);
    if (!vals) return gv_error_op(c->m, op, "out of memory");
  }
  bool all = true;
  for (int i = 0; i < op->nopnds; i++) {
    vals[i] = c->tab[op->opnds[i]->id];
    if (!vals[i]) all = false;
  }
  int rc = 0;
  if (op->code == GV_OP_IF) {
    /* A known condition: only the branch that runs gets values evaluated,
     * so dead code guarded by the condition cannot raise errors. */
    const gv_tensor *cv = vals[0];
    bool known = cv && gv_tensor_numel(cv) == 1, take_then = known && gv_tensor_get_i(cv, 0) != 0;
    for (int r = 0; r < op->nregions && !rc; r++)
      rc = infer_block(c, op->regions[r], propagate && known && (r == 0) == take_then);
  }
  if (!rc) rc = gv_infer_op(c->m, op, vals);
  if (!rc && propagate) {
    if (op->code == GV_OP_CONSTANT) {
      const gv_attr *a = gv_get_attr(op, "value");
      c->tab[op->res[0]->id] = a->u.t;
    } else if (op->code == GV_OP_SHAPE) {
      gv_tensor *out = NULL;
      if (shape_value_known(op) && (rc = gv_eval_op(c->m, op, vals, &out)) == 0) c->tab[op->res[0]->id] = out;
    } else if (all && (gv_ops[op->code].flags & GV_PURE) && op->nregions == 0 && op->nres > 0 &&
               op->code != GV_OP_DROPOUT && !gv_attn_dropout(op)) { /* a dropout's value depends on the step */
      bool small = true;
      for (int i = 0; i < op->nres; i++) small = small && small_result(&op->res[i]->type);
      gv_tensor *obuf[16], **outs = op->nres <= 16 ? obuf : malloc((size_t)op->nres * sizeof *outs);
      if (!outs) rc = gv_error_op(c->m, op, "out of memory");
      else if (small && (rc = gv_eval_op(c->m, op, vals, outs)) == 0)
        for (int i = 0; i < op->nres; i++) c->tab[op->res[i]->id] = outs[i];
      if (outs != obuf) free(outs);
    }
  }
  if (vals != vbuf) free(vals);
  return rc;
}

static int infer_block(ctx *c, gv_block *b, bool propagate) {
  for (gv_op *op = b->first; op; op = op->next)
    if (infer_op(c, op, propagate)) return -1;
  return 0;
}

int gv_pass_shape_infer(gv_module *m) {
  if (!m->main || !m->main->body) return gv_error(m, "shape-infer: module has no function");
  int n = number_block(m->main->body, 0);
  ctx c = {m, calloc((size_t)n + 1, sizeof(const gv_tensor *))};
  if (!c.tab) return gv_error(m, "shape-infer: out of memory");
  int rc = infer_block(&c, m->main->body, true);
  free(c.tab);
  if (rc) return -1;
  /* Graph outputs: the return's operands carry the types the printer and
   * later stages read as the function's result types. */
  gv_op *ret = gv_block_terminator(m->main->body);
  if (!ret || ret->code != GV_OP_RETURN) return gv_error(m, "shape-infer: function body does not end in galv.return");
  return 0;
}
