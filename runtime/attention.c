/* attention.c — the CPU target's galv.attention and galv.attention_grad
 * (docs/fused-attention.md): blocks of 64 queries x 64 keys, never more
 * than one block of scores, each product a cblas_sgemm. The forward runs
 * an online softmax over the key blocks and writes o and each row's
 * logsumexp; the backward (FlashAttention-2) recomputes a block's scores,
 * P = exp(f(S) - lse), dP = dO V^T, dS = P (dP - rowsum(dO * o)) f'(S),
 * and adds dV += P^T dO, dQ += dS K, dK += dS^T Q. The score functor f is
 * the step table of the descriptor (galv_rt.h). With dropout (d->drop) the
 * mask of galv.dropout is recomputed per block from each score's global
 * coordinates (runtime/galv_rng.h): the forward multiplies P by it before
 * P V (the row sums, lse, stay undropped), the backward uses P_drop for dV
 * and multiplies dO V^T by it before dS. The kernels work one batch slice
 * (a head of a sample) at a time; the 16-bit ones (bf16 / f16 storage)
 * widen that slice into fp32 scratch and narrow its results. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"

enum { TILE = 64 };

/* The functor operands' element offsets of batch b's first score. */
static void batch_offsets(const galv_fattn_desc *d, int64_t b, int64_t *off) {
  for (int f = 0; f < d->nfn; f++) off[f] = 0;
  for (int x = d->nb - 1; x >= 0; x--) {
    int64_t ix = b % d->bd[x];
    b /= d->bd[x];
    for (int f = 0; f < d->nfn; f++) off[f] += ix * d->fst[f][x];
  }
}

/* element at of a functor operand stored as dt (a bool condition as 0 / 1) */
static float load(int dt, const void *p, int64_t at) {
  switch (dt) {
  case GALV_BOOL: return (float)(((const unsigned char *)p)[at] != 0);
  case GALV_BF16: return galv_bf16_to_f32(((const uint16_t *)p)[at]);
  case GALV_F16: return galv_f16_to_f32(((const uint16_t *)p)[at]);
  default: return ((const float *)p)[at];
  }
}

/* f(s) at score (i, j); *slope = f'(s) */
static float functor(const galv_fattn_desc *d, const void *const *fn, const int64_t *boff, int64_t i, int64_t j, float s,
                     float *slope) {
  float fv[8], sl = 1;
  for (int f = 0; f < d->nfn; f++) {
    int64_t at = boff[f] + i * d->fst[f][d->nb] + j * d->fst[f][d->nb + 1];
    fv[f] = load(d->fdt[f], fn[f], at);
  }
  for (int t = 0; t < d->nst; t++) {
    const galv_fattn_step *x = &d->st[t];
    float a[3];
    for (int u = 0; u < x->nargs; u++) a[u] = x->arg[u] == -1 ? s : x->arg[u] == -2 ? x->lit[u] : fv[x->arg[u]];
    switch (x->kind) {
    case 0: s = a[0] + a[1]; break;
    case 1: s = a[0] - a[1], sl *= x->arg[0] == -1 ? 1.0f : -1.0f; break;
    case 2: s = a[0] * a[1], sl *= x->arg[0] == -1 ? a[1] : a[0]; break;
    case 3: s = a[0] / a[1], sl /= a[1]; break;
    default:
      s = a[0] != 0 ? a[1] : a[2];
      sl *= (a[0] != 0) == (x->arg[1] == -1) ? 1.0f : 0.0f;
    }
  }
  if (slope) *slope = sl;
  return s;
}

/* S[m x n] = Q rows i0.. (m x D) times K rows j0.. transposed; qb, kb batch b's q and k */
static void scores(const galv_fattn_desc *d, const float *qb, const float *kb, int64_t i0, int64_t m, int64_t j0, int64_t n, float *S) {
  qb += i0 * d->D;
  if (d->D == 0) {
    for (int64_t t = 0; t < m * TILE; t++) S[t] = 0;
    return;
  }
  if (d->kt) /* K stored [D, Sk] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)d->D, 1.0f, qb, (int)d->D, kb + j0, (int)d->Sk, 0.0f, S,
                TILE);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)d->D, 1.0f, qb, (int)d->D, kb + j0 * d->D, (int)d->D,
                0.0f, S, TILE);
}

/* the dropout's run-time part: the key of this step, the shard offsets, the pipeline microbatch */
typedef struct {
  uint64_t key;
  const int64_t *off;
  int64_t mb;
} drop_rt;

static drop_rt drop_begin(const galv_fattn_desc *d, const int64_t *off, int64_t step, int64_t mb) {
  drop_rt r = {d->drop ? galv_rng_key(d->dro.seed, d->dro.id, (uint64_t)step) : 0, off, mb};
  return r;
}

/* M[r * TILE + t] = the dropout's factor of score (i0 + r, j0 + t) of batch b (r < m, t < n): d->dro.scale where
 * galv.dropout over the scores [batch..., Sq, Sk] keeps it, 0 where it drops it */
static void drop_tile(const galv_fattn_desc *d, const drop_rt *rt, int64_t b, int64_t i0, int64_t m, int64_t j0, int64_t n, float *M) {
  int64_t c[6], ko = rt->off ? rt->off[d->nb + 1] : 0;
  for (int x = d->nb - 1; x >= 0; x--) c[x] = b % d->bd[x], b /= d->bd[x];
  for (int64_t r = 0; r < m; r++) {
    c[d->nb] = i0 + r;
    uint64_t h = galv_rng_lead(rt->key, &d->dro, c, d->nb + 1, rt->off, rt->mb);
    for (int64_t t = 0; t < n; t++) M[r * TILE + t] = galv_rng_last(h, j0 + t + ko, d->dro.thr) ? d->dro.scale : 0.0f;
  }
}

static int64_t batches(const galv_fattn_desc *d) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  return B;
}

/* The forward of batch b: qb, kb, vb, ob, lb that batch's q, k, v, o, lse (fp32). */
static void forward_batch(const galv_fattn_desc *d, const drop_rt *rt, int64_t b, const float *qb, const float *kb, const float *vb,
                          const void *const *fn, float *ob, float *lb) {
  float S[TILE * TILE], M[TILE * TILE], mx[TILE], l[TILE];
  int64_t boff[8];
  batch_offsets(d, b, boff);
  for (int64_t i0 = 0; i0 < d->Sq; i0 += TILE) {
    int64_t m = d->Sq - i0 < TILE ? d->Sq - i0 : TILE;
    float *oi = ob + i0 * d->Dv;
    memset(oi, 0, sizeof(float) * (size_t)(m * d->Dv));
    for (int64_t r = 0; r < m; r++) mx[r] = -INFINITY, l[r] = 0;
    for (int64_t j0 = 0; j0 < d->Sk; j0 += TILE) {
      int64_t n = d->Sk - j0 < TILE ? d->Sk - j0 : TILE;
      scores(d, qb, kb, i0, m, j0, n, S);
      for (int64_t r = 0; r < m; r++) { /* online softmax: rescale the row, P into S */
        float *row = S + r * TILE, tmax = -INFINITY;
        for (int64_t t = 0; t < n; t++) {
          row[t] = functor(d, fn, boff, i0 + r, j0 + t, row[t], NULL);
          if (row[t] > tmax) tmax = row[t];
        }
        float nm = tmax > mx[r] ? tmax : mx[r];
        if (nm == -INFINITY) { /* nothing but -inf so far */
          for (int64_t t = 0; t < n; t++) row[t] = 0;
          continue;
        }
        float c = expf(mx[r] - nm);
        l[r] *= c;
        for (int64_t e = 0; e < d->Dv; e++) oi[r * d->Dv + e] *= c;
        for (int64_t t = 0; t < n; t++) l[r] += row[t] = expf(row[t] - nm);
        mx[r] = nm;
      }
      if (d->Dv == 0) continue;
      if (d->drop) { /* P_drop = P * mask / (1 - p); l keeps the undropped sum */
        drop_tile(d, rt, b, i0, m, j0, n, M);
        for (int64_t r = 0; r < m; r++)
          for (int64_t t = 0; t < n; t++) S[r * TILE + t] *= M[r * TILE + t];
      }
      if (d->vt) /* V stored [Dv, Sk] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)d->Dv, (int)n, 1.0f, S, TILE, vb + j0, (int)d->Sk, 1.0f, oi,
                    (int)d->Dv);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)d->Dv, (int)n, 1.0f, S, TILE, vb + j0 * d->Dv, (int)d->Dv,
                    1.0f, oi, (int)d->Dv);
    }
    for (int64_t r = 0; r < m; r++) {
      for (int64_t e = 0; e < d->Dv; e++) oi[r * d->Dv + e] /= l[r];
      lb[i0 + r] = mx[r] + logf(l[r]);
    }
  }
}

/* The backward of batch b (every pointer that batch's slice, fp32): dqb, dkb, dvb zeroed first, then accumulated. */
static void backward_batch(const galv_fattn_desc *d, const drop_rt *rt, int64_t b, const float *qb, const float *kb, const float *vb,
                           const float *ob, const float *dob, const float *lb, const void *const *fn, float *dqb, float *dkb,
                           float *dvb) {
  float P[TILE * TILE], SL[TILE * TILE], dS[TILE * TILE], M[TILE * TILE], Dr[TILE];
  int64_t boff[8];
  batch_offsets(d, b, boff);
  memset(dqb, 0, sizeof(float) * (size_t)(d->Sq * d->D));
  memset(dkb, 0, sizeof(float) * (size_t)(d->Sk * d->D));
  memset(dvb, 0, sizeof(float) * (size_t)(d->Sk * d->Dv));
  for (int64_t i0 = 0; i0 < d->Sq; i0 += TILE) {
    int64_t m = d->Sq - i0 < TILE ? d->Sq - i0 : TILE;
    const float *go = dob + i0 * d->Dv, *oo = ob + i0 * d->Dv, *qi = qb + i0 * d->D;
    float *dqi = dqb + i0 * d->D;
    for (int64_t r = 0; r < m; r++) {
      Dr[r] = 0;
      for (int64_t e = 0; e < d->Dv; e++) Dr[r] += go[r * d->Dv + e] * oo[r * d->Dv + e];
    }
    for (int64_t j0 = 0; j0 < d->Sk; j0 += TILE) {
      int64_t n = d->Sk - j0 < TILE ? d->Sk - j0 : TILE;
      scores(d, qb, kb, i0, m, j0, n, P);
      for (int64_t r = 0; r < m; r++) {
        float L = lb[i0 + r];
        for (int64_t t = 0; t < n; t++)
          P[r * TILE + t] = expf(functor(d, fn, boff, i0 + r, j0 + t, P[r * TILE + t], &SL[r * TILE + t]) - L);
      }
      /* dP = dO V^T (into dS) */
      if (d->Dv == 0)
        for (int64_t t = 0; t < m * TILE; t++) dS[t] = 0;
      else if (d->vt)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)d->Dv, 1.0f, go, (int)d->Dv, vb + j0, (int)d->Sk,
                    0.0f, dS, TILE);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)d->Dv, 1.0f, go, (int)d->Dv, vb + j0 * d->Dv,
                    (int)d->Dv, 0.0f, dS, TILE);
      if (d->drop) { /* dP = dP_drop * mask / (1 - p); P_drop = P * mask / (1 - p) into M for dV */
        drop_tile(d, rt, b, i0, m, j0, n, M);
        for (int64_t r = 0; r < m; r++)
          for (int64_t t = 0; t < n; t++) dS[r * TILE + t] *= M[r * TILE + t], M[r * TILE + t] *= P[r * TILE + t];
      }
      for (int64_t r = 0; r < m; r++)
        for (int64_t t = 0; t < n; t++) dS[r * TILE + t] = P[r * TILE + t] * (dS[r * TILE + t] - Dr[r]) * SL[r * TILE + t];
      const float *PD = d->drop ? M : P;
      if (d->Dv) { /* dV += P_drop^T dO */
        if (d->vt)
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d->Dv, (int)n, (int)m, 1.0f, go, (int)d->Dv, PD, TILE, 1.0f,
                      dvb + j0, (int)d->Sk);
        else
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)d->Dv, (int)m, 1.0f, PD, TILE, go, (int)d->Dv, 1.0f,
                      dvb + j0 * d->Dv, (int)d->Dv);
      }
      if (d->D == 0) continue;
      if (d->kt) { /* dQ += dS K, dK += dS^T Q; K stored [D, Sk] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)d->D, (int)n, 1.0f, dS, TILE, kb + j0, (int)d->Sk, 1.0f, dqi,
                    (int)d->D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d->D, (int)n, (int)m, 1.0f, qi, (int)d->D, dS, TILE, 1.0f, dkb + j0,
                    (int)d->Sk);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)d->D, (int)n, 1.0f, dS, TILE, kb + j0 * d->D, (int)d->D,
                    1.0f, dqi, (int)d->D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)d->D, (int)m, 1.0f, dS, TILE, qi, (int)d->D, 1.0f,
                    dkb + j0 * d->D, (int)d->D);
      }
    }
  }
}

void galv_attention_f32(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn,
                        const int64_t *off, int64_t step, int64_t mb, float *o, float *lse) {
  drop_rt rt = drop_begin(d, off, step, mb);
  for (int64_t b = 0, B = batches(d); b < B; b++)
    forward_batch(d, &rt, b, q + b * d->Sq * d->D, k + b * d->Sk * d->D, v + b * d->Sk * d->Dv, fn, o + b * d->Sq * d->Dv, lse + b * d->Sq);
}

void galv_attention_grad_f32(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const float *o,
                             const float *dout, const float *lse, const void *const *fn, const int64_t *off, int64_t step, int64_t mb,
                             float *dq, float *dk, float *dv) {
  drop_rt rt = drop_begin(d, off, step, mb);
  for (int64_t b = 0, B = batches(d); b < B; b++) {
    int64_t qo = b * d->Sq * d->D, ko = b * d->Sk * d->D, vo = b * d->Sk * d->Dv, oo = b * d->Sq * d->Dv;
    backward_batch(d, &rt, b, q + qo, k + ko, v + vo, o + oo, dout + oo, lse + b * d->Sq, fn, dq + qo, dk + ko, dv + vo);
  }
}

/* 16-bit storage (dt GALV_BF16 / GALV_F16; docs/cpu-target.md, "16-bit storage"): q, k, v (o, do) of one
 * batch slice at a time widened into fp32 scratch (exact), the fp32 algorithm above, and o (dq, dk, dv)
 * narrowed from its fp32 result (round-to-nearest-even), as the CUDA kernels load 16 bits, compute in
 * fp32 and store 16 bits once; lse is fp32 storage. */
static float *slice_scratch(int64_t floats) {
  float *p = malloc(sizeof(float) * (size_t)(floats > 0 ? floats : 1));
  if (!p) {
    fprintf(stderr, "error: galv_attention: out of memory for a %lld-float slice\n", (long long)floats);
    exit(1);
  }
  return p;
}

static void attention16(int dt, const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const void *const *fn,
                        const drop_rt *rt, uint16_t *o, float *lse) {
  int64_t nq = d->Sq * d->D, nk = d->Sk * d->D, nv = d->Sk * d->Dv, no = d->Sq * d->Dv;
  float *qb = slice_scratch(nq + nk + nv + no), *kb = qb + nq, *vb = kb + nk, *ob = vb + nv;
  for (int64_t b = 0, B = batches(d); b < B; b++) {
    galv_widen16(dt, qb, q + b * nq, nq), galv_widen16(dt, kb, k + b * nk, nk), galv_widen16(dt, vb, v + b * nv, nv);
    forward_batch(d, rt, b, qb, kb, vb, fn, ob, lse + b * d->Sq);
    galv_narrow16(dt, o + b * no, ob, no);
  }
  free(qb);
}

static void attention_grad16(int dt, const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                             const uint16_t *dout, const float *lse, const void *const *fn, const drop_rt *rt, uint16_t *dq,
                             uint16_t *dk, uint16_t *dv) {
  int64_t nq = d->Sq * d->D, nk = d->Sk * d->D, nv = d->Sk * d->Dv, no = d->Sq * d->Dv;
  float *qb = slice_scratch(2 * (nq + nk + nv) + 2 * no), *kb = qb + nq, *vb = kb + nk, *ob = vb + nv, *gb = ob + no;
  float *dqb = gb + no, *dkb = dqb + nq, *dvb = dkb + nk;
  for (int64_t b = 0, B = batches(d); b < B; b++) {
    galv_widen16(dt, qb, q + b * nq, nq), galv_widen16(dt, kb, k + b * nk, nk), galv_widen16(dt, vb, v + b * nv, nv);
    galv_widen16(dt, ob, o + b * no, no), galv_widen16(dt, gb, dout + b * no, no);
    backward_batch(d, rt, b, qb, kb, vb, ob, gb, lse + b * d->Sq, fn, dqb, dkb, dvb);
    galv_narrow16(dt, dq + b * nq, dqb, nq), galv_narrow16(dt, dk + b * nk, dkb, nk), galv_narrow16(dt, dv + b * nv, dvb, nv);
  }
  free(qb);
}

void galv_attention_bf16(const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const void *const *fn,
                         const int64_t *off, int64_t step, int64_t mb, uint16_t *o, float *lse) {
  drop_rt rt = drop_begin(d, off, step, mb);
  attention16(GALV_BF16, d, q, k, v, fn, &rt, o, lse);
}
void galv_attention_f16(const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const void *const *fn,
                        const int64_t *off, int64_t step, int64_t mb, uint16_t *o, float *lse) {
  drop_rt rt = drop_begin(d, off, step, mb);
  attention16(GALV_F16, d, q, k, v, fn, &rt, o, lse);
}
void galv_attention_grad_bf16(const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                              const uint16_t *dout, const float *lse, const void *const *fn, const int64_t *off, int64_t step,
                              int64_t mb, uint16_t *dq, uint16_t *dk, uint16_t *dv) {
  drop_rt rt = drop_begin(d, off, step, mb);
  attention_grad16(GALV_BF16, d, q, k, v, o, dout, lse, fn, &rt, dq, dk, dv);
}
void galv_attention_grad_f16(const galv_fattn_desc *d, const uint16_t *q, const uint16_t *k, const uint16_t *v, const uint16_t *o,
                             const uint16_t *dout, const float *lse, const void *const *fn, const int64_t *off, int64_t step,
                             int64_t mb, uint16_t *dq, uint16_t *dk, uint16_t *dv) {
  drop_rt rt = drop_begin(d, off, step, mb);
  attention_grad16(GALV_F16, d, q, k, v, o, dout, lse, fn, &rt, dq, dk, dv);
}
