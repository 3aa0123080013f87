/* loops.c — elementwise loop functions of the CPU emitter. A galv.fused op
 * (or one lone elementwise op, handled as a chain of one) becomes one static
 * C function: a loop nest over the iteration space whose inner loop runs over
 * the longest suffix of dims in which every operand is either contiguous or
 * broadcast (so it vectorises), with the outer index arithmetic specialised
 * to the static shapes (literals). Each body op is one C expression with the
 * semantics of ir/eval.c (f32 in float, f64 in double, integers in int64 with
 * wrap-around, comparisons to 0/1 bytes). This file must never change the IR
 * and never emit code for a dtype it cannot compute exactly as eval does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/shape_rules.h"
#include "cpu.h"

const char *cg_ctype(gv_dtype t) {
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

const char *cg_rt_dtype(gv_dtype t) {
  switch (t) {
  case GV_DT_F32: return "GALV_F32";
  case GV_DT_F64: return "GALV_F64";
  case GV_DT_F16: return "GALV_F16";
  case GV_DT_BF16: return "GALV_BF16";
  case GV_DT_I64: return "GALV_I64";
  case GV_DT_I32: return "GALV_I32";
  case GV_DT_I16: return "GALV_I16";
  case GV_DT_I8: return "GALV_I8";
  case GV_DT_U8: return "GALV_U8";
  case GV_DT_BOOL: return "GALV_BOOL";
  default: return NULL;
  }
}

void cg_c_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\' || *p == '?' || *p < 32 || *p >= 127) fprintf(f, "\\%03o", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

void cg_c_comment(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 32 || *p == 127) fputc(' ', f);
    else if (*p == '*' && p[1] == '/') fputs("* ", f);
    else if (*p == '/' && p[1] == '*') fputs("/ ", f);
    else fputc(*p, f);
  }
}

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
  else snprintf(o, n, "(%s)(%s)", cg_ctype(t), v);
}

/* The expression of one body op into out; -1 after an error. */
static int op_expr(ctx *c, const gv_op *op, char *out, size_t n) {
  gv_module *m = c->m;
  const char *a[3] = {0};
  gv_dtype at[3] = {0};
  for (int i = 0; i < op->nopnds && i < 3; i++) {
    a[i] = lookup(c, op->opnds[i]);
    at[i] = op->opnds[i]->type.dtype;
    if (!a[i]) return gv_error_op(m, op, "cpu codegen: operand %d of a fused body op is not defined in the body", i);
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
      snprintf(out, n, "(%s)galv_f2i((double)%s, %s)", cg_ctype(to), x, b[to]);
    } else if (isf(to)) snprintf(out, n, "(%s)(double)%s", cg_ctype(to), x);
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
      case GV_OP_NOT: snprintf(out, n, "(%s)(%s == 0)", cg_ctype(at[0]), x); break;
      case GV_OP_GELU: snprintf(out, n, "galv_gelu%s_%s(%s)", tf ? "_tanh" : "", d ? "f64" : "f32", x); break;
      case GV_OP_SILU: snprintf(out, n, "%s / (%s + exp%s(-%s))", x, one, sf, x); break;
      default: return gv_error_op(m, op, "cpu codegen: galv.%s is not an elementwise op", gv_ops[k].name);
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
      return gv_error_op(m, op, "cpu codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
    }
    to_int(out, n, rt, t);
    return 0;
  }
  if (k == GV_OP_WHERE) {
    snprintf(out, n, "%s != 0 ? %s : %s", x, a[1], a[2]);
    return 0;
  }
  if (op->nopnds != 2) return gv_error_op(m, op, "cpu codegen: galv.%s is not an elementwise op", gv_ops[k].name);
  bool cmp = k >= GV_OP_EQUAL && k <= GV_OP_GREATER_EQUAL;
  static const char *const cmps[GV_OP_COUNT] = {[GV_OP_EQUAL] = "==", [GV_OP_LESS] = "<", [GV_OP_LESS_EQUAL] = "<=",
                                                 [GV_OP_GREATER] = ">", [GV_OP_GREATER_EQUAL] = ">="};
  static const char *const ar[GV_OP_COUNT] = {[GV_OP_ADD] = "+", [GV_OP_SUB] = "-", [GV_OP_MUL] = "*", [GV_OP_DIV] = "/"};
  if (cmp) {
    if (isf(at[0])) snprintf(out, n, "(uint8_t)((double)%s %s (double)%s)", x, cmps[k], y);
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
      return gv_error_op(m, op, "cpu codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
    }
    if (isf(rt)) snprintf(out, n, "(%s)(%s)", cg_ctype(rt), t);
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
  case GV_OP_DIV: {
    char loc[200];
    size_t j = 0;
    for (const char *p = op->loc ? op->loc : ""; *p && j + 5 < sizeof loc; p++)
      j += (size_t)snprintf(loc + j, sizeof loc - j, (*p == '"' || *p == '\\' || *p == '?' || (unsigned char)*p < 32) ? "\\%03o" : "%c", (unsigned char)*p);
    loc[j] = 0;
    snprintf(t, sizeof t, "galv_idiv(%s, %s, \"node '%s'\")", xa, ya, loc);
    break;
  }
  case GV_OP_POW: snprintf(t, sizeof t, "galv_ipow(%s, %s)", xa, ya); break;
  case GV_OP_MAX: snprintf(t, sizeof t, "%s > %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_MIN: snprintf(t, sizeof t, "%s < %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_AND: snprintf(t, sizeof t, "%s && %s", xa, ya); break;
  case GV_OP_OR: snprintf(t, sizeof t, "%s || %s", xa, ya); break;
  default:
    return gv_error_op(m, op, "cpu codegen: galv.%s on %s is not supported", gv_ops[k].name, gv_dtype_name(at[0]));
  }
  to_int(out, n, rt, t);
  return 0;
}

/* A one-element constant inside a body becomes a literal. */
static int const_expr(ctx *c, const gv_op *op, char *out, size_t n) {
  const gv_attr *a = gv_get_attr(op, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t || gv_tensor_numel(a->u.t) != 1)
    return gv_error_op(c->m, op, "cpu codegen: only one-element constants may appear inside a fused body");
  const gv_tensor *t = a->u.t;
  gv_dtype dt = t->type.dtype;
  if (isf(dt)) {
    double v = gv_tensor_get_f(t, 0);
    if (v != v) snprintf(out, n, "(%s)NAN", cg_ctype(dt));
    else if (isinf(v)) snprintf(out, n, "(%s)(%sINFINITY)", cg_ctype(dt), v < 0 ? "-" : "");
    else snprintf(out, n, "(%s)%a", cg_ctype(dt), v);
  } else {
    snprintf(out, n, "(%s)INT64_C(%lld)", cg_ctype(dt), (long long)gv_tensor_get_i(t, 0));
  }
  return 0;
}

/* ---------------------------------------------------------------- loop nest */

int cg_emit_loop(gv_module *m, FILE *f, const char *name, const gv_op *op) {
  bool fused = op->code == GV_OP_FUSED;
  const gv_block *body = fused ? op->regions[0] : NULL;
  if (fused && (op->nregions != 1 || !body || body->nargs != op->nopnds))
    return gv_error_op(m, op, "cpu codegen: galv.fused needs one region with one block argument per operand");
  int na = op->nopnds, nr = op->nres;
  const gv_type *it = &op->res[0]->type;
  if (!gv_type_is_static(it)) return gv_error_op(m, op, "cpu codegen: result type is not static");
  int r = it->rank;
  const int64_t *D = it->dims;
  for (int i = 0; i < nr; i++) {
    const gv_type *t = &op->res[i]->type;
    if (t->rank != r || memcmp(t->dims, D, sizeof(int64_t) * (size_t)r))
      return gv_error_op(m, op, "cpu codegen: results of a fused op must share the iteration shape");
    if (!cg_ctype(t->dtype))
      return gv_error_op(m, op, "cpu codegen: dtype %s is not supported by the cpu target", gv_dtype_name(t->dtype));
  }
  /* broadcast strides of every operand */
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  int *cls = calloc((size_t)(na ? na : 1), sizeof *cls);
  ctx c = {.m = m, .fop = op};
  int rc = -1;
  if (!S || !cls) abort();
  for (int k = 0; k < na; k++) {
    const gv_type *t = &op->opnds[k]->type;
    if (!gv_type_is_static(t) || t->rank > r)
      { gv_error_op(m, op, "cpu codegen: operand %d does not broadcast to the iteration shape", k); goto out; }
    for (int d = 0; d < t->rank; d++) {
      int64_t od = D[r - t->rank + d];
      if (t->dims[d] != od && t->dims[d] != 1)
        { gv_error_op(m, op, "cpu codegen: operand %d does not broadcast to the iteration shape", k); goto out; }
    }
    if (!cg_ctype(t->dtype))
      { gv_error_op(m, op, "cpu codegen: dtype %s is not supported by the cpu target", gv_dtype_name(t->dtype)); goto out; }
    gv_bcast_strides(t, it, S[k]);
  }
  /* inner suffix: every operand contiguous (class 1) or broadcast (class 2) */
  int p = r;
  int64_t L = 1;
  for (int d = r - 1; d >= 0; d--) {
    if (D[d] == 1) { p = d; continue; }
    bool ok = true;
    for (int k = 0; k < na && ok; k++) {
      int want = S[k][d] == L ? 1 : S[k][d] == 0 ? 2 : 0;
      ok = want && (cls[k] == 0 || cls[k] == want);
    }
    if (!ok) break;
    for (int k = 0; k < na; k++) cls[k] = S[k][d] == L ? 1 : 2;
    L *= D[d];
    p = d;
  }
  int64_t outer = 1;
  for (int d = 0; d < p; d++) outer *= D[d];

  fprintf(f, "static void %s(", name);
  for (int k = 0; k < na; k++) fprintf(f, "%sconst void *p%d", k ? ", " : "", k);
  for (int i = 0; i < nr; i++) fprintf(f, "%svoid *q%d", na + i ? ", " : "", i);
  fprintf(f, ") {\n");
  for (int k = 0; k < na; k++) fprintf(f, "  const %s *x%d = p%d;\n", cg_ctype(op->opnds[k]->type.dtype), k, k);
  for (int i = 0; i < nr; i++) fprintf(f, "  %s *y%d = q%d;\n", cg_ctype(op->res[i]->type.dtype), i, i);
  fprintf(f, "  for (int64_t o = 0; o < %lld; o++) {\n", (long long)outer);
  for (int k = 0; k < na; k++) {
    /* base offset of operand k at outer index o: merged outer dim groups */
    fprintf(f, "    const %s *a%d = x%d", cg_ctype(op->opnds[k]->type.dtype), k, k);
    int64_t io = 1;
    int d = p - 1;
    while (d >= 0) {
      int64_t size = D[d], st = S[k][d];
      int e = d - 1;
      while (e >= 0 && S[k][e] == st * size) size *= D[e], e--;
      if (st != 0 && size > 1) {
        fprintf(f, " + ");
        if (io > 1) fprintf(f, "(o / %lld)", (long long)io);
        else fprintf(f, "o");
        if (io * size < outer) fprintf(f, " %% %lld", (long long)size);
        if (st != 1) fprintf(f, " * %lld", (long long)st);
      }
      io *= size;
      d = e;
    }
    fprintf(f, ";\n");
  }
  for (int i = 0; i < nr; i++) fprintf(f, "    %s *b%d = y%d + o * %lld;\n", cg_ctype(op->res[i]->type.dtype), i, i, (long long)L);
  fprintf(f, "    for (int64_t j = 0; j < %lld; j++) {\n", (long long)L);
  for (int k = 0; k < na; k++) {
    fprintf(f, "      const %s v%d = a%d[%s];\n", cg_ctype(op->opnds[k]->type.dtype), k, k, cls[k] == 2 ? "0" : "j");
    bind(&c, fused ? body->args[k] : op->opnds[k], "v%d", k);
  }
  char e[2048];
  int ti = 0;
  const gv_value *const *yv;
  if (fused) {
    const gv_op *term = gv_block_terminator((gv_block *)body);
    if (!term || term->code != GV_OP_YIELD || term->nopnds != nr)
      { gv_error_op(m, op, "cpu codegen: galv.fused body must end in galv.yield of one value per result"); goto out; }
    for (const gv_op *b = body->first; b != term; b = b->next) {
      if (b->nres != 1 || b->nregions) { gv_error_op(m, b, "cpu codegen: fused body op must have one result"); goto out; }
      if (b->code == GV_OP_CONSTANT ? const_expr(&c, b, e, sizeof e) : op_expr(&c, b, e, sizeof e)) goto out;
      if (!(gv_ops[b->code].flags & GV_ELEMENTWISE) && b->code != GV_OP_CONSTANT)
        { gv_error_op(m, b, "cpu codegen: galv.%s inside galv.fused is not elementwise", gv_ops[b->code].name); goto out; }
      if (!cg_ctype(b->res[0]->type.dtype))
        { gv_error_op(m, b, "cpu codegen: dtype %s is not supported by the cpu target", gv_dtype_name(b->res[0]->type.dtype)); goto out; }
      fprintf(f, "      const %s t%d = ", cg_ctype(b->res[0]->type.dtype), ti);
      fputs(e, f);
      fprintf(f, "; /* %s */\n", gv_ops[b->code].name);
      bind(&c, b->res[0], "t%d", ti++);
    }
    yv = (const gv_value *const *)term->opnds;
  } else {
    if (op_expr(&c, op, e, sizeof e)) goto out;
    fprintf(f, "      const %s t0 = ", cg_ctype(op->res[0]->type.dtype));
    fputs(e, f);
    fprintf(f, "; /* %s */\n", gv_ops[op->code].name);
    bind(&c, op->res[0], "t%d", 0);
    yv = (const gv_value *const *)op->res;
  }
  for (int i = 0; i < nr; i++) {
    const char *v = lookup(&c, yv[i]);
    if (!v) { gv_error_op(m, op, "cpu codegen: yielded value %d is not defined in the body", i); goto out; }
    fprintf(f, "      b%d[j] = %s;\n", i, v);
  }
  fprintf(f, "    }\n  }\n}\n\n");
  rc = 0;
out:
  free(S);
  free(cls);
  free(c.b);
  return rc;
}
