/* fused.c — shape rule and reference evaluation of galv.fused
 * (docs/device-program.md).
 *
 * A fused op holds one region whose block arguments stand for its operands
 * and whose body (elementwise ops) ends in galv.yield; its results are the
 * yielded values. Inference sets the block arguments' types from the
 * operands, infers every body op in order and takes the result types from
 * the yield. Evaluation runs the body with gv_eval_op, the block arguments
 * bound to the inputs. Neither may touch value->id (callers such as the
 * interpreter number values with it) nor change the body's structure; a
 * malformed fused op is one error line, never a crash.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* The region, or NULL after reporting why it is unusable. */
static gv_block *body_of(gv_module *m, const gv_op *op) {
  if (op->nregions != 1 || !op->regions[0]) {
    gv_error_op(m, op, "galv.fused needs one region, has %d", op->nregions);
    return NULL;
  }
  gv_block *b = op->regions[0];
  if (b->nargs != op->nopnds) {
    gv_error_op(m, op, "galv.fused has %d operands but its block has %d arguments", op->nopnds, b->nargs);
    return NULL;
  }
  gv_op *y = b->last;
  if (!y || y->code != GV_OP_YIELD) {
    gv_error_op(m, op, "galv.fused region does not end in galv.yield");
    return NULL;
  }
  if (y->nopnds != op->nres) {
    gv_error_op(m, op, "galv.fused region yields %d values for %d results", y->nopnds, op->nres);
    return NULL;
  }
  return b;
}

int gv_infer_fused(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  gv_block *b = body_of(m, op);
  if (!b) return -1;
  for (int i = 0; i < op->nopnds; i++) b->args[i]->type = op->opnds[i]->type;
  for (gv_op *o = b->first; o && o != b->last; o = o->next) {
    if (o->nregions) return gv_error_op(m, o, "galv.%s with regions inside galv.fused", gv_ops[o->code].name);
    /* No values are known inside a fused body: every rule gets NULLs. */
    const gv_tensor **nulls = calloc((size_t)o->nopnds + 1, sizeof *nulls);
    if (!nulls) return gv_error_op(m, o, "out of memory");
    int rc = gv_infer_op(m, o, nulls);
    free(nulls);
    if (rc) return -1;
  }
  for (int i = 0; i < op->nres; i++) op->res[i]->type = b->last->opnds[i]->type;
  return 0;
}

/* The tensor bound to v: a block argument's input or an evaluated body
 * result (linear search: fused bodies are short). */
typedef struct {
  const gv_value *v;
  const gv_tensor *t;
} binding;

static const gv_tensor *lookup(const binding *bs, int n, const gv_value *v) {
  for (int i = n - 1; i >= 0; i--)
    if (bs[i].v == v) return bs[i].t;
  return NULL;
}

int gv_eval_fused(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_block *b = body_of(m, op);
  if (!b) return -1;
  int cap = b->nargs + 1, rc = -1;
  for (gv_op *o = b->first; o; o = o->next) cap += o->nres;
  binding *bs = calloc((size_t)cap, sizeof *bs);
  int maxop = 1;
  for (gv_op *o = b->first; o; o = o->next)
    if (o->nopnds > maxop) maxop = o->nopnds;
  const gv_tensor **args = calloc((size_t)maxop + 1, sizeof *args);
  gv_tensor **outs = NULL;
  if (!bs || !args) {
    gv_error_op(m, op, "out of memory");
    goto done;
  }
  int n = 0;
  for (int i = 0; i < b->nargs; i++) bs[n++] = (binding){b->args[i], in[i]};
  for (gv_op *o = b->first; o != b->last; o = o->next) {
    for (int i = 0; i < o->nopnds; i++) {
      args[i] = lookup(bs, n, o->opnds[i]);
      if (!args[i]) {
        gv_error_op(m, o, "operand %d is not defined inside its galv.fused region", i);
        goto done;
      }
    }
    for (int i = 0; i < o->nres; i++)
      if (!gv_type_is_static(&o->res[i]->type)) {
        gv_error_op(m, o, "result %d has no static shape; run shape-infer first", i);
        goto done;
      }
    outs = calloc((size_t)o->nres + 1, sizeof *outs);
    if (!outs) {
      gv_error_op(m, op, "out of memory");
      goto done;
    }
    if (gv_eval_op(m, o, args, outs)) goto done;
    for (int i = 0; i < o->nres; i++) bs[n++] = (binding){o->res[i], outs[i]};
    free(outs);
    outs = NULL;
  }
  for (int i = 0; i < op->nres; i++) {
    const gv_tensor *t = lookup(bs, n, b->last->opnds[i]);
    if (!t) {
      gv_error_op(m, b->last, "yielded value %d is not defined inside its galv.fused region", i);
      goto done;
    }
    /* A block argument yielded as is: the result gets its own copy. */
    bool is_input = false;
    for (int k = 0; k < b->nargs; k++) is_input = is_input || t == in[k];
    if (is_input) {
      gv_tensor *c = gv_tensor_new(m->arena, t->type);
      size_t bytes = (size_t)gv_tensor_numel(t) * gv_dtype_size(t->type.dtype);
      if (bytes) memcpy(c->data, t->data, bytes);
      out[i] = c;
    } else {
      out[i] = (gv_tensor *)t;
    }
  }
  rc = 0;
done:
  free(outs);
  free(args);
  free(bs);
  return rc;
}
