/* cexpr.c — C expressions for elementwise ops, shared by the CPU emitter
 * (codegen/cpu/loops.c) and the CUDA emitter (codegen/cuda/kernels_gen.c):
 * each body op of a galv.fused (or a lone elementwise op) becomes one C
 * expression with the semantics of ir/eval.c (f32 in float, f64 in double,
 * integers in int64 with wrap-around, comparisons to 0/1 bytes; with
 * cg_dialect.half, f16/bf16 in float with every f16/bf16 result rounded to
 * its storage type, as eval's store does). The two targets differ only in
 * their helper prefix, in how integer division by zero is reported and in
 * half storage (cg_dialect: the CPU target has it, CUDA does not). This file never changes the IR and never
 * emits code for a dtype it cannot compute exactly as eval does. */
#include "cexpr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- expressions */

const char *cg_expr_lookup(const cg_expr_ctx *c, const gv_value *v) {
  for (int i = c->nb - 1; i >= 0; i--)
    if (c->b[i].v == v) return c->b[i].name;
  return NULL;
}

void cg_expr_bind(cg_expr_ctx *c, const gv_value *v, const char *fmt, int n) {
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
/* f16/bf16 values of a target with half storage (cg_dialect.half): held in
 * float registers, every f16/bf16 result rounded to its storage type */
static bool ish(const cg_expr_ctx *c, gv_dtype t) { return c->d->half && (t == GV_DT_F16 || t == GV_DT_BF16); }
static bool fl(const cg_expr_ctx *c, gv_dtype t) { return isf(t) || ish(c, t); }

const char *cg_vtype(const cg_dialect *d, gv_dtype t) {
  return d->half && (t == GV_DT_F16 || t == GV_DT_BF16) ? "float" : cg_ctype(t);
}
static const char *vt(const cg_expr_ctx *c, gv_dtype t) { return cg_vtype(c->d, t); }

/* (T)(v) for integer results, with bool normalised to 0/1 (gv_tensor_set_i). */
static void to_int(char *o, size_t n, gv_dtype t, const char *v) {
  if (t == GV_DT_BOOL) snprintf(o, n, "(uint8_t)((%s) != 0)", v);
  else snprintf(o, n, "(%s)(%s)", cg_ctype(t), v);
}

/* The expression of one body op into out; -1 after an error. */
static int op_expr(cg_expr_ctx *c, const gv_op *op, char *out, size_t n) {
  gv_module *m = c->m;
  const char *a[3] = {0};
  gv_dtype at[3] = {0};
  for (int i = 0; i < op->nopnds && i < 3; i++) {
    a[i] = cg_expr_lookup(c, op->opnds[i]);
    at[i] = op->opnds[i]->type.dtype;
    if (!a[i]) return gv_error_op(m, op, "%s codegen: operand %d of a fused body op is not defined in the body", c->d->target, i);
  }
  gv_dtype rt = op->res[0]->type.dtype;
  gv_opcode k = op->code;
  char t[512];
  const char *x = a[0], *y = a[1];
  if (k == GV_OP_CAST) {
    gv_dtype from = at[0], to = rt;
    if (from == to) snprintf(out, n, "%s", x);
    else if (fl(c, from) && to == GV_DT_BOOL) snprintf(out, n, "(uint8_t)(%s != 0)", x);
    else if (fl(c, from) && gv_dtype_is_int(to)) {
      static const char *const b[GV_DT_COUNT] = {
          [GV_DT_I64] = "-9223372036854775808.0, 9223372036854775807.0, INT64_MIN, INT64_MAX",
          [GV_DT_I32] = "-2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX",
          [GV_DT_I16] = "-32768.0, 32767.0, INT16_MIN, INT16_MAX", [GV_DT_I8] = "-128.0, 127.0, INT8_MIN, INT8_MAX",
          [GV_DT_U8] = "0.0, 255.0, 0, 255"};
      snprintf(out, n, "(%s)%sf2i((double)%s, %s)", cg_ctype(to), c->d->fn, x, b[to]);
    } else if (fl(c, to)) snprintf(out, n, "(%s)(double)%s", vt(c, to), x);
    else {
      snprintf(t, sizeof t, "(int64_t)%s", x);
      to_int(out, n, to, t);
    }
    return 0;
  }
  if (op->nopnds == 1 && op->nres == 1 && k != GV_OP_CONSTANT) { /* unary */
    bool tf = strcmp(gv_get_str(op, "approximate", "none"), "tanh") == 0;
    if (at[0] == GV_DT_F32 || at[0] == GV_DT_F64 || ish(c, at[0])) {
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
      case GV_OP_NOT: snprintf(out, n, "(%s)(%s == 0)", vt(c, at[0]), x); break;
      case GV_OP_GELU: snprintf(out, n, "%sgelu%s_%s(%s)", c->d->fn, tf ? "_tanh" : "", d ? "f64" : "f32", x); break;
      case GV_OP_SILU: snprintf(out, n, "%s / (%s + exp%s(-%s))", x, one, sf, x); break;
      default: return gv_error_op(m, op, "%s codegen: galv.%s is not an elementwise op", c->d->target, gv_ops[k].name);
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
      return gv_error_op(m, op, "%s codegen: galv.%s on %s is not supported", c->d->target, gv_ops[k].name, gv_dtype_name(at[0]));
    }
    to_int(out, n, rt, t);
    return 0;
  }
  if (k == GV_OP_WHERE) {
    snprintf(out, n, "%s != 0 ? %s : %s", x, a[1], a[2]);
    return 0;
  }
  if (op->nopnds != 2) return gv_error_op(m, op, "%s codegen: galv.%s is not an elementwise op", c->d->target, gv_ops[k].name);
  bool cmp = k >= GV_OP_EQUAL && k <= GV_OP_GREATER_EQUAL;
  static const char *const cmps[GV_OP_COUNT] = {[GV_OP_EQUAL] = "==", [GV_OP_LESS] = "<", [GV_OP_LESS_EQUAL] = "<=",
                                                 [GV_OP_GREATER] = ">", [GV_OP_GREATER_EQUAL] = ">="};
  static const char *const ar[GV_OP_COUNT] = {[GV_OP_ADD] = "+", [GV_OP_SUB] = "-", [GV_OP_MUL] = "*", [GV_OP_DIV] = "/"};
  if (cmp) {
    /* float against float compares exactly as through double */
    if (at[0] == GV_DT_F32 && at[1] == GV_DT_F32) snprintf(out, n, "(uint8_t)(%s %s %s)", x, cmps[k], y);
    else if (fl(c, at[0])) snprintf(out, n, "(uint8_t)((double)%s %s (double)%s)", x, cmps[k], y);
    else snprintf(out, n, "(uint8_t)((int64_t)%s %s (int64_t)%s)", x, cmps[k], y);
    return 0;
  }
  if (fl(c, at[0]) || (k == GV_OP_POW && fl(c, at[1]))) {
    bool dbl = at[0] == GV_DT_F64 || at[1] == GV_DT_F64 || !fl(c, at[0]);
    const char *T = dbl ? "double" : "float", *sf = dbl ? "" : "f";
    char xa[64], ya[64];
    snprintf(xa, sizeof xa, "(%s)%s", T, x);
    snprintf(ya, sizeof ya, "(%s)%s", T, y);
    switch (k) {
    case GV_OP_ADD: case GV_OP_SUB: case GV_OP_MUL: case GV_OP_DIV:
      snprintf(t, sizeof t, "%s %s %s", xa, ar[k], ya);
      break;
    case GV_OP_POW: snprintf(t, sizeof t, "pow%s(%s, %s)", sf, xa, ya); break;
    case GV_OP_MOD:
      if (gv_get_int(op, "fmod", 0)) snprintf(t, sizeof t, "fmod%s(%s, %s)", sf, xa, ya);
      else snprintf(t, sizeof t, "%sfmodp(%s, %s)", c->d->fn, xa, ya);
      break;
    case GV_OP_MAX: snprintf(t, sizeof t, "%s != %s || %s > %s ? %s : %s", xa, xa, xa, ya, xa, ya); break;
    case GV_OP_MIN: snprintf(t, sizeof t, "%s != %s || %s < %s ? %s : %s", xa, xa, xa, ya, xa, ya); break;
    default:
      return gv_error_op(m, op, "%s codegen: galv.%s on %s is not supported", c->d->target, gv_ops[k].name, gv_dtype_name(at[0]));
    }
    if (fl(c, rt)) snprintf(out, n, "(%s)(%s)", vt(c, rt), t);
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
  case GV_OP_DIV:
    if (c->d->device) { /* device code flags the error; the host reports it */
      snprintf(t, sizeof t, "%sidiv(%s, %s, galv_err, galv_k)", c->d->fn, xa, ya);
    } else {
      char loc[200];
      size_t j = 0;
      for (const char *p = op->loc ? op->loc : ""; *p && j + 5 < sizeof loc; p++)
        j += (size_t)snprintf(loc + j, sizeof loc - j, (*p == '"' || *p == '\\' || *p == '?' || (unsigned char)*p < 32) ? "\\%03o" : "%c", (unsigned char)*p);
      loc[j] = 0;
      snprintf(t, sizeof t, "%sidiv(%s, %s, \"node '%s'\")", c->d->fn, xa, ya, loc);
    }
    break;
  case GV_OP_POW: snprintf(t, sizeof t, "%sipow(%s, %s)", c->d->fn, xa, ya); break;
  case GV_OP_MOD: {
    int fm = gv_get_int(op, "fmod", 0) != 0;
    if (c->d->device) {
      snprintf(t, sizeof t, "%simod(%s, %s, %d, galv_err, galv_k)", c->d->fn, xa, ya, fm);
    } else {
      char loc[200];
      size_t j = 0;
      for (const char *p = op->loc ? op->loc : ""; *p && j + 5 < sizeof loc; p++)
        j += (size_t)snprintf(loc + j, sizeof loc - j, (*p == '"' || *p == '\\' || *p == '?' || (unsigned char)*p < 32) ? "\\%03o" : "%c", (unsigned char)*p);
      loc[j] = 0;
      snprintf(t, sizeof t, "%simod(%s, %s, %d, \"node '%s'\")", c->d->fn, xa, ya, fm, loc);
    }
    break;
  }
  case GV_OP_MAX: snprintf(t, sizeof t, "%s > %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_MIN: snprintf(t, sizeof t, "%s < %s ? %s : %s", xa, ya, xa, ya); break;
  case GV_OP_AND: snprintf(t, sizeof t, "%s && %s", xa, ya); break;
  case GV_OP_OR: snprintf(t, sizeof t, "%s || %s", xa, ya); break;
  default:
    return gv_error_op(m, op, "%s codegen: galv.%s on %s is not supported", c->d->target, gv_ops[k].name, gv_dtype_name(at[0]));
  }
  to_int(out, n, rt, t);
  return 0;
}

/* ... and rounded to f16/bf16 where the result is stored so (the one
 * rounding eval's store does; where and same-type casts select values that
 * are already representable). */
int cg_op_expr(cg_expr_ctx *c, const gv_op *op, char *out, size_t n) {
  if (op_expr(c, op, out, n)) return -1;
  gv_dtype rt = op->res[0]->type.dtype;
  if (!ish(c, rt) || op->code == GV_OP_WHERE || (op->code == GV_OP_CAST && op->opnds[0]->type.dtype == rt)) return 0;
  size_t l = strlen(out) + 1;
  char *e = malloc(l);
  if (!e) abort();
  memcpy(e, out, l);
  snprintf(out, n, "%srnd_%s((float)(%s))", c->d->fn, rt == GV_DT_F16 ? "f16" : "bf16", e);
  free(e);
  return 0;
}

/* A one-element constant inside a body becomes a literal. */
int cg_const_expr(cg_expr_ctx *c, const gv_op *op, char *out, size_t n) {
  const gv_attr *a = gv_get_attr(op, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t || gv_tensor_numel(a->u.t) != 1)
    return gv_error_op(c->m, op, "%s codegen: only one-element constants may appear inside a fused body", c->d->target);
  const gv_tensor *t = a->u.t;
  gv_dtype dt = t->type.dtype;
  if (fl(c, dt)) {
    double v = gv_tensor_get_f(t, 0);
    if (v != v) snprintf(out, n, "(%s)NAN", vt(c, dt));
    else if (isinf(v)) snprintf(out, n, "(%s)(%sINFINITY)", vt(c, dt), v < 0 ? "-" : "");
    else snprintf(out, n, "(%s)%a", vt(c, dt), v);
  } else {
    snprintf(out, n, "(%s)INT64_C(%lld)", vt(c, dt), (long long)gv_tensor_get_i(t, 0));
  }
  return 0;
}

void cg_expr_free(cg_expr_ctx *c) {
  free(c->b);
  c->b = NULL;
  c->nb = c->cap = 0;
}
