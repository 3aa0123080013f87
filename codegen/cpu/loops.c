/* loops.c — elementwise loop functions of the CPU emitter. A galv.fused op
 * (or one lone elementwise op, handled as a chain of one) becomes one static
 * C function: a loop nest over the iteration space whose inner loop runs over
 * the longest suffix of dims in which every operand is either contiguous or
 * broadcast (so it vectorises), with the outer index arithmetic specialised
 * to the static shapes (literals). Each body op is one C expression from
 * codegen/cexpr.c (shared with the CUDA emitter). This file must never change
 * the IR and never emit code for a dtype it cannot compute exactly as eval does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/shape_rules.h"
#include "../cexpr.h"
#include "cpu.h"

static const cg_dialect cpu_dialect = {"cpu", "galv_", false, true};

/* f16/bf16 tensors are stored as uint16_t bits; loads widen them to float
 * (exactly), stores narrow the (already rounded) float back. */
static bool half(gv_dtype t) { return t == GV_DT_F16 || t == GV_DT_BF16; }
static const char *stype(gv_dtype t) { return half(t) ? "uint16_t" : cg_ctype(t); }
static const char *vtype(gv_dtype t) { return cg_vtype(&cpu_dialect, t); }
static const char *hname(gv_dtype t) { return t == GV_DT_F16 ? "f16" : "bf16"; }

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

/* ---------------------------------------------------------------- loop nest */

int cg_emit_loop(gv_module *m, FILE *f, const char *name, const gv_op *op, cg_storage_fn st, const void *ctx) {
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
    if (!vtype(t->dtype))
      return gv_error_op(m, op, "cpu codegen: dtype %s is not supported by the cpu target", gv_dtype_name(t->dtype));
  }
  /* broadcast strides of every operand */
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  int *cls = calloc((size_t)(na ? na : 1), sizeof *cls);
  cg_expr_ctx c = {.m = m, .fop = op, .d = &cpu_dialect};
  gv_dtype *sa = NULL; /* storage of the operands, then the results */
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
    if (!vtype(t->dtype))
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

  /* the storage of each operand and result (an f32 value stored bf16 / f16 under --precision bf16 / fp16:
   * loaded widened, computed in float, stored rounded to nearest even) */
  sa = calloc((size_t)(na + nr + 1), sizeof *sa);
  if (!sa) abort();
  for (int k = 0; k < na + nr; k++) {
    const gv_value *v = k < na ? op->opnds[k] : op->res[k - na];
    sa[k] = st ? st(ctx, v) : v->type.dtype;
  }
  fprintf(f, "static void %s(", name);
  for (int k = 0; k < na; k++) fprintf(f, "%sconst void *p%d", k ? ", " : "", k);
  for (int i = 0; i < nr; i++) fprintf(f, "%svoid *q%d", na + i ? ", " : "", i);
  fprintf(f, ") {\n");
  for (int k = 0; k < na; k++) fprintf(f, "  const %s *x%d = p%d;\n", stype(sa[k]), k, k);
  for (int i = 0; i < nr; i++) fprintf(f, "  %s *y%d = q%d;\n", stype(sa[na + i]), i, i);
  fprintf(f, "  for (int64_t o = 0; o < %lld; o++) {\n", (long long)outer);
  for (int k = 0; k < na; k++) {
    /* base offset of operand k at outer index o: merged outer dim groups */
    fprintf(f, "    const %s *a%d = x%d", stype(sa[k]), k, k);
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
  for (int i = 0; i < nr; i++) fprintf(f, "    %s *b%d = y%d + o * %lld;\n", stype(sa[na + i]), i, i, (long long)L);
  fprintf(f, "    for (int64_t j = 0; j < %lld; j++) {\n", (long long)L);
  for (int k = 0; k < na; k++) {
    gv_dtype kt = op->opnds[k]->type.dtype;
    if (half(sa[k])) fprintf(f, "      const float v%d = galv_%s_to_f32(a%d[%s]);\n", k, hname(sa[k]), k, cls[k] == 2 ? "0" : "j");
    else fprintf(f, "      const %s v%d = a%d[%s];\n", cg_ctype(kt), k, k, cls[k] == 2 ? "0" : "j");
    cg_expr_bind(&c, fused ? body->args[k] : op->opnds[k], "v%d", k);
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
      if (b->code == GV_OP_CONSTANT ? cg_const_expr(&c, b, e, sizeof e) : cg_op_expr(&c, b, e, sizeof e)) goto out;
      if (!(gv_ops[b->code].flags & GV_ELEMENTWISE) && b->code != GV_OP_CONSTANT)
        { gv_error_op(m, b, "cpu codegen: galv.%s inside galv.fused is not elementwise", gv_ops[b->code].name); goto out; }
      if (!vtype(b->res[0]->type.dtype))
        { gv_error_op(m, b, "cpu codegen: dtype %s is not supported by the cpu target", gv_dtype_name(b->res[0]->type.dtype)); goto out; }
      fprintf(f, "      const %s t%d = ", vtype(b->res[0]->type.dtype), ti);
      fputs(e, f);
      fprintf(f, "; /* %s */\n", gv_ops[b->code].name);
      cg_expr_bind(&c, b->res[0], "t%d", ti++);
    }
    yv = (const gv_value *const *)term->opnds;
  } else {
    if (cg_op_expr(&c, op, e, sizeof e)) goto out;
    fprintf(f, "      const %s t0 = ", vtype(op->res[0]->type.dtype));
    fputs(e, f);
    fprintf(f, "; /* %s */\n", gv_ops[op->code].name);
    cg_expr_bind(&c, op->res[0], "t%d", 0);
    yv = (const gv_value *const *)op->res;
  }
  for (int i = 0; i < nr; i++) {
    const char *v = cg_expr_lookup(&c, yv[i]);
    if (!v) { gv_error_op(m, op, "cpu codegen: yielded value %d is not defined in the body", i); goto out; }
    gv_dtype yt = sa[na + i];
    if (half(yt)) fprintf(f, "      b%d[j] = galv_f32_to_%s(%s);\n", i, hname(yt), v);
    else fprintf(f, "      b%d[j] = %s;\n", i, v);
  }
  fprintf(f, "    }\n  }\n}\n\n");
  rc = 0;
out:
  free(sa);
  free(S);
  free(cls);
  cg_expr_free(&c);
  return rc;
}
