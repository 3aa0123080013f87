/* attention.c — gv_attn_match (attention.h): the structural match of the
 * attention chain the CUDA target fuses. It reads the IR only; the emitter
 * decides storage and the cost model prices the chain from the result. */
#include "attention.h"

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

/* The only user of v among the top-level ops from `from` on, or NULL (used
 * more than once, or only inside a region). v is defined before `from`. */
static const gv_op *sole_user(const gv_op *from, const gv_value *v) {
  if (uses_in(from, v) != 1) return NULL;
  for (const gv_op *op = from; op; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == v) return op;
  return NULL;
}

bool gv_attn_match(const gv_op *d1, gv_attn_chain *c) {
  if (d1->code != GV_OP_DOT || d1->nopnds != 2 || d1->nres != 1) return false;
  const gv_type *q = &d1->opnds[0]->type, *k = &d1->opnds[1]->type, *s = &d1->res[0]->type;
  int nb = q->rank - 2;
  if (nb < 0 || nb > 4 || k->rank != nb + 2 || s->dtype != GV_DT_F32 || q->dtype != GV_DT_F32 || k->dtype != GV_DT_F32)
    return false;
  if (!ints_are(d1, "lhs_batch", nb, 0) || !ints_are(d1, "rhs_batch", nb, 0)) return false;
  memset(c, 0, sizeof *c);
  c->d1 = d1;
  const gv_op *u = sole_user(d1->next, d1->res[0]);
  if (u && u->code != GV_OP_SOFTMAX) {
    bool ew = u->code == GV_OP_FUSED || (gv_ops[u->code].flags & GV_ELEMENTWISE);
    if (!ew || u->nres != 1 || !gv_type_equal(&u->res[0]->type, s)) return false;
    int uses = 0;
    for (int i = 0; i < u->nopnds; i++)
      if (u->opnds[i] == d1->res[0]) uses++, c->score_opnd = i;
    if (uses != 1) return false;
    c->mid = u;
    u = sole_user(u->next, u->res[0]);
  }
  if (!u || u->code != GV_OP_SOFTMAX || gv_norm_axis(gv_get_int(u, "axis", -1), s->rank) != s->rank - 1) return false;
  c->sm = u;
  const gv_op *d2 = sole_user(u->next, u->res[0]);
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
