/* attention.c — gv_attn_match (attention.h): the structural match of the
 * attention chain the CUDA target fuses. It reads the IR only; the emitter
 * decides storage and the cost model prices the chain from the result. */
#include "attention.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

static bool ints_are(const gv_op *op, const char *name, int n, int first) {
  const int64_t *v;
  int k = gv_get_ints(op, name, &v);
  if ((k < 0 ? 0 : k) != n) return false;
  for (int i = 0; i < n; i++)
    if (v[i] != first + i) return false;
  return true;
}

static int uses_in(const gv_op *op, const gv_value *v) {
  int n = 0;
  for (; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) n += op->opnds[i] == v;
    for (int r = 0; r < op->nregions; r++) n += uses_in(op->regions[r]->first, v);
  }
  return n;
}

/* The uses of a block's values (gv_attn_uses_new): per value its uses in the block, nested regions included, and
 * the top-level op that reads it directly (the first such). An open-addressing table keyed by the value's address. */
typedef struct {
  const gv_value *v;
  int n;
  const gv_op *user;
  bool dirty; /* its uses changed since they were counted (gv_attn_uses_dirty): scanned again when asked */
} use_entry;
typedef struct {
  const gv_op *op;
  long pos;
} pos_entry;
struct gv_attn_uses {
  use_entry *t;
  size_t mask, used;
  bool stale; /* a value could not be marked (the table full): every query scans */
  pos_entry *p; /* the block's top-level ops by their place in it (ops added later are not there) */
  size_t pmask;
};

static pos_entry *pos_slot(const gv_attn_uses *u, const gv_op *op) {
  size_t h = ((uintptr_t)op >> 4) * 0x9e3779b97f4a7c15ull;
  for (size_t i = h & u->pmask;; i = (i + 1) & u->pmask)
    if (u->p[i].op == op || !u->p[i].op) return &u->p[i];
}

/* op's place in the block when the uses were counted, -1 when not known */
static long pos_of(const gv_attn_uses *u, const gv_op *op) {
  const pos_entry *e = pos_slot(u, op);
  return e->op == op ? e->pos : -1;
}

static use_entry *use_slot(const gv_attn_uses *u, const gv_value *v) {
  size_t h = ((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull;
  for (size_t i = h & u->mask;; i = (i + 1) & u->mask)
    if (u->t[i].v == v || !u->t[i].v) return &u->t[i];
}

static size_t count_opnds(const gv_op *op) {
  size_t n = 0;
  for (; op; op = op->next) {
    n += (size_t)op->nopnds;
    for (int r = 0; r < op->nregions; r++) n += count_opnds(op->regions[r]->first);
  }
  return n;
}

static void add_uses(gv_attn_uses *u, const gv_op *op, bool top) {
  for (; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) {
      use_entry *e = use_slot(u, op->opnds[i]);
      if (!e->v) u->used++;
      e->v = op->opnds[i];
      e->n++;
      if (top && !e->user) e->user = op;
    }
    for (int r = 0; r < op->nregions; r++) add_uses(u, op->regions[r]->first, false);
  }
}

gv_attn_uses *gv_attn_uses_new(const gv_block *b) {
  gv_attn_uses *u = calloc(1, sizeof *u);
  size_t cap = 16, n = count_opnds(b->first);
  while (cap < 2 * n + 16) cap *= 2;
  if (!u || !(u->t = calloc(cap, sizeof *u->t))) {
    free(u);
    return NULL;
  }
  u->mask = cap - 1;
  add_uses(u, b->first, true);
  size_t nops = 0, pcap = 16;
  for (const gv_op *op = b->first; op; op = op->next) nops++;
  while (pcap < 2 * nops + 16) pcap *= 2;
  if (!(u->p = calloc(pcap, sizeof *u->p))) {
    free(u->t), free(u);
    return NULL;
  }
  u->pmask = pcap - 1;
  long at = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    pos_entry *e = pos_slot(u, op);
    e->op = op, e->pos = at++;
  }
  return u;
}

void gv_attn_uses_free(gv_attn_uses *u) {
  if (u) free(u->t), free(u->p), free(u);
}

void gv_attn_uses_dirty(gv_attn_uses *u, const gv_value *v) {
  if (!u || !v) return;
  use_entry *e = use_slot(u, v);
  if (!e->v) {
    if (2 * (u->used + 1) > u->mask + 1) { /* at most half full (use_slot's probe ends at an empty slot) */
      u->stale = true;
      return;
    }
    u->used++, e->v = v;
  }
  e->dirty = true;
}

int gv_attn_uses_count(const gv_attn_uses *u, const gv_value *v) {
  if (!u || u->stale) return -1;
  const use_entry *e = use_slot(u, v);
  return e->v != v ? 0 : e->dirty ? -1 : e->n;
}

/* The only user of v among the top-level ops from `from` on, or NULL (used
 * more than once, or only inside a region). v is a result of the op before
 * `from` (every use of it follows `from`: SSA), so with the block's uses
 * (ix) it is v's one use's top-level reader; without, the ops are scanned. */
static const gv_op *sole_user(const gv_op *from, const gv_value *v, const gv_attn_uses *ix) {
  if (ix && !ix->stale) {
    const use_entry *e = use_slot(ix, v);
    if (e->v != v) return NULL; /* no use */
    if (!e->dirty) return e->n == 1 ? e->user : NULL;
  }
  if (uses_in(from, v) != 1) return NULL;
  for (const gv_op *op = from; op; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == v) return op;
  return NULL;
}

bool gv_attn_match(const gv_op *d1, gv_attn_chain *c) { return gv_attn_match_in(d1, c, NULL); }

bool gv_attn_match_in(const gv_op *d1, gv_attn_chain *c, const gv_attn_uses *ix) {
  if (d1->code != GV_OP_DOT || d1->nopnds != 2 || d1->nres != 1) return false;
  const gv_type *q = &d1->opnds[0]->type, *k = &d1->opnds[1]->type, *s = &d1->res[0]->type;
  int nb = q->rank - 2;
  if (nb < 0 || nb > 4 || k->rank != nb + 2 || s->dtype != GV_DT_F32 || q->dtype != GV_DT_F32 || k->dtype != GV_DT_F32)
    return false;
  if (!ints_are(d1, "lhs_batch", nb, 0) || !ints_are(d1, "rhs_batch", nb, 0)) return false;
  memset(c, 0, sizeof *c);
  c->d1 = d1;
  const gv_op *u = sole_user(d1->next, d1->res[0], ix);
  if (u && u->code != GV_OP_SOFTMAX) {
    bool ew = u->code == GV_OP_FUSED || (gv_ops[u->code].flags & GV_ELEMENTWISE);
    if (!ew || u->nres != 1 || !gv_type_equal(&u->res[0]->type, s)) return false;
    int uses = 0;
    for (int i = 0; i < u->nopnds; i++)
      if (u->opnds[i] == d1->res[0]) uses++, c->score_opnd = i;
    if (uses != 1) return false;
    c->mid = u;
    u = sole_user(u->next, u->res[0], ix);
  }
  if (!u || u->code != GV_OP_SOFTMAX || gv_norm_axis(gv_get_int(u, "axis", -1), s->rank) != s->rank - 1) return false;
  c->sm = u;
  const gv_op *d2 = sole_user(u->next, u->res[0], ix);
  if (!d2 || d2->code != GV_OP_DOT || d2->opnds[0] != u->res[0]) return false;
  const gv_type *v = &d2->opnds[1]->type;
  if (v->rank != nb + 2 || v->dtype != GV_DT_F32 || !ints_are(d2, "lhs_batch", nb, 0) || !ints_are(d2, "rhs_batch", nb, 0) ||
      !ints_are(d2, "lhs_contract", 1, nb + 1))
    return false;
  const int64_t *vc;
  if (gv_get_ints(d2, "rhs_contract", &vc) != 1 || (vc[0] != nb && vc[0] != nb + 1)) return false;
  const int64_t *qc, *kc;
  if (gv_get_ints(d1, "lhs_contract", &qc) != 1 || gv_get_ints(d1, "rhs_contract", &kc) != 1) return false;
  int64_t D = q->dims[gv_norm_axis(qc[0], q->rank)], Dv = v->dims[vc[0] == nb ? nb + 1 : nb];
  if (D > 128 || Dv > 128) return false;
  for (const gv_op *op = d1->next; op != d2; op = op->next)
    if (op != c->mid && op != c->sm && op->code != GV_OP_CONSTANT && !(gv_ops[op->code].flags & GV_VIEW)) return false;
  c->d2 = d2;
  return true;
}

/* ---------------------------------------------------------------- training: the score functor */

static const char *const step_names[] = {"add", "sub", "mul", "div", "where"};

int gv_attn_score_parse(const char *text, int nfn, gv_attn_step *st, const char **why) {
  int n = 0;
  const char *p = text ? text : "";
  while (*p) {
    if (n >= GV_ATTN_MAX_STEPS) return *why = "too many steps", -1;
    gv_attn_step *x = &st[n];
    memset(x, 0, sizeof *x);
    x->kind = -1;
    for (int k = 0; k < 5; k++) {
      size_t l = strlen(step_names[k]);
      if (!strncmp(p, step_names[k], l) && p[l] == ':') x->kind = k, p += l + 1;
    }
    if (x->kind < 0) return *why = "unknown step (expected add, sub, mul, div or where followed by ':')", -1;
    int score = 0;
    for (;;) {
      if (x->nargs >= 3) return *why = "too many arguments in a step", -1;
      char *end;
      if (*p == 's') {
        x->arg[x->nargs++] = -1, score++, p++;
      } else if (*p == '%') {
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v < 0 || v >= nfn) return *why = "functor operand out of range", -1;
        x->arg[x->nargs++] = (int)v, p = end;
      } else {
        double v = strtod(p, &end);
        if (end == p) return *why = "expected s, %N or a number", -1;
        x->lit[x->nargs] = v, x->arg[x->nargs++] = -2, p = end;
      }
      if (*p != ',') break;
      p++;
    }
    int want = x->kind == GV_ATTN_WHERE ? 3 : 2;
    if (x->nargs != want) return *why = "wrong argument count in a step", -1;
    if (score != 1) return *why = "each step takes the score exactly once", -1;
    if (x->kind == GV_ATTN_DIV && x->arg[0] != -1) return *why = "div: the score must be the dividend", -1;
    if (x->kind == GV_ATTN_WHERE && x->arg[0] == -1) return *why = "where: the score must be a branch", -1;
    n++;
    if (*p == ';') p++;
    else if (*p) return *why = "expected ';' between steps", -1;
  }
  return n;
}

double gv_attn_score_apply(const gv_attn_step *st, int n, double s, const double *fn, double *slope) {
  for (int i = 0; i < n; i++) {
    const gv_attn_step *x = &st[i];
    double a[3];
    for (int j = 0; j < x->nargs; j++) a[j] = x->arg[j] == -1 ? s : x->arg[j] == -2 ? x->lit[j] : fn[x->arg[j]];
    double d = 1;
    switch (x->kind) {
    case GV_ATTN_ADD: s = a[0] + a[1]; break;
    case GV_ATTN_SUB: s = a[0] - a[1], d = x->arg[0] == -1 ? 1 : -1; break;
    case GV_ATTN_MUL: s = a[0] * a[1], d = x->arg[0] == -1 ? a[1] : a[0]; break;
    case GV_ATTN_DIV: s = a[0] / a[1], d = 1 / a[1]; break;
    default: /* where */
      s = a[0] != 0 ? a[1] : a[2];
      d = (a[0] != 0) == (x->arg[1] == -1) ? 1 : 0;
    }
    if (slope) *slope *= d;
  }
  return s;
}

/* v's single element when it is a one-element f32 constant. */
static bool scalar_const(const gv_value *v, double *out) {
  if (!v->def || v->def->code != GV_OP_CONSTANT || v->type.dtype != GV_DT_F32 || gv_type_numel(&v->type) != 1) return false;
  const gv_attr *a = gv_get_attr(v->def, "value");
  if (!a || a->kind != GV_ATTR_TENSOR) return false;
  *out = gv_tensor_get_f(a->u.t, 0);
  return true;
}

/* v broadcasts to the score's type s (numpy rules, no bigger than s). */
static bool broadcasts_to(const gv_type *v, const gv_type *s) {
  if (v->rank < 0 || v->rank > s->rank || !gv_type_is_static(v)) return false;
  for (int d = 0; d < v->rank; d++) {
    int64_t x = v->dims[d], y = s->dims[s->rank - v->rank + d];
    if (x != 1 && x != y) return false;
  }
  return true;
}

bool gv_attn_match_train(const gv_op *d1, gv_attn_train_chain *c) { return gv_attn_match_train_in(d1, c, NULL); }

bool gv_attn_match_train_in(const gv_op *d1, gv_attn_train_chain *c, const gv_attn_uses *ix) {
  if (d1->code != GV_OP_DOT || d1->nopnds != 2 || d1->nres != 1) return false;
  const gv_type *q = &d1->opnds[0]->type, *k = &d1->opnds[1]->type, *s = &d1->res[0]->type;
  int nb = q->rank - 2;
  if (nb < 0 || nb > 4 || k->rank != nb + 2 || s->dtype != GV_DT_F32 || q->dtype != GV_DT_F32 || k->dtype != GV_DT_F32 ||
      !gv_type_is_static(s) || !gv_type_is_static(q) || !gv_type_is_static(k))
    return false;
  if (!ints_are(d1, "lhs_batch", nb, 0) || !ints_are(d1, "rhs_batch", nb, 0) || !ints_are(d1, "lhs_contract", 1, nb + 1))
    return false;
  const int64_t *kc;
  if (gv_get_ints(d1, "rhs_contract", &kc) != 1 || (kc[0] != nb && kc[0] != nb + 1)) return false;
  memset(c, 0, sizeof *c);
  c->d1 = d1;
  c->k_contract = kc[0];
  const gv_value *cur = d1->res[0];
  const gv_op *u = sole_user(d1->next, cur, ix);
  size_t len = 0;
  while (u && u->code != GV_OP_SOFTMAX) {
    int kind = u->code == GV_OP_ADD ? GV_ATTN_ADD : u->code == GV_OP_SUB ? GV_ATTN_SUB : u->code == GV_OP_MUL ? GV_ATTN_MUL
             : u->code == GV_OP_DIV ? GV_ATTN_DIV : u->code == GV_OP_WHERE ? GV_ATTN_WHERE : -1;
    if (kind < 0 || c->nsteps >= GV_ATTN_MAX_STEPS || u->nres != 1 || !gv_type_equal(&u->res[0]->type, s)) return false;
    len += (size_t)snprintf(c->score + len, sizeof c->score - len, "%s%s:", c->nsteps ? ";" : "", step_names[kind]);
    int uses = 0;
    for (int i = 0; i < u->nopnds; i++) {
      gv_value *o = u->opnds[i];
      double lit;
      if (len >= sizeof c->score - 40) return false;
      if (o == cur) {
        uses++;
        len += (size_t)snprintf(c->score + len, sizeof c->score - len, "%ss", i ? "," : "");
        continue;
      }
      bool cond = kind == GV_ATTN_WHERE && i == 0;
      if (cond ? o->type.dtype != GV_DT_BOOL : o->type.dtype != GV_DT_F32) return false;
      if (!broadcasts_to(&o->type, s)) return false;
      if (!cond && scalar_const(o, &lit)) {
        len += (size_t)snprintf(c->score + len, sizeof c->score - len, "%s%.9g", i ? "," : "", lit);
        continue;
      }
      int f = 0;
      while (f < c->nfn && c->fn[f] != o) f++;
      if (f == c->nfn) {
        if (c->nfn >= GV_ATTN_MAX_FN) return false;
        c->fn[c->nfn++] = o;
      }
      len += (size_t)snprintf(c->score + len, sizeof c->score - len, "%s%%%d", i ? "," : "", f);
    }
    if (uses != 1 || (kind == GV_ATTN_DIV && u->opnds[0] != cur) || (kind == GV_ATTN_WHERE && u->opnds[0] == cur)) return false;
    c->steps[c->nsteps++] = u;
    cur = u->res[0];
    u = sole_user(u->next, cur, ix);
  }
  if (!u || gv_norm_axis(gv_get_int(u, "axis", -1), s->rank) != s->rank - 1) return false;
  c->sm = u;
  const gv_value *p = u->res[0];
  const gv_op *d2 = sole_user(u->next, p, ix);
  if (d2 && d2->code == GV_OP_DROPOUT) { /* dropout on the probabilities: the fused op draws its mask (not yet partitioned) */
    if (d2->nopnds != 1 || d2->nres != 1 || !gv_type_equal(&d2->res[0]->type, s)) return false;
    c->drop = d2;
    p = d2->res[0];
    d2 = sole_user(d2->next, p, ix);
  }
  if (!d2 || d2->code != GV_OP_DOT || d2->opnds[0] != p || d2->res[0]->type.dtype != GV_DT_F32) return false;
  const gv_type *v = &d2->opnds[1]->type;
  if (v->rank != nb + 2 || v->dtype != GV_DT_F32 || !gv_type_is_static(v) || !ints_are(d2, "lhs_batch", nb, 0) ||
      !ints_are(d2, "rhs_batch", nb, 0) || !ints_are(d2, "lhs_contract", 1, nb + 1))
    return false;
  const int64_t *vc;
  if (gv_get_ints(d2, "rhs_contract", &vc) != 1 || (vc[0] != nb && vc[0] != nb + 1)) return false;
  c->v_contract = vc[0];
  /* functor operands must be defined before d2, where galv.attention goes */
  for (int f = 0; f < c->nfn; f++) {
    if (!c->fn[f]->def) continue;
    const long pd = ix ? pos_of(ix, c->fn[f]->def) : -1, p2 = ix ? pos_of(ix, d2) : -1;
    if (pd >= 0 && p2 >= 0) { /* both placed when counted: their order (ops are added and removed, never moved) */
      if (pd >= p2) return false;
      continue;
    }
    const gv_op *o = d2;
    while (o && o != c->fn[f]->def) o = o->next;
    if (o) return false;
  }
  c->d2 = d2;
  return true;
}

int gv_attn_off(const gv_op *op) {
  int f0 = op->code == GV_OP_ATTENTION ? 3 : 6, last = op->nopnds - 1;
  return last >= f0 && op->opnds[last] && op->opnds[last]->type.dtype == GV_DT_I64 ? last : -1;
}

bool gv_attn_dropout(const gv_op *op) {
  return (op->code == GV_OP_ATTENTION || op->code == GV_OP_ATTENTION_GRAD) && gv_get_attr(op, "ratio");
}

int gv_attn_train_kernel(const char *target, gv_dtype storage) {
  bool cpu = !strcmp(target, "cpu"), cuda = !strcmp(target, "cuda");
  bool known = storage == GV_DT_F32 || storage == GV_DT_BF16 || storage == GV_DT_F16;
  if (cpu && known) return GV_ATTN_KERNEL_AUTO;    /* runtime/attention.c: fp32, and 16-bit through fp32 slices */
  if (cuda && known) return GV_ATTN_KERNEL_OPT_IN; /* runtime/cuda/fused_attention.cuh: tiled, not yet timed in a step */
  return GV_ATTN_KERNEL_NONE;
}

int gv_attn_train_fuse(int kernel, int mode, bool plan_only) {
  if (mode == 0) return 0;
  if (mode < 0) return kernel == GV_ATTN_KERNEL_AUTO;
  return kernel == GV_ATTN_KERNEL_NONE && !plan_only ? -1 : 1;
}
