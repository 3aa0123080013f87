/* test_cpu_kernels.c — the CPU runtime's kernels (runtime/kernels.c) against
 * the reference evaluator (gv_eval_op) on seeded random data, one case
 * group per kernel family: dot (plain, transposed operands through the
 * contracting dims, batched, packed fallback), conv, softmax / log-softmax,
 * layer / RMS norm, reductions, gather, transpose, cumsum, trilu, tile, topk, the
 * TensorProto (.pb) reader, the f16/bf16 conversions of generated loops
 * (bit-exact with ir/ir.c's) and the 16-bit storage path of the compute
 * kernels (test_storage16). Tolerance: rtol 1e-5 + atol 1e-5 (sgemm
 * accumulates in float, the evaluator in double). It must never pass a case
 * it did not compare. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"
#include "ir/ir.h"

static int failures;
static unsigned rng = 12345;
static float frand(void) {
  rng = rng * 1103515245u + 12345u;
  return ((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

typedef struct {
  gv_module *m;
  gv_func *f;
  gv_tensor *in[4];
  gv_value *v[4];
  int n;
} tcase;

static void tc_init(tcase *c) {
  memset(c, 0, sizeof *c);
  c->m = gv_module_new("test");
  c->f = gv_func_new(c->m, "main");
}

/* Adds a random operand of the given type. */
static gv_tensor *tc_arg(tcase *c, gv_dtype dt, int rank, const int64_t *dims) {
  gv_type t = gv_type_make(dt, rank, dims);
  c->v[c->n] = gv_func_add_arg(c->m, c->f, "x", t, false);
  gv_tensor *x = gv_tensor_new(c->m->arena, t);
  for (int64_t i = 0; i < gv_tensor_numel(x); i++) gv_tensor_set_f(x, i, frand());
  c->in[c->n++] = x;
  return x;
}

static gv_op *tc_op(tcase *c, gv_opcode code) { return gv_op_new(c->m, code, c->n, c->v, 1); }

static gv_tensor *tc_eval(tcase *c, gv_op *op) {
  gv_tensor *out[4] = {0};
  if (gv_infer_op(c->m, op, NULL) || gv_eval_op(c->m, op, (const gv_tensor *const *)c->in, out)) {
    failures++;
    return NULL;
  }
  return out[0];
}

static void close_enough(const char *what, const float *got, const gv_tensor *want) {
  if (!want) return;
  int64_t n = gv_tensor_numel(want);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double w = gv_tensor_get_f(want, i), e = fabs(got[i] - w) - (1e-5 + 1e-5 * fabs(w));
    if (e > worst || e != e) worst = e != e ? INFINITY : e;
  }
  if (worst > 0) {
    fprintf(stderr, "%s: mismatch beyond tolerance by %g\n", what, worst);
    failures++;
  }
}

static void strides(int rank, const int64_t *d, int64_t *s) {
  int64_t k = 1;
  for (int i = rank - 1; i >= 0; i--) s[i] = k, k *= d[i];
}

/* dot with dimension numbers; the descriptor is built as codegen does. */
static void dot_case(const char *what, int lr, const int64_t *ld, int rr, const int64_t *rd, int nb, const int64_t *lb,
                     const int64_t *rb, int nc, const int64_t *lc, const int64_t *rc) {
  tcase c;
  tc_init(&c);
  tc_arg(&c, GV_DT_F32, lr, ld);
  tc_arg(&c, GV_DT_F32, rr, rd);
  gv_op *op = tc_op(&c, GV_OP_DOT);
  gv_set_ints(c.m, op, "lhs_batch", nb, lb);
  gv_set_ints(c.m, op, "rhs_batch", nb, rb);
  gv_set_ints(c.m, op, "lhs_contract", nc, lc);
  gv_set_ints(c.m, op, "rhs_contract", nc, rc);
  gv_tensor *want = tc_eval(&c, op);
  galv_dot_desc d = {0};
  int64_t ls[8], rs[8];
  strides(lr, ld, ls);
  strides(rr, rd, rs);
  bool lu[8] = {0}, ru[8] = {0};
  d.nb = nb, d.nk = nc;
  for (int i = 0; i < nb; i++) d.bdims[i] = ld[lb[i]], d.bsa[i] = ls[lb[i]], d.bsb[i] = rs[rb[i]], lu[lb[i]] = ru[rb[i]] = 1;
  for (int i = 0; i < nc; i++) d.kdims[i] = ld[lc[i]], d.ksa[i] = ls[lc[i]], d.ksb[i] = rs[rc[i]], lu[lc[i]] = ru[rc[i]] = 1;
  for (int i = 0; i < lr; i++)
    if (!lu[i]) d.mdims[d.nm] = ld[i], d.msa[d.nm++] = ls[i];
  for (int i = 0; i < rr; i++)
    if (!ru[i]) d.ndims[d.nn] = rd[i], d.nsb[d.nn++] = rs[i];
  if (!want) return;
  float *got = calloc((size_t)gv_tensor_numel(want), sizeof(float));
  galv_dot_f32(&d, c.in[0]->data, c.in[1]->data, got);
  close_enough(what, got, want);
  free(got);
  gv_module_free(c.m);
}

static void test_dot(void) {
  /* [M,K] x [K,N] */
  dot_case("dot plain", 2, (int64_t[]){5, 7}, 2, (int64_t[]){7, 3}, 0, NULL, NULL, 1, (int64_t[]){1}, (int64_t[]){0});
  /* rhs transposed: [M,K] x [N,K] (Gemm transB) */
  dot_case("dot transB", 2, (int64_t[]){5, 7}, 2, (int64_t[]){3, 7}, 0, NULL, NULL, 1, (int64_t[]){1}, (int64_t[]){1});
  /* lhs transposed: [K,M] x [K,N] */
  dot_case("dot transA", 2, (int64_t[]){7, 5}, 2, (int64_t[]){7, 3}, 0, NULL, NULL, 1, (int64_t[]){0}, (int64_t[]){0});
  /* batched attention scores [B,H,T,D] x [B,H,T,D]^T */
  dot_case("dot batched", 4, (int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){2, 3, 6, 5}, 2, (int64_t[]){0, 1},
           (int64_t[]){0, 1}, 1, (int64_t[]){3}, (int64_t[]){3});
  /* 3-D lhs free dims merged: [B,T,K] x [K,N] */
  dot_case("dot 3d x 2d", 3, (int64_t[]){2, 4, 6}, 2, (int64_t[]){6, 3}, 0, NULL, NULL, 1, (int64_t[]){2},
           (int64_t[]){0});
  /* batch dim in the middle and two contracting dims: packed fallback */
  dot_case("dot packed", 3, (int64_t[]){3, 2, 4}, 3, (int64_t[]){4, 2, 3}, 1, (int64_t[]){1}, (int64_t[]){1}, 2,
           (int64_t[]){0, 2}, (int64_t[]){2, 0});
  /* vector x matrix */
  dot_case("dot vec", 1, (int64_t[]){6}, 2, (int64_t[]){6, 4}, 0, NULL, NULL, 1, (int64_t[]){0}, (int64_t[]){0});
}

static void test_conv(void) {
  tcase c;
  tc_init(&c);
  tc_arg(&c, GV_DT_F32, 4, (int64_t[]){2, 4, 7, 6});
  tc_arg(&c, GV_DT_F32, 4, (int64_t[]){6, 2, 3, 2});
  tc_arg(&c, GV_DT_F32, 1, (int64_t[]){6});
  gv_op *op = tc_op(&c, GV_OP_CONV);
  gv_set_ints(c.m, op, "strides", 2, (int64_t[]){2, 1});
  gv_set_ints(c.m, op, "pads", 4, (int64_t[]){1, 0, 1, 1});
  gv_set_ints(c.m, op, "dilations", 2, (int64_t[]){1, 2});
  gv_set_int(c.m, op, "group", 2);
  gv_tensor *want = tc_eval(&c, op);
  if (want) {
    const gv_type *o = &want->type;
    galv_conv_desc d = {2, 2, 4, 6, 2, {7, 6}, {3, 2}, {o->dims[2], o->dims[3]}, {2, 1}, {1, 0}, {1, 2}};
    float *got = calloc((size_t)gv_tensor_numel(want), sizeof(float));
    galv_conv_f32(&d, c.in[0]->data, c.in[1]->data, c.in[2]->data, got);
    close_enough("conv", got, want);
    free(got);
  }
  gv_module_free(c.m);
}

static void test_softmax_norm_reduce(void) {
  for (int lg = 0; lg < 2; lg++)
    for (int ax = 1; ax < 3; ax++) {
      tcase c;
      tc_init(&c);
      tc_arg(&c, GV_DT_F32, 3, (int64_t[]){3, 5, 4});
      gv_op *op = tc_op(&c, lg ? GV_OP_LOG_SOFTMAX : GV_OP_SOFTMAX);
      gv_set_int(c.m, op, "axis", ax);
      gv_tensor *want = tc_eval(&c, op);
      float got[60];
      int64_t d[3] = {3, 5, 4}, outer = 1, inner = 1;
      for (int i = 0; i < ax; i++) outer *= d[i];
      for (int i = ax + 1; i < 3; i++) inner *= d[i];
      galv_softmax_f32(got, c.in[0]->data, outer, d[ax], inner, lg);
      close_enough(lg ? "log_softmax" : "softmax", got, want);
      gv_module_free(c.m);
    }
  for (int rms = 0; rms < 2; rms++) {
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 3, (int64_t[]){2, 3, 8});
    tc_arg(&c, GV_DT_F32, 1, (int64_t[]){8});
    if (!rms) tc_arg(&c, GV_DT_F32, 1, (int64_t[]){8});
    gv_op *op = tc_op(&c, rms ? GV_OP_RMS_NORM : GV_OP_LAYER_NORM);
    gv_set_float(c.m, op, "epsilon", 1e-5f);
    gv_tensor *want = tc_eval(&c, op);
    float got[48];
    galv_norm_f32(got, c.in[0]->data, c.in[1]->data, 8, rms ? NULL : c.in[2]->data, rms ? 0 : 8, 6, 8, 1e-5f, rms);
    close_enough(rms ? "rms_norm" : "layer_norm", got, want);
    gv_module_free(c.m);
  }
  for (int kind = 0; kind < 4; kind++) {
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 3, (int64_t[]){3, 4, 5});
    gv_op *op = tc_op(&c, (gv_opcode)(GV_OP_REDUCE_SUM + kind));
    gv_set_ints(c.m, op, "axes", 2, (int64_t[]){0, 2});
    gv_set_int(c.m, op, "keepdims", 0);
    gv_tensor *want = tc_eval(&c, op);
    float got[4];
    galv_reduce_f32(got, c.in[0]->data, 3, (int64_t[]){3, 4, 5}, (int64_t[]){0, 1, 0}, 4, kind);
    close_enough("reduce", got, want);
    gv_module_free(c.m);
  }
}

static void test_movement(void) {
  { /* gather rows of a table with negative indices */
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 2, (int64_t[]){5, 3});
    gv_tensor *idx = tc_arg(&c, GV_DT_I64, 2, (int64_t[]){2, 2});
    int64_t iv[] = {0, 4, -1, 2};
    memcpy(idx->data, iv, sizeof iv);
    gv_op *op = tc_op(&c, GV_OP_GATHER);
    gv_set_int(c.m, op, "axis", 0);
    gv_tensor *want = tc_eval(&c, op);
    float got[12];
    galv_gather(got, c.in[0]->data, idx->data, 8, 4, 1, 5, 3 * 4, "test");
    close_enough("gather", got, want);
    gv_module_free(c.m);
  }
  { /* transpose [2,3,4] perm 2,0,1 */
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 3, (int64_t[]){2, 3, 4});
    gv_op *op = tc_op(&c, GV_OP_TRANSPOSE);
    gv_set_ints(c.m, op, "perm", 3, (int64_t[]){2, 0, 1});
    gv_tensor *want = tc_eval(&c, op);
    float got[24];
    galv_copy_strided(got, c.in[0]->data, 4, 3, (int64_t[]){4, 2, 3}, (int64_t[]){1, 12, 4});
    close_enough("transpose", got, want);
    gv_module_free(c.m);
  }
  { /* cumsum exclusive reverse along axis 1 */
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 2, (int64_t[]){3, 4});
    gv_op *op = tc_op(&c, GV_OP_CUMSUM);
    gv_set_int(c.m, op, "axis", 1);
    gv_set_int(c.m, op, "exclusive", 1);
    gv_set_int(c.m, op, "reverse", 1);
    gv_tensor *want = tc_eval(&c, op);
    float got[12];
    galv_cumsum(got, c.in[0]->data, GALV_F32, 3, 4, 1, 1, 1);
    close_enough("cumsum", got, want);
    gv_module_free(c.m);
  }
  { /* trilu lower k=1 */
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 3, (int64_t[]){2, 3, 4});
    gv_op *op = tc_op(&c, GV_OP_TRILU);
    gv_set_int(c.m, op, "upper", 0);
    gv_set_int(c.m, op, "k", 1);
    gv_tensor *want = tc_eval(&c, op);
    float got[24];
    galv_trilu(got, c.in[0]->data, 4, 2, 3, 4, 1, 0);
    close_enough("trilu", got, want);
    gv_module_free(c.m);
  }
  { /* tile [2,3] by 2x2 */
    tcase c;
    tc_init(&c);
    tc_arg(&c, GV_DT_F32, 2, (int64_t[]){2, 3});
    gv_op *op = tc_op(&c, GV_OP_TILE);
    gv_set_ints(c.m, op, "repeats", 2, (int64_t[]){2, 2});
    gv_tensor *want = tc_eval(&c, op);
    float got[24];
    galv_tile(got, c.in[0]->data, 4, 2, (int64_t[]){2, 3}, (int64_t[]){4, 6});
    close_enough("tile", got, want);
    gv_module_free(c.m);
  }
}

static void test_pb(void) {
  /* TensorProto{dims: [2, 3], data_type: INT64 (7), name: "ids", int64_data: packed 1..6} */
  const uint8_t pb[] = {0x0a, 0x02, 0x02, 0x03, 0x10, 0x07, 0x3a, 0x06, 1, 2, 3, 4, 5, 6, 0x42, 0x03, 'i', 'd', 's'};
  galv_tensor t;
  char *name = NULL, err[200];
  CHECK(galv_read_pb(pb, sizeof pb, &t, &name, err, sizeof err) == 0);
  CHECK(t.dtype == GALV_I64 && t.rank == 2 && t.dims[0] == 2 && t.dims[1] == 3);
  CHECK(name && strcmp(name, "ids") == 0);
  CHECK(t.data && ((int64_t *)t.data)[5] == 6);
  free(t.data);
  free(name);
  /* float raw_data with the wrong byte count, and a truncated buffer */
  const uint8_t bad[] = {0x08, 0x02, 0x10, 0x01, 0x4a, 0x04, 0, 0, 0x80, 0x3f};
  CHECK(galv_read_pb(bad, sizeof bad, &t, &name, err, sizeof err) == -1 && strstr(err, "raw_data"));
  CHECK(galv_read_pb(pb, 7, &t, &name, err, sizeof err) == -1);
  /* an empty raw_data field (dims [0]): no bytes, no arithmetic on a NULL
   * buffer (UBSan; found by tests/fuzz/fuzz_npy.c) */
  const uint8_t empty[] = {0x08, 0x00, 0x10, 0x01, 0x4a, 0x00};
  int rc = galv_read_pb(empty, sizeof empty, &t, &name, err, sizeof err);
  CHECK(rc == 0 ? t.rank == 1 && t.dims[0] == 0 && t.nbytes == 0 : strstr(err, "raw_data") != NULL);
  if (rc == 0) free(t.data), free(name);
  /* dims of 2^40 x int64 and no data: refused before any allocation (it
   * asked malloc for 8 TiB; found by tests/fuzz/fuzz_npy.c) */
  const uint8_t huge[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x10, 0x07};
  CHECK(galv_read_pb(huge, sizeof huge, &t, &name, err, sizeof err) == -1 && strstr(err, "int64_data holds 0 values"));
}

/* The generated loops' f16/bf16 conversions (galv_rt.h) against ir/ir.c's:
 * every 16-bit pattern widened, and floats narrowed: every f16/bf16 value,
 * the midpoints between neighbours (ties), one float either side of them,
 * the subnormal range, overflow, inf, NaN, and a sweep of bit patterns. */
static int half_mismatch(float f) {
  return galv_f32_to_f16(f) != gv_f32_to_f16(f) || galv_f32_to_bf16(f) != gv_f32_to_bf16(f);
}
static void test_half(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = galv_f16_to_f32((uint16_t)h), b = gv_f16_to_f32((uint16_t)h);
    float c = galv_bf16_to_f32((uint16_t)h), d = gv_bf16_to_f32((uint16_t)h);
    bad += memcmp(&a, &b, 4) != 0 || memcmp(&c, &d, 4) != 0;
    float n = galv_f16_to_f32((uint16_t)(h + 1)), mid = (a + n) * 0.5f;
    if (a == a && n == n && !isinf(a) && !isinf(n)) {
      bad += half_mismatch(mid) + half_mismatch(nextafterf(mid, -INFINITY)) + half_mismatch(nextafterf(mid, INFINITY));
    }
    bad += half_mismatch(a) + half_mismatch(c);
    uint32_t mb = ((uint32_t)h << 16) | 0x8000u; /* bf16 tie */
    float m;
    memcpy(&m, &mb, 4);
    bad += half_mismatch(m);
  }
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
    uint32_t v = (uint32_t)u;
    float f;
    memcpy(&f, &v, 4);
    bad += half_mismatch(f);
  }
  static const float special[] = {65504.0f, 65519.99f, 65520.0f, 70000.0f, 3e-6f, -2e-7f, 1e-8f, 2.98023224e-8f,
                                  INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 3.4e38f};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) bad += half_mismatch(special[i]);
  CHECK(bad == 0);
  CHECK(galv_rnd_f16(1.00048828125f) == 1.0f && galv_rnd_f16(1.00146484375f) == 1.001953125f);
  CHECK(galv_rnd_bf16(1.00390625f) == 1.0f && isinf(galv_rnd_f16(65520.0f)));
}

/* 16-bit storage (--precision bf16 / fp16): the array conversions program.c
 * calls around the f32 kernels equal the scalar ones element for element
 * (ties, NaN, inf, subnormals); a kernel run as program.c runs it on 16-bit
 * operands (widen, f32 kernel, narrow) against the evaluator on bf16 / f16
 * tensors (which computes in float or double and rounds each result):
 * within one ulp of the storage type, and mostly identical; the inference
 * weights copy converts exactly the listed tensors; the scratch grows. */
static double ulp16(gv_dtype dt, double w) {
  double a = fabs(w) < 1e-30 ? 1e-30 : fabs(w);
  return ldexp(1.0, ilogb(a) - (dt == GV_DT_BF16 ? 7 : 10));
}
static void storage_case(const char *what, gv_dtype dt, gv_opcode code, int na, const int64_t dims[][3], int ranks[]) {
  tcase c;
  tc_init(&c);
  for (int i = 0; i < na; i++) tc_arg(&c, dt, ranks[i], dims[i]);
  gv_op *op = tc_op(&c, code);
  if (code == GV_OP_SOFTMAX) gv_set_int(c.m, op, "axis", -1);
  if (code == GV_OP_DOT) {
    static const int64_t lc[] = {1}, rc[] = {0};
    gv_set_ints(c.m, op, "lhs_batch", 0, NULL), gv_set_ints(c.m, op, "rhs_batch", 0, NULL);
    gv_set_ints(c.m, op, "lhs_contract", 1, lc), gv_set_ints(c.m, op, "rhs_contract", 1, rc);
  }
  gv_tensor *want = tc_eval(&c, op);
  if (!want) return;
  int rt = dt == GV_DT_BF16 ? GALV_BF16 : GALV_F16;
  int64_t n0 = gv_tensor_numel(c.in[0]), n1 = na > 1 ? gv_tensor_numel(c.in[1]) : 0, no = gv_tensor_numel(want);
  float *x0 = malloc((size_t)n0 * 4), *x1 = malloc((size_t)(n1 + 1) * 4), *y = malloc((size_t)no * 4);
  uint16_t *y16 = malloc((size_t)no * 2);
  galv_widen16(rt, x0, c.in[0]->data, n0);
  if (na > 1) galv_widen16(rt, x1, c.in[1]->data, n1);
  if (code == GV_OP_SOFTMAX) {
    galv_softmax_f32(y, x0, dims[0][0], dims[0][1], 1, 0);
  } else {
    galv_dot_desc d = {0};
    d.nm = d.nk = d.nn = 1;
    d.mdims[0] = dims[0][0], d.msa[0] = dims[0][1], d.kdims[0] = dims[0][1], d.ksa[0] = 1, d.ksb[0] = dims[1][1];
    d.ndims[0] = dims[1][1], d.nsb[0] = 1;
    galv_dot_f32(&d, x0, x1, y);
  }
  galv_narrow16(rt, y16, y, no);
  int same = 0, far = 0;
  for (int64_t i = 0; i < no; i++) {
    double w = gv_tensor_get_f(want, i), g = dt == GV_DT_BF16 ? galv_bf16_to_f32(y16[i]) : galv_f16_to_f32(y16[i]);
    same += g == w;
    far += fabs(g - w) > ulp16(dt, w);
  }
  if (far || same < no * 3 / 4) {
    fprintf(stderr, "%s: %d of %lld beyond one ulp, %d identical\n", what, far, (long long)no, same);
    failures++;
  }
  free(x0), free(x1), free(y), free(y16);
  gv_module_free(c.m);
}
static void test_storage16(void) {
  enum { N = 4096 };
  float f[N], w[N], r[N];
  uint16_t h[N];
  for (int i = 0; i < N; i++) {
    uint32_t b = (uint32_t)i * 1048573u; /* a sweep of bit patterns, ties among them */
    memcpy(&f[i], &b, 4);
  }
  f[0] = NAN, f[1] = INFINITY, f[2] = -0.0f, f[3] = 1.00390625f, f[4] = 1.01171875f, f[5] = 65520.0f, f[6] = 3e-8f;
  for (int dt = GALV_F16; dt <= GALV_BF16; dt++) {
    int bad = 0;
    galv_narrow16(dt, h, f, N);
    galv_widen16(dt, w, h, N);
    galv_round16(dt, r, f, N);
    for (int i = 0; i < N; i++) {
      uint16_t s = dt == GALV_BF16 ? galv_f32_to_bf16(f[i]) : galv_f32_to_f16(f[i]);
      float sw = dt == GALV_BF16 ? galv_bf16_to_f32(s) : galv_f16_to_f32(s);
      bad += h[i] != s || (memcmp(&w[i], &sw, 4) && !(isnan(w[i]) && isnan(sw))) ||
             (memcmp(&r[i], &sw, 4) && !(isnan(r[i]) && isnan(sw)));
    }
    CHECK(bad == 0);
    galv_round16(dt, f + 8, f + 8, 8); /* in place, as program.c rounds an fp32 result the GPU writes 16-bit */
  }
  CHECK(galv_bf16_to_f32(galv_f32_to_bf16(1.00390625f)) == 1.0f && galv_bf16_to_f32(galv_f32_to_bf16(1.01171875f)) == 1.015625f);
  static const int64_t sm[][3] = {{6, 37}}, mm[][3] = {{5, 33}, {33, 7}};
  int r1[] = {2}, r2[] = {2, 2};
  storage_case("softmax bf16", GV_DT_BF16, GV_OP_SOFTMAX, 1, sm, r1);
  storage_case("softmax f16", GV_DT_F16, GV_OP_SOFTMAX, 1, sm, r1);
  storage_case("dot bf16", GV_DT_BF16, GV_OP_DOT, 2, mm, r2);
  storage_case("dot f16", GV_DT_F16, GV_OP_DOT, 2, mm, r2);
  /* the weights copy: tensors at 0 (3 elements) and 64 (2), other bytes kept */
  float wts[40];
  for (int i = 0; i < 40; i++) wts[i] = 1.0f + (float)i / 3.0f;
  static const int64_t tab[] = {0, 3, 64, 2};
  const char *cp = galv_narrow_weights((const char *)wts, sizeof wts, tab, 2, GALV_BF16);
  const uint16_t *c16 = (const uint16_t *)cp;
  CHECK(c16[0] == galv_f32_to_bf16(wts[0]) && c16[2] == galv_f32_to_bf16(wts[2]) && c16[32] == galv_f32_to_bf16(wts[16]) &&
        c16[33] == galv_f32_to_bf16(wts[17]));
  CHECK(memcmp(cp + 8, (const char *)wts + 8, 56) == 0 && memcmp(cp + 72, (const char *)wts + 72, sizeof wts - 72) == 0);
  CHECK(galv_narrow_weights((const char *)wts, sizeof wts, tab, 2, GALV_BF16) == cp && galv_narrow_weights_bytes() == (int64_t)sizeof wts);
  char *s1 = galv_cvt_scratch(100);
  CHECK(s1 && galv_cvt_scratch_bytes() == 100 && galv_cvt_scratch(50) == s1);
  CHECK(galv_cvt_scratch(1 << 20) && galv_cvt_scratch_bytes() == 1 << 20);
}

/* topk: galv_topk_f32 against the evaluator, values and indices exactly, on
 * rows full of ties (values in {-1, 0, 1}) and a NaN, largest and smallest,
 * along a middle axis (inner > 1). */
static void test_topk(void) {
  for (int largest = 0; largest < 2; largest++) {
    tcase c;
    tc_init(&c);
    gv_tensor *x = tc_arg(&c, GV_DT_F32, 3, (int64_t[]){2, 7, 3});
    for (int64_t i = 0; i < 42; i++) ((float *)x->data)[i] = floorf(frand() * 1.5f);
    ((float *)x->data)[10] = NAN;
    gv_op *op = gv_op_new(c.m, GV_OP_TOPK, 1, c.v, 2);
    gv_set_int(c.m, op, "k", 4);
    gv_set_int(c.m, op, "axis", 1);
    gv_set_int(c.m, op, "largest", largest);
    gv_tensor *want[2] = {0};
    if (gv_infer_op(c.m, op, NULL) || gv_eval_op(c.m, op, (const gv_tensor *const *)c.in, want)) {
      failures++;
      gv_module_free(c.m);
      continue;
    }
    float vals[24];
    int64_t idx[24];
    galv_topk_f32(vals, idx, x->data, 2, 7, 3, 4, largest);
    for (int i = 0; i < 24; i++) {
      float w = ((const float *)want[0]->data)[i];
      CHECK(memcmp(&vals[i], &w, sizeof w) == 0 || (isnan(vals[i]) && isnan(w)));
      CHECK(idx[i] == ((const int64_t *)want[1]->data)[i]);
    }
    /* the NaN (row 0, position 3, column 1) ranks first when largest, never among the smallest 4 of 7 */
    CHECK(largest ? isnan(vals[1]) && idx[1] == 3 : !isnan(vals[1]));
    gv_module_free(c.m);
  }
}

int main(void) {
  test_half();
  test_storage16();
  test_dot();
  test_conv();
  test_softmax_norm_reduce();
  test_movement();
  test_topk();
  test_pb();
  if (failures) {
    fprintf(stderr, "test_cpu_kernels: %d failures\n", failures);
    return 1;
  }
  printf("test_cpu_kernels: ok\n");
  return 0;
}
