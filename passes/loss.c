/* loss.c — the `loss` pass: turns a model function into one that returns a
 * scalar training loss. It adds a graph input named gv_train_opts.labels
 * (placed after the existing inputs, before the parameters) and computes
 *   cross_entropy: galv.cross_entropy(logits, labels) {ignore_index}, labels
 *                  i64 of the logits' shape without the last dim; the mean
 *                  over rows whose label is not ignore_index (torch's
 *                  CrossEntropyLoss, reduction mean);
 *   mse:           reduce_mean((y - target)^2), target of y's type;
 * over the function's first result; the function then returns the loss
 * alone (result name "loss"). Options: passes.h gv_train_options. */
#include <string.h>

#include "build.h"
#include "passes.h"

/* Moves the last function argument to position pos (keeping every per-arg
 * array in step) and renumbers the arguments. */
static void move_last_arg(gv_func *f, int pos) {
  gv_block *b = f->body;
  int n = b->nargs - 1;
  gv_value *v = b->args[n];
  const char *nm = f->arg_names[n];
  bool isp = f->arg_is_param[n];
  const void *pd = f->param_data[n];
  bool st = f->arg_is_state ? f->arg_is_state[n] : false;
  bool fz = f->arg_is_frozen ? f->arg_is_frozen[n] : false;
  for (int i = n; i > pos; i--) {
    b->args[i] = b->args[i - 1];
    f->arg_names[i] = f->arg_names[i - 1];
    f->arg_is_param[i] = f->arg_is_param[i - 1];
    f->param_data[i] = f->param_data[i - 1];
    if (f->arg_is_state) f->arg_is_state[i] = f->arg_is_state[i - 1];
    if (f->arg_is_frozen) f->arg_is_frozen[i] = f->arg_is_frozen[i - 1];
  }
  b->args[pos] = v;
  f->arg_names[pos] = nm;
  f->arg_is_param[pos] = isp;
  f->param_data[pos] = pd;
  if (f->arg_is_state) f->arg_is_state[pos] = st;
  if (f->arg_is_frozen) f->arg_is_frozen[pos] = fz;
  for (int i = 0; i < b->nargs; i++) b->args[i]->index = i;
}

int gv_pass_loss(gv_module *m) {
  const gv_train_options *o = &gv_train_opts;
  gv_func *f = m->main;
  gv_op *ret = f ? gv_block_terminator(f->body) : NULL;
  if (!ret || ret->code != GV_OP_RETURN || ret->nopnds < 1) return gv_error(m, "loss: the function returns nothing");
  gv_value *y = ret->opnds[0];
  const char *what = f->nres_names && f->res_names && f->res_names[0] ? f->res_names[0] : "result 0";
  if (!gv_dtype_is_float(y->type.dtype) || !gv_type_is_static(&y->type))
    return gv_error(m, "loss: output '%s' must be a floating-point tensor of static shape (run shape-infer)", what);
  for (int i = 0; i < f->body->nargs; i++)
    if (f->arg_names[i] && strcmp(f->arg_names[i], o->labels) == 0)
      return gv_error(m, "loss: the function already has an argument named '%s' (choose --labels)", o->labels);
  bool ce = strcmp(o->loss, "cross_entropy") == 0;
  if (!ce && strcmp(o->loss, "mse") != 0) return gv_error(m, "loss: unknown loss '%s' (known: cross_entropy, mse)", o->loss);
  gv_type lt = y->type;
  if (ce) {
    if (y->type.rank < 1) return gv_error(m, "loss: cross_entropy needs logits of rank >= 1, '%s' is a scalar", what);
    lt = gv_type_make(GV_DT_I64, y->type.rank - 1, y->type.dims);
  }
  int pos = 0;
  while (pos < f->body->nargs && !f->arg_is_param[pos] && !(f->arg_is_state && f->arg_is_state[pos])) pos++;
  gv_value *lab = gv_func_add_arg(m, f, o->labels, lt, false);
  move_last_arg(f, pos);

  gvb b = {m, ret, ce ? "loss/cross_entropy" : "loss/mse"};
  gv_value *loss;
  if (ce) {
    gv_value *in[2] = {y, lab};
    gv_op *op = gvb_new(&b, GV_OP_CROSS_ENTROPY, 2, in);
    gv_set_int(m, op, "ignore_index", o->ignore_index);
    loss = gvb_fin(&b, op);
  } else {
    gv_value *d = gvb_bin(&b, GV_OP_SUB, y, lab);
    gv_op *op = gvb_new(&b, GV_OP_REDUCE_MEAN, 1, (gv_value *[]){gvb_bin(&b, GV_OP_MUL, d, d)});
    if (op) gv_set_int(m, op, "keepdims", 0);
    loss = op ? gvb_fin(&b, op) : NULL;
  }
  if (!loss) return -1;
  gv_op_set_operands(m, ret, 1, &loss);
  f->res_names = gv_alloc(m->arena, sizeof *f->res_names);
  f->res_names[0] = "loss";
  f->nres_names = 1;
  f->res_updates = NULL;
  return 0;
}
