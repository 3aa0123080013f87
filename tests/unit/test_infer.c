/* test_infer.c — unit tests of the shape rules (ir/infer.c) and the
 * shape-infer pass: every op family's result type, the value-dependent rules
 * (reshape 0/-1/allowzero, expand, slice, tile, constant_of_shape, range),
 * unknown inputs giving unknown outputs, and real mismatches giving one error
 * line with "shape" (or "overflow"). Error text is captured from stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "passes/passes.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static gv_module *M;
static gv_block *B;

#define U GV_DIM_UNKNOWN
#define D(...) ((int64_t[]){__VA_ARGS__})

static gv_type ty(gv_dtype dt, int rank, const int64_t *dims) { return gv_type_make(dt, rank, dims); }

static gv_value *val(gv_type t) { return gv_block_add_arg(M, B, t); }

static gv_op *mk(gv_opcode c, int n, gv_value **v, int nres) { return gv_op_new(M, c, n, v, nres); }

static gv_tensor *ivec(int n, const int64_t *v) {
  int64_t d = n;
  gv_tensor *t = gv_tensor_new(M->arena, ty(GV_DT_I64, 1, &d));
  for (int i = 0; i < n; i++) ((int64_t *)t->data)[i] = v[i];
  return t;
}
static gv_tensor *iscal(gv_dtype dt, double v) {
  gv_tensor *t = gv_tensor_new(M->arena, ty(dt, 0, NULL));
  gv_tensor_set_f(t, 0, v);
  return t;
}

static bool has_type(const gv_op *op, int i, const char *want) {
  char buf[128];
  gv_type_str(&op->res[i]->type, buf, sizeof buf);
  if (strcmp(buf, want) != 0) {
    fprintf(stderr, "  got %s, want %s\n", buf, want);
    return false;
  }
  return true;
}

/* Runs infer with stderr captured into errbuf. */
static char errbuf[4096];
static int infer(gv_op *op, const gv_tensor *const *vals) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  int rc = gv_infer_op(M, op, vals);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(errbuf, 1, sizeof errbuf - 1, tmp);
  errbuf[n] = 0;
  fclose(tmp);
  return rc;
}
static bool err_has(const char *w) {
  if (!strstr(errbuf, w) || strchr(errbuf, '\n') != errbuf + strlen(errbuf) - 1) {
    fprintf(stderr, "  error text '%s' lacks '%s' or is not one line\n", errbuf, w);
    return false;
  }
  return true;
}

static int test_elementwise(void) {
  gv_value *a = val(ty(GV_DT_F32, 2, D(U, 3))), *b = val(ty(GV_DT_F32, 2, D(4, 1)));
  gv_op *op = mk(GV_OP_ADD, 2, (gv_value *[]){a, b}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<4x3xf32>"));
  gv_value *c = val(ty(GV_DT_F32, 1, D(5)));
  op = mk(GV_OP_MUL, 2, (gv_value *[]){a, c}, 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape") && err_has("cannot broadcast"));
  gv_value *un = val(gv_type_unranked(GV_DT_F32));
  op = mk(GV_OP_SUB, 2, (gv_value *[]){a, un}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<*xf32>"));
  op = mk(GV_OP_LESS, 2, (gv_value *[]){a, b}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<4x3xi1>"));
  gv_value *i = val(ty(GV_DT_I64, 0, NULL));
  op = mk(GV_OP_ADD, 2, (gv_value *[]){a, i}, 1);
  CHECK(infer(op, NULL) == -1); /* dtype mismatch */
  gv_value *cnd = val(ty(GV_DT_BOOL, 3, D(2, 1, 1)));
  op = mk(GV_OP_WHERE, 3, (gv_value *[]){cnd, a, b}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x4x3xf32>"));
  op = mk(GV_OP_CAST, 1, &a, 1);
  gv_set_type(M, op, "to", GV_DT_BF16);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x3xbf16>"));
  op = mk(GV_OP_GELU, 1, &a, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x3xf32>"));
  return 0;
}

static int test_shape_constant(void) {
  gv_value *x = val(ty(GV_DT_F32, 4, D(2, U, 5, 6)));
  gv_op *op = mk(GV_OP_SHAPE, 1, &x, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<4xi64>"));
  gv_set_int(M, op, "start", 1);
  gv_set_int(M, op, "end", -1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2xi64>"));
  gv_value *u = val(gv_type_unranked(GV_DT_F32));
  op = mk(GV_OP_SHAPE, 1, &u, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?xi64>"));
  op = gv_constant_new(M, ivec(3, D(1, 2, 3)));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<3xi64>"));
  return 0;
}

static int test_reshape(void) {
  gv_value *x = val(ty(GV_DT_F32, 3, D(2, 3, 4))), *s = val(ty(GV_DT_I64, 1, D(3)));
  gv_op *op = mk(GV_OP_RESHAPE, 2, (gv_value *[]){x, s}, 1);
  const gv_tensor *v[2] = {NULL, ivec(3, D(0, -1, 2))};
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<2x6x2xf32>"));
  v[1] = ivec(3, D(0, 5, -1));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  v[1] = ivec(2, D(-1, -1));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  v[1] = ivec(2, D(5, 5));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  /* allowzero: 0 is a real 0 dim; the input has 24 elements, so a mismatch. */
  gv_set_int(M, op, "allowzero", 1);
  v[1] = ivec(2, D(0, 4));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  gv_value *e = val(ty(GV_DT_F32, 2, D(0, 3)));
  gv_op *z = mk(GV_OP_RESHAPE, 2, (gv_value *[]){e, s}, 1);
  gv_set_int(M, z, "allowzero", 1);
  v[1] = ivec(2, D(3, 0));
  CHECK(infer(z, v) == 0 && has_type(z, 0, "tensor<3x0xf32>"));
  /* unknown value: the rank comes from the shape operand's length */
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x?x?xf32>"));
  /* input with unknown dims: -1 stays unknown, 0 copies the unknown dim */
  gv_value *xd = val(ty(GV_DT_F32, 2, D(U, 8)));
  gv_op *d = mk(GV_OP_RESHAPE, 2, (gv_value *[]){xd, s}, 1);
  v[1] = ivec(3, D(0, 2, -1));
  CHECK(infer(d, v) == 0 && has_type(d, 0, "tensor<?x2x?xf32>"));
  /* static form keeps the result type; it must be static and fit */
  gv_op *st = mk(GV_OP_RESHAPE, 1, &x, 1);
  st->res[0]->type = ty(GV_DT_F32, 2, D(6, 4));
  CHECK(infer(st, NULL) == 0 && has_type(st, 0, "tensor<6x4xf32>"));
  st->res[0]->type = ty(GV_DT_F32, 2, D(U, 4));
  CHECK(infer(st, NULL) == -1 && err_has("shape"));
  st->res[0]->type = ty(GV_DT_F32, 2, D(5, 4));
  CHECK(infer(st, NULL) == -1 && err_has("shape"));
  return 0;
}

static int test_expand_views(void) {
  gv_value *x = val(ty(GV_DT_F32, 2, D(3, 1))), *s = val(ty(GV_DT_I64, 1, D(3)));
  gv_op *op = mk(GV_OP_EXPAND, 2, (gv_value *[]){x, s}, 1);
  const gv_tensor *v[2] = {NULL, ivec(3, D(2, 1, 4))};
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<2x3x4xf32>")); /* bidirectional: 1 keeps 3 */
  v[1] = ivec(2, D(2, 4));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x3x?xf32>"));
  gv_op *st = mk(GV_OP_EXPAND, 1, &x, 1);
  st->res[0]->type = ty(GV_DT_F32, 2, D(3, 7));
  CHECK(infer(st, NULL) == 0 && has_type(st, 0, "tensor<3x7xf32>"));
  st->res[0]->type = ty(GV_DT_F32, 2, D(4, 7));
  CHECK(infer(st, NULL) == -1 && err_has("shape"));

  gv_value *y = val(ty(GV_DT_F32, 4, D(1, 3, 1, 5)));
  op = mk(GV_OP_SQUEEZE, 1, &y, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<3x5xf32>"));
  gv_set_ints(M, op, "axes", 1, D(-2));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<1x3x5xf32>"));
  gv_set_ints(M, op, "axes", 1, D(1));
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  op = mk(GV_OP_UNSQUEEZE, 1, &x, 1);
  gv_set_ints(M, op, "axes", 2, D(0, -1));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<1x3x1x1xf32>"));
  gv_value *big = val(ty(GV_DT_F32, 8, D(1, 1, 1, 1, 1, 1, 1, 1)));
  op = mk(GV_OP_UNSQUEEZE, 1, &big, 1);
  gv_set_ints(M, op, "axes", 1, D(0));
  CHECK(infer(op, NULL) == -1 && err_has("shape") && err_has("rank"));
  op = mk(GV_OP_FLATTEN, 1, &y, 1);
  gv_set_int(M, op, "axis", 2);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<3x5xf32>"));
  op = mk(GV_OP_TRANSPOSE, 1, &y, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<5x1x3x1xf32>"));
  gv_set_ints(M, op, "perm", 4, D(1, 3, 0, 2));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<3x5x1x1xf32>"));
  gv_set_ints(M, op, "perm", 4, D(1, 1, 0, 2));
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  return 0;
}

static int test_slice_tile(void) {
  gv_value *x = val(ty(GV_DT_F32, 3, D(10, 8, U))), *i1 = val(ty(GV_DT_I64, 1, D(1)));
  gv_op *op = mk(GV_OP_SLICE, 5, (gv_value *[]){x, i1, i1, i1, i1}, 1);
  const gv_tensor *v[5] = {NULL, ivec(1, D(-1)), ivec(1, D(INT64_MIN)), ivec(1, D(0)), ivec(1, D(-3))};
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<4x8x?xf32>")); /* 9,6,3,0 */
  v[1] = ivec(1, D(2)), v[2] = ivec(1, D(100)), v[3] = ivec(1, D(-2)), v[4] = ivec(1, D(3));
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<10x2x?xf32>")); /* 2,5 */
  v[4] = ivec(1, D(0));
  CHECK(infer(op, v) == -1 && err_has("shape"));
  v[4] = ivec(1, D(1)), v[1] = NULL; /* starts unknown: only axis 1 is affected */
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<10x?x?xf32>"));
  v[3] = NULL; /* axes unknown: every dim may change */
  v[1] = ivec(1, D(0));
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<?x?x?xf32>"));
  gv_op *st = mk(GV_OP_SLICE, 1, &x, 1);
  gv_set_ints(M, st, "starts", 2, D(1, -3));
  gv_set_ints(M, st, "ends", 2, D(-1, 1000));
  CHECK(infer(st, NULL) == 0 && has_type(st, 0, "tensor<8x3x?xf32>"));
  gv_set_ints(M, st, "axes", 2, D(0, 5));
  CHECK(infer(st, NULL) == -1 && err_has("shape"));

  gv_value *y = val(ty(GV_DT_I32, 2, D(2, U))), *r = val(ty(GV_DT_I64, 1, D(2)));
  op = mk(GV_OP_TILE, 2, (gv_value *[]){y, r}, 1);
  const gv_tensor *tv[2] = {NULL, ivec(2, D(3, 2))};
  CHECK(infer(op, tv) == 0 && has_type(op, 0, "tensor<6x?xi32>"));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x?xi32>"));
  tv[1] = ivec(3, D(1, 1, 1));
  CHECK(infer(op, tv) == -1 && err_has("shape"));
  gv_value *z = val(ty(GV_DT_F32, 2, D(1LL << 40, 1)));
  op = mk(GV_OP_TILE, 1, &z, 1);
  gv_set_ints(M, op, "repeats", 2, D(1, 1LL << 40));
  CHECK(infer(op, NULL) == -1 && err_has("overflow"));
  return 0;
}

static int test_concat_split_gather(void) {
  gv_value *a = val(ty(GV_DT_F32, 2, D(2, 3))), *b = val(ty(GV_DT_F32, 2, D(U, 5))), *c = val(ty(GV_DT_F32, 2, D(3, 5)));
  gv_op *op = mk(GV_OP_CONCAT, 2, (gv_value *[]){a, b}, 1);
  gv_set_int(M, op, "axis", -1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x8xf32>"));
  op = mk(GV_OP_CONCAT, 2, (gv_value *[]){a, c}, 1);
  gv_set_int(M, op, "axis", 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  gv_set_int(M, op, "axis", 0);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  op = mk(GV_OP_CONCAT, 2, (gv_value *[]){a, a}, 1);
  gv_set_int(M, op, "axis", 0);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<4x3xf32>"));

  gv_value *x = val(ty(GV_DT_F32, 2, D(4, 10)));
  op = mk(GV_OP_SPLIT, 1, &x, 2);
  gv_set_int(M, op, "axis", 1);
  gv_set_ints(M, op, "sizes", 2, D(3, 7));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<4x3xf32>") && has_type(op, 1, "tensor<4x7xf32>"));
  gv_set_ints(M, op, "sizes", 2, D(3, 6));
  CHECK(infer(op, NULL) == -1 && err_has("shape"));

  gv_value *data = val(ty(GV_DT_F32, 3, D(5, 6, 7))), *idx = val(ty(GV_DT_I64, 2, D(2, 3)));
  op = mk(GV_OP_GATHER, 2, (gv_value *[]){data, idx}, 1);
  gv_set_int(M, op, "axis", -2);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<5x2x3x7xf32>"));
  gv_set_int(M, op, "axis", 3);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  gv_value *sc = val(ty(GV_DT_I64, 0, NULL));
  op = mk(GV_OP_GATHER, 2, (gv_value *[]){data, sc}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<6x7xf32>"));
  const gv_tensor *gv[2] = {NULL, iscal(GV_DT_I64, -6)};
  CHECK(infer(op, gv) == -1 && err_has("shape"));
  return 0;
}

static int test_generators(void) {
  gv_value *s = val(ty(GV_DT_I64, 1, D(2)));
  gv_op *op = mk(GV_OP_CONSTANT_OF_SHAPE, 1, &s, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?x?xf32>"));
  gv_set_tensor(M, op, "value", iscal(GV_DT_I64, 7));
  const gv_tensor *v[1] = {ivec(2, D(3, 4))};
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<3x4xi64>"));
  v[0] = ivec(2, D(3, -4));
  CHECK(infer(op, v) == -1 && err_has("shape"));

  gv_value *i = val(ty(GV_DT_I64, 0, NULL)), *f = val(ty(GV_DT_F32, 0, NULL));
  op = mk(GV_OP_RANGE, 3, (gv_value *[]){i, i, i}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<?xi64>"));
  const gv_tensor *r[3] = {iscal(GV_DT_I64, 0), iscal(GV_DT_I64, 10), iscal(GV_DT_I64, 3)};
  CHECK(infer(op, r) == 0 && has_type(op, 0, "tensor<4xi64>"));
  r[0] = iscal(GV_DT_I64, 5), r[1] = iscal(GV_DT_I64, 1), r[2] = iscal(GV_DT_I64, 1);
  CHECK(infer(op, r) == 0 && has_type(op, 0, "tensor<0xi64>"));
  r[2] = iscal(GV_DT_I64, -2);
  CHECK(infer(op, r) == 0 && has_type(op, 0, "tensor<2xi64>"));
  r[2] = iscal(GV_DT_I64, 0);
  CHECK(infer(op, r) == -1 && err_has("shape"));
  op = mk(GV_OP_RANGE, 3, (gv_value *[]){f, f, f}, 1);
  const gv_tensor *rf[3] = {iscal(GV_DT_F32, 0), iscal(GV_DT_F32, 1), iscal(GV_DT_F32, 0.25)};
  CHECK(infer(op, rf) == 0 && has_type(op, 0, "tensor<4xf32>"));

  gv_value *v1 = val(ty(GV_DT_F32, 1, D(4)));
  op = mk(GV_OP_TRILU, 1, &v1, 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  return 0;
}

static int test_reduce_norm(void) {
  gv_value *x = val(ty(GV_DT_F32, 3, D(2, 3, 4)));
  gv_op *op = mk(GV_OP_REDUCE_SUM, 1, &x, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<1x1x1xf32>"));
  gv_set_ints(M, op, "axes", 2, D(0, -1));
  gv_set_int(M, op, "keepdims", 0);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<3xf32>"));
  gv_set_ints(M, op, "axes", 1, D(3));
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  op = mk(GV_OP_SOFTMAX, 1, &x, 1);
  gv_set_int(M, op, "axis", -3);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x3x4xf32>"));
  gv_value *sc = val(ty(GV_DT_F32, 1, D(4))), *bad = val(ty(GV_DT_F32, 1, D(3)));
  op = mk(GV_OP_LAYER_NORM, 3, (gv_value *[]){x, sc, sc}, 1);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x3x4xf32>"));
  op = mk(GV_OP_RMS_NORM, 2, (gv_value *[]){x, bad}, 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  return 0;
}

static int test_dot_conv(void) {
  gv_value *l = val(ty(GV_DT_F32, 4, D(2, 5, 3, 4))), *r = val(ty(GV_DT_F32, 3, D(2, 4, 7)));
  gv_op *op = mk(GV_OP_DOT, 2, (gv_value *[]){l, r}, 1);
  gv_set_ints(M, op, "lhs_batch", 1, D(0));
  gv_set_ints(M, op, "rhs_batch", 1, D(0));
  gv_set_ints(M, op, "lhs_contract", 1, D(3));
  gv_set_ints(M, op, "rhs_contract", 1, D(1));
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x5x3x7xf32>"));
  gv_set_ints(M, op, "rhs_contract", 1, D(2));
  CHECK(infer(op, NULL) == -1 && err_has("shape") && err_has("contracting"));

  gv_value *x = val(ty(GV_DT_F32, 4, D(1, 4, 224, 224))), *w = val(ty(GV_DT_F32, 4, D(64, 2, 7, 7)));
  op = mk(GV_OP_CONV, 2, (gv_value *[]){x, w}, 1);
  gv_set_ints(M, op, "strides", 2, D(2, 2));
  gv_set_ints(M, op, "pads", 4, D(3, 3, 3, 3));
  gv_set_int(M, op, "group", 2);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<1x64x112x112xf32>"));
  gv_set_int(M, op, "group", 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  gv_value *tiny = val(ty(GV_DT_F32, 3, D(1, 2, 3))), *wk = val(ty(GV_DT_F32, 3, D(1, 2, 5)));
  op = mk(GV_OP_CONV, 2, (gv_value *[]){tiny, wk}, 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape"));
  return 0;
}

static int test_if(void) {
  gv_value *c = val(ty(GV_DT_BOOL, 0, NULL));
  gv_value *a = val(ty(GV_DT_F32, 2, D(2, 3))), *b = val(ty(GV_DT_F32, 2, D(2, 4)));
  gv_op *op = mk(GV_OP_IF, 1, &c, 1);
  gv_block *t = gv_block_new(M), *e = gv_block_new(M);
  gv_block_append(t, mk(GV_OP_YIELD, 1, &a, 0));
  gv_block_append(e, mk(GV_OP_YIELD, 1, &b, 0));
  gv_op_add_region(M, op, t);
  gv_op_add_region(M, op, e);
  CHECK(infer(op, NULL) == 0 && has_type(op, 0, "tensor<2x?xf32>"));
  const gv_tensor *v[1] = {iscal(GV_DT_BOOL, 0)};
  CHECK(infer(op, v) == 0 && has_type(op, 0, "tensor<2x4xf32>"));
  return 0;
}

static int test_overflow_rank(void) {
  gv_value *a = val(ty(GV_DT_F32, 2, D(1LL << 40, 1))), *b = val(ty(GV_DT_F32, 2, D(1, 1LL << 40)));
  gv_op *op = mk(GV_OP_ADD, 2, (gv_value *[]){a, b}, 1);
  CHECK(infer(op, NULL) == -1 && err_has("overflow"));
  gv_value *x = val(ty(GV_DT_F32, 5, D(1, 2, 3, 4, 5))), *i = val(ty(GV_DT_I64, 5, D(1, 1, 1, 1, 1)));
  op = mk(GV_OP_GATHER, 2, (gv_value *[]){x, i}, 1);
  CHECK(infer(op, NULL) == -1 && err_has("shape") && err_has("rank"));
  return 0;
}

/* The pass: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)), [-1])) gets a
 * static result type without the IR being rewritten. */
static int test_pass_chain(void) {
  gv_module *m = gv_module_new("chain");
  m->main = gv_func_new(m, "main");
  gv_value *x = gv_func_add_arg(m, m->main, "x", ty(GV_DT_F32, 3, D(2, 3, 4)), false);
  gv_block *b = m->main->body;
  gv_op *sh = gv_op_new(m, GV_OP_SHAPE, 1, &x, 1);
  gv_block_append(b, sh);
  gv_tensor *one = gv_tensor_new(m->arena, ty(GV_DT_I64, 0, NULL));
  ((int64_t *)one->data)[0] = 1;
  gv_op *c1 = gv_constant_new(m, one);
  gv_block_append(b, c1);
  gv_op *g = gv_op_new(m, GV_OP_GATHER, 2, (gv_value *[]){sh->res[0], c1->res[0]}, 1);
  gv_block_append(b, g);
  gv_op *u = gv_op_new(m, GV_OP_UNSQUEEZE, 1, &g->res[0], 1);
  gv_set_ints(m, u, "axes", 1, D(0));
  gv_block_append(b, u);
  int64_t one_d = 1;
  gv_tensor *m1 = gv_tensor_new(m->arena, ty(GV_DT_I64, 1, &one_d));
  ((int64_t *)m1->data)[0] = -1;
  gv_op *c2 = gv_constant_new(m, m1);
  gv_block_append(b, c2);
  gv_op *cat = gv_op_new(m, GV_OP_CONCAT, 2, (gv_value *[]){u->res[0], c2->res[0]}, 1);
  gv_set_int(m, cat, "axis", 0);
  gv_block_append(b, cat);
  gv_op *rs = gv_op_new(m, GV_OP_RESHAPE, 2, (gv_value *[]){x, cat->res[0]}, 1);
  gv_block_append(b, rs);
  gv_op *ret = gv_op_new(m, GV_OP_RETURN, 1, &rs->res[0], 0);
  gv_block_append(b, ret);
  int nops = 0;
  for (gv_op *o = b->first; o; o = o->next) nops++;
  CHECK(gv_pass_shape_infer(m) == 0);
  char buf[64];
  gv_type_str(&rs->res[0]->type, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor<3x8xf32>") == 0);
  gv_type_str(&cat->res[0]->type, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor<2xi64>") == 0);
  int nops2 = 0;
  for (gv_op *o = b->first; o; o = o->next) nops2++;
  CHECK(nops == nops2 && rs->opnds[1] == cat->res[0]); /* IR untouched */
  gv_module_free(m);
  return 0;
}

int main(void) {
  M = gv_module_new("test_infer.onnx");
  B = gv_block_new(M);
  int fails = 0;
  fails += test_elementwise();
  fails += test_shape_constant();
  fails += test_reshape();
  fails += test_expand_views();
  fails += test_slice_tile();
  fails += test_concat_split_gather();
  fails += test_generators();
  fails += test_reduce_norm();
  fails += test_dot_conv();
  fails += test_if();
  fails += test_overflow_rank();
  fails += test_pass_chain();
  gv_module_free(M);
  if (fails) fprintf(stderr, "%d test group(s) failed\n", fails);
  return fails ? 1 : 0;
}
