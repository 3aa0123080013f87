/* canonicalize.c — recognises the decomposed subgraphs torch exports emit
 * and replaces each by one core op:
 *
 *   LayerNorm  d = x - reduce_mean(x); d / sqrt(reduce_mean(d^2 | d*d) + eps)
 *              (or d * reciprocal(sqrt(..)) or d * (1 / sqrt(..))), then
 *              optionally * gamma and + beta            -> galv.layer_norm
 *   RMSNorm    x / sqrt(reduce_mean(x^2 | x*x) + eps) (or the reciprocal
 *              forms), optionally cast, then optionally * w -> galv.rms_norm
 *   GELU       x * 0.5 * (1 + erf(x / sqrt2 | x * 1/sqrt2)), any association
 *                                                       -> gelu "none"
 *              0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))
 *                                                       -> gelu "tanh"
 *   SiLU       x * sigmoid(x)                           -> silu
 *
 * Matching starts at an anchor op (reduce_mean, erf, tanh, sigmoid) and
 * walks to the users, so a pattern is always taken whole (an inner part is
 * never matched as a smaller pattern first). Absent gamma/beta/w become
 * ones/zeros constants of the normalised shape.
 *
 * It must never change what the graph computes beyond rounding: every
 * intermediate value must have no use outside the pattern (gv_count_uses),
 * reductions must be over trailing axes with keepdims, constants must match
 * within MATCH_RTOL (exponents exactly 2 or 3), scale/bias must have exactly
 * the normalised shape, and the replaced value's type must equal the input's
 * (no hidden broadcast). Matched ops are unlinked; shared constants are left
 * for dce.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

#define MATCH_RTOL 1e-4

typedef struct {
  gv_module *m;
  gv_block *b;
  gv_op *dead[16]; /* matched ops to unlink once the root is replaced */
  int ndead;
  gv_op *last;     /* the op the last rewrite produced */
} canon;

/* ---------------------------------------------------------------- helpers */

static gv_op *def_is(const gv_value *v, gv_opcode code) {
  return v && v->def && v->def->code == code ? v->def : NULL;
}

static bool scalar_of(const gv_value *v, double *out) {
  if (!v || !v->def || v->def->code != GV_OP_CONSTANT) return false;
  const gv_attr *a = gv_get_attr(v->def, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || gv_tensor_numel(a->u.t) != 1) return false;
  *out = gv_tensor_get_f(a->u.t, 0);
  return true;
}

static bool near(const gv_value *v, double want) {
  double x;
  return scalar_of(v, &x) && fabs(x - want) <= MATCH_RTOL * fabs(want);
}

static bool exactly(const gv_value *v, double want) {
  double x;
  return scalar_of(v, &x) && x == want;
}

/* The operand of binary op that is not v (v itself for op(v, v)); NULL when
 * v is no operand. */
static gv_value *other(const gv_op *op, const gv_value *v) {
  if (!op || op->nopnds != 2) return NULL;
  if (op->opnds[0] == v) return op->opnds[1];
  if (op->opnds[1] == v) return op->opnds[0];
  return NULL;
}

/* The op using v when v has exactly one use, in the same block (a user in a
 * nested region does not count: patterns never cross regions). */
static gv_op *sole_user(const gv_value *v, gv_opcode code) {
  if (!v || v->nuses != 1 || !v->def) return NULL;
  for (gv_op *op = v->def->next; op; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == v) return op->code == code ? op : NULL;
  return NULL;
}

/* First normalised axis k when reduce op r reduces exactly the trailing axes
 * k..rank-1 of a rank-`rank` input with keepdims = 1; -1 otherwise. */
static int trailing_axis(const gv_op *r, int rank) {
  if (rank <= 0 || gv_get_int(r, "keepdims", 1) != 1) return -1;
  const int64_t *ax;
  int n = gv_get_ints(r, "axes", &ax);
  if (n <= 0) return 0; /* absent or empty: all axes */
  if (n > rank) return -1;
  bool seen[GV_MAX_RANK] = {false};
  int lo = rank;
  for (int i = 0; i < n; i++) {
    int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
    if (a < 0 || a >= rank || seen[a]) return -1;
    seen[a] = true;
    if (a < lo) lo = (int)a;
  }
  for (int a = lo; a < rank; a++)
    if (!seen[a]) return -1;
  return lo;
}

/* True when w can serve as scale/bias over dims k.. of x: same dtype and
 * exactly the normalised dims. */
static bool fits_norm(const gv_value *w, const gv_value *x, int k) {
  const gv_type *wt = &w->type, *xt = &x->type;
  if (wt->dtype != xt->dtype || wt->rank != xt->rank - k) return false;
  for (int i = 0; i < wt->rank; i++)
    if (wt->dims[i] < 0 || wt->dims[i] != xt->dims[k + i]) return false;
  return true;
}

static bool same_dims(const gv_type *a, const gv_type *b) {
  if (a->rank != b->rank || a->rank < 0) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static void mark(canon *c, gv_op *op) {
  if (c->ndead < (int)(sizeof c->dead / sizeof c->dead[0])) c->dead[c->ndead++] = op;
}

/* ---------------------------------------------------------------- rewriting */

static gv_op *new_op(canon *c, gv_opcode code, int n, gv_value *const *opnds, gv_op *root, gv_type type) {
  gv_op *op = gv_op_new(c->m, code, n, opnds, 1);
  op->loc = root->loc; /* errors name the node the pattern ended in */
  op->onnx_op = NULL;
  op->res[0]->type = type;
  gv_insert_before(root, op);
  for (int i = 0; i < n; i++) opnds[i]->nuses++;
  return op;
}

/* ones / zeros of dims k.. of x, as a constant before root. */
static gv_value *fill(canon *c, const gv_value *x, int k, double v, gv_op *root) {
  gv_type t = gv_type_make(x->type.dtype, x->type.rank - k, x->type.dims + k);
  gv_tensor *tt = gv_tensor_new(c->m->arena, t);
  for (int64_t i = 0; i < gv_tensor_numel(tt); i++) gv_tensor_set_f(tt, i, v);
  gv_op *k_op = gv_constant_new(c->m, tt);
  k_op->loc = root->loc;
  gv_insert_before(root, k_op);
  return k_op->res[0];
}

static bool can_fill(const gv_value *x, int k) {
  for (int i = k; i < x->type.rank; i++)
    if (x->type.dims[i] < 0) return false;
  return gv_dtype_is_float(x->type.dtype);
}

/* Replaces root's result by nv and unlinks root and the marked ops. */
static void finish(canon *c, gv_op *root, gv_value *nv) {
  nv->name = root->res[0]->name;
  nv->nuses = root->res[0]->nuses;
  gv_replace_uses_after(root, root->res[0], nv, root->res[0]->nuses);
  mark(c, root);
  c->last = nv->def;
  for (int i = 0; i < c->ndead; i++) {
    gv_op *d = c->dead[i];
    if (!d->parent) continue;
    for (int j = 0; j < d->nopnds; j++) d->opnds[j]->nuses--;
    gv_op_unlink(d);
  }
  c->ndead = 0;
}

/* ---------------------------------------------------------------- patterns */

/* The normalise step: v / s, v * reciprocal(s) or v * div(1, s), where s is
 * the sqrt's result. Marks the reciprocal part. */
static gv_op *normalise_step(canon *c, gv_value *s, gv_value *v) {
  if (!s || s->nuses != 1) return NULL;
  gv_op *u = NULL;
  for (gv_op *op = s->def->next; op && !u; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == s) u = op;
  if (!u) return NULL;
  if (u->code == GV_OP_DIV && u->opnds[0] == v && u->opnds[1] == s) return u;
  if ((u->code == GV_OP_RECIPROCAL) || (u->code == GV_OP_DIV && u->opnds[1] == s && near(u->opnds[0], 1.0))) {
    gv_op *mu = sole_user(u->res[0], GV_OP_MUL);
    if (!mu || other(mu, u->res[0]) != v) return NULL;
    mark(c, u);
    return mu;
  }
  return NULL;
}

/* reduce_mean(sq) + eps -> sqrt; returns the sqrt op or NULL. */
static gv_op *mean_eps_sqrt(canon *c, gv_op *r, double *eps) {
  gv_op *a = sole_user(r->res[0], GV_OP_ADD);
  if (!a || !scalar_of(other(a, r->res[0]), eps)) return NULL;
  gv_op *s = sole_user(a->res[0], GV_OP_SQRT);
  if (!s) return NULL;
  mark(c, r), mark(c, a), mark(c, s);
  return s;
}

/* sq = v^2 (pow exactly 2) or v*v; returns v or NULL. */
static gv_value *square_of(const gv_value *sq) {
  gv_op *p = def_is(sq, GV_OP_POW);
  if (p) return exactly(p->opnds[1], 2.0) ? p->opnds[0] : NULL;
  p = def_is(sq, GV_OP_MUL);
  if (p && p->opnds[0] == p->opnds[1]) return p->opnds[0];
  return NULL;
}

/* LayerNorm anchored at r1 = reduce_mean(x). Returns 1 when rewritten. */
static int match_layer_norm(canon *c, gv_op *r1) {
  gv_value *x = r1->opnds[0];
  int rank = x->type.rank, k = trailing_axis(r1, rank);
  if (k < 0 || !gv_dtype_is_float(x->type.dtype)) return 0;
  gv_op *sub = sole_user(r1->res[0], GV_OP_SUB);
  if (!sub || sub->opnds[0] != x || sub->opnds[1] != r1->res[0]) return 0;
  gv_value *d = sub->res[0];
  /* d feeds the square and the normalise step, nothing else. */
  gv_op *sq = NULL;
  for (gv_op *op = sub->next; op && !sq; op = op->next)
    if ((op->code == GV_OP_POW && op->opnds[0] == d) || (op->code == GV_OP_MUL && op->opnds[0] == d && op->opnds[1] == d))
      sq = op;
  if (!sq || square_of(sq->res[0]) != d || d->nuses != (sq->code == GV_OP_MUL ? 3 : 2)) return 0;
  gv_op *r2 = sole_user(sq->res[0], GV_OP_REDUCE_MEAN);
  if (!r2 || trailing_axis(r2, rank) != k) return 0;
  c->ndead = 0;
  double eps;
  gv_op *s = mean_eps_sqrt(c, r2, &eps);
  gv_op *n = s ? normalise_step(c, s->res[0], d) : NULL;
  if (!n) return c->ndead = 0, 0;
  mark(c, r1), mark(c, sub), mark(c, sq);
  gv_op *root = n;
  gv_value *gamma = NULL, *beta = NULL;
  gv_op *g = sole_user(n->res[0], GV_OP_MUL);
  if (g && other(g, n->res[0]) != n->res[0] && fits_norm(other(g, n->res[0]), x, k)) {
    gamma = other(g, n->res[0]);
    mark(c, root);
    root = g;
    gv_op *bb = sole_user(g->res[0], GV_OP_ADD);
    if (bb && other(bb, g->res[0]) != g->res[0] && fits_norm(other(bb, g->res[0]), x, k)) {
      beta = other(bb, g->res[0]);
      mark(c, root);
      root = bb;
    }
  }
  if (!gv_type_equal(&root->res[0]->type, &x->type) || ((!gamma || !beta) && !can_fill(x, k)))
    return c->ndead = 0, 0;
  if (!gamma) gamma = fill(c, x, k, 1.0, root);
  if (!beta) beta = fill(c, x, k, 0.0, root);
  gv_value *ops[3] = {x, gamma, beta};
  gv_op *ln = new_op(c, GV_OP_LAYER_NORM, 3, ops, root, x->type);
  gv_set_int(c->m, ln, "axis", k - rank);
  gv_set_float(c->m, ln, "epsilon", (float)eps);
  finish(c, root, ln->res[0]);
  return 1;
}

/* RMSNorm anchored at r = reduce_mean(x^2). Returns 1 when rewritten. */
static int match_rms_norm(canon *c, gv_op *r) {
  gv_value *sq = r->opnds[0];
  gv_value *x = square_of(sq);
  if (!x || sq->nuses != 1 || !gv_dtype_is_float(x->type.dtype)) return 0;
  int rank = x->type.rank, k = trailing_axis(r, rank);
  if (k < 0) return 0;
  c->ndead = 0;
  mark(c, sq->def);
  double eps;
  gv_op *s = mean_eps_sqrt(c, r, &eps);
  gv_op *n = s ? normalise_step(c, s->res[0], x) : NULL;
  if (!n || !gv_type_equal(&n->res[0]->type, &x->type)) return c->ndead = 0, 0;
  /* Optional cast back to the input dtype, then optional weight. */
  gv_op *root = n, *cast = sole_user(n->res[0], GV_OP_CAST);
  gv_value *cur = n->res[0], *w = NULL;
  gv_op *wm = sole_user(cast ? cast->res[0] : cur, GV_OP_MUL);
  if (wm) {
    gv_value *in = cast ? cast->res[0] : cur, *cand = other(wm, in);
    int kk = k;
    if (cand && cand != in && cand->type.rank == rank - kk && same_dims(&wm->res[0]->type, &x->type)) {
      bool ok = cand->type.dtype == wm->res[0]->type.dtype;
      for (int i = 0; ok && i < cand->type.rank; i++) ok = cand->type.dims[i] >= 0 && cand->type.dims[i] == x->type.dims[kk + i];
      if (ok) {
        w = cand;
        if (cast) mark(c, root), root = cast;
        mark(c, root);
        root = wm;
      }
    }
  }
  if (!w && !can_fill(x, k)) return c->ndead = 0, 0;
  if (!w) {
    w = fill(c, x, k, 1.0, root);
  } else if (w->type.dtype != x->type.dtype) {
    gv_value *one[1] = {w};
    gv_op *wc = new_op(c, GV_OP_CAST, 1, one, root, gv_type_make(x->type.dtype, w->type.rank, w->type.dims));
    gv_set_type(c->m, wc, "to", x->type.dtype);
    w = wc->res[0];
  }
  gv_value *ops[2] = {x, w};
  gv_op *rn = new_op(c, GV_OP_RMS_NORM, 2, ops, root, x->type);
  gv_set_int(c->m, rn, "axis", k - rank);
  gv_set_float(c->m, rn, "epsilon", (float)eps);
  gv_value *res = rn->res[0];
  if (root->res[0]->type.dtype != x->type.dtype) {
    gv_value *one[1] = {res};
    gv_op *oc = new_op(c, GV_OP_CAST, 1, one, root, root->res[0]->type);
    gv_set_type(c->m, oc, "to", root->res[0]->type.dtype);
    res = oc->res[0];
  }
  finish(c, root, res);
  return 1;
}

/* The product x * p * 0.5 in any association of two muls, p being the
 * (1 + erf|tanh) value. Returns the root mul or NULL; marks the inner mul. */
static gv_op *half_x_times(canon *c, gv_value *x, gv_value *p) {
  gv_op *u1 = sole_user(p, GV_OP_MUL);
  if (!u1) return NULL;
  gv_value *o = other(u1, p);
  if (o == x) { /* (x * p) * 0.5 */
    gv_op *u2 = sole_user(u1->res[0], GV_OP_MUL);
    if (!u2 || !near(other(u2, u1->res[0]), 0.5)) return NULL;
    mark(c, u1);
    return u2;
  }
  if (near(o, 0.5)) { /* (p * 0.5) * x */
    gv_op *u2 = sole_user(u1->res[0], GV_OP_MUL);
    if (!u2 || other(u2, u1->res[0]) != x) return NULL;
    mark(c, u1);
    return u2;
  }
  gv_op *h = def_is(o, GV_OP_MUL); /* (x * 0.5) * p */
  if (h && o->nuses == 1 && ((h->opnds[0] == x && near(h->opnds[1], 0.5)) || (h->opnds[1] == x && near(h->opnds[0], 0.5)))) {
    mark(c, h);
    return u1;
  }
  return NULL;
}

static int emit_gelu(canon *c, gv_value *x, gv_op *root, const char *approx) {
  if (!root || !gv_type_equal(&root->res[0]->type, &x->type)) return c->ndead = 0, 0;
  gv_value *ops[1] = {x};
  gv_op *g = new_op(c, GV_OP_GELU, 1, ops, root, x->type);
  gv_set_str(c->m, g, "approximate", approx);
  finish(c, root, g->res[0]);
  return 1;
}

/* erf form, anchored at the erf. */
static int match_gelu_erf(canon *c, gv_op *e) {
  gv_value *a = e->opnds[0];
  gv_op *sc = a->def;
  if (!sc || a->nuses != 1) return 0;
  gv_value *x = NULL;
  if (sc->code == GV_OP_DIV && near(sc->opnds[1], sqrt(2.0))) x = sc->opnds[0];
  else if (sc->code == GV_OP_MUL && near(sc->opnds[1], sqrt(0.5))) x = sc->opnds[0];
  else if (sc->code == GV_OP_MUL && near(sc->opnds[0], sqrt(0.5))) x = sc->opnds[1];
  if (!x || !gv_dtype_is_float(x->type.dtype)) return 0;
  gv_op *p = sole_user(e->res[0], GV_OP_ADD);
  if (!p || !near(other(p, e->res[0]), 1.0)) return 0;
  c->ndead = 0;
  mark(c, sc), mark(c, e), mark(c, p);
  return emit_gelu(c, x, half_x_times(c, x, p->res[0]), "none");
}

/* x^3 as pow(x, 3) or (x*x)*x; returns x or NULL. */
static gv_value *cube_of(canon *c, const gv_value *q) {
  gv_op *p = def_is(q, GV_OP_POW);
  if (p) return exactly(p->opnds[1], 3.0) ? (mark(c, p), p->opnds[0]) : NULL;
  p = def_is(q, GV_OP_MUL);
  if (!p) return NULL;
  for (int i = 0; i < 2; i++) {
    gv_op *sq = def_is(p->opnds[i], GV_OP_MUL);
    if (sq && sq->res[0]->nuses == 1 && sq->opnds[0] == sq->opnds[1] && sq->opnds[0] == p->opnds[1 - i]) {
      mark(c, p), mark(c, sq);
      return sq->opnds[0];
    }
  }
  return NULL;
}

/* tanh form, anchored at the tanh. */
static int match_gelu_tanh(canon *c, gv_op *t) {
  gv_value *in = t->opnds[0];
  gv_op *sc = def_is(in, GV_OP_MUL);
  if (!sc || in->nuses != 1) return 0;
  const double k0 = sqrt(2.0 / M_PI);
  gv_value *y = near(sc->opnds[1], k0) ? sc->opnds[0] : near(sc->opnds[0], k0) ? sc->opnds[1] : NULL;
  gv_op *ad = def_is(y, GV_OP_ADD);
  if (!ad || y->nuses != 1) return 0;
  gv_op *p = sole_user(t->res[0], GV_OP_ADD);
  if (!p || !near(other(p, t->res[0]), 1.0)) return 0;
  for (int i = 0; i < 2; i++) {
    gv_value *x = ad->opnds[i], *z = ad->opnds[1 - i];
    gv_op *zm = def_is(z, GV_OP_MUL);
    if (!zm || z->nuses != 1 || !gv_dtype_is_float(x->type.dtype)) continue;
    gv_value *q = near(zm->opnds[1], 0.044715) ? zm->opnds[0] : near(zm->opnds[0], 0.044715) ? zm->opnds[1] : NULL;
    if (!q || q->nuses != 1) continue;
    c->ndead = 0;
    if (cube_of(c, q) != x) continue;
    mark(c, zm), mark(c, ad), mark(c, sc), mark(c, t), mark(c, p);
    return emit_gelu(c, x, half_x_times(c, x, p->res[0]), "tanh");
  }
  return c->ndead = 0, 0;
}

/* x * sigmoid(x), anchored at the sigmoid. */
static int match_silu(canon *c, gv_op *s) {
  gv_value *x = s->opnds[0];
  gv_op *mu = sole_user(s->res[0], GV_OP_MUL);
  if (!mu || other(mu, s->res[0]) != x || !gv_type_equal(&mu->res[0]->type, &x->type)) return 0;
  c->ndead = 0;
  mark(c, s);
  gv_value *ops[1] = {x};
  gv_op *si = new_op(c, GV_OP_SILU, 1, ops, mu, x->type);
  finish(c, mu, si->res[0]);
  return 1;
}

/* ---------------------------------------------------------------- driver */

static int sweep(canon *c, gv_block *b) {
  int changed = 0;
  gv_op *next;
  for (gv_op *op = b->first; op; op = next) {
    next = op->next;
    for (int r = 0; r < op->nregions; r++) changed += sweep(c, op->regions[r]);
    int hit = 0;
    switch (op->code) {
    case GV_OP_REDUCE_MEAN: hit = match_layer_norm(c, op) || match_rms_norm(c, op); break;
    case GV_OP_ERF: hit = match_gelu_erf(c, op); break;
    case GV_OP_TANH: hit = match_gelu_tanh(c, op); break;
    case GV_OP_SIGMOID: hit = match_silu(c, op); break;
    default: break;
    }
    c->ndead = 0;
    if (hit) {
      changed++;
      /* The anchor and maybe `next` are gone: go on after the new op. Ops
       * between the anchor and the root are seen by the next sweep. */
      next = c->last->next;
    }
  }
  return changed;
}

int gv_pass_canonicalize(gv_module *m) {
  if (!m || !m->main || !m->main->body) return 0;
  canon c = {.m = m};
  gv_count_uses(m->main->body);
  while (sweep(&c, m->main->body)) {
  }
  return 0;
}
