/* kcall.c — one table, keyed by op code, of the kernel call that runs each
 * non-elementwise op on every target (kcall.h): per op a fill function that
 * checks the op and works out its kernel, buffers and static shape
 * parameters. The CPU and CUDA emitters print the filled cg_kcall in their
 * own syntax; an op that a runtime kernel already handles is added here
 * once (a row and its fill function) and both targets run it. A new kernel
 * also needs a print case in each emitter (codegen/cpu/emit.c
 * print_kcall, codegen/cuda/emit.c print_kcall) and its runtime code on each
 * target. Prints only the calls both targets write alike (data movement)
 * and literals; never changes the IR. */
#include "kcall.h"

#include <math.h>
#include <string.h>

#include "../ir/shape_rules.h"

const char *const cg_kernel_names[CG_K_COUNT] = {
#define CG_K_NAME(E, N) N,
    CG_KERNELS(CG_K_NAME)
#undef CG_K_NAME
};

typedef struct {
  gv_module *m;
  const gv_op *op;
  const char *who;
  const gv_type *x, *o; /* operand 0, result 0 */
  int64_t xs[GV_MAX_RANK]; /* x's row-major strides */
} fill_ctx;

void cg_strides_of(const gv_type *t, int64_t *s) {
  int64_t k = 1;
  for (int d = t->rank - 1; d >= 0; d--) s[d] = k, k *= t->dims[d];
}

int64_t cg_prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

static void copy_dims(int64_t *dst, const int64_t *src, int n) {
  for (int i = 0; i < n; i++) dst[i] = src[i];
}

/* f32 operands (except operand skip: indices, labels) and an f32 result:
 * the compute kernels of both runtimes */
static int need_f32_but(const fill_ctx *c, int skip) {
  const gv_op *op = c->op;
  for (int i = 0; i < op->nopnds; i++)
    if (i != skip && op->opnds[i]->type.dtype != GV_DT_F32)
      return gv_error_op(c->m, op, "%s: galv.%s on %s is not supported (f32 only)", c->who, gv_ops[op->code].name,
                         gv_dtype_name(op->opnds[i]->type.dtype));
  if (op->res[0]->type.dtype != GV_DT_F32)
    return gv_error_op(c->m, op, "%s: galv.%s with a %s result is not supported (f32 only)", c->who,
                       gv_ops[op->code].name, gv_dtype_name(op->res[0]->type.dtype));
  return 0;
}
static int need_f32(const fill_ctx *c) { return need_f32_but(c, -1); }

/* A constant-valued operand (trilu's k in operand form). */
static int const_int(const gv_value *v, int64_t *out) {
  if (!v->def || v->def->code != GV_OP_CONSTANT) return -1;
  const gv_attr *a = gv_get_attr(v->def, "value");
  if (!a || a->kind != GV_ATTR_TENSOR || !a->u.t || gv_tensor_numel(a->u.t) < 1) return -1;
  *out = gv_tensor_get_i(a->u.t, 0);
  return 0;
}

/* ---------------------------------------------------------------- data movement */

/* transpose: y = x read at permuted strides */
static int fill_transpose(const fill_ctx *c, cg_kcall *k) {
  const int64_t *perm;
  int n = gv_get_ints(c->op, "perm", &perm);
  for (int d = 0; d < c->x->rank; d++) {
    int64_t q = n >= 0 ? perm[d] : c->x->rank - 1 - d;
    if (q < 0 || q >= c->x->rank || c->o->dims[d] != c->x->dims[q])
      return gv_error_op(c->m, c->op, "%s: bad transpose perm", c->who);
    k->strides[d] = c->xs[q];
  }
  k->rank = c->o->rank;
  copy_dims(k->dims, c->o->dims, c->o->rank);
  return 0;
}

/* expand: y = x read at broadcast strides (0 along expanded dims) */
static int fill_expand(const fill_ctx *c, cg_kcall *k) {
  if (c->x->rank > c->o->rank) return gv_error_op(c->m, c->op, "%s: expand result rank below the operand's", c->who);
  gv_bcast_strides(c->x, c->o, k->strides);
  k->rank = c->o->rank;
  copy_dims(k->dims, c->o->dims, c->o->rank);
  return 0;
}

/* slice: y = x's window (starts, steps from constant operands or attributes) */
static int fill_slice(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK];
  bool aff[GV_MAX_RANK];
  const gv_tensor *vals[5] = {0};
  for (int i = 1; i < op->nopnds && i < 5; i++)
    if (op->opnds[i]->def && op->opnds[i]->def->code == GV_OP_CONSTANT) {
      const gv_attr *a = gv_get_attr(op->opnds[i]->def, "value");
      vals[i] = a && a->kind == GV_ATTR_TENSOR ? a->u.t : NULL;
    }
  int w = gv_slice_window(c->m, (gv_op *)op, c->x, vals, start, step, count, aff);
  if (w < 0) return -1;
  if (w == 0) return gv_error_op(c->m, op, "%s: slice parameters are not compile-time constants", c->who);
  for (int d = 0; d < c->x->rank; d++) {
    if (count[d] != c->o->dims[d]) return gv_error_op(c->m, op, "%s: slice result type does not match its window", c->who);
    if (count[d] > 0) k->base += start[d] * c->xs[d];
    k->strides[d] = step[d] * c->xs[d];
  }
  if (gv_type_numel(c->o) == 0) k->kernel = CG_K_NONE; /* an empty window: nothing to copy */
  k->rank = c->o->rank;
  copy_dims(k->dims, c->o->dims, c->o->rank);
  return 0;
}

/* tile: dims = x's, dims2 = y's */
static int fill_tile(const fill_ctx *c, cg_kcall *k) {
  if (c->x->rank != c->o->rank) return gv_error_op(c->m, c->op, "%s: tile result rank differs from the operand's", c->who);
  k->rank = c->o->rank;
  copy_dims(k->dims, c->x->dims, c->x->rank);
  copy_dims(k->dims2, c->o->dims, c->o->rank);
  return 0;
}

/* concat / split along axis: outer rows of nparts chunks (cg_kcall_part_elems) */
static int fill_concat_split(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  bool cat = op->code == GV_OP_CONCAT;
  const gv_type *full = cat ? c->o : c->x;
  int ax = gv_norm_axis(gv_get_int(op, "axis", 0), full->rank);
  if (ax < 0) return gv_error_op(c->m, op, "%s: axis out of range", c->who);
  k->nparts = cat ? op->nopnds : op->nres;
  k->part0 = cat ? 0 : op->nopnds;
  int64_t tot = 0;
  for (int i = 0; i < k->nparts; i++) {
    const gv_type *t = &cg_kcall_value(op, k->part0 + i)->type;
    if (t->rank != full->rank) return gv_error_op(c->m, op, "%s: %s operand ranks differ", c->who, cat ? "concat" : "split");
    tot += t->dims[ax];
  }
  if (tot != full->dims[ax]) return gv_error_op(c->m, op, "%s: %s sizes do not add up", c->who, cat ? "concat" : "split");
  k->src = cat ? -1 : 0;
  k->dst = cat ? op->nopnds : -1;
  k->es_slot = cat ? op->nopnds : 0; /* the whole tensor's */
  k->axis = ax;
  k->outer = cg_prod(full->dims, 0, ax);
  k->inner = cg_prod(full->dims, ax + 1, full->rank);
  return 0;
}

/* gather along axis: data [outer, len, inner] at count indices (aux[0]) */
static int fill_gather(const fill_ctx *c, cg_kcall *k) {
  int ax = gv_norm_axis(gv_get_int(c->op, "axis", 0), c->x->rank);
  gv_dtype it = c->op->opnds[1]->type.dtype;
  if (ax < 0) return gv_error_op(c->m, c->op, "%s: gather axis out of range", c->who);
  if (it != GV_DT_I64 && it != GV_DT_I32)
    return gv_error_op(c->m, c->op, "%s: gather indices of dtype %s are not supported", c->who, gv_dtype_name(it));
  k->aux[0] = 1;
  k->idx_es = it == GV_DT_I64 ? 8 : 4;
  k->count = gv_type_numel(&c->op->opnds[1]->type);
  k->outer = cg_prod(c->x->dims, 0, ax), k->len = c->x->dims[ax], k->inner = cg_prod(c->x->dims, ax + 1, c->x->rank);
  return 0;
}

/* trilu: batch (outer) of len x inner matrices; kind = upper; k constant or read at run time */
static int fill_trilu(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  k->kdiag = gv_get_int(op, "k", 0);
  if (op->nopnds > 1 && const_int(op->opnds[1], &k->kdiag) != 0) {
    if (op->opnds[1]->type.dtype != GV_DT_I64) return gv_error_op(c->m, op, "%s: trilu k must be i64", c->who);
    k->kdiag_slot = 1;
  }
  if (c->x->rank < 2) return gv_error_op(c->m, op, "%s: trilu needs rank >= 2", c->who);
  k->outer = cg_prod(c->x->dims, 0, c->x->rank - 2), k->len = c->x->dims[c->x->rank - 2], k->inner = c->x->dims[c->x->rank - 1];
  k->kind = gv_get_int(op, "upper", 1) != 0;
  return 0;
}

/* cumsum over len of rows [outer, len, inner]; kind = exclusive, kind2 = reverse */
static int fill_cumsum(const fill_ctx *c, cg_kcall *k) {
  if (c->x->dtype != GV_DT_F32 && !gv_dtype_is_int(c->x->dtype))
    return gv_error_op(c->m, c->op, "%s: cumsum on %s is not supported", c->who, gv_dtype_name(c->x->dtype));
  int ax = gv_norm_axis(gv_get_int(c->op, "axis", 0), c->x->rank);
  if (ax < 0) return gv_error_op(c->m, c->op, "%s: cumsum axis out of range", c->who);
  k->outer = cg_prod(c->x->dims, 0, ax), k->len = c->x->dims[ax], k->inner = cg_prod(c->x->dims, ax + 1, c->x->rank);
  k->kind = gv_get_int(c->op, "exclusive", 0) != 0;
  k->kind2 = gv_get_int(c->op, "reverse", 0) != 0;
  return 0;
}

/* ---------------------------------------------------------------- reductions, softmax, norms */

/* reduce_*: dims = x's, strides = the output stride of each input dim (0: reduced), count = output elements */
static int fill_reduce(const fill_ctx *c, cg_kcall *k) {
  if (need_f32(c)) return -1;
  const int64_t *axes;
  int na = gv_get_ints(c->op, "axes", &axes);
  gv_type kept = *c->x;
  for (int d = 0; na <= 0 && d < c->x->rank; d++) kept.dims[d] = 1;
  for (int i = 0; i < na; i++) {
    int a = gv_norm_axis(axes[i], c->x->rank);
    if (a < 0) return gv_error_op(c->m, c->op, "%s: reduce axis out of range", c->who);
    kept.dims[a] = 1;
  }
  cg_strides_of(&kept, k->strides);
  for (int d = 0; d < c->x->rank; d++) k->strides[d] = kept.dims[d] == 1 ? 0 : k->strides[d];
  if (gv_type_numel(&kept) != gv_type_numel(c->o)) return gv_error_op(c->m, c->op, "%s: reduce result type does not match", c->who);
  k->rank = c->x->rank;
  copy_dims(k->dims, c->x->dims, c->x->rank);
  k->count = gv_type_numel(c->o);
  k->kind = (int)(c->op->code - GV_OP_REDUCE_SUM);
  return 0;
}

/* softmax / log_softmax (kind) over len elements of stride inner */
static int fill_softmax(const fill_ctx *c, cg_kcall *k) {
  if (need_f32(c)) return -1;
  const gv_type *x = c->x;
  int ax = x->rank ? gv_norm_axis(gv_get_int(c->op, "axis", -1), x->rank) : 0;
  if (ax < 0) return gv_error_op(c->m, c->op, "%s: softmax axis out of range", c->who);
  k->outer = cg_prod(x->dims, 0, ax), k->len = x->rank ? x->dims[ax] : 1, k->inner = cg_prod(x->dims, ax + 1, x->rank);
  k->kind = c->op->code == GV_OP_LOG_SOFTMAX;
  return 0;
}

/* dropout (runtime/galv_rng.h): y = x's kept elements x scale over the local
 * dims; aux[0]: the i64 [rank] shard offsets (spmd-partition), or -1 */
static int fill_dropout(const fill_ctx *c, cg_kcall *k) {
  if (need_f32_but(c, 1)) return -1;
  if (c->x->rank > GV_MAX_RANK || c->x->rank > 8) return gv_error_op(c->m, c->op, "%s: dropout of rank above 8", c->who);
  if (gv_dropout_params(c->m, c->op, &k->dro)) return -1;
  k->rank = c->x->rank;
  copy_dims(k->dims, c->x->dims, c->x->rank);
  k->aux[0] = c->op->nopnds > 1 ? 1 : -1;
  return 0;
}

/* layer_norm / rms_norm (kind) over rows of len; scale aux[0] (count elements), bias aux[1] (count2) */
static int fill_norm(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32(c)) return -1;
  int ax = gv_norm_axis(gv_get_int(op, "axis", -1), c->x->rank);
  if (ax < 0) return gv_error_op(c->m, op, "%s: norm axis out of range", c->who);
  int64_t N = cg_prod(c->x->dims, ax, c->x->rank), sn = gv_type_numel(&op->opnds[1]->type);
  int64_t bn = op->nopnds > 2 ? gv_type_numel(&op->opnds[2]->type) : 0;
  if ((sn != N && sn != 1) || (op->nopnds > 2 && bn != N && bn != 1))
    return gv_error_op(c->m, op, "%s: norm scale/bias must have the normalised element count or one element", c->who);
  k->aux[0] = 1, k->aux[1] = op->nopnds > 2 ? 2 : -1;
  k->count = sn, k->count2 = bn;
  k->outer = cg_prod(c->x->dims, 0, ax), k->len = N;
  k->eps = (double)gv_get_float(op, "epsilon", 1e-5f);
  k->kind = op->code == GV_OP_RMS_NORM;
  return 0;
}

/* ---------------------------------------------------------------- dot, conv */

/* dot_general: the lhs's batch, free and contracting dims and the rhs's
 * batch, contracting and free dims (the grouping of ir/eval.c's dot) */
static int fill_dot(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32(c)) return -1;
  const gv_type *l = &op->opnds[0]->type, *r = &op->opnds[1]->type;
  const int64_t *lb, *rb, *lc, *rc;
  int nlb = gv_get_ints(op, "lhs_batch", &lb), nrb = gv_get_ints(op, "rhs_batch", &rb);
  int nlc = gv_get_ints(op, "lhs_contract", &lc), nrc = gv_get_ints(op, "rhs_contract", &rc);
  nlb = nlb < 0 ? 0 : nlb, nrb = nrb < 0 ? 0 : nrb, nlc = nlc < 0 ? 0 : nlc, nrc = nrc < 0 ? 0 : nrc;
  if (nlb != nrb || nlc != nrc) return gv_error_op(c->m, op, "%s: invalid dot dimension numbers", c->who);
  int64_t ls[GV_MAX_RANK], rs[GV_MAX_RANK];
  cg_strides_of(l, ls);
  cg_strides_of(r, rs);
  bool lu[GV_MAX_RANK] = {0}, ru[GV_MAX_RANK] = {0};
  for (int i = 0; i < nlb; i++) {
    int a = gv_norm_axis(lb[i], l->rank), b = gv_norm_axis(rb[i], r->rank);
    if (a < 0 || b < 0 || lu[a] || ru[b] || l->dims[a] != r->dims[b])
      return gv_error_op(c->m, op, "%s: invalid dot batch dims", c->who);
    lu[a] = ru[b] = true;
    k->bg.size[i] = l->dims[a], k->bg.sa[i] = ls[a], k->bg.sb[i] = rs[b];
  }
  k->bg.n = nlb;
  for (int i = 0; i < nlc; i++) {
    int a = gv_norm_axis(lc[i], l->rank), b = gv_norm_axis(rc[i], r->rank);
    if (a < 0 || b < 0 || lu[a] || ru[b] || l->dims[a] != r->dims[b])
      return gv_error_op(c->m, op, "%s: invalid dot contracting dims", c->who);
    lu[a] = ru[b] = true;
    k->kg.size[i] = l->dims[a], k->kg.sa[i] = ls[a], k->kg.sb[i] = rs[b];
  }
  k->kg.n = nlc;
  for (int d = 0; d < l->rank; d++)
    if (!lu[d]) k->mg.size[k->mg.n] = l->dims[d], k->mg.sa[k->mg.n++] = ls[d];
  for (int d = 0; d < r->rank; d++)
    if (!ru[d]) k->ng.size[k->ng.n] = r->dims[d], k->ng.sb[k->ng.n++] = rs[d];
  k->aux[0] = 1;
  return 0;
}

/* The conv descriptor of x, w and y types (strides, pads, dilations, group
 * from op's attributes); grad: the message of the gradients' check. */
static int conv_of(const fill_ctx *c, const gv_type *x, const gv_type *w, const gv_type *y, bool grad, cg_conv *d) {
  const gv_op *op = c->op;
  int R = x->rank, S = R - 2;
  if (R < 3 || w->rank != R || y->rank != R) return gv_error_op(c->m, op, "%s: conv operands must have equal rank >= 3", c->who);
  const int64_t *sv, *pv, *dv;
  int ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv), nd = gv_get_ints(op, "dilations", &dv);
  int64_t G = gv_get_int(op, "group", 1);
  if (!grad && (G < 1 || x->dims[1] != w->dims[1] * G || w->dims[0] % G))
    return gv_error_op(c->m, op, "%s: conv channel counts do not match", c->who);
  if (grad && (G < 1 || x->dims[1] != w->dims[1] * G || w->dims[0] % G || y->dims[1] != w->dims[0] || y->dims[0] != x->dims[0]))
    return gv_error_op(c->m, op, "%s: conv gradient channel counts do not match", c->who);
  d->S = S, d->N = x->dims[0], d->C = x->dims[1], d->M = w->dims[0], d->G = G;
  for (int s = 0; s < S; s++) {
    d->in[s] = x->dims[2 + s], d->k[s] = w->dims[2 + s], d->out[s] = y->dims[2 + s];
    d->stride[s] = ns == S ? sv[s] : 1;
    d->pad[s] = np == 2 * S ? pv[s] : 0;
    d->dil[s] = nd == S ? dv[s] : 1;
  }
  return 0;
}

/* conv: x (src), w (aux[0]), bias (aux[1] or -1) */
static int fill_conv(const fill_ctx *c, cg_kcall *k) {
  if (need_f32(c)) return -1;
  if (conv_of(c, c->x, &c->op->opnds[1]->type, c->o, false, &k->conv)) return -1;
  k->aux[0] = 1, k->aux[1] = c->op->nopnds > 2 ? 2 : -1;
  return 0;
}

/* ---------------------------------------------------------------- training ops (ir/train_ops.c) */

/* gather_grad: dst [outer, len, inner] (f32) = scatter-add of dy (src) at count indices (aux[0]) */
static int fill_gather_grad(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32_but(c, 1)) return -1;
  gv_dtype it = op->opnds[1]->type.dtype;
  if (it != GV_DT_I64 && it != GV_DT_I32)
    return gv_error_op(c->m, op, "%s: gather_grad indices of dtype %s are not supported", c->who, gv_dtype_name(it));
  int ax = (int)gv_get_int(op, "axis", 0), ir = op->opnds[1]->type.rank;
  const gv_type *o = c->o;
  if (ax < 0 || ax >= o->rank || c->x->rank != o->rank + ir - 1)
    return gv_error_op(c->m, op, "%s: gather_grad axis or ranks do not fit", c->who);
  k->aux[0] = 1;
  k->idx_es = it == GV_DT_I64 ? 8 : 4;
  k->count = gv_type_numel(&op->opnds[1]->type);
  k->outer = cg_prod(o->dims, 0, ax), k->len = o->dims[ax], k->inner = cg_prod(o->dims, ax + 1, o->rank);
  return 0;
}

/* slice_grad: dst (zeroed) [base + sum i_d * strides_d] = dy (src, contiguous, dims) */
static int fill_slice_grad(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  const gv_type *x = c->x, *o = c->o;
  int64_t start[GV_MAX_RANK], step[GV_MAX_RANK], count[GV_MAX_RANK], os[GV_MAX_RANK];
  bool aff[GV_MAX_RANK];
  if (gv_slice_window(c->m, (gv_op *)op, o, NULL, start, step, count, aff) < 0) return -1;
  if (x->rank != o->rank) return gv_error_op(c->m, op, "%s: slice_grad dy rank differs from the result's", c->who);
  cg_strides_of(o, os);
  for (int d = 0; d < o->rank; d++) {
    if (count[d] != x->dims[d]) return gv_error_op(c->m, op, "%s: slice_grad dy does not match its window", c->who);
    if (count[d] > 0) k->base += start[d] * os[d];
    k->strides[d] = step[d] * os[d];
  }
  k->es_slot = op->nopnds;
  k->rank = x->rank;
  copy_dims(k->dims, x->dims, x->rank);
  return 0;
}

/* cross_entropy: loss (dst) of count rows of len logits (src) with labels
 * (aux[0]); cross_entropy_grad: dx (dst) from dloss (aux[1]), logits, labels */
static int fill_cross_entropy(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  int g = op->code == GV_OP_CROSS_ENTROPY_GRAD;
  const gv_type *lg = &op->opnds[g]->type, *lb = &op->opnds[g + 1]->type;
  if (need_f32_but(c, g + 1)) return -1;
  if (lb->dtype != GV_DT_I64)
    return gv_error_op(c->m, op, "%s: cross_entropy labels must be i64, got %s", c->who, gv_dtype_name(lb->dtype));
  if (lg->rank < 1) return gv_error_op(c->m, op, "%s: cross_entropy logits must have rank >= 1", c->who);
  k->src = g, k->aux[0] = g + 1, k->aux[1] = g ? 0 : -1;
  k->len = lg->dims[lg->rank - 1];
  k->count = k->len ? gv_type_numel(lg) / k->len : 0;
  k->ignore = gv_get_int(op, "ignore_index", -100);
  return 0;
}

/* conv_grad_input (dy, w -> dx) / conv_grad_weight (x, dy -> dw): the forward conv's descriptor */
static int fill_conv_grad(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32(c)) return -1;
  bool wg = op->code == GV_OP_CONV_GRAD_WEIGHT;
  const gv_type *dy = &op->opnds[wg ? 1 : 0]->type, *other = &op->opnds[wg ? 0 : 1]->type;
  if (conv_of(c, wg ? other : c->o, wg ? c->o : other, dy, true, &k->conv)) return -1;
  k->aux[0] = 1;
  return 0;
}

/* gather_nd / scatter_nd: count index tuples (aux[0]) of rank coordinates
 * into dims[0..rank) of data (src), rows of inner elements; scatter_nd's
 * updates are aux[1]; kind: the reduction (gv_scatter_reduction: 0 none,
 * 1 add, 2 mul, 3 max, 4 min; f32 only but none). */
static int fill_nd(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  const gv_type *it = &op->opnds[1]->type;
  if (it->dtype != GV_DT_I64 && it->dtype != GV_DT_I32)
    return gv_error_op(c->m, op, "%s: %s indices of dtype %s are not supported", c->who, gv_ops[op->code].name,
                       gv_dtype_name(it->dtype));
  int64_t n = it->rank >= 1 ? it->dims[it->rank - 1] : 0;
  if (n < 1 || n > c->x->rank) return gv_error_op(c->m, op, "%s: %s index tuples do not fit the data", c->who, gv_ops[op->code].name);
  k->rank = (int)n;
  copy_dims(k->dims, c->x->dims, k->rank);
  k->aux[0] = 1;
  k->idx_es = it->dtype == GV_DT_I64 ? 8 : 4;
  k->count = gv_type_numel(it) / n;
  k->inner = cg_prod(c->x->dims, k->rank, c->x->rank);
  if (op->code == GV_OP_SCATTER_ND) {
    k->aux[1] = 2;
    k->kind = gv_scatter_reduction(op);
    if (k->kind && need_f32_but(c, 1)) return -1;
  }
  return 0;
}

/* gather_elements / scatter_elements: indices (aux[0]) over dims[0..rank),
 * data (src) at strides with the axis coordinate replaced by the index
 * (len: data's axis size); scatter_elements' updates are aux[1], kind its
 * reduction as fill_nd's. */
static int fill_elements(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  const gv_type *it = &op->opnds[1]->type;
  if (it->dtype != GV_DT_I64 && it->dtype != GV_DT_I32)
    return gv_error_op(c->m, op, "%s: %s indices of dtype %s are not supported", c->who, gv_ops[op->code].name,
                       gv_dtype_name(it->dtype));
  int ax = gv_norm_axis(gv_get_int(op, "axis", 0), c->x->rank);
  if (ax < 0 || it->rank != c->x->rank)
    return gv_error_op(c->m, op, "%s: %s axis or ranks do not fit", c->who, gv_ops[op->code].name);
  for (int d = 0; d < it->rank; d++)
    if (d != ax && it->dims[d] > c->x->dims[d])
      return gv_error_op(c->m, op, "%s: %s indices are larger than data on dim %d", c->who, gv_ops[op->code].name, d);
  k->rank = it->rank;
  copy_dims(k->dims, it->dims, it->rank);
  copy_dims(k->strides, c->xs, it->rank);
  k->axis = ax;
  k->len = c->x->dims[ax];
  k->aux[0] = 1;
  k->idx_es = it->dtype == GV_DT_I64 ? 8 : 4;
  k->count = gv_type_numel(it);
  if (op->code == GV_OP_SCATTER_ELEMENTS) {
    k->aux[1] = 2;
    k->kind = gv_scatter_reduction(op);
    if (k->kind && need_f32_but(c, 1)) return -1;
  }
  return 0;
}

/* pool (x -> y) / pool_grad (x, dy (aux[0]) -> dx): a conv descriptor with
 * M = G = C and the window from the attrs; dims[0..S) the end pads (avg with
 * count_include_pad counts the padded extent), kind 0 max 1 avg, kind2
 * count_include_pad. The output sizes are y's (dy's), ceil_mode included. */
static int fill_pool(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32(c)) return -1;
  bool grad = op->code == GV_OP_POOL_GRAD;
  const gv_type *x = c->x, *y = grad ? &op->opnds[1]->type : c->o;
  int R = x->rank, S = R - 2;
  const int64_t *kv, *sv, *pv, *dv;
  int nk = gv_get_ints(op, "kernel", &kv), ns = gv_get_ints(op, "strides", &sv), np = gv_get_ints(op, "pads", &pv),
      nd = gv_get_ints(op, "dilations", &dv);
  if (R < 3 || y->rank != R || nk != S || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
    return gv_error_op(c->m, op, "%s: pool operands do not fit (rank %d, kernel of %d dims)", c->who, R, nk);
  cg_conv *d = &k->conv;
  d->S = S, d->N = x->dims[0], d->C = d->M = d->G = x->dims[1];
  for (int s = 0; s < S; s++) {
    d->in[s] = x->dims[2 + s], d->k[s] = kv[s], d->out[s] = y->dims[2 + s];
    d->stride[s] = ns == S ? sv[s] : 1;
    d->pad[s] = np == 2 * S ? pv[s] : 0;
    d->dil[s] = nd == S ? dv[s] : 1;
    k->dims[s] = np == 2 * S ? pv[S + s] : 0;
  }
  k->rank = S;
  k->kind = strcmp(gv_get_str(op, "mode", ""), "max") != 0;
  k->kind2 = gv_get_int(op, "count_include_pad", 0) != 0;
  k->aux[0] = grad ? 1 : -1;
  return 0;
}

/* topk (x -> values (dst), indices (aux[0], i64)): rows of outer x len x
 * inner (len: the axis), count = k, kind = largest; f32 values. */
static int fill_topk(const fill_ctx *c, cg_kcall *k) {
  const gv_op *op = c->op;
  if (need_f32(c)) return -1;
  int ax = gv_norm_axis(gv_get_int(op, "axis", -1), c->x->rank);
  int64_t kk = gv_get_int(op, "k", -1);
  if (ax < 0 || kk < 0 || kk > c->x->dims[ax] || c->o->dims[ax] != kk || op->res[1]->type.dtype != GV_DT_I64)
    return gv_error_op(c->m, op, "%s: topk operands do not fit", c->who);
  k->outer = cg_prod(c->x->dims, 0, ax);
  k->len = c->x->dims[ax];
  k->inner = cg_prod(c->x->dims, ax + 1, c->x->rank);
  k->count = kk;
  k->kind = gv_get_int(op, "largest", 1) != 0;
  k->aux[0] = op->nopnds + 1;
  return 0;
}

/* ---------------------------------------------------------------- the table */

static const struct {
  gv_opcode op;
  cg_kernel kernel;
  int (*fill)(const fill_ctx *c, cg_kcall *k);
} kcalls[] = {
    {GV_OP_TRANSPOSE, CG_K_COPY_STRIDED, fill_transpose},
    {GV_OP_EXPAND, CG_K_COPY_STRIDED, fill_expand},
    {GV_OP_SLICE, CG_K_COPY_STRIDED, fill_slice},
    {GV_OP_TILE, CG_K_TILE, fill_tile},
    {GV_OP_CONCAT, CG_K_CONCAT, fill_concat_split},
    {GV_OP_SPLIT, CG_K_SPLIT, fill_concat_split},
    {GV_OP_GATHER, CG_K_GATHER, fill_gather},
    {GV_OP_TRILU, CG_K_TRILU, fill_trilu},
    {GV_OP_CUMSUM, CG_K_CUMSUM, fill_cumsum},
    {GV_OP_REDUCE_SUM, CG_K_REDUCE, fill_reduce},
    {GV_OP_REDUCE_MEAN, CG_K_REDUCE, fill_reduce},
    {GV_OP_REDUCE_MAX, CG_K_REDUCE, fill_reduce},
    {GV_OP_REDUCE_MIN, CG_K_REDUCE, fill_reduce},
    {GV_OP_SOFTMAX, CG_K_SOFTMAX, fill_softmax},
    {GV_OP_LOG_SOFTMAX, CG_K_SOFTMAX, fill_softmax},
    {GV_OP_LAYER_NORM, CG_K_NORM, fill_norm},
    {GV_OP_RMS_NORM, CG_K_NORM, fill_norm},
    {GV_OP_DOT, CG_K_DOT, fill_dot},
    {GV_OP_CONV, CG_K_CONV, fill_conv},
    {GV_OP_GATHER_GRAD, CG_K_GATHER_GRAD, fill_gather_grad},
    {GV_OP_SLICE_GRAD, CG_K_SCATTER_STRIDED, fill_slice_grad},
    {GV_OP_CROSS_ENTROPY, CG_K_CROSS_ENTROPY, fill_cross_entropy},
    {GV_OP_CROSS_ENTROPY_GRAD, CG_K_CROSS_ENTROPY_GRAD, fill_cross_entropy},
    {GV_OP_CONV_GRAD_INPUT, CG_K_CONV_GRAD_INPUT, fill_conv_grad},
    {GV_OP_CONV_GRAD_WEIGHT, CG_K_CONV_GRAD_WEIGHT, fill_conv_grad},
    {GV_OP_GATHER_ND, CG_K_GATHER_ND, fill_nd},
    {GV_OP_SCATTER_ND, CG_K_SCATTER_ND, fill_nd},
    {GV_OP_GATHER_ELEMENTS, CG_K_GATHER_ELEMENTS, fill_elements},
    {GV_OP_SCATTER_ELEMENTS, CG_K_SCATTER_ELEMENTS, fill_elements},
    {GV_OP_POOL, CG_K_POOL, fill_pool},
    {GV_OP_POOL_GRAD, CG_K_POOL_GRAD, fill_pool},
    {GV_OP_TOPK, CG_K_TOPK, fill_topk},
    {GV_OP_DROPOUT, CG_K_DROPOUT, fill_dropout},
};

static int row_of(gv_opcode c) {
  for (int i = 0; i < (int)(sizeof kcalls / sizeof *kcalls); i++)
    if (kcalls[i].op == c) return i;
  return -1;
}

cg_kernel cg_kcall_kernel(gv_opcode c) {
  int r = row_of(c);
  return r < 0 ? CG_K_NONE : kcalls[r].kernel;
}

int cg_kcall_fill(gv_module *m, const gv_op *op, const char *who, cg_kcall *k) {
  int r = row_of(op->code);
  if (r < 0) return gv_error_op(m, op, "%s: galv.%s has no kernel call", who, gv_ops[op->code].name);
  fill_ctx c = {m, op, who, &op->opnds[0]->type, &op->res[0]->type, {0}};
  cg_strides_of(c.x, c.xs);
  *k = (cg_kcall){.kernel = kcalls[r].kernel, .src = 0, .dst = op->nopnds, .aux = {-1, -1}, .es_slot = 0, .kdiag_slot = -1};
  return kcalls[r].fill(&c, k);
}

const gv_value *cg_kcall_value(const gv_op *op, int s) { return s < op->nopnds ? op->opnds[s] : op->res[s - op->nopnds]; }

bool cg_kcall_moves(const cg_kcall *k) {
  switch (k->kernel) {
  case CG_K_COPY_STRIDED: case CG_K_TILE: case CG_K_CONCAT: case CG_K_SPLIT: case CG_K_GATHER: case CG_K_TRILU:
  case CG_K_SCATTER_STRIDED: case CG_K_GATHER_ND: case CG_K_GATHER_ELEMENTS:
    return true;
  case CG_K_SCATTER_ND: case CG_K_SCATTER_ELEMENTS: return !k->kind; /* add: computes */
  default: return false;
  }
}

int64_t cg_kcall_part_elems(const gv_op *op, const cg_kcall *k, int i) {
  return cg_kcall_value(op, k->part0 + i)->type.dims[k->axis] * k->inner;
}

/* ---------------------------------------------------------------- printing */

void cg_dims_lit(FILE *f, int rank, const int64_t *d) {
  fputc('{', f);
  for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (!rank) fputc('0', f);
  fputc('}', f);
}

void cg_conv_lit(FILE *f, const cg_conv *c) {
  fprintf(f, "  { static const galv_conv_desc d = {%d, %lld, %lld, %lld, %lld, ", c->S, (long long)c->N, (long long)c->C,
          (long long)c->M, (long long)c->G);
  cg_dims_lit(f, c->S, c->in), fputs(", ", f), cg_dims_lit(f, c->S, c->k), fputs(", ", f);
  cg_dims_lit(f, c->S, c->out), fputs(", ", f), cg_dims_lit(f, c->S, c->stride), fputs(", ", f);
  cg_dims_lit(f, c->S, c->pad), fputs(", ", f), cg_dims_lit(f, c->S, c->dil);
  fputs("};\n", f);
}

void cg_dropout_lit(FILE *f, const cg_kcall *k) {
  const gv_dropout *d = &k->dro;
  fprintf(f, "  { static const galv_dropout_desc d = {%d, ", k->rank);
  cg_dims_lit(f, k->rank, k->dims);
  fprintf(f, ", %lluull, %lluull, %lluu, %af, {%lld, %lld, %lld}, %lld};\n", (unsigned long long)d->seed,
          (unsigned long long)d->id, (unsigned long long)d->thr, d->scale, (long long)d->acc[0], (long long)d->acc[1],
          (long long)d->acc[2], (long long)d->rows);
}

/* slot s's pointer: p[s], or the target's expression (a slot past p; an offset) */
static void slot_ptr(const gv_op *op, int s, int64_t byte_off, const cg_kcall_target *t, char p[][64], int np, char *buf,
                     size_t n) {
  if (s < np && !byte_off) snprintf(buf, n, "%s", p[s]);
  else t->ptr(t->ctx, cg_kcall_value(op, s), byte_off, buf, n);
}

int cg_kcall_print_move(FILE *f, const gv_op *op, const cg_kcall *k, const cg_kcall_target *t, char p[][64], int np) {
  size_t es = t->es(t->ctx, cg_kcall_value(op, k->es_slot));
  char src[64], dst[64];
  switch (k->kernel) {
  case CG_K_NONE: return 0;
  case CG_K_COPY_STRIDED:
  case CG_K_TILE: {
    bool tile = k->kernel == CG_K_TILE;
    slot_ptr(op, k->src, k->base * (int64_t)es, t, p, np, src, sizeof src);
    fprintf(f, "  { static const int64_t %s[] = ", tile ? "di" : "d"), cg_dims_lit(f, k->rank, k->dims);
    fprintf(f, ", %s[] = ", tile ? "dout" : "s"), cg_dims_lit(f, k->rank, tile ? k->dims2 : k->strides);
    fprintf(f, ";\n    %s%s(%s, %s, %zu, %d, %s); }\n", t->prefix, tile ? "tile" : "copy_strided", p[k->dst], src, es,
            k->rank, tile ? "di, dout" : "d, s");
    return 0;
  }
  case CG_K_CONCAT:
  case CG_K_SPLIT: {
    bool cat = k->kernel == CG_K_CONCAT;
    fprintf(f, "  { %svoid *const v[] = {", cat ? "const " : "");
    for (int i = 0; i < k->nparts; i++) {
      slot_ptr(op, k->part0 + i, 0, t, p, np, src, sizeof src);
      fprintf(f, "%s%s", i ? ", " : "", src);
    }
    fprintf(f, "};\n    static const int64_t c[] = {");
    for (int i = 0; i < k->nparts; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)(cg_kcall_part_elems(op, k, i) * (int64_t)es));
    t->ptr(t->ctx, cg_kcall_value(op, cat ? k->dst : k->src), 0, dst, sizeof dst);
    if (cat) fprintf(f, "};\n    %sconcat(%s, v, c, %d, %lld); }\n", t->prefix, dst, k->nparts, (long long)k->outer);
    else fprintf(f, "};\n    %ssplit(v, %s, c, %d, %lld); }\n", t->prefix, dst, k->nparts, (long long)k->outer);
    return 0;
  }
  default: return 1;
  }
}

/* ---------------------------------------------------------------- fused attention (training) */

int cg_fattn_call(FILE *f, gv_module *m, const gv_op *op, const gv_attn_geo *gp, const char *fwd, const char *bwd, const char *ty,
                  const char *const *fdt, const char *tail, char p[][64]) {
  const gv_attn_geo g = *gp;
  int f0 = g.fn0, nfn = g.nfn;
  gv_dropout dr = {0};
  if (g.drop && gv_dropout_params(m, op, &dr)) return -1;
  fprintf(f, "  { static const galv_fattn_desc d = {%d, {", g.nb);
  for (int x = 0; x < 4; x++) fprintf(f, "%s%lld", x ? ", " : "", (long long)(x < g.nb ? g.bd[x] : 1));
  fprintf(f, "}, %lld, %lld, %lld, %lld, %d, %d, %d, %d, {", (long long)g.Sq, (long long)g.Sk, (long long)g.D, (long long)g.Dv,
          g.kt, g.vt, g.nst, nfn);
  for (int t = 0; t < g.nst; t++) {
    const gv_attn_step *x = &g.st[t];
    char lit[3][32]; /* a literal as C: an infinite one (a -inf mask constant) as INFINITY, NaN as NAN (math.h) */
    for (int k = 0; k < 3; k++)
      if (isnan(x->lit[k])) snprintf(lit[k], sizeof lit[k], "NAN");
      else if (isinf(x->lit[k])) snprintf(lit[k], sizeof lit[k], "%sINFINITY", x->lit[k] < 0 ? "-" : "");
      else snprintf(lit[k], sizeof lit[k], "%.9g", (double)x->lit[k]);
    fprintf(f, "%s{%d, %d, {%d, %d, %d}, {%s, %s, %s}}", t ? ", " : "", x->kind, x->nargs, x->arg[0], x->arg[1], x->arg[2],
            lit[0], lit[1], lit[2]);
  }
  if (!g.nst) fprintf(f, "{0}");
  fprintf(f, "}, {");
  for (int i = 0; i < nfn; i++) {
    const gv_type *t = &op->opnds[f0 + i]->type;
    int64_t st[6] = {0}, s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
      if (t->dims[d] != 1) st[g.nb + 2 - t->rank + d] = s;
      s *= t->dims[d];
    }
    fprintf(f, "%s{%lld, %lld, %lld, %lld, %lld, %lld}", i ? ", " : "", (long long)st[0], (long long)st[1], (long long)st[2],
            (long long)st[3], (long long)st[4], (long long)st[5]);
  }
  if (!nfn) fprintf(f, "{0}");
  fprintf(f, "}, {");
  for (int i = 0; i < nfn; i++) fprintf(f, "%s%s", i ? ", " : "", fdt[i]);
  if (!nfn) fprintf(f, "0");
  fprintf(f, "}");
  if (g.drop) { /* the mask of galv.dropout over the local scores [batch..., Sq, Sk] (runtime/galv_rng.h) */
    int64_t sd[6];
    for (int x = 0; x < g.nb; x++) sd[x] = g.bd[x];
    sd[g.nb] = g.Sq, sd[g.nb + 1] = g.Sk;
    fprintf(f, ", 1, {%d, ", g.nb + 2);
    cg_dims_lit(f, g.nb + 2, sd);
    fprintf(f, ", %lluull, %lluull, %lluu, %af, {%lld, %lld, %lld}, %lld}", (unsigned long long)dr.seed, (unsigned long long)dr.id,
            (unsigned long long)dr.thr, dr.scale, (long long)dr.acc[0], (long long)dr.acc[1], (long long)dr.acc[2], (long long)dr.rows);
  } else
    fprintf(f, ", 0, {0, {0}, 0ull, 0ull, 0u, 0.0f, {0, 0, 0}, 0}");
  fprintf(f, "};\n    const void *const fn[] = {");
  for (int i = 0; i < nfn; i++) fprintf(f, "%s%s", i ? ", " : "", p[f0 + i]);
  if (!nfn) fprintf(f, "0");
  fprintf(f, "};\n");
  char rng[96]; /* the dropout's run-time part: the offsets (or 0), the step, the pipeline microbatch */
  snprintf(rng, sizeof rng, "(const int64_t *)%s, galv_rt_step, galv_rt_mb", g.off >= 0 ? p[g.off] : "0");
  if (op->code == GV_OP_ATTENTION)
    fprintf(f, "    %s(&d, (const %s *)%s, (const %s *)%s, (const %s *)%s, fn, %s, (%s *)%s, (float *)%s%s); }\n", fwd, ty, p[0], ty,
            p[1], ty, p[2], rng, ty, p[op->nopnds], p[op->nopnds + 1], tail);
  else
    fprintf(f,
            "    %s(&d, (const %s *)%s, (const %s *)%s, (const %s *)%s, (const %s *)%s, "
            "(const %s *)%s, (const float *)%s, fn, %s, (%s *)%s, (%s *)%s, (%s *)%s%s); }\n",
            bwd, ty, p[0], ty, p[1], ty, p[2], ty, p[3], ty, p[4], p[5], rng, ty, p[op->nopnds], ty, p[op->nopnds + 1], ty,
            p[op->nopnds + 2], tail);
  return 0;
}
