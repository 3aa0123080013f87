/* attention_ops.c — the rules of galv.attention and galv.attention_grad
 * (ir/ops.def; docs/fused-attention.md): shape inference, the reference
 * evaluators (double, plain loops over the whole score matrix), the
 * gradient rule (one attention_grad) and the sharding rule (the leading
 * batch dims). The score functor is parsed by ir/attention.c. Kept in one
 * file because all four read the same geometry (geo below). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/galv_rng.h"
#include "attention.h"
#include "dropout.h"
#include "shape_rules.h"

/* Operands: attention (q, k, v, fn... [, off]), attention_grad (q, k, v, o, do, lse, fn... [, off]); off: the
 * dropout's shard offsets (gv_attn_off). */
static int fn0(const gv_op *op) { return op->code == GV_OP_ATTENTION ? 3 : 6; }

typedef gv_attn_geo geo;

int gv_attn_geometry(gv_module *m, const gv_op *op, gv_attn_geo *g) {
  const gv_type *q = &op->opnds[0]->type, *k = &op->opnds[1]->type, *v = &op->opnds[2]->type;
  const char *why = NULL;
  g->fn0 = fn0(op), g->off = gv_attn_off(op), g->drop = gv_get_attr(op, "ratio") != NULL;
  int nfn = g->nfn = op->nopnds - g->fn0 - (g->off >= 0);
  if (nfn < 0 || nfn > GV_ATTN_MAX_FN)
    return m ? gv_error_op(m, op, "%s: %d functor operands (at most %d)", gv_ops[op->code].name, nfn, GV_ATTN_MAX_FN) : -1;
  g->nst = gv_attn_score_parse(gv_get_str(op, "score", ""), nfn, g->st, &why);
  if (g->nst < 0) return m ? gv_error_op(m, op, "%s: score attribute: %s", gv_ops[op->code].name, why) : -1;
  if (!gv_type_is_static(q) || !gv_type_is_static(k) || !gv_type_is_static(v)) return 1;
  int nb = g->nb = q->rank - 2;
  int64_t kc = gv_get_int(op, "k_contract", nb + 1), vc = gv_get_int(op, "v_contract", nb);
  if (nb < 0 || nb > 4 || k->rank != nb + 2 || v->rank != nb + 2 || (kc != nb && kc != nb + 1) || (vc != nb && vc != nb + 1))
    return m ? gv_error_op(m, op, "%s: q, k, v must have one rank (2 to 6) and k_contract / v_contract one of the last two dims",
                           gv_ops[op->code].name)
             : -1;
  g->kt = kc == nb, g->vt = vc == nb + 1;
  g->B = 1;
  for (int d = 0; d < nb; d++) {
    if (k->dims[d] != q->dims[d] || v->dims[d] != q->dims[d])
      return m ? gv_error_op(m, op, "%s: q, k and v differ in batch dim %d", gv_ops[op->code].name, d) : -1;
    g->bd[d] = q->dims[d], g->B *= q->dims[d];
  }
  g->Sq = q->dims[nb], g->D = q->dims[nb + 1];
  g->Sk = k->dims[g->kt ? nb + 1 : nb];
  int64_t kd = k->dims[g->kt ? nb : nb + 1];
  int64_t vs = v->dims[g->vt ? nb + 1 : nb];
  g->Dv = v->dims[g->vt ? nb : nb + 1];
  if (kd != g->D || vs != g->Sk)
    return m ? gv_error_op(m, op, "%s: head dim of k (%lld) or key count of v (%lld) does not match q / k", gv_ops[op->code].name,
                           (long long)kd, (long long)vs)
             : -1;
  return 0;
}

static int set_res(gv_module *m, gv_op *op, int i, gv_type t) {
  (void)m;
  op->res[i]->type = t;
  return 0;
}

int gv_infer_attention(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  geo g;
  int r = gv_attn_geometry(m, op, &g);
  if (r < 0) return -1;
  const gv_type *q = &op->opnds[0]->type;
  for (int i = 0; i < 3; i++)
    if (op->opnds[i]->type.dtype != GV_DT_UNKNOWN && op->opnds[i]->type.dtype != q->dtype)
      return gv_error_op(m, op, "%s: q, k and v must have one dtype", gv_ops[op->code].name);
  if (op->code == GV_OP_ATTENTION_GRAD) {
    for (int i = 0; i < 3; i++) set_res(m, op, i, op->opnds[i]->type);
    return 0;
  }
  if (r > 0) {
    set_res(m, op, 0, gv_type_unranked(q->dtype));
    return set_res(m, op, 1, gv_type_unranked(GV_DT_F32));
  }
  gv_type o = *q, l = gv_type_make(GV_DT_F32, g.nb + 1, q->dims);
  o.dims[g.nb + 1] = g.Dv;
  set_res(m, op, 0, o);
  return set_res(m, op, 1, l);
}

/* ---------------------------------------------------------------- evaluation */

typedef struct {
  const gv_tensor *t;
  int64_t st[GV_MAX_RANK]; /* per score dim (nb + 2): elements, 0 where broadcast */
} fnv;

static void fn_strides(const geo *g, const gv_tensor *t, fnv *f) {
  int sr = g->nb + 2, r = t->type.rank;
  int64_t s = 1;
  memset(f->st, 0, sizeof f->st);
  f->t = t;
  for (int d = r - 1; d >= 0; d--) {
    if (t->type.dims[d] != 1) f->st[sr - r + d] = s;
    s *= t->type.dims[d];
  }
}

/* q / k / v element offsets */
static int64_t qo(const geo *g, int64_t b, int64_t i, int64_t d) { return (b * g->Sq + i) * g->D + d; }
static int64_t ko(const geo *g, int64_t b, int64_t j, int64_t d) { return g->kt ? (b * g->D + d) * g->Sk + j : (b * g->Sk + j) * g->D + d; }
static int64_t vo(const geo *g, int64_t b, int64_t j, int64_t e) { return g->vt ? (b * g->Dv + e) * g->Sk + j : (b * g->Sk + j) * g->Dv + e; }

/* the transformed score row i of batch b into row[], slopes into sl[] (may be NULL) */
/* the dropout's factor of each score of row i of batch b into mk[] (scale or 0; 1 without dropout) */
static void mask_row(const geo *g, const gv_dropout *dp, uint64_t key, const int64_t *off, int64_t b, int64_t i, double *mk) {
  if (!g->drop) {
    for (int64_t j = 0; j < g->Sk; j++) mk[j] = 1;
    return;
  }
  int64_t c[GV_MAX_RANK];
  for (int d = g->nb - 1; d >= 0; d--) c[d] = b % g->bd[d], b /= g->bd[d];
  c[g->nb] = i;
  galv_dropout_desc dd = {0};
  dd.acc[0] = dp->acc[0], dd.acc[1] = dp->acc[1], dd.acc[2] = dp->acc[2], dd.rows = dp->rows;
  uint64_t h = galv_rng_lead(key, &dd, c, g->nb + 1, off, 0);
  for (int64_t j = 0; j < g->Sk; j++) mk[j] = galv_rng_last(h, j + off[g->nb + 1], dp->thr) ? (double)dp->scale : 0.0;
}

static void score_row(const geo *g, const gv_tensor *q, const gv_tensor *k, const fnv *fn, int nfn, int64_t b, int64_t i,
                      double *row, double *sl) {
  int64_t boff[GV_ATTN_MAX_FN] = {0}, rem = b;
  for (int d = g->nb - 1; d >= 0; d--) {
    int64_t x = rem % g->bd[d];
    rem /= g->bd[d];
    for (int f = 0; f < nfn; f++) boff[f] += x * fn[f].st[d];
  }
  for (int64_t j = 0; j < g->Sk; j++) {
    double s = 0, fv[GV_ATTN_MAX_FN], slope = 1;
    for (int64_t d = 0; d < g->D; d++) s += gv_tensor_get_f(q, qo(g, b, i, d)) * gv_tensor_get_f(k, ko(g, b, j, d));
    for (int f = 0; f < nfn; f++) fv[f] = gv_tensor_get_f(fn[f].t, boff[f] + i * fn[f].st[g->nb] + j * fn[f].st[g->nb + 1]);
    row[j] = gv_attn_score_apply(g->st, g->nst, s, fv, &slope);
    if (sl) sl[j] = slope;
  }
}

int gv_eval_attention(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  geo g;
  if (gv_attn_geometry(m, op, &g)) return gv_error_op(m, op, "cannot evaluate: types not static");
  int nf = g.nfn;
  fnv fn[GV_ATTN_MAX_FN];
  for (int f = 0; f < nf; f++) fn_strides(&g, in[fn0(op) + f], &fn[f]);
  gv_tensor *res[3];
  for (int r = 0; r < op->nres; r++) {
    const gv_type *t = &op->res[r]->type;
    if (!gv_type_is_static(t) || gv_type_numel(t) > ((int64_t)1 << 30)) return gv_error_op(m, op, "cannot evaluate: result too large");
    res[r] = gv_tensor_new(m->arena, *t);
  }
  /* dropout: the mask of galv.dropout over the scores [batch..., Sq, Sk] at each score's global coordinates */
  gv_dropout dp = {0};
  int64_t doff[GV_MAX_RANK] = {0};
  if (g.drop && gv_dropout_params(m, op, &dp)) return -1;
  for (int d = 0; g.off >= 0 && d < g.nb + 2; d++) doff[d] = gv_tensor_get_i(in[g.off], d);
  uint64_t key = galv_rng_key(dp.seed, dp.id, (uint64_t)gv_eval_step);
  double *row = malloc(sizeof(double) * (size_t)(3 * g.Sk + g.Dv + 1));
  if (!row) abort();
  double *sl = row + g.Sk, *mk = sl + g.Sk;
  const gv_tensor *q = in[0], *k = in[1], *v = in[2];
  if (op->code == GV_OP_ATTENTION) {
    for (int64_t b = 0; b < g.B; b++)
      for (int64_t i = 0; i < g.Sq; i++) {
        score_row(&g, q, k, fn, nf, b, i, row, NULL);
        mask_row(&g, &dp, key, doff, b, i, mk);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < g.Sk; j++) mx = row[j] > mx ? row[j] : mx;
        for (int64_t j = 0; j < g.Sk; j++) sum += row[j] = exp(row[j] - mx);
        for (int64_t e = 0; e < g.Dv; e++) {
          double a = 0;
          for (int64_t j = 0; j < g.Sk; j++) a += row[j] * mk[j] * gv_tensor_get_f(v, vo(&g, b, j, e));
          gv_tensor_set_f(res[0], (b * g.Sq + i) * g.Dv + e, a / sum);
        }
        gv_tensor_set_f(res[1], b * g.Sq + i, mx + log(sum));
      }
  } else {
    const gv_tensor *o = in[3], *dout = in[4], *lse = in[5];
    for (int r = 0; r < 3; r++)
      for (int64_t x = 0; x < gv_tensor_numel(res[r]); x++) gv_tensor_set_f(res[r], x, 0);
    for (int64_t b = 0; b < g.B; b++)
      for (int64_t i = 0; i < g.Sq; i++) {
        score_row(&g, q, k, fn, nf, b, i, row, sl);
        mask_row(&g, &dp, key, doff, b, i, mk);
        double Dr = 0, L = gv_tensor_get_f(lse, b * g.Sq + i);
        for (int64_t e = 0; e < g.Dv; e++) Dr += gv_tensor_get_f(dout, (b * g.Sq + i) * g.Dv + e) * gv_tensor_get_f(o, (b * g.Sq + i) * g.Dv + e);
        for (int64_t j = 0; j < g.Sk; j++) {
          double p = exp(row[j] - L), dpd = 0; /* dpd: dP_drop = dO V^T */
          for (int64_t e = 0; e < g.Dv; e++) {
            double de = gv_tensor_get_f(dout, (b * g.Sq + i) * g.Dv + e);
            dpd += de * gv_tensor_get_f(v, vo(&g, b, j, e));
            int64_t x = vo(&g, b, j, e);
            gv_tensor_set_f(res[2], x, gv_tensor_get_f(res[2], x) + p * mk[j] * de);
          }
          double ds = p * (dpd * mk[j] - Dr) * sl[j];
          for (int64_t d = 0; d < g.D; d++) {
            int64_t xq = qo(&g, b, i, d), xk = ko(&g, b, j, d);
            gv_tensor_set_f(res[0], xq, gv_tensor_get_f(res[0], xq) + ds * gv_tensor_get_f(k, xk));
            gv_tensor_set_f(res[1], xk, gv_tensor_get_f(res[1], xk) + ds * gv_tensor_get_f(q, xq));
          }
        }
      }
  }
  free(row);
  for (int r = 0; r < op->nres; r++) out[r] = res[r];
  return 0;
}

/* ---------------------------------------------------------------- gradient */

/* One attention_grad(q, k, v, o, dO, lse, fn...) gives dq, dk, dv; the
 * functor operands (masks, scales) get none, lse none either. */
int gv_grad_attention(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before) {
  if (!dres[0]) return 0;
  if (dres[1]) return gv_error_op(m, op, "gradient: attention's lse result has a gradient (not supported)");
  for (int i = 3; i < op->nopnds; i++)
    if (need[i]) return gv_error_op(m, op, "gradient: attention's score operand %d needs a gradient (not supported)", i - 3);
  if (!need[0] && !need[1] && !need[2]) return 0;
  int n = op->nopnds + 3;
  gv_value **in = gv_alloc(m->arena, sizeof *in * (size_t)n);
  in[0] = op->opnds[0], in[1] = op->opnds[1], in[2] = op->opnds[2];
  in[3] = op->res[0], in[4] = dres[0], in[5] = op->res[1];
  for (int i = 3; i < op->nopnds; i++) in[i + 3] = op->opnds[i];
  gv_op *g = gv_op_new(m, GV_OP_ATTENTION_GRAD, n, in, 3);
  size_t l = strlen(op->loc ? op->loc : "");
  char *loc = gv_alloc(m->arena, l + 6);
  memcpy(loc, op->loc ? op->loc : "", l);
  memcpy(loc + l, "/grad", 6);
  gv_op_set_loc(m, g, loc, op->onnx_op);
  for (int i = 0; i < op->nattrs; i++) /* the geometry and functor; not the forward's sharding or layer group */
    if (strcmp(op->attrs[i].name, "sharding") && strcmp(op->attrs[i].name, "layer")) gv_set_attr(m, g, &op->attrs[i]);
  if (gv_infer_attention(m, g, NULL)) return -1;
  gv_insert_before(before, g);
  for (int i = 0; i < 3; i++)
    if (need[i]) dopnds[i] = g->res[i];
  return 0;
}

/* ---------------------------------------------------------------- sharding */

/* The nb leading batch dims are pass factors of every q/k/v-shaped value
 * and of each functor operand dim aligned with them (not broadcast);
 * the sequence and head dims are not split. */
int gv_shard_attention(const gv_op *op, gv_shard_rule *r) {
  geo g;
  if (op->nopnds > GV_SHARD_MAX_VALUES || op->nres > GV_SHARD_MAX_VALUES || gv_attn_geometry(NULL, op, &g)) return 1;
  for (int i = 0; i < op->nopnds; i++)
    if (!gv_type_is_static(&op->opnds[i]->type)) return 1;
  memset(r, 0, sizeof *r);
  r->nvals[0] = op->nopnds, r->nvals[1] = op->nres;
  for (int i = 0; i < op->nopnds; i++) r->rank[0][i] = op->opnds[i]->type.rank;
  for (int i = 0; i < op->nres; i++) r->rank[1][i] = op->res[i]->type.rank;
  int f0 = fn0(op);
  for (int d = 0; d < g.nb; d++) {
    if (g.bd[d] == 1) continue;
    int f = r->nfactors++;
    r->size[f] = g.bd[d];
    r->kind[f] = GV_FACTOR_PASS;
    for (int side = 0; side < 2; side++) {
      int n = side ? op->nres : op->nopnds;
      for (int i = 0; i < n; i++) {
        const gv_type *t = side ? &op->res[i]->type : &op->opnds[i]->type;
        int dd = d;
        if (!side && i == g.off) continue; /* the dropout's offsets: this rank's, not split */
        if (!side && i >= f0) { /* a functor operand, aligned with the score from the right */
          dd = d - (g.nb + 2 - t->rank);
          if (dd < 0 || t->dims[dd] == 1) continue;
        }
        r->f[side][i][dd][r->nf[side][i][dd]++] = (int8_t)f;
      }
    }
  }
  return 0;
}
