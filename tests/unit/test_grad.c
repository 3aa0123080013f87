/* test_grad.c — finite-difference check of every gradient rule (ir/grad.c)
 * through the autodiff pass. Each case builds a tiny function of random f64
 * parameters (inputs kept away from kinks; positive where the op needs it),
 * the loss sum(op(x) * W) with a random constant W, runs shape-infer and
 * autodiff, evaluates the gradients with gv_interpret and compares every
 * element with the central difference (L(x+h) - L(x-h)) / 2h, h = 1e-6.
 * Tolerance: |analytic - numeric| <= 1e-6 + 1e-5 |numeric| (f64; the cast
 * case runs through f32 with h = 1e-3 and 1e-3). Also: the error for an op
 * without a rule, and that values needing no gradient get none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "passes/passes.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define NDIM(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), D(__VA_ARGS__)

static gv_module *M;
static gv_func *F;
static unsigned seed = 12345;
static double rnd(void) { /* uniform in [-1, 1) */
  seed = seed * 1103515245u + 12345u;
  return ((seed >> 8) & 0xFFFF) / 32768.0 - 1.0;
}

static void begin(void) {
  M = gv_module_new("test_grad.onnx");
  F = gv_func_new(M, "main");
  M->main = F;
}

/* A parameter with random values: |x| in [0.2, 1.2], positive when pos. */
static gv_value *param(int rank, const int64_t *dims, bool pos) {
  char name[16];
  snprintf(name, sizeof name, "p%d", F->body->nargs);
  gv_value *v = gv_func_add_arg(M, F, name, gv_type_make(GV_DT_F64, rank, dims), true);
  gv_tensor *t = gv_tensor_new(M->arena, v->type);
  for (int64_t i = 0; i < gv_tensor_numel(t); i++) {
    double r = rnd(), a = 0.2 + fabs(r);
    gv_tensor_set_f(t, i, pos || r >= 0 ? a : -a);
  }
  F->param_data[v->index] = t->data;
  return v;
}

static gv_op *op(gv_opcode code, int n, gv_value *const *in, int nres) {
  gv_op *o = gv_op_new(M, code, n, in, nres);
  gv_op_set_loc(M, o, gv_ops[code].name, NULL);
  gv_block_append(F->body, o);
  return o;
}
static gv_value *op1(gv_opcode code, gv_value *x) { return op(code, 1, &x, 1)->res[0]; }
static gv_value *op2(gv_opcode code, gv_value *a, gv_value *b) { return op(code, 2, (gv_value *[]){a, b}, 1)->res[0]; }
static gv_value *icst(int rank, const int64_t *dims, const int64_t *v) {
  gv_tensor *t = gv_tensor_new(M->arena, gv_type_make(GV_DT_I64, rank, dims));
  memcpy(t->data, v, (size_t)gv_tensor_numel(t) * 8);
  gv_op *o = gv_constant_new(M, t);
  gv_block_append(F->body, o);
  return o->res[0];
}

/* Appends return(sum(y * W)), differentiates and checks; 0 when all match. */
static int check(const char *name, gv_value *y, double h, double tol) {
  gv_op *ret = op(GV_OP_RETURN, 1, &y, 0);
  int rc = 1, k = 1, bad = 0, n = 0;
  double worst = 0;
  gv_tensor **outs;
  int nouts;
  if (gv_pass_shape_infer(M)) goto fail;
  gv_tensor *w = gv_tensor_new(M->arena, y->type);
  for (int64_t i = 0; i < gv_tensor_numel(w); i++) gv_tensor_set_f(w, i, rnd());
  gv_op *wc = gv_constant_new(M, w);
  gv_insert_before(ret, wc);
  gv_op *mul = gv_op_new(M, GV_OP_MUL, 2, (gv_value *[]){y, wc->res[0]}, 1);
  gv_insert_before(ret, mul);
  gv_op *sum = gv_op_new(M, GV_OP_REDUCE_SUM, 1, &mul->res[0], 1);
  gv_set_int(M, sum, "keepdims", 0);
  gv_insert_before(ret, sum);
  gv_op_set_operands(M, ret, 1, &sum->res[0]);
  if (gv_pass_shape_infer(M) || gv_pass_autodiff(M) || gv_verify(M)) goto fail;
  if (gv_interpret(M, NULL, 0, &outs, &nouts)) goto fail;
  for (int i = 0; i < F->body->nargs; i++) {
    if (!F->arg_is_param[i]) continue;
    gv_tensor *g = outs[k++];
    gv_tensor pv = {F->body->args[i]->type, (void *)F->param_data[i]};
    for (int64_t j = 0; j < gv_tensor_numel(&pv); j++) {
      double x0 = gv_tensor_get_f(&pv, j), lp, lm;
      gv_tensor **o2;
      int n2;
      gv_tensor_set_f(&pv, j, x0 + h);
      if (gv_interpret(M, NULL, 0, &o2, &n2)) goto fail;
      lp = gv_tensor_get_f(o2[0], 0);
      gv_tensor_set_f(&pv, j, x0 - h);
      if (gv_interpret(M, NULL, 0, &o2, &n2)) goto fail;
      lm = gv_tensor_get_f(o2[0], 0);
      gv_tensor_set_f(&pv, j, x0);
      double num = (lp - lm) / (2 * h), an = gv_tensor_get_f(g, j), err = fabs(an - num);
      n++;
      if (err > worst) worst = err;
      if (err > tol * 0.1 + tol * fabs(num) && bad++ < 3)
        fprintf(stderr, "%s: param %d element %lld: autodiff %.9g, finite difference %.9g\n", name, i, (long long)j, an, num);
    }
  }
  rc = bad ? 1 : 0;
  if (rc) fprintf(stderr, "FAIL %s (%d of %d elements, max err %.3g)\n", name, bad, n, worst);
  else printf("ok %-24s %3d elements, max err %.2e\n", name, n, worst);
  gv_module_free(M);
  return rc;
fail:
  fprintf(stderr, "FAIL %s (error above)\n", name);
  gv_module_free(M);
  return 1;
}

#define H 1e-6
#define TOL 1e-5

static int unary(gv_opcode code, bool pos, const char *approx) {
  begin();
  gv_value *x = param(NDIM(2, 3), pos);
  gv_op *o = op(code, 1, &x, 1);
  if (approx) gv_set_str(M, o, "approximate", approx);
  char name[64];
  snprintf(name, sizeof name, "%s%s%s", gv_ops[code].name, approx ? ":" : "", approx ? approx : "");
  return check(name, o->res[0], H, TOL);
}

static int binary(gv_opcode code, int ra, const int64_t *da, int rb, const int64_t *db, bool pos) {
  begin();
  gv_value *a = param(ra, da, pos), *b = param(rb, db, pos);
  return check(gv_ops[code].name, op2(code, a, b), H, TOL);
}

static int cases(void) {
  int f = 0;
  const gv_opcode un[] = {GV_OP_NEG, GV_OP_ABS, GV_OP_EXP, GV_OP_ERF, GV_OP_TANH, GV_OP_SIGMOID,
                          GV_OP_RELU, GV_OP_SIN, GV_OP_COS, GV_OP_SILU};
  for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) f += unary(un[i], false, NULL);
  f += unary(GV_OP_SQRT, true, NULL);
  f += unary(GV_OP_RECIPROCAL, true, NULL);
  f += unary(GV_OP_LOG, true, NULL);
  f += unary(GV_OP_GELU, false, "none");
  f += unary(GV_OP_GELU, false, "tanh");
  f += binary(GV_OP_ADD, NDIM(2, 3), NDIM(3), false);
  f += binary(GV_OP_SUB, NDIM(2, 3), NDIM(2, 1), false);
  f += binary(GV_OP_MUL, NDIM(1, 3), NDIM(2, 3), false);
  f += binary(GV_OP_DIV, NDIM(2, 3), NDIM(3), true);
  f += binary(GV_OP_POW, NDIM(2, 3), NDIM(3), true);
  f += binary(GV_OP_MAX, NDIM(2, 3), NDIM(2, 3), false);
  f += binary(GV_OP_MIN, NDIM(2, 3), NDIM(1), false);
  { /* where with broadcasting */
    begin();
    gv_value *a = param(NDIM(2, 3), false), *b = param(NDIM(3), false);
    gv_tensor *c = gv_tensor_new(M->arena, gv_type_make(GV_DT_BOOL, 2, D(2, 3)));
    for (int i = 0; i < 6; i++) gv_tensor_set_i(c, i, i % 3 == 1);
    gv_op *co = gv_constant_new(M, c);
    gv_block_append(F->body, co);
    f += check("where", op(GV_OP_WHERE, 3, (gv_value *[]){co->res[0], a, b}, 1)->res[0], H, TOL);
  }
  { /* cast f64 -> f32 -> f64: the f32 leg limits precision */
    begin();
    gv_op *c1 = op(GV_OP_CAST, 1, (gv_value *[]){param(NDIM(2, 3), false)}, 1);
    gv_set_type(M, c1, "to", GV_DT_F32);
    gv_value *e = op1(GV_OP_EXP, c1->res[0]);
    gv_op *c2 = op(GV_OP_CAST, 1, &e, 1);
    gv_set_type(M, c2, "to", GV_DT_F64);
    f += check("cast", c2->res[0], 1e-3, 1e-3);
  }
  { begin(); gv_op *o = op(GV_OP_RESHAPE, 1, (gv_value *[]){param(NDIM(2, 3), false)}, 1);
    o->res[0]->type = gv_type_make(GV_DT_F64, 2, D(3, 2)); f += check("reshape", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_SQUEEZE, 1, (gv_value *[]){param(NDIM(2, 1, 3), false)}, 1);
    gv_set_ints(M, o, "axes", 1, D(1)); f += check("squeeze", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_UNSQUEEZE, 1, (gv_value *[]){param(NDIM(2, 3), false)}, 1);
    gv_set_ints(M, o, "axes", 1, D(0)); f += check("unsqueeze", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_FLATTEN, 1, (gv_value *[]){param(NDIM(2, 3, 2), false)}, 1);
    gv_set_int(M, o, "axis", 1); f += check("flatten", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_EXPAND, 1, (gv_value *[]){param(NDIM(3, 1), false)}, 1);
    o->res[0]->type = gv_type_make(GV_DT_F64, 3, D(2, 3, 4)); f += check("expand", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_TRANSPOSE, 1, (gv_value *[]){param(NDIM(2, 3, 4), false)}, 1);
    gv_set_ints(M, o, "perm", 3, D(1, 2, 0)); f += check("transpose", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_SLICE, 1, (gv_value *[]){param(NDIM(4, 5), false)}, 1);
    gv_set_ints(M, o, "starts", 2, D(1, -1)); gv_set_ints(M, o, "ends", 2, D(4, 0));
    gv_set_ints(M, o, "axes", 2, D(0, 1)); gv_set_ints(M, o, "steps", 2, D(2, -2));
    f += check("slice", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_CONCAT, 2, (gv_value *[]){param(NDIM(2, 3), false), param(NDIM(2, 1), false)}, 1);
    gv_set_int(M, o, "axis", -1); f += check("concat", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_SPLIT, 1, (gv_value *[]){param(NDIM(2, 4), false)}, 3);
    gv_set_int(M, o, "axis", 1); gv_set_ints(M, o, "sizes", 3, D(1, 1, 2)); /* result 2 unused: zeros */
    f += check("split", op2(GV_OP_MUL, o->res[0], o->res[1]), H, TOL); }
  { begin(); gv_value *d = param(NDIM(5, 3), false), *ix = icst(NDIM(2, 2), D(1, 4, 1, -5));
    gv_op *o = op(GV_OP_GATHER, 2, (gv_value *[]){d, ix}, 1); gv_set_int(M, o, "axis", 0);
    f += check("gather:axis0", o->res[0], H, TOL); }
  { begin(); gv_value *d = param(NDIM(2, 4, 3), false), *ix = icst(NDIM(3), D(3, 3, 0));
    gv_op *o = op(GV_OP_GATHER, 2, (gv_value *[]){d, ix}, 1); gv_set_int(M, o, "axis", 1);
    f += check("gather:axis1", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_TILE, 1, (gv_value *[]){param(NDIM(2, 3), false)}, 1);
    gv_set_ints(M, o, "repeats", 2, D(2, 3)); f += check("tile", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_TRILU, 1, (gv_value *[]){param(NDIM(3, 4), false)}, 1);
    gv_set_int(M, o, "upper", 0); gv_set_int(M, o, "k", 1); f += check("trilu", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_CUMSUM, 1, (gv_value *[]){param(NDIM(2, 4), false)}, 1);
    gv_set_int(M, o, "axis", 1); f += check("cumsum", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_CUMSUM, 1, (gv_value *[]){param(NDIM(3, 2), false)}, 1);
    gv_set_int(M, o, "axis", 0); gv_set_int(M, o, "exclusive", 1); gv_set_int(M, o, "reverse", 1);
    f += check("cumsum:excl-rev", o->res[0], H, TOL); }
  const gv_opcode red[] = {GV_OP_REDUCE_SUM, GV_OP_REDUCE_MEAN, GV_OP_REDUCE_MAX, GV_OP_REDUCE_MIN};
  for (int i = 0; i < 4; i++) {
    begin();
    gv_op *o = op(red[i], 1, (gv_value *[]){param(NDIM(2, 3, 4), false)}, 1);
    if (i != 3) gv_set_ints(M, o, "axes", i == 1 ? 2 : 1, i == 1 ? D(0, -1) : D(1));
    gv_set_int(M, o, "keepdims", i % 2);
    f += check(gv_ops[red[i]].name, o->res[0], H, TOL);
  }
  { begin(); gv_op *o = op(GV_OP_SOFTMAX, 1, (gv_value *[]){param(NDIM(2, 5), false)}, 1);
    gv_set_int(M, o, "axis", -1); f += check("softmax", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_LOG_SOFTMAX, 1, (gv_value *[]){param(NDIM(3, 2), false)}, 1);
    gv_set_int(M, o, "axis", 0); f += check("log_softmax", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_LAYER_NORM, 3, (gv_value *[]){param(NDIM(2, 5), false), param(NDIM(5), false), param(NDIM(5), false)}, 1);
    gv_set_int(M, o, "axis", -1); gv_set_float(M, o, "epsilon", 1e-5f); f += check("layer_norm", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_LAYER_NORM, 2, (gv_value *[]){param(NDIM(2, 2, 3), false), param(NDIM(2, 3), false)}, 1);
    gv_set_int(M, o, "axis", 1); gv_set_float(M, o, "epsilon", 1e-5f); f += check("layer_norm:axis1", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_RMS_NORM, 2, (gv_value *[]){param(NDIM(3, 4), false), param(NDIM(4), false)}, 1);
    gv_set_int(M, o, "axis", -1); gv_set_float(M, o, "epsilon", 1e-6f); f += check("rms_norm", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_DOT, 2, (gv_value *[]){param(NDIM(2, 3), false), param(NDIM(3, 4), false)}, 1);
    gv_set_ints(M, o, "lhs_contract", 1, D(1)); gv_set_ints(M, o, "rhs_contract", 1, D(0));
    f += check("dot", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_DOT, 2, (gv_value *[]){param(NDIM(2, 3, 4), false), param(NDIM(5, 2, 4), false)}, 1);
    gv_set_ints(M, o, "lhs_batch", 1, D(0)); gv_set_ints(M, o, "rhs_batch", 1, D(1));
    gv_set_ints(M, o, "lhs_contract", 1, D(2)); gv_set_ints(M, o, "rhs_contract", 1, D(2));
    f += check("dot:batch", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_DOT, 2, (gv_value *[]){param(NDIM(3, 2, 4), false), param(NDIM(4, 5, 3), false)}, 1);
    gv_set_ints(M, o, "lhs_contract", 2, D(2, 0)); gv_set_ints(M, o, "rhs_contract", 2, D(0, 2));
    f += check("dot:two-contract", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_CONV, 3, (gv_value *[]){param(NDIM(1, 2, 5, 5), false), param(NDIM(3, 2, 3, 3), false), param(NDIM(3), false)}, 1);
    gv_set_ints(M, o, "strides", 2, D(2, 2)); gv_set_ints(M, o, "pads", 4, D(1, 1, 1, 1));
    f += check("conv", o->res[0], H, TOL); }
  { begin(); gv_op *o = op(GV_OP_CONV, 2, (gv_value *[]){param(NDIM(2, 4, 4), false), param(NDIM(2, 2, 2), false)}, 1);
    gv_set_int(M, o, "group", 2); gv_set_ints(M, o, "dilations", 1, D(2));
    f += check("conv:group-dilation", o->res[0], H, TOL); }
  { begin(); gv_value *lab = icst(NDIM(2, 2), D(1, -100, 4, 0));
    gv_op *o = op(GV_OP_CROSS_ENTROPY, 2, (gv_value *[]){param(NDIM(2, 2, 5), false), lab}, 1);
    gv_set_int(M, o, "ignore_index", -100); f += check("cross_entropy", o->res[0], H, TOL); }
  return f;
}

/* An op whose result needs a gradient but has no rule: one error naming it;
 * and a param that reaches the loss only through a comparison gets zeros. */
static int errors(void) {
  int f = 0;
  begin();
  gv_value *x = param(NDIM(2), false);
  gv_op *fu = op(GV_OP_FUSED, 1, &x, 1);
  gv_block *b = gv_block_new(M);
  gv_value *ba = gv_block_add_arg(M, b, x->type);
  gv_op *y = gv_op_new(M, GV_OP_YIELD, 1, &ba, 0);
  gv_block_append(b, y);
  gv_op_add_region(M, fu, b);
  gv_op_set_loc(M, fu, "/fused0", "Fused");
  fu->res[0]->type = x->type;
  gv_op *s = op(GV_OP_REDUCE_SUM, 1, &fu->res[0], 1);
  gv_set_int(M, s, "keepdims", 0);
  op(GV_OP_RETURN, 1, &s->res[0], 0);
  if (gv_pass_shape_infer(M) == 0 && gv_pass_autodiff(M) == 0) {
    fprintf(stderr, "FAIL: autodiff through galv.fused succeeded\n");
    f++;
  } else {
    printf("ok (expected error above)\n");
  }
  gv_module_free(M);

  begin();
  gv_value *p = param(NDIM(3), false), *q = param(NDIM(3), false);
  gv_value *cmp = op2(GV_OP_GREATER, p, q);
  gv_op *c = op(GV_OP_CAST, 1, &cmp, 1);
  gv_set_type(M, c, "to", GV_DT_F64);
  f += check("comparison:no-gradient", op2(GV_OP_MUL, c->res[0], q), H, TOL);
  return f;
}

int main(void) {
  int f = cases() + errors();
  printf("test_grad: %d failed\n", f);
  return f ? 1 : 0;
}
