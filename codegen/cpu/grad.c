/* grad.c — kernel calls of the training ops (ir/train_ops.c) for the CPU
 * emitter: gather_grad, slice_grad, cross_entropy, cross_entropy_grad,
 * conv_grad_input and conv_grad_weight, each one call into
 * runtime/kernels_grad.c with shapes as literals. emit.c hands every op it
 * does not know to cg_emit_grad_kernel. f32 data, i64 / i32 indices. */
#include <string.h>

#include "../../ir/shape_rules.h"
#include "cpu.h"

static void lit(FILE *f, int rank, const int64_t *d) {
  fputc('{', f);
  for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (!rank) fputc('0', f);
  fputc('}', f);
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

static void where(FILE *f, const gv_op *op) {
  char b[600];
  snprintf(b, sizeof b, "node '%s' (%s)", op->loc ? op->loc : "", op->onnx_op ? op->onnx_op : gv_ops[op->code].name);
  cg_c_string(f, b);
}

/* Float operands must be f32 (indices / labels excepted). */
static int f32_only(gv_module *m, const gv_op *op, int skip) {
  for (int i = 0; i < op->nopnds; i++)
    if (i != skip && op->opnds[i]->type.dtype != GV_DT_F32)
      return gv_error_op(m, op, "cpu codegen: galv.%s on %s is not supported (f32 only)", gv_ops[op->code].name,
                         gv_dtype_name(op->opnds[i]->type.dtype));
  if (op->res[0]->type.dtype != GV_DT_F32)
    return gv_error_op(m, op, "cpu codegen: galv.%s with a %s result is not supported (f32 only)", gv_ops[op->code].name,
                       gv_dtype_name(op->res[0]->type.dtype));
  return 0;
}

/* The forward conv's descriptor from x, w and y types. */
static int conv_desc(gv_module *m, FILE *f, const gv_op *op, const gv_type *x, const gv_type *w, const gv_type *y) {
  int R = x->rank, S = R - 2;
  if (R < 3 || w->rank != R || y->rank != R) return gv_error_op(m, op, "cpu codegen: conv operands must have equal rank >= 3");
  const int64_t *sv, *pv, *dv;
  int ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv), nd = gv_get_ints(op, "dilations", &dv);
  int64_t G = gv_get_int(op, "group", 1), st[GV_MAX_RANK], pb[GV_MAX_RANK], dl[GV_MAX_RANK];
  if (G < 1 || x->dims[1] != w->dims[1] * G || w->dims[0] % G || y->dims[1] != w->dims[0] || y->dims[0] != x->dims[0])
    return gv_error_op(m, op, "cpu codegen: conv gradient channel counts do not match");
  for (int s = 0; s < S; s++) {
    st[s] = ns == S ? sv[s] : 1;
    pb[s] = np == 2 * S ? pv[s] : 0;
    dl[s] = nd == S ? dv[s] : 1;
  }
  fprintf(f, "  { static const galv_conv_desc d = {%d, %lld, %lld, %lld, %lld, ", S, (long long)x->dims[0],
          (long long)x->dims[1], (long long)w->dims[0], (long long)G);
  lit(f, S, x->dims + 2), fputs(", ", f), lit(f, S, w->dims + 2), fputs(", ", f);
  lit(f, S, y->dims + 2), fputs(", ", f), lit(f, S, st), fputs(", ", f), lit(f, S, pb), fputs(", ", f);
  lit(f, S, dl);
  fputs("};\n", f);
  return 0;
}

int cg_emit_grad_kernel(gv_module *m, FILE *f, const gv_op *op, char p[][64]) {
  const gv_type *x = &op->opnds[0]->type, *o = &op->res[0]->type;
  const char *out = p[op->nopnds];
  switch (op->code) {
  case GV_OP_GATHER_GRAD: {
    if (f32_only(m, op, 1)) return -1;
    gv_dtype it = op->opnds[1]->type.dtype;
    if (it != GV_DT_I64 && it != GV_DT_I32)
      return gv_error_op(m, op, "cpu codegen: gather_grad indices of dtype %s are not supported", gv_dtype_name(it));
    int ax = (int)gv_get_int(op, "axis", 0), ir = op->opnds[1]->type.rank;
    if (ax < 0 || ax >= o->rank || x->rank != o->rank + ir - 1)
      return gv_error_op(m, op, "cpu codegen: gather_grad axis or ranks do not fit");
    fprintf(f, "  galv_gather_grad_f32((float *)%s, (const float *)%s, %s, %d, %lld, %lld, %lld, %lld, ", out, p[0], p[1],
            it == GV_DT_I64 ? 8 : 4, (long long)gv_type_numel(&op->opnds[1]->type), (long long)prod(o->dims, 0, ax),
            (long long)o->dims[ax], (long long)prod(o->dims, ax + 1, o->rank));
    where(f, op);
    fputs(");\n", f);
    return 0;
  }
  case GV_OP_SLICE_GRAD: {
    int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK], s[GV_MAX_RANK], os[GV_MAX_RANK], base = 0, k = 1;
    bool aff[GV_MAX_RANK];
    if (gv_slice_window(m, op, o, NULL, start, step, count, aff) < 0) return -1;
    if (x->rank != o->rank) return gv_error_op(m, op, "cpu codegen: slice_grad dy rank differs from the result's");
    for (int d = o->rank - 1; d >= 0; d--) os[d] = k, k *= o->dims[d];
    for (int d = 0; d < o->rank; d++) {
      if (count[d] != x->dims[d]) return gv_error_op(m, op, "cpu codegen: slice_grad dy does not match its window");
      if (count[d] > 0) base += start[d] * os[d];
      s[d] = step[d] * os[d];
    }
    size_t es = gv_dtype_size(o->dtype);
    int64_t nb = gv_type_numel(o) * (int64_t)es;
    if (gv_type_numel(x) == 0) {
      fprintf(f, "  memset(%s, 0, %lld);\n", out, (long long)nb);
      return 0;
    }
    fprintf(f, "  { static const int64_t d[] = "), lit(f, x->rank, x->dims);
    fprintf(f, ", s[] = "), lit(f, x->rank, s);
    fprintf(f, ";\n    galv_scatter_strided(%s, %lld, %lld, %s, %zu, %d, d, s); }\n", out, (long long)nb, (long long)base,
            p[0], es, x->rank);
    return 0;
  }
  case GV_OP_CROSS_ENTROPY:
  case GV_OP_CROSS_ENTROPY_GRAD: {
    bool g = op->code == GV_OP_CROSS_ENTROPY_GRAD;
    const gv_type *lg = &op->opnds[g]->type, *lb = &op->opnds[g + 1]->type;
    if (f32_only(m, op, g + 1)) return -1;
    if (lb->dtype != GV_DT_I64) return gv_error_op(m, op, "cpu codegen: cross_entropy labels must be i64, got %s", gv_dtype_name(lb->dtype));
    if (lg->rank < 1) return gv_error_op(m, op, "cpu codegen: cross_entropy logits must have rank >= 1");
    int64_t C = lg->dims[lg->rank - 1], rows = C ? gv_type_numel(lg) / C : 0;
    long long ign = (long long)gv_get_int(op, "ignore_index", -100);
    if (g)
      fprintf(f, "  galv_cross_entropy_grad_f32((float *)%s, (const float *)%s, (const float *)%s, (const int64_t *)%s, %lld, %lld, %lldLL, ",
              out, p[0], p[1], p[2], (long long)rows, (long long)C, ign);
    else
      fprintf(f, "  galv_cross_entropy_f32((float *)%s, (const float *)%s, (const int64_t *)%s, %lld, %lld, %lldLL, ", out,
              p[0], p[1], (long long)rows, (long long)C, ign);
    where(f, op);
    fputs(");\n", f);
    return 0;
  }
  case GV_OP_CONV_GRAD_INPUT:
  case GV_OP_CONV_GRAD_WEIGHT: {
    if (f32_only(m, op, -1)) return -1;
    bool wg = op->code == GV_OP_CONV_GRAD_WEIGHT;
    const gv_type *dy = &op->opnds[wg ? 1 : 0]->type, *other = &op->opnds[wg ? 0 : 1]->type;
    if (conv_desc(m, f, op, wg ? other : o, wg ? o : other, dy)) return -1;
    if (wg) fprintf(f, "    galv_conv_grad_weight_f32(&d, (const float *)%s, (const float *)%s, (float *)%s); }\n", p[0], p[1], out);
    else fprintf(f, "    galv_conv_grad_input_f32(&d, (const float *)%s, (const float *)%s, (float *)%s); }\n", p[0], p[1], out);
    return 0;
  }
  default:
    return 1;
  }
}
