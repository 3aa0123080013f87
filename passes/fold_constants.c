/* fold_constants.c — constant folding and static forms.
 *
 * Sweeps in program order (taken If regions are spliced in place and then
 * swept too), repeated with shape-infer in between until a sweep changes
 * nothing (gv_pass_fold_constants, at most FOLD_MAX_ROUNDS). An op whose
 * operands are all galv.constant results, or a galv.shape whose sliced dims
 * are known, is evaluated (gv_eval_op, after
 * re-running gv_infer_op with the constant values) and replaced by
 * galv.constant ops carrying the folded op's location, so later errors still
 * name the ONNX node. Because the sweep is in program order, a folded result
 * is already a constant when its users are reached: whole shape chains fold
 * in one sweep. Then the run-time operand forms become the static forms of
 * docs/ops.md (reshape/expand lose the shape operand; slice, tile and trilu
 * take attributes), no-op casts/reshapes/expands disappear, a galv.if
 * with a constant condition is replaced by its taken branch, and a
 * galv.matmul (an ONNX MatMul the importer could not map for want of ranks,
 * or with broadcast batch dims) becomes a dot once its types are static.
 *
 * Limit: a result with more than FOLD_MAX_ELEMS (1 << 20) elements is not
 * materialised (the op stays; only its run-time form may become static), so
 * that a huge mask or ConstantOfShape does not bloat the IR text and memory;
 * such a ConstantOfShape becomes galv.expand of its one-element value.
 *
 * It must never: evaluate an op with a non-constant operand, fold a
 * terminator or an op that is not GV_PURE, leave a galv.if whose condition is
 * not a compile-time constant, a galv.matmul without operand ranks or any
 * op with an unranked operand at the fixed point (each is an error naming
 * the node, raised only there: an earlier sweep's stuck op may resolve
 * once shape-infer has typed that sweep's constants; later passes and
 * codegen have no control flow and need ranks), or crash on malformed
 * operands (bad slice/tile/trilu operands are one-line errors). Dead inputs of folded
 * ops are left for dce.
 */
#include "../ir/attention.h"
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_MAX_ELEMS ((int64_t)1 << 20)

typedef struct {
  gv_module *m;
  gv_value **repl; /* by value id: the value that replaces it, or NULL */
  int n, cap;
  int changes;       /* rewrites in this sweep (folds, static forms, splices) */
  const gv_op *stuck; /* the first op that needs a fact no sweep gave yet */
  const char *why;    /* its error, raised at the fixed point */
} fold_ctx;

/* An op that cannot be handled yet: a later round (after shape-infer has
 * typed what this sweep folded) may still resolve it; at the fixed point it
 * is the error. */
static void stuck(fold_ctx *c, const gv_op *op, const char *why) {
  if (!c->stuck) c->stuck = op, c->why = why;
}

/* ---------------------------------------------------------------- value map */

static int track(fold_ctx *c, gv_value *v) {
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 1024;
    gv_value **p = realloc(c->repl, (size_t)cap * sizeof *p);
    if (!p) return gv_error(c->m, "out of memory in fold-constants");
    c->repl = p;
    c->cap = cap;
  }
  v->id = c->n;
  c->repl[c->n++] = NULL;
  return 0;
}

static int number_block(fold_ctx *c, gv_block *b) {
  for (int i = 0; i < b->nargs; i++)
    if (track(c, b->args[i])) return -1;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++)
      if (track(c, op->res[i])) return -1;
    for (int r = 0; r < op->nregions; r++)
      if (number_block(c, op->regions[r])) return -1;
  }
  return 0;
}

/* Follows replacements: a use is rewritten only when its op is reached, so
 * chains (if result -> yielded value -> folded constant) resolve lazily. */
static gv_value *resolve(const fold_ctx *c, gv_value *v) {
  for (int guard = 0; v && v->id >= 0 && v->id < c->n && c->repl[v->id] && guard < 1 << 20; guard++)
    v = c->repl[v->id];
  return v;
}

static void replace(fold_ctx *c, gv_value *from, gv_value *to) {
  if (from->id >= 0 && from->id < c->n && from != to) c->repl[from->id] = to;
}

static const gv_tensor *const_of(const gv_value *v) {
  if (!v || !v->def || v->def->code != GV_OP_CONSTANT) return NULL;
  const gv_attr *a = gv_get_attr(v->def, "value");
  return a && a->kind == GV_ATTR_TENSOR ? a->u.t : NULL;
}

/* ---------------------------------------------------------------- folding */

/* galv.shape with start/end (ONNX Shape-15): foldable when the rank and the
 * selected dims are known, even if other dims are not. Returns the tensor or
 * NULL when not foldable. */
static gv_tensor *fold_shape(gv_module *m, const gv_op *op) {
  const gv_type *t = &op->opnds[0]->type;
  if (t->rank < 0) return NULL;
  int64_t r = t->rank;
  int64_t s = gv_get_int(op, "start", 0), e = gv_get_int(op, "end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  if (e < s) e = s;
  for (int64_t i = s; i < e; i++)
    if (t->dims[i] < 0) return NULL;
  int64_t n = e - s;
  gv_tensor *out = gv_tensor_new(m->arena, gv_type_make(GV_DT_I64, 1, &n));
  for (int64_t i = s; i < e; i++) gv_tensor_set_i(out, i - s, t->dims[i]);
  return out;
}

/* Replaces op's results by constants inserted before op and unlinks op.
 * The constants take op's location and value names. */
static int materialise(fold_ctx *c, gv_op *op, gv_tensor **out) {
  for (int i = 0; i < op->nres; i++) {
    gv_op *k = gv_constant_new(c->m, out[i]);
    k->loc = op->loc;
    k->onnx_op = op->onnx_op;
    k->res[0]->name = op->res[i]->name;
    gv_insert_before(op, k);
    if (track(c, k->res[0])) return -1;
    replace(c, op->res[i], k->res[0]);
  }
  gv_op_unlink(op);
  c->changes++;
  return 0;
}

/* Returns 1 when op was folded (and unlinked), 0 when it stays, -1 on error. */
static int try_fold(fold_ctx *c, gv_op *op) {
  gv_module *m = c->m;
  unsigned fl = gv_ops[op->code].flags;
  if (op->code == GV_OP_CONSTANT || !(fl & GV_PURE) || (fl & GV_TERMINATOR) || op->nregions || op->nres <= 0)
    return 0;
  if (op->code == GV_OP_DROPOUT || gv_attn_dropout(op)) return 0; /* its value depends on the step (runtime/galv_rng.h) */
  if (op->code == GV_OP_SHAPE && op->nopnds == 1 && !const_of(op->opnds[0])) {
    gv_tensor *t = fold_shape(m, op);
    if (!t) return 0;
    return materialise(c, op, &t) ? -1 : 1;
  }
  if (op->nopnds == 0) return 0;
  for (int i = 0; i < op->nopnds; i++)
    if (!const_of(op->opnds[i])) return 0;

  const gv_tensor **vals = calloc((size_t)op->nopnds, sizeof *vals);
  gv_tensor **out = calloc((size_t)op->nres, sizeof *out);
  int rc = 0;
  if (!vals || !out) {
    rc = gv_error(m, "out of memory in fold-constants");
    goto done;
  }
  for (int i = 0; i < op->nopnds; i++) vals[i] = const_of(op->opnds[i]);
  /* Shape-infer set the result types already; inferring again with the
   * values makes value-dependent shapes (range, constant_of_shape, reshape)
   * static even when the pass runs on its own (galv-opt). */
  if (gv_infer_op(m, op, vals)) {
    rc = -1;
    goto done;
  }
  for (int i = 0; i < op->nres; i++) {
    int64_t n = gv_type_numel(&op->res[i]->type);
    if (n < 0 || n > FOLD_MAX_ELEMS) goto done; /* not static, or too big to materialise */
  }
  if (gv_eval_op(m, op, vals, out)) {
    rc = -1;
    goto done;
  }
  for (int i = 0; i < op->nres; i++) {
    if (!out[i] || !gv_type_equal(&out[i]->type, &op->res[i]->type)) {
      rc = gv_error_op(m, op, "fold-constants: evaluated result %d does not match its inferred type", i);
      goto done;
    }
  }
  rc = materialise(c, op, out) ? -1 : 1;
done:
  free(vals);
  free(out);
  return rc;
}

/* ---------------------------------------------------------------- static forms */

static int64_t *tensor_ints(gv_module *m, const gv_tensor *t, int64_t *n) {
  *n = gv_tensor_numel(t);
  if (*n < 0) *n = 0;
  int64_t *v = gv_alloc(m->arena, (size_t)(*n ? *n : 1) * sizeof *v);
  for (int64_t i = 0; i < *n; i++) v[i] = gv_tensor_get_i(t, i);
  return v;
}

/* Drops op when its single result equals its first operand (same static
 * type): the value passes through. */
static void drop_identity(fold_ctx *c, gv_op *op) {
  gv_value *x = op->opnds[0], *y = op->res[0];
  if (!gv_type_is_static(&y->type) || !gv_type_equal(&x->type, &y->type)) return;
  replace(c, y, x);
  gv_op_unlink(op);
  c->changes++;
}

/* Writes normalised slice attributes (axes non-negative, all four present)
 * from n-element starts/ends and optional axes/steps. */
static int set_slice_attrs(gv_module *m, gv_op *op, int64_t n, const int64_t *starts, const int64_t *ends,
                           const int64_t *axes_in, const int64_t *steps_in) {
  int rank = op->opnds[0]->type.rank;
  int64_t *axes = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof *axes);
  int64_t *steps = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof *steps);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = axes_in ? axes_in[i] : i;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank)
      return gv_error_op(m, op, "slice axis %lld out of range for rank %d", (long long)(axes_in ? axes_in[i] : i),
                         rank);
    for (int64_t j = 0; j < i; j++)
      if (axes[j] == a) return gv_error_op(m, op, "slice axis %lld repeated", (long long)a);
    axes[i] = a;
    steps[i] = steps_in ? steps_in[i] : 1;
    if (steps[i] == 0) return gv_error_op(m, op, "slice step must not be 0");
  }
  gv_set_ints(m, op, "starts", (int)n, starts);
  gv_set_ints(m, op, "ends", (int)n, ends);
  gv_set_ints(m, op, "axes", (int)n, axes);
  gv_set_ints(m, op, "steps", (int)n, steps);
  return 0;
}

static int static_slice(fold_ctx *c, gv_op *op) {
  gv_module *m = c->m;
  if (op->opnds[0]->type.rank < 0) return 0; /* negative axes cannot be normalised yet */
  if (op->nopnds == 1) {
    /* Already static; complete missing axes/steps and normalise axes. */
    const int64_t *st, *en, *ax, *sp;
    int ns = gv_get_ints(op, "starts", &st), ne = gv_get_ints(op, "ends", &en);
    int na = gv_get_ints(op, "axes", &ax), np = gv_get_ints(op, "steps", &sp);
    if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (np >= 0 && np != ns)) return 0;
    return set_slice_attrs(m, op, ns, st, en, na >= 0 ? ax : NULL, np >= 0 ? sp : NULL);
  }
  if (op->nopnds < 3) return 0;
  for (int i = 1; i < op->nopnds; i++)
    if (!const_of(op->opnds[i])) return 0;
  int64_t n[4] = {0, 0, 0, 0};
  int64_t *v[4] = {NULL, NULL, NULL, NULL};
  for (int i = 1; i < op->nopnds && i <= 4; i++) v[i - 1] = tensor_ints(m, const_of(op->opnds[i]), &n[i - 1]);
  for (int i = 1; i < 4; i++)
    if (v[i] && n[i] != n[0])
      return gv_error_op(m, op, "slice starts, ends, axes and steps must have the same length (%lld vs %lld)",
                         (long long)n[0], (long long)n[i]);
  if (n[0] > GV_MAX_RANK) return gv_error_op(m, op, "slice has %lld axes, more than rank allows", (long long)n[0]);
  if (set_slice_attrs(m, op, n[0], v[0], v[1], v[2], v[3])) return -1;
  gv_op_set_operands(m, op, 1, op->opnds), c->changes++;
  return 0;
}

static int lower_matmul(fold_ctx *c, gv_op *op);
static gv_value *add_before(fold_ctx *c, gv_op *at, gv_opcode code, int n, gv_value *const *opnds, gv_type t);

/* A galv.constant_of_shape with a constant shape whose result is over
 * FOLD_MAX_ELEMS (a causal mask at seq > 1024) becomes galv.expand of its
 * one-element value (a constant of one element): no target has a kernel of
 * its own for it, every target runs a static expand (a copy with stride 0). */
static int static_fill(fold_ctx *c, gv_op *op) {
  gv_module *m = c->m;
  if (op->nopnds != 1 || !const_of(op->opnds[0]) || !gv_type_is_static(&op->res[0]->type)) return 0;
  const gv_attr *va = gv_get_attr(op, "value");
  gv_tensor *v;
  if (va && va->kind == GV_ATTR_TENSOR && va->u.t) {
    if (va->u.t->type.dtype != op->res[0]->type.dtype || gv_tensor_numel(va->u.t) != 1)
      return gv_error_op(m, op, "constant_of_shape value does not match the result dtype");
    v = va->u.t;
  } else { /* ONNX's default: a float zero */
    int64_t one = 1;
    v = gv_tensor_new(m->arena, gv_type_make(op->res[0]->type.dtype, 1, &one));
    if (!v) return gv_error(m, "out of memory in fold-constants");
  }
  gv_op *k = gv_constant_new(m, v);
  k->loc = op->loc;
  k->onnx_op = op->onnx_op;
  gv_insert_before(op, k);
  if (track(c, k->res[0])) return -1;
  gv_value *e = add_before(c, op, GV_OP_EXPAND, 1, &k->res[0], op->res[0]->type);
  if (!e) return -1;
  e->name = op->res[0]->name;
  replace(c, op->res[0], e);
  gv_op_unlink(op);
  c->changes++;
  return 0;
}

/* Rewrites op into its static form where its extra operands are constant and
 * removes it when it became an identity. Returns -1 on error. */
static int static_form(fold_ctx *c, gv_op *op) {
  gv_module *m = c->m;
  switch (op->code) {
  case GV_OP_RESHAPE:
  case GV_OP_EXPAND:
    if (op->nopnds == 2 && const_of(op->opnds[1])) {
      if (!gv_type_is_static(&op->res[0]->type)) {
        const gv_tensor *vals[2] = {const_of(op->opnds[0]), const_of(op->opnds[1])};
        if (gv_infer_op(m, op, vals)) return -1;
      }
      if (!gv_type_is_static(&op->res[0]->type)) return 0; /* input dims still unknown */
      gv_op_set_operands(m, op, 1, op->opnds), c->changes++;
    }
    if (op->nopnds == 1) drop_identity(c, op);
    return 0;
  case GV_OP_SLICE:
    return static_slice(c, op);
  case GV_OP_TILE:
    if (op->nopnds == 2 && const_of(op->opnds[1])) {
      int64_t n;
      int64_t *rep = tensor_ints(m, const_of(op->opnds[1]), &n);
      if (n > GV_MAX_RANK) return gv_error_op(m, op, "tile repeats has %lld entries", (long long)n);
      for (int64_t i = 0; i < n; i++)
        if (rep[i] < 0) return gv_error_op(m, op, "tile repeats must not be negative");
      gv_set_ints(m, op, "repeats", (int)n, rep);
      gv_op_set_operands(m, op, 1, op->opnds), c->changes++;
    }
    return 0;
  case GV_OP_MATMUL:
    return lower_matmul(c, op);
  case GV_OP_TRILU:
    if (op->nopnds == 2 && const_of(op->opnds[1])) {
      const gv_tensor *k = const_of(op->opnds[1]);
      if (gv_tensor_numel(k) != 1) return gv_error_op(m, op, "trilu k must have one element");
      gv_set_int(m, op, "k", gv_tensor_get_i(k, 0));
      gv_op_set_operands(m, op, 1, op->opnds), c->changes++;
    }
    return 0;
  case GV_OP_CONSTANT_OF_SHAPE: /* too big to fold (try_fold came first): its value broadcast, a static expand */
    return static_fill(c, op);
  case GV_OP_CAST: {
    const gv_attr *to = gv_get_attr(op, "to");
    if (to && to->kind == GV_ATTR_TYPE && to->u.ty == op->opnds[0]->type.dtype &&
        gv_type_equal(&op->opnds[0]->type, &op->res[0]->type))
      drop_identity(c, op);
    return 0;
  }
  default:
    return 0;
  }
}

/* ---------------------------------------------------------------- matmul */

/* A new op before `at` with at's location; its result type is t. */
static gv_value *add_before(fold_ctx *c, gv_op *at, gv_opcode code, int n, gv_value *const *opnds, gv_type t) {
  gv_op *o = gv_op_new(c->m, code, n, opnds, 1);
  o->loc = at->loc;
  o->onnx_op = at->onnx_op;
  o->res[0]->type = t;
  gv_insert_before(at, o);
  return track(c, o->res[0]) ? NULL : o->res[0];
}

/* galv.matmul -> dot once both operand types are static: broadcast batch
 * dims become static expands of the operand that has a 1 (or lacks the
 * dim), a 2-D lhs against a batched rhs a dot followed by the transpose
 * that puts the batch first. An operand still unranked here is the one
 * error: nothing later can give it a rank. */
static int lower_matmul(fold_ctx *c, gv_op *op) {
  gv_module *m = c->m;
  gv_value *l = op->opnds[0], *r = op->opnds[1];
  if (l->type.rank < 1 || r->type.rank < 1) {
    char *why = gv_alloc(m->arena, 120);
    snprintf(why, 120, "cannot determine the operand ranks of MatMul (%d, %d) after shape inference and folding",
             l->type.rank, r->type.rank);
    stuck(c, op, why);
    return 0;
  }
  if (!gv_type_is_static(&l->type) || !gv_type_is_static(&r->type) || !gv_type_is_static(&op->res[0]->type))
    return 0; /* dynamic dims: the dims are bound later (--batch / --seq) */
  int lr = l->type.rank, rr = r->type.rank;
  const gv_type *y = &op->res[0]->type;
  int64_t lb[GV_MAX_RANK], rb[GV_MAX_RANK], lc = lr - 1, rc = rr == 1 ? 0 : rr - 2;
  int nb = 0;
  gv_value *ops[2] = {l, r};
  if (lr >= 3 && rr >= 3) {
    nb = y->rank - 2;
    for (int side = 0; side < 2; side++) {
      const gv_type *t = &ops[side]->type;
      gv_type want = *t;
      want.rank = nb + 2;
      for (int i = 0; i < nb; i++) want.dims[i] = y->dims[i];
      want.dims[nb] = t->dims[t->rank - 2];
      want.dims[nb + 1] = t->dims[t->rank - 1];
      if (!gv_type_equal(&want, t) && !(ops[side] = add_before(c, op, GV_OP_EXPAND, 1, &ops[side], want))) return -1;
    }
    for (int i = 0; i < nb; i++) lb[i] = rb[i] = i;
    lc = nb + 1;
    rc = nb;
  }
  gv_type dt = *y;
  bool perm = lr == 2 && rr >= 3;
  if (perm) { /* dot gives [M, batch.., N] */
    dt.dims[0] = y->dims[rr - 2];
    for (int i = 0; i < rr - 2; i++) dt.dims[1 + i] = y->dims[i];
  }
  gv_op *d = gv_op_new(m, GV_OP_DOT, 2, ops, 1);
  d->loc = op->loc;
  d->onnx_op = op->onnx_op;
  gv_set_ints(m, d, "lhs_batch", nb, lb);
  gv_set_ints(m, d, "rhs_batch", nb, rb);
  gv_set_ints(m, d, "lhs_contract", 1, &lc);
  gv_set_ints(m, d, "rhs_contract", 1, &rc);
  gv_insert_before(op, d);
  if (gv_infer_op(m, d, NULL) || track(c, d->res[0])) return -1;
  if (!gv_type_equal(&d->res[0]->type, perm ? &dt : y))
    return gv_error_op(m, op, "fold-constants: matmul rewritten into dot has another type");
  gv_value *v = d->res[0];
  if (perm) {
    int64_t p[GV_MAX_RANK];
    for (int i = 0; i < rr - 2; i++) p[i] = 1 + i;
    p[rr - 2] = 0;
    p[rr - 1] = rr - 1;
    gv_op *t = gv_op_new(m, GV_OP_TRANSPOSE, 1, &v, 1);
    t->loc = op->loc;
    t->onnx_op = op->onnx_op;
    gv_set_ints(m, t, "perm", rr, p);
    t->res[0]->type = *y;
    gv_insert_before(op, t);
    if (track(c, t->res[0])) return -1;
    v = t->res[0];
  }
  v->name = op->res[0]->name;
  replace(c, op->res[0], v);
  gv_op_unlink(op);
  c->changes++;
  return 0;
}

/* ---------------------------------------------------------------- if */

/* Replaces a galv.if with a constant condition by the ops of its taken
 * region (moved before it); its results become the yielded values. *first is
 * the first moved op (NULL when the region held only the yield). */
static int splice_if(fold_ctx *c, gv_op *op, gv_op **first) {
  gv_module *m = c->m;
  *first = NULL;
  const gv_tensor *cond = op->nopnds == 1 ? const_of(op->opnds[0]) : NULL;
  if (!cond) {
    stuck(c, op, "If condition is not a compile-time constant");
    return 0;
  }
  if (gv_tensor_numel(cond) != 1)
    return gv_error_op(m, op, "If condition must have exactly one element, has %lld",
                       (long long)gv_tensor_numel(cond));
  if (op->nregions != 2) return gv_error_op(m, op, "If must have two regions, has %d", op->nregions);
  bool taken = gv_dtype_is_float(cond->type.dtype) ? gv_tensor_get_f(cond, 0) != 0 : gv_tensor_get_i(cond, 0) != 0;
  gv_block *b = op->regions[taken ? 0 : 1];
  gv_op *y = gv_block_terminator(b);
  if (!y || y->code != GV_OP_YIELD) return gv_error_op(m, op, "If region does not end in galv.yield");
  if (y->nopnds != op->nres)
    return gv_error_op(m, op, "If branch yields %d values for %d results", y->nopnds, op->nres);
  if (b->nargs) return gv_error_op(m, op, "If region must not take arguments");
  for (int i = 0; i < op->nres; i++) replace(c, op->res[i], y->opnds[i]);
  gv_op *next;
  for (gv_op *o = b->first; o && o != y; o = next) {
    next = o->next;
    gv_op_unlink(o);
    gv_insert_before(op, o);
    if (!*first) *first = o;
  }
  gv_op_unlink(op);
  c->changes++;
  return 0;
}

/* ---------------------------------------------------------------- sweep */

/* An operand whose rank no sweep found: its rank depends on run-time
 * values, which a static program cannot have. */
static void check_ranked(fold_ctx *c, const gv_op *op) {
  for (int i = 0; i < op->nopnds && !c->stuck; i++)
    if (op->opnds[i]->type.rank < 0) {
      char *why = gv_alloc(c->m->arena, 160);
      snprintf(why, 160, "operand %d of galv.%s stays unranked after shape inference and folding (its rank depends on "
                         "run-time values)", i, gv_ops[op->code].name);
      stuck(c, op, why);
    }
}

static int fold_block(fold_ctx *c, gv_block *b) {
  gv_op *next;
  for (gv_op *op = b->first; op; op = next) {
    next = op->next;
    for (int i = 0; i < op->nopnds; i++) op->opnds[i] = resolve(c, op->opnds[i]);
    if (op->code == GV_OP_IF) {
      gv_op *first;
      int before = c->changes;
      if (splice_if(c, op, &first)) return -1;
      if (c->changes != before) {
        if (first) next = first; /* sweep the spliced ops next */
        continue;
      }
    }
    for (int r = 0; r < op->nregions; r++)
      if (fold_block(c, op->regions[r])) return -1;
    if (op->code == GV_OP_MATMUL) { /* its own error names the ranks */
      if (static_form(c, op)) return -1;
      continue;
    }
    check_ranked(c, op);
    int rc = try_fold(c, op);
    if (rc < 0) return -1;
    if (rc == 0 && static_form(c, op)) return -1;
  }
  return 0;
}

/* Sweeps until one changes nothing: after a sweep that rewrote something,
 * shape-infer types the IR again with the new constants (an If spliced with
 * a branch of another rank, a reshape whose target folded, an expand of a
 * ConstantOfShape), which may let the next sweep fold or lower more. The
 * first op still stuck at that fixed point is the error. */
enum { FOLD_MAX_ROUNDS = 64 };

int gv_pass_fold_constants(gv_module *m) {
  if (!m || !m->main || !m->main->body) return 0;
  for (int round = 0;; round++) {
    fold_ctx c = {.m = m};
    int rc = number_block(&c, m->main->body);
    if (!rc) rc = fold_block(&c, m->main->body);
    free(c.repl);
    if (rc) return rc;
    if (!c.changes || round + 1 == FOLD_MAX_ROUNDS) {
      if (c.stuck) return gv_error_op(m, c.stuck, "%s", c.why);
      return 0;
    }
    if (gv_pass_shape_infer(m)) return -1;
  }
}
