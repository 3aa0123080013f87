/* shard_rules.c — the sharding column of the op table (ir/ops.def): each
 * op's dimensions as factors (gv_shard_rule in ir/ir.h, as Shardy's
 * OpShardingRule). Propagation, local shapes and the collectives a
 * consumer needs are all derived from these mappings (passes/
 * propagate_sharding.c, passes/spmd_partition.c); no pass knows an op.
 *
 * A rule needs static types; an op whose types are not static, or whose
 * operand or result count exceeds GV_SHARD_MAX_VALUES, has no rule (1). */
#include "ir.h"
#include "shape_rules.h"

#include <string.h>

static bool stat_ok(const gv_op *op) {
  if (op->nopnds > GV_SHARD_MAX_VALUES || op->nres > GV_SHARD_MAX_VALUES) return false;
  for (int i = 0; i < op->nopnds; i++)
    if (!op->opnds[i] || !gv_type_is_static(&op->opnds[i]->type)) return false;
  for (int i = 0; i < op->nres; i++)
    if (!gv_type_is_static(&op->res[i]->type)) return false;
  return true;
}

static void init(const gv_op *op, gv_shard_rule *r) {
  memset(r, 0, sizeof *r);
  r->nvals[0] = op->nopnds;
  r->nvals[1] = op->nres;
  for (int i = 0; i < op->nopnds; i++) r->rank[0][i] = op->opnds[i]->type.rank;
  for (int i = 0; i < op->nres; i++) r->rank[1][i] = op->res[i]->type.rank;
}

static int factor(gv_shard_rule *r, int64_t size, int kind) {
  if (r->nfactors >= GV_MAX_FACTORS) return -1;
  r->size[r->nfactors] = size;
  r->kind[r->nfactors] = (uint8_t)kind;
  return r->nfactors++;
}

/* Dim d of value i on side (0 operand, 1 result) is made of factor f (appended, minor last). */
static void map(gv_shard_rule *r, int side, int i, int d, int f) {
  if (f < 0 || r->nf[side][i][d] >= GV_DIM_FACTORS) return;
  r->f[side][i][d][r->nf[side][i][d]++] = (int8_t)f;
}

int gv_shard_none(const gv_op *op, gv_shard_rule *r) {
  (void)op;
  (void)r;
  return 1;
}

/* Numpy broadcasting: result dim d is one factor; operand dims aligned from
 * the right carry it unless they are a broadcast size 1. */
int gv_shard_elementwise(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nres != 1) return 1;
  init(op, r);
  const gv_type *t = &op->res[0]->type;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] == 1) continue;
    int f = factor(r, t->dims[d], GV_FACTOR_PASS);
    map(r, 1, 0, d, f);
    for (int i = 0; i < op->nopnds; i++) {
      const gv_type *x = &op->opnds[i]->type;
      int od = d - (t->rank - x->rank);
      if (od >= 0 && x->dims[od] == t->dims[d]) map(r, 0, i, od, f);
    }
  }
  r->linear = op->code == GV_OP_ADD || op->code == GV_OP_SUB || op->code == GV_OP_NEG;
  return 0;
}

/* dropout: x's dims pass through to the result (any sharding of x, the
 * mask follows the global coordinates); the offsets operand replicated. */
int gv_shard_dropout(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nres != 1) return 1;
  init(op, r);
  const gv_type *t = &op->res[0]->type;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] == 1) continue;
    int f = factor(r, t->dims[d], GV_FACTOR_PASS);
    map(r, 1, 0, d, f);
    map(r, 0, 0, d, f);
  }
  return 0;
}

/* Reshape and the other views: dims grouped by equal running products; in a
 * group where one side is a single dim, that dim is made of the other
 * side's dims as factors (major first); groups with several dims on both
 * sides, and size-1 dims, get no factor (unsharded). */
int gv_shard_reshape(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nres != 1) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type, *y = &op->res[0]->type;
  int i = 0, j = 0;
  while (i < x->rank || j < y->rank) {
    /* skip size-1 dims */
    if (i < x->rank && x->dims[i] == 1) { i++; continue; }
    if (j < y->rank && y->dims[j] == 1) { j++; continue; }
    if (i >= x->rank || j >= y->rank) break;
    int i0 = i, j0 = j;
    int64_t px = x->dims[i++], py = y->dims[j++];
    while (px != py) {
      if (px < py) {
        if (i >= x->rank) return 0;
        px *= x->dims[i++];
      } else {
        if (j >= y->rank) return 0;
        py *= y->dims[j++];
      }
    }
    if (i - i0 == 1) { /* one input dim = the output dims i0.. as factors */
      for (int k = j0; k < j; k++) {
        if (y->dims[k] == 1) continue;
        int f = factor(r, y->dims[k], GV_FACTOR_PASS);
        map(r, 1, 0, k, f);
        map(r, 0, 0, i0, f);
      }
    } else if (j - j0 == 1) {
      for (int k = i0; k < i; k++) {
        if (x->dims[k] == 1) continue;
        int f = factor(r, x->dims[k], GV_FACTOR_PASS);
        map(r, 0, 0, k, f);
        map(r, 1, 0, j0, f);
      }
    }
  }
  r->linear = true;
  return 0;
}

int gv_shard_transpose(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  const int64_t *perm;
  int np = gv_get_ints(op, "perm", &perm);
  for (int d = 0; d < x->rank; d++) {
    int src = np == x->rank ? (int)perm[d] : x->rank - 1 - d;
    if (src < 0 || src >= x->rank) return 1;
    if (x->dims[src] == 1) continue;
    int f = factor(r, x->dims[src], GV_FACTOR_PASS);
    map(r, 1, 0, d, f);
    map(r, 0, 0, src, f);
  }
  r->linear = true;
  return 0;
}

/* Same-shape ops along one axis (softmax, log_softmax, cumsum): that axis unsharded. */
int gv_shard_axis(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 1) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  int64_t a = gv_get_int(op, "axis", op->code == GV_OP_CUMSUM ? 0 : -1);
  int ax = (int)(a < 0 ? a + x->rank : a);
  for (int d = 0; d < x->rank; d++) {
    if (d == ax || x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

/* topk: every dim but the axis passes to both results (values, indices);
 * the axis stays unsharded: a top-k over a split axis would need each
 * shard's top-k merged (a gather of k per shard and a second selection),
 * which is no dimension mapping, so the planner gathers that axis first. */
int gv_shard_topk(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 1 || op->nres != 2) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  int64_t a = gv_get_int(op, "axis", -1);
  int ax = (int)(a < 0 ? a + x->rank : a);
  for (int d = 0; d < x->rank; d++) {
    if (d == ax || x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, d, f);
    map(r, 1, 1, d, f);
  }
  return 0;
}

/* gather_elements(data, indices) -> indices-shaped; scatter_elements(data,
 * indices, updates) -> data-shaped, updates indices-shaped. Every dim but
 * the axis is one factor of data, indices, updates and result, where the
 * index tensor is as large as data on that dim (ONNX lets it be smaller:
 * then a block of data and a block of indices would not line up, and the
 * dim stays whole everywhere). The axis stays whole: an index addresses any
 * position along it. */
int gv_shard_elements(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds < 2 || op->nres != 1) return 1;
  const gv_type *x = &op->opnds[0]->type, *ix = &op->opnds[1]->type;
  if (ix->rank != x->rank || (op->nopnds > 2 && op->opnds[2]->type.rank != ix->rank)) return 1;
  init(op, r);
  int ax = gv_norm_axis(gv_get_int(op, "axis", 0), x->rank);
  if (ax < 0) return 1;
  for (int d = 0; d < x->rank; d++) {
    if (d == ax || x->dims[d] == 1 || ix->dims[d] != x->dims[d]) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    for (int i = 0; i < op->nopnds; i++) map(r, 0, i, d, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

/* gather_nd(data, indices [..., k]) -> indices.dims[:-1] + data.dims[k:]:
 * the index dims but the last pass to the result's leading dims, data's
 * dims past the index depth to its trailing dims. The k indexed dims of
 * data and the tuple dim stay whole (an index tuple addresses any row). */
int gv_shard_gather_nd(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nres != 1) return 1;
  const gv_type *x = &op->opnds[0]->type, *ix = &op->opnds[1]->type, *y = &op->res[0]->type;
  int k = ix->rank >= 1 ? (int)ix->dims[ix->rank - 1] : -1, lead = ix->rank - 1;
  if (k < 1 || k > x->rank || y->rank != lead + x->rank - k) return 1;
  init(op, r);
  for (int d = 0; d < lead; d++) {
    if (ix->dims[d] == 1) continue;
    int f = factor(r, ix->dims[d], GV_FACTOR_PASS);
    map(r, 0, 1, d, f);
    map(r, 1, 0, d, f);
  }
  for (int d = k; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, lead + d - k, f);
  }
  return 0;
}

/* scatter_nd(data, indices [..., k], updates [indices.dims[:-1] +
 * data.dims[k:]]) -> data-shaped: data's dims past the index depth are one
 * factor with the updates' trailing dims and the result's. The k indexed
 * dims stay whole (a target row may be anywhere in them), and so do the
 * index and update dims that enumerate the tuples: every rank must write
 * every update into its copy (split, each rank would scatter only its share
 * of the rows, and no collective of the result could merge a replacement). */
int gv_shard_scatter_nd(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 3 || op->nres != 1) return 1;
  const gv_type *x = &op->opnds[0]->type, *ix = &op->opnds[1]->type, *u = &op->opnds[2]->type;
  int k = ix->rank >= 1 ? (int)ix->dims[ix->rank - 1] : -1, lead = ix->rank - 1;
  if (k < 1 || k > x->rank || u->rank != lead + x->rank - k) return 1;
  init(op, r);
  for (int d = k; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 0, 2, lead + d - k, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

/* layer_norm / rms_norm: dims before axis pass; the normalised dims and the
 * scale / bias stay unsharded. */
int gv_shard_norm(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  int64_t a = gv_get_int(op, "axis", -1);
  int ax = (int)(a < 0 ? a + x->rank : a);
  for (int d = 0; d < ax && d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

/* Last two dims unsharded (trilu). */
int gv_shard_trilu(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  for (int d = 0; d + 2 < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

/* Dims that keep their size pass (tile with repeat 1, slice off its axes,
 * concat and split off their axis); the others stay unsharded. */
static int same_size_dims(const gv_op *op, gv_shard_rule *r, const bool *skip) {
  init(op, r);
  const gv_type *t = &op->res[0]->type;
  for (int d = 0; d < t->rank; d++) {
    if (skip[d] || t->dims[d] == 1) continue;
    int f = factor(r, t->dims[d], GV_FACTOR_PASS);
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]->type.rank == t->rank && op->res[i]->type.dims[d] == t->dims[d]) map(r, 1, i, d, f);
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i]->type.rank == t->rank && op->opnds[i]->type.dims[d] == t->dims[d]) map(r, 0, i, d, f);
  }
  return 0;
}

int gv_shard_slice(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 1) return 1; /* dynamic form: no rule */
  bool skip[GV_MAX_RANK] = {0};
  int rank = op->opnds[0]->type.rank;
  const int64_t *axes, *starts;
  int na = gv_get_ints(op, "axes", &axes), ns = gv_get_ints(op, "starts", &starts);
  if (na < 0)
    for (int k = 0; k < ns && k < rank; k++) skip[k] = true;
  for (int k = 0; k < na; k++) {
    int d = (int)(axes[k] < 0 ? axes[k] + rank : axes[k]);
    if (d >= 0 && d < rank) skip[d] = true;
  }
  return same_size_dims(op, r, skip);
}

/* slice_grad(dy) {starts, ends, axes, steps, shape}: the slice's rule read
 * backwards. A dim the window leaves whole is the same dim of dy and of the
 * result, so it passes (a data-parallel batch stays split: the rotary
 * embedding's slices of q and k, whose gradients were gathered over the
 * batch before); a sliced dim stays whole. spmd-partition sets the local
 * result's `shape`. */
int gv_shard_slice_grad(const gv_op *op, gv_shard_rule *r) { return gv_shard_slice(op, r); }

static int axis_attr_rule(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  bool skip[GV_MAX_RANK] = {0};
  int rank = op->res[0]->type.rank;
  int64_t a = gv_get_int(op, "axis", 0);
  int ax = (int)(a < 0 ? a + rank : a);
  if (ax >= 0 && ax < rank) skip[ax] = true;
  return same_size_dims(op, r, skip);
}

int gv_shard_concat(const gv_op *op, gv_shard_rule *r) { return axis_attr_rule(op, r); }
int gv_shard_split(const gv_op *op, gv_shard_rule *r) { return axis_attr_rule(op, r); }

int gv_shard_tile(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 1) return 1;
  bool skip[GV_MAX_RANK] = {0};
  const gv_type *x = &op->opnds[0]->type, *y = &op->res[0]->type;
  for (int d = 0; d < y->rank && d < x->rank; d++) skip[d] = x->dims[d] != y->dims[d];
  return same_size_dims(op, r, skip);
}

/* Reductions: kept dims pass; a reduced dim is a REDUCE factor for sums and
 * means (split: a partial sum; spmd-partition rescales means) and unsharded
 * for max / min. */
int gv_shard_reduce(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes);
  bool keep = gv_get_int(op, "keepdims", 1) != 0, red[GV_MAX_RANK] = {0};
  if (na <= 0)
    for (int d = 0; d < x->rank; d++) red[d] = true;
  for (int k = 0; k < na; k++) {
    int d = (int)(axes[k] < 0 ? axes[k] + x->rank : axes[k]);
    if (d >= 0 && d < x->rank) red[d] = true;
  }
  bool sum = op->code == GV_OP_REDUCE_SUM || op->code == GV_OP_REDUCE_MEAN;
  int j = 0;
  for (int d = 0; d < x->rank; d++) {
    if (red[d]) {
      if (sum && x->dims[d] > 1) map(r, 0, 0, d, factor(r, x->dims[d], GV_FACTOR_REDUCE));
      if (keep) j++;
      continue;
    }
    if (x->dims[d] > 1) {
      int f = factor(r, x->dims[d], GV_FACTOR_PASS);
      map(r, 0, 0, d, f);
      map(r, 1, 0, j, f);
    }
    j++;
  }
  r->linear = sum;
  return 0;
}

/* dot_general: batch, lhs free, rhs free (PASS), contracting (REDUCE). */
int gv_shard_dot(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *a = &op->opnds[0]->type, *b = &op->opnds[1]->type;
  const int64_t *lb, *rb, *lc, *rc;
  int nlb = gv_get_ints(op, "lhs_batch", &lb), nrb = gv_get_ints(op, "rhs_batch", &rb);
  int nlc = gv_get_ints(op, "lhs_contract", &lc), nrc = gv_get_ints(op, "rhs_contract", &rc);
  if (nlb < 0) nlb = 0;
  if (nrb < 0) nrb = 0;
  if (nlc < 0) nlc = 0;
  if (nrc < 0) nrc = 0;
  if (nlb != nrb || nlc != nrc) return 1;
  bool la[GV_MAX_RANK] = {0}, ra[GV_MAX_RANK] = {0};
  int j = 0;
  for (int k = 0; k < nlb; k++) {
    if (lb[k] < 0 || lb[k] >= a->rank || rb[k] < 0 || rb[k] >= b->rank) return 1;
    la[lb[k]] = ra[rb[k]] = true;
    int f = a->dims[lb[k]] > 1 ? factor(r, a->dims[lb[k]], GV_FACTOR_PASS) : -1;
    map(r, 0, 0, (int)lb[k], f);
    map(r, 0, 1, (int)rb[k], f);
    map(r, 1, 0, j++, f);
  }
  for (int k = 0; k < nlc; k++) {
    if (lc[k] < 0 || lc[k] >= a->rank || rc[k] < 0 || rc[k] >= b->rank) return 1;
    la[lc[k]] = ra[rc[k]] = true;
    int f = a->dims[lc[k]] > 1 ? factor(r, a->dims[lc[k]], GV_FACTOR_REDUCE) : -1;
    map(r, 0, 0, (int)lc[k], f);
    map(r, 0, 1, (int)rc[k], f);
  }
  for (int d = 0; d < a->rank; d++) {
    if (la[d]) continue;
    int f = a->dims[d] > 1 ? factor(r, a->dims[d], GV_FACTOR_PASS) : -1;
    map(r, 0, 0, d, f);
    map(r, 1, 0, j++, f);
  }
  for (int d = 0; d < b->rank; d++) {
    if (ra[d]) continue;
    int f = b->dims[d] > 1 ? factor(r, b->dims[d], GV_FACTOR_PASS) : -1;
    map(r, 0, 1, d, f);
    map(r, 1, 0, j++, f);
  }
  return 0;
}

/* gather(data, indices, axis): data's other dims and the index dims pass;
 * data's axis dim is a GATHER factor (vocab-parallel embedding: each rank
 * looks up the rows it holds, zeros elsewhere, a partial sum). */
int gv_shard_gather(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type, *idx = &op->opnds[1]->type;
  int64_t a = gv_get_int(op, "axis", 0);
  int ax = (int)(a < 0 ? a + x->rank : a);
  if (ax < 0 || ax >= x->rank) return 1;
  int j = 0;
  for (int d = 0; d < ax; d++, j++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, j, f);
  }
  for (int d = 0; d < idx->rank; d++, j++) {
    if (idx->dims[d] == 1) continue;
    int f = factor(r, idx->dims[d], GV_FACTOR_PASS);
    map(r, 0, 1, d, f);
    map(r, 1, 0, j, f);
  }
  for (int d = ax + 1; d < x->rank; d++, j++) {
    if (x->dims[d] == 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, d, f);
    map(r, 1, 0, j, f);
  }
  if (x->dims[ax] > 1) map(r, 0, 0, ax, factor(r, x->dims[ax], GV_FACTOR_GATHER));
  return 0;
}

/* gather_grad(dy, indices) {axis, dim}: the result's dims before and after
 * axis pass with dy's; each index dim is a REDUCE factor of dy and indices
 * (a rank scatter-adding its own indices' rows of dy holds a partial sum of
 * the whole table's gradient: the embedding gradient under dp needs no
 * gathered dy, its partial sum is reduced like any weight gradient). The
 * table dim (axis) is a PASS factor of the result alone: split, each rank
 * scatter-adds only the ids in its rows (Megatron's vocab-parallel
 * embedding backward; spmd-partition masks dy and shifts the ids). Nothing
 * on the operands asks for it: propagate-sharding splits it only where
 * every use of the result takes its rows (gather_grad_rows). */
int gv_shard_gather_grad(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->nopnds != 2 || op->nres != 1) return 1;
  init(op, r);
  const gv_type *dy = &op->opnds[0]->type, *idx = &op->opnds[1]->type, *o = &op->res[0]->type;
  int64_t a = gv_get_int(op, "axis", 0);
  int ir = idx->rank;
  if (a < 0 || a >= o->rank || dy->rank != o->rank + ir - 1) return 1;
  int ax = (int)a;
  for (int d = 0; d < o->rank; d++) {
    if (d == ax) continue;
    int dd = d < ax ? d : d + ir - 1;
    if (o->dims[d] == 1 || dy->dims[dd] != o->dims[d]) continue;
    int f = factor(r, o->dims[d], GV_FACTOR_PASS);
    map(r, 0, 0, dd, f);
    map(r, 1, 0, d, f);
  }
  for (int k = 0; k < ir; k++) {
    if (idx->dims[k] == 1 || dy->dims[ax + k] != idx->dims[k]) continue;
    int f = factor(r, idx->dims[k], GV_FACTOR_REDUCE);
    map(r, 0, 0, ax + k, f);
    map(r, 0, 1, k, f);
  }
  if (o->dims[ax] > 1) map(r, 1, 0, ax, factor(r, o->dims[ax], GV_FACTOR_PASS));
  return 0;
}

/* conv: the batch dim passes; channels and space stay unsharded. */
bool gv_conv_channel_split(const gv_op *op) {
  if (op->code != GV_OP_CONV || op->nopnds < 2 || op->opnds[1]->type.rank < 3 || op->opnds[0]->type.rank < 3) return false;
  /* group 1 only: a grouped (depthwise) conv's local program would need its group count split too */
  return gv_get_int(op, "group", 1) == 1 && op->opnds[1]->type.dims[0] > 1;
}

/* conv: the batch passes (also conv_grad_input's, operand 0 being dy); a
 * group-1 conv's output channels are a factor of the weight's dim 0, the
 * result's dim 1 and the bias (tp: the weight split by output channel, each
 * rank computing its channels from the whole input). */
int gv_shard_conv(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op)) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  if (x->rank > 0 && x->dims[0] > 1) {
    int f = factor(r, x->dims[0], GV_FACTOR_PASS);
    map(r, 0, 0, 0, f);
    map(r, 1, 0, 0, f);
  }
  if (gv_conv_channel_split(op)) {
    int f = factor(r, op->opnds[1]->type.dims[0], GV_FACTOR_PASS);
    map(r, 0, 1, 0, f);
    map(r, 1, 0, 1, f);
    if (op->nopnds > 2) map(r, 0, 2, 0, f);
  }
  return 0;
}

/* pool / pool_grad: batch and channel dims pass (operand 0, a pool_grad's
 * dy and the result); the windows stay whole. */
int gv_shard_pool(const gv_op *op, gv_shard_rule *r) {
  if (!stat_ok(op) || op->opnds[0]->type.rank < 3) return 1;
  init(op, r);
  const gv_type *x = &op->opnds[0]->type;
  for (int d = 0; d < 2; d++) {
    if (x->dims[d] <= 1) continue;
    int f = factor(r, x->dims[d], GV_FACTOR_PASS);
    for (int i = 0; i < op->nopnds; i++) map(r, 0, i, d, f);
    map(r, 1, 0, d, f);
  }
  return 0;
}

int gv_shard_rule_of(const gv_op *op, gv_shard_rule *r) {
  if (op->code >= GV_OP_COUNT || !gv_ops[op->code].shard) return 1;
  memset(r, 0, sizeof *r);
  return gv_ops[op->code].shard(op, r);
}
