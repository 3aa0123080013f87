/* pool_ops.c — shape rules and reference evaluators of galv.pool and
 * galv.pool_grad (ir/ops.def, docs/ops.md): ONNX MaxPool / AveragePool over
 * the S spatial dims of NC + S tensors. Kept apart from infer.c / eval.c
 * because the two ops share one window geometry (pool_geom), which the
 * kernel calls (codegen/kcall.c) read the same way. The evaluators
 * accumulate in double and favour plainness over speed.
 *
 * Window of output o along a spatial dim: input positions o*stride - pad_begin
 * + j*dilation, j < kernel. max ignores positions outside the input (the
 * first maximum in window order wins, as torch and onnxruntime pick it); avg
 * divides by the positions inside the input, or with count_include_pad by
 * those inside the padded extent [-pad_begin, in + pad_end). ceil_mode
 * rounds the output size up but drops a last window that would start in the
 * end padding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

typedef struct {
  int S;
  bool max, cip, ceil;
  int64_t k[GV_MAX_RANK], st[GV_MAX_RANK], pb[GV_MAX_RANK], pe[GV_MAX_RANK], dl[GV_MAX_RANK];
} geom;

/* The attributes of a pool / pool_grad op for an input of rank r. */
static int pool_geom(gv_module *m, const gv_op *op, int r, geom *g) {
  const char *mode = gv_get_str(op, "mode", "");
  g->max = strcmp(mode, "max") == 0;
  if (!g->max && strcmp(mode, "avg") != 0)
    return gv_error_op(m, op, "shape: %s mode must be \"max\" or \"avg\"", gv_ops[op->code].name);
  if (r < 3) return gv_error_op(m, op, "shape: %s input must have rank >= 3, got %d", gv_ops[op->code].name, r);
  int S = g->S = r - 2;
  const int64_t *kv, *sv, *pv, *dv;
  int nk = gv_get_ints(op, "kernel", &kv), ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv),
      nd = gv_get_ints(op, "dilations", &dv);
  if (nk != S || (ns >= 0 && ns != S) || (np >= 0 && np != 2 * S) || (nd >= 0 && nd != S))
    return gv_error_op(m, op, "shape: %s kernel/strides/pads/dilations do not match %d spatial dims", gv_ops[op->code].name, S);
  g->ceil = gv_get_int(op, "ceil_mode", 0) != 0;
  g->cip = gv_get_int(op, "count_include_pad", 0) != 0;
  for (int s = 0; s < S; s++) {
    g->k[s] = kv[s], g->st[s] = ns == S ? sv[s] : 1, g->dl[s] = nd == S ? dv[s] : 1;
    g->pb[s] = np == 2 * S ? pv[s] : 0, g->pe[s] = np == 2 * S ? pv[S + s] : 0;
    if (g->k[s] < 1 || g->st[s] < 1 || g->dl[s] < 1 || g->pb[s] < 0 || g->pe[s] < 0 || g->k[s] > (1 << 20) ||
        g->st[s] > (1 << 20) || g->dl[s] > (1 << 20) || g->pb[s] > (1 << 20) || g->pe[s] > (1 << 20))
      return gv_error_op(m, op, "shape: %s kernel/stride/dilation must be positive and pads non-negative",
                         gv_ops[op->code].name);
    if (g->pb[s] >= g->k[s] * g->dl[s] || g->pe[s] >= g->k[s] * g->dl[s])
      return gv_error_op(m, op, "shape: %s pads must be smaller than the kernel extent", gv_ops[op->code].name);
  }
  return 0;
}

/* Output size along spatial dim s for input size in (-1: unknown), or -2 when the window does not fit. */
static int64_t out_dim(const geom *g, int s, int64_t in) {
  if (in < 0) return -1;
  if (in > ((int64_t)1 << 40)) return -2;
  int64_t span = in + g->pb[s] + g->pe[s] - g->dl[s] * (g->k[s] - 1) - 1;
  if (span < 0) return -2;
  int64_t o = (g->ceil ? span + g->st[s] - 1 : span) / g->st[s] + 1;
  if (g->ceil && (o - 1) * g->st[s] >= in + g->pb[s]) o--;
  return o;
}

int gv_infer_pool(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = &op->opnds[0]->type;
  if (x->rank < 0) {
    op->res[0]->type = gv_type_unranked(x->dtype);
    return 0;
  }
  geom g;
  if (pool_geom(m, op, x->rank, &g)) return -1;
  if (op->code == GV_OP_POOL_GRAD) {
    const gv_type *dy = &op->opnds[1]->type;
    if (dy->rank >= 0 && dy->rank != x->rank)
      return gv_error_op(m, op, "shape: pool_grad dy rank %d differs from x rank %d", dy->rank, x->rank);
    op->res[0]->type = *x;
    return 0;
  }
  gv_type t = *x;
  for (int s = 0; s < g.S; s++) {
    t.dims[2 + s] = out_dim(&g, s, x->dims[2 + s]);
    if (t.dims[2 + s] == -2)
      return gv_error_op(m, op, "shape: pool window does not fit spatial dim %d of size %lld", s, (long long)x->dims[2 + s]);
  }
  op->res[0]->type = t;
  return 0;
}

/* Visits output element p of one (n, c) plane: calls back with every input
 * offset of its window (inside the input) and returns the avg divisor. */
typedef struct {
  const geom *g;
  const int64_t *in, *out;
} plane;

static int64_t window(const plane *pl, int64_t p, int64_t *offs, int64_t *noffs) {
  const geom *g = pl->g;
  int S = g->S;
  int64_t o[GV_MAX_RANK], KK = 1, count = 1;
  for (int s = S - 1; s >= 0; s--) o[s] = p % pl->out[s], p /= pl->out[s];
  for (int s = 0; s < S; s++) KK *= g->k[s];
  if (g->cip) /* the window clipped to the padded extent */
    for (int s = 0; s < S; s++) {
      int64_t c = 0;
      for (int64_t j = 0; j < g->k[s]; j++) {
        int64_t q = o[s] * g->st[s] - g->pb[s] + j * g->dl[s];
        c += q >= -g->pb[s] && q < pl->in[s] + g->pe[s];
      }
      count *= c;
    }
  *noffs = 0;
  for (int64_t kk = 0; kk < KK; kk++) {
    int64_t q = kk, kc[GV_MAX_RANK], off = 0;
    bool inside = true;
    for (int s = S - 1; s >= 0; s--) kc[s] = q % g->k[s], q /= g->k[s];
    for (int s = 0; s < S && inside; s++) {
      int64_t pos = o[s] * g->st[s] - g->pb[s] + kc[s] * g->dl[s];
      inside = pos >= 0 && pos < pl->in[s];
      off = off * pl->in[s] + pos;
    }
    if (inside) offs[(*noffs)++] = off;
  }
  return g->cip ? count : *noffs;
}

/* pool (mode 0) writes y; pool_grad (mode 1) accumulates dx from dy. */
static int run(gv_module *m, const gv_op *op, const gv_tensor *x, const gv_tensor *dy, gv_tensor *o) {
  geom g;
  if (pool_geom(m, op, x->type.rank, &g)) return -1;
  const gv_type *yt = dy ? &dy->type : &o->type;
  plane pl = {&g, x->type.dims + 2, yt->dims + 2};
  int64_t IS = 1, P = 1, KK = 1;
  for (int s = 0; s < g.S; s++) IS *= x->type.dims[2 + s], P *= yt->dims[2 + s], KK *= g.k[s];
  int64_t planes = x->type.dims[0] * x->type.dims[1];
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)KK);
  double *acc = dy ? calloc((size_t)(gv_tensor_numel(o) ? gv_tensor_numel(o) : 1), sizeof *acc) : NULL;
  if (!offs || (dy && !acc)) {
    free(offs);
    free(acc);
    return gv_error_op(m, op, "cannot evaluate: out of memory");
  }
  for (int64_t pi = 0; pi < planes; pi++)
    for (int64_t p = 0; p < P; p++) {
      int64_t n, cnt = window(&pl, p, offs, &n);
      if (g.max) {
        int64_t best = -1;
        double bv = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
          double v = gv_tensor_get_f(x, pi * IS + offs[i]);
          if (best < 0 || v > bv || (isnan(v) && !isnan(bv))) best = offs[i], bv = v;
        }
        if (dy) {
          if (best >= 0) acc[pi * IS + best] += gv_tensor_get_f(dy, pi * P + p);
        } else {
          gv_tensor_set_f(o, pi * P + p, bv);
        }
      } else if (dy) {
        double v = cnt ? gv_tensor_get_f(dy, pi * P + p) / (double)cnt : 0.0;
        for (int64_t i = 0; i < n; i++) acc[pi * IS + offs[i]] += v;
      } else {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += gv_tensor_get_f(x, pi * IS + offs[i]);
        gv_tensor_set_f(o, pi * P + p, cnt ? s / (double)cnt : 0.0);
      }
    }
  if (dy)
    for (int64_t i = 0; i < gv_tensor_numel(o); i++) gv_tensor_set_f(o, i, acc[i]);
  free(offs);
  free(acc);
  return 0;
}

static gv_tensor *mkout(gv_module *m, const gv_op *op) {
  const gv_type *t = &op->res[0]->type;
  if (t->dtype == GV_DT_UNKNOWN || !gv_type_is_static(t) || gv_type_numel(t) < 0 ||
      gv_type_numel(t) > ((int64_t)1 << 34) / (int64_t)gv_dtype_size(t->dtype)) {
    gv_error_op(m, op, "cannot evaluate: result type is not static or too large");
    return NULL;
  }
  return gv_tensor_new(m->arena, *t);
}

int gv_eval_pool(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  if (op->code == GV_OP_POOL_GRAD) {
    const gv_type *dy = &in[1]->type;
    if (dy->rank != in[0]->type.rank) return gv_error_op(m, op, "cannot evaluate: pool_grad dy rank differs from x rank");
    geom g;
    if (pool_geom(m, op, in[0]->type.rank, &g)) return -1;
    for (int s = 0; s < g.S; s++)
      if (dy->dims[2 + s] != out_dim(&g, s, in[0]->type.dims[2 + s]) || dy->dims[0] != in[0]->type.dims[0] ||
          dy->dims[1] != in[0]->type.dims[1])
        return gv_error_op(m, op, "cannot evaluate: pool_grad dy does not match the pool of x");
  }
  if (run(m, op, in[0], op->code == GV_OP_POOL_GRAD ? in[1] : NULL, o)) return -1;
  out[0] = o;
  return 0;
}
