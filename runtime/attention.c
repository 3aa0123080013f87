/* attention.c — the CPU target's galv.attention and galv.attention_grad
 * (docs/fused-attention.md): fp32 loops that never hold more than one tile
 * of scores. The forward runs an online softmax over key tiles of 64 per
 * query row and writes o and the row's logsumexp; the backward recomputes
 * each score from lse (FlashAttention-2): P = exp(f(s) - lse),
 * dS = P (dO.v - rowsum(dO * o)) f'(s). The score functor f is the step
 * table of the descriptor (galv_rt.h). */
#include <math.h>
#include <string.h>

#include "galv_rt.h"

enum { TILE = 64 };

static int64_t q_at(const galv_fattn_desc *d, int64_t b, int64_t i, int64_t x) { return (b * d->Sq + i) * d->D + x; }
static int64_t k_at(const galv_fattn_desc *d, int64_t b, int64_t j, int64_t x) {
  return d->kt ? (b * d->D + x) * d->Sk + j : (b * d->Sk + j) * d->D + x;
}
static int64_t v_at(const galv_fattn_desc *d, int64_t b, int64_t j, int64_t e) {
  return d->vt ? (b * d->Dv + e) * d->Sk + j : (b * d->Sk + j) * d->Dv + e;
}

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

static float score(const galv_fattn_desc *d, const float *q, const float *k, int64_t b, int64_t i, int64_t j) {
  float s = 0;
  for (int64_t x = 0; x < d->D; x++) s += q[q_at(d, b, i, x)] * k[k_at(d, b, j, x)];
  return s;
}

void galv_attention_f32(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn, float *o,
                        float *lse) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  float p[TILE];
  for (int64_t b = 0; b < B; b++) {
    int64_t boff[8];
    batch_offsets(d, b, boff);
    for (int64_t i = 0; i < d->Sq; i++) {
      float *acc = o + (b * d->Sq + i) * d->Dv, mx = -INFINITY, l = 0;
      memset(acc, 0, sizeof(float) * (size_t)d->Dv);
      for (int64_t j0 = 0; j0 < d->Sk; j0 += TILE) {
        int64_t n = d->Sk - j0 < TILE ? d->Sk - j0 : TILE;
        float tmax = -INFINITY;
        for (int64_t t = 0; t < n; t++) {
          p[t] = functor(d, fn, boff, i, j0 + t, score(d, q, k, b, i, j0 + t), NULL);
          if (p[t] > tmax) tmax = p[t];
        }
        float nm = tmax > mx ? tmax : mx;
        if (nm == -INFINITY) continue; /* nothing but -inf so far */
        float c = expf(mx - nm);
        l *= c;
        for (int64_t e = 0; e < d->Dv; e++) acc[e] *= c;
        for (int64_t t = 0; t < n; t++) {
          float w = expf(p[t] - nm);
          l += w;
          for (int64_t e = 0; e < d->Dv; e++) acc[e] += w * v[v_at(d, b, j0 + t, e)];
        }
        mx = nm;
      }
      for (int64_t e = 0; e < d->Dv; e++) acc[e] /= l;
      lse[b * d->Sq + i] = mx + logf(l);
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
  for (int64_t b = 0; b < B; b++) {
    int64_t boff[8];
    batch_offsets(d, b, boff);
    for (int64_t i = 0; i < d->Sq; i++) {
      const float *go = dout + (b * d->Sq + i) * d->Dv, *oo = o + (b * d->Sq + i) * d->Dv;
      float Dr = 0, L = lse[b * d->Sq + i];
      for (int64_t e = 0; e < d->Dv; e++) Dr += go[e] * oo[e];
      for (int64_t j = 0; j < d->Sk; j++) {
        float sl, s = functor(d, fn, boff, i, j, score(d, q, k, b, i, j), &sl);
        float p = expf(s - L), dp = 0;
        if (p == 0) continue; /* masked: no gradient anywhere */
        for (int64_t e = 0; e < d->Dv; e++) {
          dp += go[e] * v[v_at(d, b, j, e)];
          dv[v_at(d, b, j, e)] += p * go[e];
        }
        float ds = p * (dp - Dr) * sl;
        for (int64_t x = 0; x < d->D; x++) {
          dq[q_at(d, b, i, x)] += ds * k[k_at(d, b, j, x)];
          dk[k_at(d, b, j, x)] += ds * q[q_at(d, b, i, x)];
        }
      }
    }
  }
}
