/* onnx_ops.c — the ONNX (op_type, opset) -> core op table of the frontend.
 *
 * Every supported ONNX op is one row of `table` below; opset differences
 * (attributes that became inputs, new attributes) end here, so the core ops
 * (ir/ops.def, docs/ops.md) have one form each. Each created op gets the
 * node's name and op type as its location.
 *
 * Result types are set where the rule is obvious (dtype and rank, dims when
 * known) because some mappings need them at import: MatMul's batch and
 * contracting dims follow from operand ranks, Split without sizes needs the
 * split dim. shape-infer recomputes every type afterwards, so a dim left
 * unknown here costs nothing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef const Onnx__NodeProto node_t;
typedef int (*handler)(gv_ictx *c, node_t *n, gv_value **in, int nin, int code);

/* ---------------------------------------------------------------- attributes */

static const Onnx__AttributeProto *attr(node_t *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

static int64_t ai(node_t *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_i ? a->i : dflt;
}

static float af(node_t *n, const char *name, float dflt) {
  const Onnx__AttributeProto *a = attr(n, name);
  return a && a->has_f ? a->f : dflt;
}

/* ints attribute: count (-1 when absent), values in *v */
static int aints(node_t *n, const char *name, const int64_t **v) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a || (a->n_ints == 0 && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) return -1;
  static const int64_t none[1];
  *v = a->ints ? a->ints : none; /* an empty list: no NULL for the callers' memcpy */
  return a->n_ints > (1u << 20) ? (1 << 20) : (int)a->n_ints;
}

/* string attribute as a NUL-terminated copy (strings are bytes in ONNX) */
static const char *astr(gv_ictx *c, node_t *n, const char *name, const char *dflt) {
  const Onnx__AttributeProto *a = attr(n, name);
  if (!a || !a->has_s) return dflt;
  return gv_strndup(c->tmp, a->s.data ? (const char *)a->s.data : "", a->s.len);
}

/* ---------------------------------------------------------------- building */

static gv_op *emit(gv_ictx *c, gv_opcode code, int nopnds, gv_value *const *opnds, int nres) {
  gv_op *op = gv_op_new(c->m, code, nopnds, opnds, nres);
  node_t *n = c->node;
  gv_op_set_loc(c->m, op, n && n->name ? n->name : "", n && n->op_type ? n->op_type : NULL);
  gv_block_append(c->scope->block, op);
  return op;
}

/* Binds output i of the node (absent or "" outputs are skipped). */
static int out(gv_ictx *c, node_t *n, int i, gv_value *v) {
  if ((size_t)i >= n->n_output || !n->output[i] || !*n->output[i]) return 0;
  return gv_bind(c, n->output[i], v);
}

static int outs_at_most(gv_ictx *c, node_t *n, int k) {
  for (size_t i = (size_t)k; i < n->n_output; i++)
    if (n->output[i] && *n->output[i])
      return gv_node_error(c, "has %zu outputs, at most %d supported", n->n_output, k);
  return 0;
}

static gv_value *const_i64(gv_ictx *c, int k, const int64_t *v) {
  int64_t d = k;
  gv_tensor *t = gv_tensor_new(c->m->arena, gv_type_make(GV_DT_I64, 1, &d));
  for (int i = 0; i < k; i++) ((int64_t *)t->data)[i] = v[i];
  gv_op *op = gv_constant_new(c->m, t);
  node_t *n = c->node;
  gv_op_set_loc(c->m, op, n && n->name ? n->name : "", n && n->op_type ? n->op_type : NULL);
  gv_block_append(c->scope->block, op);
  return op->res[0];
}

static gv_value *const_scalar(gv_ictx *c, gv_dtype dt, double v) {
  if (dt == GV_DT_UNKNOWN) dt = GV_DT_F32;
  gv_tensor *t = gv_tensor_new(c->m->arena, gv_type_make(dt, 0, NULL));
  gv_tensor_set_f(t, 0, v);
  gv_op *op = gv_constant_new(c->m, t);
  node_t *n = c->node;
  gv_op_set_loc(c->m, op, n && n->name ? n->name : "", n && n->op_type ? n->op_type : NULL);
  gv_block_append(c->scope->block, op);
  return op->res[0];
}

/* The constant value of v when it is a constant op's result. */
static const gv_tensor *cval(const gv_value *v) {
  if (!v || !v->def || v->def->code != GV_OP_CONSTANT) return NULL;
  const gv_attr *a = gv_get_attr(v->def, "value");
  return a && a->kind == GV_ATTR_TENSOR ? a->u.t : NULL;
}

/* Integer values of a constant operand: count, or -1 when not constant. */
static int const_ints(const gv_value *v, int64_t *buf, int max) {
  const gv_tensor *t = cval(v);
  if (!t || !gv_dtype_is_int(t->type.dtype) || t->type.rank > 1) return -1;
  int64_t n = gv_tensor_numel(t);
  if (n < 0 || n > max) return -1;
  for (int64_t i = 0; i < n; i++) buf[i] = gv_tensor_get_i(t, i);
  return (int)n;
}

/* ---------------------------------------------------------------- type tracking */

static void settype(gv_value *v, gv_dtype dt, int rank, const int64_t *dims) {
  if (rank > GV_MAX_RANK || rank < 0) v->type = gv_type_unranked(dt);
  else v->type = gv_type_make(dt, rank, dims);
}

static void same_type(gv_value *r, const gv_value *x) { r->type = x->type; }

static int rank_of(const gv_value *v) { return v ? v->type.rank : -1; }

/* Length of a 1-D value (a shape vector), -1 if unknown. */
static int64_t len1(const gv_value *v) {
  if (!v || v->type.rank != 1) return -1;
  return v->type.dims[0];
}

static int64_t norm_axis(int64_t a, int rank) { return a < 0 ? a + rank : a; }

/* numpy broadcast of types; dims stay unknown unless certain */
static gv_type bcast(const gv_value *const *vs, int k, gv_dtype dt) {
  int rank = 0;
  for (int i = 0; i < k; i++) {
    if (vs[i]->type.rank < 0) return gv_type_unranked(dt);
    if (vs[i]->type.rank > rank) rank = vs[i]->type.rank;
  }
  int64_t dims[GV_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    /* a known dim > 1 decides (an unknown one must be 1 or equal to it in a
     * valid model); only all-1-or-unknown stays unknown */
    int64_t r = 1;
    bool unknown = false;
    for (int i = 0; i < k; i++) {
      int off = rank - vs[i]->type.rank;
      if (d < off) continue;
      int64_t x = vs[i]->type.dims[d - off];
      if (x < 0) unknown = true;
      else if (x != 1 && r == 1) r = x;
      else if (x != 1 && r != x) r = -2; /* mismatch: shape-infer reports it */
    }
    dims[d] = r == -2 || (r == 1 && unknown) ? -1 : r;
  }
  return gv_type_make(dt, rank, dims);
}

/* ---------------------------------------------------------------- handlers */

static int h_alias(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  return out(c, n, 0, in[0]);
}

/* Dropout: training_mode (opset 12+, input 2) true with a ratio (input 1,
 * default 0.5) above 0 is galv.dropout (docs/training.md "Dropout"): torch
 * exports nn.Dropout in train mode so, both as constants. Otherwise (and
 * before opset 12, whose Dropout has no training mode) the identity, with an
 * all-true mask. */
static int h_dropout(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  bool training = false;
  double ratio = 0.5;
  if (c->opset >= 12 && nin > 2 && in[2]) {
    const gv_tensor *t = cval(in[2]);
    if (!t || gv_tensor_numel(t) != 1)
      return gv_node_error(c, "unsupported: Dropout training_mode must be a constant scalar");
    training = gv_tensor_get_i(t, 0) != 0;
  }
  if (c->opset >= 12 && nin > 1 && in[1]) {
    const gv_tensor *t = cval(in[1]);
    if (training && (!t || gv_tensor_numel(t) != 1))
      return gv_node_error(c, "unsupported: Dropout ratio must be a constant scalar in training mode");
    if (t && gv_tensor_numel(t) == 1) ratio = gv_tensor_get_f(t, 0);
  }
  if (outs_at_most(c, n, 2)) return -1;
  if (training && ratio != 0) {
    if (!(ratio > 0 && ratio < 1)) return gv_node_error(c, "Dropout ratio %g is outside [0, 1)", ratio);
    int64_t id = c->ndropout++;
    gv_value *one = NULL;
    bool mask = n->n_output > 1 && n->output[1] && *n->output[1];
    if (mask) { /* the mask: the same dropout of ones, non-zero */
      gv_op *sh = emit(c, GV_OP_SHAPE, 1, in, 1);
      int64_t r = rank_of(in[0]);
      settype(sh->res[0], GV_DT_I64, 1, &r);
      gv_tensor *t1 = gv_tensor_new(c->m->arena, gv_type_make(GV_DT_F32, 1, (int64_t[]){1}));
      gv_tensor_set_f(t1, 0, 1.0);
      gv_op *ones = emit(c, GV_OP_CONSTANT_OF_SHAPE, 1, sh->res, 1);
      gv_set_tensor(c->m, ones, "value", t1);
      ones->res[0]->type = in[0]->type;
      ones->res[0]->type.dtype = GV_DT_F32;
      one = ones->res[0];
    }
    for (int k = 0; k < (mask ? 2 : 1); k++) {
      gv_op *d = emit(c, GV_OP_DROPOUT, 1, k ? &one : in, 1);
      gv_set_float(c->m, d, "ratio", (float)ratio);
      gv_set_int(c->m, d, "seed", (int64_t)c->opt->seed);
      gv_set_int(c->m, d, "id", id);
      d->res[0]->type = k ? one->type : in[0]->type;
      gv_value *y = d->res[0];
      if (k) {
        gv_value *cmp[2] = {y, const_scalar(c, GV_DT_F32, 0.0)};
        gv_op *g = emit(c, GV_OP_GREATER, 2, cmp, 1);
        g->res[0]->type = one->type;
        g->res[0]->type.dtype = GV_DT_BOOL;
        y = g->res[0];
      }
      if (out(c, n, k, y)) return -1;
    }
    return 0;
  }
  if (n->n_output > 1 && n->output[1] && *n->output[1]) {
    /* inference: the mask is all true, shaped like the input */
    gv_op *sh = emit(c, GV_OP_SHAPE, 1, in, 1);
    int64_t r = rank_of(in[0]);
    settype(sh->res[0], GV_DT_I64, 1, &r);
    gv_tensor *one = gv_tensor_new(c->m->arena, gv_type_make(GV_DT_BOOL, 1, (int64_t[]){1}));
    gv_tensor_set_i(one, 0, 1);
    gv_op *mask = emit(c, GV_OP_CONSTANT_OF_SHAPE, 1, sh->res, 1);
    gv_set_tensor(c->m, mask, "value", one);
    mask->res[0]->type = in[0]->type;
    mask->res[0]->type.dtype = GV_DT_BOOL;
    if (out(c, n, 1, mask->res[0])) return -1;
  }
  return h_alias(c, n, in, nin, code);
}

static int h_constant(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)in, (void)nin, (void)code;
  if (n->n_attribute != 1) return gv_node_error(c, "Constant needs exactly one value attribute");
  const Onnx__AttributeProto *a = n->attribute[0];
  const char *an = a->name ? a->name : "";
  gv_tensor *t = NULL;
  if (strcmp(an, "value") == 0 && a->t) {
    t = gv_onnx_tensor(c, a->t, "Constant 'value'");
    if (!t) return -1;
  } else if (strcmp(an, "value_float") == 0) {
    t = gv_tensor_new(c->m->arena, gv_type_make(GV_DT_F32, 0, NULL));
    ((float *)t->data)[0] = a->f;
  } else if (strcmp(an, "value_int") == 0) {
    t = gv_tensor_new(c->m->arena, gv_type_make(GV_DT_I64, 0, NULL));
    ((int64_t *)t->data)[0] = a->i;
  } else if (strcmp(an, "value_floats") == 0 || strcmp(an, "value_ints") == 0) {
    bool fl = an[6] == 'f';
    int64_t k = fl ? (int64_t)a->n_floats : (int64_t)a->n_ints;
    t = gv_tensor_new(c->m->arena, gv_type_make(fl ? GV_DT_F32 : GV_DT_I64, 1, &k));
    for (int64_t i = 0; i < k; i++) {
      if (fl) ((float *)t->data)[i] = a->floats[i];
      else ((int64_t *)t->data)[i] = a->ints[i];
    }
  } else {
    return gv_node_error(c, "unsupported Constant attribute '%s'", gv_esc(c, an));
  }
  gv_op *op = emit(c, GV_OP_CONSTANT, 0, NULL, 1);
  gv_set_tensor(c->m, op, "value", t);
  op->res[0]->type = t->type;
  return out(c, n, 0, op->res[0]);
}

static int h_unary(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  gv_op *op = emit(c, (gv_opcode)code, 1, in, 1);
  if (code == GV_OP_GELU) {
    const char *ap = astr(c, n, "approximate", "none");
    if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
      return gv_node_error(c, "unsupported Gelu approximate='%s'", gv_esc(c, ap));
    gv_set_str(c->m, op, "approximate", ap);
  }
  same_type(op->res[0], in[0]);
  return out(c, n, 0, op->res[0]);
}

static int h_binary(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  gv_op *op = emit(c, (gv_opcode)code, 2, in, 1);
  bool cmp = code == GV_OP_EQUAL || code == GV_OP_LESS || code == GV_OP_LESS_EQUAL || code == GV_OP_GREATER ||
             code == GV_OP_GREATER_EQUAL;
  op->res[0]->type = bcast((const gv_value *const *)in, 2, cmp ? GV_DT_BOOL : in[0]->type.dtype);
  return out(c, n, 0, op->res[0]);
}

/* Mod: fmod 1 (C) or 0 (the divisor's sign, integers) as an attribute */
static int h_mod(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_MOD, 2, in, 1);
  gv_set_int(c->m, op, "fmod", ai(n, "fmod", 0) ? 1 : 0);
  op->res[0]->type = bcast((const gv_value *const *)in, 2, in[0]->type.dtype);
  return out(c, n, 0, op->res[0]);
}

/* Min / Max: variadic in ONNX, a chain of binary ops here */
static int h_variadic(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  gv_value *acc = in[0];
  for (int i = 1; i < nin; i++) {
    if (!in[i]) return gv_node_error(c, "input %d is empty", i);
    gv_value *pair[2] = {acc, in[i]};
    gv_op *op = emit(c, (gv_opcode)code, 2, pair, 1);
    op->res[0]->type = bcast((const gv_value *const *)pair, 2, acc->type.dtype);
    acc = op->res[0];
  }
  return out(c, n, 0, acc);
}

static int h_where(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_WHERE, 3, in, 1);
  op->res[0]->type = bcast((const gv_value *const *)in, 3, in[1]->type.dtype);
  return out(c, n, 0, op->res[0]);
}

static int h_cast(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  const Onnx__AttributeProto *a = attr(n, "to");
  if (!a || !a->has_i) return gv_node_error(c, "Cast without 'to'");
  gv_dtype dt = gv_onnx_dtype((int32_t)a->i);
  if (dt == GV_DT_UNKNOWN || a->i != (int32_t)a->i)
    return gv_node_error(c, "unsupported Cast to %s", gv_onnx_dtype_name((int32_t)a->i));
  gv_op *op = emit(c, GV_OP_CAST, 1, in, 1);
  gv_set_type(c->m, op, "to", dt);
  op->res[0]->type = in[0]->type;
  op->res[0]->type.dtype = dt;
  return out(c, n, 0, op->res[0]);
}

/* CastLike(x, like): Cast to like's element type (like's values unused). */
static int h_castlike(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_dtype dt = in[1]->type.dtype;
  if (dt == GV_DT_UNKNOWN) return gv_node_error(c, "CastLike: the element type of '%s' is not known at import",
                                                 gv_esc(c, n->input[1]));
  gv_op *op = emit(c, GV_OP_CAST, 1, in, 1);
  gv_set_type(c->m, op, "to", dt);
  op->res[0]->type = in[0]->type;
  op->res[0]->type.dtype = dt;
  return out(c, n, 0, op->res[0]);
}

static int h_shape(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_SHAPE, 1, in, 1);
  const Onnx__AttributeProto *s = attr(n, "start"), *e = attr(n, "end");
  int r = rank_of(in[0]);
  int64_t st = 0, en = r;
  if (s && s->has_i) gv_set_int(c->m, op, "start", st = s->i);
  if (e && e->has_i) gv_set_int(c->m, op, "end", en = e->i);
  int64_t len = -1;
  if (r >= 0) {
    st = st < 0 ? st + r : st;
    en = en < 0 ? en + r : en;
    st = st < 0 ? 0 : st > r ? r : st;
    en = en < 0 ? 0 : en > r ? r : en;
    len = en > st ? en - st : 0;
  }
  settype(op->res[0], GV_DT_I64, 1, &len);
  return out(c, n, 0, op->res[0]);
}

static int h_gather(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_GATHER, 2, in, 1);
  int64_t axis = ai(n, "axis", 0);
  gv_set_int(c->m, op, "axis", axis);
  int r = rank_of(in[0]), q = rank_of(in[1]);
  if (r >= 1 && q >= 0 && r - 1 + q <= GV_MAX_RANK) {
    int64_t a = norm_axis(axis, r), dims[GV_MAX_RANK];
    if (a >= 0 && a < r) {
      int k = 0;
      for (int i = 0; i < a; i++) dims[k++] = in[0]->type.dims[i];
      for (int i = 0; i < q; i++) dims[k++] = in[1]->type.dims[i];
      for (int i = (int)a + 1; i < r; i++) dims[k++] = in[0]->type.dims[i];
      settype(op->res[0], in[0]->type.dtype, k, dims);
    }
  }
  if (op->res[0]->type.rank < 0) op->res[0]->type.dtype = in[0]->type.dtype;
  return out(c, n, 0, op->res[0]);
}

static int gather_nd_batch(gv_ictx *c, node_t *n, gv_value **in, int64_t bd);

/* GatherND and ScatterND (every reduction: none, add, mul, max, min; the
 * attribute schema allows no other) -> gather_nd / scatter_nd;
 * their result types are left to shape-infer. GatherND with batch_dims b > 0
 * is gather_nd of the indices with each tuple prefixed by its b batch
 * coordinates (gather_nd_batch). */
static int h_gather_nd(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int64_t bd = ai(n, "batch_dims", 0);
  if (bd != 0) return gather_nd_batch(c, n, in, bd);
  gv_op *op = emit(c, GV_OP_GATHER_ND, 2, in, 1);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  return out(c, n, 0, op->res[0]);
}

static int h_scatter_nd(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  const char *red = astr(c, n, "reduction", "none");
  gv_op *op = emit(c, GV_OP_SCATTER_ND, 3, in, 1);
  gv_set_str(c->m, op, "reduction", red);
  same_type(op->res[0], in[0]);
  return out(c, n, 0, op->res[0]);
}

/* GatherElements / ScatterElements (every reduction) ->
 * gather_elements / scatter_elements with the axis as given. */
static int h_elements(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  const char *red = astr(c, n, "reduction", "none");
  gv_op *op = emit(c, (gv_opcode)code, code == GV_OP_SCATTER_ELEMENTS ? 3 : 2, in, 1);
  gv_set_int(c->m, op, "axis", ai(n, "axis", 0));
  if (code == GV_OP_SCATTER_ELEMENTS) {
    gv_set_str(c->m, op, "reduction", red);
    same_type(op->res[0], in[0]);
  } else {
    op->res[0]->type = in[1]->type;
    op->res[0]->type.dtype = in[0]->type.dtype;
  }
  return out(c, n, 0, op->res[0]);
}

/* ---------------------------------------------------------------- composed ops */

/* One core op whose result type shape-infer gives (dtype dt, rank unknown). */
static gv_value *op1(gv_ictx *c, gv_opcode code, int n, gv_value *const *in, gv_dtype dt) {
  gv_op *op = emit(c, code, n, in, 1);
  op->res[0]->type = gv_type_unranked(dt);
  return op->res[0];
}

static gv_value *op2(gv_ictx *c, gv_opcode code, gv_value *a, gv_value *b, gv_dtype dt) {
  gv_value *in[2] = {a, b};
  return op1(c, code, 2, in, dt);
}

static gv_value *cast_to(gv_ictx *c, gv_value *x, gv_dtype dt) {
  if (x->type.dtype == dt) return x;
  gv_op *op = emit(c, GV_OP_CAST, 1, &x, 1);
  gv_set_type(c->m, op, "to", dt);
  op->res[0]->type = x->type;
  op->res[0]->type.dtype = dt;
  return op->res[0];
}

/* OneHot: where(unsqueeze(indices, axis) == range(depth) shaped [depth, 1..],
 * on, off); negative indices count from depth. Built from core ops, so its
 * evaluator, kernels, gradient (through where) and sharding are theirs. */
static int h_onehot(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int64_t axis = ai(n, "axis", -1), trail;
  int r = rank_of(in[0]);
  if (axis < 0) trail = -axis - 1;
  else if (r >= 0) trail = r - axis;
  else return gv_node_error(c, "OneHot with axis %lld needs the rank of its indices", (long long)axis);
  if (trail < 0 || trail >= GV_MAX_RANK || (r >= 0 && trail > r))
    return gv_node_error(c, "OneHot axis %lld out of range", (long long)axis);
  gv_value *ind = cast_to(c, in[0], GV_DT_I64);
  int64_t none = 0;
  gv_value *shp_scalar = const_i64(c, 0, &none);
  gv_value *rs[2] = {in[1], shp_scalar};
  gv_value *depth = cast_to(c, op1(c, GV_OP_RESHAPE, 2, rs, in[1]->type.dtype), GV_DT_I64);
  gv_value *zero = const_scalar(c, GV_DT_I64, 0), *one = const_scalar(c, GV_DT_I64, 1);
  gv_value *neg = op2(c, GV_OP_LESS, ind, zero, GV_DT_BOOL);
  gv_value *w[3] = {neg, op2(c, GV_OP_ADD, ind, depth, GV_DT_I64), ind};
  ind = op1(c, GV_OP_WHERE, 3, w, GV_DT_I64);
  gv_op *u = emit(c, GV_OP_UNSQUEEZE, 1, &ind, 1);
  gv_set_ints(c->m, u, "axes", 1, &axis);
  u->res[0]->type = gv_type_unranked(GV_DT_I64);
  gv_value *rg[3] = {zero, depth, one};
  gv_value *range = op1(c, GV_OP_RANGE, 3, rg, GV_DT_I64);
  int64_t shp[GV_MAX_RANK + 1];
  shp[0] = -1;
  for (int64_t i = 0; i < trail; i++) shp[1 + i] = 1;
  gv_value *rr[2] = {range, const_i64(c, (int)trail + 1, shp)};
  gv_value *col = op1(c, GV_OP_RESHAPE, 2, rr, GV_DT_I64);
  gv_value *eq = op2(c, GV_OP_EQUAL, u->res[0], col, GV_DT_BOOL);
  gv_dtype vt = in[2]->type.dtype;
  gv_value *g0[2] = {in[2], zero}, *g1[2] = {in[2], one};
  gv_op *off = emit(c, GV_OP_GATHER, 2, g0, 1), *on = emit(c, GV_OP_GATHER, 2, g1, 1);
  gv_set_int(c->m, off, "axis", 0);
  gv_set_int(c->m, on, "axis", 0);
  off->res[0]->type = on->res[0]->type = gv_type_make(vt, 0, NULL);
  gv_value *sel[3] = {eq, on->res[0], off->res[0]};
  return out(c, n, 0, op1(c, GV_OP_WHERE, 3, sel, vt));
}

/* ArgMax / ArgMin: the first (select_last_index: last) position along the
 * axis where x equals its reduce_max (reduce_min): where(x == m, position,
 * BIG) reduced with min (last: where(.., -1) with max), positions as f32
 * (exact below 2^24) so the reductions run on every target; cast to i64. */
static int h_argmax(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  int64_t axis = ai(n, "axis", 0), keep = ai(n, "keepdims", 1) ? 1 : 0, last = ai(n, "select_last_index", 0);
  int r = rank_of(in[0]);
  int64_t trail = axis < 0 ? -axis - 1 : r >= 0 ? r - 1 - axis : -1;
  if (trail < 0 || trail >= GV_MAX_RANK)
    return gv_node_error(c, "%s axis %lld needs the rank of its input", n->op_type, (long long)axis);
  gv_dtype dt = in[0]->type.dtype;
  if (!gv_dtype_is_float(dt) && dt != GV_DT_UNKNOWN)
    return gv_node_error(c, "unsupported: %s on %s (float inputs only)", n->op_type, gv_dtype_name(dt));
  gv_op *red = emit(c, (gv_opcode)code, 1, in, 1);
  gv_set_ints(c->m, red, "axes", 1, &axis);
  gv_set_int(c->m, red, "keepdims", 1);
  red->res[0]->type = gv_type_unranked(dt);
  gv_value *eq = op2(c, GV_OP_EQUAL, in[0], red->res[0], GV_DT_BOOL);
  gv_op *sh = emit(c, GV_OP_SHAPE, 1, in, 1);
  sh->res[0]->type = gv_type_unranked(GV_DT_I64);
  gv_value *g[2] = {sh->res[0], const_scalar(c, GV_DT_I64, (double)axis)};
  gv_op *dim = emit(c, GV_OP_GATHER, 2, g, 1);
  gv_set_int(c->m, dim, "axis", 0);
  dim->res[0]->type = gv_type_make(GV_DT_I64, 0, NULL);
  gv_value *rg[3] = {const_scalar(c, GV_DT_I64, 0), dim->res[0], const_scalar(c, GV_DT_I64, 1)};
  gv_value *pos = cast_to(c, op1(c, GV_OP_RANGE, 3, rg, GV_DT_I64), GV_DT_F32);
  int64_t shp[GV_MAX_RANK + 1];
  shp[0] = -1;
  for (int64_t i = 0; i < trail; i++) shp[1 + i] = 1;
  gv_value *rs[2] = {pos, const_i64(c, (int)trail + 1, shp)};
  pos = op1(c, GV_OP_RESHAPE, 2, rs, GV_DT_F32);
  gv_value *w[3] = {eq, pos, const_scalar(c, GV_DT_F32, last ? -1.0 : 16777216.0)};
  gv_op *pick = emit(c, last ? GV_OP_REDUCE_MAX : GV_OP_REDUCE_MIN, 1, (gv_value *[]){op1(c, GV_OP_WHERE, 3, w, GV_DT_F32)}, 1);
  gv_set_ints(c->m, pick, "axes", 1, &axis);
  gv_set_int(c->m, pick, "keepdims", keep);
  pick->res[0]->type = gv_type_unranked(GV_DT_F32);
  return out(c, n, 0, cast_to(c, pick->res[0], GV_DT_I64));
}

/* Einsum of one or two operands without ellipsis or repeated letters in an
 * operand (a diagonal): letters only in one operand and not in the output
 * are summed first; then dot_general (letters in both and the output:
 * batch; in both only: contracted; else free) and the transpose into the
 * output's order. */
static int h_einsum(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  const char *eq = astr(c, n, "equation", NULL);
  if (!eq) return gv_node_error(c, "Einsum without 'equation'");
  char term[3][GV_MAX_RANK + 1] = {{0}};
  int nt = 0, len[3] = {0, 0, 0};
  bool arrow = false;
  for (const char *p = eq; *p; p++) {
    if (*p == ' ') continue;
    if (*p == ',' && !arrow && nt < 2) { nt++; continue; }
    if (*p == '-' && p[1] == '>' && !arrow) { arrow = true; nt = 2; p++; continue; }
    if (*p == '.') return gv_node_error(c, "unsupported: Einsum with an ellipsis ('%s')", gv_esc(c, eq));
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || len[nt] >= GV_MAX_RANK)
      return gv_node_error(c, "Einsum equation '%s' is malformed", gv_esc(c, eq));
    for (int i = 0; i < len[nt]; i++)
      if (term[nt][i] == *p)
        return gv_node_error(c, "unsupported: Einsum with a repeated index in one term ('%s')", gv_esc(c, eq));
    term[nt][len[nt]++] = *p;
  }
  int nops = strchr(eq, ',') ? 2 : 1;
  if (nops != nin) return gv_node_error(c, "Einsum equation '%s' has %d operands, the node %d", gv_esc(c, eq), nops, nin);
  if (nin > 2) return gv_node_error(c, "unsupported: Einsum of %d operands", nin);
  if (!arrow) { /* implicit output: the letters seen once, sorted */
    for (int ch = 'A'; ch <= 'z'; ch++) {
      int k = 0;
      for (int t = 0; t < nops; t++) k += memchr(term[t], ch, (size_t)len[t]) != NULL;
      if (k == 1 && len[2] < GV_MAX_RANK) term[2][len[2]++] = (char)ch;
    }
  }
  for (int t = 0; t < nops; t++)
    if (rank_of(in[t]) >= 0 && rank_of(in[t]) != len[t])
      return gv_node_error(c, "Einsum term '%s' has %d letters for an operand of rank %d", term[t], len[t], rank_of(in[t]));
  gv_value *x[2] = {in[0], nin > 1 ? in[1] : NULL};
  /* sum the letters only one operand has and the output does not */
  for (int t = 0; t < nops; t++) {
    int64_t axes[GV_MAX_RANK];
    int na = 0, keep = 0;
    char kept[GV_MAX_RANK + 1] = {0};
    for (int i = 0; i < len[t]; i++) {
      char ch = term[t][i];
      bool other = nops == 2 && memchr(term[1 - t], ch, (size_t)len[1 - t]), outp = memchr(term[2], ch, (size_t)len[2]);
      if (!other && !outp) axes[na++] = i;
      else kept[keep++] = ch;
    }
    if (na) {
      gv_op *op = emit(c, GV_OP_REDUCE_SUM, 1, &x[t], 1);
      gv_set_ints(c->m, op, "axes", na, axes);
      gv_set_int(c->m, op, "keepdims", 0);
      op->res[0]->type = gv_type_unranked(x[t]->type.dtype);
      x[t] = op->res[0];
      memcpy(term[t], kept, sizeof kept);
      len[t] = keep;
    }
  }
  char got[GV_MAX_RANK * 2 + 1] = {0};
  int ng = 0;
  gv_value *y = x[0];
  if (nops == 1) {
    memcpy(got, term[0], (size_t)len[0]);
    ng = len[0];
  } else {
    int64_t lb[GV_MAX_RANK], rb[GV_MAX_RANK], lc[GV_MAX_RANK], rc[GV_MAX_RANK];
    int nb = 0, ncn = 0;
    for (int i = 0; i < len[0]; i++) {
      const char *q = memchr(term[1], term[0][i], (size_t)len[1]);
      if (!q) continue;
      if (memchr(term[2], term[0][i], (size_t)len[2])) lb[nb] = i, rb[nb++] = q - term[1], got[ng++] = term[0][i];
      else lc[ncn] = i, rc[ncn++] = q - term[1];
    }
    for (int i = 0; i < len[0]; i++)
      if (!memchr(term[1], term[0][i], (size_t)len[1])) got[ng++] = term[0][i];
    for (int i = 0; i < len[1]; i++)
      if (!memchr(term[0], term[1][i], (size_t)len[0])) got[ng++] = term[1][i];
    gv_op *op = emit(c, GV_OP_DOT, 2, x, 1);
    gv_set_ints(c->m, op, "lhs_batch", nb, lb);
    gv_set_ints(c->m, op, "rhs_batch", nb, rb);
    gv_set_ints(c->m, op, "lhs_contract", ncn, lc);
    gv_set_ints(c->m, op, "rhs_contract", ncn, rc);
    op->res[0]->type = gv_type_unranked(x[0]->type.dtype);
    y = op->res[0];
  }
  if (ng != len[2]) return gv_node_error(c, "Einsum equation '%s': output letters do not match the inputs", gv_esc(c, eq));
  int64_t perm[GV_MAX_RANK];
  bool ident = true;
  for (int i = 0; i < len[2]; i++) {
    const char *q = memchr(got, term[2][i], (size_t)ng);
    if (!q) return gv_node_error(c, "Einsum equation '%s': output letter '%c' is in no input", gv_esc(c, eq), term[2][i]);
    perm[i] = q - got;
    ident = ident && perm[i] == i;
  }
  if (!ident) {
    gv_op *op = emit(c, GV_OP_TRANSPOSE, 1, &y, 1);
    gv_set_ints(c->m, op, "perm", len[2], perm);
    op->res[0]->type = gv_type_unranked(y->type.dtype);
    y = op->res[0];
  }
  return out(c, n, 0, y);
}

/* axes from the attribute (before since) or the constant input 1 */
static int get_axes(gv_ictx *c, node_t *n, gv_value **in, int nin, int since, int64_t *axes, bool *present) {
  *present = false;
  if (c->opset < since) {
    const int64_t *v;
    int k = aints(n, "axes", &v);
    if (k < 0) return 0;
    if (k > GV_MAX_RANK) return gv_node_error(c, "too many axes (%d)", k);
    memcpy(axes, v, (size_t)k * sizeof *axes);
    *present = true;
    return k;
  }
  if (nin < 2 || !in[1]) return 0;
  int k = const_ints(in[1], axes, GV_MAX_RANK);
  if (k < 0) return gv_node_error(c, "unsupported: non-constant axes");
  *present = true;
  return k;
}

static int h_unsqueeze(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  int64_t axes[GV_MAX_RANK];
  bool present;
  int k = get_axes(c, n, in, nin, 13, axes, &present);
  if (k < 0) return -1;
  if (!present) return gv_node_error(c, "Unsqueeze without axes");
  gv_op *op = emit(c, GV_OP_UNSQUEEZE, 1, in, 1);
  gv_set_ints(c->m, op, "axes", k, axes);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (r >= 0 && r + k <= GV_MAX_RANK) {
    int nr = r + k;
    bool ins[GV_MAX_RANK] = {0}, ok = true;
    for (int i = 0; i < k; i++) {
      int64_t a = norm_axis(axes[i], nr);
      if (a < 0 || a >= nr || ins[a]) ok = false;
      else ins[a] = true;
    }
    if (ok) {
      int64_t dims[GV_MAX_RANK];
      for (int i = 0, j = 0; i < nr; i++) dims[i] = ins[i] ? 1 : in[0]->type.dims[j++];
      settype(op->res[0], in[0]->type.dtype, nr, dims);
    }
  }
  return out(c, n, 0, op->res[0]);
}

static int h_squeeze(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  int64_t axes[GV_MAX_RANK];
  bool present;
  int k = get_axes(c, n, in, nin, 13, axes, &present);
  if (k < 0) return -1;
  gv_op *op = emit(c, GV_OP_SQUEEZE, 1, in, 1);
  if (present) gv_set_ints(c->m, op, "axes", k, axes);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (r >= 0) {
    bool drop[GV_MAX_RANK] = {0}, ok = true;
    if (present) {
      for (int i = 0; i < k; i++) {
        int64_t a = norm_axis(axes[i], r);
        if (a < 0 || a >= r) ok = false;
        else drop[a] = true;
      }
    } else {
      for (int i = 0; i < r; i++) {
        if (in[0]->type.dims[i] < 0) ok = false;
        drop[i] = in[0]->type.dims[i] == 1;
      }
    }
    if (ok) {
      int64_t dims[GV_MAX_RANK];
      int nr = 0;
      for (int i = 0; i < r; i++)
        if (!drop[i]) dims[nr++] = in[0]->type.dims[i];
      settype(op->res[0], in[0]->type.dtype, nr, dims);
    }
  }
  return out(c, n, 0, op->res[0]);
}

static int h_flatten(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_FLATTEN, 1, in, 1);
  int64_t axis = ai(n, "axis", 1);
  gv_set_int(c->m, op, "axis", axis);
  int r = rank_of(in[0]);
  int64_t dims[2] = {-1, -1};
  if (r >= 0) {
    int64_t a = norm_axis(axis, r);
    if (a >= 0 && a <= r) {
      int64_t p[2] = {1, 1};
      for (int i = 0; i < r; i++) {
        int64_t d = in[0]->type.dims[i];
        int64_t *acc = &p[i < a ? 0 : 1];
        if (d < 0 || *acc < 0) *acc = -1;
        else if (d && *acc > INT64_MAX / d) *acc = -1;
        else *acc *= d;
      }
      dims[0] = p[0], dims[1] = p[1];
    }
  }
  settype(op->res[0], in[0]->type.dtype, 2, dims);
  return out(c, n, 0, op->res[0]);
}

static int h_concat(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  const Onnx__AttributeProto *a = attr(n, "axis");
  if (!a || !a->has_i) return gv_node_error(c, "Concat without 'axis'");
  for (int i = 0; i < nin; i++)
    if (!in[i]) return gv_node_error(c, "input %d is empty", i);
  gv_op *op = emit(c, GV_OP_CONCAT, nin, in, 1);
  gv_set_int(c->m, op, "axis", a->i);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (r >= 0) {
    int64_t ax = norm_axis(a->i, r), dims[GV_MAX_RANK];
    if (ax >= 0 && ax < r) {
      memcpy(dims, in[0]->type.dims, sizeof(int64_t) * (size_t)r);
      int64_t sum = 0;
      for (int i = 0; i < nin; i++) {
        int64_t d = in[i]->type.rank == r ? in[i]->type.dims[ax] : -1;
        sum = (d < 0 || sum < 0 || sum > INT64_MAX - d) ? -1 : sum + d;
      }
      dims[ax] = sum;
      settype(op->res[0], in[0]->type.dtype, r, dims);
    }
  }
  return out(c, n, 0, op->res[0]);
}

static int h_reshape(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int64_t allowzero = ai(n, "allowzero", 0);
  gv_op *op = emit(c, GV_OP_RESHAPE, 2, in, 1);
  gv_set_int(c->m, op, "allowzero", allowzero);
  int64_t sh[GV_MAX_RANK];
  int k = const_ints(in[1], sh, GV_MAX_RANK);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (k >= 0) {
    int64_t dims[GV_MAX_RANK];
    int infer = -1;
    for (int i = 0; i < k; i++) {
      if (sh[i] > 0) dims[i] = sh[i];
      else if (sh[i] == 0 && !allowzero) dims[i] = i < rank_of(in[0]) ? in[0]->type.dims[i] : -1;
      else if (sh[i] == 0) dims[i] = 0;
      else { dims[i] = -1; infer = i; }
    }
    int64_t total = gv_type_numel(&in[0]->type);
    if (infer >= 0 && total >= 0) {
      int64_t p = 1;
      for (int i = 0; i < k && p > 0; i++)
        if (i != infer) p = dims[i] < 0 || (dims[i] && p > INT64_MAX / dims[i]) ? -1 : p * dims[i];
      if (p > 0 && total % p == 0) dims[infer] = total / p;
    }
    settype(op->res[0], in[0]->type.dtype, k, dims);
  } else if (len1(in[1]) >= 0) {
    settype(op->res[0], in[0]->type.dtype, (int)(len1(in[1]) > GV_MAX_RANK ? -1 : len1(in[1])), NULL);
  }
  return out(c, n, 0, op->res[0]);
}

static int h_transpose(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_TRANSPOSE, 1, in, 1);
  const int64_t *perm = NULL;
  int k = aints(n, "perm", &perm);
  if (k >= 0) gv_set_ints(c->m, op, "perm", k, perm);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (r >= 0 && (k < 0 || k == r)) {
    int64_t dims[GV_MAX_RANK];
    bool ok = true;
    for (int i = 0; i < r; i++) {
      int64_t p = k < 0 ? r - 1 - i : perm[i];
      if (p < 0 || p >= r) ok = false;
      else dims[i] = in[0]->type.dims[p];
    }
    if (ok) settype(op->res[0], in[0]->type.dtype, r, dims);
  }
  return out(c, n, 0, op->res[0]);
}

/* ONNX Slice length of one axis */
static int64_t slice_len(int64_t d, int64_t s, int64_t e, int64_t st) {
  if (d < 0 || st == 0) return -1;
  if (s < 0) s += d;
  if (e < 0) e += d;
  if (st > 0) {
    s = s < 0 ? 0 : s > d ? d : s;
    e = e < 0 ? 0 : e > d ? d : e;
    return e > s ? (e - s - 1) / st + 1 : 0; /* ceil without overflow for huge steps */
  }
  s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
  e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
  if (st == INT64_MIN) return s > e ? 1 : 0;
  return s > e ? (s - e - 1) / (-st) + 1 : 0;
}

static int h_slice(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  enum { MAXK = GV_MAX_RANK };
  int64_t st[MAXK], en[MAXK], ax[MAXK], sp[MAXK];
  int ks = const_ints(in[1], st, MAXK), ke = const_ints(in[2], en, MAXK);
  int ka = nin > 3 && in[3] ? const_ints(in[3], ax, MAXK) : -2; /* -2: absent */
  int kp = nin > 4 && in[4] ? const_ints(in[4], sp, MAXK) : -2;
  int r = rank_of(in[0]);
  if (ks >= 0 && ke == ks && ka != -1 && kp != -1 && (ka < 0 || ka == ks) && (kp < 0 || kp == ks)) {
    /* all constant: the static form */
    for (int i = 0; i < ks; i++) {
      if (ka < 0) ax[i] = i;
      if (kp < 0) sp[i] = 1;
    }
    gv_op *op = emit(c, GV_OP_SLICE, 1, in, 1);
    gv_set_ints(c->m, op, "starts", ks, st);
    gv_set_ints(c->m, op, "ends", ks, en);
    gv_set_ints(c->m, op, "axes", ks, ax);
    gv_set_ints(c->m, op, "steps", ks, sp);
    op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
    if (r >= 0) {
      int64_t dims[GV_MAX_RANK];
      memcpy(dims, in[0]->type.dims, sizeof(int64_t) * (size_t)r);
      for (int i = 0; i < ks; i++) {
        int64_t a = norm_axis(ax[i], r);
        if (a >= 0 && a < r) dims[a] = slice_len(in[0]->type.dims[a], st[i], en[i], sp[i]);
      }
      settype(op->res[0], in[0]->type.dtype, r, dims);
    }
    return out(c, n, 0, op->res[0]);
  }
  gv_value *ops[5] = {in[0], in[1], in[2], nin > 3 ? in[3] : NULL, nin > 4 ? in[4] : NULL};
  int k = 3;
  if (ops[4]) {
    if (!ops[3]) { /* steps without axes: the operand form needs explicit axes */
      int64_t len = ks >= 0 ? ks : len1(in[1]);
      if (len < 0 || len > MAXK) return gv_node_error(c, "unsupported: Slice with steps but no axes on an unknown length");
      for (int i = 0; i < len; i++) ax[i] = i;
      ops[3] = const_i64(c, (int)len, ax);
    }
    k = 5;
  } else if (ops[3]) {
    k = 4;
  }
  gv_op *op = emit(c, GV_OP_SLICE, k, ops, 1);
  settype(op->res[0], in[0]->type.dtype, r, NULL);
  return out(c, n, 0, op->res[0]);
}

static int h_split(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  int64_t axis = ai(n, "axis", 0);
  int nout = (int)n->n_output;
  if (nout < 1 || nout > 4096) return gv_node_error(c, "Split with %d outputs", nout);
  int64_t *sizes = gv_alloc(c->tmp, (size_t)nout * sizeof *sizes);
  int r = rank_of(in[0]);
  int64_t a = r >= 0 ? norm_axis(axis, r) : -1;
  int64_t dim = (r >= 0 && a >= 0 && a < r) ? in[0]->type.dims[a] : -1;
  const int64_t *sv;
  int ks = -1;
  if (nin > 1 && in[1]) {
    ks = const_ints(in[1], sizes, nout);
    if (ks < 0) return gv_node_error(c, "unsupported: non-constant split sizes (or more sizes than outputs)");
  } else if ((ks = aints(n, "split", &sv)) >= 0) {
    if (ks != nout) return gv_node_error(c, "Split has %d sizes for %d outputs", ks, nout);
    memcpy(sizes, sv, (size_t)ks * sizeof *sizes);
  } else {
    int64_t parts = ai(n, "num_outputs", nout);
    if (parts != nout) return gv_node_error(c, "Split num_outputs %lld != %d outputs", (long long)parts, nout);
    if (dim < 0) return gv_node_error(c, "unsupported: Split without sizes on an unknown dim");
    /* equal split; from opset 18 the last chunk may be smaller */
    int64_t chunk = dim / nout + (dim % nout != 0);
    if (c->opset < 18 && dim % nout) return gv_node_error(c, "Split of dim %lld into %d equal parts", (long long)dim, nout);
    int64_t left = dim;
    for (int i = 0; i < nout; i++) {
      sizes[i] = left < chunk ? left : chunk;
      left -= sizes[i];
    }
    ks = nout;
  }
  if (ks != nout) return gv_node_error(c, "Split has %d sizes for %d outputs", ks, nout);
  gv_op *op = emit(c, GV_OP_SPLIT, 1, in, nout);
  gv_set_int(c->m, op, "axis", axis);
  gv_set_ints(c->m, op, "sizes", nout, sizes);
  for (int i = 0; i < nout; i++) {
    gv_value *v = op->res[i];
    v->type = in[0]->type;
    if (r >= 0 && a >= 0 && a < r) v->type.dims[a] = sizes[i];
    if (out(c, n, i, v)) return -1;
  }
  return 0;
}

static int h_expand(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_op *op = emit(c, GV_OP_EXPAND, 2, in, 1);
  int64_t sh[GV_MAX_RANK];
  int k = const_ints(in[1], sh, GV_MAX_RANK);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (k >= 0 && r >= 0) {
    int nr = k > r ? k : r;
    int64_t dims[GV_MAX_RANK];
    for (int i = 0; i < nr; i++) {
      int64_t x = i - (nr - r) >= 0 ? in[0]->type.dims[i - (nr - r)] : 1;
      int64_t s = i - (nr - k) >= 0 ? sh[i - (nr - k)] : 1;
      dims[i] = x == 1 ? s : (s == 1 || s == x) ? x : -1;
    }
    settype(op->res[0], in[0]->type.dtype, nr, dims);
  } else if (r >= 0 && len1(in[1]) >= 0) {
    int64_t l = len1(in[1]);
    settype(op->res[0], in[0]->type.dtype, (int)(l > r ? (l > GV_MAX_RANK ? -1 : l) : r), NULL);
  }
  return out(c, n, 0, op->res[0]);
}

static int h_tile(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int64_t rep[GV_MAX_RANK];
  int k = const_ints(in[1], rep, GV_MAX_RANK);
  int r = rank_of(in[0]);
  gv_op *op;
  if (k >= 0) {
    op = emit(c, GV_OP_TILE, 1, in, 1);
    gv_set_ints(c->m, op, "repeats", k, rep);
    int64_t dims[GV_MAX_RANK];
    for (int i = 0; i < r && k == r; i++) {
      int64_t d = in[0]->type.dims[i];
      dims[i] = (d < 0 || rep[i] < 0 || (rep[i] && d > INT64_MAX / rep[i])) ? -1 : d * rep[i];
    }
    settype(op->res[0], in[0]->type.dtype, k == r ? r : -1, dims);
  } else {
    op = emit(c, GV_OP_TILE, 2, in, 1);
    settype(op->res[0], in[0]->type.dtype, r, NULL);
  }
  return out(c, n, 0, op->res[0]);
}

static int h_range(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_dtype dt = in[0]->type.dtype;
  /* Range-27 stash_type 0: accumulate in float16 itself (the evaluator computes start + i * delta exactly) */
  if (c->opset >= 27 && ai(n, "stash_type", 1) == 0 && (dt == GV_DT_F16 || dt == GV_DT_BF16))
    return gv_node_error(c, "unsupported: Range with stash_type=0 (accumulation in %s)", gv_dtype_name(dt));
  gv_op *op = emit(c, GV_OP_RANGE, 3, in, 1);
  int64_t len = -1;
  const gv_tensor *s = cval(in[0]), *l = cval(in[1]), *d = cval(in[2]);
  if (s && l && d && gv_tensor_numel(s) == 1 && gv_tensor_numel(l) == 1 && gv_tensor_numel(d) == 1) {
    double sv = gv_tensor_get_f(s, 0), lv = gv_tensor_get_f(l, 0), dv = gv_tensor_get_f(d, 0);
    if (dv != 0) {
      double q = (lv - sv) / dv;
      if (q > 0 && q < 1e15) {
        int64_t iq = (int64_t)q;
        len = (double)iq < q ? iq + 1 : iq;
      } else if (q <= 0) {
        len = 0;
      }
    }
  }
  settype(op->res[0], in[0]->type.dtype, 1, &len);
  return out(c, n, 0, op->res[0]);
}

static int h_constant_of_shape(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_dtype dt = GV_DT_F32;
  gv_tensor *val = NULL;
  const Onnx__AttributeProto *a = attr(n, "value");
  if (a && a->t) {
    if (!(val = gv_onnx_tensor(c, a->t, "ConstantOfShape 'value'"))) return -1;
    if (gv_tensor_numel(val) != 1) return gv_node_error(c, "ConstantOfShape value must have one element");
    dt = val->type.dtype;
  }
  gv_op *op = emit(c, GV_OP_CONSTANT_OF_SHAPE, 1, in, 1);
  if (val) gv_set_tensor(c->m, op, "value", val);
  int64_t sh[GV_MAX_RANK];
  int k = const_ints(in[0], sh, GV_MAX_RANK);
  if (k >= 0) {
    for (int i = 0; i < k; i++)
      if (sh[i] < 0) sh[i] = -1;
    settype(op->res[0], dt, k, sh);
  } else {
    int64_t l = len1(in[0]);
    settype(op->res[0], dt, l > GV_MAX_RANK ? -1 : (int)l, NULL);
  }
  return out(c, n, 0, op->res[0]);
}

static int h_trilu(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  int64_t k[1];
  gv_op *op;
  if (nin > 1 && in[1]) {
    const gv_tensor *t = cval(in[1]);
    if (t && gv_dtype_is_int(t->type.dtype) && gv_tensor_numel(t) == 1) {
      k[0] = gv_tensor_get_i(t, 0);
      op = emit(c, GV_OP_TRILU, 1, in, 1);
      gv_set_int(c->m, op, "k", k[0]);
    } else {
      op = emit(c, GV_OP_TRILU, 2, in, 1);
    }
  } else {
    op = emit(c, GV_OP_TRILU, 1, in, 1);
    gv_set_int(c->m, op, "k", 0);
  }
  gv_set_int(c->m, op, "upper", ai(n, "upper", 1) ? 1 : 0);
  same_type(op->res[0], in[0]);
  return out(c, n, 0, op->res[0]);
}

static int h_cumsum(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  const gv_tensor *t = cval(in[1]);
  if (!t || !gv_dtype_is_int(t->type.dtype) || gv_tensor_numel(t) != 1)
    return gv_node_error(c, "unsupported: non-constant CumSum axis");
  gv_op *op = emit(c, GV_OP_CUMSUM, 1, in, 1);
  gv_set_int(c->m, op, "axis", gv_tensor_get_i(t, 0));
  gv_set_int(c->m, op, "exclusive", ai(n, "exclusive", 0));
  gv_set_int(c->m, op, "reverse", ai(n, "reverse", 0));
  same_type(op->res[0], in[0]);
  return out(c, n, 0, op->res[0]);
}

static int h_reduce(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  int since = code == GV_OP_REDUCE_SUM ? 13 : 18; /* axes became an input */
  int64_t axes[GV_MAX_RANK];
  bool present;
  int k = get_axes(c, n, in, nin, since, axes, &present);
  if (k < 0) return -1;
  int64_t keep = ai(n, "keepdims", 1);
  if (c->opset >= since && ai(n, "noop_with_empty_axes", 0) && k == 0) return out(c, n, 0, in[0]);
  gv_op *op = emit(c, (gv_opcode)code, 1, in, 1);
  if (k > 0) gv_set_ints(c->m, op, "axes", k, axes);
  gv_set_int(c->m, op, "keepdims", keep ? 1 : 0);
  int r = rank_of(in[0]);
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (r >= 0) {
    bool red[GV_MAX_RANK] = {0}, ok = true;
    for (int i = 0; i < r; i++) red[i] = k == 0;
    for (int i = 0; i < k; i++) {
      int64_t a = norm_axis(axes[i], r);
      if (a < 0 || a >= r) ok = false;
      else red[a] = true;
    }
    if (ok) {
      int64_t dims[GV_MAX_RANK];
      int nr = 0;
      for (int i = 0; i < r; i++) {
        if (!red[i]) dims[nr++] = in[0]->type.dims[i];
        else if (keep) dims[nr++] = 1;
      }
      settype(op->res[0], in[0]->type.dtype, nr, dims);
    }
  }
  return out(c, n, 0, op->res[0]);
}

static int h_softmax(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  gv_op *op = emit(c, (gv_opcode)code, 1, in, 1);
  gv_set_int(c->m, op, "axis", ai(n, "axis", -1));
  same_type(op->res[0], in[0]);
  return out(c, n, 0, op->res[0]);
}

/* LayerNormalization's optional Mean and InvStdDev outputs, in the stash
 * type (float32 unless stash_type says the input's type), over dims
 * axis..rank-1 with keepdims: reduce_mean(x), 1 / sqrt(reduce_mean((x -
 * mean)^2) + epsilon), as ONNX's function body computes them. */
static int layer_norm_stats(gv_ictx *c, node_t *n, gv_value *x, int64_t axis, float eps) {
  int r = rank_of(x);
  if (r < 1) return gv_node_error(c, "LayerNormalization with Mean / InvStdDev outputs needs a ranked input");
  int64_t a = norm_axis(axis, r);
  if (a < 0 || a >= r) return gv_node_error(c, "LayerNormalization axis %lld out of range for rank %d", (long long)axis, r);
  int64_t st = ai(n, "stash_type", 1);
  gv_dtype sdt = st == 1 ? GV_DT_F32 : x->type.dtype;
  if (st != 1 && gv_onnx_dtype((int32_t)st) != x->type.dtype)
    return gv_node_error(c, "unsupported: LayerNormalization stash_type %lld", (long long)st);
  if (x->type.dtype != sdt) {
    gv_op *cv = emit(c, GV_OP_CAST, 1, &x, 1);
    gv_set_type(c->m, cv, "to", sdt);
    cv->res[0]->type = x->type;
    cv->res[0]->type.dtype = sdt;
    x = cv->res[0];
  }
  int64_t axes[GV_MAX_RANK], dims[GV_MAX_RANK];
  int k = 0;
  for (int64_t i = a; i < r; i++) axes[k++] = i;
  for (int i = 0; i < r; i++) dims[i] = i < a ? x->type.dims[i] : 1;
  gv_op *mean = emit(c, GV_OP_REDUCE_MEAN, 1, &x, 1);
  gv_set_ints(c->m, mean, "axes", k, axes);
  gv_set_int(c->m, mean, "keepdims", 1);
  settype(mean->res[0], sdt, r, dims);
  gv_value *p[2] = {x, mean->res[0]};
  gv_op *d = emit(c, GV_OP_SUB, 2, p, 1);
  same_type(d->res[0], x);
  p[0] = p[1] = d->res[0];
  gv_op *sq = emit(c, GV_OP_MUL, 2, p, 1);
  same_type(sq->res[0], x);
  gv_op *var = emit(c, GV_OP_REDUCE_MEAN, 1, sq->res, 1);
  gv_set_ints(c->m, var, "axes", k, axes);
  gv_set_int(c->m, var, "keepdims", 1);
  settype(var->res[0], sdt, r, dims);
  p[0] = var->res[0];
  p[1] = const_scalar(c, sdt, eps);
  gv_op *ve = emit(c, GV_OP_ADD, 2, p, 1);
  same_type(ve->res[0], var->res[0]);
  gv_op *sd = emit(c, GV_OP_SQRT, 1, ve->res, 1);
  same_type(sd->res[0], var->res[0]);
  gv_op *inv = emit(c, GV_OP_RECIPROCAL, 1, sd->res, 1);
  same_type(inv->res[0], var->res[0]);
  return out(c, n, 1, mean->res[0]) || out(c, n, 2, inv->res[0]) ? -1 : 0;
}

static int h_layer_norm(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  if (outs_at_most(c, n, 3)) return -1;
  int64_t axis = ai(n, "axis", -1);
  float eps = af(n, "epsilon", 1e-5f);
  gv_op *op = emit(c, GV_OP_LAYER_NORM, nin > 2 && in[2] ? 3 : 2, in, 1);
  gv_set_int(c->m, op, "axis", axis);
  gv_set_float(c->m, op, "epsilon", eps);
  same_type(op->res[0], in[0]);
  if (out(c, n, 0, op->res[0])) return -1;
  bool stats = false;
  for (size_t i = 1; i < n->n_output && i < 3; i++) stats |= n->output[i] && *n->output[i];
  return stats ? layer_norm_stats(c, n, in[0], axis, eps) : 0;
}

/* dot with explicit dims; result type from the dot_general rule */
static gv_value *emit_dot(gv_ictx *c, gv_value *l, gv_value *r, int nb, const int64_t *lb, const int64_t *rb,
                          int64_t lc, int64_t rc) {
  gv_value *ops[2] = {l, r};
  gv_op *op = emit(c, GV_OP_DOT, 2, ops, 1);
  gv_set_ints(c->m, op, "lhs_batch", nb, lb);
  gv_set_ints(c->m, op, "rhs_batch", nb, rb);
  gv_set_ints(c->m, op, "lhs_contract", 1, &lc);
  gv_set_ints(c->m, op, "rhs_contract", 1, &rc);
  int lr = l->type.rank, rr = r->type.rank;
  int64_t dims[3 * GV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < nb; i++) {
    int64_t a = l->type.dims[lb[i]], b = r->type.dims[rb[i]];
    dims[k++] = a == b ? a : -1;
  }
  for (int i = 0; i < lr; i++) {
    bool skip = i == lc;
    for (int j = 0; j < nb; j++) skip |= i == lb[j];
    if (!skip) dims[k++] = l->type.dims[i];
  }
  for (int i = 0; i < rr; i++) {
    bool skip = i == rc;
    for (int j = 0; j < nb; j++) skip |= i == rb[j];
    if (!skip) dims[k++] = r->type.dims[i];
  }
  settype(op->res[0], l->type.dtype, k, dims);
  return op->res[0];
}

/* MatMul maps onto dot when the operand ranks are known and the batch dims
 * are known to be equal; otherwise (an unranked operand, as T5's .repeat
 * exports, or broadcast batch dims, as Falcon's multi-query attention) it
 * records what is known as galv.matmul, which fold-constants rewrites into
 * dot once shape-infer and folding made the types static. */
static int h_matmul(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int lr = rank_of(in[0]), rr = rank_of(in[1]);
  bool plain = lr >= 1 && rr >= 1 && !(lr == 2 && rr >= 3);
  int64_t lb[GV_MAX_RANK], rb[GV_MAX_RANK];
  int nb = 0;
  if (plain && lr >= 3 && rr >= 3) {
    plain = lr == rr;
    nb = lr - 2;
    for (int i = 0; i < nb && plain; i++) {
      int64_t a = in[0]->type.dims[i], b = in[1]->type.dims[i];
      plain = a >= 0 && a == b;
      lb[i] = rb[i] = i;
    }
  } else if (plain && rr < 3) {
    nb = 0;
  }
  if (!plain) {
    gv_op *op = emit(c, GV_OP_MATMUL, 2, in, 1);
    op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
    return out(c, n, 0, op->res[0]);
  }
  int64_t lc = lr - 1, rc = rr == 1 ? 0 : rr - 2;
  gv_value *v = emit_dot(c, in[0], in[1], nb, lb, rb, lc, rc);
  return out(c, n, 0, v);
}

static int h_gemm(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  if (rank_of(in[0]) >= 0 && rank_of(in[0]) != 2) return gv_node_error(c, "Gemm operand A must be 2-D");
  if (rank_of(in[1]) >= 0 && rank_of(in[1]) != 2) return gv_node_error(c, "Gemm operand B must be 2-D");
  int64_t ta = ai(n, "transA", 0), tb = ai(n, "transB", 0);
  float alpha = af(n, "alpha", 1.0f), beta = af(n, "beta", 1.0f);
  gv_value *ops[2] = {in[0], in[1]};
  gv_op *op = emit(c, GV_OP_DOT, 2, ops, 1);
  int64_t lc = ta ? 0 : 1, rc = tb ? 1 : 0;
  gv_set_ints(c->m, op, "lhs_batch", 0, NULL);
  gv_set_ints(c->m, op, "rhs_batch", 0, NULL);
  gv_set_ints(c->m, op, "lhs_contract", 1, &lc);
  gv_set_ints(c->m, op, "rhs_contract", 1, &rc);
  int64_t dims[2] = {rank_of(in[0]) == 2 ? in[0]->type.dims[1 - lc] : -1,
                     rank_of(in[1]) == 2 ? in[1]->type.dims[1 - rc] : -1};
  gv_dtype dt = in[0]->type.dtype;
  settype(op->res[0], dt, 2, dims);
  gv_value *y = op->res[0];
  if (alpha != 1.0f) {
    gv_value *p[2] = {y, const_scalar(c, dt, alpha)};
    gv_op *m = emit(c, GV_OP_MUL, 2, p, 1);
    m->res[0]->type = y->type;
    y = m->res[0];
  }
  if (nin > 2 && in[2] && beta != 0.0f) {
    gv_value *cc = in[2];
    if (beta != 1.0f) {
      gv_value *p[2] = {cc, const_scalar(c, cc->type.dtype, beta)};
      gv_op *m = emit(c, GV_OP_MUL, 2, p, 1);
      same_type(m->res[0], cc);
      cc = m->res[0];
    }
    gv_value *p[2] = {y, cc};
    gv_op *ad = emit(c, GV_OP_ADD, 2, p, 1);
    ad->res[0]->type = bcast((const gv_value *const *)p, 2, dt);
    y = ad->res[0];
  }
  return out(c, n, 0, y);
}

static int h_conv(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  const char *pad = astr(c, n, "auto_pad", "NOTSET");
  bool valid = strcmp(pad, "VALID") == 0;
  bool same_upper = strcmp(pad, "SAME_UPPER") == 0, same_lower = strcmp(pad, "SAME_LOWER") == 0;
  if (!valid && !same_upper && !same_lower && strcmp(pad, "NOTSET") != 0 && *pad)
    return gv_node_error(c, "unsupported: Conv auto_pad=%s", gv_esc(c, pad));
  int xr = rank_of(in[0]), wr = rank_of(in[1]);
  int nsp = wr >= 3 ? wr - 2 : xr >= 3 ? xr - 2 : -1;
  const int64_t *v;
  int k;
  if (nsp < 0 && (k = aints(n, "kernel_shape", &v)) > 0) nsp = k;
  if ((same_upper || same_lower) && nsp < 0)
    return gv_node_error(c, "unsupported: Conv auto_pad=%s with unknown input ranks", gv_esc(c, pad));
  gv_op *op = emit(c, GV_OP_CONV, nin > 2 && in[2] ? 3 : 2, in, 1);
  gv_set_int(c->m, op, "group", ai(n, "group", 1));
  int64_t strides[GV_MAX_RANK], dil[GV_MAX_RANK], pads[2 * GV_MAX_RANK];
  if (nsp > GV_MAX_RANK) return gv_node_error(c, "Conv with %d spatial dims", nsp);
  if (nsp >= 0) {
    for (int i = 0; i < nsp; i++) strides[i] = dil[i] = 1, pads[i] = pads[nsp + i] = 0;
    if ((k = aints(n, "strides", &v)) >= 0) {
      if (k != nsp) return gv_node_error(c, "Conv strides has %d values for %d spatial dims", k, nsp);
      memcpy(strides, v, (size_t)k * sizeof *v);
    }
    if ((k = aints(n, "dilations", &v)) >= 0) {
      if (k != nsp) return gv_node_error(c, "Conv dilations has %d values for %d spatial dims", k, nsp);
      memcpy(dil, v, (size_t)k * sizeof *v);
    }
    if (same_upper || same_lower) {
      /* output = ceil(x / stride); the odd pad goes at the end (UPPER) or the beginning (LOWER) */
      if (xr != nsp + 2 || wr != nsp + 2)
        return gv_node_error(c, "unsupported: Conv auto_pad=%s with unknown input ranks", gv_esc(c, pad));
      for (int i = 0; i < nsp; i++) {
        int64_t x = in[0]->type.dims[2 + i], kk = in[1]->type.dims[2 + i];
        if (x < 0 || kk < 0 || x > (1ll << 40) || kk > (1ll << 40) || strides[i] <= 0 || strides[i] > (1ll << 40) ||
            dil[i] <= 0 || dil[i] > (1ll << 20))
          return gv_node_error(c, "unsupported: Conv auto_pad=%s needs static spatial dims, strides and dilations",
                               gv_esc(c, pad));
        int64_t o = (x + strides[i] - 1) / strides[i];
        int64_t total = (o - 1) * strides[i] + (kk - 1) * dil[i] + 1 - x;
        if (total < 0) total = 0;
        pads[i] = same_upper ? total / 2 : total - total / 2;
        pads[nsp + i] = total - pads[i];
      }
    } else if (!valid && (k = aints(n, "pads", &v)) >= 0) {
      if (k != 2 * nsp) return gv_node_error(c, "Conv pads has %d values for %d spatial dims", k, nsp);
      memcpy(pads, v, (size_t)k * sizeof *v);
    }
    gv_set_ints(c->m, op, "strides", nsp, strides);
    gv_set_ints(c->m, op, "dilations", nsp, dil);
    gv_set_ints(c->m, op, "pads", 2 * nsp, pads);
  }
  op->res[0]->type = gv_type_unranked(in[0]->type.dtype);
  if (xr >= 3 && xr == wr && nsp == xr - 2) {
    int64_t dims[GV_MAX_RANK];
    dims[0] = in[0]->type.dims[0];
    dims[1] = in[1]->type.dims[0];
    for (int i = 0; i < nsp; i++) {
      int64_t x = in[0]->type.dims[2 + i], kk = in[1]->type.dims[2 + i];
      dims[2 + i] = -1;
      if (x < 0 || kk < 0 || strides[i] <= 0 || dil[i] <= 0 || llabs(pads[i]) > (1ll << 40) ||
          llabs(pads[nsp + i]) > (1ll << 40) || kk > (1ll << 40) || dil[i] > (1ll << 20) || x > (1ll << 40))
        continue;
      int64_t span = x + pads[i] + pads[nsp + i] - dil[i] * (kk - 1) - 1;
      if (span >= 0) dims[2 + i] = span / strides[i] + 1;
    }
    settype(op->res[0], in[0]->type.dtype, xr, dims);
  }
  return out(c, n, 0, op->res[0]);
}

static int import_branch(gv_ictx *c, gv_op *ifop, const Onnx__GraphProto *g, const char *label, int nout) {
  node_t *saved = c->node;
  gv_block *b = gv_block_new(c->m);
  gv_op_add_region(c->m, ifop, b);
  if (g->n_input) return gv_node_error(c, "%s branch has inputs", label);
  if ((int)g->n_output != nout)
    return gv_node_error(c, "%s branch has %zu outputs, the If node %d", label, g->n_output, nout);
  gv_scope_push(c, b);
  c->depth++;
  gv_value **outs;
  int rc = gv_import_graph_body(c, g, &outs);
  c->depth--;
  gv_scope_pop(c);
  c->node = saved;
  if (rc) return -1;
  gv_op *y = gv_op_new(c->m, GV_OP_YIELD, nout, outs, 0);
  gv_op_set_loc(c->m, y, label, NULL);
  gv_block_append(b, y);
  return 0;
}

static int h_if(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  const Onnx__AttributeProto *ta = attr(n, "then_branch"), *ea = attr(n, "else_branch");
  if (!ta || !ta->g || !ea || !ea->g) return gv_node_error(c, "If needs then_branch and else_branch graphs");
  if (c->depth >= 32) return gv_node_error(c, "If nested too deeply");
  int nout = (int)n->n_output;
  gv_op *op = emit(c, GV_OP_IF, 1, in, nout);
  if (import_branch(c, op, ta->g, "then", nout) || import_branch(c, op, ea->g, "else", nout)) return -1;
  gv_op *ty = gv_block_terminator(op->regions[0]), *ey = gv_block_terminator(op->regions[1]);
  for (int i = 0; i < nout; i++) {
    gv_type a = ty->opnds[i]->type, b = ey->opnds[i]->type;
    op->res[i]->type = gv_type_equal(&a, &b) ? a : gv_type_unranked(a.dtype == b.dtype ? a.dtype : GV_DT_UNKNOWN);
    if (out(c, n, i, op->res[i])) return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- vision and recurrent ops
 *
 * GlobalAveragePool / GlobalMaxPool, Clip, BatchNormalization, Pad,
 * ConvTranspose, Resize, LSTM and GRU decompose here into core ops, so their
 * evaluation, both targets' code, gradients and sharding are those of the
 * core ops (docs/ops.md, "Decomposed ONNX ops"); MaxPool / AveragePool map
 * onto galv.pool. Each emitted op's type comes from its own shape rule
 * (v_fin), so a decomposition that needs static dims (Pad's blocks, Resize's
 * interpolation matrices, the recurrences' unrolled steps) sees them when
 * the graph inputs are bound, and says so in one line otherwise. */

/* The op's result types from its shape rule; NULL after an error. */
static gv_value *v_fin(gv_ictx *c, gv_op *op) {
  const gv_tensor **vals = gv_alloc(c->tmp, (size_t)(op->nopnds + 1) * sizeof *vals);
  return gv_infer_op(c->m, op, vals) ? NULL : op->res[0];
}

static gv_op *v_emit(gv_ictx *c, gv_opcode code, int k, gv_value *const *in, int nres) {
  for (int i = 0; i < k; i++)
    if (!in[i]) return NULL;
  return emit(c, code, k, in, nres);
}

static gv_value *v_un(gv_ictx *c, gv_opcode code, gv_value *x) {
  gv_op *op = v_emit(c, code, 1, &x, 1);
  return op ? v_fin(c, op) : NULL;
}

static gv_value *v_bin(gv_ictx *c, gv_opcode code, gv_value *a, gv_value *b) {
  gv_value *p[2] = {a, b};
  gv_op *op = v_emit(c, code, 2, p, 1);
  return op ? v_fin(c, op) : NULL;
}

static gv_value *v_axes_op(gv_ictx *c, gv_opcode code, gv_value *x, int k, const int64_t *axes) {
  gv_op *op = v_emit(c, code, 1, &x, 1);
  if (!op) return NULL;
  gv_set_ints(c->m, op, "axes", k, axes);
  return v_fin(c, op);
}

/* a per-channel vector [C] as [1, C, 1...] for a rank-r NC... tensor */
static gv_value *v_chan(gv_ictx *c, gv_value *v, int r) {
  int64_t axes[GV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r; i++)
    if (i != 1) axes[k++] = i;
  return v_axes_op(c, GV_OP_UNSQUEEZE, v, k, axes);
}

static gv_value *v_reduce(gv_ictx *c, gv_opcode code, gv_value *x, int k, const int64_t *axes) {
  gv_op *op = v_emit(c, code, 1, &x, 1);
  if (!op) return NULL;
  gv_set_ints(c->m, op, "axes", k, axes);
  gv_set_int(c->m, op, "keepdims", 1);
  return v_fin(c, op);
}

static gv_value *v_slice(gv_ictx *c, gv_value *x, int64_t axis, int64_t st, int64_t en, int64_t step) {
  gv_op *op = v_emit(c, GV_OP_SLICE, 1, &x, 1);
  if (!op) return NULL;
  gv_set_ints(c->m, op, "starts", 1, &st);
  gv_set_ints(c->m, op, "ends", 1, &en);
  gv_set_ints(c->m, op, "axes", 1, &axis);
  gv_set_ints(c->m, op, "steps", 1, &step);
  return v_fin(c, op);
}

/* x[i] along axis 0, the axis dropped */
static gv_value *v_index0(gv_ictx *c, gv_value *x, int64_t i) {
  int64_t z = 0;
  return v_axes_op(c, GV_OP_SQUEEZE, v_slice(c, x, 0, i, i + 1, 1), 1, &z);
}

static gv_value *v_concat(gv_ictx *c, gv_value **v, int k, int64_t axis) {
  if (k == 1) return v[0];
  gv_op *op = v_emit(c, GV_OP_CONCAT, k, v, 1);
  if (!op) return NULL;
  gv_set_int(c->m, op, "axis", axis);
  return v_fin(c, op);
}

/* x broadcast to the static shape t (expand's static form) */
static gv_value *v_expand(gv_ictx *c, gv_value *x, int rank, const int64_t *dims) {
  gv_op *op = v_emit(c, GV_OP_EXPAND, 1, &x, 1);
  if (!op) return NULL;
  settype(op->res[0], x->type.dtype, rank, dims);
  return v_fin(c, op);
}

static gv_value *v_transpose(gv_ictx *c, gv_value *x, int r, const int64_t *perm) {
  gv_op *op = v_emit(c, GV_OP_TRANSPOSE, 1, &x, 1);
  if (!op) return NULL;
  gv_set_ints(c->m, op, "perm", r, perm);
  return v_fin(c, op);
}

/* k equal parts of size len along axis into parts[] */
static int v_split(gv_ictx *c, gv_value *x, int64_t axis, int k, int64_t len, gv_value **parts) {
  gv_op *op = v_emit(c, GV_OP_SPLIT, 1, &x, k);
  if (!op) return -1;
  int64_t sizes[8];
  for (int i = 0; i < k; i++) sizes[i] = len;
  gv_set_int(c->m, op, "axis", axis);
  gv_set_ints(c->m, op, "sizes", k, sizes);
  if (!v_fin(c, op)) return -1;
  for (int i = 0; i < k; i++) parts[i] = op->res[i];
  return 0;
}

/* x (rank r) contracted along axis with the rhs's axis rc: rhs free dims last */
static gv_value *v_dot(gv_ictx *c, gv_value *l, gv_value *r, int64_t lc, int64_t rc) {
  if (!l || !r) return NULL;
  gv_op *op = v_emit(c, GV_OP_DOT, 2, (gv_value *[]){l, r}, 1);
  gv_set_ints(c->m, op, "lhs_batch", 0, NULL);
  gv_set_ints(c->m, op, "rhs_batch", 0, NULL);
  gv_set_ints(c->m, op, "lhs_contract", 1, &lc);
  gv_set_ints(c->m, op, "rhs_contract", 1, &rc);
  return v_fin(c, op);
}

static gv_value *v_const(gv_ictx *c, gv_dtype dt, int rank, const int64_t *dims, const double *vals) {
  gv_tensor *t = gv_tensor_new(c->m->arena, gv_type_make(dt, rank, dims));
  for (int64_t i = 0; i < gv_tensor_numel(t); i++) gv_tensor_set_f(t, i, vals[i]);
  gv_op *op = emit(c, GV_OP_CONSTANT, 0, NULL, 1);
  gv_set_tensor(c->m, op, "value", t);
  op->res[0]->type = t->type;
  return op->res[0];
}

/* The value of a constant, or of a float initializer whose bytes are loaded
 * (Resize's scales as an initializer become a parameter; its value is still
 * known at import). NULL otherwise. */
static const gv_tensor *v_known(gv_ictx *c, const gv_value *v) {
  const gv_tensor *t = cval(v);
  if (t || v->def || !gv_type_is_static(&v->type) || v->type.rank != 1) return t;
  gv_func *f = c->m->main;
  for (int i = 0; i < f->body->nargs; i++)
    if (f->body->args[i] == v && f->arg_is_param[i] && f->param_data && f->param_data[i] && v->type.dtype == GV_DT_F32) {
      gv_tensor *k = gv_tensor_new(c->tmp, v->type);
      memcpy(k->data, f->param_data[i], sizeof(float) * (size_t)v->type.dims[0]);
      return k;
    }
  return NULL;
}

/* The value of v when it follows from constants and static shapes alone,
 * evaluated now by the ops' own shape rules and evaluators: the pads of a
 * torch export's F.pad come as ConstantOfShape / Concat / Reshape / Slice /
 * Transpose / Cast of constants, which shape-infer and fold-constants would
 * reduce to the same constant later. NULL when some leaf is not known. */
static size_t memo_slot(const gv_ictx *c, const void *k) {
  size_t h = ((uintptr_t)k >> 4) * 0x9e3779b97f4a7c15ull, i = h & (c->memo_cap - 1);
  while (c->memo_k[i] && c->memo_k[i] != k) i = (i + 1) & (c->memo_cap - 1);
  return i;
}
static const gv_tensor *memo_get(const gv_ictx *c, const gv_value *v) {
  if (!c->memo_cap) return NULL;
  size_t i = memo_slot(c, v);
  return c->memo_k[i] ? c->memo_v[i] : NULL;
}
static void memo_put(gv_ictx *c, const gv_value *v, const gv_tensor *t) {
  if ((c->memo_n + 1) * 2 > c->memo_cap) { /* grow (rehash) */
    size_t oc = c->memo_cap, nc = oc ? oc * 2 : 256;
    const void **ok = c->memo_k, **ov = c->memo_v;
    c->memo_k = gv_alloc(c->tmp, nc * sizeof *c->memo_k);
    c->memo_v = gv_alloc(c->tmp, nc * sizeof *c->memo_v);
    c->memo_cap = nc;
    for (size_t i = 0; i < oc; i++)
      if (ok[i]) {
        size_t j = memo_slot(c, ok[i]);
        c->memo_k[j] = ok[i], c->memo_v[j] = ov[i];
      }
  }
  size_t i = memo_slot(c, v);
  if (!c->memo_k[i]) c->memo_n++;
  c->memo_k[i] = v, c->memo_v[i] = t;
}

static const gv_tensor *v_eval(gv_ictx *c, gv_value *v, int depth) {
  const gv_tensor *t = v_known(c, v);
  if (t || depth > 64) return t;
  if ((t = memo_get(c, v))) return t; /* found before: a DAG of shared shape values stays linear */
  gv_op *op = v->def;
  if (!op || !(gv_ops[op->code].flags & GV_PURE) || op->nres != 1 || op->nregions || op->code == GV_OP_FUSED) return NULL;
  const gv_tensor **in = gv_alloc(c->tmp, (size_t)(op->nopnds + 1) * sizeof *in);
  for (int i = 0; i < op->nopnds; i++) {
    if (op->code == GV_OP_SHAPE) { /* only the operand's type counts */
      if (op->opnds[0]->type.rank < 0 || !gv_type_is_static(&op->opnds[0]->type)) return NULL;
      continue;
    }
    if (!(in[i] = v_eval(c, op->opnds[i], depth + 1)) || gv_tensor_numel(in[i]) > 4096) return NULL;
  }
  if (gv_infer_op(c->m, op, in) || !gv_type_is_static(&op->res[0]->type) || gv_type_numel(&op->res[0]->type) > 4096)
    return NULL;
  gv_tensor *o = NULL;
  if (gv_eval_op(c->m, op, in, &o)) return NULL;
  memo_put(c, v, o);
  return o;
}

static bool v_static(const gv_value *x) { return x && x->type.rank >= 0 && gv_type_is_static(&x->type); }

/* GatherND with batch_dims b: data [B1..Bb, ...], indices [B1..Bb, M..., k]
 * -> gather_nd (batch_dims 0) with indices [B1..Bb, M..., b + k], each tuple
 * prefixed by its own batch coordinates (a constant iota per batch dim,
 * expanded over the index dims): result [B1..Bb, M..., data.dims[b+k:]], as
 * ONNX's. Static shapes needed. */
static int gather_nd_batch(gv_ictx *c, node_t *n, gv_value **in, int64_t bd) {
  gv_value *x = in[0], *ix = in[1];
  if (!v_static(x) || !v_static(ix)) return gv_node_error(c, "unsupported: GatherND batch_dims with unknown dims at import");
  int ri = ix->type.rank;
  if (bd < 0 || bd >= ri || bd >= x->type.rank) return gv_node_error(c, "batch_dims %lld out of range", (long long)bd);
  for (int j = 0; j < bd; j++)
    if (ix->type.dims[j] != x->type.dims[j])
      return gv_node_error(c, "batch dim %d of the indices (%lld) differs from the data's (%lld)", j,
                           (long long)ix->type.dims[j], (long long)x->type.dims[j]);
  if (ix->type.dims[ri - 1] + bd > x->type.rank)
    return gv_node_error(c, "index tuples of %lld after %lld batch dims address more than the data's %d dims",
                         (long long)ix->type.dims[ri - 1], (long long)bd, x->type.rank);
  gv_value *parts[GV_MAX_RANK + 1];
  int64_t full[GV_MAX_RANK];
  for (int d = 0; d < ri - 1; d++) full[d] = ix->type.dims[d];
  full[ri - 1] = 1;
  for (int j = 0; j < bd; j++) {
    int64_t one[GV_MAX_RANK], B = ix->type.dims[j];
    for (int d = 0; d < ri; d++) one[d] = d == j ? B : 1;
    double *iota = gv_alloc(c->tmp, sizeof(double) * (size_t)B);
    for (int64_t q = 0; q < B; q++) iota[q] = (double)q;
    parts[j] = v_expand(c, v_const(c, ix->type.dtype, ri, one, iota), ri, full);
  }
  parts[bd] = ix;
  gv_value *idx = v_concat(c, parts, (int)bd + 1, ri - 1);
  if (!idx) return -1;
  gv_op *op = v_emit(c, GV_OP_GATHER_ND, 2, (gv_value *[]){x, idx}, 1);
  if (!op) return -1;
  op->res[0]->type = gv_type_unranked(x->type.dtype);
  gv_value *y = v_fin(c, op);
  return y ? out(c, n, 0, y) : -1;
}

/* TopK (opset 10+: k is input 1) -> galv.topk {k, axis, largest, sorted}.
 * k must be known at import (a constant, or a value that follows from
 * constants and static shapes): the result shape depends on it. */
static int h_topk(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  if (outs_at_most(c, n, 2)) return -1;
  const gv_tensor *kt = v_eval(c, in[1], 0);
  if (!kt || !gv_dtype_is_int(kt->type.dtype) || gv_tensor_numel(kt) != 1 || kt->type.rank > 1)
    return gv_node_error(c, "unsupported: dynamic shape (k must be a constant 1-element integer tensor)");
  int64_t k = gv_tensor_get_i(kt, 0), axis = ai(n, "axis", -1);
  if (k < 0) return gv_node_error(c, "k %lld is negative", (long long)k);
  int r = rank_of(in[0]);
  int64_t a = r >= 0 ? norm_axis(axis, r) : 0;
  if (r == 0 || (r > 0 && (a < 0 || a >= r)))
    return gv_node_error(c, "axis %lld out of range for an input of rank %d", (long long)axis, r);
  if (r > 0 && in[0]->type.dims[a] >= 0 && k > in[0]->type.dims[a])
    return gv_node_error(c, "k %lld exceeds the size %lld of axis %lld", (long long)k, (long long)in[0]->type.dims[a],
                         (long long)axis);
  gv_op *op = emit(c, GV_OP_TOPK, 1, in, 2);
  gv_set_int(c->m, op, "k", k);
  gv_set_int(c->m, op, "axis", axis);
  gv_set_int(c->m, op, "largest", ai(n, "largest", 1));
  gv_set_int(c->m, op, "sorted", ai(n, "sorted", 1));
  for (int i = 0; i < 2; i++) {
    gv_value *v = op->res[i];
    v->type = in[0]->type;
    if (i) v->type.dtype = GV_DT_I64;
    if (r > 0) v->type.dims[a] = k;
  }
  return out(c, n, 0, op->res[0]) || out(c, n, 1, op->res[1]) ? -1 : 0;
}

static int h_global_pool(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  int r = rank_of(in[0]);
  if (r < 3) return gv_node_error(c, "needs an input of known rank >= 3 (rank %d)", r);
  int64_t axes[GV_MAX_RANK];
  for (int i = 2; i < r; i++) axes[i - 2] = i;
  gv_value *y = v_reduce(c, (gv_opcode)code, in[0], r - 2, axes);
  return y ? out(c, n, 0, y) : -1;
}

/* MaxPool / AveragePool -> galv.pool {mode = "max" | "avg"} */
static int h_pool(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin;
  bool max = code == 0;
  const int64_t *kv, *v;
  int S = aints(n, "kernel_shape", &kv), k;
  if (S < 1 || S > GV_MAX_RANK - 2) return gv_node_error(c, "needs kernel_shape (1 to %d spatial dims)", GV_MAX_RANK - 2);
  int r = rank_of(in[0]);
  if (r >= 0 && r != S + 2) return gv_node_error(c, "kernel_shape has %d dims for an input of rank %d", S, r);
  if (ai(n, "storage_order", 0) != 0) return gv_node_error(c, "unsupported: storage_order=1");
  int64_t st[GV_MAX_RANK], dl[GV_MAX_RANK], pads[2 * GV_MAX_RANK];
  for (int i = 0; i < S; i++) st[i] = dl[i] = 1, pads[i] = pads[S + i] = 0;
  if ((k = aints(n, "strides", &v)) >= 0) {
    if (k != S) return gv_node_error(c, "strides has %d values for %d spatial dims", k, S);
    memcpy(st, v, sizeof(int64_t) * (size_t)S);
  }
  if ((k = aints(n, "dilations", &v)) >= 0) {
    if (k != S) return gv_node_error(c, "dilations has %d values for %d spatial dims", k, S);
    memcpy(dl, v, sizeof(int64_t) * (size_t)S);
  }
  const char *ap = astr(c, n, "auto_pad", "NOTSET");
  if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
    if (!v_static(in[0])) return gv_node_error(c, "unsupported: auto_pad=%s with unknown input dims", gv_esc(c, ap));
    for (int i = 0; i < S; i++) {
      int64_t x = in[0]->type.dims[2 + i];
      if (st[i] < 1 || dl[i] < 1 || kv[i] < 1) return gv_node_error(c, "kernel, strides and dilations must be positive");
      int64_t o = (x + st[i] - 1) / st[i], total = (o - 1) * st[i] + (kv[i] - 1) * dl[i] + 1 - x;
      total = total < 0 ? 0 : total;
      pads[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
      pads[S + i] = total - pads[i];
    }
  } else if (strcmp(ap, "VALID") != 0) {
    if (strcmp(ap, "NOTSET") != 0 && *ap) return gv_node_error(c, "unsupported auto_pad '%s'", gv_esc(c, ap));
    if ((k = aints(n, "pads", &v)) >= 0) {
      if (k != 2 * S) return gv_node_error(c, "pads has %d values for %d spatial dims", k, S);
      memcpy(pads, v, sizeof(int64_t) * (size_t)(2 * S));
    }
  }
  gv_op *op = emit(c, GV_OP_POOL, 1, in, 1);
  gv_set_str(c->m, op, "mode", max ? "max" : "avg");
  gv_set_ints(c->m, op, "kernel", S, kv);
  gv_set_ints(c->m, op, "strides", S, st);
  gv_set_ints(c->m, op, "pads", 2 * S, pads);
  gv_set_ints(c->m, op, "dilations", S, dl);
  gv_set_int(c->m, op, "ceil_mode", ai(n, "ceil_mode", 0) != 0);
  gv_set_int(c->m, op, "count_include_pad", !max && ai(n, "count_include_pad", 0) != 0);
  return v_fin(c, op) ? out(c, n, 0, op->res[0]) : -1;
}

/* Clip(x, min, max) = min(max(x, lo), hi); absent bounds are open */
static int h_clip(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value *y = in[0];
  if (nin > 1 && in[1]) y = v_bin(c, GV_OP_MAX, y, in[1]);
  if (nin > 2 && in[2]) y = v_bin(c, GV_OP_MIN, y, in[2]);
  return y ? out(c, n, 0, y) : -1;
}

/* BatchNormalization. Inference: (x - mean) * (scale / sqrt(var + eps)) + B
 * per channel. Training (training_mode = 1; below opset 14: more than one
 * output): the batch statistics over all dims but 1 (population variance),
 * and the updated running statistics as outputs 1, 2:
 * running = input * momentum + batch * (1 - momentum). */
static int h_batch_norm(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  int r = rank_of(in[0]);
  if (r < 2) return gv_node_error(c, "needs an input of known rank >= 2 (rank %d)", r);
  for (size_t i = 3; i < n->n_output; i++)
    if (n->output[i] && *n->output[i]) return gv_node_error(c, "unsupported: saved_mean / saved_var outputs");
  bool more = n->n_output > 1 && ((n->output[1] && *n->output[1]) || (n->n_output > 2 && n->output[2] && *n->output[2]));
  bool train = c->opset >= 14 ? ai(n, "training_mode", 0) != 0 : more;
  if (more && !train) return gv_node_error(c, "running statistics outputs need training_mode=1");
  float eps = af(n, "epsilon", 1e-5f), mom = af(n, "momentum", 0.9f);
  gv_dtype dt = in[0]->type.dtype;
  gv_value *x = in[0], *y;
  if (!train) {
    gv_value *inv = v_bin(c, GV_OP_MUL, in[1],
                          v_un(c, GV_OP_RECIPROCAL, v_un(c, GV_OP_SQRT, v_bin(c, GV_OP_ADD, in[4], const_scalar(c, dt, eps)))));
    y = v_bin(c, GV_OP_ADD, v_bin(c, GV_OP_MUL, v_bin(c, GV_OP_SUB, x, v_chan(c, in[3], r)), v_chan(c, inv, r)),
              v_chan(c, in[2], r));
    return y ? out(c, n, 0, y) : -1;
  }
  int64_t axes[GV_MAX_RANK];
  int k = 0;
  for (int i = 0; i < r; i++)
    if (i != 1) axes[k++] = i;
  gv_value *mean = v_reduce(c, GV_OP_REDUCE_MEAN, x, k, axes);
  gv_value *d = v_bin(c, GV_OP_SUB, x, mean);
  gv_value *var = v_reduce(c, GV_OP_REDUCE_MEAN, v_bin(c, GV_OP_MUL, d, d), k, axes);
  gv_value *rstd = v_un(c, GV_OP_RECIPROCAL, v_un(c, GV_OP_SQRT, v_bin(c, GV_OP_ADD, var, const_scalar(c, dt, eps))));
  y = v_bin(c, GV_OP_ADD, v_bin(c, GV_OP_MUL, v_bin(c, GV_OP_MUL, d, rstd), v_chan(c, in[1], r)), v_chan(c, in[2], r));
  if (!y || out(c, n, 0, y)) return -1;
  for (int o = 1; o <= 2; o++) {
    if ((size_t)o >= n->n_output || !n->output[o] || !*n->output[o]) continue;
    gv_value *batch = v_axes_op(c, GV_OP_SQUEEZE, o == 1 ? mean : var, k, axes);
    gv_value *run = v_bin(c, GV_OP_ADD, v_bin(c, GV_OP_MUL, in[2 + o], const_scalar(c, dt, mom)),
                          v_bin(c, GV_OP_MUL, batch, const_scalar(c, dt, 1.0 - (double)mom)));
    if (!run || out(c, n, o, run)) return -1;
  }
  return 0;
}

/* Pad (pads, constant_value, axes as inputs): per padded axis, crops for
 * negative pads (slice) and blocks concatenated on each side: the value
 * broadcast (constant), mirrored slices (reflect), the edge broadcast
 * (edge) or the far end (wrap). */
static int h_pad(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  const char *mode = astr(c, n, "mode", "constant");
  int md = strcmp(mode, "constant") == 0 ? 0 : strcmp(mode, "reflect") == 0 ? 1 : strcmp(mode, "edge") == 0 ? 2
           : strcmp(mode, "wrap") == 0 ? 3 : -1;
  if (md < 0) return gv_node_error(c, "unsupported Pad mode '%s'", gv_esc(c, mode));
  int r = rank_of(in[0]);
  if (!v_static(in[0])) return gv_node_error(c, "unsupported: Pad needs static input dims at import");
  int64_t pads[2 * GV_MAX_RANK], axes[GV_MAX_RANK];
  const gv_tensor *pt = v_eval(c, in[1], 0);
  int np = pt && gv_dtype_is_int(pt->type.dtype) && pt->type.rank == 1 && gv_tensor_numel(pt) <= 2 * GV_MAX_RANK
               ? (int)gv_tensor_numel(pt) : -1, na = r;
  for (int i = 0; i < np; i++) pads[i] = gv_tensor_get_i(pt, i);
  if (np < 0) return gv_node_error(c, "unsupported: dynamic shape (the output shape depends on the values of non-constant pads)");
  if (nin > 3 && in[3]) {
    if ((na = const_ints(in[3], axes, GV_MAX_RANK)) < 0) return gv_node_error(c, "unsupported: non-constant axes");
    for (int i = 0; i < na; i++) {
      axes[i] = norm_axis(axes[i], r);
      if (axes[i] < 0 || axes[i] >= r) return gv_node_error(c, "axes value out of range for rank %d", r);
    }
  } else {
    for (int i = 0; i < r; i++) axes[i] = i;
  }
  if (np != 2 * na) return gv_node_error(c, "pads has %d values for %d axes", np, na);
  gv_value *val = nin > 2 && in[2] ? in[2] : const_scalar(c, in[0]->type.dtype, 0.0);
  if (val->type.rank > 1 || (val->type.rank == 1 && val->type.dims[0] != 1))
    return gv_node_error(c, "constant_value must be a scalar");
  gv_value *x = in[0];
  for (int i = 0; i < na && x; i++) {
    int64_t a = axes[i], b = pads[i], e = pads[na + i], L0 = x->type.dims[a];
    if (b < -L0 || e < -L0 || b > INT32_MAX || e > INT32_MAX || L0 + b + e < 0)
      return gv_node_error(c, "pads (%lld, %lld) do not fit axis %lld of size %lld", (long long)b, (long long)e,
                           (long long)a, (long long)L0);
    if (b < 0 || e < 0) x = v_slice(c, x, a, b < 0 ? -b : 0, e < 0 ? e : INT64_MAX, 1);
    b = b < 0 ? 0 : b, e = e < 0 ? 0 : e;
    if (!x || (!b && !e)) continue;
    int64_t L = x->type.dims[a], dims[GV_MAX_RANK];
    if ((md == 1 && (b >= L || e >= L)) || (md == 3 && (b > L || e > L)) || (md && L < 1))
      return gv_node_error(c, "%s pads (%lld, %lld) do not fit axis %lld of size %lld", mode, (long long)b,
                           (long long)e, (long long)a, (long long)L);
    gv_value *parts[3];
    int k = 0;
    for (int side = 0; side < 2; side++) {
      int64_t p = side ? e : b;
      if (!p) {
        if (side) parts[k++] = x;
        continue;
      }
      memcpy(dims, x->type.dims, sizeof(int64_t) * (size_t)r);
      dims[a] = p;
      gv_value *blk = md == 0   ? v_expand(c, val, r, dims)
                      : md == 1 ? (side ? v_slice(c, x, a, L - 2, L - 2 - p >= 0 ? L - 2 - p : -L - 1, -1)
                                        : v_slice(c, x, a, p, 0, -1))
                      : md == 2 ? v_expand(c, v_slice(c, x, a, side ? L - 1 : 0, side ? L : 1, 1), r, dims)
                                : (side ? v_slice(c, x, a, 0, p, 1) : v_slice(c, x, a, L - p, L, 1));
      if (side) parts[k++] = x;
      parts[k++] = blk;
    }
    x = v_concat(c, parts, k, a);
  }
  return x ? out(c, n, 0, x) : -1;
}

/* ConvTranspose(x, w [, b]) = conv_grad_input(x, w) (the adjoint of Conv
 * with the same strides / pads / dilations / group) whose shape attribute is
 * the ConvTranspose output, plus the bias per channel. */
static int h_conv_transpose(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value *x = in[0], *w = in[1];
  int r = rank_of(x), S = r - 2, k;
  if (r < 3 || rank_of(w) != r || !v_static(x) || !v_static(w))
    return gv_node_error(c, "unsupported: ConvTranspose needs static input and weight dims of equal rank >= 3 at import");
  const char *ap = astr(c, n, "auto_pad", "NOTSET");
  bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
  if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0 && !same && *ap)
    return gv_node_error(c, "unsupported auto_pad '%s'", gv_esc(c, ap));
  int64_t G = ai(n, "group", 1), st[GV_MAX_RANK], dl[GV_MAX_RANK], op_[GV_MAX_RANK], pads[2 * GV_MAX_RANK];
  int64_t shape[GV_MAX_RANK];
  const int64_t *v = NULL;
  for (int i = 0; i < S; i++) st[i] = dl[i] = 1, op_[i] = 0, pads[i] = pads[S + i] = 0;
  const char *names[3] = {"strides", "dilations", "output_padding"};
  int64_t *dst[3] = {st, dl, op_};
  for (int j = 0; j < 3; j++)
    if ((k = aints(n, names[j], &v)) >= 0) {
      if (k != S) return gv_node_error(c, "%s has %d values for %d spatial dims", names[j], k, S);
      memcpy(dst[j], v, sizeof(int64_t) * (size_t)S);
    }
  if (strcmp(ap, "VALID") != 0 && !same && (k = aints(n, "pads", &v)) >= 0) {
    if (k != 2 * S) return gv_node_error(c, "pads has %d values for %d spatial dims", k, S);
    memcpy(pads, v, sizeof(int64_t) * (size_t)(2 * S));
  }
  if (G < 1 || x->type.dims[1] != w->type.dims[0] || w->type.dims[0] % G)
    return gv_node_error(c, "input channels %lld do not match weight %lld with group %lld", (long long)x->type.dims[1],
                         (long long)w->type.dims[0], (long long)G);
  shape[0] = x->type.dims[0], shape[1] = w->type.dims[1] * G;
  int kos = aints(n, "output_shape", &v);
  if (kos >= 0 && kos != S && kos != r) return gv_node_error(c, "output_shape has %d values for %d spatial dims", kos, S);
  int64_t ext[2 * GV_MAX_RANK] = {0}; /* zeros beyond the full output (an output_shape larger than it) */
  for (int i = 0; i < S; i++) {
    if (st[i] < 1 || dl[i] < 1 || op_[i] < 0 || op_[i] >= st[i])
      return gv_node_error(c, "strides / dilations must be positive and output_padding smaller than the stride");
    int64_t full = st[i] * (x->type.dims[2 + i] - 1) + op_[i] + (w->type.dims[2 + i] - 1) * dl[i] + 1;
    if (kos >= 0 || same) {
      /* the pads that give output_shape (SAME: in * stride); the odd one at
       * the end for SAME_UPPER. Without auto_pad, an output_shape larger
       * than the full output (a negative total, at most 2^20 more) is the
       * full output followed by zeros (then the bias), as ONNX's reference
       * computes it (its backend test test_convtranspose_output_shape,
       * onnxruntime alike); with SAME_* the reference would extend the
       * start for SAME_UPPER, and that form stays refused */
      int64_t want = kos >= 0 ? v[kos - S + i] : x->type.dims[2 + i] * st[i], total = full - want;
      if (want < 1 || total < -(1 << 20))
        return gv_node_error(c, "output size %lld does not fit the full output %lld", (long long)want, (long long)full);
      if (total < 0 && same)
        return gv_node_error(c, "unsupported: output size %lld beyond the full output %lld with auto_pad %s",
                             (long long)want, (long long)full, gv_esc(c, ap));
      if (total < 0) {
        ext[S + i] = -total;
        total = 0;
      }
      pads[i] = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
      pads[S + i] = total - pads[i];
    }
    shape[2 + i] = full - pads[i] - pads[S + i];
    if (shape[2 + i] < 1 || pads[i] < 0 || pads[S + i] < 0) return gv_node_error(c, "pads do not fit the output");
  }
  gv_op *op = v_emit(c, GV_OP_CONV_GRAD_INPUT, 2, in, 1);
  gv_set_ints(c->m, op, "strides", S, st);
  gv_set_ints(c->m, op, "pads", 2 * S, pads);
  gv_set_ints(c->m, op, "dilations", S, dl);
  gv_set_int(c->m, op, "group", G);
  gv_set_ints(c->m, op, "shape", r, shape);
  gv_value *y = v_fin(c, op);
  for (int i = 0; i < S && y; i++) {
    if (!ext[i] && !ext[S + i]) continue;
    gv_value *parts[3];
    int np = 0;
    int64_t zd[GV_MAX_RANK];
    memcpy(zd, y->type.dims, sizeof(int64_t) * (size_t)r);
    for (int e = 0; e < 2; e++) {
      if (e == 1) parts[np++] = y;
      if (!ext[e * S + i]) continue;
      zd[2 + i] = ext[e * S + i];
      int64_t one[GV_MAX_RANK];
      for (int d = 0; d < r; d++) one[d] = 1;
      parts[np++] = v_expand(c, v_const(c, y->type.dtype, r, one, (double[]){0.0}), r, zd);
    }
    y = v_concat(c, parts, np, 2 + i);
  }
  if (nin > 2 && in[2]) y = v_bin(c, GV_OP_ADD, y, v_chan(c, in[2], r));
  return y ? out(c, n, 0, y) : -1;
}

/* The source coordinate of output index o (ONNX Resize's
 * coordinate_transformation_mode); -1e300 for an unsupported mode. */
static double resize_coord(const char *ct, double o, double scale, int64_t in, int64_t outn) {
  if (!strcmp(ct, "half_pixel")) return (o + 0.5) / scale - 0.5;
  if (!strcmp(ct, "pytorch_half_pixel")) return outn > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (!strcmp(ct, "align_corners")) return outn == 1 ? 0.0 : o * (double)(in - 1) / (double)(outn - 1);
  if (!strcmp(ct, "asymmetric")) return o / scale;
  if (!strcmp(ct, "tf_half_pixel_for_nn")) return (o + 0.5) / scale;
  if (!strcmp(ct, "half_pixel_symmetric")) {
    double adj = (double)outn / (scale * (double)in), center = (double)in / 2;
    return center * (1 - adj) + (o + 0.5) / scale - 0.5;
  }
  return -1e300;
}

/* ONNX Resize's cubic kernel (Keys, parameter A = cubic_coeff_a) at
 * distance d in [0, 2]. */
static double cubic_w(double d, double A) {
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
}

/* Resize (nearest, linear, cubic) as one dot per resized axis with a
 * constant [out, in] interpolation matrix: separable, so a 2-D bilinear or
 * bicubic resize is two contractions, and exact for nearest (one 1 per row).
 * Cubic as ONNX's reference: the 4 neighbours ceil(x) - 2 .. ceil(x) + 1 of
 * the source coordinate x (the lower ones preferred: at an integer x the
 * weights are 0, 0, 1, 0) weighted by the kernel at their distances;
 * neighbours outside the input read the edge value, or with
 * exclude_outside get weight 0 and the rest are renormalised to sum 1.
 * Scales or sizes must be constant at import. */
static int h_resize(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value *x = in[0];
  int r = rank_of(x);
  if (!v_static(x)) return gv_node_error(c, "unsupported: Resize needs static input dims at import");
  const char *mode = astr(c, n, "mode", "nearest"), *ct = astr(c, n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = astr(c, n, "nearest_mode", "round_prefer_floor");
  bool lin = strcmp(mode, "linear") == 0, cub = strcmp(mode, "cubic") == 0;
  if (!lin && !cub && strcmp(mode, "nearest") != 0) return gv_node_error(c, "unsupported Resize mode '%s'", gv_esc(c, mode));
  double A = af(n, "cubic_coeff_a", -0.75f);
  bool excl = ai(n, "exclude_outside", 0) != 0;
  if (ai(n, "antialias", 0) != 0) return gv_node_error(c, "unsupported: Resize antialias=1");
  const char *kar = astr(c, n, "keep_aspect_ratio_policy", "stretch");
  if (strcmp(kar, "stretch") != 0) return gv_node_error(c, "unsupported keep_aspect_ratio_policy '%s'", gv_esc(c, kar));
  if (resize_coord(ct, 0, 1, 1, 1) == -1e300)
    return gv_node_error(c, "unsupported coordinate_transformation_mode '%s'", gv_esc(c, ct));
  int nmode = !strcmp(nm, "round_prefer_floor") ? 0 : !strcmp(nm, "round_prefer_ceil") ? 1 : !strcmp(nm, "floor") ? 2
              : !strcmp(nm, "ceil") ? 3 : -1;
  if (nmode < 0) return gv_node_error(c, "unsupported nearest_mode '%s'", gv_esc(c, nm));
  int64_t axes[GV_MAX_RANK];
  const int64_t *av;
  int na = aints(n, "axes", &av);
  if (na > r) return gv_node_error(c, "axes has %d values for rank %d", na, r);
  if (na < 0) {
    na = r;
    for (int i = 0; i < r; i++) axes[i] = i;
  } else {
    for (int i = 0; i < na; i++)
      if ((axes[i] = norm_axis(av[i], r)) < 0 || axes[i] >= r) return gv_node_error(c, "axes value out of range");
  }
  const gv_tensor *sc = nin > 2 && in[2] ? v_eval(c, in[2], 0) : NULL, *sz = nin > 3 && in[3] ? v_eval(c, in[3], 0) : NULL;
  bool unknown = (nin > 2 && in[2] && !sc) || (nin > 3 && in[3] && !sz);
  if (sc && gv_tensor_numel(sc) == 0) sc = NULL;
  if (sz && gv_tensor_numel(sz) == 0) sz = NULL;
  if (unknown || (!sc && !sz))
    return gv_node_error(c, "unsupported: dynamic shape (the output shape depends on the values of non-constant scales or sizes)");
  if (gv_tensor_numel(sc ? sc : sz) != na)
    return gv_node_error(c, "%s has %lld values for %d axes", sc ? "scales" : "sizes", (long long)gv_tensor_numel(sc ? sc : sz), na);
  /* sort the axes so that each contraction appends its output dim after the previous one's */
  int64_t order[GV_MAX_RANK], cur[GV_MAX_RANK];
  for (int i = 0; i < na; i++) order[i] = i;
  for (int i = 1; i < na; i++)
    for (int j = i; j > 0 && axes[order[j]] < axes[order[j - 1]]; j--) {
      int64_t t = order[j];
      order[j] = order[j - 1], order[j - 1] = t;
    }
  for (int i = 0; i < r; i++) cur[i] = i;
  for (int q = 0; q < na && x; q++) {
    int i = (int)order[q];
    int64_t a = axes[i], L = in[0]->type.dims[a], O;
    double scale;
    if (sc) {
      float s = (float)gv_tensor_get_f(sc, i);
      if (!(s > 0) || !((double)L * s <= (double)(1 << 16)))
        return gv_node_error(c, "scales must be positive and leave at most 65536 elements per axis");
      scale = s, O = (int64_t)((float)L * s);
    } else {
      O = gv_tensor_get_i(sz, i);
      scale = (double)((float)O / (float)L);
    }
    if (O < 1 || O > (1 << 16) || L < 1) return gv_node_error(c, "resized axis %lld: %lld -> %lld is not supported", (long long)a, (long long)L, (long long)O);
    if (O * L > (1 << 22)) return gv_node_error(c, "unsupported: Resize matrix of %lld x %lld", (long long)O, (long long)L);
    double *mat = gv_alloc(c->tmp, sizeof(double) * (size_t)(O * L));
    bool ident = O == L;
    for (int64_t o = 0; o < O; o++) {
      double xs = resize_coord(ct, (double)o, scale, L, O);
      xs = xs != xs ? 0 : xs < -1 ? -1 : xs > (double)L ? (double)L : xs; /* NaN or far outside: clamped below anyway */
      if (cub) {
        int64_t base = (int64_t)ceil(xs) - 2;
        double t = xs - (double)(base + 1), w[4] = {cubic_w(t + 1, A), cubic_w(t, A), cubic_w(1 - t, A), cubic_w(2 - t, A)};
        double sum = 0;
        for (int q = 0; q < 4; q++) {
          int64_t j = base + q;
          if (excl && (j < 0 || j >= L)) w[q] = 0;
          sum += w[q];
        }
        for (int q = 0; q < 4; q++) {
          int64_t j = base + q;
          if (excl && (j < 0 || j >= L)) continue;
          j = j < 0 ? 0 : j >= L ? L - 1 : j;
          mat[o * L + j] += excl ? w[q] / sum : w[q];
        }
      } else if (!lin) {
        double f = floor(xs);
        int64_t idx = nmode == 2 ? (int64_t)f : nmode == 3 ? (int64_t)ceil(xs)
                      : xs - f == 0.5 ? (int64_t)(nmode == 0 ? f : f + 1) : (int64_t)llround(xs);
        idx = idx < 0 ? 0 : idx >= L ? L - 1 : idx;
        mat[o * L + idx] = 1.0;
      } else {
        xs = xs < 0 ? 0 : xs > (double)(L - 1) ? (double)(L - 1) : xs;
        int64_t i0 = (int64_t)floor(xs), i1 = i0 + 1 < L ? i0 + 1 : L - 1;
        double t = xs - (double)i0;
        mat[o * L + i0] += 1.0 - t;
        mat[o * L + i1] += t;
      }
      for (int64_t j = 0; j < L && ident; j++) ident = mat[o * L + j] == (j == o);
    }
    if (ident) continue;
    int p = 0;
    while (cur[p] != a) p++;
    x = v_dot(c, x, v_const(c, x->type.dtype, 2, (int64_t[]){O, L}, mat), p, 1);
    for (int j = p; j < r - 1; j++) cur[j] = cur[j + 1];
    cur[r - 1] = a;
  }
  bool perm_needed = false;
  int64_t perm[GV_MAX_RANK];
  for (int i = 0; i < r; i++) {
    for (int j = 0; j < r; j++)
      if (cur[j] == i) perm[i] = j;
    perm_needed |= perm[i] != i;
  }
  if (perm_needed) x = v_transpose(c, x, r, perm);
  return x ? out(c, n, 0, x) : -1;
}

/* LSTM / GRU unrolled over the sequence length bound at import (docs/ops.md):
 * per direction, the input projection of all steps is one dot, then each
 * step one dot with the recurrent weights and the gate arithmetic. ONNX gate
 * orders: LSTM i, o, f, c; GRU z, r, h. Defaults only: activations,
 * no clip, no peepholes, no input_forget, no sequence_lens. */
static int h_rnn(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  bool lstm = code == 0;
  int G = lstm ? 4 : 3;
  int64_t H = ai(n, "hidden_size", -1), layout = ai(n, "layout", 0), lbr = ai(n, "linear_before_reset", 0);
  const char *dir = astr(c, n, "direction", "forward");
  int D = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool rev = !strcmp(dir, "reverse");
  if (D == 1 && !rev && strcmp(dir, "forward") != 0) return gv_node_error(c, "unsupported direction '%s'", gv_esc(c, dir));
  if (H < 1 || H > (1 << 20)) return gv_node_error(c, "needs a positive hidden_size");
  if (attr(n, "clip")) return gv_node_error(c, "unsupported: clip");
  if (lstm && ai(n, "input_forget", 0)) return gv_node_error(c, "unsupported: input_forget=1");
  const Onnx__AttributeProto *acts = attr(n, "activations");
  if (acts) {
    static const char *const def[2][3] = {{"Sigmoid", "Tanh", "Tanh"}, {"Sigmoid", "Tanh", ""}};
    int per = lstm ? 3 : 2;
    if ((int)acts->n_strings != per * D) return gv_node_error(c, "activations has %zu values", acts->n_strings);
    for (int i = 0; i < per * D; i++)
      if (acts->strings[i].len != strlen(def[!lstm][i % per]) ||
          (acts->strings[i].len && memcmp(acts->strings[i].data, def[!lstm][i % per], acts->strings[i].len) != 0))
        return gv_node_error(c, "unsupported: activations other than the defaults");
  }
  if (nin > 4 && in[4]) return gv_node_error(c, "unsupported: sequence_lens");
  if (lstm && nin > 7 && in[7]) return gv_node_error(c, "unsupported: peepholes (input P)");
  if (layout != 0 && layout != 1) return gv_node_error(c, "layout must be 0 or 1");
  gv_value *X = in[0];
  if (!v_static(X) || X->type.rank != 3) return gv_node_error(c, "unsupported: needs a rank-3 input with static dims at import");
  if (layout) X = v_transpose(c, X, 3, (int64_t[]){1, 0, 2});
  if (!X) return -1;
  int64_t S = X->type.dims[0], B = X->type.dims[1];
  if (S < 1 || S > 4096) return gv_node_error(c, "unsupported: sequence length %lld (1 to 4096 unrolled)", (long long)S);
  const gv_type *wt = &in[1]->type, *rt = &in[2]->type;
  if (wt->rank != 3 || wt->dims[0] != D || wt->dims[1] != G * H || rt->rank != 3 || rt->dims[0] != D ||
      rt->dims[1] != G * H || rt->dims[2] != H)
    return gv_node_error(c, "W / R shapes do not match %d directions, %d gates and hidden_size %lld", D, G, (long long)H);
  gv_dtype dt = X->type.dtype;
  gv_value *Ys[2], *Hs[2], *Cs[2];
  int64_t z0 = 0, one = 1;
  for (int d = 0; d < D; d++) {
    gv_value *Wd = v_index0(c, in[1], d), *Rd = v_index0(c, in[2], d), *wb = NULL, *rb = NULL;
    gv_value *XW = v_dot(c, X, Wd, 2, 1); /* [S, B, G*H] */
    if (nin > 3 && in[3]) {
      gv_value *bd = v_index0(c, in[3], d);
      wb = v_slice(c, bd, 0, 0, G * H, 1), rb = v_slice(c, bd, 0, G * H, 2 * G * H, 1);
      XW = v_bin(c, GV_OP_ADD, XW, lstm ? v_bin(c, GV_OP_ADD, wb, rb) : wb); /* GRU: R's bias stays per step */
    }
    gv_value *h = nin > 5 && in[5] ? v_index0(c, in[5], d) : v_expand(c, const_scalar(c, dt, 0), 2, (int64_t[]){B, H});
    gv_value *cc = !lstm ? NULL : nin > 6 && in[6] ? v_index0(c, in[6], d) : v_expand(c, const_scalar(c, dt, 0), 2, (int64_t[]){B, H});
    gv_value *Rg[3] = {0}, *rbg[3] = {0};
    if (!lstm && !lbr) /* the reset gate applies before the recurrent product */
      for (int g = 0; g < 3; g++) {
        Rg[g] = v_slice(c, Rd, 0, g * H, (g + 1) * H, 1);
        if (rb) rbg[g] = v_slice(c, rb, 0, g * H, (g + 1) * H, 1);
      }
    gv_value **hs = gv_alloc(c->tmp, sizeof(gv_value *) * (size_t)S);
    for (int64_t s = 0; s < S; s++) {
      int64_t t = (rev || d == 1) ? S - 1 - s : s;
      gv_value *xt = v_index0(c, XW, t), *xg[4], *hg[4];
      if (!xt || v_split(c, xt, 1, G, H, xg)) return -1;
      if (lstm) {
        gv_value *g4[4];
        if (v_split(c, v_dot(c, h, Rd, 1, 1), 1, 4, H, hg)) return -1;
        for (int g = 0; g < 4; g++) g4[g] = v_bin(c, GV_OP_ADD, xg[g], hg[g]);
        gv_value *ig = v_un(c, GV_OP_SIGMOID, g4[0]), *og = v_un(c, GV_OP_SIGMOID, g4[1]);
        gv_value *fg = v_un(c, GV_OP_SIGMOID, g4[2]), *cg = v_un(c, GV_OP_TANH, g4[3]);
        cc = v_bin(c, GV_OP_ADD, v_bin(c, GV_OP_MUL, fg, cc), v_bin(c, GV_OP_MUL, ig, cg));
        h = v_bin(c, GV_OP_MUL, og, v_un(c, GV_OP_TANH, cc));
      } else {
        gv_value *zg, *rg, *nn;
        if (lbr) {
          gv_value *hr = v_dot(c, h, Rd, 1, 1);
          if (rb) hr = v_bin(c, GV_OP_ADD, hr, rb);
          if (v_split(c, hr, 1, 3, H, hg)) return -1;
          zg = v_un(c, GV_OP_SIGMOID, v_bin(c, GV_OP_ADD, xg[0], hg[0]));
          rg = v_un(c, GV_OP_SIGMOID, v_bin(c, GV_OP_ADD, xg[1], hg[1]));
          nn = v_un(c, GV_OP_TANH, v_bin(c, GV_OP_ADD, xg[2], v_bin(c, GV_OP_MUL, rg, hg[2])));
        } else {
          for (int g = 0; g < 2; g++) {
            hg[g] = v_dot(c, h, Rg[g], 1, 1);
            if (rbg[g]) hg[g] = v_bin(c, GV_OP_ADD, hg[g], rbg[g]);
          }
          zg = v_un(c, GV_OP_SIGMOID, v_bin(c, GV_OP_ADD, xg[0], hg[0]));
          rg = v_un(c, GV_OP_SIGMOID, v_bin(c, GV_OP_ADD, xg[1], hg[1]));
          gv_value *hn = v_dot(c, v_bin(c, GV_OP_MUL, rg, h), Rg[2], 1, 1);
          if (rbg[2]) hn = v_bin(c, GV_OP_ADD, hn, rbg[2]);
          nn = v_un(c, GV_OP_TANH, v_bin(c, GV_OP_ADD, xg[2], hn));
        }
        /* h = n + z * (h - n), torch's form of (1 - z) n + z h */
        h = v_bin(c, GV_OP_ADD, nn, v_bin(c, GV_OP_MUL, zg, v_bin(c, GV_OP_SUB, h, nn)));
      }
      if (!h) return -1;
      hs[t] = v_axes_op(c, GV_OP_UNSQUEEZE, h, 1, &z0);
    }
    Ys[d] = v_axes_op(c, GV_OP_UNSQUEEZE, v_concat(c, hs, (int)S, 0), 1, &one); /* [S, 1, B, H] */
    Hs[d] = v_axes_op(c, GV_OP_UNSQUEEZE, h, 1, &z0);
    Cs[d] = lstm ? v_axes_op(c, GV_OP_UNSQUEEZE, cc, 1, &z0) : NULL;
  }
  gv_value *Y = v_concat(c, Ys, D, 1), *Yh = v_concat(c, Hs, D, 0), *Yc = lstm ? v_concat(c, Cs, D, 0) : NULL;
  if (layout) {
    Y = v_transpose(c, Y, 4, (int64_t[]){2, 0, 1, 3});
    Yh = v_transpose(c, Yh, 3, (int64_t[]){1, 0, 2});
    if (lstm) Yc = v_transpose(c, Yc, 3, (int64_t[]){1, 0, 2});
  }
  if (!Y || !Yh || (lstm && !Yc)) return -1;
  if (out(c, n, 0, Y) || out(c, n, 1, Yh)) return -1;
  if (lstm && out(c, n, 2, Yc)) return -1;
  return 0;
}

/* ---------------------------------------------------------------- the table */

/* ---------------------------------------------------------------- sequences and Loop
 *
 * ONNX sequences exist only at import: a sequence is a list of tensor
 * values bound to its name (onnx_import.c, gv_bind_seq), so SequenceAt,
 * SequenceInsert, ConcatFromSequence and the rest become the list's values,
 * slices and concats, and the program never sees a sequence. Positions must
 * be known at import (constants, shapes of static values, or an unrolled
 * Loop's iteration number). A Loop is unrolled at import: its trip count
 * (and its condition, when given) must follow from constants and static
 * shapes; each iteration imports the body once with the iteration number
 * and condition as constants and the carried values (tensors or sequences)
 * of the previous one; scan outputs are stacked along a new axis 0. This is
 * how torch exports repeat_interleave (SplitToSequence, a Loop inserting
 * into a sequence, ConcatFromSequence: GPT-J's rotary embedding). */

enum { LOOP_MAX_ITERS = 4096 };
#define LOOP_MAX_OPS ((int64_t)1 << 22) /* ops of all unrolled iterations (nested Loops multiply): one budget */

static bool seq_handler(handler h);

/* A position of a sequence of n values, known at import; insert: n allowed. */
static int seq_pos(gv_ictx *c, gv_value *p, int n, bool insert, int *at) {
  const gv_tensor *t = p ? v_eval(c, p, 0) : NULL;
  if (!t || !gv_dtype_is_int(t->type.dtype) || gv_tensor_numel(t) != 1)
    return gv_node_error(c, "unsupported: a sequence position that is not known at import");
  int64_t i = gv_tensor_get_i(t, 0);
  if (i < 0) i += n;
  if (i < 0 || i > n || (!insert && i == n))
    return gv_node_error(c, "position %lld is out of range for a sequence of %d tensors", (long long)gv_tensor_get_i(t, 0), n);
  *at = (int)i;
  return 0;
}

static int seq_out(gv_ictx *c, node_t *n, gv_value *const *v, int k) {
  if (n->n_output < 1 || !n->output[0] || !*n->output[0]) return 0;
  return gv_bind_seq(c, n->output[0], v, k);
}

static int h_seq_empty(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)in, (void)nin, (void)code;
  return seq_out(c, n, NULL, 0);
}

static int h_seq_construct(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  for (int i = 1; i < nin; i++)
    if (in[i]->type.dtype != in[0]->type.dtype) return gv_node_error(c, "the tensors of a sequence differ in dtype");
  return seq_out(c, n, in, nin);
}

static int h_seq_insert(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value **v;
  int k = gv_lookup_seq(c, n->input[0], &v), at = k;
  if (k < 0 || (nin > 2 && in[2] && seq_pos(c, in[2], k, true, &at))) return -1;
  if (k && in[1]->type.dtype != v[0]->type.dtype) return gv_node_error(c, "the tensors of a sequence differ in dtype");
  if (k >= LOOP_MAX_ITERS * 4) return gv_node_error(c, "unsupported: a sequence of more than %d tensors", LOOP_MAX_ITERS * 4);
  gv_value **w = gv_alloc(c->tmp, (size_t)(k + 1) * sizeof *w);
  for (int i = 0, j = 0; i <= k; i++) w[i] = i == at ? in[1] : v[j++];
  return seq_out(c, n, w, k + 1);
}

static int h_seq_erase(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value **v;
  int k = gv_lookup_seq(c, n->input[0], &v), at = k - 1;
  if (k < 0) return -1;
  if (k == 0) return gv_node_error(c, "SequenceErase of an empty sequence");
  if (nin > 1 && in[1] && seq_pos(c, in[1], k, false, &at)) return -1;
  gv_value **w = gv_alloc(c->tmp, (size_t)k * sizeof *w);
  for (int i = 0, j = 0; i < k; i++)
    if (i != at) w[j++] = v[i];
  return seq_out(c, n, w, k - 1);
}

static int h_seq_at(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)nin, (void)code;
  gv_value **v;
  int k = gv_lookup_seq(c, n->input[0], &v), at = 0;
  if (k < 0 || seq_pos(c, in[1], k, false, &at)) return -1;
  return out(c, n, 0, v[at]);
}

static int h_seq_length(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)in, (void)nin, (void)code;
  gv_value **v;
  int k = gv_lookup_seq(c, n->input[0], &v);
  if (k < 0) return -1;
  return out(c, n, 0, const_scalar(c, GV_DT_I64, (double)k));
}

/* SplitToSequence(x [, split]): slices along axis: of 1 (squeezed unless
 * keepdims) without split, of split's size (the last one smaller) for a
 * scalar, of split's sizes for a 1-D split. */
static int h_split_to_seq(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  gv_value *x = in[0];
  int r = rank_of(x);
  int64_t a = r > 0 ? norm_axis(ai(n, "axis", 0), r) : -1;
  if (r < 1 || a < 0 || a >= r) return gv_node_error(c, "axis out of range for rank %d", r);
  int64_t L = x->type.dims[a];
  if (L < 0) return gv_node_error(c, "unsupported: SplitToSequence of an axis whose size is not known at import");
  if (L > LOOP_MAX_ITERS * 4) return gv_node_error(c, "unsupported: SplitToSequence into more than %d tensors", LOOP_MAX_ITERS * 4);
  int64_t *sizes = gv_alloc(c->tmp, (size_t)(L + 1) * sizeof *sizes);
  int k = 0;
  bool squeeze = false;
  if (nin > 1 && in[1]) {
    const gv_tensor *t = v_eval(c, in[1], 0);
    if (!t || !gv_dtype_is_int(t->type.dtype) || t->type.rank > 1)
      return gv_node_error(c, "unsupported: split sizes that are not known at import");
    int64_t ns = gv_tensor_numel(t), sum = 0;
    if (t->type.rank == 0) {
      int64_t chunk = gv_tensor_get_i(t, 0);
      if (chunk < 1) return gv_node_error(c, "split %lld must be positive", (long long)chunk);
      for (int64_t left = L; left > 0; left -= chunk) sizes[k++] = left < chunk ? left : chunk;
    } else {
      if (ns > L + 1 || ns < 1) return gv_node_error(c, "split has %lld sizes for an axis of %lld", (long long)ns, (long long)L);
      for (int64_t i = 0; i < ns; i++) {
        sizes[k++] = gv_tensor_get_i(t, i);
        if (sizes[k - 1] < 0 || sizes[k - 1] > L) return gv_node_error(c, "split size %lld out of range", (long long)sizes[k - 1]);
        sum += sizes[k - 1];
      }
      if (sum != L) return gv_node_error(c, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)L);
    }
  } else {
    for (int64_t i = 0; i < L; i++) sizes[k++] = 1;
    squeeze = ai(n, "keepdims", 1) == 0;
  }
  gv_value **parts = gv_alloc(c->tmp, (size_t)(k ? k : 1) * sizeof *parts);
  int64_t st = 0;
  for (int i = 0; i < k; i++) {
    parts[i] = v_slice(c, x, a, st, st + sizes[i], 1);
    if (parts[i] && squeeze) parts[i] = v_axes_op(c, GV_OP_SQUEEZE, parts[i], 1, &a);
    if (!parts[i]) return -1;
    st += sizes[i];
  }
  return seq_out(c, n, parts, k);
}

/* ConcatFromSequence(seq): concat along axis, or stacked along a new axis. */
static int h_concat_from_seq(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)in, (void)nin, (void)code;
  gv_value **v;
  int k = gv_lookup_seq(c, n->input[0], &v);
  if (k < 0) return -1;
  if (k == 0) return gv_node_error(c, "unsupported: ConcatFromSequence of an empty sequence (its shape is unknown)");
  bool stack = ai(n, "new_axis", 0) != 0;
  int r = rank_of(v[0]) + (stack ? 1 : 0);
  int64_t a = norm_axis(ai(n, "axis", 0), r);
  if (rank_of(v[0]) < 0 || a < 0 || a >= r) return gv_node_error(c, "axis out of range for rank %d", r);
  gv_value **w = gv_alloc(c->tmp, (size_t)k * sizeof *w);
  for (int i = 0; i < k; i++)
    if (!(w[i] = stack ? v_axes_op(c, GV_OP_UNSQUEEZE, v[i], 1, &a) : v[i])) return -1;
  gv_value *y = v_concat(c, w, k, a);
  return y ? out(c, n, 0, y) : -1;
}

/* An import-time boolean (a Loop condition): 1, 0, or -1 when not known. */
static int known_bool(gv_ictx *c, gv_value *v) {
  const gv_tensor *t = v ? v_eval(c, v, 0) : NULL;
  if (!t || gv_tensor_numel(t) != 1) return -1;
  return gv_tensor_get_f(t, 0) != 0;
}

typedef struct { /* a Loop's carried value: a tensor or a sequence */
  gv_value *v;
  gv_value **seq;
  int nseq;
  bool is_seq;
} loop_val;

static int loop_get(gv_ictx *c, const char *name, loop_val *lv) {
  memset(lv, 0, sizeof *lv);
  if (gv_is_seq(c, name)) {
    lv->is_seq = true;
    return (lv->nseq = gv_lookup_seq(c, name, &lv->seq)) < 0 ? -1 : 0;
  }
  return (lv->v = gv_lookup(c, name)) ? 0 : -1;
}

static int loop_bind(gv_ictx *c, const char *name, const loop_val *lv) {
  if (!name || !*name) return 0;
  return lv->is_seq ? gv_bind_seq(c, name, lv->seq, lv->nseq) : gv_bind(c, name, lv->v);
}

static int h_loop(gv_ictx *c, node_t *n, gv_value **in, int nin, int code) {
  (void)code;
  const Onnx__AttributeProto *ba = attr(n, "body");
  if (!ba || !ba->g) return gv_node_error(c, "Loop needs a body graph");
  const Onnx__GraphProto *g = ba->g;
  if (c->depth >= 32) return gv_node_error(c, "Loop nested too deeply");
  int N = nin - 2, K = (int)g->n_output - 1 - N;
  if (N < 0 || (int)g->n_input != N + 2 || K < 0 || (int)n->n_output != N + K)
    return gv_node_error(c, "Loop with %d carried values: its body has %zu inputs and %zu outputs, the node %zu outputs", N,
                         g->n_input, g->n_output, n->n_output);
  int64_t M = -1;
  if (in[0]) {
    const gv_tensor *t = v_eval(c, in[0], 0);
    if (!t || !gv_dtype_is_int(t->type.dtype) || gv_tensor_numel(t) != 1)
      return gv_node_error(c, "unsupported: a Loop whose trip count is not known at import (it is unrolled)");
    M = gv_tensor_get_i(t, 0);
    if (M < 0) M = 0;
  }
  int cond = nin > 1 && in[1] ? known_bool(c, in[1]) : 1;
  if (cond < 0) return gv_node_error(c, "unsupported: a Loop whose condition is not known at import (it is unrolled)");
  if (M < 0 && !(nin > 1 && in[1])) return gv_node_error(c, "a Loop without a trip count or a condition never ends");
  node_t *self = n;
  int64_t cap = c->opt->max_unrolled_ops > 0 ? c->opt->max_unrolled_ops : LOOP_MAX_OPS;
  if (M > 0 && (M > LOOP_MAX_ITERS || M * (int64_t)(g->n_node + 1) > cap - c->unrolled))
    return gv_node_error(c, "unsupported: a Loop of %lld iterations over %zu body nodes (it is unrolled at import: at most %d "
                         "iterations and %lld ops in all)", (long long)M, g->n_node, LOOP_MAX_ITERS, (long long)cap);
  loop_val *cur = gv_alloc(c->tmp, (size_t)(N ? N : 1) * sizeof *cur);
  for (int i = 0; i < N; i++)
    if (n->input[2 + i] && *n->input[2 + i] ? loop_get(c, n->input[2 + i], &cur[i]) : gv_node_error(c, "carried value %d is empty", i))
      return -1;
  gv_value ***scans = gv_alloc(c->tmp, (size_t)(K ? K : 1) * sizeof *scans);
  int64_t most = M >= 0 ? M : LOOP_MAX_ITERS; /* the iterations that can run: each scan output's slots */
  for (int j = 0; j < K; j++) scans[j] = gv_alloc(c->tmp, (size_t)(most ? most : 1) * sizeof **scans);
  int64_t it = 0;
  for (; cond && (M < 0 || it < M); it++) {
    if (it >= LOOP_MAX_ITERS) {
      c->node = self;
      return gv_node_error(c, "unsupported: a Loop of more than %d iterations (it is unrolled at import)", LOOP_MAX_ITERS);
    }
    if (c->unrolled > cap) {
      c->node = self;
      return gv_node_error(c, "unsupported: Loops that unroll to more than %lld ops in all", (long long)cap);
    }
    gv_op *mark = c->scope->block->last;
    gv_scope_push(c, c->scope->block); /* the iteration's names; its ops go where the Loop is */
    c->depth++;
    int rc = 0;
    const char *iname = g->input[0] && g->input[0]->name ? g->input[0]->name : "";
    const char *cname = g->input[1] && g->input[1]->name ? g->input[1]->name : "";
    if (*iname) rc = gv_bind(c, iname, const_scalar(c, GV_DT_I64, (double)it));
    if (!rc && *cname) rc = gv_bind(c, cname, const_scalar(c, GV_DT_BOOL, 1));
    for (int i = 0; i < N && !rc; i++) rc = loop_bind(c, g->input[2 + i] ? g->input[2 + i]->name : "", &cur[i]);
    if (!rc) rc = gv_import_graph_nodes(c, g);
    /* the body's outputs: condition, carried values, scan outputs */
    int nc = -1;
    if (!rc) {
      const char *o0 = g->output[0] && g->output[0]->name ? g->output[0]->name : "";
      gv_value *cv = gv_lookup(c, o0);
      if (!cv) rc = -1;
      else if ((nc = known_bool(c, cv)) < 0) {
        c->node = self;
        rc = gv_node_error(c, "unsupported: a Loop whose condition is not known at import (it is unrolled)");
      }
    }
    for (int i = 0; i < N && !rc; i++)
      rc = loop_get(c, g->output[1 + i] && g->output[1 + i]->name ? g->output[1 + i]->name : "", &cur[i]);
    for (int j = 0; j < K && !rc; j++) {
      gv_value *sv = gv_lookup(c, g->output[1 + N + j] && g->output[1 + N + j]->name ? g->output[1 + N + j]->name : "");
      if (!sv) rc = -1;
      else scans[j][it] = sv;
    }
    c->depth--;
    gv_scope_pop(c);
    c->node = self;
    if (rc) return -1;
    for (gv_op *op = mark ? mark->next : c->scope->block->first; op; op = op->next) c->unrolled++; /* the iteration's ops */
    cond = nc;
  }
  for (int i = 0; i < N; i++)
    if (loop_bind(c, n->output[i], &cur[i])) return -1;
  for (int j = 0; j < K; j++) {
    if (!n->output[N + j] || !*n->output[N + j]) continue;
    if (it == 0) return gv_node_error(c, "unsupported: a scan output of a Loop that runs no iteration (its shape is unknown)");
    int64_t z = 0;
    gv_value **w = gv_alloc(c->tmp, (size_t)it * sizeof *w);
    for (int64_t i = 0; i < it; i++)
      if (!(w[i] = v_axes_op(c, GV_OP_UNSQUEEZE, scans[j][i], 1, &z))) return -1;
    gv_value *y = v_concat(c, w, (int)it, 0);
    if (!y || out(c, n, N + j, y)) return -1;
  }
  return 0;
}

/* After a node's handler: results it left without a static type get their
 * shape rule again with the operands' values known at import (v_eval:
 * constants and static shapes, the facts fold-constants would find), so a
 * Range, ConstantOfShape, Expand or Tile of computed shapes is typed now and
 * what follows (a Loop's trip count, SplitToSequence's axis) can use it. A
 * rule's error here is the one shape-infer would report later. */
static int refine_types(gv_ictx *c, gv_op *from) {
  for (gv_op *op = from; op; op = op->next) {
    bool known = true;
    for (int i = 0; i < op->nres; i++) known = known && op->res[i]->type.rank >= 0 && gv_type_is_static(&op->res[i]->type);
    if (known || op->nregions || op->code == GV_OP_FUSED || op->code == GV_OP_CONSTANT) continue;
    const gv_tensor **vals = gv_alloc(c->tmp, (size_t)(op->nopnds + 1) * sizeof *vals);
    bool any = false;
    for (int i = 0; i < op->nopnds; i++) {
      const gv_type *t = &op->opnds[i]->type;
      if (!(gv_dtype_is_int(t->dtype) || t->dtype == GV_DT_BOOL) || t->rank > 1) continue;
      vals[i] = v_eval(c, op->opnds[i], 0);
      any = any || vals[i];
    }
    if (any && gv_infer_op(c->m, op, vals)) return -1;
  }
  return 0;
}

static bool seq_handler(handler h) {
  return h == h_seq_insert || h == h_seq_erase || h == h_seq_at || h == h_seq_length || h == h_concat_from_seq ||
         h == h_loop;
}

typedef struct {
  const char *op;
  int since;     /* first opset where this mapping is valid */
  int min_in;    /* required inputs (checked non-empty) */
  int max_in;    /* -1: variadic */
  handler h;
  int code;
} row;

#define U(name, code) {name, 1, 1, 1, h_unary, GV_OP_##code}
#define B(name, code) {name, 1, 2, 2, h_binary, GV_OP_##code}
static const row table[] = {
    /* keep sorted by name: gv_onnx_supported_ops lists them in this order */
    U("Abs", ABS),
    B("Add", ADD),
    B("And", AND),
    {"ArgMax", 13, 1, 1, h_argmax, GV_OP_REDUCE_MAX},
    {"ArgMin", 13, 1, 1, h_argmax, GV_OP_REDUCE_MIN},
    {"AveragePool", 1, 1, 1, h_pool, 1},
    {"BatchNormalization", 1, 5, 5, h_batch_norm, 0},
    {"Cast", 1, 1, 1, h_cast, 0},
    {"CastLike", 15, 2, 2, h_castlike, 0},
    U("Ceil", CEIL),
    {"Clip", 1, 1, 3, h_clip, 0},
    {"Concat", 1, 1, -1, h_concat, 0},
    {"ConcatFromSequence", 11, 1, 1, h_concat_from_seq, 0},
    {"Constant", 1, 0, 0, h_constant, 0},
    {"ConstantOfShape", 1, 1, 1, h_constant_of_shape, 0},
    {"Conv", 1, 2, 3, h_conv, 0},
    {"ConvTranspose", 1, 2, 3, h_conv_transpose, 0},
    U("Cos", COS),
    {"CumSum", 1, 2, 2, h_cumsum, 0},
    B("Div", DIV),
    {"Dropout", 1, 1, 3, h_dropout, 0},
    {"Einsum", 12, 1, 2, h_einsum, 0},
    B("Equal", EQUAL),
    U("Erf", ERF),
    U("Exp", EXP),
    {"Expand", 1, 2, 2, h_expand, 0},
    {"Flatten", 1, 1, 1, h_flatten, 0},
    U("Floor", FLOOR),
    {"GRU", 1, 3, 6, h_rnn, 1},
    {"Gather", 1, 2, 2, h_gather, 0},
    {"GatherElements", 1, 2, 2, h_elements, GV_OP_GATHER_ELEMENTS},
    {"GatherND", 1, 2, 2, h_gather_nd, 0},
    {"Gelu", 20, 1, 1, h_unary, GV_OP_GELU},
    {"Gemm", 1, 2, 3, h_gemm, 0},
    {"GlobalAveragePool", 1, 1, 1, h_global_pool, GV_OP_REDUCE_MEAN},
    {"GlobalMaxPool", 1, 1, 1, h_global_pool, GV_OP_REDUCE_MAX},
    B("Greater", GREATER),
    B("GreaterOrEqual", GREATER_EQUAL),
    {"Identity", 1, 1, 1, h_alias, 0},
    {"If", 1, 1, 1, h_if, 0},
    {"LSTM", 1, 3, 8, h_rnn, 0},
    {"LayerNormalization", 17, 2, 3, h_layer_norm, 0},
    B("Less", LESS),
    B("LessOrEqual", LESS_EQUAL),
    U("Log", LOG),
    {"LogSoftmax", 1, 1, 1, h_softmax, GV_OP_LOG_SOFTMAX},
    {"Loop", 1, 0, -1, h_loop, 0},
    {"MatMul", 1, 2, 2, h_matmul, 0},
    {"Max", 1, 1, -1, h_variadic, GV_OP_MAX},
    {"MaxPool", 1, 1, 1, h_pool, 0},
    {"Min", 1, 1, -1, h_variadic, GV_OP_MIN},
    {"Mod", 13, 2, 2, h_mod, 0},
    B("Mul", MUL),
    U("Neg", NEG),
    U("Not", NOT),
    {"OneHot", 11, 3, 3, h_onehot, 0},
    B("Or", OR),
    {"Pad", 1, 2, 4, h_pad, 0},
    B("Pow", POW),
    {"Range", 1, 3, 3, h_range, 0},
    U("Reciprocal", RECIPROCAL),
    {"ReduceMax", 1, 1, 2, h_reduce, GV_OP_REDUCE_MAX},
    {"ReduceMean", 1, 1, 2, h_reduce, GV_OP_REDUCE_MEAN},
    {"ReduceMin", 1, 1, 2, h_reduce, GV_OP_REDUCE_MIN},
    {"ReduceSum", 1, 1, 2, h_reduce, GV_OP_REDUCE_SUM},
    U("Relu", RELU),
    {"Reshape", 1, 2, 2, h_reshape, 0},
    {"Resize", 1, 1, 4, h_resize, 0},
    {"ScatterElements", 1, 3, 3, h_elements, GV_OP_SCATTER_ELEMENTS},
    {"ScatterND", 1, 3, 3, h_scatter_nd, 0},
    {"SequenceAt", 11, 2, 2, h_seq_at, 0},
    {"SequenceConstruct", 11, 1, -1, h_seq_construct, 0},
    {"SequenceEmpty", 11, 0, 0, h_seq_empty, 0},
    {"SequenceErase", 11, 1, 2, h_seq_erase, 0},
    {"SequenceInsert", 11, 2, 3, h_seq_insert, 0},
    {"SequenceLength", 11, 1, 1, h_seq_length, 0},
    {"Shape", 1, 1, 1, h_shape, 0},
    U("Sigmoid", SIGMOID),
    U("Sin", SIN),
    {"Slice", 1, 3, 5, h_slice, 0},
    {"Softmax", 1, 1, 1, h_softmax, GV_OP_SOFTMAX},
    {"Split", 1, 1, 2, h_split, 0},
    {"SplitToSequence", 11, 1, 2, h_split_to_seq, 0},
    U("Sqrt", SQRT),
    {"Squeeze", 1, 1, 2, h_squeeze, 0},
    B("Sub", SUB),
    U("Tanh", TANH),
    {"Tile", 1, 2, 2, h_tile, 0},
    {"TopK", 10, 2, 2, h_topk, 0},
    {"Transpose", 1, 1, 1, h_transpose, 0},
    {"Trilu", 14, 1, 2, h_trilu, 0},
    {"Unsqueeze", 1, 1, 2, h_unsqueeze, 0},
    {"Where", 1, 3, 3, h_where, 0},
};
#undef U
#undef B
enum { NTABLE = sizeof table / sizeof table[0] };

const char *const *gv_onnx_supported_ops(void) {
  static const char *names[NTABLE + 1];
  for (int i = 0; i < NTABLE; i++) names[i] = table[i].op;
  names[NTABLE] = NULL;
  return names;
}

/* ---------------------------------------------------------------- attribute schema */

/* The ONNX schema's type (and allowed values) of every attribute the table's
 * ops read, keyed by name: these names mean the same in every ONNX op that
 * has them. A node whose attribute has another type (a Softmax `axis` given
 * as a string), or a value outside the allowed set, is one error naming the
 * node and the attribute; attributes not listed are not read. */
typedef Onnx__AttributeProto__AttributeType atype;
#define AT(t) ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__##t
static const struct {
  const char *name;
  atype type;
  const char *allowed; /* STRING: "|a|b|"; INT: "01" for a flag; NULL: any */
} attr_schema[] = {
    {"allowzero", AT(INT), "01"},       {"alpha", AT(FLOAT), NULL},       {"approximate", AT(STRING), "|none|tanh|"},
    {"auto_pad", AT(STRING), "||NOTSET|SAME_UPPER|SAME_LOWER|VALID|"},     {"axes", AT(INTS), NULL},
    {"axis", AT(INT), NULL},            {"batch_dims", AT(INT), NULL},    {"beta", AT(FLOAT), NULL},
    {"body", AT(GRAPH), NULL},          {"cubic_coeff_a", AT(FLOAT), NULL}, {"dtype", AT(INT), NULL},       {"new_axis", AT(INT), "01"},
    {"exclude_outside", AT(INT), "01"},
    {"dilations", AT(INTS), NULL},      {"else_branch", AT(GRAPH), NULL}, {"end", AT(INT), NULL},
    {"epsilon", AT(FLOAT), NULL},       {"equation", AT(STRING), NULL},       {"exclusive", AT(INT), "01"},     {"fmod", AT(INT), "01"},     {"group", AT(INT), NULL},
    {"keepdims", AT(INT), "01"},        {"largest", AT(INT), "01"},       {"sorted", AT(INT), "01"},        {"kernel_shape", AT(INTS), NULL}, {"noop_with_empty_axes", AT(INT), "01"},
    {"num_outputs", AT(INT), NULL},     {"pads", AT(INTS), NULL},         {"perm", AT(INTS), NULL},
    {"reduction", AT(STRING), "|none|add|mul|max|min|"},                  {"reverse", AT(INT), "01"},
    {"seed", AT(INT), NULL},            {"select_last_index", AT(INT), "01"},            {"split", AT(INTS), NULL},        {"stash_type", AT(INT), NULL},
    {"start", AT(INT), NULL},           {"strides", AT(INTS), NULL},      {"then_branch", AT(GRAPH), NULL},
    {"to", AT(INT), NULL},              {"transA", AT(INT), "01"},        {"transB", AT(INT), "01"},
    {"upper", AT(INT), "01"},           {"value", AT(TENSOR), NULL},
};

static const char *atype_name(atype t) {
  switch (t) {
  case AT(FLOAT): return "a float";
  case AT(INT): return "an int";
  case AT(STRING): return "a string";
  case AT(TENSOR): return "a tensor";
  case AT(GRAPH): return "a graph";
  case AT(FLOATS): return "a list of floats";
  case AT(INTS): return "a list of ints";
  case AT(STRINGS): return "a list of strings";
  default: return "another kind of value";
  }
}

/* The attribute's type: its declared one, or (old writers leave it
 * UNDEFINED) the one field it sets. */
static atype attr_type(const Onnx__AttributeProto *a) {
  if (a->type != AT(UNDEFINED)) return a->type;
  if (a->has_f) return AT(FLOAT);
  if (a->has_i) return AT(INT);
  if (a->has_s) return AT(STRING);
  if (a->t) return AT(TENSOR);
  if (a->g) return AT(GRAPH);
  if (a->n_floats) return AT(FLOATS);
  if (a->n_ints) return AT(INTS);
  if (a->n_strings) return AT(STRINGS);
  return AT(UNDEFINED);
}

static int check_attrs(gv_ictx *c, node_t *n) {
  for (size_t i = 0; i < n->n_attribute; i++) {
    const Onnx__AttributeProto *a = n->attribute[i];
    const char *name = a && a->name ? a->name : "";
    for (size_t k = 0; k < sizeof attr_schema / sizeof *attr_schema; k++) {
      if (strcmp(attr_schema[k].name, name) != 0) continue;
      atype t = attr_type(a), want = attr_schema[k].type;
      bool ok = t == want, has = want == AT(INT) ? a->has_i : want == AT(FLOAT) ? a->has_f : want == AT(STRING) ? a->has_s : true;
      if (!ok || !has)
        return gv_node_error(c, "attribute '%s' must be %s, got %s", gv_esc(c, name), atype_name(want),
                             ok ? "no value" : atype_name(t));
      const char *al = attr_schema[k].allowed;
      if (al && want == AT(INT) && a->i != 0 && a->i != 1)
        return gv_node_error(c, "attribute '%s' must be 0 or 1, got %lld", gv_esc(c, name), (long long)a->i);
      if (al && want == AT(STRING)) {
        size_t len = a->s.len;
        const char *v = a->s.data ? (const char *)a->s.data : "";
        bool found = false;
        for (const char *p = al; p && p[1] && !found; p = strchr(p + 1, '|'))
          found = memchr(v, 0, len) == NULL && strncmp(p + 1, v, len) == 0 && p[1 + len] == '|';
        if (!found)
          return gv_node_error(c, "attribute '%s' has the value '%s', not one of %s", gv_esc(c, name),
                               gv_esc(c, gv_strndup(c->tmp, v, len)), al);
      }
      break;
    }
  }
  return 0;
}
#undef AT

/* ---------------------------------------------------------------- unsupported ops, all at once */

static const row *find_row(const char *ot) {
  for (int i = 0; i < NTABLE; i++)
    if (strcmp(table[i].op, ot) == 0) return &table[i];
  return NULL;
}

/* Ops refused for a reason beyond a missing row: the programs have static
 * shapes, and these ops' output shapes depend on their inputs' values. */
static const char *refusal(const char *ot) {
  static const char *const data_dependent[] = {"NonZero", "Unique", "Compress", "NonMaxSuppression"};
  for (size_t i = 0; i < sizeof data_dependent / sizeof *data_dependent; i++)
    if (strcmp(ot, data_dependent[i]) == 0) return "its output shape depends on its input's values";
  return NULL;
}

static bool node_supported(const gv_ictx *c, node_t *n) {
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) return false;
  const row *r = find_row(n->op_type ? n->op_type : "");
  return r && c->opset >= r->since;
}

typedef struct {
  const char *type; /* op type, or "domain::type" outside the default domain */
  const char *first; /* the first node's name */
  int count;
} unsup;

static void add_unsupported(gv_ictx *c, node_t *n, unsup *u, int *nu, int cap);

static void collect_unsupported(gv_ictx *c, const Onnx__GraphProto *g, unsup *u, int *nu, int cap, int depth) {
  if (!g || depth > 32) return;
  for (size_t i = 0; i < g->n_node; i++) {
    node_t *n = g->node[i];
    if (!n) continue;
    if (!node_supported(c, n)) add_unsupported(c, n, u, nu, cap);
    for (size_t a = 0; a < n->n_attribute; a++) { /* If / Loop bodies */
      const Onnx__AttributeProto *at = n->attribute[a];
      collect_unsupported(c, at->g, u, nu, cap, depth + 1);
      for (size_t k = 0; k < at->n_graphs; k++) collect_unsupported(c, at->graphs[k], u, nu, cap, depth + 1);
    }
  }
}

static void add_unsupported(gv_ictx *c, node_t *n, unsup *u, int *nu, int cap) {
  const char *ot = n->op_type ? n->op_type : "";
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0) {
    size_t len = strlen(n->domain) + strlen(ot) + 3;
    char *t = gv_alloc(c->tmp, len);
    snprintf(t, len, "%s::%s", n->domain, ot);
    ot = t;
  }
  int j = 0;
  while (j < *nu && strcmp(u[j].type, ot) != 0) j++;
  if (j == *nu) {
    if (*nu == cap) return;
    u[(*nu)++] = (unsup){ot, n->name ? n->name : "", 0};
  }
  u[j].count++;
}

/* Every node the table cannot import, reported at once: with one such node
 * its usual error (gv_import_node); with more, one line naming each op type
 * with its count and first node, so a user sees the whole list. */
int gv_onnx_check_supported(gv_ictx *c, const Onnx__GraphProto *g) {
  enum { CAP = 64 };
  unsup u[CAP];
  int nu = 0, total = 0;
  collect_unsupported(c, g, u, &nu, CAP, 0);
  for (int i = 0; i < nu; i++) total += u[i].count;
  if (total <= 1) return 0;
  char msg[3000];
  size_t at = (size_t)snprintf(msg, sizeof msg, "%d unsupported operator nodes:", total);
  for (int i = 0; i < nu && at < sizeof msg; i++) {
    const row *r = strchr(u[i].type, ':') ? NULL : find_row(u[i].type);
    const char *why = strchr(u[i].type, ':') ? NULL : refusal(u[i].type);
    char since[80] = "";
    if (r) snprintf(since, sizeof since, ", from opset %d", r->since);
    else if (why) snprintf(since, sizeof since, ": %s", why);
    at += (size_t)snprintf(msg + at, sizeof msg - at, "%s %s x%d (first '%s'%s)", i ? "," : "", gv_esc(c, u[i].type),
                           u[i].count, gv_esc(c, u[i].first), since);
  }
  return gv_error(c->m, "%s", msg);
}

int gv_import_node(gv_ictx *c, const Onnx__NodeProto *n) {
  const char *ot = n->op_type ? n->op_type : "";
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)
    return gv_node_error(c, "unsupported operator (domain '%s')", gv_esc(c, n->domain));
  const row *r = NULL;
  for (int i = 0; i < NTABLE && !r; i++)
    if (strcmp(table[i].op, ot) == 0) r = &table[i];
  if (!r && refusal(ot)) return gv_node_error(c, "unsupported operator: %s", refusal(ot));
  if (!r) return gv_node_error(c, "unsupported operator");
  if (c->opset < r->since)
    return gv_node_error(c, "unsupported operator at opset %d (%s exists from opset %d)", c->opset, gv_esc(c, ot),
                         r->since);
  int nin = (int)n->n_input;
  if (nin < r->min_in) return gv_node_error(c, "expects at least %d inputs, has %d", r->min_in, nin);
  if (r->max_in >= 0 && nin > r->max_in) return gv_node_error(c, "expects at most %d inputs, has %d", r->max_in, nin);
  if (nin > 4096) return gv_node_error(c, "too many inputs (%d)", nin);
  if (n->n_output < 1 && r->h != h_if)
    return gv_node_error(c, "has no outputs");
  gv_value **in = gv_alloc(c->tmp, (size_t)(nin ? nin : 1) * sizeof *in);
  for (int i = 0; i < nin; i++) {
    const char *name = n->input[i];
    if (!name || !*name) {
      if (i < r->min_in) return gv_node_error(c, "required input %d is empty", i);
      continue;
    }
    if (gv_is_seq(c, name)) { /* the sequence ops look their sequences up by name */
      if (!seq_handler(r->h)) return gv_node_error(c, "'%s' is a sequence where a tensor is expected", gv_esc(c, name));
      continue;
    }
    if (!(in[i] = gv_lookup(c, name))) return -1;
  }
  if (r->h != h_split && r->h != h_if && r->h != h_loop && r->h != h_layer_norm && r->h != h_dropout && r->h != h_batch_norm &&
      r->h != h_rnn && r->h != h_topk && outs_at_most(c, n, 1))
    return -1;
  if (check_attrs(c, n)) return -1;
  gv_block *b = c->scope->block;
  gv_op *before = b->last;
  if (r->h(c, n, in, nin, r->code)) return -1;
  return refine_types(c, before ? before->next : b->first);
}
