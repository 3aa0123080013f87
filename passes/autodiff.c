/* autodiff.c — the `autodiff` pass: reverse-mode differentiation of the
 * function's first result (a scalar loss, see passes/loss.c) with respect
 * to every parameter that trains (galv.param argument without galv.frozen;
 * a frozen parameter is read like a constant and gets no gradient).
 *
 * Only values that need a gradient get one: a value needs it when it is
 * forward-reachable from a parameter (through ops whose rule is not
 * gv_grad_none, with a floating-point type) and the loss depends on it.
 * Ops are visited in reverse program order; each calls its rule from the op
 * table (ir/grad.c), which builds the operands' gradients as IR ops before
 * the return; a value used several times sums its gradients with add. An op
 * whose result needs a gradient but whose rule is gv_grad_missing (galv.if,
 * galv.fused, ...) is an error naming the node. The function then returns
 * the loss followed by one gradient per trained parameter, in argument order, named
 * "grad:<param>" (zeros for a parameter the loss does not depend on).
 * Loss scaling (gv_train_opts.loss_scale_mode, fp16 training): the seed is
 * the scale, so every gradient is scale x d loss; a dynamic scale is a new
 * state argument opt.loss_scale (zeros: the initial scale), which
 * passes/optimizer.c updates. Only
 * the function body is differentiated, not ops inside regions. */
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "passes.h"

static int number(gv_block *b, int next) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = next++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = next++;
    for (int r = 0; r < op->nregions; r++) next = number(op->regions[r], next);
  }
  return next;
}

/* Whether some op inside b uses a value marked in flags. */
static bool captures(const gv_block *b, const bool *flags) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++)
      if (flags[op->opnds[i]->id]) return true;
    for (int r = 0; r < op->nregions; r++)
      if (captures(op->regions[r], flags)) return true;
  }
  return false;
}

static void mark_captured(const gv_block *b, bool *flags) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) flags[op->opnds[i]->id] = true;
    for (int r = 0; r < op->nregions; r++) mark_captured(op->regions[r], flags);
  }
}

int gv_pass_autodiff(gv_module *m) {
  gv_func *f = m->main;
  gv_op *ret = f ? gv_block_terminator(f->body) : NULL;
  if (!ret || ret->code != GV_OP_RETURN || ret->nopnds < 1) return gv_error(m, "autodiff: the function returns nothing");
  gv_value *loss = ret->opnds[0];
  if (!gv_dtype_is_float(loss->type.dtype) || gv_type_numel(&loss->type) != 1)
    return gv_error(m, "autodiff: the first result must be a floating-point scalar loss (run the loss pass first)");
  gv_value *scale_arg = NULL; /* --loss-scale dynamic: the scale is state, updated by the optimizer */
  if (gv_train_opts.loss_scale_mode == 2 && !(scale_arg = gvb_loss_scale_arg(f))) {
    scale_arg = gv_func_add_arg(m, f, "opt.loss_scale", gv_type_make(loss->type.dtype, 0, NULL), false);
    if (!f->arg_is_state)
      f->arg_is_state = gv_alloc(m->arena, (size_t)(f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs) * sizeof(bool));
    f->arg_is_state[f->body->nargs - 1] = true;
  }
  int nv = number(f->body, 0);
  bool *active = calloc((size_t)nv + 1, 1), *useful = calloc((size_t)nv + 1, 1);
  gv_value **grad = calloc((size_t)nv + 1, sizeof *grad);
  int rc = -1;
  if (!active || !useful || !grad) {
    gv_error(m, "autodiff: out of memory");
    goto done;
  }
  gv_block *body = f->body;
  for (int i = 0; i < body->nargs; i++)
    active[body->args[i]->id] = gv_arg_trains(f, i) && gv_dtype_is_float(body->args[i]->type.dtype);
  for (gv_op *op = body->first; op; op = op->next) {
    if (gv_ops[op->code].grad == gv_grad_none) continue;
    bool any = false;
    for (int i = 0; i < op->nopnds && !any; i++) any = active[op->opnds[i]->id];
    for (int r = 0; r < op->nregions && !any; r++) any = captures(op->regions[r], active);
    for (int i = 0; i < op->nres; i++) active[op->res[i]->id] = any && gv_dtype_is_float(op->res[i]->type.dtype);
  }
  /* a pipeline stage's seed (passes/stage_extract.c) may depend on its received values through comparisons only (a
   * float attention mask made into a where's condition): no gradient reaches them, and each is zeros */
  const bool stage_seed = f->nres_names > 0 && f->res_names && f->res_names[0] && !strcmp(f->res_names[0], "pp.seed");
  if (!active[loss->id] && !stage_seed) {
    gv_error(m, "autodiff: the loss does not depend on any parameter that trains");
    goto done;
  }
  useful[loss->id] = true;
  for (gv_op *op = ret->prev; op; op = op->prev) {
    if (gv_ops[op->code].grad == gv_grad_none) continue;
    bool any = false;
    for (int i = 0; i < op->nres && !any; i++) any = useful[op->res[i]->id];
    if (!any) continue;
    for (int i = 0; i < op->nopnds; i++) useful[op->opnds[i]->id] = true;
    for (int r = 0; r < op->nregions; r++) mark_captured(op->regions[r], useful);
  }

  gvb b = {m, ret, "autodiff/seed"}; /* d loss = 1: passes/accumulate.c weighs microbatches here */
  grad[loss->id] = gvb_cst(&b, loss->type.dtype, 1.0);
  if (gv_train_opts.loss_scale_mode) { /* d (loss x scale): every gradient scaled (passes/optimizer.c unscales) */
    b.loc = "autodiff/loss_scale";
    grad[loss->id] = gvb_bin(&b, GV_OP_MUL, grad[loss->id], gvb_loss_scale(&b, scale_arg, loss->type.dtype, gv_train_opts.loss_scale));
  }
  b.loc = "autodiff";
  if (grad[loss->id] && loss->type.rank) {
    gv_op *o = gvb_new(&b, GV_OP_RESHAPE, 1, &grad[loss->id]);
    o->res[0]->type = loss->type;
    grad[loss->id] = gvb_fin(&b, o);
  }
  if (!grad[loss->id]) goto done;
  gv_value *dres_buf[16], **dres;
  bool need_buf[16], *need;
  gv_value *dop_buf[16], **dop;
  for (gv_op *op = ret->prev, *prev; op; op = prev) {
    prev = op->prev;
    bool any = false;
    for (int i = 0; i < op->nres; i++) any = any || (grad[op->res[i]->id] && active[op->res[i]->id]);
    if (!any) continue;
    gv_grad_fn rule = gv_ops[op->code].grad;
    if (rule == gv_grad_missing) {
      gv_grad_missing(m, op, NULL, NULL, NULL, ret);
      goto done;
    }
    bool big = op->nres > 16 || op->nopnds > 16;
    dres = big ? gv_alloc(m->arena, (size_t)op->nres * sizeof *dres) : dres_buf;
    need = big ? gv_alloc(m->arena, (size_t)op->nopnds + 1) : need_buf;
    dop = big ? gv_alloc(m->arena, (size_t)(op->nopnds + 1) * sizeof *dop) : dop_buf;
    bool some = false;
    for (int i = 0; i < op->nres; i++) dres[i] = active[op->res[i]->id] ? grad[op->res[i]->id] : NULL;
    for (int i = 0; i < op->nopnds; i++) {
      gv_value *v = op->opnds[i];
      need[i] = active[v->id] && useful[v->id];
      dop[i] = NULL;
      some = some || need[i];
    }
    if (!some) continue;
    if (rule(m, op, dres, need, dop, ret)) goto done;
    for (int i = 0; i < op->nopnds; i++) {
      gv_value *v = op->opnds[i];
      if (!need[i] || !dop[i]) continue;
      if (!gv_type_equal(&dop[i]->type, &v->type)) {
        char a[128], c[128];
        gv_type_str(&dop[i]->type, a, sizeof a);
        gv_type_str(&v->type, c, sizeof c);
        gv_error_op(m, op, "gradient rule of galv.%s gave %s for operand %d of type %s", gv_ops[op->code].name, a, i, c);
        goto done;
      }
      if (grad[v->id]) {
        b.loc = op->loc;
        grad[v->id] = gvb_bin(&b, GV_OP_ADD, grad[v->id], dop[i]);
        if (!grad[v->id]) goto done;
      } else {
        grad[v->id] = dop[i];
      }
    }
  }

  int np = 0;
  for (int i = 0; i < body->nargs; i++) np += gv_arg_trains(f, i);
  gv_value **outs = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *outs);
  const char **names = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *names);
  outs[0] = loss;
  names[0] = f->nres_names > 0 && f->res_names && f->res_names[0] ? f->res_names[0] : "loss";
  int k = 1;
  b.loc = "autodiff";
  for (int i = 0; i < body->nargs; i++) {
    if (!gv_arg_trains(f, i)) continue;
    gv_value *a = body->args[i], *g = grad[a->id];
    if (!g) g = gvb_zeros(&b, &a->type);
    if (!g) goto done;
    outs[k] = g;
    size_t n = strlen(f->arg_names[i]);
    char *s = gv_alloc(m->arena, n + 6);
    memcpy(s, "grad:", 5);
    memcpy(s + 5, f->arg_names[i], n + 1);
    names[k++] = s;
  }
  gv_op_set_operands(m, ret, k, outs);
  f->res_names = names;
  f->nres_names = k;
  f->res_updates = NULL;
  rc = 0;
done:
  free(active);
  free(useful);
  free(grad);
  return rc;
}
