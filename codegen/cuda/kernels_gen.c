/* kernels_gen.c — the generated kernels of the CUDA emitter: one __global__
 * kernel per galv.fused (or lone elementwise) op — one thread per element
 * in a grid-stride loop, each operand's index computed from the flat output
 * index with its broadcast strides specialised to the static shapes
 * (literals, merged dim groups, 32-bit arithmetic when the tensor allows) —
 * and the score functor of a fused attention (the elementwise op between
 * the two dots, applied to one score). Each body op is one C expression with
 * the semantics of ir/eval.c, as in the CPU target's loops.c (whose
 * expression code this mirrors with device helpers): floats are computed in
 * float (f64 in double) whatever the storage precision, integers in int64
 * with wrap-around. This file never changes the IR. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/shape_rules.h"
#include "cuda.h"

/* compute type of a dtype in device code */
const char *cu_ctype(gv_dtype t) {
  switch (t) {
  case GV_DT_F32: return "float";
  case GV_DT_F64: return "double";
  case GV_DT_I64: return "int64_t";
  case GV_DT_I32: return "int32_t";
  case GV_DT_I16: return "int16_t";
  case GV_DT_I8: return "int8_t";
  case GV_DT_U8: case GV_DT_BOOL: return "uint8_t";
  default: return NULL;
  }
}

/* storage type: f32 tensors are `gf` (float or bf16, program.cu's typedef) */
const char *cu_stype(gv_dtype t) { return t == GV_DT_F32 ? "gf" : cu_ctype(t); }

/* ---------------------------------------------------------------- expressions */

typedef struct {
  const gv_value *v;
  char name[16];
} binding;

typedef struct {
  gv_module *m;
  const gv_op *fop; /* the fused (or lone) op, for messages */
  binding *b;
  int nb, cap;
} ctx;

static const char *lookup(ctx *c, const gv_value *v) {
  for (int i = c->nb - 1; i >= 0; i--)
    if (c->b[i].v == v) return c->b[i].name;
  return NULL;
}

static void bind(ctx *c, const gv_value *v, const char *fmt, int n) {
  if (c->nb == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 16;
    c->b = realloc(c->b, sizeof *c->b * (size_t)c->cap);
    if (!c->b) abort();
  }
  c->b[c->nb].v = v;
  snprintf(c->b[c->nb].name, sizeof c->b[c->nb].name, fmt, n);
  c->nb++;
}

static bool isf(gv_dtype t) { return t == GV_DT_F32 || t == GV_DT_F64; }

/* (T)(v) for integer results, with bool normalised to 0/1 (gv_tensor_set_i). */
static void to_int(char *o, size_t n, gv_dtype t, const char *v) {
  if (t == GV_DT_BOOL) snprintf(o, n, "(uint8_t)((%s) != 0)", v);
  else snprintf(o, n, "(%s)(%s)", cu_ctype(t), v);
}

/* The expression of one body op into out; -1 after an error. */
static int op_expr(ctx *c, const gv_op *op, char *out, size_t n) {
  gv_module *m = c->m;
  const char *a[3] = {0};
  gv_dtype at[3] = {0};
  for (int i = 0; i < op->nopnds && i < 3; i++) {
    a[i] = lookup(c, op->opnds[i]);
    at[i] = op->opnds[i]->type.dtype;
    if (!a[i]) return gv_error_op(m, op, "cuda codegen: operand %d of a fused body op is not defined in the body", i);
  }
  gv_dtype rt = op->res[0]->type.dtype;
  gv_opcode k = op->code;
  char t[512];
  const char *x = a[0], *y = a[1];
  if (k == GV_OP_CAST) {
    gv_dtype from = at[0], to = rt;
    if (from == to) snprintf(out, n, "%s", x);
    else if (isf(from) && to == GV_DT_BOOL) snprintf(out, n, "(uint8_t)(%s != 0)", x);
    else if (isf(from) && gv_dtype_is_int(to)) {
      static const char *const b[GV_DT_COUNT] = {
          [GV_DT_I64] = "-9223372036854775808.0, 9223372036854775807.0, INT64_MIN, INT64_MAX",
          [GV_DT_I32] = "-2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX",
          [GV_DT_I16] = "-32768.0, 32767.0, INT16_MIN, INT16_MAX", [GV_DT_I8] = "-128.0, 127.0, INT8_MIN, INT8_MAX",
          [GV_DT_U8] = "0.0, 255.0, 0, 255"};
      snprintf(out, n, "(%s)gd_f2i((double)%s, %s)", cu_ctype(to), x, b[to]);
    } else if (isf(to)) snprintf(out, n, "(%s)(double)%s", cu_ctype(to), x);
    else {
      snprintf(t, sizeof t, "(int64_t)%s", x);
      to_int(out, n, to, t);
    }
    return 0;
  }
  if (op->nopnds == 1 && op->nres == 1 && k != GV_OP_CONSTANT) { /* unary */
    bool tf = strcmp(gv_get_str(op, "approximate", "none"), "tanh") == 0;
    if (at[0] == GV_DT_F32 || at[0] == GV_DT_F64) {
      bool d = at[0] == GV_DT_F64;
      const char *sf = d ? "" : "f", *one = d ? "1.0" : "1.0f", *zero = d ? "0.0" : "0.0f";
      switch (k) {
      case GV_OP_NEG: snprintf(out, n, "-%s", x); break;
      case GV_OP_ABS: snprintf(out, n, "fabs%s(%s)", sf, x); break;
      case GV_OP_SQRT: snprintf(out, n, "sqrt%s(%s)", sf, x); break;
      case GV_OP_RECIPROCAL: snprintf(out, n, "%s / %s", one, x); break;
      case GV_OP_EXP: snprintf(out, n, "exp%s(%s)", sf, x); break;
      case GV_OP_LOG: snprintf(out, n, "log%s(%s)", sf, x); break;
      case GV_OP_ERF: snprintf(out, n, "erf%s(%s)", sf, x); break;
      case GV_OP_TANH: snprintf(out, n, "tanh%s(%s)", sf, x); break;
      case GV_OP_SIGMOID: snprintf(out, n, "%s / (%s + exp%s(-%s))", one, one, sf, x); break;
      case GV_OP_RELU: snprintf(out, n, "%s > 0 ? %s : %s", x, x, zero); break;
      case GV_OP_SIN: snprintf(out, n, "sin%s(%s)", sf, x); break;
      case GV_OP_COS: snprintf(out, n, "cos%s(%s)", sf, x); break;
      case GV_OP_FLOOR: snprintf(out, n, "floor%s(%s)", sf, x); break;
      case GV_OP_CEIL: snprintf(out, n, "ceil%s(%s)", sf, x); break;
      case GV_OP_NOT: snprintf(out, n, "(%s)(%s == 0)", cu_ctype(at[0]), x); break;
      case GV_OP_GELU: snprintf(out, n, "gd_gelu%s_%s(%s)", tf ? "_tanh" : "", d ? "f64" : "f32", x); break;
      case GV_OP_SILU: snprintf(out, n, "%s / (%s + exp%s(-%s))", x, one, sf, x); break;
      default: return gv_error_op(m, op, "cuda codegen: galv.%s is not an elementwise op", gv_ops[k].name);
      }
      return 0;
    }
    switch (k) {
    case GV_OP_NEG: snprintf(t, sizeof t, "(int64_t)(0 - (uint64_t)(int64_t)%s)", x); break;
    case GV_OP_ABS: snprintf(t, sizeof t, "%s < 0 ? (int64_t)(0 - (uint64_t)(int64_t)%s) : (int64_t)%s", x, x, x); break;
    case GV_OP_RELU: snprintf(t, sizeof t, "%s > 0 ? (int64_t)%s : 0", x, x); break;
    case GV_OP_FLOOR: case GV_OP_CEIL: snprintf(t, sizeof t, "(int64_t)%s", x); break;
    case GV_OP_NOT: snprintf(t, sizeof t, "%s == 0", x); break;
    default:
      return gv_error_op(m, op, "cuda codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
    }
    to_int(out, n, rt, t);
    return 0;
  }
  if (k == GV_OP_WHERE) {
    snprintf(out, n, "%s != 0 ? %s : %s", x, a[1], a[2]);
    return 0;
  }
  if (op->nopnds != 2) return gv_error_op(m, op, "cuda codegen: galv.%s is not an elementwise op", gv_ops[k].name);
  bool cmp = k >= GV_OP_EQUAL && k <= GV_OP_GREATER_EQUAL;
  static const char *const cmps[GV_OP_COUNT] = {[GV_OP_EQUAL] = "==", [GV_OP_LESS] = "<", [GV_OP_LESS_EQUAL] = "<=",
                                                 [GV_OP_GREATER] = ">", [GV_OP_GREATER_EQUAL] = ">="};
  static const char *const ar[GV_OP_COUNT] = {[GV_OP_ADD] = "+", [GV_OP_SUB] = "-", [GV_OP_MUL] = "*", [GV_OP_DIV] = "/"};
  if (cmp) {
    if (at[0] == GV_DT_F32 && at[1] == GV_DT_F32) snprintf(out, n, "(uint8_t)(%s %s %s)", x, cmps[k], y);
    else if (isf(at[0])) snprintf(out, n, "(uint8_t)((double)%s %s (double)%s)", x, cmps[k], y);
    else snprintf(out, n, "(uint8_t)((int64_t)%s %s (int64_t)%s)", x, cmps[k], y);
    return 0;
  }
  if (isf(at[0]) || (k == GV_OP_POW && isf(at[1]))) {
    bool dbl = at[0] == GV_DT_F64 || at[1] == GV_DT_F64 || !isf(at[0]);
    const char *T = dbl ? "double" : "float", *sf = dbl ? "" : "f";
    char xa[64], ya[64];
    snprintf(xa, sizeof xa, "(%s)%s", T, x);
    snprintf(ya, sizeof ya, "(%s)%s", T, y);
    switch (k) {
    case GV_OP_ADD: case GV_OP_SUB: case GV_OP_MUL: case GV_OP_DIV:
      snprintf(t, sizeof t, "%s %s %s", xa, ar[k], ya);
      break;
    case GV_OP_POW: snprintf(t, sizeof t, "pow%s(%s, %s)", sf, xa, ya); break;
    case GV_OP_MAX: snprintf(t, sizeof t, "%s != %s || %s > %s ? %s : %s", xa, xa, xa, ya, xa, ya); break;
    case GV_OP_MIN: snprintf(t, sizeof t, "%s != %s || %s < %s ? %s : %s", xa, xa, xa, ya, xa, ya); break;
    default:
      return gv_error_op(m, op, "cuda codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
    }
    if (isf(rt)) snprintf(out, n, "(%s)(%s)", cu_ctype(rt), t);
    else {
      char u[560];
      snprintf(u, sizeof u, "(int64_t)(%s)", t);
      to_int(out, n, rt, u);
    }
    return 0;
  }
  char xa[64], ya[64];
  snprintf(xa, sizeof xa, "(int64_t)%s", x);
  snprintf(ya, sizeof ya, "(int64_t)%s", y);
  switch (k) {
  case GV_OP_ADD: case GV_OP_SUB: case GV_OP_MUL:
    snprintf(t, sizeof t, "(int64_t)((uint64_t)%s %s (uint64_t)%s)", xa, ar[k], ya);
    break;
  case GV_OP_DIV: snprintf(t, sizeof t, "gd_idiv(%s, %s, galv_err, galv_k)", xa, ya); break;
  case GV_OP_POW: snprintf(t, sizeof t, "gd_ipow(%s, %s)", xa, ya); break;
  case GV_OP_MAX: snprintf(t, sizeof t, "%s > %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_MIN: snprintf(t, sizeof t, "%s < %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_AND: snprintf(t, sizeof t, "%s && %s", xa, ya); break;
  case GV_OP_OR: snprintf(t, sizeof t, "%s || %s", xa, ya); break;
  default:
    return gv_error_op(m, op, "cuda codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
  }
  to_int(out, n, rt, t);
  return 0;
}

/* A one-element constant inside a body becomes a literal. */
static int const_expr(ctx *c, const gv_op *op, char *out, size_t n) {
  const gv_attr *a = gv_get_attr(op, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t || gv_tensor_numel(a->u.t) != 1)
    return gv_error_op(c->m, op, "cuda codegen: only one-element constants may appear inside a fused body");
  const gv_tensor *t = a->u.t;
  gv_dtype dt = t->type.dtype;
  if (isf(dt)) {
    double v = gv_tensor_get_f(t, 0);
    if (v != v) snprintf(out, n, "(%s)NAN", cu_ctype(dt));
    else if (isinf(v)) snprintf(out, n, "(%s)(%sINFINITY)", cu_ctype(dt), v < 0 ? "-" : "");
    else snprintf(out, n, "(%s)%a", cu_ctype(dt), v);
  } else {
    snprintf(out, n, "(%s)INT64_C(%lld)", cu_ctype(dt), (long long)gv_tensor_get_i(t, 0));
  }
  return 0;
}

/* ---------------------------------------------------------------- index arithmetic */

/* The element offset of an operand with broadcast strides S over the
 * iteration dims D (rank r) at flat index `ix`: dims whose strides chain are
 * merged into one group, so a contiguous operand is just `ix`. */
static void index_expr(FILE *f, const char *ix, const int64_t *D, const int64_t *S, int r, int64_t total) {
  int64_t io = 1;
  int d = r - 1, terms = 0;
  while (d >= 0) {
    int64_t size = D[d], st = S[d];
    int e = d - 1;
    while (e >= 0 && S[e] == st * size) size *= D[e], e--;
    if (st != 0 && size > 1) {
      fprintf(f, "%s", terms++ ? " + " : "");
      if (io > 1) fprintf(f, "(%s / %lld)", ix, (long long)io);
      else fprintf(f, "%s", ix);
      if (io * size < total) fprintf(f, " %% %lld", (long long)size);
      if (st != 1) fprintf(f, " * %lld", (long long)st);
    }
    io *= size;
    d = e;
  }
  if (!terms) fputc('0', f);
}

/* Checks the operands of op (fused or lone elementwise) against its
 * iteration shape and fills their broadcast strides. */
static int operand_strides(gv_module *m, const gv_op *op, int64_t (*S)[GV_MAX_RANK]) {
  const gv_type *it = &op->res[0]->type;
  if (!gv_type_is_static(it)) return gv_error_op(m, op, "cuda codegen: result type is not static");
  for (int i = 0; i < op->nres; i++) {
    const gv_type *t = &op->res[i]->type;
    if (t->rank != it->rank || memcmp(t->dims, it->dims, sizeof(int64_t) * (size_t)it->rank))
      return gv_error_op(m, op, "cuda codegen: results of a fused op must share the iteration shape");
    if (!cu_ctype(t->dtype))
      return gv_error_op(m, op, "cuda codegen: dtype %s is not supported by the cuda target", gv_dtype_name(t->dtype));
  }
  for (int k = 0; k < op->nopnds; k++) {
    const gv_type *t = &op->opnds[k]->type;
    if (!gv_type_is_static(t) || t->rank > it->rank)
      return gv_error_op(m, op, "cuda codegen: operand %d does not broadcast to the iteration shape", k);
    for (int d = 0; d < t->rank; d++) {
      int64_t od = it->dims[it->rank - t->rank + d];
      if (t->dims[d] != od && t->dims[d] != 1)
        return gv_error_op(m, op, "cuda codegen: operand %d does not broadcast to the iteration shape", k);
    }
    if (!cu_ctype(t->dtype))
      return gv_error_op(m, op, "cuda codegen: dtype %s is not supported by the cuda target", gv_dtype_name(t->dtype));
    gv_bcast_strides(t, it, S[k]);
  }
  return 0;
}

/* The body statements: `const T tN = expr;` per op, in order; binds the
 * results. yv gets the yielded values. */
static int body_stmts(ctx *c, FILE *f, const gv_op *op, const gv_value *const **yv, const char *indent) {
  gv_module *m = c->m;
  char e[2048];
  int ti = 0;
  if (op->code != GV_OP_FUSED) {
    if (op_expr(c, op, e, sizeof e)) return -1;
    fprintf(f, "%sconst %s t0 = %s; /* %s */\n", indent, cu_ctype(op->res[0]->type.dtype), e, gv_ops[op->code].name);
    bind(c, op->res[0], "t%d", 0);
    *yv = (const gv_value *const *)op->res;
    return 0;
  }
  const gv_block *body = op->regions[0];
  const gv_op *term = gv_block_terminator((gv_block *)body);
  if (!term || term->code != GV_OP_YIELD || term->nopnds != op->nres)
    return gv_error_op(m, op, "cuda codegen: galv.fused body must end in galv.yield of one value per result");
  for (const gv_op *b = body->first; b != term; b = b->next) {
    if (b->nres != 1 || b->nregions) return gv_error_op(m, b, "cuda codegen: fused body op must have one result");
    if (!(gv_ops[b->code].flags & GV_ELEMENTWISE) && b->code != GV_OP_CONSTANT)
      return gv_error_op(m, b, "cuda codegen: galv.%s inside galv.fused is not elementwise", gv_ops[b->code].name);
    if (!cu_ctype(b->res[0]->type.dtype))
      return gv_error_op(m, b, "cuda codegen: dtype %s is not supported by the cuda target", gv_dtype_name(b->res[0]->type.dtype));
    if (b->code == GV_OP_CONSTANT ? const_expr(c, b, e, sizeof e) : op_expr(c, b, e, sizeof e)) return -1;
    fprintf(f, "%sconst %s t%d = %s; /* %s */\n", indent, cu_ctype(b->res[0]->type.dtype), ti, e, gv_ops[b->code].name);
    bind(c, b->res[0], "t%d", ti++);
  }
  *yv = (const gv_value *const *)term->opnds;
  return 0;
}

int cu_emit_elementwise(gv_module *m, FILE *f, const char *name, const gv_op *op, int kn) {
  bool fused = op->code == GV_OP_FUSED;
  if (fused && (op->nregions != 1 || !op->regions[0] || op->regions[0]->nargs != op->nopnds))
    return gv_error_op(m, op, "cuda codegen: galv.fused needs one region with one block argument per operand");
  int na = op->nopnds, nr = op->nres;
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  ctx c = {.m = m, .fop = op};
  int rc = -1;
  if (!S) abort();
  if (operand_strides(m, op, S)) goto out;
  const gv_type *it = &op->res[0]->type;
  int64_t n = gv_type_numel(it);
  const char *ix = n < INT32_MAX / 2 ? "int" : "int64_t";
  fprintf(f, "__global__ void __launch_bounds__(256) %s(", name);
  for (int k = 0; k < na; k++) fprintf(f, "const %s *x%d, ", cu_stype(op->opnds[k]->type.dtype), k);
  for (int i = 0; i < nr; i++) fprintf(f, "%s *y%d, ", cu_stype(op->res[i]->type.dtype), i);
  fprintf(f, "int *galv_err) {\n  const int galv_k = %d;\n  (void)galv_err, (void)galv_k;\n", kn);
  fprintf(f, "  for (%s i = blockIdx.x * (%s)blockDim.x + threadIdx.x; i < %lld; i += (%s)gridDim.x * blockDim.x) {\n", ix,
          ix, (long long)n, ix);
  for (int k = 0; k < na; k++) {
    fprintf(f, "    const %s v%d = (%s)x%d[", cu_ctype(op->opnds[k]->type.dtype), k, cu_ctype(op->opnds[k]->type.dtype), k);
    index_expr(f, "i", it->dims, S[k], it->rank, n);
    fprintf(f, "];\n");
    bind(&c, fused ? op->regions[0]->args[k] : op->opnds[k], "v%d", k);
  }
  const gv_value *const *yv;
  if (body_stmts(&c, f, op, &yv, "    ")) goto out;
  for (int i = 0; i < nr; i++) {
    const char *v = lookup(&c, yv[i]);
    if (!v) { gv_error_op(m, op, "cuda codegen: yielded value %d is not defined in the body", i); goto out; }
    fprintf(f, "    y%d[i] = (%s)(%s);\n", i, cu_stype(op->res[i]->type.dtype), v);
  }
  fprintf(f, "  }\n}\n\n");
  rc = 0;
out:
  free(S);
  free(c.b);
  return rc;
}

int cu_emit_score_functor(gv_module *m, FILE *f, const char *name, const gv_op *op, int score_opnd) {
  bool fused = op->code == GV_OP_FUSED;
  int na = op->nopnds;
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  ctx c = {.m = m, .fop = op};
  int rc = -1;
  if (!S) abort();
  if (operand_strides(m, op, S)) goto out;
  if (op->nres != 1 || op->res[0]->type.dtype != GV_DT_F32)
    { gv_error_op(m, op, "cuda codegen: attention score op must have one f32 result"); goto out; }
  const gv_type *it = &op->res[0]->type;
  int64_t n = gv_type_numel(it);
  fprintf(f, "struct %s {\n", name);
  for (int k = 0; k < na; k++)
    if (k != score_opnd) fprintf(f, "  const %s *x%d;\n", cu_stype(op->opnds[k]->type.dtype), k);
  fprintf(f, "  int *galv_err;\n  int galv_k;\n  __device__ float operator()(float s, int64_t e) const {\n");
  for (int k = 0; k < na; k++) {
    const char *ct = cu_ctype(op->opnds[k]->type.dtype);
    if (k == score_opnd) {
      fprintf(f, "    const float v%d = s;\n", k);
    } else {
      fprintf(f, "    const %s v%d = (%s)x%d[", ct, k, ct, k);
      index_expr(f, "e", it->dims, S[k], it->rank, n);
      fprintf(f, "];\n");
    }
    bind(&c, fused ? op->regions[0]->args[k] : op->opnds[k], "v%d", k);
  }
  const gv_value *const *yv;
  if (body_stmts(&c, f, op, &yv, "    ")) goto out;
  const char *v = lookup(&c, yv[0]);
  if (!v) { gv_error_op(m, op, "cuda codegen: yielded value is not defined in the body"); goto out; }
  fprintf(f, "    (void)e;\n    return %s;\n  }\n};\n\n", v);
  rc = 0;
out:
  free(S);
  free(c.b);
  return rc;
}
