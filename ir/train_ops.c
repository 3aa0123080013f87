/* train_ops.c — shape rules and reference evaluators of the training ops in
 * ir/ops.def (gather_grad, slice_grad, conv_grad_input, conv_grad_weight,
 * cross_entropy, cross_entropy_grad). Gradient rules (ir/grad.c), the loss
 * pass and the optimizer build them; semantics in docs/autodiff.md. Kept
 * apart from infer.c / eval.c, which hold the forward ops' rules. The
 * evaluators accumulate in double and favour plainness over speed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

static const gv_type *ot(const gv_op *op, int i) { return &op->opnds[i]->type; }

static int set_res(gv_module *m, gv_op *op, gv_type t) {
  if (t.rank > GV_MAX_RANK) return gv_error_op(m, op, "shape: result rank %d exceeds the maximum rank %d", t.rank, GV_MAX_RANK);
  op->res[0]->type = t;
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

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

/* ---------------------------------------------------------------- gather_grad */

/* gather_grad(dy, indices) {axis, dim}: the data gradient of gather(data,
 * indices) {axis}: data's shape is dy[:axis] + [dim] + dy[axis+rank(indices):]. */
int gv_infer_gather_grad(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *dy = ot(op, 0), *ix = ot(op, 1);
  int64_t dim = gv_get_int(op, "dim", -1), axis = gv_get_int(op, "axis", 0);
  if (dim < 0) return gv_error_op(m, op, "shape: gather_grad needs a non-negative 'dim' attribute");
  if (dy->rank < 0 || ix->rank < 0) return set_res(m, op, gv_type_unranked(dy->dtype));
  int r = dy->rank - ix->rank + 1;
  if (r < 1 || axis < 0 || axis >= r)
    return gv_error_op(m, op, "shape: gather_grad axis %lld does not fit dy rank %d and indices rank %d", (long long)axis,
                       dy->rank, ix->rank);
  gv_type t = gv_type_make(dy->dtype, r, NULL);
  for (int d = 0; d < r; d++) t.dims[d] = d < axis ? dy->dims[d] : d == axis ? dim : dy->dims[d + ix->rank - 1];
  return set_res(m, op, t);
}

int gv_eval_gather_grad(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  const gv_type *dt = &in[0]->type;
  int axis = (int)gv_get_int(op, "axis", 0), ir = in[1]->type.rank;
  int64_t dim = gv_get_int(op, "dim", 0);
  int64_t outer = prod(dt->dims, 0, axis), ni = gv_tensor_numel(in[1]), inner = prod(dt->dims, axis + ir, dt->rank);
  int64_t n = gv_tensor_numel(o);
  double *acc = calloc((size_t)(n ? n : 1), sizeof *acc);
  if (!acc) return gv_error_op(m, op, "cannot evaluate: out of memory");
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < ni; j++) {
      int64_t row = gv_tensor_get_i(in[1], j);
      if (row < 0) row += dim;
      if (row < 0 || row >= dim) {
        free(acc);
        return gv_error_op(m, op, "gather_grad index %lld out of range [0, %lld)", (long long)gv_tensor_get_i(in[1], j),
                           (long long)dim);
      }
      for (int64_t k = 0; k < inner; k++)
        acc[(a * dim + row) * inner + k] += gv_tensor_get_f(in[0], (a * ni + j) * inner + k);
    }
  for (int64_t i = 0; i < n; i++) gv_tensor_set_f(o, i, acc[i]);
  free(acc);
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- slice_grad */

/* slice_grad(dy) {starts, ends, axes, steps, shape}: zeros of shape with dy
 * written at the window of the static slice with the same attributes. */
int gv_infer_slice_grad(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const int64_t *sh;
  int n = gv_get_ints(op, "shape", &sh);
  if (n < 0 || n > GV_MAX_RANK) return gv_error_op(m, op, "shape: slice_grad needs a 'shape' attribute of rank <= %d", GV_MAX_RANK);
  gv_type t = gv_type_make(ot(op, 0)->dtype, n, sh);
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK];
  bool aff[GV_MAX_RANK];
  if (gv_slice_window(m, op, &t, NULL, start, step, count, aff) < 0) return -1;
  const gv_type *dy = ot(op, 0);
  if (dy->rank >= 0 && dy->rank != n) return gv_error_op(m, op, "shape: slice_grad dy rank %d differs from shape rank %d", dy->rank, n);
  for (int d = 0; d < n && dy->rank >= 0; d++)
    if (dy->dims[d] >= 0 && count[d] >= 0 && dy->dims[d] != count[d])
      return gv_error_op(m, op, "shape mismatch: slice_grad dy dim %d is %lld, the window has %lld", d,
                         (long long)dy->dims[d], (long long)count[d]);
  return set_res(m, op, t);
}

int gv_eval_slice_grad(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK], os[GV_MAX_RANK], idx[GV_MAX_RANK] = {0};
  bool aff[GV_MAX_RANK];
  if (gv_slice_window(m, op, &o->type, NULL, start, step, count, aff) < 0) return -1;
  int r = o->type.rank;
  int64_t k = 1;
  for (int d = r - 1; d >= 0; d--) {
    os[d] = k;
    k *= o->type.dims[d];
  }
  int64_t n = gv_tensor_numel(in[0]);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < r; d++) off += (start[d] + idx[d] * step[d]) * os[d];
    gv_tensor_set_f(o, off, gv_tensor_get_f(in[0], i));
    for (int d = r - 1; d >= 0; d--) {
      if (++idx[d] < in[0]->type.dims[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- conv grads */

/* conv_grad_input(dy, w) and conv_grad_weight(x, dy), attrs as conv plus
 * shape (the result: x's or w's shape). */
int gv_infer_conv_grad(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const int64_t *sh;
  int n = gv_get_ints(op, "shape", &sh);
  if (n < 3 || n > GV_MAX_RANK) return gv_error_op(m, op, "shape: %s needs a 'shape' attribute of rank >= 3", gv_ops[op->code].name);
  const gv_type *a = ot(op, 0), *b = ot(op, 1);
  if ((a->rank >= 0 && a->rank != n) || (b->rank >= 0 && b->rank != n))
    return gv_error_op(m, op, "shape: %s operands must have rank %d", gv_ops[op->code].name, n);
  return set_res(m, op, gv_type_make(a->dtype, n, sh));
}

/* The one loop nest of conv, visited with a callback-free switch: mode 0
 * accumulates dx += w * dy, mode 1 dw += x * dy. */
int gv_eval_conv_grad(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  bool wmode = op->code == GV_OP_CONV_GRAD_WEIGHT;
  const gv_tensor *dyt = wmode ? in[1] : in[0], *other = wmode ? in[0] : in[1];
  const gv_type *xt = wmode ? &other->type : &o->type, *wt = wmode ? &o->type : &other->type, *yt = &dyt->type;
  int r = xt->rank, S = r - 2;
  const int64_t *sv, *pv, *dv;
  int ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv), nd = gv_get_ints(op, "dilations", &dv);
  int64_t G = gv_get_int(op, "group", 1);
  int64_t Nn = xt->dims[0], C = xt->dims[1], Mo = wt->dims[0], Cg = wt->dims[1];
  if (G < 1 || C != Cg * G || Mo % G || yt->dims[1] != Mo || yt->dims[0] != Nn)
    return gv_error_op(m, op, "shape: %s channel counts do not match", gv_ops[op->code].name);
  int64_t Mg = Mo / G, stv[GV_MAX_RANK], pb[GV_MAX_RANK], dil[GV_MAX_RANK];
  for (int s = 0; s < S; s++) {
    stv[s] = ns == S ? sv[s] : 1;
    pb[s] = np == 2 * S ? pv[s] : 0;
    dil[s] = nd == S ? dv[s] : 1;
  }
  int64_t P = prod(yt->dims, 2, r), KK = prod(wt->dims, 2, r), IS = prod(xt->dims, 2, r);
  int64_t no = gv_tensor_numel(o);
  double *acc = calloc((size_t)(no ? no : 1), sizeof *acc);
  if (!acc) return gv_error_op(m, op, "cannot evaluate: out of memory");
  for (int64_t n = 0; n < Nn; n++)
    for (int64_t mo = 0; mo < Mo; mo++) {
      int64_t g = mo / Mg;
      for (int64_t p = 0; p < P; p++) {
        double dy = gv_tensor_get_f(dyt, (n * Mo + mo) * P + p);
        if (dy == 0.0) continue;
        for (int64_t c = 0; c < Cg; c++)
          for (int64_t k = 0; k < KK; k++) {
            int64_t off = 0, pq = p, kq = k, pos[GV_MAX_RANK];
            bool inside = true;
            for (int s = S - 1; s >= 0; s--) {
              pos[s] = (pq % yt->dims[2 + s]) * stv[s] - pb[s] + (kq % wt->dims[2 + s]) * dil[s];
              pq /= yt->dims[2 + s];
              kq /= wt->dims[2 + s];
            }
            for (int s = 0; s < S && inside; s++) {
              if (pos[s] < 0 || pos[s] >= xt->dims[2 + s]) inside = false;
              off = off * xt->dims[2 + s] + pos[s];
            }
            if (!inside) continue;
            int64_t xi = (n * C + g * Cg + c) * IS + off, wi = (mo * Cg + c) * KK + k;
            if (wmode) acc[wi] += gv_tensor_get_f(other, xi) * dy;
            else acc[xi] += gv_tensor_get_f(other, wi) * dy;
          }
      }
    }
  for (int64_t i = 0; i < no; i++) gv_tensor_set_f(o, i, acc[i]);
  free(acc);
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- cross entropy */

static int ce_check(gv_module *m, gv_op *op) {
  const gv_type *x = ot(op, 0), *l = ot(op, 1);
  if (x->dtype != GV_DT_UNKNOWN && !gv_dtype_is_float(x->dtype))
    return gv_error_op(m, op, "cross_entropy logits must be floating point, got %s", gv_dtype_name(x->dtype));
  if (l->dtype != GV_DT_UNKNOWN && !gv_dtype_is_int(l->dtype))
    return gv_error_op(m, op, "cross_entropy labels must be integers, got %s", gv_dtype_name(l->dtype));
  if (x->rank >= 0 && l->rank >= 0) {
    if (x->rank < 1 || l->rank != x->rank - 1)
      return gv_error_op(m, op, "shape: cross_entropy labels rank %d must be logits rank %d minus one", l->rank, x->rank);
    for (int d = 0; d < l->rank; d++)
      if (l->dims[d] >= 0 && x->dims[d] >= 0 && l->dims[d] != x->dims[d])
        return gv_error_op(m, op, "shape mismatch: cross_entropy labels dim %d is %lld, logits have %lld", d,
                           (long long)l->dims[d], (long long)x->dims[d]);
  }
  return 0;
}

/* cross_entropy(logits [.., C], labels [..]) {ignore_index}: a scalar of the
 * logits' dtype, the mean of -log_softmax(logits)[label] over rows whose
 * label is not ignore_index (0 when every row is ignored; torch: NaN). */
int gv_infer_cross_entropy(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  if (ce_check(m, op)) return -1;
  gv_dtype dt = ot(op, 0)->dtype;
  return set_res(m, op, gv_type_make(dt == GV_DT_UNKNOWN ? GV_DT_F32 : dt, 0, NULL));
}

/* cross_entropy_grad(dloss, logits, labels): d loss / d logits. */
int gv_infer_cross_entropy_grad(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  gv_op tmp = *op;
  tmp.opnds = op->opnds + 1;
  tmp.nopnds = 2;
  if (ce_check(m, &tmp)) return -1;
  return set_res(m, op, *ot(op, 1));
}

/* Row statistics shared by both evaluators: per row max and log-sum-exp. */
static int ce_rows(gv_module *m, const gv_op *op, const gv_tensor *x, const gv_tensor *lab, int64_t *rows, int64_t *C,
                   double **lse, int64_t *count) {
  *C = x->type.dims[x->type.rank - 1];
  *rows = *C ? gv_tensor_numel(x) / *C : 0;
  int64_t ign = gv_get_int(op, "ignore_index", -100);
  *lse = malloc((size_t)(*rows ? *rows : 1) * sizeof **lse);
  if (!*lse) return gv_error_op(m, op, "cannot evaluate: out of memory");
  *count = 0;
  for (int64_t i = 0; i < *rows; i++) {
    int64_t y = gv_tensor_get_i(lab, i);
    if (y == ign) continue;
    if (y < 0 || y >= *C) {
      free(*lse);
      return gv_error_op(m, op, "cross_entropy label %lld out of range [0, %lld)", (long long)y, (long long)*C);
    }
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < *C; c++) mx = fmax(mx, gv_tensor_get_f(x, i * *C + c));
    for (int64_t c = 0; c < *C; c++) s += exp(gv_tensor_get_f(x, i * *C + c) - mx);
    (*lse)[i] = mx + log(s);
    (*count)++;
  }
  return 0;
}

int gv_eval_cross_entropy(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  int64_t rows, C, count, ign = gv_get_int(op, "ignore_index", -100);
  double *lse, sum = 0;
  if (ce_rows(m, op, in[0], in[1], &rows, &C, &lse, &count)) return -1;
  for (int64_t i = 0; i < rows; i++) {
    int64_t y = gv_tensor_get_i(in[1], i);
    if (y != ign) sum += lse[i] - gv_tensor_get_f(in[0], i * C + y);
  }
  free(lse);
  gv_tensor_set_f(o, 0, count ? sum / (double)count : 0.0);
  out[0] = o;
  return 0;
}

int gv_eval_cross_entropy_grad(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op);
  if (!o) return -1;
  if (gv_tensor_numel(in[0]) != 1) return gv_error_op(m, op, "cross_entropy_grad: dloss must have one element");
  int64_t rows, C, count, ign = gv_get_int(op, "ignore_index", -100);
  double *lse;
  if (ce_rows(m, op, in[1], in[2], &rows, &C, &lse, &count)) return -1;
  double scale = count ? gv_tensor_get_f(in[0], 0) / (double)count : 0.0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t y = gv_tensor_get_i(in[2], i);
    for (int64_t c = 0; c < C; c++) {
      double g = 0;
      if (y != ign) g = (exp(gv_tensor_get_f(in[1], i * C + c) - lse[i]) - (c == y ? 1.0 : 0.0)) * scale;
      gv_tensor_set_f(o, i * C + c, g);
    }
  }
  free(lse);
  out[0] = o;
  return 0;
}
