/* kernels_gen.c — the generated kernels of the CUDA emitter: one __global__
 * kernel per galv.fused (or lone elementwise) op — one thread per element
 * in a grid-stride loop, each operand's index computed from the flat output
 * index with its broadcast strides specialised to the static shapes
 * (literals, merged dim groups, 32-bit arithmetic when the tensor allows) —
 * and the score functor of a fused attention (the elementwise op between
 * the two dots, applied to one score). Each body op is one C expression from
 * codegen/cexpr.c (shared with the CPU target, device helpers gd_*): floats
 * are computed in float (f64 in double) whatever the storage precision,
 * integers in int64 with wrap-around. This file never changes the IR. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../ir/shape_rules.h"
#include "../cexpr.h"
#include "cuda.h"

/* Device code names its helpers gd_ and flags integer division by zero. */
static const cg_dialect cuda_dialect = {"cuda", "gd_", true, false};

/* storage type: f32 tensors are `gf` (float or bf16, program.cu's typedef) */
const char *cu_stype(gv_dtype t) { return t == GV_DT_F32 ? "gf" : cg_ctype(t); }

/* the storage type of v: the emitter's choice when it gives one (mixed storage) */
static const char *stype_of(cu_stype_fn st, const void *ctx, const gv_value *v) {
  return st ? st(ctx, v) : cu_stype(v->type.dtype);
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
    if (!cg_ctype(t->dtype))
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
    if (!cg_ctype(t->dtype))
      return gv_error_op(m, op, "cuda codegen: dtype %s is not supported by the cuda target", gv_dtype_name(t->dtype));
    gv_bcast_strides(t, it, S[k]);
  }
  return 0;
}

/* The body statements: `const T tN = expr;` per op, in order; binds the
 * results. yv gets the yielded values. */
static int body_stmts(cg_expr_ctx *c, FILE *f, const gv_op *op, const gv_value *const **yv, const char *indent) {
  gv_module *m = c->m;
  char e[2048];
  int ti = 0;
  if (op->code != GV_OP_FUSED) {
    if (cg_op_expr(c, op, e, sizeof e)) return -1;
    fprintf(f, "%sconst %s t0 = %s; /* %s */\n", indent, cg_ctype(op->res[0]->type.dtype), e, gv_ops[op->code].name);
    cg_expr_bind(c, op->res[0], "t%d", 0);
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
    if (!cg_ctype(b->res[0]->type.dtype))
      return gv_error_op(m, b, "cuda codegen: dtype %s is not supported by the cuda target", gv_dtype_name(b->res[0]->type.dtype));
    if (b->code == GV_OP_CONSTANT ? cg_const_expr(c, b, e, sizeof e) : cg_op_expr(c, b, e, sizeof e)) return -1;
    fprintf(f, "%sconst %s t%d = %s; /* %s */\n", indent, cg_ctype(b->res[0]->type.dtype), ti, e, gv_ops[b->code].name);
    cg_expr_bind(c, b->res[0], "t%d", ti++);
  }
  *yv = (const gv_value *const *)term->opnds;
  return 0;
}

int cu_emit_elementwise(gv_module *m, FILE *f, const char *name, const gv_op *op, int kn, cu_stype_fn st, const void *ctx) {
  bool fused = op->code == GV_OP_FUSED;
  if (fused && (op->nregions != 1 || !op->regions[0] || op->regions[0]->nargs != op->nopnds))
    return gv_error_op(m, op, "cuda codegen: galv.fused needs one region with one block argument per operand");
  int na = op->nopnds, nr = op->nres;
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  cg_expr_ctx c = {.m = m, .fop = op, .d = &cuda_dialect};
  int rc = -1;
  if (!S) abort();
  if (operand_strides(m, op, S)) goto out;
  const gv_type *it = &op->res[0]->type;
  int64_t n = gv_type_numel(it);
  const char *ix = n < INT32_MAX / 2 ? "int" : "int64_t";
  fprintf(f, "__global__ void __launch_bounds__(256) %s(", name);
  for (int k = 0; k < na; k++) fprintf(f, "const %s *x%d, ", stype_of(st, ctx, op->opnds[k]), k);
  for (int i = 0; i < nr; i++) fprintf(f, "%s *y%d, ", stype_of(st, ctx, op->res[i]), i);
  fprintf(f, "int *galv_err) {\n  const int galv_k = %d;\n  (void)galv_err, (void)galv_k;\n", kn);
  fprintf(f, "  for (%s i = blockIdx.x * (%s)blockDim.x + threadIdx.x; i < %lld; i += (%s)gridDim.x * blockDim.x) {\n", ix,
          ix, (long long)n, ix);
  for (int k = 0; k < na; k++) {
    int dup = 0; /* an op reading one value twice (mul(x, x)): loaded once (no unused v%d, nvcc warning #177) */
    for (int j = 0; !fused && j < k && !dup; j++) dup = op->opnds[j] == op->opnds[k];
    if (dup) continue;
    fprintf(f, "    const %s v%d = (%s)x%d[", cg_ctype(op->opnds[k]->type.dtype), k, cg_ctype(op->opnds[k]->type.dtype), k);
    index_expr(f, "i", it->dims, S[k], it->rank, n);
    fprintf(f, "];\n");
    cg_expr_bind(&c, fused ? op->regions[0]->args[k] : op->opnds[k], "v%d", k);
  }
  const gv_value *const *yv;
  if (body_stmts(&c, f, op, &yv, "    ")) goto out;
  for (int i = 0; i < nr; i++) {
    const char *v = cg_expr_lookup(&c, yv[i]);
    if (!v) { gv_error_op(m, op, "cuda codegen: yielded value %d is not defined in the body", i); goto out; }
    fprintf(f, "    y%d[i] = (%s)(%s);\n", i, stype_of(st, ctx, op->res[i]), v);
  }
  fprintf(f, "  }\n}\n\n");
  rc = 0;
out:
  free(S);
  cg_expr_free(&c);
  return rc;
}

int cu_emit_score_functor(gv_module *m, FILE *f, const char *name, const gv_op *op, int score_opnd, cu_stype_fn st,
                          const void *ctx) {
  bool fused = op->code == GV_OP_FUSED;
  int na = op->nopnds;
  int64_t (*S)[GV_MAX_RANK] = calloc((size_t)(na ? na : 1), sizeof *S);
  cg_expr_ctx c = {.m = m, .fop = op, .d = &cuda_dialect};
  int rc = -1;
  if (!S) abort();
  if (operand_strides(m, op, S)) goto out;
  if (op->nres != 1 || op->res[0]->type.dtype != GV_DT_F32)
    { gv_error_op(m, op, "cuda codegen: attention score op must have one f32 result"); goto out; }
  const gv_type *it = &op->res[0]->type;
  int64_t n = gv_type_numel(it);
  fprintf(f, "struct %s {\n", name);
  for (int k = 0; k < na; k++)
    if (k != score_opnd) fprintf(f, "  const %s *x%d;\n", stype_of(st, ctx, op->opnds[k]), k);
  fprintf(f, "  int *galv_err;\n  int galv_k;\n  __device__ float operator()(float s, int64_t e) const {\n");
  for (int k = 0; k < na; k++) {
    const char *ct = cg_ctype(op->opnds[k]->type.dtype);
    if (k == score_opnd) {
      fprintf(f, "    const float v%d = s;\n", k);
    } else {
      fprintf(f, "    const %s v%d = (%s)x%d[", ct, k, ct, k);
      index_expr(f, "e", it->dims, S[k], it->rank, n);
      fprintf(f, "];\n");
    }
    cg_expr_bind(&c, fused ? op->regions[0]->args[k] : op->opnds[k], "v%d", k);
  }
  const gv_value *const *yv;
  if (body_stmts(&c, f, op, &yv, "    ")) goto out;
  const char *v = cg_expr_lookup(&c, yv[0]);
  if (!v) { gv_error_op(m, op, "cuda codegen: yielded value is not defined in the body"); goto out; }
  fprintf(f, "    (void)e;\n    return %s;\n  }\n};\n\n", v);
  rc = 0;
out:
  free(S);
  cg_expr_free(&c);
  return rc;
}
