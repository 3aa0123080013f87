/* build.h — small IR builders shared by the training passes (loss,
 * autodiff, optimizer): each creates one op before `pos`, infers its type
 * and returns its result, or NULL after an error was reported (a NULL
 * operand propagates NULL, so chains need one check at the end). Not a
 * pass; header-only so that each pass stays one file. */
#ifndef GALV_PASSES_BUILD_H
#define GALV_PASSES_BUILD_H

#include <string.h>

#include "../ir/ir.h"

typedef struct {
  gv_module *m;
  gv_op *pos;      /* new ops go before this op */
  const char *loc; /* node name of new ops */
} gvb;

static inline gv_value *gvb_fin(gvb *b, gv_op *o) {
  const gv_tensor **vals = gv_alloc(b->m->arena, (size_t)(o->nopnds + 1) * sizeof *vals);
  if (gv_infer_op(b->m, o, vals)) return NULL;
  gv_insert_before(b->pos, o);
  return o->res[0];
}

static inline gv_op *gvb_new(gvb *b, gv_opcode code, int n, gv_value *const *in) {
  for (int i = 0; i < n; i++)
    if (!in[i]) return NULL;
  gv_op *o = gv_op_new(b->m, code, n, in, 1);
  gv_op_set_loc(b->m, o, b->loc, NULL);
  return o;
}

static inline gv_value *gvb_op(gvb *b, gv_opcode code, int n, gv_value *const *in) {
  gv_op *o = gvb_new(b, code, n, in);
  return o ? gvb_fin(b, o) : NULL;
}

static inline gv_value *gvb_un(gvb *b, gv_opcode code, gv_value *x) { return gvb_op(b, code, 1, &x); }

static inline gv_value *gvb_bin(gvb *b, gv_opcode code, gv_value *x, gv_value *y) {
  gv_value *in[2] = {x, y};
  return gvb_op(b, code, 2, in);
}

/* A rank-0 constant. */
static inline gv_value *gvb_cst(gvb *b, gv_dtype dt, double v) {
  gv_tensor *t = gv_tensor_new(b->m->arena, gv_type_make(dt, 0, NULL));
  gv_tensor_set_f(t, 0, v);
  gv_op *o = gv_constant_new(b->m, t);
  gv_op_set_loc(b->m, o, b->loc, NULL);
  return gvb_fin(b, o);
}

/* Zeros of type t (a scalar constant expanded). */
static inline gv_value *gvb_zeros(gvb *b, const gv_type *t) {
  gv_value *z = gvb_cst(b, t->dtype, 0.0);
  if (!z || t->rank == 0) return z;
  gv_op *o = gvb_new(b, GV_OP_EXPAND, 1, &z);
  if (!o) return NULL;
  o->res[0]->type = *t;
  return gvb_fin(b, o);
}

/* Loss scaling (--loss-scale; passes/autodiff.c scales the seed,
 * passes/optimizer.c unscales): the scale this step uses. s: the dynamic
 * scale's state argument (opt.loss_scale), whose zeros (a fresh state)
 * stand for init; NULL: the static scale init. */
static inline gv_value *gvb_loss_scale(gvb *b, gv_value *s, gv_dtype dt, double init) {
  if (!s) return gvb_cst(b, dt, init);
  gv_value *fresh = gvb_bin(b, GV_OP_EQUAL, s, gvb_cst(b, dt, 0.0));
  gv_value *in[3] = {fresh, gvb_cst(b, dt, init), s};
  return gvb_op(b, GV_OP_WHERE, 3, in);
}

/* The dynamic loss scale's state argument (created by autodiff, a state
 * argument from then on), or NULL. */
static inline gv_value *gvb_loss_scale_arg(const gv_func *f) {
  for (int i = 0; i < f->body->nargs; i++)
    if (f->arg_names[i] && !strcmp(f->arg_names[i], "opt.loss_scale")) return f->body->args[i];
  return NULL;
}

#endif
