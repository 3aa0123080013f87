/* grad.c — the reverse-mode gradient rules named in ir/ops.def's grad column.
 *
 * A rule receives a forward op, the gradients of its results (dres[i], NULL
 * when no gradient reaches result i) and which operands need a gradient
 * (need[i]); it builds the operands' gradients as ordinary IR ops inserted
 * before `before` and stores them in dopnds[i] (left NULL: no gradient).
 * Gradients have exactly the operand's type: broadcasting is undone with
 * reduce_sum + reshape. Rules only build IR, so the backward graph is
 * sharded, fused, dumped and evaluated like any other. Every new op carries
 * the forward node's name plus "/grad" so errors still name the node.
 * passes/autodiff.c drives them; docs/autodiff.md lists each rule. */
#include <math.h>
#include <string.h>

#include "shape_rules.h"

typedef struct {
  gv_module *m;
  gv_op *op;      /* forward op */
  gv_op *before;  /* insertion point */
  const char *loc;
  int err;
} gctx;

static gv_op *newop(gctx *c, gv_opcode code, int n, gv_value *const *in) {
  if (c->err) return NULL;
  for (int i = 0; i < n; i++)
    if (!in[i]) {
      c->err = 1;
      return NULL;
    }
  gv_op *o = gv_op_new(c->m, code, n, in, 1);
  gv_op_set_loc(c->m, o, c->loc, c->op->onnx_op);
  return o;
}

/* Infers the op's type and links it in; returns its result or NULL. */
static gv_value *fin(gctx *c, gv_op *o) {
  if (!o) return NULL;
  const gv_tensor **vals = gv_alloc(c->m->arena, (size_t)(o->nopnds + 1) * sizeof *vals);
  if (gv_infer_op(c->m, o, vals)) {
    c->err = 1;
    return NULL;
  }
  gv_insert_before(c->before, o);
  return o->res[0];
}

static gv_value *un(gctx *c, gv_opcode code, gv_value *x) { return fin(c, newop(c, code, 1, &x)); }

static gv_value *bin(gctx *c, gv_opcode code, gv_value *a, gv_value *b) {
  gv_value *in[2] = {a, b};
  return fin(c, newop(c, code, 2, in));
}

static gv_value *sel(gctx *c, gv_value *cond, gv_value *a, gv_value *b) {
  gv_value *in[3] = {cond, a, b};
  return fin(c, newop(c, GV_OP_WHERE, 3, in));
}

/* A rank-0 constant of dtype dt. */
static gv_value *cst(gctx *c, gv_dtype dt, double v) {
  if (c->err) return NULL;
  gv_tensor *t = gv_tensor_new(c->m->arena, gv_type_make(dt, 0, NULL));
  gv_tensor_set_f(t, 0, v);
  gv_op *o = gv_constant_new(c->m, t);
  gv_op_set_loc(c->m, o, c->loc, c->op->onnx_op);
  return fin(c, o);
}

static gv_value *reshape_to(gctx *c, gv_value *x, const gv_type *t) {
  if (x && gv_type_equal(&x->type, t)) return x;
  gv_op *o = newop(c, GV_OP_RESHAPE, 1, &x);
  if (o) {
    o->res[0]->type = *t;
    o->res[0]->type.dtype = x->type.dtype;
  }
  return fin(c, o);
}

static gv_value *expand_to(gctx *c, gv_value *x, const gv_type *t) {
  if (x && gv_type_equal(&x->type, t)) return x;
  gv_op *o = newop(c, GV_OP_EXPAND, 1, &x);
  if (o) {
    o->res[0]->type = *t;
    o->res[0]->type.dtype = x->type.dtype;
  }
  return fin(c, o);
}

static gv_value *zeros(gctx *c, const gv_type *t) {
  gv_value *z = cst(c, t->dtype, 0.0);
  return t->rank == 0 ? z : expand_to(c, z, t);
}

static gv_value *rsum(gctx *c, gv_opcode code, gv_value *x, int n, const int64_t *axes, int keep) {
  gv_op *o = newop(c, code, 1, &x);
  if (o) {
    gv_set_ints(c->m, o, "axes", n, axes);
    gv_set_int(c->m, o, "keepdims", keep);
  }
  return fin(c, o);
}

static gv_value *transpose(gctx *c, gv_value *x, int n, const int64_t *perm) {
  bool id = true;
  for (int i = 0; i < n; i++) id = id && perm[i] == i;
  if (id) return x;
  gv_op *o = newop(c, GV_OP_TRANSPOSE, 1, &x);
  if (o) gv_set_ints(c->m, o, "perm", n, perm);
  return fin(c, o);
}

/* Sums g (of a broadcast result's shape) down to type t. */
static gv_value *unbroadcast(gctx *c, gv_value *g, const gv_type *t) {
  if (!g || gv_type_equal(&g->type, t)) return g;
  int R = g->type.rank, r = t->rank, n = 0;
  int64_t axes[GV_MAX_RANK];
  if (R < r) {
    c->err = 1;
    gv_error_op(c->m, c->op, "gradient: cannot reduce rank %d to rank %d", R, r);
    return NULL;
  }
  for (int d = 0; d < R; d++)
    if (d < R - r || (t->dims[d - (R - r)] == 1 && g->type.dims[d] != 1)) axes[n++] = d;
  gv_value *s = n ? rsum(c, GV_OP_REDUCE_SUM, g, n, axes, 1) : g;
  return reshape_to(c, s, t);
}

static int finish(gctx *c) { return c->err ? -1 : 0; }

static gctx begin(gv_module *m, gv_op *op, gv_op *before) {
  gctx c = {m, op, before, NULL, 0};
  size_t n = strlen(op->loc ? op->loc : "");
  char *s = gv_alloc(m->arena, n + 6);
  memcpy(s, op->loc ? op->loc : "", n);
  memcpy(s + n, "/grad", 6);
  c.loc = s;
  return c;
}

/* ---------------------------------------------------------------- none, missing */

int gv_grad_none(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  (void)m, (void)op, (void)dres, (void)need, (void)dopnds, (void)before;
  return 0;
}

int gv_grad_missing(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  (void)dres, (void)need, (void)dopnds, (void)before;
  return gv_error_op(m, op, "no gradient rule for galv.%s", gv_ops[op->code].name);
}

/* ---------------------------------------------------------------- elementwise */

int gv_grad_cast(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  gv_dtype from = op->opnds[0]->type.dtype;
  if (!need[0] || !dres[0] || !gv_dtype_is_float(from) || !gv_dtype_is_float(op->res[0]->type.dtype)) return 0;
  gctx c = begin(m, op, before);
  gv_value *g = dres[0];
  gv_op *o = newop(&c, GV_OP_CAST, 1, &g);
  if (o) gv_set_type(m, o, "to", from);
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

/* dropout: dy through the same mask and scale. The gradient is a galv.dropout
 * of dy with the forward's attributes (and offsets): it regenerates the mask
 * from the global coordinates (runtime/galv_rng.h), nothing is stored. */
int gv_grad_dropout(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[2] = {dres[0], op->nopnds > 1 ? op->opnds[1] : NULL};
  gv_op *o = newop(&c, GV_OP_DROPOUT, op->nopnds, in);
  static const char *const mask_attrs[] = {"acc", "id", "ratio", "rows", "seed"}; /* the mask's, not the op's placement */
  for (int i = 0; o && i < op->nattrs; i++)
    for (int k = 0; k < 5; k++)
      if (!strcmp(op->attrs[i].name, mask_attrs[k])) gv_set_attr(m, o, &op->attrs[i]);
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

int gv_grad_unary(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *x = op->opnds[0], *y = op->res[0], *g = dres[0], *r = NULL;
  gv_dtype dt = x->type.dtype;
#define K(v) cst(&c, dt, (v))
  switch (op->code) {
  case GV_OP_NEG: r = un(&c, GV_OP_NEG, g); break;
  case GV_OP_ABS: r = sel(&c, bin(&c, GV_OP_LESS, x, K(0)), un(&c, GV_OP_NEG, g), g); break;
  case GV_OP_SQRT: r = bin(&c, GV_OP_DIV, bin(&c, GV_OP_MUL, g, K(0.5)), y); break;
  case GV_OP_RECIPROCAL: r = un(&c, GV_OP_NEG, bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_MUL, y, y))); break;
  case GV_OP_EXP: r = bin(&c, GV_OP_MUL, g, y); break;
  case GV_OP_LOG: r = bin(&c, GV_OP_DIV, g, x); break;
  case GV_OP_ERF:
    r = bin(&c, GV_OP_MUL, g,
            bin(&c, GV_OP_MUL, K(2.0 / sqrt(M_PI)), un(&c, GV_OP_EXP, un(&c, GV_OP_NEG, bin(&c, GV_OP_MUL, x, x)))));
    break;
  case GV_OP_TANH: r = bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_SUB, K(1), bin(&c, GV_OP_MUL, y, y))); break;
  case GV_OP_SIGMOID: r = bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_MUL, y, bin(&c, GV_OP_SUB, K(1), y))); break;
  case GV_OP_RELU: r = sel(&c, bin(&c, GV_OP_GREATER, x, K(0)), g, K(0)); break;
  case GV_OP_SIN: r = bin(&c, GV_OP_MUL, g, un(&c, GV_OP_COS, x)); break;
  case GV_OP_COS: r = un(&c, GV_OP_NEG, bin(&c, GV_OP_MUL, g, un(&c, GV_OP_SIN, x))); break;
  case GV_OP_SILU: {
    gv_value *s = un(&c, GV_OP_SIGMOID, x);
    gv_value *d = bin(&c, GV_OP_MUL, s, bin(&c, GV_OP_ADD, K(1), bin(&c, GV_OP_MUL, x, bin(&c, GV_OP_SUB, K(1), s))));
    r = bin(&c, GV_OP_MUL, g, d);
    break;
  }
  case GV_OP_GELU: {
    gv_value *d;
    if (strcmp(gv_get_str(op, "approximate", "none"), "tanh") == 0) {
      /* t = tanh(k(x + a x^3)); d = 0.5(1+t) + 0.5 x (1-t^2) k (1 + 3a x^2) */
      double k = sqrt(2.0 / M_PI), a = 0.044715;
      gv_value *x2 = bin(&c, GV_OP_MUL, x, x);
      gv_value *t = un(&c, GV_OP_TANH, bin(&c, GV_OP_MUL, K(k), bin(&c, GV_OP_MUL, x, bin(&c, GV_OP_ADD, K(1), bin(&c, GV_OP_MUL, K(a), x2)))));
      gv_value *lhs = bin(&c, GV_OP_MUL, K(0.5), bin(&c, GV_OP_ADD, K(1), t));
      gv_value *sech2 = bin(&c, GV_OP_SUB, K(1), bin(&c, GV_OP_MUL, t, t));
      gv_value *du = bin(&c, GV_OP_MUL, K(k), bin(&c, GV_OP_ADD, K(1), bin(&c, GV_OP_MUL, K(3 * a), x2)));
      d = bin(&c, GV_OP_ADD, lhs, bin(&c, GV_OP_MUL, bin(&c, GV_OP_MUL, K(0.5), x), bin(&c, GV_OP_MUL, sech2, du)));
    } else {
      /* Phi(x) + x phi(x) */
      gv_value *cdf = bin(&c, GV_OP_MUL, K(0.5), bin(&c, GV_OP_ADD, K(1), un(&c, GV_OP_ERF, bin(&c, GV_OP_MUL, x, K(M_SQRT1_2)))));
      gv_value *pdf = bin(&c, GV_OP_MUL, K(1.0 / sqrt(2.0 * M_PI)), un(&c, GV_OP_EXP, bin(&c, GV_OP_MUL, K(-0.5), bin(&c, GV_OP_MUL, x, x))));
      d = bin(&c, GV_OP_ADD, cdf, bin(&c, GV_OP_MUL, x, pdf));
    }
    r = bin(&c, GV_OP_MUL, g, d);
    break;
  }
  default: return gv_grad_missing(m, op, dres, need, dopnds, before);
  }
#undef K
  dopnds[0] = r;
  return finish(&c);
}

int gv_grad_binary(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *a = op->opnds[0], *b = op->opnds[1], *y = op->res[0], *g = dres[0], *ga = NULL, *gb = NULL;
  gv_dtype dt = y->type.dtype;
  switch (op->code) {
  case GV_OP_ADD: ga = g, gb = g; break;
  case GV_OP_SUB: ga = g, gb = need[1] ? un(&c, GV_OP_NEG, g) : NULL; break;
  case GV_OP_MUL:
    if (need[0]) ga = bin(&c, GV_OP_MUL, g, b);
    if (need[1]) gb = bin(&c, GV_OP_MUL, g, a);
    break;
  case GV_OP_DIV:
    ga = bin(&c, GV_OP_DIV, g, b);
    if (need[1]) gb = un(&c, GV_OP_NEG, bin(&c, GV_OP_MUL, ga, y));
    break;
  case GV_OP_POW:
    if (need[0]) ga = bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_MUL, b, bin(&c, GV_OP_POW, a, bin(&c, GV_OP_SUB, b, cst(&c, dt, 1)))));
    if (need[1]) gb = bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_MUL, y, un(&c, GV_OP_LOG, a)));
    break;
  case GV_OP_MOD: /* y = a - q b with q = floor or trunc(a / b), piecewise constant: dy/db = -q = (y - a) / b */
    ga = g;
    if (need[1]) gb = bin(&c, GV_OP_MUL, g, bin(&c, GV_OP_DIV, bin(&c, GV_OP_SUB, y, a), b));
    break;
  case GV_OP_MAX:
  case GV_OP_MIN: {
    gv_value *mask = bin(&c, op->code == GV_OP_MAX ? GV_OP_GREATER_EQUAL : GV_OP_LESS_EQUAL, a, b), *z = cst(&c, dt, 0);
    if (need[0]) ga = sel(&c, mask, g, z);
    if (need[1]) gb = sel(&c, mask, z, g);
    break;
  }
  default: return gv_grad_missing(m, op, dres, need, dopnds, before);
  }
  if (need[0]) dopnds[0] = unbroadcast(&c, ga, &a->type);
  if (need[1]) dopnds[1] = unbroadcast(&c, gb, &b->type);
  return finish(&c);
}

int gv_grad_where(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *z = cst(&c, op->res[0]->type.dtype, 0);
  if (need[1]) dopnds[1] = unbroadcast(&c, sel(&c, op->opnds[0], dres[0], z), &op->opnds[1]->type);
  if (need[2]) dopnds[2] = unbroadcast(&c, sel(&c, op->opnds[0], z, dres[0]), &op->opnds[2]->type);
  return finish(&c);
}

/* ---------------------------------------------------------------- data movement */

int gv_grad_reshape(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  dopnds[0] = reshape_to(&c, dres[0], &op->opnds[0]->type);
  return finish(&c);
}

int gv_grad_expand(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  dopnds[0] = unbroadcast(&c, dres[0], &op->opnds[0]->type);
  return finish(&c);
}

int gv_grad_transpose(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  int r = op->opnds[0]->type.rank;
  const int64_t *p;
  int64_t perm[GV_MAX_RANK], inv[GV_MAX_RANK];
  int n = gv_get_ints(op, "perm", &p);
  for (int i = 0; i < r; i++) perm[i] = n == r ? p[i] : r - 1 - i;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  dopnds[0] = transpose(&c, dres[0], r, inv);
  return finish(&c);
}

int gv_grad_slice(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  if (op->nopnds > 1) return gv_error_op(m, op, "gradient: slice with run-time bounds (run fold-constants first)");
  gctx c = begin(m, op, before);
  gv_op *o = newop(&c, GV_OP_SLICE_GRAD, 1, &dres[0]);
  if (o) {
    for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, o, &op->attrs[i]);
    gv_set_ints(m, o, "shape", op->opnds[0]->type.rank, op->opnds[0]->type.dims);
  }
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

int gv_grad_concat(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  int r = op->res[0]->type.rank, ax = gv_norm_axis(gv_get_int(op, "axis", 0), r);
  int64_t off = 0;
  for (int i = 0; i < op->nopnds; i++) {
    int64_t sz = op->opnds[i]->type.dims[ax];
    if (need[i]) {
      gv_op *o = newop(&c, GV_OP_SLICE, 1, &dres[0]);
      if (o) {
        int64_t s = off, e = off + sz, a = ax, st = 1;
        gv_set_ints(m, o, "starts", 1, &s);
        gv_set_ints(m, o, "ends", 1, &e);
        gv_set_ints(m, o, "axes", 1, &a);
        gv_set_ints(m, o, "steps", 1, &st);
      }
      dopnds[i] = fin(&c, o);
    }
    off += sz;
  }
  return finish(&c);
}

int gv_grad_split(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value **parts = gv_alloc(m->arena, (size_t)op->nres * sizeof *parts);
  bool any = false;
  for (int i = 0; i < op->nres; i++) {
    any = any || dres[i];
    parts[i] = dres[i] ? dres[i] : zeros(&c, &op->res[i]->type);
  }
  if (!any) return 0;
  gv_op *o = newop(&c, GV_OP_CONCAT, op->nres, parts);
  if (o) gv_set_int(m, o, "axis", gv_norm_axis(gv_get_int(op, "axis", 0), op->opnds[0]->type.rank));
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

int gv_grad_gather(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  const gv_type *dt = &op->opnds[0]->type;
  int ax = gv_norm_axis(gv_get_int(op, "axis", 0), dt->rank);
  gv_value *in[2] = {dres[0], op->opnds[1]};
  gv_op *o = newop(&c, GV_OP_GATHER_GRAD, 2, in);
  if (o) {
    gv_set_int(m, o, "axis", ax);
    gv_set_int(m, o, "dim", dt->dims[ax]);
  }
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

/* gather_nd: dy scatter-added into zeros of data's shape at the same tuples.
 * scatter_nd: data's gradient is dy with the scattered rows zeroed (none) or
 * dy itself (add); the updates' is dy gathered at the tuples. The indices
 * (integers) get none. */
int gv_grad_gather_nd(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds,
                      gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[3] = {zeros(&c, &op->opnds[0]->type), op->opnds[1], dres[0]};
  gv_op *o = newop(&c, GV_OP_SCATTER_ND, 3, in);
  if (o) gv_set_str(m, o, "reduction", "add");
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

int gv_grad_scatter_nd(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds,
                       gv_op *before) {
  if (!dres[0]) return 0;
  if (gv_scatter_reduction(op) > 1 && (need[0] || need[2]))
    return gv_error_op(m, op, "gradient: scatter_nd with reduction '%s' has no gradient rule (none and add have)",
                       gv_get_str(op, "reduction", "none"));
  gctx c = begin(m, op, before);
  bool add = strcmp(gv_get_str(op, "reduction", "none"), "add") == 0;
  if (need[0]) {
    if (add) dopnds[0] = dres[0];
    else {
      gv_value *in[3] = {dres[0], op->opnds[1], zeros(&c, &op->opnds[2]->type)};
      gv_op *o = newop(&c, GV_OP_SCATTER_ND, 3, in);
      if (o) gv_set_str(m, o, "reduction", "none");
      dopnds[0] = fin(&c, o);
    }
  }
  if (need[2]) dopnds[2] = bin(&c, GV_OP_GATHER_ND, dres[0], op->opnds[1]);
  return finish(&c);
}

/* gather_elements / scatter_elements: as gather_nd / scatter_nd, element by
 * element along the axis. */
static gv_value *elem_op(gctx *c, gv_opcode code, gv_value *a, gv_value *b, gv_value *u, const char *red) {
  gv_value *in[3] = {a, b, u};
  gv_op *o = newop(c, code, u ? 3 : 2, in);
  if (o) {
    gv_set_int(c->m, o, "axis", gv_norm_axis(gv_get_int(c->op, "axis", 0), c->op->opnds[0]->type.rank));
    if (red) gv_set_str(c->m, o, "reduction", red);
  }
  return fin(c, o);
}

int gv_grad_gather_elements(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds,
                            gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  dopnds[0] = elem_op(&c, GV_OP_SCATTER_ELEMENTS, zeros(&c, &op->opnds[0]->type), op->opnds[1], dres[0], "add");
  return finish(&c);
}

int gv_grad_scatter_elements(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds,
                             gv_op *before) {
  if (!dres[0]) return 0;
  if (gv_scatter_reduction(op) > 1 && (need[0] || need[2]))
    return gv_error_op(m, op, "gradient: scatter_elements with reduction '%s' has no gradient rule (none and add have)",
                       gv_get_str(op, "reduction", "none"));
  gctx c = begin(m, op, before);
  bool add = strcmp(gv_get_str(op, "reduction", "none"), "add") == 0;
  if (need[0])
    dopnds[0] = add ? dres[0]
                    : elem_op(&c, GV_OP_SCATTER_ELEMENTS, dres[0], op->opnds[1], zeros(&c, &op->opnds[2]->type), "none");
  if (need[2]) dopnds[2] = elem_op(&c, GV_OP_GATHER_ELEMENTS, dres[0], op->opnds[1], NULL, NULL);
  return finish(&c);
}

/* topk: the values' gradient scattered back into zeros at the indices
 * (result 1) along the axis; the k indices of a row are distinct, so add and
 * none agree, and add is the one the runtimes also run on the CUDA target.
 * The indices (an integer result) carry no gradient. */
int gv_grad_topk(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[3] = {zeros(&c, &op->opnds[0]->type), op->res[1], dres[0]};
  gv_op *o = newop(&c, GV_OP_SCATTER_ELEMENTS, 3, in);
  if (o) {
    gv_set_int(m, o, "axis", gv_norm_axis(gv_get_int(op, "axis", -1), op->opnds[0]->type.rank));
    gv_set_str(m, o, "reduction", "add");
  }
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

/* tile: view dy as [r0, d0, r1, d1, ...] (only dims with r > 1 split) and
 * sum over the repeat dims. */
int gv_grad_tile(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  if (op->nopnds > 1) return gv_error_op(m, op, "gradient: tile with run-time repeats (run fold-constants first)");
  gctx c = begin(m, op, before);
  const gv_type *xt = &op->opnds[0]->type;
  const int64_t *rep;
  int n = gv_get_ints(op, "repeats", &rep), k = 0, na = 0;
  if (n != xt->rank) return gv_error_op(m, op, "gradient: tile needs 'repeats' of rank length");
  gv_type v = gv_type_make(xt->dtype, 0, NULL);
  int64_t axes[GV_MAX_RANK];
  for (int d = 0; d < n; d++) {
    if (rep[d] != 1) {
      if (k + 2 > GV_MAX_RANK) return gv_error_op(m, op, "gradient: tile over too many dims");
      axes[na++] = k;
      v.dims[k++] = rep[d];
    }
    if (k + 1 > GV_MAX_RANK) return gv_error_op(m, op, "gradient: tile over too many dims");
    v.dims[k++] = xt->dims[d];
  }
  v.rank = k;
  gv_value *s = reshape_to(&c, dres[0], &v);
  if (na) s = rsum(&c, GV_OP_REDUCE_SUM, s, na, axes, 0);
  dopnds[0] = reshape_to(&c, s, xt);
  return finish(&c);
}

int gv_grad_trilu(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[2] = {dres[0], op->nopnds > 1 ? op->opnds[1] : NULL};
  gv_op *o = newop(&c, GV_OP_TRILU, op->nopnds, in);
  if (o)
    for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, o, &op->attrs[i]);
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

int gv_grad_cumsum(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_op *o = newop(&c, GV_OP_CUMSUM, 1, &dres[0]);
  if (o) {
    for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, o, &op->attrs[i]);
    gv_set_int(m, o, "reverse", !gv_get_int(op, "reverse", 0));
  }
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

/* ---------------------------------------------------------------- reductions */

/* Reduced dims of op (axes absent or empty: all); returns the keepdims type. */
static gv_type keep_type(const gv_op *op, bool *red, int64_t *count) {
  const gv_type *xt = &op->opnds[0]->type;
  const int64_t *ax;
  int n = gv_get_ints(op, "axes", &ax);
  gv_type t = *xt;
  *count = 1;
  for (int d = 0; d < xt->rank; d++) red[d] = n <= 0;
  for (int i = 0; i < n; i++) {
    int d = gv_norm_axis(ax[i], xt->rank);
    if (d >= 0) red[d] = true;
  }
  for (int d = 0; d < xt->rank; d++)
    if (red[d]) {
      *count *= xt->dims[d];
      t.dims[d] = 1;
    }
  return t;
}

int gv_grad_reduce(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  bool red[GV_MAX_RANK];
  int64_t count;
  gv_type kt = keep_type(op, red, &count);
  gv_value *x = op->opnds[0], *gk = reshape_to(&c, dres[0], &kt);
  gv_dtype dt = x->type.dtype;
  switch (op->code) {
  case GV_OP_REDUCE_SUM: dopnds[0] = expand_to(&c, gk, &x->type); break;
  case GV_OP_REDUCE_MEAN:
    dopnds[0] = expand_to(&c, bin(&c, GV_OP_MUL, gk, cst(&c, dt, count ? 1.0 / (double)count : 0.0)), &x->type);
    break;
  default: { /* max / min: the gradient goes to the elements equal to the extremum */
    gv_value *mask = bin(&c, GV_OP_EQUAL, x, reshape_to(&c, op->res[0], &kt));
    dopnds[0] = sel(&c, mask, gk, cst(&c, dt, 0));
    dopnds[0] = expand_to(&c, dopnds[0], &x->type);
  }
  }
  return finish(&c);
}

/* ---------------------------------------------------------------- normalisation */

int gv_grad_softmax(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *y = op->res[0], *g = dres[0];
  int64_t ax = gv_norm_axis(gv_get_int(op, "axis", -1), y->type.rank);
  if (op->code == GV_OP_SOFTMAX) { /* y (g - sum(g y)) */
    gv_value *s = rsum(&c, GV_OP_REDUCE_SUM, bin(&c, GV_OP_MUL, g, y), 1, &ax, 1);
    dopnds[0] = bin(&c, GV_OP_MUL, y, bin(&c, GV_OP_SUB, g, s));
  } else { /* g - exp(y) sum(g) */
    gv_value *s = rsum(&c, GV_OP_REDUCE_SUM, g, 1, &ax, 1);
    dopnds[0] = bin(&c, GV_OP_SUB, g, bin(&c, GV_OP_MUL, un(&c, GV_OP_EXP, y), s));
  }
  return finish(&c);
}

/* layer_norm / rms_norm over dims axis..rank-1, statistics recomputed:
 *   xhat = (x - mean) rstd (rms: x rstd), dxhat = g scale,
 *   dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))  (rms: no mean(dxhat)),
 *   dscale = sum(g xhat), dbias = sum(g) over the broadcast dims. */
int gv_grad_norm(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *x = op->opnds[0], *scale = op->opnds[1], *g = dres[0];
  int r = x->type.rank, ax = gv_norm_axis(gv_get_int(op, "axis", -1), r);
  if (ax < 0) return gv_error_op(m, op, "gradient: norm axis out of range");
  int64_t axes[GV_MAX_RANK];
  int na = 0;
  for (int d = ax; d < r; d++) axes[na++] = d;
  gv_dtype dt = x->type.dtype;
  bool ln = op->code == GV_OP_LAYER_NORM;
  gv_value *xc = ln ? bin(&c, GV_OP_SUB, x, rsum(&c, GV_OP_REDUCE_MEAN, x, na, axes, 1)) : x;
  gv_value *var = rsum(&c, GV_OP_REDUCE_MEAN, bin(&c, GV_OP_MUL, xc, xc), na, axes, 1);
  gv_value *rstd = un(&c, GV_OP_RECIPROCAL, un(&c, GV_OP_SQRT, bin(&c, GV_OP_ADD, var, cst(&c, dt, gv_get_float(op, "epsilon", 1e-5f)))));
  gv_value *xhat = bin(&c, GV_OP_MUL, xc, rstd);
  if (need[0]) {
    gv_value *dxh = bin(&c, GV_OP_MUL, g, scale);
    gv_value *t = bin(&c, GV_OP_MUL, xhat, rsum(&c, GV_OP_REDUCE_MEAN, bin(&c, GV_OP_MUL, dxh, xhat), na, axes, 1));
    gv_value *inner = bin(&c, GV_OP_SUB, dxh, t);
    if (ln) inner = bin(&c, GV_OP_SUB, inner, rsum(&c, GV_OP_REDUCE_MEAN, dxh, na, axes, 1));
    dopnds[0] = bin(&c, GV_OP_MUL, rstd, inner);
  }
  if (need[1]) dopnds[1] = unbroadcast(&c, bin(&c, GV_OP_MUL, g, xhat), &scale->type);
  if (op->nopnds > 2 && need[2]) dopnds[2] = unbroadcast(&c, g, &op->opnds[2]->type);
  return finish(&c);
}

/* ---------------------------------------------------------------- contraction */

static int count_ints(const gv_op *op, const char *name, const int64_t **v) {
  int n = gv_get_ints(op, name, v);
  return n < 0 ? 0 : n;
}

/* d lhs = dot(dy, rhs) contracting dy's rhs-free dims with rhs's free dims
 * (batch kept): its dims are batch, lhs's free dims, lhs's contracting dims
 * (in rhs's order). The operands swapped, dot(rhs, dy), give batch, the
 * contracting dims, then the free dims: that order is taken when it is
 * lhs's own and the first is not, so no transpose follows (a weight's
 * gradient x^T dy of x [.., in] . W [in, out] comes out [in, out], not
 * [out, in] transposed: no weight-sized copy, for the head the vocabulary
 * by hidden table); else the first, transposed back to lhs's dim order.
 * d rhs likewise. */
static gv_value *dot_side(gctx *c, gv_op *op, gv_value *g, int side) {
  const int64_t *b[2], *k[2];
  int nb = count_ints(op, "lhs_batch", &b[0]), nk = count_ints(op, "lhs_contract", &k[0]);
  count_ints(op, "rhs_batch", &b[1]);
  count_ints(op, "rhs_contract", &k[1]);
  const gv_type *t[2] = {&op->opnds[0]->type, &op->opnds[1]->type};
  int me = side, other = 1 - side;
  int rm = t[me]->rank, ro = t[other]->rank;
  bool used[2][GV_MAX_RANK] = {{0}};
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < nb; i++) used[s][gv_norm_axis(b[s][i], t[s]->rank)] = true;
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < nk; i++) used[s][gv_norm_axis(k[s][i], t[s]->rank)] = true;
  int nfl = t[0]->rank - nb - nk, nfm = rm - nb - nk;
  /* dy dims: batch (nb), lhs free (nfl), rhs free; other's free dims sit at
   * dy position nb (+ nfl when other is rhs). */
  int64_t gb[GV_MAX_RANK], ob[GV_MAX_RANK], gk[GV_MAX_RANK], ok[GV_MAX_RANK];
  for (int i = 0; i < nb; i++) gb[i] = i, ob[i] = gv_norm_axis(b[other][i], ro);
  int j = 0, base = nb + (other == 1 ? nfl : 0);
  for (int d = 0; d < ro; d++)
    if (!used[other][d]) gk[j] = base + j, ok[j] = d, j++;
  /* where my dim d sits in dot(dy, other) (pos[0]) and in dot(other, dy)
   * (pos[1]): batch first; then my free dims (ascending) and the
   * contracting dims (in other's ascending order), or the reverse. */
  int64_t pos[2][GV_MAX_RANK];
  bool id[2] = {true, true};
  for (int i = 0; i < nb; i++) pos[0][gv_norm_axis(b[me][i], rm)] = pos[1][gv_norm_axis(b[me][i], rm)] = i;
  int f = 0;
  for (int d = 0; d < rm; d++)
    if (!used[me][d]) pos[0][d] = nb + f, pos[1][d] = nb + nk + f, f++;
  for (int i = 0; i < nk; i++) {
    int od = gv_norm_axis(k[other][i], ro), rank_in = 0;
    for (int q = 0; q < nk; q++)
      if (gv_norm_axis(k[other][q], ro) < od) rank_in++;
    int d = gv_norm_axis(k[me][i], rm);
    pos[0][d] = nb + nfm + rank_in, pos[1][d] = nb + rank_in;
  }
  for (int d = 0; d < rm; d++) id[0] = id[0] && pos[0][d] == d, id[1] = id[1] && pos[1][d] == d;
  int swap = !id[0] && id[1];
  gv_value *in[2] = {swap ? op->opnds[other] : g, swap ? g : op->opnds[other]};
  gv_op *o = newop(c, GV_OP_DOT, 2, in);
  if (o) {
    gv_set_ints(c->m, o, "lhs_batch", nb, swap ? ob : gb);
    gv_set_ints(c->m, o, "rhs_batch", nb, swap ? gb : ob);
    gv_set_ints(c->m, o, "lhs_contract", j, swap ? ok : gk);
    gv_set_ints(c->m, o, "rhs_contract", j, swap ? gk : ok);
  }
  return transpose(c, fin(c, o), rm, pos[swap]);
}

int gv_grad_dot(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  for (int s = 0; s < 2; s++)
    if (need[s]) dopnds[s] = dot_side(&c, op, dres[0], s);
  return finish(&c);
}

int gv_grad_conv(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  for (int s = 0; s < 2; s++) {
    if (!need[s]) continue;
    gv_value *in[2] = {s ? op->opnds[0] : dres[0], s ? dres[0] : op->opnds[1]};
    gv_op *o = newop(&c, s ? GV_OP_CONV_GRAD_WEIGHT : GV_OP_CONV_GRAD_INPUT, 2, in);
    if (o) {
      for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, o, &op->attrs[i]);
      gv_set_ints(m, o, "shape", op->opnds[s]->type.rank, op->opnds[s]->type.dims);
    }
    dopnds[s] = fin(&c, o);
  }
  if (op->nopnds > 2 && need[2]) {
    int64_t axes[GV_MAX_RANK];
    int n = 0;
    for (int d = 0; d < dres[0]->type.rank; d++)
      if (d != 1) axes[n++] = d;
    dopnds[2] = reshape_to(&c, rsum(&c, GV_OP_REDUCE_SUM, dres[0], n, axes, 0), &op->opnds[2]->type);
  }
  return finish(&c);
}

/* conv_grad_input(a, w) as a forward op (ONNX ConvTranspose): the adjoint
 * of x -> conv(x, w), so da = conv(g, w) and dw = conv_grad_weight(g, a)
 * with the same strides / pads / dilations / group. */
int gv_grad_conv_input(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  gctx c = begin(m, op, before);
  for (int s = 0; s < 2; s++) {
    if (!need[s]) continue;
    gv_value *in[2] = {dres[0], s ? op->opnds[0] : op->opnds[1]};
    gv_op *o = newop(&c, s ? GV_OP_CONV_GRAD_WEIGHT : GV_OP_CONV, 2, in);
    if (o)
      for (int i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, "shape") != 0) gv_set_attr(m, o, &op->attrs[i]);
    if (o && s) gv_set_ints(m, o, "shape", op->opnds[1]->type.rank, op->opnds[1]->type.dims);
    dopnds[s] = fin(&c, o);
  }
  return finish(&c);
}

/* pool: pool_grad(x, dy) with the forward attrs (max routes dy to the first
 * maximum of each window, avg spreads it over the window's divisor). */
int gv_grad_pool(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0] || !need[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[2] = {op->opnds[0], dres[0]};
  gv_op *o = newop(&c, GV_OP_POOL_GRAD, 2, in);
  if (o)
    for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, o, &op->attrs[i]);
  dopnds[0] = fin(&c, o);
  return finish(&c);
}

/* ---------------------------------------------------------------- losses */

int gv_grad_cross_entropy(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!need[0] || !dres[0]) return 0;
  gctx c = begin(m, op, before);
  gv_value *in[3] = {dres[0], op->opnds[0], op->opnds[1]};
  gv_op *o = newop(&c, GV_OP_CROSS_ENTROPY_GRAD, 3, in);
  if (o) gv_set_int(m, o, "ignore_index", gv_get_int(op, "ignore_index", -100));
  dopnds[0] = fin(&c, o);
  return finish(&c);
}
