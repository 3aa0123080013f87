/* eval.c — reference evaluator of the core ops (plain C), one function per
 * op family as named in ir/ops.def (semantics: docs/ops.md).
 *
 * It is used by fold-constants and shape-infer's value propagation, and as
 * the test oracle on small models, so it covers every dtype (f32, f64, f16
 * and bf16 computed in f32 and stored converted, integers, bool) and the
 * heavy ops (dot, conv, reductions, softmax, norms) read and write f32 data
 * directly and accumulate in double. Result types are set by shape inference
 * before an op is evaluated; results are allocated in the module arena, and
 * scratch buffers are malloc'ed and freed here. Bad input (integer division by
 * zero, an index out of range, a result too large) is an error, never UB. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

/* ---------------------------------------------------------------- helpers */

/* Largest result the evaluator allocates; anything bigger is not a constant
 * worth computing on the host. */
#define EVAL_MAX_BYTES ((int64_t)1 << 34)

static gv_tensor *mkout(gv_module *m, const gv_op *op, int i) {
  const gv_type *t = &op->res[i]->type;
  char buf[160];
  if (t->dtype == GV_DT_UNKNOWN || !gv_type_is_static(t)) {
    gv_type_str(t, buf, sizeof buf);
    gv_error_op(m, op, "cannot evaluate: result type %s is not static", buf);
    return NULL;
  }
  int64_t n = gv_type_numel(t);
  if (n < 0 || n > EVAL_MAX_BYTES / (int64_t)gv_dtype_size(t->dtype)) {
    gv_type_str(t, buf, sizeof buf);
    gv_error_op(m, op, n == -2 ? "overflow: element count of %s does not fit in int64"
                               : "cannot evaluate: result %s is too large", buf);
    return NULL;
  }
  return gv_tensor_new(m->arena, *t);
}

static void *xmalloc(gv_module *m, const gv_op *op, int64_t n, size_t es) {
  if (n < 0 || (uint64_t)n > SIZE_MAX / 2 / (es ? es : 1)) {
    gv_error_op(m, op, "cannot evaluate: scratch buffer too large");
    return NULL;
  }
  void *p = malloc((size_t)n * es + 16);
  if (!p) gv_error_op(m, op, "cannot evaluate: out of memory");
  return p;
}

/* Element read/write through double with the f32 case inlined: the hot
 * loops below call these directly. */
static inline double ld(const gv_tensor *t, int64_t i) {
  if (t->type.dtype == GV_DT_F32) return ((const float *)t->data)[i];
  return gv_tensor_get_f(t, i);
}
static inline void st(gv_tensor *t, int64_t i, double v) {
  if (t->type.dtype == GV_DT_F32) ((float *)t->data)[i] = (float)v;
  else gv_tensor_set_f(t, i, v);
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

static void strides_of(const gv_type *t, int64_t *s) {
  int64_t k = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    s[d] = k;
    k *= t->dims[d];
  }
}

/* Walks a result index space row-major while keeping up to three input
 * offsets (strided, possibly 0 for broadcast dims or negative for slices). */
typedef struct {
  int rank, n;
  int64_t dims[GV_MAX_RANK], idx[GV_MAX_RANK], st[3][GV_MAX_RANK], off[3];
} iter;

static void it_init(iter *it, const gv_type *out, int n) {
  memset(it, 0, sizeof *it);
  it->rank = out->rank;
  it->n = n;
  for (int d = 0; d < out->rank; d++) it->dims[d] = out->dims[d];
}

static void it_bcast(iter *it, int k, const gv_type *in, const gv_type *out) {
  gv_bcast_strides(in, out, it->st[k]);
}

static inline void it_next(iter *it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    it->idx[d]++;
    for (int k = 0; k < it->n; k++) it->off[k] += it->st[k][d];
    if (it->idx[d] < it->dims[d]) return;
    for (int k = 0; k < it->n; k++) it->off[k] -= it->st[k][d] * it->dims[d];
    it->idx[d] = 0;
  }
}

static int get_axis(gv_module *m, const gv_op *op, const char *name, int64_t dflt, int rank, int *ax) {
  int64_t v = gv_get_int(op, name, dflt);
  *ax = gv_norm_axis(v, rank);
  if (*ax < 0) return gv_error_op(m, op, "shape: %s %lld out of range for rank %d", name, (long long)v, rank);
  return 0;
}

/* ---------------------------------------------------------------- trivial ops */

int gv_eval_none(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in, (void)out;
  return gv_error_op(m, op, "cannot evaluate galv.%s", gv_ops[op->code].name);
}

int gv_eval_constant(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  const gv_attr *a = gv_get_attr(op, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t) return gv_error_op(m, op, "constant has no tensor 'value' attribute");
  out[0] = a->u.t;
  return 0;
}

int gv_eval_shape(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  /* Only the operand's type matters: callers may pass NULL data. */
  const gv_type *x = in && in[0] ? &in[0]->type : &op->opnds[0]->type;
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  int64_t r = x->rank, s = gv_get_int(op, "start", 0);
  if (s < 0) s += r;
  if (s < 0) s = 0;
  int64_t n = gv_tensor_numel(o);
  if (x->rank < 0 || s + n > r) return gv_error_op(m, op, "cannot evaluate: shape of %s", "an unranked value");
  for (int64_t i = 0; i < n; i++) {
    if (x->dims[s + i] < 0) return gv_error_op(m, op, "cannot evaluate: shape of a value with unknown dims");
    ((int64_t *)o->data)[i] = x->dims[s + i];
  }
  out[0] = o;
  return 0;
}

int gv_eval_copy(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  if (gv_tensor_numel(o) != gv_tensor_numel(in[0]) || o->type.dtype != in[0]->type.dtype)
    return gv_error_op(m, op, "shape: result type does not match the operand's element count or dtype");
  memcpy(o->data, in[0]->data, (size_t)gv_tensor_numel(o) * gv_dtype_size(o->type.dtype));
  out[0] = o;
  return 0;
}

static bool is_f(gv_dtype t) { return gv_dtype_is_float(t); }

int gv_eval_cast(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_tensor *x = in[0];
  int64_t n = gv_tensor_numel(o);
  gv_dtype to = o->type.dtype, from = x->type.dtype;
  if (to == from) {
    memcpy(o->data, x->data, (size_t)n * gv_dtype_size(to));
  } else if (is_f(from) && gv_dtype_is_int(to)) {
    /* Truncation toward zero, saturating at the target's range (no UB). */
    static const double lo[GV_DT_COUNT] = {[GV_DT_I64] = -9223372036854775808.0, [GV_DT_I32] = -2147483648.0,
                                           [GV_DT_I16] = -32768.0, [GV_DT_I8] = -128.0, [GV_DT_U8] = 0.0};
    static const double hi[GV_DT_COUNT] = {[GV_DT_I64] = 9223372036854775807.0, [GV_DT_I32] = 2147483647.0,
                                           [GV_DT_I16] = 32767.0, [GV_DT_I8] = 127.0, [GV_DT_U8] = 255.0};
    for (int64_t i = 0; i < n; i++) {
      double v = trunc(ld(x, i));
      int64_t r;
      if (v != v) r = 0;
      else if (v <= lo[to]) r = to == GV_DT_I64 ? INT64_MIN : (int64_t)lo[to];
      else if (v >= hi[to]) r = to == GV_DT_I64 ? INT64_MAX : (int64_t)hi[to];
      else r = (int64_t)v;
      gv_tensor_set_i(o, i, r);
    }
  } else if (is_f(from) && to == GV_DT_BOOL) {
    for (int64_t i = 0; i < n; i++) ((uint8_t *)o->data)[i] = ld(x, i) != 0;
  } else if (is_f(from) || is_f(to)) {
    for (int64_t i = 0; i < n; i++) st(o, i, is_f(from) ? ld(x, i) : (double)gv_tensor_get_i(x, i));
  } else {
    for (int64_t i = 0; i < n; i++) gv_tensor_set_i(o, i, gv_tensor_get_i(x, i));
  }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- unary */

static float gelu_f(float x, bool tanh_form) {
  if (tanh_form) return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
static double gelu_d(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));
}

static float un_f(gv_opcode c, float x, bool tf) {
  switch (c) {
  case GV_OP_NEG: return -x;
  case GV_OP_ABS: return fabsf(x);
  case GV_OP_SQRT: return sqrtf(x);
  case GV_OP_RECIPROCAL: return 1.0f / x;
  case GV_OP_EXP: return expf(x);
  case GV_OP_LOG: return logf(x);
  case GV_OP_ERF: return erff(x);
  case GV_OP_TANH: return tanhf(x);
  case GV_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case GV_OP_RELU: return x > 0 ? x : 0.0f;
  case GV_OP_SIN: return sinf(x);
  case GV_OP_COS: return cosf(x);
  case GV_OP_FLOOR: return floorf(x);
  case GV_OP_CEIL: return ceilf(x);
  case GV_OP_NOT: return x == 0;
  case GV_OP_GELU: return gelu_f(x, tf);
  case GV_OP_SILU: return x / (1.0f + expf(-x));
  default: return x;
  }
}
static double un_d(gv_opcode c, double x, bool tf) {
  switch (c) {
  case GV_OP_NEG: return -x;
  case GV_OP_ABS: return fabs(x);
  case GV_OP_SQRT: return sqrt(x);
  case GV_OP_RECIPROCAL: return 1.0 / x;
  case GV_OP_EXP: return exp(x);
  case GV_OP_LOG: return log(x);
  case GV_OP_ERF: return erf(x);
  case GV_OP_TANH: return tanh(x);
  case GV_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case GV_OP_RELU: return x > 0 ? x : 0.0;
  case GV_OP_SIN: return sin(x);
  case GV_OP_COS: return cos(x);
  case GV_OP_FLOOR: return floor(x);
  case GV_OP_CEIL: return ceil(x);
  case GV_OP_NOT: return x == 0;
  case GV_OP_GELU: return gelu_d(x, tf);
  case GV_OP_SILU: return x / (1.0 + exp(-x));
  default: return x;
  }
}

int gv_eval_unary(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_tensor *x = in[0];
  int64_t n = gv_tensor_numel(o);
  gv_opcode c = op->code;
  bool tf = strcmp(gv_get_str(op, "approximate", "none"), "tanh") == 0;
  gv_dtype dt = x->type.dtype;
  if (dt == GV_DT_F64) {
    for (int64_t i = 0; i < n; i++) st(o, i, un_d(c, ld(x, i), tf));
  } else if (is_f(dt)) {
    for (int64_t i = 0; i < n; i++) st(o, i, un_f(c, (float)ld(x, i), tf));
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t v = gv_tensor_get_i(x, i);
      switch (c) {
      case GV_OP_NEG: gv_tensor_set_i(o, i, (int64_t)(0 - (uint64_t)v)); break;
      case GV_OP_ABS: gv_tensor_set_i(o, i, v < 0 ? (int64_t)(0 - (uint64_t)v) : v); break;
      case GV_OP_RELU: gv_tensor_set_i(o, i, v > 0 ? v : 0); break;
      case GV_OP_FLOOR: case GV_OP_CEIL: gv_tensor_set_i(o, i, v); break;
      case GV_OP_NOT: gv_tensor_set_i(o, i, v == 0); break;
      default: gv_tensor_set_f(o, i, un_d(c, (double)v, tf)); break;
      }
    }
  }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- binary */

static float bin_f(gv_opcode c, float a, float b) {
  switch (c) {
  case GV_OP_ADD: return a + b;
  case GV_OP_SUB: return a - b;
  case GV_OP_MUL: return a * b;
  case GV_OP_DIV: return a / b;
  case GV_OP_POW: return powf(a, b);
  case GV_OP_MAX: return a != a || a > b ? a : b;
  case GV_OP_MIN: return a != a || a < b ? a : b;
  default: return 0;
  }
}
static double bin_d(gv_opcode c, double a, double b) {
  switch (c) {
  case GV_OP_ADD: return a + b;
  case GV_OP_SUB: return a - b;
  case GV_OP_MUL: return a * b;
  case GV_OP_DIV: return a / b;
  case GV_OP_POW: return pow(a, b);
  case GV_OP_MAX: return a != a || a > b ? a : b;
  case GV_OP_MIN: return a != a || a < b ? a : b;
  default: return 0;
  }
}

static int cmp_op(gv_opcode c, double a, double b) {
  switch (c) {
  case GV_OP_EQUAL: return a == b;
  case GV_OP_LESS: return a < b;
  case GV_OP_LESS_EQUAL: return a <= b;
  case GV_OP_GREATER: return a > b;
  case GV_OP_GREATER_EQUAL: return a >= b;
  default: return 0;
  }
}
static int cmp_int(gv_opcode c, int64_t a, int64_t b) {
  switch (c) {
  case GV_OP_EQUAL: return a == b;
  case GV_OP_LESS: return a < b;
  case GV_OP_LESS_EQUAL: return a <= b;
  case GV_OP_GREATER: return a > b;
  case GV_OP_GREATER_EQUAL: return a >= b;
  default: return 0;
  }
}

static int64_t ipow(int64_t b, int64_t e) {
  if (e < 0) return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)b; /* wraps like the fixed-width result */
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return (int64_t)r;
}

/* Integer arithmetic in int64 with wrap-around (no signed-overflow UB);
 * returns false on division by zero. */
static bool bin_i(gv_opcode c, int64_t a, int64_t b, int64_t *r) {
  switch (c) {
  case GV_OP_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return true;
  case GV_OP_SUB: *r = (int64_t)((uint64_t)a - (uint64_t)b); return true;
  case GV_OP_MUL: *r = (int64_t)((uint64_t)a * (uint64_t)b); return true;
  case GV_OP_DIV:
    if (b == 0) return false;
    *r = a == INT64_MIN && b == -1 ? INT64_MIN : a / b; /* C division truncates toward zero */
    return true;
  case GV_OP_POW: *r = ipow(a, b); return true;
  case GV_OP_MAX: *r = a > b ? a : b; return true;
  case GV_OP_MIN: *r = a < b ? a : b; return true;
  case GV_OP_AND: *r = a && b; return true;
  case GV_OP_OR: *r = a || b; return true;
  default: *r = 0; return true;
  }
}

/* mod (ONNX Mod): fmod 1 keeps the dividend's sign, 0 the divisor's. */
static double mod_d(double a, double b, bool fm) {
  double r = fmod(a, b);
  return !fm && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static bool mod_i(int64_t a, int64_t b, bool fm, int64_t *r) {
  if (b == 0) return false;
  int64_t q = b == -1 ? 0 : a % b;
  *r = !fm && q != 0 && (q < 0) != (b < 0) ? q + b : q;
  return true;
}

int gv_eval_binary(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_tensor *a = in[0], *b = in[1];
  gv_opcode c = op->code;
  if (c == GV_OP_MOD) {
    iter it;
    it_init(&it, &o->type, 2);
    it_bcast(&it, 0, &a->type, &o->type);
    it_bcast(&it, 1, &b->type, &o->type);
    bool fm = gv_get_int(op, "fmod", 0) != 0;
    for (int64_t i = 0, n = gv_tensor_numel(o); i < n; i++, it_next(&it)) {
      if (is_f(a->type.dtype)) {
        st(o, i, mod_d(ld(a, it.off[0]), ld(b, it.off[1]), fm));
        continue;
      }
      int64_t r;
      if (!mod_i(gv_tensor_get_i(a, it.off[0]), gv_tensor_get_i(b, it.off[1]), fm, &r))
        return gv_error_op(m, op, "integer mod by zero");
      gv_tensor_set_i(o, i, r);
    }
    out[0] = o;
    return 0;
  }
  bool cmp = c >= GV_OP_EQUAL && c <= GV_OP_GREATER_EQUAL;
  iter it;
  it_init(&it, &o->type, 2);
  it_bcast(&it, 0, &a->type, &o->type);
  it_bcast(&it, 1, &b->type, &o->type);
  int64_t n = gv_tensor_numel(o);
  gv_dtype at = a->type.dtype, bt = b->type.dtype;
  if (!cmp && at == GV_DT_F32 && bt == GV_DT_F32 && o->type.dtype == GV_DT_F32) {
    const float *pa = a->data, *pb = b->data;
    float *po = o->data;
    for (int64_t i = 0; i < n; i++, it_next(&it)) po[i] = bin_f(c, pa[it.off[0]], pb[it.off[1]]);
  } else if (is_f(at) || (c == GV_OP_POW && is_f(bt))) {
    bool dbl = at == GV_DT_F64 || bt == GV_DT_F64 || !is_f(at);
    for (int64_t i = 0; i < n; i++, it_next(&it)) {
      double x = ld(a, it.off[0]), y = ld(b, it.off[1]);
      if (cmp) gv_tensor_set_i(o, i, cmp_op(c, x, y));
      else if (dbl) st(o, i, bin_d(c, x, y));
      else st(o, i, bin_f(c, (float)x, (float)y));
    }
  } else {
    for (int64_t i = 0; i < n; i++, it_next(&it)) {
      int64_t x = gv_tensor_get_i(a, it.off[0]), y = gv_tensor_get_i(b, it.off[1]), r;
      if (cmp) r = cmp_int(c, x, y);
      else if (!bin_i(c, x, y, &r)) return gv_error_op(m, op, "integer division by zero");
      gv_tensor_set_i(o, i, r);
    }
  }
  out[0] = o;
  return 0;
}

int gv_eval_where(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  if (in[1]->type.dtype != o->type.dtype || in[2]->type.dtype != o->type.dtype)
    return gv_error_op(m, op, "where operands' dtypes differ from the result's");
  iter it;
  it_init(&it, &o->type, 3);
  for (int k = 0; k < 3; k++) it_bcast(&it, k, &in[k]->type, &o->type);
  size_t es = gv_dtype_size(o->type.dtype);
  int64_t n = gv_tensor_numel(o);
  const uint8_t *c = in[0]->data;
  for (int64_t i = 0; i < n; i++, it_next(&it)) {
    bool pick = in[0]->type.dtype == GV_DT_BOOL ? c[it.off[0]] != 0 : gv_tensor_get_i(in[0], it.off[0]) != 0;
    const gv_tensor *s = pick ? in[1] : in[2];
    memcpy((char *)o->data + (size_t)i * es, (const char *)s->data + (size_t)it.off[pick ? 1 : 2] * es, es);
  }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- data movement */

/* Copies out[i] = in[off(i)] element by element for a prepared iterator. */
static void gather_bytes(gv_tensor *o, const gv_tensor *x, iter *it, int64_t base) {
  size_t es = gv_dtype_size(o->type.dtype);
  int64_t n = gv_tensor_numel(o);
  char *po = o->data;
  const char *px = x->data;
  for (int64_t i = 0; i < n; i++, it_next(it)) memcpy(po + (size_t)i * es, px + (size_t)(base + it->off[0]) * es, es);
}

int gv_eval_expand(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  if (in[0]->type.rank > o->type.rank) return gv_error_op(m, op, "shape: expand result rank is below the operand's");
  iter it;
  it_init(&it, &o->type, 1);
  it_bcast(&it, 0, &in[0]->type, &o->type);
  gather_bytes(o, in[0], &it, 0);
  out[0] = o;
  return 0;
}

int gv_eval_transpose(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  const int64_t *perm;
  int np = gv_get_ints(op, "perm", &perm);
  int64_t s[GV_MAX_RANK];
  strides_of(x, s);
  iter it;
  it_init(&it, &o->type, 1);
  for (int d = 0; d < x->rank; d++) {
    int64_t p = np >= 0 ? perm[d] : x->rank - 1 - d;
    if (p < 0 || p >= x->rank || o->type.dims[d] != x->dims[p])
      return gv_error_op(m, op, "shape: transpose perm does not match the result type");
    it.st[0][d] = s[p];
  }
  gather_bytes(o, in[0], &it, 0);
  out[0] = o;
  return 0;
}

int gv_eval_slice(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  const gv_type *x = &in[0]->type;
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK], s[GV_MAX_RANK];
  bool aff[GV_MAX_RANK];
  int k = gv_slice_window(m, op, x, in, start, step, count, aff);
  if (k < 0) return -1;
  if (k == 0) return gv_error_op(m, op, "cannot evaluate: slice parameters are not known");
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  if (o->type.rank != x->rank) return gv_error_op(m, op, "shape: slice result rank differs from the operand's");
  strides_of(x, s);
  iter it;
  it_init(&it, &o->type, 1);
  int64_t base = 0;
  for (int d = 0; d < x->rank; d++) {
    if (count[d] != o->type.dims[d]) return gv_error_op(m, op, "shape: slice result type does not match its window");
    base += start[d] * s[d];
    it.st[0][d] = step[d] * s[d];
  }
  if (gv_tensor_numel(o) > 0) gather_bytes(o, in[0], &it, base);
  out[0] = o;
  return 0;
}

int gv_eval_tile(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  if (o->type.rank != x->rank) return gv_error_op(m, op, "shape: tile result rank differs from the operand's");
  int64_t s[GV_MAX_RANK];
  strides_of(x, s);
  size_t es = gv_dtype_size(x->dtype);
  int64_t n = gv_tensor_numel(o), idx[GV_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int d = 0; d < x->rank; d++) off += (idx[d] % x->dims[d]) * s[d];
    memcpy((char *)o->data + (size_t)i * es, (const char *)in[0]->data + (size_t)off * es, es);
    for (int d = x->rank - 1; d >= 0; d--) {
      if (++idx[d] < o->type.dims[d]) break;
      idx[d] = 0;
    }
  }
  out[0] = o;
  return 0;
}

int gv_eval_concat(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  int ax;
  if (get_axis(m, op, "axis", 0, o->type.rank, &ax)) return -1;
  size_t es = gv_dtype_size(o->type.dtype);
  int64_t outer = prod(o->type.dims, 0, ax), inner = prod(o->type.dims, ax + 1, o->type.rank);
  char *po = o->data;
  int64_t total = 0;
  for (int i = 0; i < op->nopnds; i++) {
    if (in[i]->type.rank != o->type.rank || in[i]->type.dtype != o->type.dtype)
      return gv_error_op(m, op, "shape: concat operand %d does not match the result type", i);
    total += in[i]->type.dims[ax];
  }
  if (total != o->type.dims[ax]) return gv_error_op(m, op, "shape: concat operands do not add up to the result");
  for (int64_t j = 0; j < outer; j++)
    for (int i = 0; i < op->nopnds; i++) {
      size_t chunk = (size_t)(in[i]->type.dims[ax] * inner) * es;
      memcpy(po, (const char *)in[i]->data + (size_t)j * chunk, chunk);
      po += chunk;
    }
  out[0] = o;
  return 0;
}

int gv_eval_split(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  const gv_type *x = &in[0]->type;
  int ax;
  if (get_axis(m, op, "axis", 0, x->rank, &ax)) return -1;
  size_t es = gv_dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, ax), inner = prod(x->dims, ax + 1, x->rank), total = 0;
  for (int i = 0; i < op->nres; i++) {
    if (!(out[i] = mkout(m, op, i))) return -1;
    total += out[i]->type.dims[ax];
  }
  if (total != x->dims[ax]) return gv_error_op(m, op, "shape: split results do not add up to the operand");
  const char *px = in[0]->data;
  for (int64_t j = 0; j < outer; j++)
    for (int i = 0; i < op->nres; i++) {
      size_t chunk = (size_t)(out[i]->type.dims[ax] * inner) * es;
      memcpy((char *)out[i]->data + (size_t)j * chunk, px, chunk);
      px += chunk;
    }
  return 0;
}

int gv_eval_gather(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  int ax;
  if (get_axis(m, op, "axis", 0, x->rank, &ax)) return -1;
  size_t es = gv_dtype_size(x->dtype);
  int64_t outer = prod(x->dims, 0, ax), D = x->dims[ax], inner = prod(x->dims, ax + 1, x->rank);
  int64_t ni = gv_tensor_numel(in[1]);
  if (gv_tensor_numel(o) != outer * ni * inner) return gv_error_op(m, op, "shape: gather result type does not match");
  size_t chunk = (size_t)inner * es;
  char *po = o->data;
  for (int64_t j = 0; j < outer; j++)
    for (int64_t i = 0; i < ni; i++) {
      int64_t k = gv_tensor_get_i(in[1], i);
      if (k < -D || k >= D)
        return gv_error_op(m, op, "gather index %lld out of range for axis %d of size %lld", (long long)k, ax, (long long)D);
      if (k < 0) k += D;
      memcpy(po, (const char *)in[0]->data + (size_t)(j * D + k) * chunk, chunk);
      po += chunk;
    }
  out[0] = o;
  return 0;
}

int gv_eval_constant_of_shape(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  (void)in;
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_attr *va = gv_get_attr(op, "value");
  size_t es = gv_dtype_size(o->type.dtype);
  int64_t n = gv_tensor_numel(o);
  if (va && va->kind == GV_ATTR_TENSOR && va->u.t) {
    if (va->u.t->type.dtype != o->type.dtype || gv_tensor_numel(va->u.t) != 1)
      return gv_error_op(m, op, "constant_of_shape value does not match the result dtype");
    for (int64_t i = 0; i < n; i++) memcpy((char *)o->data + (size_t)i * es, va->u.t->data, es);
  } /* default: f32 zeros, already zeroed */
  out[0] = o;
  return 0;
}

int gv_eval_range(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  int64_t n = gv_tensor_numel(o);
  if (is_f(o->type.dtype)) {
    double s = ld(in[0], 0), d = ld(in[2], 0);
    for (int64_t i = 0; i < n; i++) st(o, i, s + (double)i * d);
  } else {
    uint64_t s = (uint64_t)gv_tensor_get_i(in[0], 0), d = (uint64_t)gv_tensor_get_i(in[2], 0);
    for (int64_t i = 0; i < n; i++) gv_tensor_set_i(o, i, (int64_t)(s + (uint64_t)i * d));
  }
  out[0] = o;
  return 0;
}

int gv_eval_trilu(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  if (x->rank < 2) return gv_error_op(m, op, "shape: trilu needs rank >= 2");
  int64_t k = op->nopnds > 1 && in[1] ? gv_tensor_get_i(in[1], 0) : gv_get_int(op, "k", 0);
  bool upper = gv_get_int(op, "upper", 1) != 0;
  int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1], batch = prod(x->dims, 0, x->rank - 2);
  size_t es = gv_dtype_size(x->dtype);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++) {
        /* j - i cannot overflow: both are dims of an allocated tensor. */
        bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) {
          size_t off = (size_t)((b * R + i) * C + j) * es;
          memcpy((char *)o->data + off, (const char *)in[0]->data + off, es);
        }
      }
  out[0] = o;
  return 0;
}

int gv_eval_cumsum(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  int ax;
  if (get_axis(m, op, "axis", 0, x->rank, &ax)) return -1;
  bool excl = gv_get_int(op, "exclusive", 0) != 0, rev = gv_get_int(op, "reverse", 0) != 0;
  int64_t outer = prod(x->dims, 0, ax), L = x->dims[ax], inner = prod(x->dims, ax + 1, x->rank);
  bool fl = is_f(x->dtype);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      double sf = 0;
      uint64_t si = 0;
      for (int64_t t = 0; t < L; t++) {
        int64_t l = rev ? L - 1 - t : t, i = (a * L + l) * inner + c;
        if (excl) {
          if (fl) st(o, i, sf);
          else gv_tensor_set_i(o, i, (int64_t)si);
        }
        if (fl) sf += ld(in[0], i);
        else si += (uint64_t)gv_tensor_get_i(in[0], i);
        if (!excl) {
          if (fl) st(o, i, sf);
          else gv_tensor_set_i(o, i, (int64_t)si);
        }
      }
    }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- reductions */

int gv_eval_reduce(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes);
  /* The kept view: x with every reduced dim set to 1; x maps onto it by
   * broadcast strides, so each input element knows its output slot. */
  gv_type kept = *x;
  if (na <= 0)
    for (int d = 0; d < x->rank; d++) kept.dims[d] = 1;
  for (int k = 0; k < na; k++) {
    int ax = gv_norm_axis(axes[k], x->rank);
    if (ax < 0) return gv_error_op(m, op, "shape: reduce axis %lld out of range", (long long)axes[k]);
    kept.dims[ax] = 1;
  }
  int64_t no = gv_type_numel(&kept), ni = gv_tensor_numel(in[0]);
  if (no != gv_tensor_numel(o)) return gv_error_op(m, op, "shape: reduce result type does not match");
  iter it;
  it_init(&it, x, 1);
  gv_type kt = kept;
  int64_t ks[GV_MAX_RANK];
  strides_of(&kt, ks);
  for (int d = 0; d < x->rank; d++) it.st[0][d] = kept.dims[d] == 1 ? 0 : ks[d];
  gv_opcode c = op->code;
  bool fl = is_f(x->dtype);
  if (fl) {
    double *acc = xmalloc(m, op, no, sizeof(double));
    if (!acc) return -1;
    double init = c == GV_OP_REDUCE_MAX ? -INFINITY : c == GV_OP_REDUCE_MIN ? INFINITY : 0.0;
    for (int64_t j = 0; j < no; j++) acc[j] = init;
    if (x->dtype == GV_DT_F32) {
      const float *px = in[0]->data;
      for (int64_t i = 0; i < ni; i++, it_next(&it)) {
        double v = px[i], *a = &acc[it.off[0]];
        if (c == GV_OP_REDUCE_MAX) *a = v > *a || v != v ? v : *a;
        else if (c == GV_OP_REDUCE_MIN) *a = v < *a || v != v ? v : *a;
        else *a += v;
      }
    } else {
      for (int64_t i = 0; i < ni; i++, it_next(&it)) {
        double v = ld(in[0], i), *a = &acc[it.off[0]];
        if (c == GV_OP_REDUCE_MAX) *a = v > *a || v != v ? v : *a;
        else if (c == GV_OP_REDUCE_MIN) *a = v < *a || v != v ? v : *a;
        else *a += v;
      }
    }
    double cnt = no ? (double)ni / (double)no : 0;
    for (int64_t j = 0; j < no; j++) st(o, j, c == GV_OP_REDUCE_MEAN ? acc[j] / cnt : acc[j]);
    free(acc);
  } else {
    int64_t *acc = xmalloc(m, op, no, sizeof(int64_t));
    if (!acc) return -1;
    int64_t init = c == GV_OP_REDUCE_MAX ? INT64_MIN : c == GV_OP_REDUCE_MIN ? INT64_MAX : 0;
    for (int64_t j = 0; j < no; j++) acc[j] = init;
    for (int64_t i = 0; i < ni; i++, it_next(&it)) {
      int64_t v = gv_tensor_get_i(in[0], i), *a = &acc[it.off[0]];
      if (c == GV_OP_REDUCE_MAX) *a = v > *a ? v : *a;
      else if (c == GV_OP_REDUCE_MIN) *a = v < *a ? v : *a;
      else *a = (int64_t)((uint64_t)*a + (uint64_t)v);
    }
    int64_t cnt = no ? ni / no : 0;
    for (int64_t j = 0; j < no; j++) gv_tensor_set_i(o, j, c == GV_OP_REDUCE_MEAN ? (cnt ? acc[j] / cnt : 0) : acc[j]);
    free(acc);
  }
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- softmax, norms */

int gv_eval_softmax(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  int ax = 0;
  if (x->rank > 0 && get_axis(m, op, "axis", -1, x->rank, &ax)) return -1;
  int64_t outer = prod(x->dims, 0, ax), L = x->rank ? x->dims[ax] : 1, inner = prod(x->dims, ax + 1, x->rank);
  bool logf_ = op->code == GV_OP_LOG_SOFTMAX;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      int64_t base = a * L * inner + c;
      double mx = -INFINITY, sum = 0;
      for (int64_t l = 0; l < L; l++) {
        double v = ld(in[0], base + l * inner);
        if (v > mx) mx = v;
      }
      for (int64_t l = 0; l < L; l++) sum += exp(ld(in[0], base + l * inner) - mx);
      double ls = log(sum);
      for (int64_t l = 0; l < L; l++) {
        double v = ld(in[0], base + l * inner) - mx;
        st(o, base + l * inner, logf_ ? v - ls : exp(v) / sum);
      }
    }
  out[0] = o;
  return 0;
}

/* Expands an operand (scale, bias) broadcast onto the normalised dims into
 * a dense double vector of length N. */
static double *expand_vec(gv_module *m, const gv_op *op, const gv_tensor *t, const gv_type *nt, int64_t N) {
  double *v = xmalloc(m, op, N, sizeof(double));
  if (!v) return NULL;
  if (t->type.rank > nt->rank) {
    free(v);
    gv_error_op(m, op, "shape: norm scale/bias rank exceeds the normalised dims");
    return NULL;
  }
  iter it;
  it_init(&it, nt, 1);
  it_bcast(&it, 0, &t->type, nt);
  for (int64_t j = 0; j < N; j++, it_next(&it)) v[j] = ld(t, it.off[0]);
  return v;
}

int gv_eval_norm(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *x = &in[0]->type;
  int ax;
  if (get_axis(m, op, "axis", -1, x->rank, &ax)) return -1;
  double eps = gv_get_float(op, "epsilon", 1e-5f);
  int64_t outer = prod(x->dims, 0, ax), N = prod(x->dims, ax, x->rank);
  gv_type nt = gv_type_make(x->dtype, x->rank - ax, x->dims + ax);
  bool ln = op->code == GV_OP_LAYER_NORM;
  double *sc = expand_vec(m, op, in[1], &nt, N), *bi = NULL;
  if (!sc) return -1;
  if (ln && op->nopnds > 2 && in[2] && !(bi = expand_vec(m, op, in[2], &nt, N))) {
    free(sc);
    return -1;
  }
  for (int64_t a = 0; a < outer; a++) {
    int64_t base = a * N;
    double mean = 0, var = 0;
    if (ln) {
      for (int64_t j = 0; j < N; j++) mean += ld(in[0], base + j);
      mean /= (double)N;
    }
    for (int64_t j = 0; j < N; j++) {
      double d = ld(in[0], base + j) - mean;
      var += d * d;
    }
    var /= (double)N;
    double inv = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < N; j++)
      st(o, base + j, (ld(in[0], base + j) - mean) * inv * sc[j] + (bi ? bi[j] : 0.0));
  }
  free(sc);
  free(bi);
  out[0] = o;
  return 0;
}

/* ---------------------------------------------------------------- dot, conv */

/* Copies t permuted by perm into a dense double array (row-major in the
 * permuted order). */
static void pack_perm(const gv_tensor *t, const int *perm, double *dst) {
  const gv_type *x = &t->type;
  int64_t s[GV_MAX_RANK];
  strides_of(x, s);
  gv_type pt = *x;
  for (int d = 0; d < x->rank; d++) pt.dims[d] = x->dims[perm[d]];
  iter it;
  it_init(&it, &pt, 1);
  for (int d = 0; d < x->rank; d++) it.st[0][d] = s[perm[d]];
  int64_t n = gv_tensor_numel(t);
  if (x->dtype == GV_DT_F32) {
    const float *p = t->data;
    for (int64_t i = 0; i < n; i++, it_next(&it)) dst[i] = p[it.off[0]];
  } else {
    for (int64_t i = 0; i < n; i++, it_next(&it)) dst[i] = ld(t, it.off[0]);
  }
}

static int dot_perm(const gv_op *op, const char *bn, const char *cn, int rank, bool batch_contract_then_free, int *perm,
                    int64_t *nb, int64_t *nc) {
  const int64_t *b, *c;
  int n_b = gv_get_ints(op, bn, &b), n_c = gv_get_ints(op, cn, &c);
  if (n_b < 0) n_b = 0;
  if (n_c < 0) n_c = 0;
  bool used[GV_MAX_RANK] = {0};
  int j = 0;
  for (int i = 0; i < n_b; i++) {
    int a = gv_norm_axis(b[i], rank);
    if (a < 0 || used[a]) return -1;
    used[a] = true;
    perm[j++] = a;
  }
  int cpos[GV_MAX_RANK];
  for (int i = 0; i < n_c; i++) {
    int a = gv_norm_axis(c[i], rank);
    if (a < 0 || used[a]) return -1;
    used[a] = true;
    cpos[i] = a;
  }
  /* lhs: batch, free, contract; rhs: batch, contract, free. */
  if (batch_contract_then_free)
    for (int i = 0; i < n_c; i++) perm[j++] = cpos[i];
  for (int d = 0; d < rank; d++)
    if (!used[d]) perm[j++] = d;
  if (!batch_contract_then_free)
    for (int i = 0; i < n_c; i++) perm[j++] = cpos[i];
  *nb = n_b;
  *nc = n_c;
  return 0;
}

/* gather_nd / scatter_nd: the data offset (in rows of `inner` elements) of
 * index tuple r of k coordinates; negative coordinates wrap. -1: out of range. */
static int64_t nd_offset(const gv_tensor *ix, int64_t r, int64_t k, const int64_t *dims) {
  int64_t off = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t v = gv_tensor_get_i(ix, r * k + j), d = dims[j];
    if (v < -d || v >= d) return -1;
    off = off * d + (v < 0 ? v + d : v);
  }
  return off;
}

int gv_eval_gather_nd(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *d = &in[0]->type, *it = &in[1]->type;
  int64_t k = it->dims[it->rank - 1], rows = k ? gv_tensor_numel(in[1]) / k : 0;
  int64_t inner = prod(d->dims, (int)k, d->rank);
  size_t es = gv_dtype_size(d->dtype);
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = nd_offset(in[1], r, k, d->dims);
    if (off < 0) return gv_error_op(m, op, "gather_nd index tuple %lld out of range", (long long)r);
    memcpy((char *)o->data + (size_t)(r * inner) * es, (const char *)in[0]->data + (size_t)(off * inner) * es,
           (size_t)inner * es);
  }
  out[0] = o;
  return 0;
}

/* ONNX's scatter reductions (1 add, 2 mul, 3 max, 4 min), as the runtimes'
 * GALV_SCATTER_RED: max / min propagate NaN. */
static double scatter_red(int red, double a, double b) {
  if (red == 1) return a + b;
  if (red == 2) return a * b;
  if (a != a || b != b) return a + b;
  return red == 3 ? (a >= b ? a : b) : (a <= b ? a : b);
}

int gv_eval_scatter_nd(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *d = &in[0]->type, *it = &in[1]->type;
  int64_t k = it->dims[it->rank - 1], rows = k ? gv_tensor_numel(in[1]) / k : 0;
  int64_t inner = prod(d->dims, (int)k, d->rank);
  size_t es = gv_dtype_size(d->dtype);
  int red = gv_scatter_reduction(op);
  memcpy(o->data, in[0]->data, (size_t)gv_tensor_numel(o) * es);
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = nd_offset(in[1], r, k, d->dims);
    if (off < 0) return gv_error_op(m, op, "scatter_nd index tuple %lld out of range", (long long)r);
    if (red)
      for (int64_t i = 0; i < inner; i++)
        st(o, off * inner + i, scatter_red(red, ld(o, off * inner + i), ld(in[2], r * inner + i)));
    else
      memcpy((char *)o->data + (size_t)(off * inner) * es, (const char *)in[2]->data + (size_t)(r * inner) * es,
             (size_t)inner * es);
  }
  out[0] = o;
  return 0;
}

/* gather_elements / scatter_elements: element i of indices (row-major over
 * its dims) addresses data at i's coordinates with the axis one replaced by
 * the index (negative wraps). */
static int elem_walk(gv_module *m, const gv_op *op, const gv_tensor *data, const gv_tensor *ix, int64_t *offs) {
  const gv_type *d = &data->type, *it = &ix->type;
  int ax = gv_norm_axis(gv_get_int(op, "axis", 0), d->rank);
  int64_t ds[GV_MAX_RANK], n = gv_tensor_numel(ix), c[GV_MAX_RANK] = {0};
  strides_of(d, ds);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int j = 0; j < d->rank; j++) {
      int64_t v = c[j], lim = d->dims[j];
      if (j == ax) {
        v = gv_tensor_get_i(ix, i);
        if (v < -lim || v >= lim)
          return gv_error_op(m, op, "%s index %lld out of range for a dim of size %lld", gv_ops[op->code].name,
                             (long long)v, (long long)lim);
        if (v < 0) v += lim;
      } else if (v >= lim) {
        return gv_error_op(m, op, "%s indices are larger than data on dim %d", gv_ops[op->code].name, j);
      }
      off += v * ds[j];
    }
    offs[i] = off;
    for (int j = it->rank - 1; j >= 0; j--) {
      if (++c[j] < it->dims[j]) break;
      c[j] = 0;
    }
  }
  return 0;
}

int gv_eval_gather_elements(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  int64_t n = gv_tensor_numel(in[1]);
  int64_t *offs = xmalloc(m, op, n ? n : 1, sizeof *offs);
  if (!offs) return -1;
  size_t es = gv_dtype_size(in[0]->type.dtype);
  int rc = elem_walk(m, op, in[0], in[1], offs);
  for (int64_t i = 0; !rc && i < n; i++)
    memcpy((char *)o->data + (size_t)i * es, (const char *)in[0]->data + (size_t)offs[i] * es, es);
  free(offs);
  if (!rc) out[0] = o;
  return rc;
}

int gv_eval_scatter_elements(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  int64_t n = gv_tensor_numel(in[1]);
  int64_t *offs = xmalloc(m, op, n ? n : 1, sizeof *offs);
  if (!offs) return -1;
  size_t es = gv_dtype_size(in[0]->type.dtype);
  int red = gv_scatter_reduction(op);
  memcpy(o->data, in[0]->data, (size_t)gv_tensor_numel(o) * es);
  int rc = elem_walk(m, op, in[0], in[1], offs);
  for (int64_t i = 0; !rc && i < n; i++) {
    if (red) st(o, offs[i], scatter_red(red, ld(o, offs[i]), ld(in[2], i)));
    else memcpy((char *)o->data + (size_t)offs[i] * es, (const char *)in[2]->data + (size_t)i * es, es);
  }
  free(offs);
  if (!rc) out[0] = o;
  return rc;
}

/* numpy matmul (galv.matmul): the result's batch index walks both operands'
 * batch dims with stride 0 where a dim is 1 or missing. */
int gv_eval_matmul(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *l = &in[0]->type, *r = &in[1]->type;
  if (l->rank < 1 || r->rank < 1) return gv_error_op(m, op, "shape: matmul operands must have rank >= 1");
  int64_t M = l->rank > 1 ? l->dims[l->rank - 2] : 1, K = l->dims[l->rank - 1];
  int64_t N = r->rank > 1 ? r->dims[r->rank - 1] : 1;
  if ((r->rank > 1 ? r->dims[r->rank - 2] : r->dims[0]) != K) return gv_error_op(m, op, "shape: matmul sizes differ");
  int lb = l->rank > 2 ? l->rank - 2 : 0, rb = r->rank > 2 ? r->rank - 2 : 0, nb = lb > rb ? lb : rb;
  int64_t bd[GV_MAX_RANK], ls[GV_MAX_RANK], rs[GV_MAX_RANK], B = 1;
  int64_t lstep = M * K, rstep = K * N;
  for (int i = nb - 1; i >= 0; i--) {
    int il = i - (nb - lb), ir = i - (nb - rb);
    int64_t x = il >= 0 ? l->dims[il] : 1, y = ir >= 0 ? r->dims[ir] : 1;
    if (x != y && x != 1 && y != 1) return gv_error_op(m, op, "shape: matmul batch dims do not broadcast");
    bd[i] = x > y ? x : y;
    ls[i] = x == 1 ? 0 : lstep;
    rs[i] = y == 1 ? 0 : rstep;
    lstep *= x;
    rstep *= y;
    B *= bd[i];
  }
  if (gv_tensor_numel(o) != B * M * N) return gv_error_op(m, op, "shape: matmul result type does not match");
  for (int64_t b = 0; b < B; b++) {
    int64_t lo = 0, ro = 0, q = b;
    for (int i = nb - 1; i >= 0; i--) {
      int64_t k = q % bd[i];
      q /= bd[i];
      lo += k * ls[i];
      ro += k * rs[i];
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) acc += ld(in[0], lo + i * K + k) * ld(in[1], ro + k * N + j);
        st(o, (b * M + i) * N + j, acc);
      }
  }
  out[0] = o;
  return 0;
}

int gv_eval_dot(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *l = &in[0]->type, *r = &in[1]->type;
  int lp[GV_MAX_RANK], rp[GV_MAX_RANK];
  int64_t lnb, lnc, rnb, rnc;
  if (dot_perm(op, "lhs_batch", "lhs_contract", l->rank, false, lp, &lnb, &lnc) ||
      dot_perm(op, "rhs_batch", "rhs_contract", r->rank, true, rp, &rnb, &rnc) || lnb != rnb || lnc != rnc)
    return gv_error_op(m, op, "shape: invalid dot dimension numbers");
  int64_t B = 1, K = 1, M = 1, N = 1;
  for (int i = 0; i < lnb; i++) {
    if (l->dims[lp[i]] != r->dims[rp[i]]) return gv_error_op(m, op, "shape: dot batch dims differ");
    B *= l->dims[lp[i]];
  }
  for (int i = 0; i < lnc; i++) {
    int64_t dl = l->dims[lp[l->rank - lnc + i]], dr = r->dims[rp[rnb + i]];
    if (dl != dr) return gv_error_op(m, op, "shape: dot contracting sizes differ");
    K *= dl;
  }
  for (int i = (int)lnb; i < l->rank - lnc; i++) M *= l->dims[lp[i]];
  for (int i = (int)(rnb + rnc); i < r->rank; i++) N *= r->dims[rp[i]];
  if (gv_tensor_numel(o) != B * M * N) return gv_error_op(m, op, "shape: dot result type does not match");
  double *A = xmalloc(m, op, B * M * K, sizeof(double)), *Bm = A ? xmalloc(m, op, B * K * N, sizeof(double)) : NULL;
  double *row = Bm ? xmalloc(m, op, N, sizeof(double)) : NULL;
  if (!row) {
    free(A);
    free(Bm);
    return -1;
  }
  pack_perm(in[0], lp, A);
  pack_perm(in[1], rp, Bm);
  float *of = o->type.dtype == GV_DT_F32 ? o->data : NULL;
  for (int64_t b = 0; b < B; b++)
    for (int64_t i = 0; i < M; i++) {
      for (int64_t j = 0; j < N; j++) row[j] = 0;
      const double *a = A + (b * M + i) * K;
      for (int64_t k = 0; k < K; k++) {
        double av = a[k];
        const double *br = Bm + (b * K + k) * N;
        for (int64_t j = 0; j < N; j++) row[j] += av * br[j];
      }
      int64_t base = (b * M + i) * N;
      if (of)
        for (int64_t j = 0; j < N; j++) of[base + j] = (float)row[j];
      else
        for (int64_t j = 0; j < N; j++) st(o, base + j, row[j]);
    }
  free(A);
  free(Bm);
  free(row);
  out[0] = o;
  return 0;
}

int gv_eval_conv(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  gv_tensor *o = mkout(m, op, 0);
  if (!o) return -1;
  const gv_type *xt = &in[0]->type, *wt = &in[1]->type, *ot = &o->type;
  int r = xt->rank, S = r - 2;
  if (r < 3 || wt->rank != r || ot->rank != r) return gv_error_op(m, op, "shape: conv operands must have equal rank >= 3");
  const int64_t *sv, *pv, *dv;
  int ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv), nd = gv_get_ints(op, "dilations", &dv);
  int64_t G = gv_get_int(op, "group", 1);
  int64_t Nn = xt->dims[0], C = xt->dims[1], Mo = wt->dims[0], Cg = wt->dims[1];
  if (G < 1 || C != Cg * G || Mo % G != 0 || ot->dims[1] != Mo || ot->dims[0] != Nn)
    return gv_error_op(m, op, "shape: conv channel counts do not match");
  int64_t Mg = Mo / G, stv[GV_MAX_RANK], pb[GV_MAX_RANK], dil[GV_MAX_RANK];
  for (int s = 0; s < S; s++) {
    stv[s] = ns == S ? sv[s] : 1;
    pb[s] = np == 2 * S ? pv[s] : 0;
    dil[s] = nd == S ? dv[s] : 1;
  }
  int64_t P = prod(ot->dims, 2, r), KK = prod(wt->dims, 2, r), IS = prod(xt->dims, 2, r);
  double *X = xmalloc(m, op, gv_tensor_numel(in[0]), sizeof(double));
  double *W = X ? xmalloc(m, op, gv_tensor_numel(in[1]), sizeof(double)) : NULL;
  int64_t *kpos = W ? xmalloc(m, op, KK * S, sizeof(int64_t)) : NULL;
  int64_t *opos = kpos ? xmalloc(m, op, P * S, sizeof(int64_t)) : NULL;
  if (!opos) {
    free(X), free(W), free(kpos);
    return -1;
  }
  int id[GV_MAX_RANK];
  for (int d = 0; d < r; d++) id[d] = d;
  pack_perm(in[0], id, X);
  pack_perm(in[1], id, W);
  /* Decode kernel and output positions once: the inner loops only add. */
  for (int64_t k = 0; k < KK; k++)
    for (int64_t s = S - 1, q = k; s >= 0; s--) {
      kpos[k * S + s] = (q % wt->dims[2 + s]) * dil[s];
      q /= wt->dims[2 + s];
    }
  for (int64_t p = 0; p < P; p++)
    for (int64_t s = S - 1, q = p; s >= 0; s--) {
      opos[p * S + s] = (q % ot->dims[2 + s]) * stv[s] - pb[s];
      q /= ot->dims[2 + s];
    }
  for (int64_t n = 0; n < Nn; n++)
    for (int64_t mo = 0; mo < Mo; mo++) {
      int64_t g = mo / Mg;
      double bias = op->nopnds > 2 && in[2] ? ld(in[2], mo) : 0.0;
      for (int64_t p = 0; p < P; p++) {
        double acc = bias;
        for (int64_t c = 0; c < Cg; c++) {
          const double *xp = X + (n * C + g * Cg + c) * IS, *wp = W + (mo * Cg + c) * KK;
          for (int64_t k = 0; k < KK; k++) {
            int64_t off = 0;
            bool inside = true;
            for (int s = 0; s < S; s++) {
              int64_t q = opos[p * S + s] + kpos[k * S + s];
              if (q < 0 || q >= xt->dims[2 + s]) {
                inside = false;
                break;
              }
              off = off * xt->dims[2 + s] + q;
            }
            if (inside) acc += xp[off] * wp[k];
          }
        }
        st(o, (n * Mo + mo) * P + p, acc);
      }
    }
  free(X), free(W), free(kpos), free(opos);
  out[0] = o;
  return 0;
}
