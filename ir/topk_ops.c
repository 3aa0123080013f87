/* topk_ops.c — shape rule and reference evaluator of galv.topk (ir/ops.def,
 * docs/ops.md): ONNX TopK with k as an attribute (the frontend reads the
 * constant input). Kept apart from infer.c / eval.c because the one
 * ordering rule lives here and the runtimes' kernels (runtime/kernels.c,
 * runtime/cuda/kernels.cu) must order exactly the same way:
 *
 *   a before b  iff  a's value is larger (smallest: smaller), or the values
 *   are equal and a's index is lower.
 *
 * with NaN ranking above every number (as torch.topk). That is ONNX's tie
 * rule made a total order, so the k selected and their order are unique and
 * every target agrees bit for bit. sorted = 0 lets ONNX return
 * them in any order; we return them sorted all the same. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_rules.h"

typedef struct {
  char s[160];
} tbuf;

/* Attributes of a topk for an operand of rank r: the normalised axis and k. */
static int topk_attrs(gv_module *m, const gv_op *op, int r, int *axis, int64_t *k) {
  int64_t a = gv_get_int(op, "axis", -1);
  *axis = gv_norm_axis(a, r);
  if (*axis < 0) return gv_error_op(m, op, "shape: topk axis %lld out of range for rank %d", (long long)a, r);
  const gv_attr *ka = gv_get_attr(op, "k");
  if (!ka || ka->kind != GV_ATTR_INT) return gv_error_op(m, op, "shape: topk needs an integer attribute k");
  *k = ka->u.i;
  if (*k < 0) return gv_error_op(m, op, "shape: topk k %lld is negative", (long long)*k);
  return 0;
}

int gv_infer_topk(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const gv_type *x = &op->opnds[0]->type;
  if (x->rank < 0) {
    op->res[0]->type = gv_type_unranked(x->dtype);
    op->res[1]->type = gv_type_unranked(GV_DT_I64);
    return 0;
  }
  if (x->rank < 1) return gv_error_op(m, op, "shape: topk needs an operand of rank >= 1");
  int ax;
  int64_t k;
  if (topk_attrs(m, op, x->rank, &ax, &k)) return -1;
  if (x->dims[ax] >= 0 && k > x->dims[ax]) {
    tbuf b;
    gv_type_str(x, b.s, sizeof b.s);
    return gv_error_op(m, op, "shape: topk k %lld exceeds dim %d of %s", (long long)k, ax, b.s);
  }
  gv_type t = *x;
  t.dims[ax] = k;
  op->res[0]->type = t;
  t.dtype = GV_DT_I64;
  op->res[1]->type = t;
  return 0;
}

typedef struct {
  double v;
  int64_t i;
} entry;

/* a ranks above b (NaN above every number, NaNs equal) */
static bool gt(double a, double b) { return isnan(a) ? !isnan(b) : a > b; }

static int by_index(const entry *a, const entry *b) { return a->i < b->i ? -1 : a->i > b->i; }

static int before_largest(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  return gt(a->v, b->v) ? -1 : gt(b->v, a->v) ? 1 : by_index(a, b);
}

static int before_smallest(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  return gt(b->v, a->v) ? -1 : gt(a->v, b->v) ? 1 : by_index(a, b);
}

/* Each row (outer x inner positions, len along the axis) sorted whole:
 * plain and exact, which is what a reference is for. */
int gv_eval_topk(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  const gv_type *x = &in[0]->type;
  int ax;
  int64_t k;
  if (x->rank < 1 || topk_attrs(m, op, x->rank, &ax, &k)) return -1;
  if (k > x->dims[ax]) return gv_error_op(m, op, "cannot evaluate: topk k %lld exceeds the axis size", (long long)k);
  const gv_type *vt = &op->res[0]->type, *it = &op->res[1]->type;
  if (!gv_type_is_static(vt) || !gv_type_is_static(it) || vt->dims[ax] != k)
    return gv_error_op(m, op, "cannot evaluate: topk result types are not static");
  gv_tensor *vo = gv_tensor_new(m->arena, *vt), *io = gv_tensor_new(m->arena, *it);
  int64_t outer = 1, inner = 1, len = x->dims[ax];
  for (int d = 0; d < ax; d++) outer *= x->dims[d];
  for (int d = ax + 1; d < x->rank; d++) inner *= x->dims[d];
  entry *row = malloc((size_t)(len ? len : 1) * sizeof *row);
  if (!row) return gv_error_op(m, op, "cannot evaluate: out of memory");
  int (*cmp)(const void *, const void *) = gv_get_int(op, "largest", 1) ? before_largest : before_smallest;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      for (int64_t i = 0; i < len; i++) row[i] = (entry){gv_tensor_get_f(in[0], (o * len + i) * inner + j), i};
      qsort(row, (size_t)len, sizeof *row, cmp);
      for (int64_t i = 0; i < k; i++) {
        gv_tensor_set_f(vo, (o * k + i) * inner + j, row[i].v);
        ((int64_t *)io->data)[(o * k + i) * inner + j] = row[i].i;
      }
    }
  free(row);
  out[0] = vo, out[1] = io;
  return 0;
}
