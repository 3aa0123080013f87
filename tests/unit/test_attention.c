/* test_attention.c — training's fused attention (docs/fused-attention.md):
 * the score functor text (gv_attn_score_parse / _apply, ir/attention.c):
 * valid steps, each malformed form refused with a reason, each step's
 * slope equal to a central difference; and the CPU kernels
 * (runtime/attention.c) equal to the reference evaluators
 * (ir/attention_ops.c, double) for both operand layouts of k and v, a
 * broadcast bool mask and a per-head additive bias, queries and keys
 * spanning more than one block of 64: o, lse, dq, dk, dv within 1e-4
 * (abs + rel). The 16-bit kernels (bf16 / f16 storage of q, k, v, o, do
 * and the gradients, the additive bias 16-bit too, lse fp32) equal the
 * reference evaluators run on the same 16-bit values within one rounding
 * of the result: 1e-4 + 2^-8 |x| (bf16), 1e-4 + 2^-11 |x| (f16); lse
 * within 1e-4. Where training's galv.attention runs (gv_attn_train_kernel,
 * gv_attn_train_fuse): every target (cpu, cuda, an unknown one) x storage
 * dtype x --fused-attention mode (on, off, auto) x --plan-only against the
 * rules of docs/fused-attention.md; `on` where no kernel runs it (any
 * dtype other than f32 / bf16 / f16, any target other than cpu / cuda) is
 * refused outside --plan-only. galvc's driver cannot reach that refusal
 * (it checks --target first, and its storage is f32 / bf16 / f16), so
 * this table is its test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"
#include "ir/attention.h"
#include "ir/dropout.h"
#include "ir/ir.h"

static int failures, compared;
static unsigned rng = 777;
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

static void functor_cases(void) {
  gv_attn_step st[GV_ATTN_MAX_STEPS];
  const char *why = NULL;
  CHECK(gv_attn_score_parse("", 0, st, &why) == 0);
  CHECK(gv_attn_score_parse("div:s,2.5;where:%0,s,-1e4;add:%1,s;sub:3,s;mul:s,%1", 2, st, &why) == 5);
  const char *bad[] = {"pow:s,2", "div:2,s", "where:s,%0,1", "add:s,s", "add:1,2", "add:s", "add:s,%2", "add:s,x",
                       "add:s,1 mul:s,2", "where:%0,s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why = NULL;
    int n = gv_attn_score_parse(bad[i], 2, st, &why);
    if (n != -1 || !why) fprintf(stderr, "'%s' accepted (%d)\n", bad[i], n), failures++;
  }
  /* slopes against central differences, both where branches taken */
  int n = gv_attn_score_parse("div:s,2.5;where:%0,s,-1e4;add:%1,s;sub:3,s;mul:s,%1", 2, st, &why);
  for (int c = 0; c < 2; c++) {
    double fn[2] = {(double)c, 0.75}, sl = 1, s = 0.3, h = 1e-4;
    double y = gv_attn_score_apply(st, n, s, fn, &sl);
    double d = (gv_attn_score_apply(st, n, s + h, fn, NULL) - gv_attn_score_apply(st, n, s - h, fn, NULL)) / (2 * h);
    CHECK(fabs(sl - d) < 1e-6);
    CHECK(c == 0 ? fabs(y - (3 - (-1e4 + 0.75)) * 0.75) < 1e-6 : fabs(y - (3 - (0.3 / 2.5 + 0.75)) * 0.75) < 1e-9);
  }
  compared++;
}

static gv_tensor *rnd_tensor(gv_module *m, gv_type t, bool mask) {
  gv_tensor *x = gv_tensor_new(m->arena, t);
  for (int64_t i = 0; i < gv_tensor_numel(x); i++) gv_tensor_set_f(x, i, mask ? (double)(frand() > -0.6f) : frand());
  return x;
}

static void check_rel(const char *what, const float *got, const gv_tensor *want, double rel) {
  double worst = 0;
  for (int64_t i = 0; i < gv_tensor_numel(want); i++) {
    double w = gv_tensor_get_f(want, i), e = fabs(got[i] - w) - (1e-4 + rel * fabs(w));
    if (e > worst || e != e) worst = e != e ? INFINITY : e;
  }
  compared++;
  if (worst > 0) fprintf(stderr, "%s: mismatch beyond tolerance by %g\n", what, worst), failures++;
}
static void check(const char *what, const float *got, const gv_tensor *want) { check_rel(what, got, want, 1e-4); }

static float *fbuf(const gv_tensor *t) {
  float *p = malloc((size_t)(gv_tensor_numel(t) + 1) * sizeof *p);
  for (int64_t i = 0; i < gv_tensor_numel(t); i++) p[i] = (float)gv_tensor_get_f(t, i);
  return p;
}


/* 16-bit storage: x's values rounded to dt (a new f32 tensor holding them) and their bits */
static gv_tensor *rounded(gv_module *m, const gv_tensor *x, int dt) {
  gv_tensor *y = gv_tensor_new(m->arena, x->type);
  for (int64_t i = 0; i < gv_tensor_numel(x); i++) {
    float v = (float)gv_tensor_get_f(x, i);
    gv_tensor_set_f(y, i, dt == GALV_BF16 ? galv_rnd_bf16(v) : galv_rnd_f16(v));
  }
  return y;
}
static uint16_t *hbuf(const gv_tensor *t, int dt) {
  uint16_t *p = malloc((size_t)(gv_tensor_numel(t) + 1) * sizeof *p);
  for (int64_t i = 0; i < gv_tensor_numel(t); i++) {
    float v = (float)gv_tensor_get_f(t, i);
    p[i] = dt == GALV_BF16 ? galv_f32_to_bf16(v) : galv_f32_to_f16(v);
  }
  return p;
}
static float *widen(const uint16_t *h, int64_t n, int dt) {
  float *p = malloc((size_t)(n + 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = dt == GALV_BF16 ? galv_bf16_to_f32(h[i]) : galv_f16_to_f32(h[i]);
  return p;
}

/* The 16-bit kernels on op a / gop (attention, attention_grad) with inputs in[] (q, k, v, mask, bias): every
 * f32 input rounded to dt, the reference evaluated on the rounded values. */
static void kernel_case16(gv_module *m, gv_op *a, gv_op *gop, const gv_tensor *const *in, galv_fattn_desc d, int dt, const char *tag) {
  const double rel = dt == GALV_BF16 ? 1.0 / 256 : 1.0 / 2048;
  const char *dn = dt == GALV_BF16 ? "bf16" : "f16";
  const gv_tensor *r[5] = {rounded(m, in[0], dt), rounded(m, in[1], dt), rounded(m, in[2], dt), in[3], rounded(m, in[4], dt)};
  gv_tensor *out[3] = {0};
  if (gv_eval_op(m, a, r, out)) {
    fprintf(stderr, "attention evaluation (%s) failed\n", dn), failures++;
    return;
  }
  d.fdt[1] = dt;
  uint16_t *q = hbuf(r[0], dt), *k = hbuf(r[1], dt), *v = hbuf(r[2], dt), *bias = hbuf(r[4], dt);
  const void *fn[2] = {in[3]->data, bias};
  int64_t no = gv_tensor_numel(out[0]), nl = gv_tensor_numel(out[1]);
  uint16_t *o = malloc(sizeof *o * (size_t)no);
  float *lse = malloc(sizeof *lse * (size_t)nl);
  (dt == GALV_BF16 ? galv_attention_bf16 : galv_attention_f16)(&d, q, k, v, fn, NULL, 0, 0, o, lse);
  float *ow = widen(o, no, dt);
  char what[128];
  snprintf(what, sizeof what, "attention %s o (%s)", dn, tag), check_rel(what, ow, out[0], rel);
  snprintf(what, sizeof what, "attention %s lse (%s)", dn, tag), check(what, lse, out[1]);
  /* backward: o and dO 16-bit (o the reference's, rounded), lse the reference's */
  const gv_tensor *ro = rounded(m, out[0], dt), *rdo = rounded(m, rnd_tensor(m, out[0]->type, false), dt);
  const gv_tensor *gin[8] = {r[0], r[1], r[2], ro, rdo, out[1], in[3], r[4]};
  gv_tensor *gout[3] = {0};
  if (gv_eval_op(m, gop, gin, gout)) {
    fprintf(stderr, "attention_grad evaluation (%s) failed\n", dn), failures++;
  } else {
    uint16_t *hb = hbuf(ro, dt), *db = hbuf(rdo, dt), *g[3];
    float *lb = fbuf(out[1]);
    for (int i = 0; i < 3; i++) g[i] = malloc(sizeof(uint16_t) * (size_t)gv_tensor_numel(in[i]));
    (dt == GALV_BF16 ? galv_attention_grad_bf16 : galv_attention_grad_f16)(&d, q, k, v, hb, db, lb, fn, NULL, 0, 0, g[0], g[1], g[2]);
    const char *nm[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
      float *w = widen(g[i], gv_tensor_numel(in[i]), dt);
      snprintf(what, sizeof what, "attention_grad %s %s (%s)", dn, nm[i], tag), check_rel(what, w, gout[i], rel);
      free(w), free(g[i]);
    }
    free(hb), free(db), free(lb);
  }
  free(q), free(k), free(v), free(bias), free(o), free(lse), free(ow);
}

/* B x H batch, Sq queries, Sk keys, head dims D / Dv; kt / vt the layouts; drop: with dropout 0.25 on the
 * probabilities (galv.dropout's attributes, an accumulated microbatch's rows, shard offsets as the last operand,
 * step 5): the CPU kernels' mask = the reference evaluator's */
static void kernel_case_d(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, int kt, int vt, int drop) {
  gv_module *m = gv_module_new("test");
  gv_func *f = gv_func_new(m, "main");
  int64_t qd[4] = {B, H, Sq, D}, kd[4] = {B, H, kt ? D : Sk, kt ? Sk : D}, vd[4] = {B, H, vt ? Dv : Sk, vt ? Sk : Dv};
  int64_t md[2] = {Sq, Sk}, bd[4] = {1, H, 1, Sk};
  gv_type ty[5] = {gv_type_make(GV_DT_F32, 4, qd), gv_type_make(GV_DT_F32, 4, kd), gv_type_make(GV_DT_F32, 4, vd),
                   gv_type_make(GV_DT_BOOL, 2, md), gv_type_make(GV_DT_F32, 4, bd)};
  gv_value *v[6];
  const gv_tensor *in[9];
  for (int i = 0; i < 5; i++) {
    v[i] = gv_func_add_arg(m, f, "x", ty[i], false);
    in[i] = rnd_tensor(m, ty[i], i == 3);
  }
  int64_t four = 4, offs[4] = {2 * B, H, 0, 0};
  gv_tensor *ot = gv_tensor_new(m->arena, gv_type_make(GV_DT_I64, 1, &four));
  memcpy(ot->data, offs, sizeof offs);
  v[5] = gv_func_add_arg(m, f, "off", ot->type, false), in[5] = ot;
  gv_op *a = gv_op_new(m, GV_OP_ATTENTION, drop ? 6 : 5, v, 2);
  gv_set_int(m, a, "k_contract", kt ? 2 : 3);
  gv_set_int(m, a, "v_contract", vt ? 3 : 2);
  gv_set_str(m, a, "score", "mul:s,0.35;where:%0,s,-3.40282347e+38;add:s,%1");
  if (drop) {
    gv_set_float(m, a, "ratio", 0.25);
    gv_set_int(m, a, "seed", 9), gv_set_int(m, a, "id", 2), gv_set_int(m, a, "rows", 4 * B);
    gv_set_ints(m, a, "acc", 3, (int64_t[]){2, 1, 1});
  }
  gv_eval_step = drop ? 5 : 0;
  gv_tensor *out[3] = {0};
  if (gv_infer_op(m, a, NULL) || gv_eval_op(m, a, in, out)) {
    fprintf(stderr, "attention evaluation failed\n"), failures++;
    gv_module_free(m);
    return;
  }
  gv_attn_geo g;
  CHECK(gv_attn_geometry(m, a, &g) == 0);
  CHECK(g.nfn == 2 && g.off == (drop ? 5 : -1) && g.drop == (drop != 0));
  galv_fattn_desc d = {.nb = 2, .bd = {B, H, 1, 1}, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv, .kt = kt, .vt = vt, .nst = g.nst, .nfn = 2};
  const int64_t *off = drop ? offs : NULL;
  if (drop) {
    gv_dropout dp;
    CHECK(gv_dropout_params(m, a, &dp) == 0);
    d.drop = 1;
    d.dro = (galv_dropout_desc){.rank = 4, .dims = {B, H, Sq, Sk}, .seed = dp.seed, .id = dp.id, .thr = dp.thr, .scale = dp.scale,
                                .acc = {dp.acc[0], dp.acc[1], dp.acc[2]}, .rows = dp.rows};
  }
  for (int t = 0; t < g.nst; t++) {
    d.st[t].kind = g.st[t].kind, d.st[t].nargs = g.st[t].nargs;
    for (int u = 0; u < 3; u++) d.st[t].arg[u] = g.st[t].arg[u], d.st[t].lit[u] = (float)g.st[t].lit[u];
  }
  int64_t fst[2][6] = {{0, 0, Sk, 1}, {0, Sk, 0, 1}};
  memcpy(d.fst, fst, sizeof fst);
  d.fdt[0] = GALV_BOOL, d.fdt[1] = GALV_F32;
  float *q = fbuf(in[0]), *k = fbuf(in[1]), *vv = fbuf(in[2]), *bias = fbuf(in[4]);
  const void *fn[2] = {in[3]->data, bias};
  float *o = malloc(sizeof(float) * (size_t)(B * H * Sq * Dv)), *lse = malloc(sizeof(float) * (size_t)(B * H * Sq));
  galv_attention_f32(&d, q, k, vv, fn, off, gv_eval_step, 0, o, lse);
  char what[96];
  snprintf(what, sizeof what, "attention o (Sk %lld, kt %d, vt %d%s)", (long long)Sk, kt, vt, drop ? ", dropout" : "");
  check(what, o, out[0]);
  snprintf(what, sizeof what, "attention lse (Sk %lld, kt %d, vt %d%s)", (long long)Sk, kt, vt, drop ? ", dropout" : "");
  check(what, lse, out[1]);
  /* backward: dO random, the same o / lse to both */
  gv_value *gi[9] = {v[0], v[1], v[2], a->res[0], a->res[0], a->res[1], v[3], v[4], v[5]};
  gv_op *gop = gv_op_new(m, GV_OP_ATTENTION_GRAD, drop ? 9 : 8, gi, 3);
  for (int i = 0; i < a->nattrs; i++) gv_set_attr(m, gop, &a->attrs[i]);
  gv_tensor *dout = rnd_tensor(m, out[0]->type, false);
  const gv_tensor *gin[9] = {in[0], in[1], in[2], out[0], dout, out[1], in[3], in[4], in[5]};
  gv_tensor *gout[3] = {0};
  if (gv_infer_op(m, gop, NULL) || gv_eval_op(m, gop, gin, gout)) {
    fprintf(stderr, "attention_grad evaluation failed\n"), failures++;
  } else {
    float *ob = fbuf(out[0]), *lb = fbuf(out[1]), *db = fbuf(dout);
    float *dq = malloc(sizeof(float) * (size_t)gv_tensor_numel(in[0])), *dk = malloc(sizeof(float) * (size_t)gv_tensor_numel(in[1])),
          *dv = malloc(sizeof(float) * (size_t)gv_tensor_numel(in[2]));
    galv_attention_grad_f32(&d, q, k, vv, ob, db, lb, fn, off, gv_eval_step, 0, dq, dk, dv);
    const char *nm[3] = {"dq", "dk", "dv"};
    float *got[3] = {dq, dk, dv};
    for (int r = 0; r < 3; r++) {
      snprintf(what, sizeof what, "attention_grad %s (Sk %lld, kt %d, vt %d%s)", nm[r], (long long)Sk, kt, vt, drop ? ", dropout" : "");
      check(what, got[r], gout[r]);
    }
    free(ob), free(lb), free(db), free(dq), free(dk), free(dv);
    snprintf(what, sizeof what, "Sk %lld, kt %d, vt %d", (long long)Sk, kt, vt);
    if (!drop) { /* the 16-bit entries share the fp32 blocks (and their dropout) */
      kernel_case16(m, a, gop, in, d, GALV_BF16, what);
      kernel_case16(m, a, gop, in, d, GALV_F16, what);
    }
  }
  gv_eval_step = 0;
  free(q), free(k), free(vv), free(bias), free(o), free(lse);
  gv_module_free(m);
}
static void kernel_case(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, int kt, int vt) {
  kernel_case_d(B, H, Sq, Sk, D, Dv, kt, vt, 0);
  kernel_case_d(B, H, Sq, Sk, D, Dv, kt, vt, 1);
}

/* the two-part mask the fused kernels draw (galv_rng_lead, galv_rng_last) = galv_rng_keep over all coordinates,
 * galv.dropout's, with offsets, an accumulated microbatch and a pipeline microbatch */
static void rng_parts(void) {
  galv_dropout_desc d = {.rank = 4, .seed = 3, .id = 1, .thr = galv_rng_threshold(0.3), .acc = {3, 2, 2}, .rows = 24};
  int64_t off[4] = {6, 2, 0, 5}, c[3], g[4];
  uint64_t key = galv_rng_key(3, 1, 7);
  int diff = 0, kept = 0, n = 0;
  for (c[0] = 0; c[0] < 4; c[0]++)
    for (c[1] = 0; c[1] < 3; c[1]++)
      for (c[2] = 0; c[2] < 5; c[2]++) {
        uint64_t h = galv_rng_lead(key, &d, c, 3, off, 2);
        for (int64_t j = 0; j < 40; j++, n++) {
          g[0] = galv_rng_row(c[0] + off[0], 3, 2, 2, 2, 24), g[1] = c[1] + off[1], g[2] = c[2] + off[2], g[3] = j + off[3];
          int a = galv_rng_last(h, j + off[3], d.thr), b = galv_rng_keep(key, g, 4, d.thr);
          diff += a != b, kept += b;
        }
      }
  compared++;
  if (diff || kept == 0 || kept == n) fprintf(stderr, "galv_rng_lead / last vs galv_rng_keep: %d of %d differ (%d kept)\n", diff, n, kept), failures++;
}

static void kernel_table(void) {
  static const char *const targets[] = {"cpu", "cuda", "tpu", ""};
  static const int modes[] = {1, 0, -1};
  int none = 0, refused = 0;
  for (int t = 0; t < 4; t++)
    for (int dt = 0; dt < GV_DT_COUNT; dt++) {
      bool f = dt == GV_DT_F32 || dt == GV_DT_BF16 || dt == GV_DT_F16;
      int want = f && t == 0 ? GV_ATTN_KERNEL_AUTO : f && t == 1 ? GV_ATTN_KERNEL_OPT_IN : GV_ATTN_KERNEL_NONE;
      int k = gv_attn_train_kernel(targets[t], (gv_dtype)dt);
      compared++;
      if (k != want) fprintf(stderr, "gv_attn_train_kernel(\"%s\", dtype %d) = %d, want %d\n", targets[t], dt, k, want), failures++;
      none += k == GV_ATTN_KERNEL_NONE;
      for (int mi = 0; mi < 3; mi++)
        for (int po = 0; po < 2; po++) {
          int mode = modes[mi];
          int wf = mode == 0 ? 0 : mode < 0 ? want == GV_ATTN_KERNEL_AUTO : want == GV_ATTN_KERNEL_NONE && !po ? -1 : 1;
          int got = gv_attn_train_fuse(k, mode, po);
          compared++;
          refused += got < 0;
          if (got != wf)
            fprintf(stderr, "gv_attn_train_fuse(target \"%s\", dtype %d, mode %d, plan-only %d) = %d, want %d\n", targets[t], dt,
                    mode, po, got, wf),
                failures++;
        }
    }
  /* 3 dtypes run on cpu and on cuda: every other (target, dtype) pair has no kernel, and `on` without --plan-only
   * is refused exactly there */
  CHECK(none == 4 * GV_DT_COUNT - 6);
  CHECK(refused == none);
}

int main(void) {
  functor_cases();
  kernel_table();
  rng_parts();
  kernel_case(2, 3, 5, 7, 4, 6, 0, 0);
  kernel_case(1, 2, 9, 130, 8, 5, 1, 1); /* three key blocks */
  kernel_case(2, 1, 4, 65, 3, 3, 1, 0);
  kernel_case(1, 2, 3, 3, 2, 4, 0, 1);
  kernel_case(1, 1, 70, 67, 5, 3, 0, 0); /* two query blocks */
  kernel_case(2, 1, 66, 129, 4, 4, 1, 1);
  printf("test_attention: %d checks, %d failures\n", compared, failures);
  return failures ? 1 : 0;
}
