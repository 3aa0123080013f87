/* test_eval.c — unit tests of the reference evaluator (ir/eval.c): every
 * core op on small hand-computed cases, run as the passes run them (infer
 * the result type from the operand values, then evaluate): broadcasting,
 * negative axes, slice with negative steps, gather with negative indices,
 * dot with batch dims, conv with pads/strides/group, norms, softmax, cumsum
 * variants, trilu, range, bidirectional expand, the f16/bf16/int/bool paths,
 * and errors (integer division by zero, broadcast mismatch, if). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ir/ir.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

#define D(...) ((int64_t[]){__VA_ARGS__})
#define V(...) ((double[]){__VA_ARGS__})
#define NV(...) (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)), V(__VA_ARGS__)

static gv_module *M;
static gv_block *B;

static gv_tensor *T(gv_dtype dt, int rank, const int64_t *dims, const double *v) {
  gv_tensor *t = gv_tensor_new(M->arena, gv_type_make(dt, rank, dims));
  int64_t n = gv_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) gv_tensor_set_f(t, i, v ? v[i] : (double)i);
  return t;
}
static gv_tensor *S(gv_dtype dt, double v) { return T(dt, 0, NULL, &v); }
static gv_tensor *I(int n, const int64_t *v) {
  int64_t d = n;
  gv_tensor *t = gv_tensor_new(M->arena, gv_type_make(GV_DT_I64, 1, &d));
  for (int i = 0; i < n; i++) ((int64_t *)t->data)[i] = v[i];
  return t;
}

static gv_op *OP(gv_opcode c, int n, gv_tensor *const *ins, int nres) {
  gv_value *v[8];
  for (int i = 0; i < n; i++) v[i] = gv_block_add_arg(M, B, ins[i]->type);
  return gv_op_new(M, c, n, v, nres);
}

/* Infers the result types with every operand value known, then evaluates. */
static gv_tensor *outs[8];
static int RUNN(gv_op *op, gv_tensor *const *ins) {
  if (gv_infer_op(M, op, (const gv_tensor *const *)ins)) return -1;
  return gv_eval_op(M, op, (const gv_tensor *const *)ins, outs);
}
static gv_tensor *RUN(gv_op *op, gv_tensor *const *ins) { return RUNN(op, ins) ? NULL : outs[0]; }

static bool EQ(const gv_tensor *t, const char *type, int n, const double *want, double tol) {
  if (!t) return false;
  char buf[128];
  gv_type_str(&t->type, buf, sizeof buf);
  if (strcmp(buf, type) != 0) {
    fprintf(stderr, "  type %s, want %s\n", buf, type);
    return false;
  }
  if (gv_tensor_numel(t) != n) return false;
  for (int i = 0; i < n; i++) {
    double g = gv_tensor_get_f(t, i);
    if (g != want[i] && !(fabs(g - want[i]) <= tol * (1 + fabs(want[i])))) {
      fprintf(stderr, "  [%d] = %.9g, want %.9g\n", i, g, want[i]);
      return false;
    }
  }
  return true;
}

#define A(...) ((gv_tensor *[]){__VA_ARGS__})

static int test_binary(void) {
  gv_tensor *a = T(GV_DT_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)), *b = T(GV_DT_F32, 1, D(3), V(10, 20, 30));
  gv_tensor *in[] = {a, b};
  CHECK(EQ(RUN(OP(GV_OP_ADD, 2, in, 1), in), "tensor<2x3xf32>", NV(11, 22, 33, 14, 25, 36), 0));
  gv_tensor *c = T(GV_DT_F32, 2, D(2, 1), V(1, 2)), *d = T(GV_DT_F32, 2, D(1, 3), V(1, 2, 3));
  gv_tensor *cd[] = {c, d};
  CHECK(EQ(RUN(OP(GV_OP_SUB, 2, cd, 1), cd), "tensor<2x3xf32>", NV(0, -1, -2, 1, 0, -1), 0));
  CHECK(EQ(RUN(OP(GV_OP_DIV, 2, cd, 1), cd), "tensor<2x3xf32>", NV(1, 0.5, 1.0 / 3, 2, 1, 2.0 / 3), 1e-7));
  CHECK(EQ(RUN(OP(GV_OP_POW, 2, cd, 1), cd), "tensor<2x3xf32>", NV(1, 1, 1, 2, 4, 8), 0));
  CHECK(EQ(RUN(OP(GV_OP_MAX, 2, cd, 1), cd), "tensor<2x3xf32>", NV(1, 2, 3, 2, 2, 3), 0));
  CHECK(EQ(RUN(OP(GV_OP_MIN, 2, cd, 1), cd), "tensor<2x3xf32>", NV(1, 1, 1, 1, 2, 2), 0));
  CHECK(EQ(RUN(OP(GV_OP_LESS, 2, cd, 1), cd), "tensor<2x3xi1>", NV(0, 1, 1, 0, 0, 1), 0));
  CHECK(EQ(RUN(OP(GV_OP_GREATER_EQUAL, 2, cd, 1), cd), "tensor<2x3xi1>", NV(1, 0, 0, 1, 1, 0), 0));
  CHECK(EQ(RUN(OP(GV_OP_EQUAL, 2, cd, 1), cd), "tensor<2x3xi1>", NV(1, 0, 0, 0, 1, 0), 0));
  /* pow with an integer exponent operand (ONNX Pow T1) */
  gv_tensor *pe[] = {T(GV_DT_F32, 1, D(2), V(3, -2)), S(GV_DT_I64, 2)};
  CHECK(EQ(RUN(OP(GV_OP_POW, 2, pe, 1), pe), "tensor<2xf32>", NV(9, 4), 0));
  /* integers: division truncates toward zero; wrap instead of UB */
  gv_tensor *ia[] = {T(GV_DT_I64, 1, D(4), V(-7, 7, -7, 9)), T(GV_DT_I64, 1, D(4), V(2, -2, -2, 3))};
  CHECK(EQ(RUN(OP(GV_OP_DIV, 2, ia, 1), ia), "tensor<4xi64>", NV(-3, -3, 3, 3), 0));
  CHECK(EQ(RUN(OP(GV_OP_POW, 2, ia, 1), ia), "tensor<4xi64>", NV(49, 0, 0, 729), 0));
  gv_tensor *i32[] = {T(GV_DT_I32, 1, D(2), V(2147483647, 5)), S(GV_DT_I32, 1)};
  CHECK(EQ(RUN(OP(GV_OP_ADD, 2, i32, 1), i32), "tensor<2xi32>", NV(-2147483648.0, 6), 0));
  gv_tensor *u8[] = {T(GV_DT_U8, 1, D(2), V(250, 3)), T(GV_DT_U8, 1, D(2), V(10, 4))};
  CHECK(EQ(RUN(OP(GV_OP_MUL, 2, u8, 1), u8), "tensor<2xui8>", NV(196, 12), 0));
  gv_tensor *i8[] = {T(GV_DT_I8, 1, D(2), V(-100, 7)), T(GV_DT_I8, 1, D(2), V(-100, -3))};
  CHECK(EQ(RUN(OP(GV_OP_SUB, 2, i8, 1), i8), "tensor<2xi8>", NV(0, 10), 0));
  gv_tensor *bz[] = {T(GV_DT_I64, 1, D(2), V(1, 2)), T(GV_DT_I64, 1, D(2), V(1, 0))};
  fprintf(stderr, "(expected error follows)\n");
  CHECK(RUN(OP(GV_OP_DIV, 2, bz, 1), bz) == NULL);
  gv_tensor *bb[] = {T(GV_DT_BOOL, 1, D(4), V(0, 0, 1, 1)), T(GV_DT_BOOL, 1, D(4), V(0, 1, 0, 1))};
  CHECK(EQ(RUN(OP(GV_OP_AND, 2, bb, 1), bb), "tensor<4xi1>", NV(0, 0, 0, 1), 0));
  CHECK(EQ(RUN(OP(GV_OP_OR, 2, bb, 1), bb), "tensor<4xi1>", NV(0, 1, 1, 1), 0));
  /* broadcast mismatch is an inference error, before any evaluation */
  gv_tensor *mm[] = {a, T(GV_DT_F32, 1, D(2), NULL)};
  fprintf(stderr, "(expected error follows)\n");
  CHECK(gv_infer_op(M, OP(GV_OP_ADD, 2, mm, 1), NULL) == -1);
  /* where: three-way broadcast */
  gv_tensor *w[] = {T(GV_DT_BOOL, 2, D(2, 1), V(1, 0)), T(GV_DT_F32, 1, D(3), V(1, 2, 3)), S(GV_DT_F32, -1)};
  CHECK(EQ(RUN(OP(GV_OP_WHERE, 3, w, 1), w), "tensor<2x3xf32>", NV(1, 2, 3, -1, -1, -1), 0));
  return 0;
}

static int test_unary_cast(void) {
  gv_tensor *x[] = {T(GV_DT_F32, 1, D(4), V(-1.5, 0, 0.5, 2))};
  struct {
    gv_opcode c;
    double (*f)(double);
  } simple[] = {{GV_OP_ABS, fabs}, {GV_OP_EXP, exp}, {GV_OP_ERF, erf}, {GV_OP_TANH, tanh},
                {GV_OP_SIN, sin},  {GV_OP_COS, cos}, {GV_OP_FLOOR, floor}, {GV_OP_CEIL, ceil}};
  for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++) {
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = simple[k].f(gv_tensor_get_f(x[0], i));
    CHECK(EQ(RUN(OP(simple[k].c, 1, x, 1), x), "tensor<4xf32>", 4, want, 1e-6));
  }
  CHECK(EQ(RUN(OP(GV_OP_NEG, 1, x, 1), x), "tensor<4xf32>", NV(1.5, 0, -0.5, -2), 0));
  CHECK(EQ(RUN(OP(GV_OP_RELU, 1, x, 1), x), "tensor<4xf32>", NV(0, 0, 0.5, 2), 0));
  CHECK(EQ(RUN(OP(GV_OP_SIGMOID, 1, x, 1), x), "tensor<4xf32>",
           NV(1 / (1 + exp(1.5)), 0.5, 1 / (1 + exp(-0.5)), 1 / (1 + exp(-2))), 1e-6));
  CHECK(EQ(RUN(OP(GV_OP_SILU, 1, x, 1), x), "tensor<4xf32>",
           NV(-1.5 / (1 + exp(1.5)), 0, 0.5 / (1 + exp(-0.5)), 2 / (1 + exp(-2))), 1e-6));
  gv_tensor *p[] = {T(GV_DT_F32, 1, D(2), V(4, 0.25))};
  CHECK(EQ(RUN(OP(GV_OP_SQRT, 1, p, 1), p), "tensor<2xf32>", NV(2, 0.5), 0));
  CHECK(EQ(RUN(OP(GV_OP_RECIPROCAL, 1, p, 1), p), "tensor<2xf32>", NV(0.25, 4), 0));
  CHECK(EQ(RUN(OP(GV_OP_LOG, 1, p, 1), p), "tensor<2xf32>", NV(log(4), log(0.25)), 1e-6));
  gv_op *g = OP(GV_OP_GELU, 1, x, 1);
  gv_set_str(M, g, "approximate", "none");
  CHECK(EQ(RUN(g, x), "tensor<4xf32>", NV(-0.1002108, 0, 0.3457312, 1.9544997), 1e-5));
  gv_set_str(M, g, "approximate", "tanh");
  CHECK(EQ(RUN(g, x), "tensor<4xf32>", NV(-0.1004284, 0, 0.3457140, 1.9545977), 1e-5));
  gv_tensor *nb[] = {T(GV_DT_BOOL, 1, D(2), V(0, 1))};
  CHECK(EQ(RUN(OP(GV_OP_NOT, 1, nb, 1), nb), "tensor<2xi1>", NV(1, 0), 0));
  gv_tensor *ni[] = {T(GV_DT_I64, 1, D(2), V(-3, 4))};
  CHECK(EQ(RUN(OP(GV_OP_ABS, 1, ni, 1), ni), "tensor<2xi64>", NV(3, 4), 0));

  /* cast: truncation toward zero, saturation, NaN -> 0, nonzero -> true */
  gv_tensor *cf[] = {T(GV_DT_F32, 1, D(5), V(3.7, -3.7, 1e10, -1e10, NAN))};
  gv_op *c = OP(GV_OP_CAST, 1, cf, 1);
  gv_set_type(M, c, "to", GV_DT_I32);
  CHECK(EQ(RUN(c, cf), "tensor<5xi32>", NV(3, -3, 2147483647.0, -2147483648.0, 0), 0));
  gv_set_type(M, c, "to", GV_DT_U8);
  CHECK(EQ(RUN(c, cf), "tensor<5xui8>", NV(3, 0, 255, 0, 0), 0));
  gv_set_type(M, c, "to", GV_DT_I64);
  CHECK(EQ(RUN(c, cf), "tensor<5xi64>", NV(3, -3, 1e10, -1e10, 0), 0));
  gv_tensor *cb[] = {T(GV_DT_F32, 1, D(3), V(0, -0.0, 0.1))};
  gv_op *c1 = OP(GV_OP_CAST, 1, cb, 1);
  gv_set_type(M, c1, "to", GV_DT_BOOL);
  CHECK(EQ(RUN(c1, cb), "tensor<3xi1>", NV(0, 0, 1), 0));
  gv_tensor *ci[] = {T(GV_DT_I64, 1, D(2), V(-2, 70000))};
  gv_op *c2 = OP(GV_OP_CAST, 1, ci, 1);
  gv_set_type(M, c2, "to", GV_DT_F16);
  CHECK(EQ(RUN(c2, ci), "tensor<2xf16>", NV(-2, INFINITY), 0));
  return 0;
}

static int test_half(void) {
  /* f16 / bf16 compute in f32 and store converted */
  gv_tensor *h[] = {T(GV_DT_F16, 1, D(3), V(1.5, -2, 1000)), T(GV_DT_F16, 1, D(3), V(2.25, 0.5, 0.125))};
  CHECK(EQ(RUN(OP(GV_OP_ADD, 2, h, 1), h), "tensor<3xf16>", NV(3.75, -1.5, 1000), 0));
  CHECK(((uint16_t *)outs[0]->data)[0] == 0x4380); /* 3.75 in binary16 */
  gv_tensor *bf[] = {T(GV_DT_BF16, 1, D(2), V(3, -0.5)), T(GV_DT_BF16, 1, D(2), V(1.5, 4))};
  CHECK(EQ(RUN(OP(GV_OP_MUL, 2, bf, 1), bf), "tensor<2xbf16>", NV(4.5, -2), 0));
  CHECK(((uint16_t *)outs[0]->data)[0] == 0x4090); /* 4.5 in bfloat16 */
  gv_tensor *e[] = {T(GV_DT_F16, 1, D(2), V(0, 1))};
  CHECK(EQ(RUN(OP(GV_OP_EXP, 1, e, 1), e), "tensor<2xf16>", NV(1, 2.71875), 0));
  gv_tensor *sm[] = {T(GV_DT_BF16, 1, D(2), V(0, 0))};
  CHECK(EQ(RUN(OP(GV_OP_SOFTMAX, 1, sm, 1), sm), "tensor<2xbf16>", NV(0.5, 0.5), 0));
  gv_tensor *d[] = {T(GV_DT_F64, 1, D(2), V(1e-300, 2)), T(GV_DT_F64, 1, D(2), V(1e-300, 3))};
  CHECK(EQ(RUN(OP(GV_OP_MUL, 2, d, 1), d), "tensor<2xf64>", NV(0, 6), 0));
  return 0;
}

static int test_views(void) {
  gv_tensor *x = T(GV_DT_F32, 3, D(2, 3, 4), NULL);
  gv_tensor *rs[] = {x, I(2, D(0, -1))};
  CHECK(EQ(RUN(OP(GV_OP_RESHAPE, 2, rs, 1), rs), "tensor<2x12xf32>", 24,
           V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23), 0));
  gv_tensor *fx[] = {x};
  gv_op *f = OP(GV_OP_FLATTEN, 1, fx, 1);
  gv_set_int(M, f, "axis", -1);
  CHECK(RUN(f, fx) && outs[0]->type.dims[0] == 6 && outs[0]->type.dims[1] == 4 &&
        gv_tensor_get_f(outs[0], 23) == 23);
  gv_tensor *sq[] = {T(GV_DT_I64, 3, D(1, 2, 1), V(5, 6))};
  CHECK(EQ(RUN(OP(GV_OP_SQUEEZE, 1, sq, 1), sq), "tensor<2xi64>", NV(5, 6), 0));
  gv_op *u = OP(GV_OP_UNSQUEEZE, 1, sq, 1);
  gv_set_ints(M, u, "axes", 1, D(-1));
  CHECK(EQ(RUN(u, sq), "tensor<1x2x1x1xi64>", NV(5, 6), 0));
  /* transpose: default reverses, perm (1, 0, 2) */
  gv_tensor *t[] = {T(GV_DT_F32, 2, D(2, 3), NULL)};
  CHECK(EQ(RUN(OP(GV_OP_TRANSPOSE, 1, t, 1), t), "tensor<3x2xf32>", NV(0, 3, 1, 4, 2, 5), 0));
  gv_op *tp = OP(GV_OP_TRANSPOSE, 1, fx, 1);
  gv_set_ints(M, tp, "perm", 3, D(1, 0, 2));
  CHECK(RUN(tp, fx) && outs[0]->type.dims[0] == 3 && gv_tensor_get_f(outs[0], 4) == 12 &&
        gv_tensor_get_f(outs[0], 23) == 23);
  /* expand is bidirectional: [3,1] with shape [2,1,4] -> [2,3,4] */
  gv_tensor *ex[] = {T(GV_DT_F32, 2, D(3, 1), V(1, 2, 3)), I(3, D(2, 1, 4))};
  gv_tensor *e = RUN(OP(GV_OP_EXPAND, 2, ex, 1), ex);
  CHECK(e && e->type.rank == 3 && e->type.dims[0] == 2 && e->type.dims[1] == 3 && e->type.dims[2] == 4);
  CHECK(gv_tensor_get_f(e, 0) == 1 && gv_tensor_get_f(e, 5) == 2 && gv_tensor_get_f(e, 23) == 3);
  gv_tensor *tl[] = {T(GV_DT_I32, 2, D(1, 2), V(1, 2)), I(2, D(2, 2))};
  CHECK(EQ(RUN(OP(GV_OP_TILE, 2, tl, 1), tl), "tensor<2x4xi32>", NV(1, 2, 1, 2, 1, 2, 1, 2), 0));
  return 0;
}

static int test_slice(void) {
  gv_tensor *x = T(GV_DT_F32, 1, D(10), NULL);
  gv_tensor *in[] = {x, I(1, D(-1)), I(1, D(INT64_MIN)), I(1, D(0)), I(1, D(-3))};
  CHECK(EQ(RUN(OP(GV_OP_SLICE, 5, in, 1), in), "tensor<4xf32>", NV(9, 6, 3, 0), 0));
  gv_tensor *in2[] = {x, I(1, D(8)), I(1, D(2)), I(1, D(-1)), I(1, D(-2))};
  CHECK(EQ(RUN(OP(GV_OP_SLICE, 5, in2, 1), in2), "tensor<3xf32>", NV(8, 6, 4), 0));
  /* 2-D, negative axis, static attribute form */
  gv_tensor *m[] = {T(GV_DT_I64, 2, D(3, 4), NULL)};
  gv_op *s = OP(GV_OP_SLICE, 1, m, 1);
  gv_set_ints(M, s, "starts", 2, D(1, -1));
  gv_set_ints(M, s, "ends", 2, D(100, -5));
  gv_set_ints(M, s, "axes", 2, D(0, -1));
  gv_set_ints(M, s, "steps", 2, D(1, -2));
  CHECK(EQ(RUN(s, m), "tensor<2x2xi64>", NV(7, 5, 11, 9), 0));
  /* operand form without axes/steps */
  gv_tensor *in3[] = {m[0], I(2, D(0, 1)), I(2, D(1, 3))};
  CHECK(EQ(RUN(OP(GV_OP_SLICE, 3, in3, 1), in3), "tensor<1x2xi64>", NV(1, 2), 0));
  return 0;
}

static int test_concat_split_gather(void) {
  gv_tensor *in[] = {T(GV_DT_F32, 2, D(2, 1), V(1, 2)), T(GV_DT_F32, 2, D(2, 2), V(3, 4, 5, 6))};
  gv_op *c = OP(GV_OP_CONCAT, 2, in, 1);
  gv_set_int(M, c, "axis", -1);
  CHECK(EQ(RUN(c, in), "tensor<2x3xf32>", NV(1, 3, 4, 2, 5, 6), 0));
  gv_tensor *sx[] = {T(GV_DT_I64, 2, D(2, 3), NULL)};
  gv_op *sp = OP(GV_OP_SPLIT, 1, sx, 2);
  gv_set_int(M, sp, "axis", 1);
  gv_set_ints(M, sp, "sizes", 2, D(1, 2));
  CHECK(RUNN(sp, sx) == 0);
  CHECK(EQ(outs[0], "tensor<2x1xi64>", NV(0, 3), 0) && EQ(outs[1], "tensor<2x2xi64>", NV(1, 2, 4, 5), 0));
  gv_op *sp3 = OP(GV_OP_SPLIT, 1, sx, 3);
  gv_set_int(M, sp3, "axis", -1);
  CHECK(RUNN(sp3, sx) == 0 && EQ(outs[2], "tensor<2x1xi64>", NV(2, 5), 0));
  /* gather: negative index wraps; axis 1 */
  gv_tensor *g[] = {T(GV_DT_F32, 2, D(3, 2), V(1, 2, 3, 4, 5, 6)), T(GV_DT_I64, 2, D(2, 2), V(0, -1, 1, 0))};
  CHECK(EQ(RUN(OP(GV_OP_GATHER, 2, g, 1), g), "tensor<2x2x2xf32>", NV(1, 2, 5, 6, 3, 4, 1, 2), 0));
  gv_tensor *g1[] = {g[0], T(GV_DT_I32, 0, NULL, V(-1))};
  gv_op *ga = OP(GV_OP_GATHER, 2, g1, 1);
  gv_set_int(M, ga, "axis", 1);
  CHECK(EQ(RUN(ga, g1), "tensor<3xf32>", NV(2, 4, 6), 0));
  gv_tensor *gbad[] = {g[0], S(GV_DT_I64, 3)};
  gv_op *gb = OP(GV_OP_GATHER, 2, gbad, 1);
  CHECK(gv_infer_op(M, gb, NULL) == 0); /* index unknown to inference: caught by eval */
  fprintf(stderr, "(expected error follows)\n");
  CHECK(gv_eval_op(M, gb, (const gv_tensor *const *)gbad, outs) == -1);
  return 0;
}

static int test_generators(void) {
  gv_tensor *s[] = {I(2, D(2, 2))};
  gv_op *c = OP(GV_OP_CONSTANT_OF_SHAPE, 1, s, 1);
  gv_set_tensor(M, c, "value", S(GV_DT_I64, 7));
  CHECK(EQ(RUN(c, s), "tensor<2x2xi64>", NV(7, 7, 7, 7), 0));
  CHECK(EQ(RUN(OP(GV_OP_CONSTANT_OF_SHAPE, 1, s, 1), s), "tensor<2x2xf32>", NV(0, 0, 0, 0), 0));
  gv_tensor *r[] = {S(GV_DT_I64, 10), S(GV_DT_I64, 1), S(GV_DT_I64, -4)};
  CHECK(EQ(RUN(OP(GV_OP_RANGE, 3, r, 1), r), "tensor<3xi64>", NV(10, 6, 2), 0));
  gv_tensor *rf[] = {S(GV_DT_F32, 0), S(GV_DT_F32, 1), S(GV_DT_F32, 0.3)};
  CHECK(EQ(RUN(OP(GV_OP_RANGE, 3, rf, 1), rf), "tensor<4xf32>", NV(0, 0.3, 0.6, 0.9), 1e-6));
  gv_op *k = gv_constant_new(M, I(2, D(4, 5)));
  CHECK(EQ(RUN(k, NULL), "tensor<2xi64>", NV(4, 5), 0));
  gv_tensor *sh[] = {T(GV_DT_F32, 3, D(2, 3, 4), NULL)};
  gv_op *so = OP(GV_OP_SHAPE, 1, sh, 1);
  gv_set_int(M, so, "start", -2);
  CHECK(EQ(RUN(so, sh), "tensor<2xi64>", NV(3, 4), 0));
  return 0;
}

static int test_trilu_cumsum(void) {
  gv_tensor *x[] = {T(GV_DT_F32, 2, D(3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9))};
  gv_op *t = OP(GV_OP_TRILU, 1, x, 1);
  gv_set_int(M, t, "upper", 1);
  gv_set_int(M, t, "k", 1);
  CHECK(EQ(RUN(t, x), "tensor<3x3xf32>", NV(0, 2, 3, 0, 0, 6, 0, 0, 0), 0));
  gv_set_int(M, t, "upper", 0);
  gv_set_int(M, t, "k", -1);
  CHECK(EQ(RUN(t, x), "tensor<3x3xf32>", NV(0, 0, 0, 4, 0, 0, 7, 8, 0), 0));
  gv_set_int(M, t, "k", 0);
  CHECK(EQ(RUN(t, x), "tensor<3x3xf32>", NV(1, 0, 0, 4, 5, 0, 7, 8, 9), 0));
  gv_tensor *xk[] = {x[0], S(GV_DT_I64, -1)}; /* k from the operand, upper by default */
  CHECK(EQ(RUN(OP(GV_OP_TRILU, 2, xk, 1), xk), "tensor<3x3xf32>", NV(1, 2, 3, 4, 5, 6, 0, 8, 9), 0));

  gv_tensor *c[] = {T(GV_DT_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6))};
  gv_op *cs = OP(GV_OP_CUMSUM, 1, c, 1);
  gv_set_int(M, cs, "axis", -1);
  CHECK(EQ(RUN(cs, c), "tensor<2x3xf32>", NV(1, 3, 6, 4, 9, 15), 0));
  gv_set_int(M, cs, "exclusive", 1);
  CHECK(EQ(RUN(cs, c), "tensor<2x3xf32>", NV(0, 1, 3, 0, 4, 9), 0));
  gv_set_int(M, cs, "reverse", 1);
  CHECK(EQ(RUN(cs, c), "tensor<2x3xf32>", NV(5, 3, 0, 11, 6, 0), 0));
  gv_set_int(M, cs, "exclusive", 0);
  CHECK(EQ(RUN(cs, c), "tensor<2x3xf32>", NV(6, 5, 3, 15, 11, 6), 0));
  gv_tensor *ci[] = {T(GV_DT_I64, 2, D(2, 2), V(1, 2, 3, 4))};
  gv_op *c0 = OP(GV_OP_CUMSUM, 1, ci, 1);
  CHECK(EQ(RUN(c0, ci), "tensor<2x2xi64>", NV(1, 2, 4, 6), 0));
  return 0;
}

static int test_reduce_softmax_norm(void) {
  gv_tensor *x[] = {T(GV_DT_F32, 2, D(2, 3), V(1, 5, 3, -4, 2, 8))};
  gv_op *r = OP(GV_OP_REDUCE_SUM, 1, x, 1);
  gv_set_ints(M, r, "axes", 1, D(1));
  gv_set_int(M, r, "keepdims", 0);
  CHECK(EQ(RUN(r, x), "tensor<2xf32>", NV(9, 6), 0));
  gv_op *mn = OP(GV_OP_REDUCE_MEAN, 1, x, 1);
  CHECK(EQ(RUN(mn, x), "tensor<1x1xf32>", NV(2.5), 0));
  gv_op *mx = OP(GV_OP_REDUCE_MAX, 1, x, 1);
  gv_set_ints(M, mx, "axes", 1, D(-2));
  CHECK(EQ(RUN(mx, x), "tensor<1x3xf32>", NV(1, 5, 8), 0));
  gv_tensor *xi[] = {T(GV_DT_I32, 2, D(2, 3), V(1, 5, 3, -4, 2, 8))};
  gv_op *mi = OP(GV_OP_REDUCE_MIN, 1, xi, 1);
  gv_set_ints(M, mi, "axes", 1, D(1));
  CHECK(EQ(RUN(mi, xi), "tensor<2x1xi32>", NV(1, -4), 0));

  gv_tensor *s[] = {T(GV_DT_F32, 2, D(2, 2), V(0, 1, 2, 4))};
  double e1 = 1 / (1 + exp(1)), e2 = 1 / (1 + exp(2));
  CHECK(EQ(RUN(OP(GV_OP_SOFTMAX, 1, s, 1), s), "tensor<2x2xf32>", NV(e1, 1 - e1, e2, 1 - e2), 1e-6));
  gv_op *s0 = OP(GV_OP_SOFTMAX, 1, s, 1);
  gv_set_int(M, s0, "axis", 0);
  double f1 = 1 / (1 + exp(2)), f2 = 1 / (1 + exp(3));
  CHECK(EQ(RUN(s0, s), "tensor<2x2xf32>", NV(f1, f2, 1 - f1, 1 - f2), 1e-6));
  CHECK(EQ(RUN(OP(GV_OP_LOG_SOFTMAX, 1, s, 1), s), "tensor<2x2xf32>", NV(log(e1), log(1 - e1), log(e2), log(1 - e2)),
           1e-6));

  /* layer_norm over the last dim: x = (1, 3) -> mean 2, var 1 */
  gv_tensor *ln[] = {T(GV_DT_F32, 2, D(2, 2), V(1, 3, 10, 10)), T(GV_DT_F32, 1, D(2), V(2, 3)),
                     T(GV_DT_F32, 1, D(2), V(0.5, -1))};
  gv_op *l = OP(GV_OP_LAYER_NORM, 3, ln, 1);
  gv_set_float(M, l, "epsilon", 1e-12f); /* the constant row has variance 0 */
  CHECK(EQ(RUN(l, ln), "tensor<2x2xf32>", NV(-1.5, 2, 0.5, -1), 1e-6));
  /* over two dims (axis 0) with a scalar-like scale */
  gv_op *l0 = OP(GV_OP_LAYER_NORM, 2, ln, 1);
  gv_set_int(M, l0, "axis", 0);
  gv_set_float(M, l0, "epsilon", 0.0f);
  double mu = 6, sd = sqrt((25 + 9 + 16 + 16) / 4.0);
  CHECK(EQ(RUN(l0, ln), "tensor<2x2xf32>", NV(2 * (1 - mu) / sd, 3 * (3 - mu) / sd, 2 * (10 - mu) / sd, 3 * (10 - mu) / sd),
           1e-6));
  gv_tensor *rm[] = {T(GV_DT_F32, 1, D(2), V(3, 4)), T(GV_DT_F32, 1, D(2), V(1, 2))};
  gv_op *rn = OP(GV_OP_RMS_NORM, 2, rm, 1);
  gv_set_float(M, rn, "epsilon", 0.0f);
  double rms = sqrt(12.5);
  CHECK(EQ(RUN(rn, rm), "tensor<2xf32>", NV(3 / rms, 8 / rms), 1e-6));
  return 0;
}

static int test_dot(void) {
  gv_tensor *mm[] = {T(GV_DT_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)), T(GV_DT_F32, 2, D(3, 2), V(1, 0, 0, 1, 1, 1))};
  gv_op *d = OP(GV_OP_DOT, 2, mm, 1);
  gv_set_ints(M, d, "lhs_contract", 1, D(1));
  gv_set_ints(M, d, "rhs_contract", 1, D(0));
  CHECK(EQ(RUN(d, mm), "tensor<2x2xf32>", NV(4, 5, 10, 11), 0));
  /* batch dims, and lhs contracted on its first free position (transposed) */
  gv_tensor *bm[] = {T(GV_DT_F32, 3, D(2, 2, 2), V(1, 2, 3, 4, 5, 6, 7, 8)), T(GV_DT_F32, 3, D(2, 2, 1), V(1, 1, 2, -1))};
  gv_op *b = OP(GV_OP_DOT, 2, bm, 1);
  gv_set_ints(M, b, "lhs_batch", 1, D(0));
  gv_set_ints(M, b, "rhs_batch", 1, D(0));
  gv_set_ints(M, b, "lhs_contract", 1, D(1));
  gv_set_ints(M, b, "rhs_contract", 1, D(1));
  /* batch 0: lhs^T = [[1,3],[2,4]] . [1,1] = [4, 6]; batch 1: [[5,7],[6,8]] . [2,-1] = [3, 4] */
  CHECK(EQ(RUN(b, bm), "tensor<2x2x1xf32>", NV(4, 6, 3, 4), 0));
  gv_tensor *im[] = {T(GV_DT_I64, 2, D(1, 2), V(3, 4)), T(GV_DT_I64, 2, D(2, 1), V(5, 6))};
  gv_op *di = OP(GV_OP_DOT, 2, im, 1);
  gv_set_ints(M, di, "lhs_contract", 1, D(1));
  gv_set_ints(M, di, "rhs_contract", 1, D(0));
  CHECK(EQ(RUN(di, im), "tensor<1x1xi64>", NV(39), 0));
  gv_tensor *hm[] = {T(GV_DT_F16, 2, D(1, 2), V(0.5, 2)), T(GV_DT_F16, 2, D(2, 1), V(4, 0.25))};
  gv_op *dh = OP(GV_OP_DOT, 2, hm, 1);
  gv_set_ints(M, dh, "lhs_contract", 1, D(1));
  gv_set_ints(M, dh, "rhs_contract", 1, D(0));
  CHECK(EQ(RUN(dh, hm), "tensor<1x1xf16>", NV(2.5), 0));
  return 0;
}

static int test_conv(void) {
  /* 1x1x3x3 input 1..9, 2x2 kernel of ones, pads 1, strides 2 -> 2x2 */
  gv_tensor *in[] = {T(GV_DT_F32, 4, D(1, 1, 3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                     T(GV_DT_F32, 4, D(1, 1, 2, 2), V(1, 1, 1, 1)), T(GV_DT_F32, 1, D(1), V(100))};
  gv_op *c = OP(GV_OP_CONV, 3, in, 1);
  gv_set_ints(M, c, "pads", 4, D(1, 1, 1, 1));
  gv_set_ints(M, c, "strides", 2, D(2, 2));
  CHECK(EQ(RUN(c, in), "tensor<1x1x2x2xf32>", NV(101, 105, 111, 128), 0));
  /* group 2, 1-D, dilation 2: each output channel sees its own input channel */
  gv_tensor *g[] = {T(GV_DT_F32, 3, D(1, 2, 5), V(1, 2, 3, 4, 5, 10, 20, 30, 40, 50)),
                    T(GV_DT_F32, 3, D(2, 1, 2), V(1, -1, 1, 1))};
  gv_op *cg = OP(GV_OP_CONV, 2, g, 1);
  gv_set_int(M, cg, "group", 2);
  gv_set_ints(M, cg, "dilations", 1, D(2));
  CHECK(EQ(RUN(cg, g), "tensor<1x2x3xf32>", NV(-2, -2, -2, 40, 60, 80), 0));
  return 0;
}

static int test_none_and_speed(void) {
  gv_tensor *c[] = {S(GV_DT_BOOL, 1)};
  gv_op *i = OP(GV_OP_IF, 1, c, 0);
  fprintf(stderr, "(expected error follows)\n");
  CHECK(gv_eval_op(M, i, (const gv_tensor *const *)c, outs) == -1);
  /* The evaluator is a test oracle on small models: a [128x64]x[64x256]
   * matmul plus softmax must take milliseconds, not seconds. */
  gv_tensor *mm[] = {T(GV_DT_F32, 2, D(128, 64), NULL), T(GV_DT_F32, 2, D(64, 256), NULL)};
  gv_op *d = OP(GV_OP_DOT, 2, mm, 1);
  gv_set_ints(M, d, "lhs_contract", 1, D(1));
  gv_set_ints(M, d, "rhs_contract", 1, D(0));
  clock_t t0 = clock();
  for (int k = 0; k < 10; k++) CHECK(RUN(d, mm));
  gv_tensor *sm[] = {outs[0]};
  CHECK(RUN(OP(GV_OP_SOFTMAX, 1, sm, 1), sm));
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  CHECK(secs < 2.0);
  return 0;
}

int main(void) {
  M = gv_module_new("test_eval.onnx");
  B = gv_block_new(M);
  int fails = 0;
  fails += test_binary();
  fails += test_unary_cast();
  fails += test_half();
  fails += test_views();
  fails += test_slice();
  fails += test_concat_split_gather();
  fails += test_generators();
  fails += test_trilu_cumsum();
  fails += test_reduce_softmax_norm();
  fails += test_dot();
  fails += test_conv();
  fails += test_none_and_speed();
  gv_module_free(M);
  if (fails) fprintf(stderr, "%d test group(s) failed\n", fails);
  return fails ? 1 : 0;
}
