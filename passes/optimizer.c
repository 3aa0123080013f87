/* optimizer.c — the `optimizer` pass: appends the parameter update to a
 * function that returns (loss, grad:<p> for every parameter p that trains)
 * (passes/autodiff.c), so that the function becomes one training step (a
 * frozen parameter, galv.frozen, gets no update and no state: the step
 * leaves it as it is):
 *   args    = data inputs, labels, params, optimizer state (galv.state)
 *   results = loss, new params, new state; each result that replaces an
 *             argument for the next step says which (res_updates, printed
 *             as galv.updates = ARG : i64).
 * Updates follow torch.optim exactly (fp32, the params are the master
 * weights):
 *   sgd:   g += wd p; buf = momentum buf + g (state opt.buf:<p> when
 *          momentum != 0); p -= lr buf
 *   adamw: t += 1 (state opt.step, f32 scalar); p *= 1 - lr wd;
 *          m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2 (state opt.m:<p>,
 *          opt.v:<p>); p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * with lr, betas, eps, weight decay and momentum from gv_train_opts.
 * With clip_grad_norm X > 0 the gradients are first scaled as torch's
 * clip_grad_norm_ does: n = sqrt(sum over every trained parameter of
 * sum(g^2)), g *= min(X / (n + 1e-6), 1). The norm is one expression over
 * the global gradients, so under a mesh propagate-sharding completes it
 * like any value: a sharded gradient's (tp, ZeRO) sum of squares is a
 * partial sum all-reduced once, a replicated gradient's is local, counted
 * once; no communication is written here.
 * Loss scaling (loss_scale_mode; docs/autodiff.md, "Loss scaling"): the
 * gradients are scale x d loss (autodiff's seed); before clipping each is
 * multiplied by 1 / scale and its inf / NaN elements counted (reduce_sum of
 * not(g x 0 == 0), one sum over the global gradients like the norm); a count
 * > 0 keeps every parameter and state value (AdamW's step too) through
 * where(overflow, old, new). Dynamic: opt.loss_scale (0: the initial scale)
 * x backoff on overflow, x growth (when finite) after `interval` good steps
 * counted in opt.growth_tracker; opt.skipped_steps counts the skips. */
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "passes.h"

typedef struct {
  gv_module *m;
  gv_func *f;
  gv_value **outs;
  const char **names;
  int *upd;
  int n;
} results;

static void push(results *r, gv_value *v, const char *name, int updates) {
  r->outs[r->n] = v;
  r->names[r->n] = name;
  r->upd[r->n++] = updates;
}

static const char *cat(gv_module *m, const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = gv_alloc(m->arena, na + nb + 1);
  memcpy(s, a, na);
  memcpy(s + na, b, nb + 1);
  return s;
}

/* A new state argument (appended last; its index is nargs - 1). */
static gv_value *state_arg(gv_module *m, gv_func *f, const char *name, gv_type t) {
  gv_value *v = gv_func_add_arg(m, f, name, t, false);
  return v;
}

int gv_pass_optimizer(gv_module *m) {
  const gv_train_options *o = &gv_train_opts;
  gv_func *f = m->main;
  gv_op *ret = f ? gv_block_terminator(f->body) : NULL;
  if (!ret || ret->code != GV_OP_RETURN) return gv_error(m, "optimizer: the function has no return");
  bool adamw = strcmp(o->optimizer, "adamw") == 0;
  if (!adamw && strcmp(o->optimizer, "sgd") != 0)
    return gv_error(m, "optimizer: unknown optimizer '%s' (known: adamw, sgd)", o->optimizer);
  int nargs0 = f->body->nargs, np = 0;
  for (int i = 0; i < nargs0; i++) np += gv_arg_trains(f, i);
  if (ret->nopnds != np + 1 || f->nres_names != np + 1 || !f->res_names)
    return gv_error(m, "optimizer: the function must return the loss and one gradient per trained parameter (run autodiff first)");
  int *pidx = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *pidx);
  for (int i = 0, k = 0; i < nargs0; i++) {
    if (!gv_arg_trains(f, i)) continue;
    const char *rn = f->res_names[k + 1];
    if (!rn || strncmp(rn, "grad:", 5) || strcmp(rn + 5, f->arg_names[i]))
      return gv_error(m, "optimizer: result %d should be grad:%s (run autodiff first)", k + 1, f->arg_names[i]);
    pidx[k++] = i;
  }
  int nstate = adamw ? 1 + 2 * np : o->momentum != 0 ? np : 0;
  if (o->loss_scale_mode) nstate += 3; /* opt.loss_scale, opt.growth_tracker, opt.skipped_steps */
  int cap = 1 + np + nstate;
  results r = {m, f, gv_alloc(m->arena, (size_t)cap * sizeof(gv_value *)), gv_alloc(m->arena, (size_t)cap * sizeof(char *)),
               gv_alloc(m->arena, (size_t)cap * sizeof(int)), 0};
  gv_value *loss = ret->opnds[0];
  push(&r, loss, f->res_names[0], -1);
  gv_value **grads = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *grads);
  for (int k = 0; k < np; k++) grads[k] = ret->opnds[k + 1];

  /* loss scaling: every gradient is scale x d loss (passes/autodiff.c). The
   * overflow count (inf / NaN elements over every gradient: g x 0 is NaN
   * exactly there) is a sum over the global gradients, so under a mesh it is
   * completed as the clipping norm is: a sharded gradient's count is a partial
   * sum all-reduced, a replicated one's is the same on every rank. */
  gv_value *skip = NULL, *scale = NULL, *sarg = NULL;
  if (o->loss_scale_mode) {
    gvb c = {m, ret, "optimizer/loss_scale"};
    sarg = gvb_loss_scale_arg(f);
    if (o->loss_scale_mode == 2 && !sarg) return gv_error(m, "optimizer: --loss-scale dynamic: no opt.loss_scale state (run autodiff with it)");
    gv_dtype sdt = sarg ? sarg->type.dtype : loss->type.dtype;
    scale = gvb_loss_scale(&c, sarg, sdt, o->loss_scale);
    gv_value *inv = gvb_bin(&c, GV_OP_DIV, gvb_cst(&c, sdt, 1.0), scale), *bad = NULL;
    for (int k = 0; k < np; k++) {
      gv_value *g = grads[k];
      c.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[pidx[k]]); /* with P's update (ZeRO) */
      if (g->type.dtype != sdt)
        return gv_error(m, "optimizer: --loss-scale: the gradient of '%s' is %s (%s expected)", f->arg_names[pidx[k]],
                        gv_dtype_name(g->type.dtype), gv_dtype_name(sdt));
      gv_value *fin = gvb_bin(&c, GV_OP_EQUAL, gvb_bin(&c, GV_OP_MUL, g, gvb_cst(&c, sdt, 0.0)), gvb_cst(&c, sdt, 0.0));
      gv_op *cs = gvb_new(&c, GV_OP_CAST, 1, (gv_value *[]){gvb_un(&c, GV_OP_NOT, fin)});
      if (!cs) return -1;
      gv_set_type(m, cs, "to", sdt);
      gv_op *rs = gvb_new(&c, GV_OP_REDUCE_SUM, 1, (gv_value *[]){gvb_fin(&c, cs)});
      if (!rs) return -1;
      gv_set_int(m, rs, "keepdims", 0);
      gv_value *cnt = gvb_fin(&c, rs);
      c.loc = "optimizer/loss_scale";
      bad = bad ? gvb_bin(&c, GV_OP_ADD, bad, cnt) : cnt;
      c.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[pidx[k]]);
      if (!(grads[k] = gvb_bin(&c, GV_OP_MUL, g, inv))) return -1;
      c.loc = "optimizer/loss_scale";
    }
    skip = bad ? gvb_bin(&c, GV_OP_GREATER, bad, gvb_cst(&c, sdt, 0.0)) : NULL;
    if (np && !skip) return -1;
  }

  if (o->clip_grad_norm > 0) {
    /* each gradient's squares and its scaling at P's update location, so under ZeRO they run on P's shard (the
     * gradient reduce-scattered once for both, its sum of squares a partial sum: one 4-byte all-reduce) */
    gvb c = {m, ret, "optimizer/clip_grad_norm"};
    gv_value *sq = NULL;
    for (int k = 0; k < np; k++) {
      gv_value *g = grads[k];
      if (g->type.dtype != GV_DT_F32)
        return gv_error(m, "optimizer: --clip-grad-norm: the gradient of '%s' is %s (f32 expected)", f->arg_names[pidx[k]],
                        gv_dtype_name(g->type.dtype));
      c.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[pidx[k]]);
      gv_op *rs = gvb_new(&c, GV_OP_REDUCE_SUM, 1, (gv_value *[]){gvb_bin(&c, GV_OP_MUL, g, g)});
      if (!rs) return -1;
      gv_set_int(m, rs, "keepdims", 0);
      gv_value *s = gvb_fin(&c, rs);
      c.loc = "optimizer/clip_grad_norm";
      sq = sq ? gvb_bin(&c, GV_OP_ADD, sq, s) : s;
      if (!sq) return -1;
    }
    if (sq) {
      gv_value *norm = gvb_un(&c, GV_OP_SQRT, sq);
      gv_value *coef = gvb_bin(&c, GV_OP_MIN,
                               gvb_bin(&c, GV_OP_DIV, gvb_cst(&c, GV_DT_F32, o->clip_grad_norm),
                                       gvb_bin(&c, GV_OP_ADD, norm, gvb_cst(&c, GV_DT_F32, 1e-6))),
                               gvb_cst(&c, GV_DT_F32, 1.0));
      for (int k = 0; k < np; k++) {
        c.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[pidx[k]]);
        if (!(grads[k] = gvb_bin(&c, GV_OP_MUL, grads[k], coef))) return -1;
      }
    }
  }

  gvb b = {m, ret, adamw ? "optimizer/adamw" : "optimizer/sgd"};
  gv_value **newp = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *newp);
  gv_value **st1 = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *st1), **st2 = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *st2);
  int *st1i = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *st1i), *st2i = gv_alloc(m->arena, (size_t)(np + 1) * sizeof *st2i);
  gv_value *step = NULL, *step1 = NULL, *bc1 = NULL, *bc2s = NULL;
  int stepi = -1;
  if (adamw) {
    step = state_arg(m, f, "opt.step", gv_type_make(GV_DT_F32, 0, NULL));
    stepi = f->body->nargs - 1;
    step1 = gvb_bin(&b, GV_OP_ADD, step, gvb_cst(&b, GV_DT_F32, 1));
    /* 1 - b^t for both betas, and sqrt of the second */
    bc1 = gvb_bin(&b, GV_OP_SUB, gvb_cst(&b, GV_DT_F32, 1), gvb_bin(&b, GV_OP_POW, gvb_cst(&b, GV_DT_F32, o->beta1), step1));
    bc2s = gvb_un(&b, GV_OP_SQRT,
                  gvb_bin(&b, GV_OP_SUB, gvb_cst(&b, GV_DT_F32, 1), gvb_bin(&b, GV_OP_POW, gvb_cst(&b, GV_DT_F32, o->beta2), step1)));
  }
  for (int k = 0; k < np; k++) {
    int ai = pidx[k];
    gv_value *p = f->body->args[ai], *g = grads[k];
    gv_dtype dt = p->type.dtype;
    b.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[ai]);
#define K(v) gvb_cst(&b, dt, (v))
    if (adamw) {
      gv_value *mv = state_arg(m, f, cat(m, "opt.m:", f->arg_names[ai]), p->type);
      st1i[k] = f->body->nargs - 1;
      gv_value *vv = state_arg(m, f, cat(m, "opt.v:", f->arg_names[ai]), p->type);
      st2i[k] = f->body->nargs - 1;
      gv_value *p1 = o->weight_decay != 0 ? gvb_bin(&b, GV_OP_MUL, p, K(1 - o->lr * o->weight_decay)) : p;
      gv_value *m1 = gvb_bin(&b, GV_OP_ADD, gvb_bin(&b, GV_OP_MUL, mv, K(o->beta1)), gvb_bin(&b, GV_OP_MUL, g, K(1 - o->beta1)));
      gv_value *v1 = gvb_bin(&b, GV_OP_ADD, gvb_bin(&b, GV_OP_MUL, vv, K(o->beta2)),
                             gvb_bin(&b, GV_OP_MUL, gvb_bin(&b, GV_OP_MUL, g, g), K(1 - o->beta2)));
      gv_value *denom = gvb_bin(&b, GV_OP_ADD, gvb_bin(&b, GV_OP_DIV, gvb_un(&b, GV_OP_SQRT, v1), bc2s), K(o->eps));
      gv_value *stepsz = gvb_bin(&b, GV_OP_DIV, K(o->lr), bc1);
      newp[k] = gvb_bin(&b, GV_OP_SUB, p1, gvb_bin(&b, GV_OP_MUL, stepsz, gvb_bin(&b, GV_OP_DIV, m1, denom)));
      st1[k] = m1;
      st2[k] = v1;
    } else {
      gv_value *g1 = o->weight_decay != 0 ? gvb_bin(&b, GV_OP_ADD, g, gvb_bin(&b, GV_OP_MUL, p, K(o->weight_decay))) : g;
      gv_value *d = g1;
      if (o->momentum != 0) {
        gv_value *buf = state_arg(m, f, cat(m, "opt.buf:", f->arg_names[ai]), p->type);
        st1i[k] = f->body->nargs - 1;
        d = st1[k] = gvb_bin(&b, GV_OP_ADD, gvb_bin(&b, GV_OP_MUL, buf, K(o->momentum)), g1);
      }
      newp[k] = gvb_bin(&b, GV_OP_SUB, p, gvb_bin(&b, GV_OP_MUL, d, K(o->lr)));
    }
#undef K
    if (!newp[k] || (adamw && (!st1[k] || !st2[k]))) return -1;
  }
  if (skip) { /* an overflow skips the step: parameters and optimizer state (AdamW's step count too) unchanged */
    b.loc = "optimizer/loss_scale";
#define KEEP(old, v) ((v) = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){skip, (old), (v)}))
    for (int k = 0; k < np; k++) {
      b.loc = cat(m, adamw ? "optimizer/adamw/" : "optimizer/sgd/", f->arg_names[pidx[k]]);
      if (!KEEP(f->body->args[pidx[k]], newp[k])) return -1;
      if (adamw && (!KEEP(f->body->args[st1i[k]], st1[k]) || !KEEP(f->body->args[st2i[k]], st2[k]))) return -1;
      if (!adamw && o->momentum != 0 && !KEEP(f->body->args[st1i[k]], st1[k])) return -1;
    }
    b.loc = "optimizer/adamw";
    if (adamw && !KEEP(step, step1)) return -1;
#undef KEEP
  }
  for (int k = 0; k < np; k++) push(&r, newp[k], f->arg_names[pidx[k]], pidx[k]);
  if (adamw) {
    if (!step1) return -1;
    push(&r, step1, "opt.step", stepi);
    for (int k = 0; k < np; k++) push(&r, st1[k], f->arg_names[st1i[k]], st1i[k]);
    for (int k = 0; k < np; k++) push(&r, st2[k], f->arg_names[st2i[k]], st2i[k]);
  } else if (o->momentum != 0) {
    for (int k = 0; k < np; k++) push(&r, st1[k], f->arg_names[st1i[k]], st1i[k]);
  }
  if (skip) {
    /* torch's GradScaler.update: on overflow scale x backoff and the good-step count 0; else the count + 1,
     * and at the interval scale x growth and the count 0. opt.skipped_steps counts the skipped steps. */
    gvb c = {m, ret, "optimizer/loss_scale"};
    gv_dtype sdt = scale->type.dtype;
    gv_value *sk = state_arg(m, f, "opt.skipped_steps", gv_type_make(sdt, 0, NULL));
    int ski = f->body->nargs - 1;
    gv_value *sk1 = gvb_op(&c, GV_OP_WHERE, 3, (gv_value *[]){skip, gvb_bin(&c, GV_OP_ADD, sk, gvb_cst(&c, sdt, 1.0)), sk});
    if (!sk1) return -1;
    if (o->loss_scale_mode == 2) {
      int sai = sarg->index;
      gv_value *tr = state_arg(m, f, "opt.growth_tracker", gv_type_make(sdt, 0, NULL));
      int tri = f->body->nargs - 1;
      gv_value *t1 = gvb_bin(&c, GV_OP_ADD, tr, gvb_cst(&c, sdt, 1.0));
      gv_value *grow = gvb_bin(&c, GV_OP_GREATER_EQUAL, t1, gvb_cst(&c, sdt, (double)o->scale_interval));
      /* grown only to a finite scale (torch: an fp32 overflow keeps the scale) */
      gv_value *big = gvb_bin(&c, GV_OP_MUL, scale, gvb_cst(&c, sdt, o->scale_growth));
      gv_value *fin = gvb_bin(&c, GV_OP_EQUAL, gvb_bin(&c, GV_OP_MUL, big, gvb_cst(&c, sdt, 0.0)), gvb_cst(&c, sdt, 0.0));
      gv_value *good = gvb_op(&c, GV_OP_WHERE, 3, (gv_value *[]){gvb_bin(&c, GV_OP_AND, grow, fin), big, scale});
      gv_value *ns = gvb_op(&c, GV_OP_WHERE, 3, (gv_value *[]){skip, gvb_bin(&c, GV_OP_MUL, scale, gvb_cst(&c, sdt, o->scale_backoff)), good});
      gv_value *zero = gvb_cst(&c, sdt, 0.0);
      gv_value *nt = gvb_op(&c, GV_OP_WHERE, 3, (gv_value *[]){skip, zero, gvb_op(&c, GV_OP_WHERE, 3, (gv_value *[]){grow, zero, t1})});
      if (!ns || !nt) return -1;
      push(&r, ns, "opt.loss_scale", sai);
      push(&r, nt, "opt.growth_tracker", tri);
    }
    push(&r, sk1, "opt.skipped_steps", ski);
  }
  int ncap = f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs;
  bool *ist = gv_alloc(m->arena, (size_t)ncap * sizeof *ist);
  for (int i = 0; i < nargs0 && f->arg_is_state; i++) ist[i] = f->arg_is_state[i]; /* autodiff's opt.loss_scale */
  for (int i = nargs0; i < f->body->nargs; i++) ist[i] = true;
  f->arg_is_state = ist;
  gv_op_set_operands(m, ret, r.n, r.outs);
  f->res_names = r.names;
  f->nres_names = r.n;
  f->res_updates = r.upd;
  return 0;
}
