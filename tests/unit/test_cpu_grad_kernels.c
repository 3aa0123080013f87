/* test_cpu_grad_kernels.c — the training kernels (runtime/kernels_grad.c)
 * against the reference evaluators (ir/train_ops.c through gv_eval_op) on
 * seeded random data: gather_grad (repeated and negative indices, inner
 * axis), slice_grad (steps, offsets), cross_entropy and its gradient (with
 * ignored rows), conv_grad_input / conv_grad_weight (stride, pad, dilation,
 * groups, 1-D and 2-D). Tolerance rtol 1e-5 + atol 1e-5. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"
#include "ir/ir.h"

static int failures, compared;
static unsigned rng = 4242;
static float frand(void) {
  rng = rng * 1103515245u + 12345u;
  return ((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

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

static gv_tensor *tc_arg(tcase *c, gv_dtype dt, int rank, const int64_t *dims) {
  gv_type t = gv_type_make(dt, rank, dims);
  c->v[c->n] = gv_func_add_arg(c->m, c->f, "x", t, false);
  gv_tensor *x = gv_tensor_new(c->m->arena, t);
  for (int64_t i = 0; i < gv_tensor_numel(x); i++) gv_tensor_set_f(x, i, frand());
  c->in[c->n++] = x;
  return x;
}

static gv_tensor *tc_eval(tcase *c, gv_op *op) {
  gv_tensor *out[2] = {0};
  if (gv_infer_op(c->m, op, NULL) || gv_eval_op(c->m, op, (const gv_tensor *const *)c->in, out)) {
    fprintf(stderr, "evaluation failed\n");
    failures++;
    return NULL;
  }
  return out[0];
}

static void check(const char *what, const float *got, const gv_tensor *want) {
  if (!want) return;
  double worst = 0;
  for (int64_t i = 0; i < gv_tensor_numel(want); i++) {
    double w = gv_tensor_get_f(want, i), e = fabs(got[i] - w) - (1e-5 + 1e-5 * fabs(w));
    if (e > worst || e != e) worst = e != e ? INFINITY : e;
  }
  compared++;
  if (worst > 0) {
    fprintf(stderr, "%s: mismatch beyond tolerance by %g\n", what, worst);
    failures++;
  }
}

static float *buf(const gv_tensor *t) {
  float *p = malloc((size_t)(gv_tensor_numel(t) + 1) * sizeof *p);
  for (int64_t i = 0; i < gv_tensor_numel(t); i++) p[i] = (float)gv_tensor_get_f(t, i);
  return p;
}

static void gather_grad_case(int64_t outer, int64_t nidx, int64_t D, int64_t inner) {
  tcase c;
  tc_init(&c);
  int64_t dyd[3] = {outer, nidx, inner}, idd[1] = {nidx};
  tc_arg(&c, GV_DT_F32, 3, dyd);
  gv_tensor *ix = tc_arg(&c, GV_DT_I64, 1, idd);
  for (int64_t j = 0; j < nidx; j++) gv_tensor_set_i(ix, j, (int64_t)(j * 7 % D) - (j % 3 == 0 ? D : 0));
  gv_op *op = gv_op_new(c.m, GV_OP_GATHER_GRAD, 2, c.v, 1);
  gv_set_int(c.m, op, "axis", 1);
  gv_set_int(c.m, op, "dim", D);
  gv_tensor *want = tc_eval(&c, op);
  float *dy = buf(c.in[0]), *got = calloc((size_t)(outer * D * inner), sizeof *got);
  galv_gather_grad_f32(got, dy, ix->data, 8, nidx, outer, D, inner, "gather_grad");
  check("gather_grad", got, want);
  free(dy), free(got);
  gv_module_free(c.m);
}

static void slice_grad_case(void) {
  tcase c;
  tc_init(&c);
  int64_t shape[3] = {3, 10, 4}, st[2] = {1, 2}, en[2] = {9, 4}, ax[2] = {1, 2}, sp[2] = {3, 1}, dyd[3] = {3, 3, 2};
  tc_arg(&c, GV_DT_F32, 3, dyd);
  gv_op *op = gv_op_new(c.m, GV_OP_SLICE_GRAD, 1, c.v, 1);
  gv_set_ints(c.m, op, "shape", 3, shape);
  gv_set_ints(c.m, op, "starts", 2, st);
  gv_set_ints(c.m, op, "ends", 2, en);
  gv_set_ints(c.m, op, "axes", 2, ax);
  gv_set_ints(c.m, op, "steps", 2, sp);
  gv_tensor *want = tc_eval(&c, op);
  /* as codegen does: base = start . strides, strides * steps (elements) */
  int64_t d[3] = {3, 3, 2}, s[3] = {40, 3 * 4, 1}, base = 1 * 4 + 2;
  float *dy = buf(c.in[0]), *got = malloc(120 * sizeof *got);
  for (int i = 0; i < 120; i++) got[i] = 99.0f; /* must be overwritten with zeros outside the window */
  galv_scatter_strided(got, 120 * 4, base, dy, 4, 3, d, s);
  check("slice_grad", got, want);
  free(dy), free(got);
  gv_module_free(c.m);
}

static void ce_case(int64_t rows, int64_t C) {
  for (int g = 0; g < 2; g++) {
    tcase c;
    tc_init(&c);
    int64_t xd[2] = {rows, C}, ld[1] = {rows}, none[1] = {0};
    if (g) {
      tc_arg(&c, GV_DT_F32, 0, none);
      gv_tensor_set_f(c.in[0], 0, 0.75);
    }
    tc_arg(&c, GV_DT_F32, 2, xd);
    gv_tensor *lab = tc_arg(&c, GV_DT_I64, 1, ld);
    for (int64_t i = 0; i < rows; i++) gv_tensor_set_i(lab, i, i % 4 == 1 ? -100 : (i * 5) % C);
    gv_op *op = gv_op_new(c.m, g ? GV_OP_CROSS_ENTROPY_GRAD : GV_OP_CROSS_ENTROPY, c.n, c.v, 1);
    gv_set_int(c.m, op, "ignore_index", -100);
    gv_tensor *want = tc_eval(&c, op);
    float *x = buf(c.in[g]), *got = calloc((size_t)(rows * C), sizeof *got), dl = 0.75f;
    if (g) galv_cross_entropy_grad_f32(got, &dl, x, lab->data, rows, C, -100, "ce");
    else galv_cross_entropy_f32(got, x, lab->data, rows, C, -100, "ce");
    check(g ? "cross_entropy_grad" : "cross_entropy", got, want);
    free(x), free(got);
    gv_module_free(c.m);
  }
}

/* conv gradients: S spatial dims, x [N, C, in...], w [M, C/G, k...] */
static void conv_grad_case(int S, int64_t N, int64_t C, int64_t M, int64_t G, const int64_t *in, const int64_t *k,
                           int64_t stride, int64_t pad, int64_t dil) {
  galv_conv_desc d = {.S = S, .N = N, .C = C, .M = M, .G = G};
  int64_t xd[8] = {N, C}, wd[8] = {M, C / G}, yd[8] = {N, M}, st[4], pd[8], dl[4];
  for (int s = 0; s < S; s++) {
    int64_t o = (in[s] + 2 * pad - dil * (k[s] - 1) - 1) / stride + 1;
    xd[2 + s] = d.in[s] = in[s], wd[2 + s] = d.k[s] = k[s], yd[2 + s] = d.out[s] = o;
    st[s] = d.stride[s] = stride, pd[s] = pd[s + S] = d.pad[s] = pad, dl[s] = d.dil[s] = dil;
  }
  for (int wg = 0; wg < 2; wg++) {
    tcase c;
    tc_init(&c);
    if (wg) tc_arg(&c, GV_DT_F32, S + 2, xd), tc_arg(&c, GV_DT_F32, S + 2, yd);
    else tc_arg(&c, GV_DT_F32, S + 2, yd), tc_arg(&c, GV_DT_F32, S + 2, wd);
    gv_op *op = gv_op_new(c.m, wg ? GV_OP_CONV_GRAD_WEIGHT : GV_OP_CONV_GRAD_INPUT, 2, c.v, 1);
    gv_set_ints(c.m, op, "shape", S + 2, wg ? wd : xd);
    gv_set_ints(c.m, op, "strides", S, st);
    gv_set_ints(c.m, op, "pads", 2 * S, pd);
    gv_set_ints(c.m, op, "dilations", S, dl);
    gv_set_int(c.m, op, "group", G);
    gv_tensor *want = tc_eval(&c, op);
    float *a = buf(c.in[0]), *b = buf(c.in[1]), *got = calloc((size_t)gv_tensor_numel(want ? want : c.in[0]) + 1, 4);
    if (wg) galv_conv_grad_weight_f32(&d, a, b, got);
    else galv_conv_grad_input_f32(&d, a, b, got);
    check(wg ? "conv_grad_weight" : "conv_grad_input", got, want);
    free(a), free(b), free(got);
    gv_module_free(c.m);
  }
}

int main(void) {
  gather_grad_case(1, 16, 10, 8);
  gather_grad_case(3, 5, 7, 1);
  slice_grad_case();
  ce_case(12, 9);
  ce_case(4, 1000);
  int64_t in2[2] = {7, 6}, k2[2] = {3, 2}, in1[1] = {11}, k1[1] = {3};
  conv_grad_case(2, 2, 4, 6, 2, in2, k2, 2, 1, 1);
  conv_grad_case(2, 1, 3, 5, 1, in2, k2, 1, 0, 2);
  conv_grad_case(1, 2, 2, 4, 1, in1, k1, 1, 1, 1);
  printf("test_cpu_grad_kernels: %d compared, %d failures\n", compared, failures);
  return failures || compared != 13 ? 1 : 0;
}
