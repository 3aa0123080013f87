/* attention.c — the CPU target's galv.attention and galv.attention_grad
 * (docs/fused-attention.md): blocks of 64 queries x 64 keys, never more
 * than one block of scores, each product a cblas_sgemm. The forward runs
 * an online softmax over the key blocks and writes o and each row's
 * logsumexp; the backward (FlashAttention-2) recomputes a block's scores,
 * P = exp(f(S) - lse), dP = dO V^T, dS = P (dP - rowsum(dO * o)) f'(S),
 * and adds dV += P^T dO, dQ += dS K, dK += dS^T Q. The score functor f is
 * the step table of the descriptor (galv_rt.h). */
#include <cblas.h>
#include <math.h>
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

/* f(s) at score (i, j); *slope = f'(s) */
static float functor(const galv_fattn_desc *d, const void *const *fn, const int64_t *boff, int64_t i, int64_t j, float s,
                     float *slope) {
  float fv[8], sl = 1;
  for (int f = 0; f < d->nfn; f++) {
    int64_t at = boff[f] + i * d->fst[f][d->nb] + j * d->fst[f][d->nb + 1];
    fv[f] = d->fbool[f] ? (float)(((const unsigned char *)fn[f])[at] != 0) : ((const float *)fn[f])[at];
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

/* S[m x n] = Q rows i0.. (m x D) times K rows j0.. transposed, for batch b */
static void scores(const galv_fattn_desc *d, const float *q, const float *k, int64_t b, int64_t i0, int64_t m, int64_t j0, int64_t n,
                   float *S) {
  const float *qb = q + (b * d->Sq + i0) * d->D, *kb = k + b * d->Sk * d->D;
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

void galv_attention_f32(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn, float *o,
                        float *lse) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  float S[TILE * TILE], mx[TILE], l[TILE];
  for (int64_t b = 0; b < B; b++) {
    int64_t boff[8];
    batch_offsets(d, b, boff);
    const float *vb = v + b * d->Sk * d->Dv;
    for (int64_t i0 = 0; i0 < d->Sq; i0 += TILE) {
      int64_t m = d->Sq - i0 < TILE ? d->Sq - i0 : TILE;
      float *ob = o + (b * d->Sq + i0) * d->Dv;
      memset(ob, 0, sizeof(float) * (size_t)(m * d->Dv));
      for (int64_t r = 0; r < m; r++) mx[r] = -INFINITY, l[r] = 0;
      for (int64_t j0 = 0; j0 < d->Sk; j0 += TILE) {
        int64_t n = d->Sk - j0 < TILE ? d->Sk - j0 : TILE;
        scores(d, q, k, b, i0, m, j0, n, S);
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
          for (int64_t e = 0; e < d->Dv; e++) ob[r * d->Dv + e] *= c;
          for (int64_t t = 0; t < n; t++) l[r] += row[t] = expf(row[t] - nm);
          mx[r] = nm;
        }
        if (d->Dv == 0) continue;
        if (d->vt) /* V stored [Dv, Sk] */
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)d->Dv, (int)n, 1.0f, S, TILE, vb + j0, (int)d->Sk, 1.0f,
                      ob, (int)d->Dv);
        else
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)d->Dv, (int)n, 1.0f, S, TILE, vb + j0 * d->Dv,
                      (int)d->Dv, 1.0f, ob, (int)d->Dv);
      }
      for (int64_t r = 0; r < m; r++) {
        for (int64_t e = 0; e < d->Dv; e++) ob[r * d->Dv + e] /= l[r];
        lse[b * d->Sq + i0 + r] = mx[r] + logf(l[r]);
      }
    }
  }
}

void galv_attention_grad_f32(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const float *o,
                             const float *dout, const float *lse, const void *const *fn, float *dq, float *dk, float *dv) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  memset(dq, 0, sizeof(float) * (size_t)(B * d->Sq * d->D));
  memset(dk, 0, sizeof(float) * (size_t)(B * d->Sk * d->D));
  memset(dv, 0, sizeof(float) * (size_t)(B * d->Sk * d->Dv));
  float P[TILE * TILE], SL[TILE * TILE], dS[TILE * TILE], Dr[TILE];
  for (int64_t b = 0; b < B; b++) {
    int64_t boff[8];
    batch_offsets(d, b, boff);
    const float *vb = v + b * d->Sk * d->Dv, *kb = k + b * d->Sk * d->D;
    float *dvb = dv + b * d->Sk * d->Dv, *dkb = dk + b * d->Sk * d->D;
    for (int64_t i0 = 0; i0 < d->Sq; i0 += TILE) {
      int64_t m = d->Sq - i0 < TILE ? d->Sq - i0 : TILE;
      const float *go = dout + (b * d->Sq + i0) * d->Dv, *oo = o + (b * d->Sq + i0) * d->Dv, *qb = q + (b * d->Sq + i0) * d->D;
      float *dqb = dq + (b * d->Sq + i0) * d->D;
      for (int64_t r = 0; r < m; r++) {
        Dr[r] = 0;
        for (int64_t e = 0; e < d->Dv; e++) Dr[r] += go[r * d->Dv + e] * oo[r * d->Dv + e];
      }
      for (int64_t j0 = 0; j0 < d->Sk; j0 += TILE) {
        int64_t n = d->Sk - j0 < TILE ? d->Sk - j0 : TILE;
        scores(d, q, k, b, i0, m, j0, n, P);
        for (int64_t r = 0; r < m; r++) {
          float L = lse[b * d->Sq + i0 + r];
          for (int64_t t = 0; t < n; t++)
            P[r * TILE + t] = expf(functor(d, fn, boff, i0 + r, j0 + t, P[r * TILE + t], &SL[r * TILE + t]) - L);
        }
        /* dP = dO V^T (into dS) */
        if (d->Dv == 0)
          for (int64_t t = 0; t < m * TILE; t++) dS[t] = 0;
        else if (d->vt)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)d->Dv, 1.0f, go, (int)d->Dv, vb + j0,
                      (int)d->Sk, 0.0f, dS, TILE);
        else
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)d->Dv, 1.0f, go, (int)d->Dv, vb + j0 * d->Dv,
                      (int)d->Dv, 0.0f, dS, TILE);
        for (int64_t r = 0; r < m; r++)
          for (int64_t t = 0; t < n; t++) dS[r * TILE + t] = P[r * TILE + t] * (dS[r * TILE + t] - Dr[r]) * SL[r * TILE + t];
        if (d->Dv) { /* dV += P^T dO */
          if (d->vt)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d->Dv, (int)n, (int)m, 1.0f, go, (int)d->Dv, P, TILE, 1.0f,
                        dvb + j0, (int)d->Sk);
          else
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)d->Dv, (int)m, 1.0f, P, TILE, go, (int)d->Dv, 1.0f,
                        dvb + j0 * d->Dv, (int)d->Dv);
        }
        if (d->D == 0) continue;
        if (d->kt) { /* dQ += dS K, dK += dS^T Q; K stored [D, Sk] */
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)d->D, (int)n, 1.0f, dS, TILE, kb + j0, (int)d->Sk, 1.0f,
                      dqb, (int)d->D);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d->D, (int)n, (int)m, 1.0f, qb, (int)d->D, dS, TILE, 1.0f,
                      dkb + j0, (int)d->Sk);
        } else {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)d->D, (int)n, 1.0f, dS, TILE, kb + j0 * d->D,
                      (int)d->D, 1.0f, dqb, (int)d->D);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, (int)d->D, (int)m, 1.0f, dS, TILE, qb, (int)d->D, 1.0f,
                      dkb + j0 * d->D, (int)d->D);
        }
      }
    }
  }
}
