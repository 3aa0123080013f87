/* interp.c — runs a whole function through the reference evaluator, op by op
 * in program order (galv.if takes the branch its condition selects; galv.fused
 * runs its body through gv_eval_fused; galv.arena is skipped). It is
 * the oracle that tests compare compiled programs and passes against; it
 * favours plainness over speed and must never be used by the compiler's
 * own passes (fold-constants evaluates single ops). */
#include "interp.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  gv_module *m;
  const gv_tensor **vals; /* by value id */
} interp;

static int number(gv_block *b, int next) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = next++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = next++;
    for (int r = 0; r < op->nregions; r++) next = number(op->regions[r], next);
  }
  return next;
}

/* Runs block b; on reaching its terminator stores the terminator's operand
 * values in *term_vals. */
static int run_block(interp *in, gv_block *b, const gv_tensor ***term_vals, int *nterm) {
  gv_module *m = in->m;
  for (gv_op *op = b->first; op; op = op->next) {
    if (op->code == GV_OP_ARENA) continue; /* memory plan only: no value, no effect */
    const gv_tensor **args = gv_alloc(m->arena, (size_t)(op->nopnds + 1) * sizeof *args);
    for (int i = 0; i < op->nopnds; i++) {
      args[i] = in->vals[op->opnds[i]->id];
      if (!args[i]) return gv_error_op(m, op, "operand %d has no value (parameter without weights?)", i);
    }
    if (gv_ops[op->code].flags & GV_TERMINATOR) {
      *term_vals = args;
      *nterm = op->nopnds;
      return 0;
    }
    if (op->code == GV_OP_IF) {
      if (gv_tensor_numel(args[0]) != 1) return gv_error_op(m, op, "If condition must have one element");
      gv_block *taken = op->regions[gv_tensor_get_i(args[0], 0) ? 0 : 1];
      const gv_tensor **ys = NULL;
      int ny = 0;
      if (run_block(in, taken, &ys, &ny)) return -1;
      if (ny != op->nres) return gv_error_op(m, op, "branch yields %d values for %d results", ny, op->nres);
      for (int i = 0; i < ny; i++) in->vals[op->res[i]->id] = ys[i];
      continue;
    }
    gv_tensor **outs = gv_alloc(m->arena, (size_t)(op->nres + 1) * sizeof *outs);
    for (int i = 0; i < op->nres; i++) {
      if (!gv_type_is_static(&op->res[i]->type))
        return gv_error_op(m, op, "result %d has no static shape; run shape-infer first", i);
    }
    if (gv_eval_op(m, op, args, outs)) return -1;
    for (int i = 0; i < op->nres; i++) in->vals[op->res[i]->id] = outs[i];
  }
  return gv_error(m, "block has no terminator");
}

int gv_interpret(gv_module *m, const gv_tensor *const *inputs, int ninputs, gv_tensor ***outputs,
                 int *noutputs) {
  gv_func *f = m->main;
  int nvals = number(f->body, 0);
  interp in = {m, calloc((size_t)nvals + 1, sizeof(gv_tensor *))};
  if (!in.vals) return gv_error(m, "out of memory");
  int k = 0, rc = -1;
  for (int i = 0; i < f->body->nargs; i++) {
    gv_value *a = f->body->args[i];
    if (f->arg_is_param[i]) {
      if (!f->param_data[i]) {
        gv_error(m, "parameter '%s' has no weights loaded", f->arg_names[i]);
        goto done;
      }
      gv_tensor *t = gv_alloc(m->arena, sizeof *t);
      t->type = a->type;
      t->data = (void *)f->param_data[i];
      in.vals[a->id] = t;
    } else {
      if (k >= ninputs) {
        gv_error(m, "input '%s' not given", f->arg_names[i]);
        goto done;
      }
      if (!gv_type_equal(&inputs[k]->type, &a->type)) {
        char want[128], got[128];
        gv_type_str(&a->type, want, sizeof want);
        gv_type_str(&inputs[k]->type, got, sizeof got);
        gv_error(m, "input '%s' is %s, expected %s", f->arg_names[i], got, want);
        goto done;
      }
      in.vals[a->id] = inputs[k++];
    }
  }
  const gv_tensor **res = NULL;
  int nres = 0;
  if (run_block(&in, f->body, &res, &nres)) goto done;
  *outputs = gv_alloc(m->arena, (size_t)(nres + 1) * sizeof **outputs);
  for (int i = 0; i < nres; i++) (*outputs)[i] = (gv_tensor *)res[i];
  *noutputs = nres;
  rc = 0;
done:
  free(in.vals);
  return rc;
}
