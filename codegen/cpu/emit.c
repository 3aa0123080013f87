/* emit.c — the CPU target's emitter: reads a device program
 * (docs/device-program.md) and writes OUTDIR/program.c, weights.bin, the
 * Makefile and runtime/. program.c holds the input/output tables, one static
 * loop function per galv.fused (or lone elementwise) op (loops.c), and a
 * straight-line galv_program_run() that calls, in schedule order, those
 * functions and the runtime kernels (runtime/kernels.c) with pointers from
 * the arena offsets and weights-file offsets and shapes as literals.
 *
 * weights.bin: the parameters (in argument order) then the constants (in
 * schedule order), each 64-byte aligned, little-endian; a view of either
 * reads their bytes. The emitter checks the memory plan (a value's bytes
 * must not be shared with a value live at the same time) and computes last
 * uses so that debug builds poison each value after its last use. It never
 * rewrites the IR; a module that has not been through memory-plan is an
 * error. Output is deterministic: same module, same bytes. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../ir/shape_rules.h"
#include "comm.h"
#include "cpu.h"

typedef struct {
  const gv_value *v;
  int in_weights;   /* 1: weights file, 0: arena, 2: state buffer (training) */
  int64_t off;
  int64_t nbytes;
  int root;         /* index of the value whose bytes it reads (views) */
  int def, last;    /* schedule positions: -1 = before the first op; INT_MAX = output */
} vinfo;

typedef struct {
  gv_module *m;
  FILE *f;
  vinfo *vi;
  int nv;
  int nkernels;
  bool train;          /* a training step: parameters and galv.state args live in the state buffer */
  int64_t pbytes, sbytes; /* parameter part and total size of the state buffer */
  int *inplace_arg;    /* per value id: the argument an in-place update result writes, else -1 */
  cg_comm *comm;       /* collectives and ranks (emit_comm.c) */
  const char *entry;   /* gv_emit_options.entry: a second entry's name, else NULL */
  char pname[64], wname[64]; /* program.c / weights.bin, or program_ENTRY.c / weights_ENTRY.bin */
} emitter;

/* The symbols program.c defines (runtime/galv_rt.h, galv_spmd.h); a second
 * entry defines them as galv_ENTRY_* (one #define each before the includes;
 * program.cu's entries too, codegen/cuda/emit.c). */
const char *const cg_program_syms[] = {
    "inputs", "ninputs", "outputs", "noutputs", "training", "state", "nstate", "state_bytes", "param_bytes",
    "arena_bytes", "plan_high_water", "weights_bytes", "nranks", "input_split", "output_split", "state_split",
    "comm_predicted", "program_comm_free", "program_run", "nkernels", "kernels"};
const int cg_program_nsyms = sizeof cg_program_syms / sizeof *cg_program_syms;

static int64_t nbytes_of(const gv_type *t) { return gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype); }
static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

static vinfo *info(emitter *e, const gv_value *v) { return &e->vi[v->id]; }

/* Pointer expression of a value: A(off) or W(off), plus a byte offset. */
static void ptr(emitter *e, const gv_value *v, int64_t extra, char *buf, size_t n) {
  const vinfo *i = info(e, v);
  snprintf(buf, n, "%s(%lld)", i->in_weights == 2 ? "S" : i->in_weights ? "W" : "A", (long long)(i->off + extra));
}

static void dims_lit(FILE *f, int rank, const int64_t *d) {
  fputc('{', f);
  for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (!rank) fputc('0', f);
  fputc('}', f);
}

static void strides_of(const gv_type *t, int64_t *s) {
  int64_t k = 1;
  for (int d = t->rank - 1; d >= 0; d--) s[d] = k, k *= t->dims[d];
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

static int need_f32(emitter *e, const gv_op *op) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i]->type.dtype != GV_DT_F32)
      return gv_error_op(e->m, op, "cpu codegen: galv.%s on %s is not supported (f32 only)", gv_ops[op->code].name,
                         gv_dtype_name(op->opnds[i]->type.dtype));
  if (op->res[0]->type.dtype != GV_DT_F32)
    return gv_error_op(e->m, op, "cpu codegen: galv.%s with a %s result is not supported (f32 only)",
                       gv_ops[op->code].name, gv_dtype_name(op->res[0]->type.dtype));
  return 0;
}

static void where_lit(FILE *f, const gv_op *op) {
  char b[600];
  snprintf(b, sizeof b, "node '%s' (%s)", op->loc ? op->loc : "", op->onnx_op ? op->onnx_op : gv_ops[op->code].name);
  cg_c_string(f, b);
}

/* ---------------------------------------------------------------- kernels */

/* dot_general: lhs batch, free, contract; rhs batch, contract, free
 * (the grouping of ir/eval.c's dot). */
static int emit_dot(emitter *e, const gv_op *op, const char *pa, const char *pb, const char *pc) {
  gv_module *m = e->m;
  if (need_f32(e, op)) return -1;
  const gv_type *l = &op->opnds[0]->type, *r = &op->opnds[1]->type;
  const int64_t *lb, *rb, *lc, *rc;
  int nlb = gv_get_ints(op, "lhs_batch", &lb), nrb = gv_get_ints(op, "rhs_batch", &rb);
  int nlc = gv_get_ints(op, "lhs_contract", &lc), nrc = gv_get_ints(op, "rhs_contract", &rc);
  if (nlb < 0) nlb = 0;
  if (nrb < 0) nrb = 0;
  if (nlc < 0) nlc = 0;
  if (nrc < 0) nrc = 0;
  if (nlb != nrb || nlc != nrc) return gv_error_op(m, op, "cpu codegen: invalid dot dimension numbers");
  int64_t ls[GV_MAX_RANK], rs[GV_MAX_RANK];
  strides_of(l, ls);
  strides_of(r, rs);
  bool lu[GV_MAX_RANK] = {0}, ru[GV_MAX_RANK] = {0};
  {
    int64_t bd[GV_MAX_RANK], bsa[GV_MAX_RANK], bsb[GV_MAX_RANK], kd[GV_MAX_RANK], ksa[GV_MAX_RANK], ksb[GV_MAX_RANK];
    int64_t md[GV_MAX_RANK], msa[GV_MAX_RANK], nd[GV_MAX_RANK], nsb[GV_MAX_RANK];
    int nm = 0, nn = 0;
    for (int i = 0; i < nlb; i++) {
      int a = gv_norm_axis(lb[i], l->rank), b = gv_norm_axis(rb[i], r->rank);
      if (a < 0 || b < 0 || lu[a] || ru[b] || l->dims[a] != r->dims[b])
        return gv_error_op(m, op, "cpu codegen: invalid dot batch dims");
      lu[a] = ru[b] = true;
      bd[i] = l->dims[a], bsa[i] = ls[a], bsb[i] = rs[b];
    }
    for (int i = 0; i < nlc; i++) {
      int a = gv_norm_axis(lc[i], l->rank), b = gv_norm_axis(rc[i], r->rank);
      if (a < 0 || b < 0 || lu[a] || ru[b] || l->dims[a] != r->dims[b])
        return gv_error_op(m, op, "cpu codegen: invalid dot contracting dims");
      lu[a] = ru[b] = true;
      kd[i] = l->dims[a], ksa[i] = ls[a], ksb[i] = rs[b];
    }
    for (int d = 0; d < l->rank; d++)
      if (!lu[d]) md[nm] = l->dims[d], msa[nm++] = ls[d];
    for (int d = 0; d < r->rank; d++)
      if (!ru[d]) nd[nn] = r->dims[d], nsb[nn++] = rs[d];
    FILE *f = e->f;
    fprintf(f, "  { static const galv_dot_desc d = {%d, %d, %d, %d, ", nlb, nm, nlc, nn);
    dims_lit(f, nlb, bd), fputs(", ", f), dims_lit(f, nlb, bsa), fputs(", ", f), dims_lit(f, nlb, bsb), fputs(", ", f);
    dims_lit(f, nm, md), fputs(", ", f), dims_lit(f, nm, msa), fputs(", ", f);
    dims_lit(f, nlc, kd), fputs(", ", f), dims_lit(f, nlc, ksa), fputs(", ", f), dims_lit(f, nlc, ksb), fputs(", ", f);
    dims_lit(f, nn, nd), fputs(", ", f), dims_lit(f, nn, nsb);
    fprintf(f, "};\n    galv_dot_f32(&d, (const float *)%s, (const float *)%s, (float *)%s); }\n", pa, pb, pc);
  }
  return 0;
}

static int emit_conv(emitter *e, const gv_op *op, char p[][64]) {
  gv_module *m = e->m;
  if (need_f32(e, op)) return -1;
  const gv_type *x = &op->opnds[0]->type, *w = &op->opnds[1]->type, *o = &op->res[0]->type;
  int R = x->rank, S = R - 2;
  if (R < 3 || w->rank != R || o->rank != R) return gv_error_op(m, op, "cpu codegen: conv operands must have equal rank >= 3");
  const int64_t *sv, *pv, *dv;
  int ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv), nd = gv_get_ints(op, "dilations", &dv);
  int64_t G = gv_get_int(op, "group", 1), st[GV_MAX_RANK], pb[GV_MAX_RANK], dl[GV_MAX_RANK];
  if (G < 1 || x->dims[1] != w->dims[1] * G || w->dims[0] % G) return gv_error_op(m, op, "cpu codegen: conv channel counts do not match");
  for (int s = 0; s < S; s++) {
    st[s] = ns == S ? sv[s] : 1;
    pb[s] = np == 2 * S ? pv[s] : 0;
    dl[s] = nd == S ? dv[s] : 1;
  }
  FILE *f = e->f;
  fprintf(f, "  { static const galv_conv_desc d = {%d, %lld, %lld, %lld, %lld, ", S, (long long)x->dims[0],
          (long long)x->dims[1], (long long)w->dims[0], (long long)G);
  dims_lit(f, S, x->dims + 2), fputs(", ", f), dims_lit(f, S, w->dims + 2), fputs(", ", f);
  dims_lit(f, S, o->dims + 2), fputs(", ", f), dims_lit(f, S, st), fputs(", ", f), dims_lit(f, S, pb), fputs(", ", f);
  dims_lit(f, S, dl);
  fprintf(f, "};\n    galv_conv_f32(&d, (const float *)%s, (const float *)%s, %s%s%s, (float *)%s); }\n", p[0], p[1],
          op->nopnds > 2 ? "(const float *)" : "", op->nopnds > 2 ? p[2] : "NULL", "", p[op->nopnds]);
  return 0;
}

/* A constant-valued operand (trilu's k in operand form). */
static int const_int(const gv_value *v, int64_t *out) {
  if (!v->def || v->def->code != GV_OP_CONSTANT) return -1;
  const gv_attr *a = gv_get_attr(v->def, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t || gv_tensor_numel(a->u.t) < 1) return -1;
  *out = gv_tensor_get_i(a->u.t, 0);
  return 0;
}

/* One non-elementwise op as a runtime kernel call. */
static int emit_kernel(emitter *e, const gv_op *op) {
  gv_module *m = e->m;
  FILE *f = e->f;
  char p[GV_MAX_RANK * 4 + 4][64];
  int np = op->nopnds + op->nres;
  if (np > (int)(sizeof p / sizeof p[0]) && op->code != GV_OP_CONCAT && op->code != GV_OP_SPLIT)
    return gv_error_op(m, op, "cpu codegen: too many operands");
  for (int i = 0; i < op->nopnds && i < (int)(sizeof p / sizeof p[0]); i++) ptr(e, op->opnds[i], 0, p[i], sizeof p[i]);
  for (int i = 0; i < op->nres && op->nopnds + i < (int)(sizeof p / sizeof p[0]); i++)
    ptr(e, op->res[i], 0, p[op->nopnds + i], sizeof p[0]);
  if (cg_comm_is_op(op)) return cg_emit_comm_op(e->comm, f, op, p); /* collectives: emit_comm.c */
  const gv_type *x = &op->opnds[0]->type, *o = &op->res[0]->type;
  size_t es = gv_dtype_size(x->dtype);
  int64_t xs[GV_MAX_RANK];
  strides_of(x, xs);
  int ax;
  switch (op->code) {
  case GV_OP_DOT: return emit_dot(e, op, p[0], p[1], p[2]);
  case GV_OP_CONV: return emit_conv(e, op, p);
  case GV_OP_TRANSPOSE: {
    const int64_t *perm;
    int n = gv_get_ints(op, "perm", &perm);
    int64_t s[GV_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
      int64_t q = n >= 0 ? perm[d] : x->rank - 1 - d;
      if (q < 0 || q >= x->rank || o->dims[d] != x->dims[q]) return gv_error_op(m, op, "cpu codegen: bad transpose perm");
      s[d] = xs[q];
    }
    fprintf(f, "  { static const int64_t d[] = "), dims_lit(f, o->rank, o->dims);
    fprintf(f, ", s[] = "), dims_lit(f, o->rank, s);
    fprintf(f, ";\n    galv_copy_strided(%s, %s, %zu, %d, d, s); }\n", p[1], p[0], es, o->rank);
    return 0;
  }
  case GV_OP_EXPAND: {
    int64_t s[GV_MAX_RANK];
    if (x->rank > o->rank) return gv_error_op(m, op, "cpu codegen: expand result rank below the operand's");
    gv_bcast_strides(x, o, s);
    fprintf(f, "  { static const int64_t d[] = "), dims_lit(f, o->rank, o->dims);
    fprintf(f, ", s[] = "), dims_lit(f, o->rank, s);
    fprintf(f, ";\n    galv_copy_strided(%s, %s, %zu, %d, d, s); }\n", p[op->nopnds], p[0], es, o->rank);
    return 0;
  }
  case GV_OP_SLICE: {
    int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK], s[GV_MAX_RANK], base = 0;
    bool aff[GV_MAX_RANK];
    const gv_tensor *vals[5] = {0};
    for (int i = 1; i < op->nopnds && i < 5; i++)
      if (op->opnds[i]->def && op->opnds[i]->def->code == GV_OP_CONSTANT) {
        const gv_attr *a = gv_get_attr(op->opnds[i]->def, "value");
        vals[i] = a && a->kind == GV_ATTR_TENSOR ? a->u.t : NULL;
      }
    int k = gv_slice_window(m, (gv_op *)op, x, vals, start, step, count, aff);
    if (k < 0) return -1;
    if (k == 0) return gv_error_op(m, op, "cpu codegen: slice parameters are not compile-time constants");
    for (int d = 0; d < x->rank; d++) {
      if (count[d] != o->dims[d]) return gv_error_op(m, op, "cpu codegen: slice result type does not match its window");
      if (count[d] > 0) base += start[d] * xs[d];
      s[d] = step[d] * xs[d];
    }
    if (gv_type_numel(o) == 0) return 0;
    char src[64];
    ptr(e, op->opnds[0], base * (int64_t)es, src, sizeof src);
    fprintf(f, "  { static const int64_t d[] = "), dims_lit(f, o->rank, o->dims);
    fprintf(f, ", s[] = "), dims_lit(f, o->rank, s);
    fprintf(f, ";\n    galv_copy_strided(%s, %s, %zu, %d, d, s); }\n", p[op->nopnds], src, es, o->rank);
    return 0;
  }
  case GV_OP_TILE:
    if (x->rank != o->rank) return gv_error_op(m, op, "cpu codegen: tile result rank differs from the operand's");
    fprintf(f, "  { static const int64_t di[] = "), dims_lit(f, x->rank, x->dims);
    fprintf(f, ", dout[] = "), dims_lit(f, o->rank, o->dims);
    fprintf(f, ";\n    galv_tile(%s, %s, %zu, %d, di, dout); }\n", p[op->nopnds], p[0], es, o->rank);
    return 0;
  case GV_OP_CONCAT:
  case GV_OP_SPLIT: {
    bool cat = op->code == GV_OP_CONCAT;
    const gv_type *full = cat ? o : x;
    int n = cat ? op->nopnds : op->nres;
    ax = gv_norm_axis(gv_get_int(op, "axis", 0), full->rank);
    if (ax < 0) return gv_error_op(m, op, "cpu codegen: axis out of range");
    int64_t outer = prod(full->dims, 0, ax), inner = prod(full->dims, ax + 1, full->rank), tot = 0;
    fprintf(f, "  { %svoid *const v[] = {", cat ? "const " : "");
    for (int i = 0; i < n; i++) {
      char b[64];
      ptr(e, cat ? op->opnds[i] : op->res[i], 0, b, sizeof b);
      fprintf(f, "%s%s", i ? ", " : "", b);
    }
    fprintf(f, "};\n    static const int64_t c[] = {");
    for (int i = 0; i < n; i++) {
      const gv_type *t = cat ? &op->opnds[i]->type : &op->res[i]->type;
      if (t->rank != full->rank) return gv_error_op(m, op, "cpu codegen: %s operand ranks differ", cat ? "concat" : "split");
      tot += t->dims[ax];
      fprintf(f, "%s%lld", i ? ", " : "", (long long)(t->dims[ax] * inner * (int64_t)es));
    }
    if (tot != full->dims[ax]) return gv_error_op(m, op, "cpu codegen: %s sizes do not add up", cat ? "concat" : "split");
    char b[64];
    ptr(e, cat ? op->res[0] : op->opnds[0], 0, b, sizeof b);
    if (cat) fprintf(f, "};\n    galv_concat(%s, v, c, %d, %lld); }\n", b, n, (long long)outer);
    else fprintf(f, "};\n    galv_split(v, %s, c, %d, %lld); }\n", b, n, (long long)outer);
    return 0;
  }
  case GV_OP_GATHER: {
    ax = gv_norm_axis(gv_get_int(op, "axis", 0), x->rank);
    gv_dtype it = op->opnds[1]->type.dtype;
    if (ax < 0) return gv_error_op(m, op, "cpu codegen: gather axis out of range");
    if (it != GV_DT_I64 && it != GV_DT_I32)
      return gv_error_op(m, op, "cpu codegen: gather indices of dtype %s are not supported", gv_dtype_name(it));
    int64_t outer = prod(x->dims, 0, ax), inner = prod(x->dims, ax + 1, x->rank);
    fprintf(f, "  galv_gather(%s, %s, %s, %d, %lld, %lld, %lld, %lld, ", p[2], p[0], p[1], it == GV_DT_I64 ? 8 : 4,
            (long long)gv_type_numel(&op->opnds[1]->type), (long long)outer, (long long)x->dims[ax],
            (long long)(inner * (int64_t)es));
    where_lit(f, op);
    fprintf(f, ");\n");
    return 0;
  }
  case GV_OP_TRILU: {
    int64_t k = gv_get_int(op, "k", 0);
    char ks[96];
    snprintf(ks, sizeof ks, "%lld", (long long)k);
    if (op->nopnds > 1 && const_int(op->opnds[1], &k) == 0) snprintf(ks, sizeof ks, "%lld", (long long)k);
    else if (op->nopnds > 1) { /* k known at run time only: read the i64 scalar */
      if (op->opnds[1]->type.dtype != GV_DT_I64) return gv_error_op(m, op, "cpu codegen: trilu k must be i64");
      snprintf(ks, sizeof ks, "*(const int64_t *)%s", p[1]);
    }
    if (x->rank < 2) return gv_error_op(m, op, "cpu codegen: trilu needs rank >= 2");
    fprintf(f, "  galv_trilu(%s, %s, %zu, %lld, %lld, %lld, %s, %d);\n", p[op->nopnds], p[0], es,
            (long long)prod(x->dims, 0, x->rank - 2), (long long)x->dims[x->rank - 2], (long long)x->dims[x->rank - 1],
            ks, gv_get_int(op, "upper", 1) != 0);
    return 0;
  }
  case GV_OP_CUMSUM:
    if (x->dtype != GV_DT_F32 && !gv_dtype_is_int(x->dtype))
      return gv_error_op(m, op, "cpu codegen: cumsum on %s is not supported", gv_dtype_name(x->dtype));
    ax = gv_norm_axis(gv_get_int(op, "axis", 0), x->rank);
    if (ax < 0) return gv_error_op(m, op, "cpu codegen: cumsum axis out of range");
    fprintf(f, "  galv_cumsum(%s, %s, %s, %lld, %lld, %lld, %d, %d);\n", p[1], p[0], cg_rt_dtype(x->dtype),
            (long long)prod(x->dims, 0, ax), (long long)x->dims[ax], (long long)prod(x->dims, ax + 1, x->rank),
            gv_get_int(op, "exclusive", 0) != 0, gv_get_int(op, "reverse", 0) != 0);
    return 0;
  case GV_OP_REDUCE_SUM: case GV_OP_REDUCE_MEAN: case GV_OP_REDUCE_MAX: case GV_OP_REDUCE_MIN: {
    if (need_f32(e, op)) return -1;
    const int64_t *axes;
    int na = gv_get_ints(op, "axes", &axes);
    gv_type kept = *x;
    for (int d = 0; na <= 0 && d < x->rank; d++) kept.dims[d] = 1;
    for (int i = 0; i < na; i++) {
      int a = gv_norm_axis(axes[i], x->rank);
      if (a < 0) return gv_error_op(m, op, "cpu codegen: reduce axis out of range");
      kept.dims[a] = 1;
    }
    int64_t ks[GV_MAX_RANK];
    strides_of(&kept, ks);
    for (int d = 0; d < x->rank; d++) ks[d] = kept.dims[d] == 1 ? 0 : ks[d];
    if (gv_type_numel(&kept) != gv_type_numel(o)) return gv_error_op(m, op, "cpu codegen: reduce result type does not match");
    fprintf(f, "  { static const int64_t d[] = "), dims_lit(f, x->rank, x->dims);
    fprintf(f, ", s[] = "), dims_lit(f, x->rank, ks);
    fprintf(f, ";\n    galv_reduce_f32((float *)%s, (const float *)%s, %d, d, s, %lld, %d); }\n", p[1], p[0], x->rank,
            (long long)gv_type_numel(o), (int)(op->code - GV_OP_REDUCE_SUM));
    return 0;
  }
  case GV_OP_SOFTMAX: case GV_OP_LOG_SOFTMAX: {
    if (need_f32(e, op)) return -1;
    ax = x->rank ? gv_norm_axis(gv_get_int(op, "axis", -1), x->rank) : 0;
    if (ax < 0) return gv_error_op(m, op, "cpu codegen: softmax axis out of range");
    fprintf(f, "  galv_softmax_f32((float *)%s, (const float *)%s, %lld, %lld, %lld, %d);\n", p[1], p[0],
            (long long)prod(x->dims, 0, ax), (long long)(x->rank ? x->dims[ax] : 1),
            (long long)prod(x->dims, ax + 1, x->rank), op->code == GV_OP_LOG_SOFTMAX);
    return 0;
  }
  case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM: {
    if (need_f32(e, op)) return -1;
    ax = gv_norm_axis(gv_get_int(op, "axis", -1), x->rank);
    if (ax < 0) return gv_error_op(m, op, "cpu codegen: norm axis out of range");
    int64_t N = prod(x->dims, ax, x->rank), sn = gv_type_numel(&op->opnds[1]->type);
    int64_t bn = op->nopnds > 2 ? gv_type_numel(&op->opnds[2]->type) : 0;
    if ((sn != N && sn != 1) || (op->nopnds > 2 && bn != N && bn != 1))
      return gv_error_op(m, op, "cpu codegen: norm scale/bias must have the normalised element count or one element");
    fprintf(f, "  galv_norm_f32((float *)%s, (const float *)%s, (const float *)%s, %lld, %s%s, %lld, %lld, %lld, %af, %d);\n",
            p[op->nopnds], p[0], p[1], (long long)sn, op->nopnds > 2 ? "(const float *)" : "",
            op->nopnds > 2 ? p[2] : "NULL", (long long)bn, (long long)prod(x->dims, 0, ax), (long long)N,
            (double)gv_get_float(op, "epsilon", 1e-5f), op->code == GV_OP_RMS_NORM);
    return 0;
  }
  default: {
    int g = cg_emit_grad_kernel(m, f, op, p);
    if (g <= 0) return g;
  }
    return gv_error_op(m, op, "cpu codegen: galv.%s is not supported by the cpu target%s", gv_ops[op->code].name,
                       op->code == GV_OP_SHAPE || op->code == GV_OP_RANGE || op->code == GV_OP_CONSTANT_OF_SHAPE ||
                               op->code == GV_OP_IF
                           ? " (it should have been folded: are the input shapes bound?)"
                           : "");
  }
}

/* ---------------------------------------------------------------- plan */

static int fail_plan(emitter *e, const gv_op *op, const char *what) {
  return gv_error_op(e->m, op, "cpu codegen: %s (did the memory-plan pass run?)", what);
}

/* Uses of top-level values inside nested regions count at the enclosing op. */
static void mark_uses(emitter *e, const gv_block *b, int t) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) {
      const gv_value *v = op->opnds[i];
      if (v->id >= 0 && v->id < e->nv && e->vi[v->id].v == v) {
        vinfo *r = &e->vi[e->vi[v->id].root];
        if (r->last != INT_MAX && r->last < t) r->last = t;
      }
    }
    for (int k = 0; k < op->nregions; k++) mark_uses(e, op->regions[k], t);
  }
}

static void clear_ids(const gv_block *b) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = -1;
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = -1;
    for (int k = 0; k < op->nregions; k++) clear_ids(op->regions[k]);
  }
}

/* The results that memory-plan writes over the argument they update
 * (galv.arena in_place), by value id: ids are assigned in the order plan()
 * numbers values (arguments, then results in schedule order). */
static int mark_in_place(emitter *e, const gv_op *ar, int n) {
  gv_func *fn = e->m->main;
  const gv_op *ret = gv_block_terminator(fn->body);
  const int64_t *ip;
  int nip = gv_get_ints(ar, "in_place", &ip);
  if (!ret || nip != ret->nopnds) return fail_plan(e, ar, "a training step needs galv.arena in_place with one entry per result");
  int id = fn->body->nargs;
  for (const gv_op *op = fn->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = id++;
  for (int i = 0; i < nip; i++) {
    int a = fn->res_updates[i];
    if (!ip[i]) continue;
    const gv_value *r = ret->opnds[i];
    if (a < 0 || a >= fn->body->nargs || !r->def || r->id < 0 || r->id >= n || e->inplace_arg[r->id] >= 0)
      return fail_plan(e, ar, "in_place marks a result that does not update a distinct argument");
    e->inplace_arg[r->id] = a;
  }
  clear_ids(fn->body);
  return 0;
}

/* In-place updates: every use of the argument is before the result's
 * definition, or at it by the defining elementwise op (read before write). */
static int check_in_place(emitter *e) {
  for (int a = 0; a < e->nv; a++) {
    const vinfo *x = &e->vi[a];
    if (x->in_weights != 2 || x->def < 0 || x->root != a) continue;
    const vinfo *arg = &e->vi[e->inplace_arg[x->v->id]];
    const gv_op *d = x->v->def;
    bool ew = d->code == GV_OP_FUSED || (gv_ops[d->code].flags & GV_ELEMENTWISE);
    if (arg->last > x->def || (arg->last == x->def && !ew))
      return gv_error_op(e->m, d, "cpu codegen: memory plan error: update written in place over '%s', which is used "
                                  "after it", e->m->main->arg_names[arg->v->index]);
  }
  return 0;
}

/* Locations of every top-level value; weights layout; last uses; plan check. */
static int plan(emitter *e, int64_t *wbytes, const gv_op **arena_op) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  const gv_op *ar = body->first;
  if (!ar || ar->code != GV_OP_ARENA)
    return gv_error(m, "cpu codegen: the program has no memory plan (galv.arena is not the first op); run the "
                       "fuse and memory-plan passes first");
  *arena_op = ar;
  const int64_t *argoff;
  int nao = gv_get_ints(ar, "arg_offsets", &argoff);
  if (nao != body->nargs) return fail_plan(e, ar, "arg_offsets does not have one entry per block argument");
  int64_t abytes = gv_get_int(ar, "bytes", -1);
  if (abytes < 0) return fail_plan(e, ar, "galv.arena has no 'bytes'");
  int n = body->nargs;
  for (const gv_op *op = body->first; op; op = op->next) n += op->nres;
  clear_ids(body);
  e->vi = calloc((size_t)n + 1, sizeof *e->vi);
  e->inplace_arg = malloc(((size_t)n + 1) * sizeof *e->inplace_arg);
  if (!e->vi || !e->inplace_arg) abort();
  for (int i = 0; i <= n; i++) e->inplace_arg[i] = -1;
  if (e->train && mark_in_place(e, ar, n)) return -1;
  int64_t w = 0;
  for (int i = 0; i < body->nargs; i++) {
    const gv_value *v = body->args[i];
    vinfo *vi = &e->vi[e->nv];
    ((gv_value *)v)->id = e->nv;
    *vi = (vinfo){v, 0, 0, 0, e->nv, -1, -1};
    e->nv++;
    if (!gv_type_is_static(&v->type) || !gv_dtype_size(v->type.dtype))
      return gv_error(m, "cpu codegen: argument '%s' has no static type", fn->arg_names[i] ? fn->arg_names[i] : "?");
    vi->nbytes = nbytes_of(&v->type);
    if (fn->arg_is_param[i]) {
      vi->in_weights = e->train ? 2 : 1; /* training: the state buffer mirrors the parameters' weights.bin bytes */
      vi->off = w;
      w = align64(w + vi->nbytes);
    } else if (fn->arg_is_state && fn->arg_is_state[i]) {
      vi->in_weights = 2; /* the state buffer: offset after the parameters (training) or from 0, set below */
      if (argoff[i] != -1) return fail_plan(e, ar, "an optimizer state argument must have offset -1");
    } else {
      vi->off = argoff[i];
      if (argoff[i] < 0 || argoff[i] % 64 || argoff[i] + vi->nbytes > abytes)
        return fail_plan(e, ar, "graph input offset outside the arena or unaligned");
    }
  }
  e->pbytes = e->sbytes = e->train ? w : 0; /* not a training step: galv.state inputs only (a pipeline stash) */
  for (int i = 0; i < body->nargs; i++)
    if (e->vi[i].in_weights == 2 && !fn->arg_is_param[i]) {
      e->vi[i].off = e->sbytes;
      e->sbytes = align64(e->sbytes + e->vi[i].nbytes);
    }
  int t = 0;
  for (const gv_op *op = body->first; op; op = op->next, t++) {
    if (op->code == GV_OP_CONSTANT) {
      const gv_value *v = op->res[0];
      vinfo *vi = &e->vi[e->nv];
      ((gv_value *)v)->id = e->nv;
      *vi = (vinfo){v, 1, w, nbytes_of(&v->type), e->nv, t, -1};
      e->nv++;
      if (vi->nbytes < 0) return gv_error_op(m, op, "cpu codegen: constant type is not static");
      w = align64(w + vi->nbytes);
      continue;
    }
    if (op->nres == 0) continue;
    const int64_t *offs;
    int no = gv_get_ints(op, "offsets", &offs);
    if (no != op->nres) return fail_plan(e, op, "op has no 'offsets' with one entry per result");
    for (int i = 0; i < op->nres; i++) {
      const gv_value *v = op->res[i];
      vinfo *vi = &e->vi[e->nv];
      ((gv_value *)v)->id = e->nv;
      *vi = (vinfo){v, 0, offs[i], nbytes_of(&v->type), e->nv, t, -1};
      e->nv++;
      if (!gv_type_is_static(&v->type) || vi->nbytes < 0 || !gv_dtype_size(v->type.dtype))
        return gv_error_op(m, op, "cpu codegen: result %d has no static type", i);
      if (offs[i] == -1 && e->train && e->inplace_arg[v->id] >= 0 && !(gv_ops[op->code].flags & GV_VIEW)) {
        const vinfo *a = &e->vi[e->inplace_arg[v->id]]; /* an update written over its argument's bytes */
        vi->in_weights = 2;
        vi->off = a->off;
        if (!a->in_weights || a->nbytes != vi->nbytes) return fail_plan(e, op, "an in-place update does not match its argument");
      } else if (gv_ops[op->code].flags & GV_VIEW) {
        const vinfo *src = info(e, op->opnds[0]);
        vi->root = src->root;
        vi->in_weights = src->in_weights;
        if (src->in_weights) {
          vi->off = src->off;
          if (offs[i] != -1) return fail_plan(e, op, "a view of a weight must have offset -1");
        } else if (offs[i] != src->off) {
          return fail_plan(e, op, "a view must have its operand's offset");
        }
      } else if (offs[i] < 0 || offs[i] % 64 || offs[i] + vi->nbytes > abytes) {
        return fail_plan(e, op, "result offset outside the arena or unaligned");
      }
    }
  }
  *wbytes = w;
  /* last uses (in schedule positions); graph outputs live to the end */
  t = 0;
  for (const gv_op *op = body->first; op; op = op->next, t++) {
    if (op->code == GV_OP_RETURN) {
      for (int i = 0; i < op->nopnds; i++) e->vi[info(e, op->opnds[i])->root].last = INT_MAX;
      continue;
    }
    gv_block tmp = {0};
    tmp.first = tmp.last = (gv_op *)op;
    gv_op *nx = op->next;
    ((gv_op *)op)->next = NULL; /* mark_uses walks a one-op list */
    mark_uses(e, &tmp, t);
    ((gv_op *)op)->next = nx;
  }
  if (e->train && check_in_place(e)) return -1;
  /* plan check: a value's bytes never overlap those of a value live when it is
   * defined (an elementwise op may write over an operand of exactly its size
   * that dies there: each element is read before it is written). */
  for (int a = 0; a < e->nv; a++) {
    vinfo *x = &e->vi[a];
    if (x->in_weights || x->root != a || x->def < 0) continue;
    const gv_op *dop = x->v->def;
    bool ew = dop->code == GV_OP_FUSED || (gv_ops[dop->code].flags & GV_ELEMENTWISE);
    for (int b = 0; b < e->nv; b++) {
      vinfo *y = &e->vi[b];
      if (b == a || y->in_weights || y->root != b || y->last < x->def || y->def > x->def) continue;
      if (y->def == x->def && y->v->def == dop) {
        if (x->off < y->off + y->nbytes && y->off < x->off + x->nbytes)
          return gv_error_op(m, dop, "cpu codegen: memory plan places two results of one op in overlapping bytes");
        continue;
      }
      if (!(x->off < y->off + y->nbytes && y->off < x->off + x->nbytes)) continue;
      bool operand = false;
      for (int i = 0; i < dop->nopnds; i++) operand |= info(e, dop->opnds[i])->root == b;
      if (ew && operand && y->last == x->def && y->off == x->off && y->nbytes == x->nbytes &&
          gv_dtype_size(y->v->type.dtype) == gv_dtype_size(x->v->type.dtype))
        continue;
      return gv_error_op(m, dop, "cpu codegen: memory plan error: result shares arena bytes [%lld, %lld) with a value "
                                 "still live (arena offset %lld)",
                         (long long)x->off, (long long)(x->off + x->nbytes), (long long)y->off);
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- weights */

static int write_weights(emitter *e, const char *dir, int64_t total) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, e->wname);
  FILE *f = fopen(path, "wb");
  if (!f) return gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
  static const char zeros[64];
  int64_t pos = 0;
  int rc = 0, werr = 0;
  for (int a = 0; a < e->nv && !rc; a++) {
    const vinfo *x = &e->vi[a];
    bool param = x->in_weights == 2 && !x->v->def && fn->arg_is_param[x->v->index]; /* initial value of a state slot */
    if ((x->in_weights != 1 && !param) || x->root != a) continue;
    const void *data = NULL;
    if (!x->v->def) {
      data = fn->param_data ? fn->param_data[x->v->index] : NULL;
      if (!data && x->nbytes)
        rc = gv_error(m, "cpu codegen: parameter '%s' has no data (imported with --no-weights?)",
                      fn->arg_names[x->v->index] ? fn->arg_names[x->v->index] : "?");
    } else {
      const gv_attr *at = gv_get_attr(x->v->def, "value");
      if (!at || at->kind != GV_ATTR_TENSOR || !at->u.t) rc = gv_error_op(m, x->v->def, "constant has no value");
      else data = at->u.t->data;
    }
    if (rc) break;
    while (pos < x->off) {
      size_t k = (size_t)(x->off - pos > 64 ? 64 : x->off - pos);
      fwrite(zeros, 1, k, f);
      pos += (int64_t)k;
    }
    if (x->nbytes && fwrite(data, 1, (size_t)x->nbytes, f) != (size_t)x->nbytes) werr = 1;
    pos += x->nbytes;
  }
  while (!rc && pos < total) {
    size_t k = (size_t)(total - pos > 64 ? 64 : total - pos);
    fwrite(zeros, 1, k, f);
    pos += (int64_t)k;
  }
  if ((fclose(f) || werr) && !rc) return gv_error_plain("%s: write failed: %s", path, strerror(errno));
  return rc;
}

/* ---------------------------------------------------------------- program.c */

static void io_entry(emitter *e, const char *name, const gv_value *v) {
  const vinfo *x = info(e, v);
  FILE *f = e->f;
  fputs("  {", f);
  cg_c_string(f, name);
  fprintf(f, ", %s, %d, ", cg_rt_dtype(v->type.dtype), v->type.rank);
  dims_lit(f, v->type.rank, v->type.dims);
  fprintf(f, ", %d, %lld, %lld},\n", x->in_weights, (long long)x->off, (long long)x->nbytes);
}

static void poison_after(emitter *e, int t, bool poison) {
  for (int a = 0; a < e->nv; a++) {
    const vinfo *x = &e->vi[a];
    if (x->in_weights || x->root != a) continue;
    if (poison && (x->last == t || (x->last < 0 && x->def == t)))
      fprintf(e->f, "  GALV_POISON(A(%lld), %lld);\n", (long long)x->off, (long long)x->nbytes);
    if (!poison && x->def == t)
      fprintf(e->f, "  GALV_UNPOISON(A(%lld), %lld);\n", (long long)x->off, (long long)x->nbytes);
  }
}

/* The state table of a training step (galv_rt.h galv_state_entry): every
 * parameter and galv.state argument, its slot, and where the step leaves
 * its new value (an arena offset copied after the step, or -1: in place). */
static int state_table(emitter *e, const gv_op *ret) {
  gv_func *fn = e->m->main;
  FILE *f = e->f;
  int n = 0;
  fprintf(f, "const int galv_training = %d;\nconst galv_state_entry galv_state[] = {\n", e->train);
  for (int a = 0; a < fn->body->nargs; a++) {
    const vinfo *x = &e->vi[a];
    if (x->in_weights != 2) continue;
    int64_t from = -1;
    for (int i = 0; fn->res_updates && i < ret->nopnds; i++) {
      if (fn->res_updates[i] != a) continue;
      const vinfo *r = info(e, ret->opnds[i]);
      if (r->in_weights == 2 && e->inplace_arg[e->vi[r->root].v->id] == a) break;
      if (r->in_weights != 0)
        return gv_error_op(e->m, ret, "cpu codegen: the update of '%s' is not in the arena (not supported)", fn->arg_names[a]);
      from = r->off;
      break;
    }
    fputs("  {", f);
    cg_c_string(f, fn->arg_names[a] ? fn->arg_names[a] : "");
    fprintf(f, ", %s, %d, ", cg_rt_dtype(x->v->type.dtype), x->v->type.rank);
    dims_lit(f, x->v->type.rank, x->v->type.dims);
    fprintf(f, ", %d, %lld, %lld, %lld},\n", fn->arg_is_param[a] ? 1 : 0, (long long)x->off, (long long)x->nbytes,
            (long long)from);
    n++;
  }
  if (!n) fprintf(f, "  {0}\n");
  fprintf(f, "};\nconst int galv_nstate = %d;\nconst int64_t galv_state_bytes = %lld;\nconst int64_t galv_param_bytes = %lld;\n\n",
          n, (long long)e->sbytes, (long long)(e->train ? e->pbytes : 0));
  return 0;
}

static int write_program(emitter *e, const char *dir, int64_t wbytes, const gv_op *ar) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, e->pname);
  FILE *f = fopen(path, "w");
  if (!f) return gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
  e->f = f;
  const char *src = strrchr(m->source, '/');
  fprintf(f, "/* program.c — generated by galvc (CPU target) from ");
  cg_c_comment(f, src ? src + 1 : m->source);
  fprintf(f, ". Do not edit.\n * galv_program_run() calls one kernel per op of the device program in schedule order;\n"
             " * A(off) is arena memory, W(off) the mapped weights.bin. */\n");
  if (e->entry) {
    fprintf(f, "/* the program's entry '%s' (weights in %s): its symbols are galv_%s_* */\n", e->entry, e->wname, e->entry);
    for (int i = 0; i < cg_program_nsyms; i++)
      fprintf(f, "#define galv_%s galv_%s_%s\n", cg_program_syms[i], e->entry, cg_program_syms[i]);
    fputc('\n', f);
  }
  fprintf(f, "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n#include \"runtime/galv_rt.h\"\n#include \"runtime/galv_spmd.h\"\n\n"
             "#define A(o) (arena + (o))\n#define W(o) (weights + (o))\n#define S(o) (state + (o))\n\n");
  /* tables */
  int nin = 0;
  fprintf(f, "const galv_io galv_inputs[] = {\n");
  for (int i = 0; i < body->nargs; i++)
    if (!fn->arg_is_param[i] && !info(e, body->args[i])->in_weights) {
      if (!cg_rt_dtype(body->args[i]->type.dtype))
        return fclose(f), gv_error(m, "cpu codegen: input dtype %s unsupported", gv_dtype_name(body->args[i]->type.dtype));
      io_entry(e, fn->arg_names[i] ? fn->arg_names[i] : "", body->args[i]), nin++;
    }
  if (!nin) fprintf(f, "  {0}\n");
  fprintf(f, "};\nconst int galv_ninputs = %d;\n\n", nin);
  const gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return fclose(f), gv_error(m, "cpu codegen: the function does not end in galv.return");
  fprintf(f, "const galv_io galv_outputs[] = {\n");
  for (int i = 0; i < ret->nopnds; i++) {
    char nm[64];
    const char *name = i < fn->nres_names && fn->res_names && fn->res_names[i] ? fn->res_names[i] : NULL;
    if (!name) snprintf(nm, sizeof nm, "output%d", i), name = nm;
    if (!cg_rt_dtype(ret->opnds[i]->type.dtype))
      return fclose(f), gv_error_op(m, ret, "cpu codegen: output dtype %s unsupported", gv_dtype_name(ret->opnds[i]->type.dtype));
    io_entry(e, name, ret->opnds[i]);
  }
  if (!ret->nopnds) fprintf(f, "  {0}\n");
  int64_t high = 0;
  for (int a = 0; a < e->nv; a++)
    if (!e->vi[a].in_weights && e->vi[a].root == a && e->vi[a].off + e->vi[a].nbytes > high)
      high = e->vi[a].off + e->vi[a].nbytes;
  fprintf(f, "};\nconst int galv_noutputs = %d;\n\n", ret->nopnds);
  if (state_table(e, ret)) return fclose(f), -1;
  fprintf(f, "const int64_t galv_arena_bytes = %lld;\nconst int64_t galv_plan_high_water = %lld;\n"
             "const int64_t galv_weights_bytes = %lld;\n\n",
          (long long)gv_get_int(ar, "bytes", 0), (long long)high, (long long)wbytes);
  /* loop functions */
  int t = 0, rc = 0, nk = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    if (op->code == GV_OP_FUSED || (gv_ops[op->code].flags & GV_ELEMENTWISE)) {
      char name[32];
      snprintf(name, sizeof name, "%s%d", op->code == GV_OP_FUSED ? "fused" : "ew", t);
      fprintf(f, "/* ");
      if (op->code == GV_OP_FUSED) {
        for (const gv_op *b = op->regions[0]->first; b; b = b->next)
          if (b->code != GV_OP_YIELD) fprintf(f, "%s ", gv_ops[b->code].name);
      } else {
        fprintf(f, "%s ", gv_ops[op->code].name);
      }
      fprintf(f, "-- node '");
      cg_c_comment(f, op->loc ? op->loc : "");
      fprintf(f, "' */\n");
      rc = cg_emit_loop(m, f, name, op);
    }
  }
  if (!rc && cg_comm_decls(e->comm, f)) rc = -1;
  /* the run function */
  fprintf(f, "void galv_program_run(char *arena, const char *weights, char *state) {\n  (void)arena, (void)weights, (void)state;\n");
  cg_comm_run_start(e->comm, f);
  for (int a = 0; a < e->nv; a++)
    if (!e->vi[a].in_weights && e->vi[a].root == a && e->vi[a].def < 0 && e->vi[a].last < 0)
      fprintf(f, "  GALV_POISON(A(%lld), %lld); /* unused input */\n", (long long)e->vi[a].off, (long long)e->vi[a].nbytes);
  t = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    gv_opcode k = op->code;
    cg_comm_before_op(e->comm, f, op); /* waits for communication whose bytes op touches */
    if (k == GV_OP_ARENA || k == GV_OP_CONSTANT || k == GV_OP_RETURN || (gv_ops[k].flags & GV_VIEW)) continue;
    fprintf(f, "  /* %s: node '", gv_ops[k].name);
    cg_c_comment(f, op->loc ? op->loc : "");
    fprintf(f, "' */\n");
    poison_after(e, t, false);
    fprintf(f, "  GALV_PROF(%d);\n", nk);
    if (k == GV_OP_FUSED || (gv_ops[k].flags & GV_ELEMENTWISE)) {
      fprintf(f, "  %s%d(", k == GV_OP_FUSED ? "fused" : "ew", t);
      for (int i = 0; i < op->nopnds + op->nres; i++) {
        char b[64];
        ptr(e, i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds], 0, b, sizeof b);
        fprintf(f, "%s%s", i ? ", " : "", b);
      }
      fprintf(f, ");\n");
    } else {
      rc = emit_kernel(e, op);
    }
    nk++;
    poison_after(e, t, true);
  }
  cg_comm_run_end(e->comm, f);
  fprintf(f, "  GALV_PROF(-1);\n}\n\nconst int galv_nkernels = %d;\n", nk);
  /* kind and node of each kernel call, for --profile */
  fprintf(f, "const galv_kernel_info galv_kernels[] = {\n");
  for (const gv_op *op = body->first; op && !rc; op = op->next) {
    gv_opcode k = op->code;
    if (k == GV_OP_ARENA || k == GV_OP_CONSTANT || k == GV_OP_RETURN || (gv_ops[k].flags & GV_VIEW)) continue;
    fprintf(f, "  {\"%s\", ", gv_ops[k].name);
    cg_c_string(f, op->loc ? op->loc : "");
    fprintf(f, "},\n");
  }
  fprintf(f, "  {0}\n};\n");
  e->nkernels = nk;
  if (fclose(f) && !rc) rc = gv_error_plain("%s: write failed: %s", path, strerror(errno));
  return rc;
}

int gv_emit_cpu(gv_module *m, const char *outdir, gv_emit_options *o) {
  emitter e = {.m = m, .train = m->main && m->main->res_updates != NULL, .entry = o ? o->entry : NULL};
  if (e.entry) {
    for (const char *c = e.entry; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_') || strlen(e.entry) > 32)
        return gv_error_plain("cpu codegen: entry name '%s' is not a short C identifier (a-z, 0-9, _)", e.entry);
    snprintf(e.pname, sizeof e.pname, "program_%s.c", e.entry);
    snprintf(e.wname, sizeof e.wname, "weights_%s.bin", e.entry);
  } else {
    snprintf(e.pname, sizeof e.pname, "program.c");
    snprintf(e.wname, sizeof e.wname, "weights.bin");
  }
  int64_t wbytes = 0;
  const gv_op *ar = NULL;
  struct stat st;
  int rc = -1;
  if (stat(outdir, &st) != 0 && mkdir(outdir, 0777) != 0) {
    gv_error_plain("%s: cannot create output directory: %s", outdir, strerror(errno));
    goto out;
  }
  if (!(e.comm = cg_comm_new(m, &cg_cpu_comm))) goto out;
  if (plan(&e, &wbytes, &ar) || write_program(&e, outdir, wbytes, ar) || write_weights(&e, outdir, wbytes))
    goto out;
  if (cg_comm_nranks(e.comm) > 1) { /* one weights block per rank (emit_comm.c) */
    int64_t *woff = malloc(sizeof *woff * (size_t)(m->main->body->nargs + 1));
    if (!woff) abort();
    for (int i = 0; i < m->main->body->nargs; i++) {
      const vinfo *x = info(&e, m->main->body->args[i]);
      woff[i] = x->in_weights ? x->off : -1;
    }
    int wrc = cg_comm_write_weights(e.comm, outdir, e.wname, wbytes, woff);
    free(woff);
    if (wrc || (!e.entry && cg_comm_write_launch(e.comm, outdir))) goto out;
  }
  if (!e.entry && (cg_write_makefile_comm(outdir, cg_comm_nranks(e.comm) > 1) || cg_write_runtime(outdir))) goto out;
  if (o) o->nkernels = e.nkernels;
  rc = 0;
out:
  free(e.vi);
  free(e.inplace_arg);
  cg_comm_free(e.comm);
  return rc;
}
