/* verify.c — structural checks of a module (gv_verify).
 *
 * Run after parsing and import and, with --verify-each, after every pass, so
 * that a pass that breaks the IR is named at once instead of some later pass
 * crashing. It checks what the op table and the IR rules state: operand and
 * result counts, SSA dominance (straight-line blocks; a region sees the
 * values defined before its op in the enclosing blocks, and nothing of a
 * region is visible outside it; a galv.fused region sees only its own block),
 * terminators, the shape of galv.if and galv.fused, galv.arena's place,
 * attribute order, attribute ranges (an axis within its operand's rank), and
 * the types that are trivially checkable.
 *
 * Dominance uses value->id as scratch: 1 while a value is defined and in
 * scope, 0 otherwise.
 */
#include "attention.h"
#include "ir.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  const gv_module *m;
  int depth;
} verifier;

static void clear_ids(gv_block *b) {
  for (int i = 0; i < b->nargs; i++)
    if (b->args[i]) b->args[i]->id = 0;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i]) op->opnds[i]->id = 0;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]) op->res[i]->id = 0;
    for (int r = 0; r < op->nregions; r++)
      if (op->regions[r]) clear_ids(op->regions[r]);
  }
}

/* Takes a region's values out of scope once its op has been checked. */
static void hide(gv_block *b) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = 0;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = 0;
    for (int r = 0; r < op->nregions; r++) hide(op->regions[r]);
  }
}

static int check_attrs(const verifier *v, const gv_op *op) {
  for (int i = 0; i < op->nattrs; i++) {
    const gv_attr *a = &op->attrs[i];
    if (!a->name) return gv_error_op(v->m, op, "attribute %d has no name", i);
    if (i && strcmp(op->attrs[i - 1].name, a->name) >= 0)
      return gv_error_op(v->m, op, "attributes not sorted and unique at '%s'", a->name);
    bool ok = true;
    switch (a->kind) {
    case GV_ATTR_STR: ok = a->u.s != NULL; break;
    case GV_ATTR_INTS: ok = a->u.ints.n >= 0 && (a->u.ints.n == 0 || a->u.ints.v); break;
    case GV_ATTR_FLOATS: ok = a->u.floats.n >= 0 && (a->u.floats.n == 0 || a->u.floats.v); break;
    case GV_ATTR_STRS:
      ok = a->u.strs.n >= 0 && (a->u.strs.n == 0 || a->u.strs.v);
      for (int k = 0; ok && k < a->u.strs.n; k++) ok = a->u.strs.v[k] != NULL;
      break;
    case GV_ATTR_TENSOR:
      ok = a->u.t && gv_type_is_static(&a->u.t->type) && a->u.t->type.dtype != GV_DT_UNKNOWN &&
           a->u.t->type.dtype < GV_DT_COUNT && (a->u.t->data || gv_tensor_numel(a->u.t) == 0);
      break;
    case GV_ATTR_TYPE: ok = a->u.ty < GV_DT_COUNT; break;
    case GV_ATTR_SHARDING:
      ok = a->u.sh.n == op->nres && a->u.sh.v;
      for (int k = 0; ok && k < a->u.sh.n; k++)
        ok = a->u.sh.v[k] && a->u.sh.v[k]->mesh &&
             (op->res[k]->type.rank < 0 || a->u.sh.v[k]->rank == op->res[k]->type.rank);
      break;
    case GV_ATTR_INT: case GV_ATTR_FLOAT: case GV_ATTR_UNIT: break;
    default: ok = false;
    }
    if (!ok) return gv_error_op(v->m, op, "attribute '%s' has a malformed value", a->name);
  }
  return 0;
}

/* The attribute ranges the op table's shape rules assume (ir/infer.c),
 * checked here as well: galv-opt runs passes on parsed IR without
 * shape-infer, and a pass must never index a dim outside its operand. An
 * "axis" indexes operand 0's dims (flatten's may equal the rank), each of
 * "axes" too (unsqueeze's: the result's), "perm" permutes them. Unranked
 * operands are left to shape-infer. */
static int axis_ok(int64_t a, int r, bool inclusive) { return a >= -(int64_t)r && (inclusive ? a <= r : a < r); }

static int check_attr_ranges(const verifier *v, const gv_op *op) {
  if (op->nopnds < 1 || !op->opnds[0] || op->opnds[0]->type.rank < 0) return 0;
  const int r = op->opnds[0]->type.rank;
  const char *name = gv_ops[op->code].name;
  switch (op->code) {
  case GV_OP_CONCAT: case GV_OP_SPLIT: case GV_OP_GATHER: case GV_OP_CUMSUM: case GV_OP_SOFTMAX: case GV_OP_LOG_SOFTMAX:
  case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM: case GV_OP_FLATTEN: case GV_OP_TOPK: {
    const gv_attr *a = gv_get_attr(op, "axis");
    if (a && a->kind != GV_ATTR_INT) return gv_error_op(v->m, op, "galv.%s: attribute 'axis' must be an integer", name);
    if (a && !axis_ok(a->u.i, r, op->code == GV_OP_FLATTEN))
      return gv_error_op(v->m, op, "galv.%s: axis %lld is out of range for an operand of rank %d", name, (long long)a->u.i, r);
    break;
  }
  case GV_OP_SQUEEZE: case GV_OP_UNSQUEEZE: case GV_OP_REDUCE_SUM: case GV_OP_REDUCE_MEAN: case GV_OP_REDUCE_MAX:
  case GV_OP_REDUCE_MIN: case GV_OP_TRANSPOSE: {
    const char *an = op->code == GV_OP_TRANSPOSE ? "perm" : "axes";
    const int64_t *ax;
    int n = gv_get_ints(op, an, &ax), rr = op->code == GV_OP_UNSQUEEZE && n > 0 ? r + n : r;
    if (op->code == GV_OP_TRANSPOSE && n >= 0 && n != r)
      return gv_error_op(v->m, op, "galv.transpose: perm has %d entries for an operand of rank %d", n, r);
    unsigned seen = 0; /* ranks are at most GV_MAX_RANK */
    for (int k = 0; k < n; k++) {
      if (!axis_ok(ax[k], rr, false) || (op->code == GV_OP_TRANSPOSE && ax[k] < 0))
        return gv_error_op(v->m, op, "galv.%s: %s entry %lld is out of range for rank %d", name, an, (long long)ax[k], rr);
      int d = (int)(ax[k] < 0 ? ax[k] + rr : ax[k]);
      if (d < 32 && (seen & (1u << d))) return gv_error_op(v->m, op, "galv.%s: %s names dim %d twice", name, an, d);
      if (d < 32) seen |= 1u << d;
    }
    break;
  }
  case GV_OP_DROPOUT: case GV_OP_ATTENTION: case GV_OP_ATTENTION_GRAD: { /* the mask's parameters (runtime/galv_rng.h) */
    /* galv.attention's dropout (docs/fused-attention.md): the same attributes, the offsets its last operand */
    int oi = op->code == GV_OP_DROPOUT ? (op->nopnds == 2 ? 1 : -1) : gv_attn_off(op);
    const gv_attr *ra = gv_get_attr(op, "ratio"), *id = gv_get_attr(op, "id");
    if (op->code != GV_OP_DROPOUT && !ra) {
      if (oi >= 0) return gv_error_op(v->m, op, "galv.%s: an offsets operand without dropout (attribute 'ratio')", name);
      break;
    }
    if (!ra || ra->kind != GV_ATTR_FLOAT || !(ra->u.f >= 0 && ra->u.f < 1))
      return gv_error_op(v->m, op, "galv.%s: attribute 'ratio' must be a float in [0, 1)", name);
    if (!id || id->kind != GV_ATTR_INT || id->u.i < 0)
      return gv_error_op(v->m, op, "galv.%s: attribute 'id' must be a non-negative integer", name);
    const int64_t *acc;
    int na = gv_get_ints(op, "acc", &acc);
    if (na >= 0 && (na != 3 || acc[0] < 1 || acc[1] < 0 || acc[1] >= acc[0] || acc[2] < 1))
      return gv_error_op(v->m, op, "galv.%s: attribute 'acc' must be [M, k, q] with 0 <= k < M and q >= 1", name);
    if (oi >= 0 && op->opnds[oi] &&
        (op->opnds[oi]->type.dtype != GV_DT_I64 || op->opnds[oi]->type.rank != 1 || op->opnds[oi]->type.dims[0] != r))
      return gv_error_op(v->m, op, "galv.%s: the offsets operand must be tensor<%dxi64>", name, r);
    break;
  }
  default: break;
  }
  return 0;
}

/* "2", "1 to 3" or "at least 1": an op table operand range for messages. */
static const char *arity(const gv_opinfo *info, char *buf, size_t n) {
  if (info->max_operands < 0) snprintf(buf, n, "at least %d", info->min_operands);
  else if (info->max_operands == info->min_operands) snprintf(buf, n, "%d", info->min_operands);
  else snprintf(buf, n, "%d to %d", info->min_operands, info->max_operands);
  return buf;
}

static int check_block(verifier *v, gv_block *b, bool is_body);

static bool same_shape(const gv_type *a, const gv_type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* galv.fused: block arguments mirror the operands, the body is elementwise
 * ops that see only the block's own values, every body result and every
 * result of the op has one iteration shape, yields match the results. */
static int check_fused(const verifier *v, const gv_op *op, const gv_block *rb) {
  const gv_module *m = v->m;
  char x[256], y[256];
  if (rb->nargs != op->nopnds)
    return gv_error_op(m, op, "galv.fused has %d operands but its block has %d arguments", op->nopnds, rb->nargs);
  for (int i = 0; i < op->nopnds; i++)
    if (!gv_type_equal(&rb->args[i]->type, &op->opnds[i]->type)) {
      gv_type_str(&rb->args[i]->type, x, sizeof x);
      gv_type_str(&op->opnds[i]->type, y, sizeof y);
      return gv_error_op(m, op, "galv.fused block argument %d is %s but operand %d is %s", i, x, i, y);
    }
  const gv_type *shape = &op->res[0]->type;
  for (int i = 0; i < op->nres; i++) {
    const gv_type *r = &op->res[i]->type, *t = &rb->last->opnds[i]->type;
    if (!same_shape(r, shape)) {
      gv_type_str(r, x, sizeof x);
      gv_type_str(shape, y, sizeof y);
      return gv_error_op(m, op, "galv.fused result %d is %s, not the iteration shape of %s", i, x, y);
    }
    bool unknown = r->rank == GV_RANK_UNKNOWN && r->dtype == GV_DT_UNKNOWN;
    if (!unknown && !gv_type_equal(r, t)) {
      gv_type_str(r, x, sizeof x);
      gv_type_str(t, y, sizeof y);
      return gv_error_op(m, op, "galv.fused result %d is %s but its region yields %s", i, x, y);
    }
  }
  for (const gv_op *o = rb->first; o; o = o->next) {
    if (o == rb->last) break;
    if (!(gv_ops[o->code].flags & GV_ELEMENTWISE) || o->nregions)
      return gv_error_op(m, o, "galv.%s inside galv.fused is not elementwise", gv_ops[o->code].name);
    for (int i = 0; i < o->nres; i++)
      if (!same_shape(&o->res[i]->type, shape)) {
        gv_type_str(&o->res[i]->type, x, sizeof x);
        gv_type_str(shape, y, sizeof y);
        return gv_error_op(m, o, "result %d inside galv.fused is %s, not the iteration shape %s", i, x, y);
      }
  }
  for (const gv_op *o = rb->first; o; o = o->next)
    for (int i = 0; i < o->nopnds; i++) {
      const gv_value *u = o->opnds[i];
      if (u->def ? u->def->parent != rb : u->block != rb)
        return gv_error_op(m, o, "operand %d is defined outside its galv.fused region (pass it as an operand)", i);
    }
  return 0;
}

/* galv.arena: integer attributes; one offset per function argument. */
static int check_arena(const verifier *v, const gv_block *body, const gv_op *op) {
  const gv_module *m = v->m;
  const gv_attr *a = gv_get_attr(op, "arg_offsets");
  if (a && (a->kind != GV_ATTR_INTS || a->u.ints.n != body->nargs))
    return gv_error_op(m, op, "galv.arena arg_offsets must hold %d offsets", body->nargs);
  const char *ints[] = {"bytes", "lower_bound"};
  for (int i = 0; i < 2; i++) {
    const gv_attr *b = gv_get_attr(op, ints[i]);
    if (b && (b->kind != GV_ATTR_INT || b->u.i < 0))
      return gv_error_op(m, op, "galv.arena %s must be a non-negative integer", ints[i]);
  }
  return 0;
}

static int check_op(verifier *v, gv_block *b, gv_op *op, bool is_body) {
  const gv_module *m = v->m;
  if (op->code >= GV_OP_COUNT) return gv_error(m, "op with invalid opcode %d", (int)op->code);
  const gv_opinfo *info = &gv_ops[op->code];
  if (op->parent != b) return gv_error_op(m, op, "op is not linked to its block");
  char ab[48];
  if (op->nopnds < info->min_operands || (info->max_operands >= 0 && op->nopnds > info->max_operands))
    return gv_error_op(m, op, "galv.%s takes %s operands, has %d", info->name, arity(info, ab, sizeof ab),
                       op->nopnds);
  if (info->num_results >= 0 ? op->nres != info->num_results : op->nres < 0)
    return gv_error_op(m, op, "galv.%s has %d results, expected %d", info->name, op->nres, info->num_results);
  for (int i = 0; i < op->nopnds; i++) {
    if (!op->opnds[i]) return gv_error_op(m, op, "operand %d is null", i);
    if (op->opnds[i]->id != 1)
      return gv_error_op(m, op, "operand %d is not defined before this op (or not visible here)", i);
  }
  if ((info->flags & GV_TERMINATOR) && op->next)
    return gv_error_op(m, op, "terminator galv.%s is not the last op of its block", info->name);
  if (op->code == GV_OP_RETURN && !is_body) return gv_error_op(m, op, "galv.return inside a region");
  if (op->code == GV_OP_YIELD && is_body) return gv_error_op(m, op, "galv.yield outside a region");
  if (check_attrs(v, op) || check_attr_ranges(v, op)) return -1;

  if (op->code == GV_OP_ARENA) {
    if (!is_body || b->first != op) return gv_error_op(m, op, "galv.arena is not the first op of the function body");
    if (check_arena(v, b, op)) return -1;
  }
  if (op->code == GV_OP_IF) {
    if (op->nregions != 2) return gv_error_op(m, op, "galv.if needs 2 regions, has %d", op->nregions);
    gv_dtype c = op->opnds[0]->type.dtype;
    if (c != GV_DT_BOOL && c != GV_DT_UNKNOWN) return gv_error_op(m, op, "galv.if condition is not i1");
  } else if (op->code == GV_OP_FUSED) {
    if (op->nregions != 1) return gv_error_op(m, op, "galv.fused needs 1 region, has %d", op->nregions);
    if (op->nres < 1) return gv_error_op(m, op, "galv.fused has no results");
  } else if (op->nregions) {
    return gv_error_op(m, op, "galv.%s cannot have regions", info->name);
  }
  for (int r = 0; r < op->nregions; r++) {
    gv_block *rb = op->regions[r];
    if (!rb) return gv_error_op(m, op, "region %d is null", r);
    if (++v->depth > 256) return gv_error_op(m, op, "regions nested too deeply");
    if (check_block(v, rb, false)) return -1;
    v->depth--;
    gv_op *t = rb->last;
    if (!t || t->code != GV_OP_YIELD) return gv_error_op(m, op, "region %d does not end in galv.yield", r);
    if (t->nopnds != op->nres)
      return gv_error_op(m, op, "region %d yields %d values for %d results", r, t->nopnds, op->nres);
    if (op->code == GV_OP_FUSED && check_fused(v, op, rb)) return -1;
    hide(rb);
  }

  for (int i = 0; i < op->nres; i++) {
    gv_value *r = op->res[i];
    if (!r || r->def != op || r->index != i) return gv_error_op(m, op, "result %d is not linked to its op", i);
    r->id = 1;
  }
  if (op->code == GV_OP_CONSTANT) {
    const gv_attr *a = gv_get_attr(op, "value");
    if (!a || a->kind != GV_ATTR_TENSOR) return gv_error_op(m, op, "galv.constant has no tensor 'value'");
    /* Fully unknown means "not inferred yet", not inconsistent. */
    const gv_type *rt = &op->res[0]->type;
    bool unknown = rt->rank == GV_RANK_UNKNOWN && rt->dtype == GV_DT_UNKNOWN;
    if (!unknown && !gv_type_equal(rt, &a->u.t->type)) {
      char x[256], y[256];
      gv_type_str(rt, x, sizeof x);
      gv_type_str(&a->u.t->type, y, sizeof y);
      return gv_error_op(m, op, "galv.constant result type %s differs from its value's type %s", x, y);
    }
  }
  return 0;
}

static int check_block(verifier *v, gv_block *b, bool is_body) {
  for (int i = 0; i < b->nargs; i++) {
    if (!b->args[i] || b->args[i]->def) return gv_error(v->m, "block argument %d is malformed", i);
    b->args[i]->id = 1;
  }
  for (gv_op *op = b->first; op; op = op->next)
    if (check_op(v, b, op, is_body)) return -1;
  return 0;
}

int gv_verify(const gv_module *m) {
  if (!m || !m->main || !m->main->body) return gv_error(m, "module has no function");
  const gv_func *f = m->main;
  gv_block *body = f->body;
  if (body->nargs && (!f->arg_names || !f->arg_is_param || !f->param_data))
    return gv_error(m, "function arguments lack names or param flags");
  for (int i = 0; f->arg_is_frozen && i < body->nargs; i++)
    if (f->arg_is_frozen[i] && !f->arg_is_param[i])
      return gv_error(m, "argument '%s' is galv.frozen but not galv.param", f->arg_names[i]);
  if (f->nres_names < 0 || (f->nres_names && !f->res_names)) return gv_error(m, "function result names are malformed");
  verifier v = {m, 0};
  clear_ids(body);
  if (check_block(&v, body, true)) return -1;
  if (!body->last || body->last->code != GV_OP_RETURN)
    return body->last ? gv_error_op(m, body->last, "the function body does not end in galv.return")
                      : gv_error(m, "the function body is empty (no galv.return)");
  return 0;
}
