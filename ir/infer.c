/* infer.c — shape and dtype rules of the core ops, one function per op
 * family as named in ir/ops.def (semantics: docs/ops.md).
 *
 * Each rule sets the result types of one op from its operand types, its
 * attributes and, where the result shape depends on data (reshape, expand,
 * slice, tile, trilu, constant_of_shape, range), the operand values that the
 * caller knows. Unknown inputs give unknown outputs (unknown dims or an
 * unranked type), never an error; only a real mismatch is an error, reported
 * on one line containing "shape" (or "overflow" when an element count does not
 * fit in int64). The slice window and broadcast-stride helpers shared with
 * the evaluator live here too (ir/shape_rules.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shape_rules.h"

/* ---------------------------------------------------------------- helpers */

typedef struct {
  char s[160];
} tbuf;

static const char *tstr(const gv_type *t, tbuf *b) {
  gv_type_str(t, b->s, sizeof b->s);
  return b->s;
}

static gv_type unranked_like(gv_dtype dt) { return gv_type_unranked(dt); }

static gv_type ranked_unknown(gv_dtype dt, int rank) { return gv_type_make(dt, rank, NULL); }

/* Every result type passes through here: the rank limit and the int64
 * element-count limit are checked once for all rules. */
static int set_res(gv_module *m, gv_op *op, int i, gv_type t) {
  if (t.rank > GV_MAX_RANK)
    return gv_error_op(m, op, "shape: result rank %d exceeds the maximum rank %d", t.rank, GV_MAX_RANK);
  for (int d = 0; d < t.rank; d++)
    if (t.dims[d] < 0) t.dims[d] = GV_DIM_UNKNOWN;
  /* A product of known dims overflowing is an error even when other dims
   * are unknown: no value of the unknown dims makes it fit. */
  int64_t n = 1;
  bool zero = false;
  for (int d = 0; d < t.rank; d++)
    if (t.dims[d] == 0) zero = true;
  for (int d = 0; d < t.rank && !zero; d++) {
    if (t.dims[d] < 0) continue;
    if (t.dims[d] != 0 && n > INT64_MAX / t.dims[d]) {
      tbuf b;
      return gv_error_op(m, op, "overflow: element count of result %s does not fit in int64", tstr(&t, &b));
    }
    n *= t.dims[d];
  }
  if (t.dtype != GV_DT_UNKNOWN && t.rank >= 0 && !zero) {
    size_t es = gv_dtype_size(t.dtype);
    if (gv_type_is_static(&t) && es && n > INT64_MAX / (int64_t)es) {
      tbuf b;
      return gv_error_op(m, op, "overflow: byte size of result %s does not fit in int64", tstr(&t, &b));
    }
  }
  op->res[i]->type = t;
  return 0;
}

static const gv_type *opt(const gv_op *op, int i) { return &op->opnds[i]->type; }

int gv_norm_axis(int64_t axis, int rank) {
  if (axis < -(int64_t)rank || axis >= rank) return -1;
  return (int)(axis < 0 ? axis + rank : axis);
}

/* Reads a small 1-D (or scalar) integer tensor into buf. Returns the count,
 * or -1 when it has more than cap elements. */
static int read_ints(const gv_tensor *t, int64_t *buf, int cap) {
  int64_t n = gv_tensor_numel(t);
  if (n < 0 || n > cap) return -1;
  for (int64_t i = 0; i < n; i++) buf[i] = gv_tensor_get_i(t, i);
  return (int)n;
}

/* Numpy broadcasting of two types into *out. Unknown dims broadcast
 * optimistically: ? with 1 is ?, ? with n>1 is n. Returns false on a real
 * mismatch. */
static bool bcast2(const gv_type *a, const gv_type *b, gv_type *out) {
  if (a->rank < 0 || b->rank < 0) {
    *out = unranked_like(out->dtype);
    return true;
  }
  int r = a->rank > b->rank ? a->rank : b->rank;
  gv_dtype dt = out->dtype;
  *out = gv_type_make(dt, r, NULL);
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1, d;
    if (da == 1) d = db;
    else if (db == 1) d = da;
    else if (da < 0) d = db;
    else if (db < 0) d = da;
    else if (da == db) d = da;
    else return false;
    out->dims[i] = d;
  }
  return true;
}

static gv_dtype pick_dtype(gv_dtype a, gv_dtype b) { return a != GV_DT_UNKNOWN ? a : b; }

static int dtype_match(gv_module *m, gv_op *op, gv_dtype a, gv_dtype b) {
  if (a != GV_DT_UNKNOWN && b != GV_DT_UNKNOWN && a != b)
    return gv_error_op(m, op, "shape/type mismatch: operand dtypes %s and %s differ", gv_dtype_name(a),
                       gv_dtype_name(b));
  return 0;
}

static int bcast_error(gv_module *m, gv_op *op, const gv_type *a, const gv_type *b) {
  tbuf x, y;
  return gv_error_op(m, op, "shape mismatch: cannot broadcast %s and %s", tstr(a, &x), tstr(b, &y));
}

/* Unidirectional check: can x be broadcast to the (static-form) target? */
static int check_expand_to(gv_module *m, gv_op *op, const gv_type *x, const gv_type *target) {
  if (x->rank < 0 || target->rank < 0) return 0;
  gv_type o = *target;
  tbuf a, b;
  if (x->rank > target->rank || !bcast2(x, target, &o))
    return gv_error_op(m, op, "shape mismatch: %s cannot be expanded to %s", tstr(x, &a), tstr(target, &b));
  for (int i = 0; i < o.rank; i++)
    if (target->dims[i] >= 0 && o.dims[i] >= 0 && o.dims[i] != target->dims[i])
      return gv_error_op(m, op, "shape mismatch: %s cannot be expanded to %s", tstr(x, &a), tstr(target, &b));
  return 0;
}

/* Product of dims [lo, hi) of t: -1 when one is unknown, -2 on overflow. */
static int64_t dims_prod(const gv_type *t, int lo, int hi) {
  int64_t n = 1;
  bool unknown = false;
  for (int i = lo; i < hi; i++) {
    if (t->dims[i] == 0) return 0;
    if (t->dims[i] < 0) unknown = true;
  }
  if (unknown) return -1;
  for (int i = lo; i < hi; i++) {
    if (n > INT64_MAX / t->dims[i]) return -2;
    n *= t->dims[i];
  }
  return n;
}

/* ---------------------------------------------------------------- simple families */

int gv_infer_none(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)m, (void)op, (void)values;
  return 0;
}

int gv_infer_constant(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_attr *a = gv_get_attr(op, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t)
    return gv_error_op(m, op, "constant has no tensor 'value' attribute");
  if (!gv_type_is_static(&a->u.t->type))
    return gv_error_op(m, op, "shape: constant value type is not static");
  return set_res(m, op, 0, a->u.t->type);
}

int gv_infer_shape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank < 0) return set_res(m, op, 0, ranked_unknown(GV_DT_I64, 1));
  int64_t r = x->rank, s = gv_get_int(op, "start", 0), e = gv_get_int(op, "end", r);
  /* ONNX Shape-15: negative bounds count from the end, then clamp. */
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  int64_t n = e > s ? e - s : 0;
  return set_res(m, op, 0, gv_type_make(GV_DT_I64, 1, &n));
}

int gv_infer_cast(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_attr *a = gv_get_attr(op, "to");
  if (!a || a->kind != GV_ATTR_TYPE) return gv_error_op(m, op, "cast has no dtype attribute 'to'");
  gv_type t = *opt(op, 0);
  t.dtype = a->u.ty;
  return set_res(m, op, 0, t);
}

int gv_infer_unary(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  gv_type t = *opt(op, 0);
  if (op->code == GV_OP_NOT && t.dtype != GV_DT_UNKNOWN && t.dtype != GV_DT_BOOL)
    return gv_error_op(m, op, "not expects an i1 operand, got %s", gv_dtype_name(t.dtype));
  return set_res(m, op, 0, t);
}

int gv_infer_same(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank >= 0 && gv_get_attr(op, "axis")) {
    int64_t ax = gv_get_int(op, "axis", -1);
    if (gv_norm_axis(ax, x->rank < 1 ? 1 : x->rank) < 0)
      return gv_error_op(m, op, "shape: axis %lld out of range for rank %d", (long long)ax, x->rank);
  }
  return set_res(m, op, 0, *x);
}

int gv_infer_binary(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *a = opt(op, 0), *b = opt(op, 1);
  /* pow is the one binary op whose exponent may have another dtype (ONNX Pow T1). */
  if (op->code != GV_OP_POW && dtype_match(m, op, a->dtype, b->dtype)) return -1;
  if ((op->code == GV_OP_AND || op->code == GV_OP_OR) &&
      ((a->dtype != GV_DT_UNKNOWN && a->dtype != GV_DT_BOOL) || (b->dtype != GV_DT_UNKNOWN && b->dtype != GV_DT_BOOL)))
    return gv_error_op(m, op, "%s expects i1 operands", gv_ops[op->code].name);
  gv_type o;
  o.dtype = op->code == GV_OP_POW ? a->dtype : pick_dtype(a->dtype, b->dtype);
  if (!bcast2(a, b, &o)) return bcast_error(m, op, a, b);
  return set_res(m, op, 0, o);
}

int gv_infer_compare(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *a = opt(op, 0), *b = opt(op, 1);
  if (dtype_match(m, op, a->dtype, b->dtype)) return -1;
  gv_type o;
  o.dtype = GV_DT_BOOL;
  if (!bcast2(a, b, &o)) return bcast_error(m, op, a, b);
  return set_res(m, op, 0, o);
}

int gv_infer_where(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *c = opt(op, 0), *a = opt(op, 1), *b = opt(op, 2);
  if (c->dtype != GV_DT_UNKNOWN && c->dtype != GV_DT_BOOL)
    return gv_error_op(m, op, "where condition must be i1, got %s", gv_dtype_name(c->dtype));
  if (dtype_match(m, op, a->dtype, b->dtype)) return -1;
  gv_type ab, o;
  ab.dtype = o.dtype = pick_dtype(a->dtype, b->dtype);
  if (!bcast2(a, b, &ab)) return bcast_error(m, op, a, b);
  if (!bcast2(c, &ab, &o)) return bcast_error(m, op, c, &ab);
  return set_res(m, op, 0, o);
}

/* ---------------------------------------------------------------- reshape family */

int gv_infer_reshape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *x = opt(op, 0);
  int64_t xn = gv_type_numel(x);
  tbuf a, b;
  if (op->nopnds < 2) {
    /* Static form: the result type is the target shape. */
    gv_type t = op->res[0]->type;
    if (t.dtype == GV_DT_UNKNOWN) t.dtype = x->dtype;
    if (!gv_type_is_static(&t))
      return gv_error_op(m, op, "shape: reshape without a shape operand needs a static result type, got %s",
                         tstr(&t, &a));
    int64_t tn = gv_type_numel(&t);
    if (xn >= 0 && tn >= 0 && xn != tn)
      return gv_error_op(m, op, "shape mismatch: reshape of %s to %s changes the element count", tstr(x, &a),
                         tstr(&t, &b));
    return set_res(m, op, 0, t);
  }
  const gv_tensor *sv = values ? values[1] : NULL;
  if (!sv) {
    /* The target length still fixes the rank; the dims stay unknown. */
    const gv_type *st = opt(op, 1);
    if (st->rank != 1 || st->dims[0] < 0) return set_res(m, op, 0, unranked_like(x->dtype));
    if (st->dims[0] > GV_MAX_RANK)
      return gv_error_op(m, op, "shape: reshape target rank %lld exceeds the maximum rank %d",
                         (long long)st->dims[0], GV_MAX_RANK);
    return set_res(m, op, 0, ranked_unknown(x->dtype, (int)st->dims[0]));
  }
  int64_t tv[GV_MAX_RANK];
  int n = read_ints(sv, tv, GV_MAX_RANK);
  if (n < 0) return gv_error_op(m, op, "shape: reshape target has more than %d dims", GV_MAX_RANK);
  bool allowzero = gv_get_int(op, "allowzero", 0) != 0;
  gv_type t = ranked_unknown(x->dtype, n);
  int infer_at = -1;
  for (int i = 0; i < n; i++) {
    if (tv[i] == -1) {
      if (infer_at >= 0) return gv_error_op(m, op, "shape: reshape target has more than one -1");
      infer_at = i;
    } else if (tv[i] == 0 && !allowzero) {
      if (x->rank >= 0 && i >= x->rank)
        return gv_error_op(m, op, "shape: reshape target dim %d is 0 (copy) but the input %s has rank %d", i,
                           tstr(x, &a), x->rank);
      t.dims[i] = x->rank >= 0 ? x->dims[i] : GV_DIM_UNKNOWN;
    } else if (tv[i] < 0) {
      return gv_error_op(m, op, "shape: invalid reshape target dim %lld", (long long)tv[i]);
    } else {
      t.dims[i] = tv[i];
    }
  }
  if (infer_at >= 0 && allowzero)
    for (int i = 0; i < n; i++)
      if (tv[i] == 0) return gv_error_op(m, op, "shape: reshape with allowzero cannot have both 0 and -1");
  /* Product of the known target dims. */
  int64_t known = 1;
  bool all_known = true, zero = false;
  for (int i = 0; i < n; i++) {
    if (i == infer_at) continue;
    if (t.dims[i] < 0) all_known = false;
    else if (t.dims[i] == 0) zero = true;
  }
  if (all_known && !zero)
    for (int i = 0; i < n; i++) {
      if (i == infer_at) continue;
      if (known > INT64_MAX / t.dims[i])
        return gv_error_op(m, op, "overflow: reshape target element count does not fit in int64");
      known *= t.dims[i];
    }
  if (zero) known = 0;
  if (xn == -2) return gv_error_op(m, op, "overflow: element count of %s does not fit in int64", tstr(x, &a));
  if (infer_at >= 0) {
    if (xn >= 0 && all_known) {
      if (known == 0 || xn % known != 0)
        return gv_error_op(m, op, "shape mismatch: cannot reshape %s (%lld elements) with a -1 dim into %lld-element groups",
                           tstr(x, &a), (long long)xn, (long long)known);
      t.dims[infer_at] = xn / known;
    }
  } else if (xn >= 0 && all_known && xn != known) {
    return gv_error_op(m, op, "shape mismatch: reshape of %s (%lld elements) to %s (%lld elements)", tstr(x, &a),
                       (long long)xn, tstr(&t, &b), (long long)known);
  }
  return set_res(m, op, 0, t);
}

int gv_infer_expand(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *x = opt(op, 0);
  tbuf a;
  if (op->nopnds < 2) {
    gv_type t = op->res[0]->type;
    if (t.dtype == GV_DT_UNKNOWN) t.dtype = x->dtype;
    if (!gv_type_is_static(&t))
      return gv_error_op(m, op, "shape: expand without a shape operand needs a static result type, got %s",
                         tstr(&t, &a));
    if (check_expand_to(m, op, x, &t)) return -1;
    return set_res(m, op, 0, t);
  }
  gv_type target;
  const gv_tensor *sv = values ? values[1] : NULL;
  if (sv) {
    int64_t tv[GV_MAX_RANK];
    int n = read_ints(sv, tv, GV_MAX_RANK);
    if (n < 0) return gv_error_op(m, op, "shape: expand target has more than %d dims", GV_MAX_RANK);
    for (int i = 0; i < n; i++)
      if (tv[i] < 0) return gv_error_op(m, op, "shape: invalid expand target dim %lld", (long long)tv[i]);
    target = gv_type_make(x->dtype, n, tv);
  } else {
    const gv_type *st = opt(op, 1);
    if (st->rank != 1 || st->dims[0] < 0) return set_res(m, op, 0, unranked_like(x->dtype));
    if (st->dims[0] > GV_MAX_RANK)
      return gv_error_op(m, op, "shape: expand target rank %lld exceeds the maximum rank %d", (long long)st->dims[0],
                         GV_MAX_RANK);
    target = ranked_unknown(x->dtype, (int)st->dims[0]);
  }
  gv_type o;
  o.dtype = x->dtype;
  if (!bcast2(x, &target, &o)) return bcast_error(m, op, x, &target);
  return set_res(m, op, 0, o);
}

int gv_infer_squeeze(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes);
  if (x->rank < 0) return set_res(m, op, 0, unranked_like(x->dtype));
  bool drop[GV_MAX_RANK] = {0};
  tbuf a;
  if (na < 0) {
    for (int i = 0; i < x->rank; i++) {
      /* An unknown dim might be 1: the result rank is not known. */
      if (x->dims[i] < 0) return set_res(m, op, 0, unranked_like(x->dtype));
      drop[i] = x->dims[i] == 1;
    }
  } else {
    for (int k = 0; k < na; k++) {
      int ax = gv_norm_axis(axes[k], x->rank);
      if (ax < 0)
        return gv_error_op(m, op, "shape: squeeze axis %lld out of range for %s", (long long)axes[k], tstr(x, &a));
      if (drop[ax]) return gv_error_op(m, op, "shape: squeeze axis %lld repeated", (long long)axes[k]);
      if (x->dims[ax] >= 0 && x->dims[ax] != 1)
        return gv_error_op(m, op, "shape: squeeze axis %lld of %s is not 1", (long long)axes[k], tstr(x, &a));
      drop[ax] = true;
    }
  }
  gv_type t = ranked_unknown(x->dtype, 0);
  for (int i = 0; i < x->rank; i++)
    if (!drop[i]) t.dims[t.rank++] = x->dims[i];
  return set_res(m, op, 0, t);
}

int gv_infer_unsqueeze(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes);
  if (na < 0) return gv_error_op(m, op, "unsqueeze has no 'axes' attribute");
  if (x->rank < 0) return set_res(m, op, 0, unranked_like(x->dtype));
  int r = x->rank + na;
  if (r > GV_MAX_RANK)
    return gv_error_op(m, op, "shape: unsqueeze result rank %d exceeds the maximum rank %d", r, GV_MAX_RANK);
  bool ins[GV_MAX_RANK] = {0};
  for (int k = 0; k < na; k++) {
    int ax = gv_norm_axis(axes[k], r);
    if (ax < 0) return gv_error_op(m, op, "shape: unsqueeze axis %lld out of range for result rank %d", (long long)axes[k], r);
    if (ins[ax]) return gv_error_op(m, op, "shape: unsqueeze axis %lld repeated", (long long)axes[k]);
    ins[ax] = true;
  }
  gv_type t = ranked_unknown(x->dtype, r);
  for (int i = 0, j = 0; i < r; i++) t.dims[i] = ins[i] ? 1 : x->dims[j++];
  return set_res(m, op, 0, t);
}

int gv_infer_flatten(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank < 0) return set_res(m, op, 0, ranked_unknown(x->dtype, 2));
  int64_t ax = gv_get_int(op, "axis", 1);
  if (ax < 0) ax += x->rank;
  if (ax < 0 || ax > x->rank)
    return gv_error_op(m, op, "shape: flatten axis %lld out of range for rank %d", (long long)gv_get_int(op, "axis", 1),
                       x->rank);
  int64_t d[2] = {dims_prod(x, 0, (int)ax), dims_prod(x, (int)ax, x->rank)};
  if (d[0] == -2 || d[1] == -2) return gv_error_op(m, op, "overflow: flatten dim does not fit in int64");
  return set_res(m, op, 0, gv_type_make(x->dtype, 2, d));
}

int gv_infer_transpose(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  const int64_t *perm;
  int np = gv_get_ints(op, "perm", &perm);
  if (x->rank < 0) return set_res(m, op, 0, np >= 0 && np <= GV_MAX_RANK ? ranked_unknown(x->dtype, np) : unranked_like(x->dtype));
  if (np >= 0 && np != x->rank)
    return gv_error_op(m, op, "shape: transpose perm has %d entries for rank %d", np, x->rank);
  gv_type t = ranked_unknown(x->dtype, x->rank);
  bool seen[GV_MAX_RANK] = {0};
  for (int i = 0; i < x->rank; i++) {
    int64_t p = np >= 0 ? perm[i] : x->rank - 1 - i;
    if (p < 0 || p >= x->rank || seen[p])
      return gv_error_op(m, op, "shape: transpose perm is not a permutation of 0..%d", x->rank - 1);
    seen[p] = true;
    t.dims[i] = x->dims[p];
  }
  return set_res(m, op, 0, t);
}

/* ---------------------------------------------------------------- slice */

int gv_slice_window(gv_module *m, const gv_op *op, const gv_type *x, const gv_tensor *const *values,
                    int64_t *start, int64_t *step, int64_t *count, bool *affected) {
  int r = x->rank;
  int64_t sb[GV_MAX_RANK], eb[GV_MAX_RANK], ab[GV_MAX_RANK], tb[GV_MAX_RANK];
  const int64_t *s = NULL, *e = NULL, *a = NULL, *st = NULL;
  int ns = -1, ne = -1, na = -1, nt = -1;
  bool known = true, axes_known = true;
  for (int d = 0; d < r; d++) {
    start[d] = 0;
    step[d] = 1;
    count[d] = x->dims[d];
    affected[d] = false;
  }
  if (op->nopnds == 1) {
    ns = gv_get_ints(op, "starts", &s);
    ne = gv_get_ints(op, "ends", &e);
    na = gv_get_ints(op, "axes", &a);
    nt = gv_get_ints(op, "steps", &st);
    if (ns < 0 || ne < 0) return gv_error_op(m, op, "slice without operands needs 'starts' and 'ends' attributes");
  } else {
    if (op->nopnds < 3) return gv_error_op(m, op, "slice needs both starts and ends operands");
    int64_t *bufs[4] = {sb, eb, ab, tb};
    int *cnt[4] = {&ns, &ne, &na, &nt};
    const int64_t **ptr[4] = {&s, &e, &a, &st};
    for (int k = 0; k < 4 && k + 1 < op->nopnds; k++) {
      const gv_tensor *v = values ? values[k + 1] : NULL;
      if (!v) {
        if (k == 2) axes_known = false;
        else known = false;
        continue;
      }
      *cnt[k] = read_ints(v, bufs[k], GV_MAX_RANK);
      if (*cnt[k] < 0) return gv_error_op(m, op, "shape: slice parameters have more than %d entries", GV_MAX_RANK);
      *ptr[k] = bufs[k];
    }
  }
  if (!axes_known) {
    for (int d = 0; d < r; d++) affected[d] = true;
    return 0;
  }
  int n = s ? ns : e ? ne : na >= 0 ? na : -1;
  if (n < 0) { /* starts and ends both unknown, axes absent: every dim may change */
    for (int d = 0; d < r; d++) affected[d] = true;
    return 0;
  }
  if ((s && ns != n) || (e && ne != n) || (a && na != n) || (st && nt != n))
    return gv_error_op(m, op, "shape: slice starts/ends/axes/steps have different lengths");
  if (!a && n > r) return gv_error_op(m, op, "shape: slice has %d starts for rank %d", n, r);
  int ax[GV_MAX_RANK];
  bool seen[GV_MAX_RANK] = {0};
  for (int k = 0; k < n; k++) {
    ax[k] = a ? gv_norm_axis(a[k], r) : k;
    if (ax[k] < 0) return gv_error_op(m, op, "shape: slice axis %lld out of range for rank %d", (long long)a[k], r);
    if (seen[ax[k]]) return gv_error_op(m, op, "shape: slice axis %lld repeated", (long long)a[k]);
    seen[ax[k]] = true;
  }
  if (!known) {
    for (int k = 0; k < n; k++) affected[ax[k]] = true;
    return 0;
  }
  for (int k = 0; k < n; k++) {
    int d = ax[k];
    int64_t dim = x->dims[d], b = s[k], en = e[k], t = st ? st[k] : 1;
    if (t == 0) return gv_error_op(m, op, "shape: slice step is 0");
    step[d] = t;
    if (dim < 0) {
      count[d] = GV_DIM_UNKNOWN;
      affected[d] = true;
      continue;
    }
    /* ONNX Slice: negative bounds count from the end, then clamp; the
     * clamping range depends on the step's direction. */
    if (b < 0) b += dim;
    if (en < 0) en += dim;
    int64_t c;
    if (t > 0) {
      b = b < 0 ? 0 : b > dim ? dim : b;
      en = en < 0 ? 0 : en > dim ? dim : en;
      c = en > b ? (en - b - 1) / t + 1 : 0;
    } else {
      b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
      en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
      int64_t nt2 = t == INT64_MIN ? INT64_MAX : -t;
      c = dim > 0 && b > en ? (b - en - 1) / nt2 + 1 : 0;
    }
    start[d] = b;
    count[d] = c;
  }
  return 1;
}

int gv_infer_slice(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *x = opt(op, 0);
  if (x->rank < 0) return set_res(m, op, 0, unranked_like(x->dtype));
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK];
  bool aff[GV_MAX_RANK];
  int k = gv_slice_window(m, op, x, values, start, step, count, aff);
  if (k < 0) return -1;
  gv_type t = *x;
  for (int d = 0; d < x->rank; d++) t.dims[d] = k == 0 && aff[d] ? GV_DIM_UNKNOWN : count[d];
  return set_res(m, op, 0, t);
}

/* ---------------------------------------------------------------- concat, split, gather, tile */

int gv_infer_concat(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  int r = -1;
  gv_dtype dt = GV_DT_UNKNOWN;
  for (int i = 0; i < op->nopnds; i++) {
    const gv_type *t = opt(op, i);
    if (dtype_match(m, op, dt, t->dtype)) return -1;
    dt = pick_dtype(dt, t->dtype);
    if (t->rank < 0) continue;
    if (r >= 0 && t->rank != r)
      return gv_error_op(m, op, "shape mismatch: concat operands have ranks %d and %d", r, t->rank);
    r = t->rank;
  }
  if (r < 0) return set_res(m, op, 0, unranked_like(dt));
  int64_t axv = gv_get_int(op, "axis", 0);
  int ax = gv_norm_axis(axv, r);
  if (ax < 0) return gv_error_op(m, op, "shape: concat axis %lld out of range for rank %d", (long long)axv, r);
  gv_type o = ranked_unknown(dt, r);
  int64_t sum = 0;
  bool sum_known = true;
  for (int d = 0; d < r; d++) o.dims[d] = d == ax ? 0 : GV_DIM_UNKNOWN;
  for (int i = 0; i < op->nopnds; i++) {
    const gv_type *t = opt(op, i);
    if (t->rank < 0) {
      sum_known = false;
      continue;
    }
    for (int d = 0; d < r; d++) {
      if (d == ax) {
        if (t->dims[d] < 0) sum_known = false;
        else if (sum > INT64_MAX - t->dims[d]) return gv_error_op(m, op, "overflow: concat dim does not fit in int64");
        else sum += t->dims[d];
      } else if (t->dims[d] >= 0) {
        if (o.dims[d] >= 0 && o.dims[d] != t->dims[d]) {
          tbuf a;
          return gv_error_op(m, op, "shape mismatch: concat operand %d is %s but dim %d is %lld in an earlier operand",
                             i, tstr(t, &a), d, (long long)o.dims[d]);
        }
        o.dims[d] = t->dims[d];
      }
    }
  }
  o.dims[ax] = sum_known ? sum : GV_DIM_UNKNOWN;
  return set_res(m, op, 0, o);
}

int gv_infer_split(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  const int64_t *sizes;
  int ns = gv_get_ints(op, "sizes", &sizes);
  if (ns >= 0 && ns != op->nres)
    return gv_error_op(m, op, "shape: split has %d sizes but %d results", ns, op->nres);
  for (int i = 0; i < ns; i++)
    if (sizes[i] < 0) return gv_error_op(m, op, "shape: split size %lld is negative", (long long)sizes[i]);
  if (x->rank < 0) {
    for (int i = 0; i < op->nres; i++)
      if (set_res(m, op, i, unranked_like(x->dtype))) return -1;
    return 0;
  }
  int64_t axv = gv_get_int(op, "axis", 0);
  int ax = gv_norm_axis(axv, x->rank);
  if (ax < 0) return gv_error_op(m, op, "shape: split axis %lld out of range for rank %d", (long long)axv, x->rank);
  int64_t dim = x->dims[ax];
  if (ns >= 0 && dim >= 0) {
    int64_t sum = 0;
    for (int i = 0; i < ns; i++) {
      if (sum > INT64_MAX - sizes[i]) return gv_error_op(m, op, "overflow: split sizes do not fit in int64");
      sum += sizes[i];
    }
    if (sum != dim)
      return gv_error_op(m, op, "shape mismatch: split sizes sum to %lld but axis %d has %lld", (long long)sum, ax,
                         (long long)dim);
  }
  for (int i = 0; i < op->nres; i++) {
    gv_type t = *x;
    if (ns >= 0) t.dims[ax] = sizes[i];
    else if (dim >= 0) {
      /* No sizes: equal parts, the last one smaller (ONNX Split-18). */
      int64_t part = (dim + op->nres - 1) / op->nres;
      int64_t lo = part * i, hi = lo + part > dim ? dim : lo + part;
      t.dims[ax] = hi > lo ? hi - lo : 0;
    } else t.dims[ax] = GV_DIM_UNKNOWN;
    if (set_res(m, op, i, t)) return -1;
  }
  return 0;
}

int gv_infer_gather(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *x = opt(op, 0), *idx = opt(op, 1);
  if (idx->dtype != GV_DT_UNKNOWN && idx->dtype != GV_DT_I64 && idx->dtype != GV_DT_I32)
    return gv_error_op(m, op, "gather indices must be i64 or i32, got %s", gv_dtype_name(idx->dtype));
  if (x->rank < 0 || idx->rank < 0) return set_res(m, op, 0, unranked_like(x->dtype));
  int64_t axv = gv_get_int(op, "axis", 0);
  int ax = gv_norm_axis(axv, x->rank);
  tbuf a;
  if (ax < 0) return gv_error_op(m, op, "shape: gather axis %lld out of range for %s", (long long)axv, tstr(x, &a));
  int r = x->rank - 1 + idx->rank;
  if (r > GV_MAX_RANK) return gv_error_op(m, op, "shape: gather result rank %d exceeds the maximum rank %d", r, GV_MAX_RANK);
  const gv_tensor *iv = values ? values[1] : NULL;
  int64_t dim = x->dims[ax];
  if (iv && dim >= 0) {
    int64_t n = gv_tensor_numel(iv);
    for (int64_t i = 0; i < n; i++) {
      int64_t k = gv_tensor_get_i(iv, i);
      if (k < -dim || k >= dim)
        return gv_error_op(m, op,
                           "shape: gather index %lld out of range for axis %d of size %lld (if the index follows from an "
                           "input's shape, e.g. positions up to the sequence length: bind smaller dims with --seq, "
                           "--batch or --input-shape)",
                           (long long)k, ax, (long long)dim);
    }
  }
  gv_type t = ranked_unknown(x->dtype, r);
  int j = 0;
  for (int d = 0; d < ax; d++) t.dims[j++] = x->dims[d];
  for (int d = 0; d < idx->rank; d++) t.dims[j++] = idx->dims[d];
  for (int d = ax + 1; d < x->rank; d++) t.dims[j++] = x->dims[d];
  return set_res(m, op, 0, t);
}

int gv_infer_tile(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *x = opt(op, 0);
  int64_t rb[GV_MAX_RANK];
  const int64_t *rep = NULL;
  int nr = -1;
  if (op->nopnds >= 2) {
    const gv_tensor *v = values ? values[1] : NULL;
    if (v) {
      nr = read_ints(v, rb, GV_MAX_RANK);
      if (nr < 0) return gv_error_op(m, op, "shape: tile repeats have more than %d entries", GV_MAX_RANK);
      rep = rb;
    }
  } else {
    nr = gv_get_ints(op, "repeats", &rep);
    if (nr < 0) return gv_error_op(m, op, "tile without a repeats operand needs a 'repeats' attribute");
  }
  if (x->rank < 0) return set_res(m, op, 0, nr >= 0 && nr <= GV_MAX_RANK ? ranked_unknown(x->dtype, nr) : unranked_like(x->dtype));
  if (!rep) return set_res(m, op, 0, ranked_unknown(x->dtype, x->rank));
  if (nr != x->rank) return gv_error_op(m, op, "shape: tile has %d repeats for rank %d", nr, x->rank);
  gv_type t = *x;
  for (int d = 0; d < x->rank; d++) {
    if (rep[d] < 0) return gv_error_op(m, op, "shape: tile repeat %lld is negative", (long long)rep[d]);
    if (x->dims[d] < 0) continue;
    if (rep[d] != 0 && x->dims[d] > INT64_MAX / rep[d])
      return gv_error_op(m, op, "overflow: tiled dim %d does not fit in int64", d);
    t.dims[d] = x->dims[d] * rep[d];
  }
  return set_res(m, op, 0, t);
}

int gv_infer_constant_of_shape(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_attr *va = gv_get_attr(op, "value");
  gv_dtype dt = GV_DT_F32;
  if (va) {
    if (va->kind != GV_ATTR_TENSOR || !va->u.t || gv_tensor_numel(va->u.t) != 1)
      return gv_error_op(m, op, "constant_of_shape 'value' must be a one-element tensor");
    dt = va->u.t->type.dtype;
  }
  const gv_tensor *sv = values ? values[0] : NULL;
  if (!sv) {
    const gv_type *st = opt(op, 0);
    if (st->rank == 1 && st->dims[0] >= 0 && st->dims[0] <= GV_MAX_RANK)
      return set_res(m, op, 0, ranked_unknown(dt, (int)st->dims[0]));
    if (st->rank == 1 && st->dims[0] > GV_MAX_RANK)
      return gv_error_op(m, op, "shape: constant_of_shape rank %lld exceeds the maximum rank %d", (long long)st->dims[0],
                         GV_MAX_RANK);
    return set_res(m, op, 0, unranked_like(dt));
  }
  int64_t d[GV_MAX_RANK];
  int n = read_ints(sv, d, GV_MAX_RANK);
  if (n < 0) return gv_error_op(m, op, "shape: constant_of_shape rank exceeds the maximum rank %d", GV_MAX_RANK);
  for (int i = 0; i < n; i++)
    if (d[i] < 0) return gv_error_op(m, op, "shape: constant_of_shape dim %lld is negative", (long long)d[i]);
  return set_res(m, op, 0, gv_type_make(dt, n, d));
}

/* Number of elements of ONNX Range: max(ceil((limit - start) / delta), 0).
 * Returns -1 after an error. */
static int64_t range_count(gv_module *m, const gv_op *op, const gv_tensor *s, const gv_tensor *l, const gv_tensor *d) {
  if (gv_dtype_is_float(s->type.dtype)) {
    double a = gv_tensor_get_f(s, 0), b = gv_tensor_get_f(l, 0), c = gv_tensor_get_f(d, 0);
    if (c == 0) return gv_error_op(m, op, "shape: range delta is 0");
    double n = ceil((b - a) / c);
    if (n != n) return gv_error_op(m, op, "shape: range bounds are not finite");
    if (n <= 0) return 0;
    if (n >= 9.2e18) return gv_error_op(m, op, "overflow: range element count does not fit in int64");
    return (int64_t)n;
  }
  int64_t a = gv_tensor_get_i(s, 0), b = gv_tensor_get_i(l, 0), c = gv_tensor_get_i(d, 0);
  if (c == 0) return gv_error_op(m, op, "shape: range delta is 0");
  if ((c > 0 && b <= a) || (c < 0 && b >= a)) return 0;
  /* The span fits in uint64 even when limit - start overflows int64. */
  uint64_t span = c > 0 ? (uint64_t)b - (uint64_t)a : (uint64_t)a - (uint64_t)b;
  uint64_t step = c > 0 ? (uint64_t)c : (uint64_t)0 - (uint64_t)c;
  uint64_t n = (span - 1) / step + 1;
  if (n > (uint64_t)INT64_MAX) return gv_error_op(m, op, "overflow: range element count does not fit in int64");
  return (int64_t)n;
}

int gv_infer_range(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  gv_dtype dt = opt(op, 0)->dtype;
  for (int i = 0; i < 3; i++) {
    const gv_type *t = opt(op, i);
    if (dtype_match(m, op, dt, t->dtype)) return -1;
    if (t->rank > 0 && !(t->rank == 1 && t->dims[0] == 1) && gv_type_numel(t) != -1)
      return gv_error_op(m, op, "shape: range operands must be scalars");
  }
  if (!values || !values[0] || !values[1] || !values[2]) return set_res(m, op, 0, ranked_unknown(dt, 1));
  for (int i = 0; i < 3; i++)
    if (gv_tensor_numel(values[i]) != 1) return gv_error_op(m, op, "shape: range operands must be scalars");
  int64_t n = range_count(m, op, values[0], values[1], values[2]);
  if (n < 0) return -1;
  return set_res(m, op, 0, gv_type_make(dt, 1, &n));
}

int gv_infer_trilu(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank >= 0 && x->rank < 2) return gv_error_op(m, op, "shape: trilu needs rank >= 2, got %d", x->rank);
  return set_res(m, op, 0, *x);
}

int gv_infer_cumsum(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank >= 0) {
    int64_t ax = gv_get_int(op, "axis", 0);
    if (gv_norm_axis(ax, x->rank) < 0)
      return gv_error_op(m, op, "shape: cumsum axis %lld out of range for rank %d", (long long)ax, x->rank);
  }
  return set_res(m, op, 0, *x);
}

/* ---------------------------------------------------------------- reductions, norms */

int gv_infer_reduce(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes);
  bool keep = gv_get_int(op, "keepdims", 1) != 0;
  if (x->rank < 0) {
    if (!keep && na <= 0) return set_res(m, op, 0, ranked_unknown(x->dtype, 0));
    return set_res(m, op, 0, unranked_like(x->dtype));
  }
  bool red[GV_MAX_RANK] = {0};
  if (na <= 0)
    for (int d = 0; d < x->rank; d++) red[d] = true;
  for (int k = 0; k < na; k++) {
    int ax = gv_norm_axis(axes[k], x->rank);
    if (ax < 0) return gv_error_op(m, op, "shape: reduce axis %lld out of range for rank %d", (long long)axes[k], x->rank);
    if (red[ax]) return gv_error_op(m, op, "shape: reduce axis %lld repeated", (long long)axes[k]);
    red[ax] = true;
  }
  gv_type t = ranked_unknown(x->dtype, 0);
  for (int d = 0; d < x->rank; d++) {
    if (!red[d]) t.dims[t.rank++] = x->dims[d];
    else if (keep) t.dims[t.rank++] = 1;
  }
  return set_res(m, op, 0, t);
}

int gv_infer_norm(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0);
  if (x->rank >= 0) {
    int64_t axv = gv_get_int(op, "axis", -1);
    int ax = gv_norm_axis(axv, x->rank);
    if (ax < 0) return gv_error_op(m, op, "shape: norm axis %lld out of range for rank %d", (long long)axv, x->rank);
    /* scale and bias broadcast onto the normalised dims axis..rank-1. */
    gv_type nt = ranked_unknown(x->dtype, x->rank - ax);
    for (int d = ax; d < x->rank; d++) nt.dims[d - ax] = x->dims[d];
    for (int i = 1; i < op->nopnds; i++)
      if (check_expand_to(m, op, opt(op, i), &nt)) return -1;
  }
  return set_res(m, op, 0, *x);
}

/* ---------------------------------------------------------------- index tuples */

/* gather_nd / scatter_nd: indices [..., k] address the leading k dims of
 * data; a row is the data slice data.dims[k:]. Writes the row shape of the
 * result (gather) or of updates (scatter) into t. */
static int nd_rows(gv_module *m, gv_op *op, const gv_type *d, const gv_type *ix, gv_type *t) {
  tbuf a, b;
  if (ix->dtype != GV_DT_UNKNOWN && ix->dtype != GV_DT_I64 && ix->dtype != GV_DT_I32)
    return gv_error_op(m, op, "shape: %s indices must be i64 or i32, got %s", gv_ops[op->code].name,
                       gv_dtype_name(ix->dtype));
  if (d->rank < 0 || ix->rank < 0) return 1;
  if (ix->rank < 1) return gv_error_op(m, op, "shape: %s indices must have rank >= 1", gv_ops[op->code].name);
  int64_t k = ix->dims[ix->rank - 1];
  if (k < 0) return 1;
  if (k < 1 || k > d->rank)
    return gv_error_op(m, op, "shape: %s index tuples of %lld coordinates for data %s (indices %s)",
                       gv_ops[op->code].name, (long long)k, tstr(d, &a), tstr(ix, &b));
  int rank = ix->rank - 1 + d->rank - (int)k;
  if (rank > GV_MAX_RANK) return gv_error_op(m, op, "shape: %s result rank %d exceeds %d", gv_ops[op->code].name, rank, GV_MAX_RANK);
  *t = ranked_unknown(d->dtype, rank);
  for (int i = 0; i < ix->rank - 1; i++) t->dims[i] = ix->dims[i];
  for (int i = (int)k; i < d->rank; i++) t->dims[ix->rank - 1 + i - (int)k] = d->dims[i];
  return 0;
}

int gv_infer_gather_nd(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  gv_type t;
  int rc = nd_rows(m, op, opt(op, 0), opt(op, 1), &t);
  if (rc < 0) return -1;
  return set_res(m, op, 0, rc ? unranked_like(opt(op, 0)->dtype) : t);
}

int gv_scatter_reduction(const gv_op *op) {
  static const char *const names[] = {"none", "add", "mul", "max", "min"};
  const char *red = gv_get_str(op, "reduction", "none");
  for (int i = 0; i < 5; i++)
    if (strcmp(red, names[i]) == 0) return i;
  return -1;
}

int gv_infer_scatter_nd(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *d = opt(op, 0), *u = opt(op, 2);
  if (dtype_match(m, op, d->dtype, u->dtype)) return -1;
  if (gv_scatter_reduction(op) < 0)
    return gv_error_op(m, op, "scatter_nd reduction '%s' is not supported (none, add, mul, max, min)",
                       gv_get_str(op, "reduction", "none"));
  gv_type t;
  int rc = nd_rows(m, op, d, opt(op, 1), &t);
  if (rc < 0) return -1;
  if (rc == 0 && u->rank >= 0) {
    tbuf a, b;
    bool ok = u->rank == t.rank;
    for (int i = 0; ok && i < t.rank; i++) ok = u->dims[i] < 0 || t.dims[i] < 0 || u->dims[i] == t.dims[i];
    if (!ok)
      return gv_error_op(m, op, "shape mismatch: scatter_nd updates %s, the indices and data need %s", tstr(u, &a),
                         tstr(&t, &b));
  }
  gv_type r = *d;
  r.dtype = pick_dtype(d->dtype, u->dtype);
  return set_res(m, op, 0, r);
}

/* gather_elements / scatter_elements: indices of data's rank, axis in range;
 * the result is indices-shaped (gather) or data-shaped (scatter, whose
 * updates are indices-shaped). */
static int elem_check(gv_module *m, gv_op *op, const gv_type *d, const gv_type *ix) {
  if (ix->dtype != GV_DT_UNKNOWN && ix->dtype != GV_DT_I64 && ix->dtype != GV_DT_I32)
    return gv_error_op(m, op, "shape: %s indices must be i64 or i32, got %s", gv_ops[op->code].name,
                       gv_dtype_name(ix->dtype));
  if (d->rank < 0 || ix->rank < 0) return 0;
  tbuf a, b;
  if (d->rank != ix->rank || d->rank < 1)
    return gv_error_op(m, op, "shape mismatch: %s indices %s must have the rank of data %s", gv_ops[op->code].name,
                       tstr(ix, &a), tstr(d, &b));
  int64_t ax = gv_get_int(op, "axis", 0);
  if (gv_norm_axis(ax, d->rank) < 0)
    return gv_error_op(m, op, "shape: %s axis %lld out of range for rank %d", gv_ops[op->code].name, (long long)ax,
                       d->rank);
  return 0;
}

int gv_infer_gather_elements(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *d = opt(op, 0), *ix = opt(op, 1);
  if (elem_check(m, op, d, ix)) return -1;
  gv_type t = *ix;
  t.dtype = d->dtype;
  return set_res(m, op, 0, t);
}

int gv_infer_scatter_elements(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *d = opt(op, 0), *ix = opt(op, 1), *u = opt(op, 2);
  if (dtype_match(m, op, d->dtype, u->dtype) || elem_check(m, op, d, ix)) return -1;
  if (gv_scatter_reduction(op) < 0)
    return gv_error_op(m, op, "scatter_elements reduction '%s' is not supported (none, add, mul, max, min)",
                       gv_get_str(op, "reduction", "none"));
  if (ix->rank >= 0 && u->rank >= 0) {
    tbuf a, b;
    bool ok = u->rank == ix->rank;
    for (int i = 0; ok && i < u->rank; i++) ok = u->dims[i] < 0 || ix->dims[i] < 0 || u->dims[i] == ix->dims[i];
    if (!ok)
      return gv_error_op(m, op, "shape mismatch: scatter_elements updates %s must have the indices' shape %s",
                         tstr(u, &a), tstr(ix, &b));
  }
  gv_type r = *d;
  r.dtype = pick_dtype(d->dtype, u->dtype);
  return set_res(m, op, 0, r);
}

/* ---------------------------------------------------------------- contraction */

/* Validates a list of dot axes; marks them in used[]. */
static int dot_axes(gv_module *m, gv_op *op, const char *name, int n, const int64_t *v, int rank, bool *used,
                    int *out) {
  for (int i = 0; i < n; i++) {
    int ax = gv_norm_axis(v[i], rank);
    if (ax < 0) return gv_error_op(m, op, "shape: dot %s axis %lld out of range for rank %d", name, (long long)v[i], rank);
    if (used[ax]) return gv_error_op(m, op, "shape: dot axis %lld used twice", (long long)v[i]);
    used[ax] = true;
    out[i] = ax;
  }
  return 0;
}

int gv_infer_dot(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *l = opt(op, 0), *r = opt(op, 1);
  if (dtype_match(m, op, l->dtype, r->dtype)) return -1;
  gv_dtype dt = pick_dtype(l->dtype, r->dtype);
  const int64_t *lb, *rb, *lc, *rc;
  int nlb = gv_get_ints(op, "lhs_batch", &lb), nrb = gv_get_ints(op, "rhs_batch", &rb);
  int nlc = gv_get_ints(op, "lhs_contract", &lc), nrc = gv_get_ints(op, "rhs_contract", &rc);
  if (nlb < 0) nlb = 0;
  if (nrb < 0) nrb = 0;
  if (nlc < 0) nlc = 0;
  if (nrc < 0) nrc = 0;
  if (nlb != nrb || nlc != nrc)
    return gv_error_op(m, op, "shape: dot has %d/%d batch and %d/%d contracting dims", nlb, nrb, nlc, nrc);
  if (l->rank < 0 || r->rank < 0) return set_res(m, op, 0, unranked_like(dt));
  bool lu[GV_MAX_RANK] = {0}, ru[GV_MAX_RANK] = {0};
  int lbi[GV_MAX_RANK], rbi[GV_MAX_RANK], lci[GV_MAX_RANK], rci[GV_MAX_RANK];
  if (nlb + nlc > l->rank || nrb + nrc > r->rank) return gv_error_op(m, op, "shape: dot has more batch+contracting dims than rank");
  if (dot_axes(m, op, "lhs_batch", nlb, lb, l->rank, lu, lbi) || dot_axes(m, op, "rhs_batch", nrb, rb, r->rank, ru, rbi) ||
      dot_axes(m, op, "lhs_contract", nlc, lc, l->rank, lu, lci) ||
      dot_axes(m, op, "rhs_contract", nrc, rc, r->rank, ru, rci))
    return -1;
  tbuf a, b;
  int rank = nlb + (l->rank - nlb - nlc) + (r->rank - nrb - nrc);
  if (rank > GV_MAX_RANK) return gv_error_op(m, op, "shape: dot result rank %d exceeds the maximum rank %d", rank, GV_MAX_RANK);
  gv_type t = ranked_unknown(dt, rank);
  int j = 0;
  for (int i = 0; i < nlb; i++) {
    int64_t dl = l->dims[lbi[i]], dr = r->dims[rbi[i]];
    if (dl >= 0 && dr >= 0 && dl != dr)
      return gv_error_op(m, op, "shape mismatch: dot batch dims differ (%lld vs %lld) for %s and %s", (long long)dl,
                         (long long)dr, tstr(l, &a), tstr(r, &b));
    t.dims[j++] = dl >= 0 ? dl : dr;
  }
  for (int i = 0; i < nlc; i++) {
    int64_t dl = l->dims[lci[i]], dr = r->dims[rci[i]];
    if (dl >= 0 && dr >= 0 && dl != dr)
      return gv_error_op(m, op, "shape mismatch: dot contracting sizes differ (%lld vs %lld) for %s and %s", (long long)dl,
                         (long long)dr, tstr(l, &a), tstr(r, &b));
  }
  for (int d = 0; d < l->rank; d++)
    if (!lu[d]) t.dims[j++] = l->dims[d];
  for (int d = 0; d < r->rank; d++)
    if (!ru[d]) t.dims[j++] = r->dims[d];
  return set_res(m, op, 0, t);
}

/* ONNX MatMul (numpy matmul): 1-D operands gain and lose a unit dim, batch
 * dims broadcast (a 1 against any size; unknown against 1 stays unknown). */
int gv_infer_matmul(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *l = opt(op, 0), *r = opt(op, 1);
  if (dtype_match(m, op, l->dtype, r->dtype)) return -1;
  gv_dtype dt = pick_dtype(l->dtype, r->dtype);
  if (l->rank < 0 || r->rank < 0) return set_res(m, op, 0, unranked_like(dt));
  if (l->rank == 0 || r->rank == 0) return gv_error_op(m, op, "shape: matmul operands must have rank >= 1");
  tbuf a, b;
  int64_t K1 = l->dims[l->rank - 1], K2 = r->rank == 1 ? r->dims[0] : r->dims[r->rank - 2];
  if (K1 >= 0 && K2 >= 0 && K1 != K2)
    return gv_error_op(m, op, "shape mismatch: matmul contracting sizes differ (%lld vs %lld) for %s and %s",
                       (long long)K1, (long long)K2, tstr(l, &a), tstr(r, &b));
  int lb = l->rank > 2 ? l->rank - 2 : 0, rb = r->rank > 2 ? r->rank - 2 : 0, nb = lb > rb ? lb : rb;
  int rank = nb + (l->rank > 1) + (r->rank > 1);
  gv_type t = ranked_unknown(dt, rank);
  for (int i = 0; i < nb; i++) {
    int il = i - (nb - lb), ir = i - (nb - rb);
    int64_t x = il >= 0 ? l->dims[il] : 1, y = ir >= 0 ? r->dims[ir] : 1;
    if (x >= 0 && y >= 0 && x != y && x != 1 && y != 1)
      return gv_error_op(m, op, "shape mismatch: matmul batch dims do not broadcast (%lld vs %lld) for %s and %s",
                         (long long)x, (long long)y, tstr(l, &a), tstr(r, &b));
    t.dims[i] = x == 1 ? y : y == 1 ? x : x >= 0 ? x : y;
  }
  int j = nb;
  if (l->rank > 1) t.dims[j++] = l->dims[l->rank - 2];
  if (r->rank > 1) t.dims[j++] = r->dims[r->rank - 1];
  return set_res(m, op, 0, t);
}

int gv_infer_conv(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = opt(op, 0), *w = opt(op, 1);
  if (dtype_match(m, op, x->dtype, w->dtype)) return -1;
  gv_dtype dt = pick_dtype(x->dtype, w->dtype);
  int r = x->rank >= 0 ? x->rank : w->rank;
  if (r < 0) return set_res(m, op, 0, unranked_like(dt));
  tbuf a, b;
  if (r < 3) return gv_error_op(m, op, "shape: conv input must have rank >= 3, got %d", r);
  if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank)
    return gv_error_op(m, op, "shape mismatch: conv input %s and weight %s ranks differ", tstr(x, &a), tstr(w, &b));
  int S = r - 2;
  const int64_t *st, *pd, *dl;
  int nst = gv_get_ints(op, "strides", &st), npd = gv_get_ints(op, "pads", &pd), ndl = gv_get_ints(op, "dilations", &dl);
  if ((nst >= 0 && nst != S) || (npd >= 0 && npd != 2 * S) || (ndl >= 0 && ndl != S))
    return gv_error_op(m, op, "shape: conv strides/pads/dilations do not match %d spatial dims", S);
  int64_t group = gv_get_int(op, "group", 1);
  if (group < 1) return gv_error_op(m, op, "shape: conv group %lld must be positive", (long long)group);
  int64_t C = x->rank >= 0 ? x->dims[1] : -1, M = w->rank >= 0 ? w->dims[0] : -1, Cw = w->rank >= 0 ? w->dims[1] : -1;
  if (C >= 0 && Cw >= 0 && (Cw > INT64_MAX / group || C != Cw * group))
    return gv_error_op(m, op, "shape mismatch: conv input %s has %lld channels, weight %s expects %lld x group %lld",
                       tstr(x, &a), (long long)C, tstr(w, &b), (long long)Cw, (long long)group);
  if (M >= 0 && M % group != 0)
    return gv_error_op(m, op, "shape: conv output channels %lld not divisible by group %lld", (long long)M, (long long)group);
  if (op->nopnds > 2) {
    const gv_type *bt = opt(op, 2);
    if (bt->rank >= 0 && (bt->rank != 1 || (bt->dims[0] >= 0 && M >= 0 && bt->dims[0] != M)))
      return gv_error_op(m, op, "shape mismatch: conv bias %s does not match %lld output channels", tstr(bt, &a), (long long)M);
  }
  gv_type t = ranked_unknown(dt, r);
  t.dims[0] = x->rank >= 0 ? x->dims[0] : GV_DIM_UNKNOWN;
  t.dims[1] = M;
  for (int s = 0; s < S; s++) {
    int64_t in = x->rank >= 0 ? x->dims[2 + s] : -1, k = w->rank >= 0 ? w->dims[2 + s] : -1;
    int64_t stv = nst >= 0 ? st[s] : 1, dil = ndl >= 0 ? dl[s] : 1;
    int64_t pb = npd >= 0 ? pd[s] : 0, pe = npd >= 0 ? pd[S + s] : 0;
    if (stv < 1 || dil < 1 || pb < 0 || pe < 0 || pb > (INT64_MAX >> 2) || pe > (INT64_MAX >> 2))
      return gv_error_op(m, op, "shape: conv stride/dilation must be positive and pads non-negative");
    if (in < 0 || k < 0) continue;
    if (k > 0 && dil > ((INT64_MAX >> 2) / k)) return gv_error_op(m, op, "overflow: conv kernel extent does not fit in int64");
    if (in > (INT64_MAX >> 2)) return gv_error_op(m, op, "overflow: conv input dim does not fit");
    int64_t span = in + pb + pe - dil * (k - 1) - 1;
    if (k < 1 || span < 0)
      return gv_error_op(m, op, "shape: conv kernel %s does not fit input %s with the given pads", tstr(w, &a), tstr(x, &b));
    t.dims[2 + s] = span / stv + 1;
  }
  return set_res(m, op, 0, t);
}

/* ---------------------------------------------------------------- control flow */

int gv_infer_if(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  const gv_type *c = opt(op, 0);
  if (c->dtype != GV_DT_UNKNOWN && c->dtype != GV_DT_BOOL)
    return gv_error_op(m, op, "if condition must be i1, got %s", gv_dtype_name(c->dtype));
  if (op->nregions != 2) return gv_error_op(m, op, "if needs two regions (then, else), has %d", op->nregions);
  gv_op *yt = gv_block_terminator(op->regions[0]), *ye = gv_block_terminator(op->regions[1]);
  if (!yt || !ye || yt->code != GV_OP_YIELD || ye->code != GV_OP_YIELD)
    return gv_error_op(m, op, "if regions must end in galv.yield");
  if (yt->nopnds != op->nres || ye->nopnds != op->nres)
    return gv_error_op(m, op, "shape: if has %d results but its regions yield %d and %d values", op->nres, yt->nopnds,
                       ye->nopnds);
  /* A known condition picks the branch that will run: its types are exact. */
  const gv_tensor *cv = values ? values[0] : NULL;
  if (cv && gv_tensor_numel(cv) == 1) {
    gv_op *y = gv_tensor_get_i(cv, 0) ? yt : ye;
    for (int i = 0; i < op->nres; i++)
      if (set_res(m, op, i, y->opnds[i]->type)) return -1;
    return 0;
  }
  for (int i = 0; i < op->nres; i++) {
    gv_type t = yt->opnds[i]->type;
    const gv_type *e = &ye->opnds[i]->type;
    if (t.dtype != GV_DT_UNKNOWN && e->dtype != GV_DT_UNKNOWN && t.dtype != e->dtype)
      return gv_error_op(m, op, "shape/type mismatch: if result %d is %s in then and %s in else", i,
                         gv_dtype_name(t.dtype), gv_dtype_name(e->dtype));
    t.dtype = pick_dtype(t.dtype, e->dtype);
    if (t.rank != e->rank) t = unranked_like(t.dtype);
    else
      for (int d = 0; d < t.rank; d++)
        if (t.dims[d] != e->dims[d]) t.dims[d] = GV_DIM_UNKNOWN;
    if (set_res(m, op, i, t)) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- shared with the evaluator */

void gv_bcast_strides(const gv_type *in, const gv_type *out, int64_t *strides) {
  int64_t s = 1;
  for (int j = out->rank - 1; j >= 0; j--) {
    int i = j - (out->rank - in->rank);
    if (i < 0) {
      strides[j] = 0;
      continue;
    }
    strides[j] = in->dims[i] == 1 ? 0 : s;
    s *= in->dims[i];
  }
}
