/* fused_attention.cuh — the CUDA target's galv.attention and
 * galv.attention_grad (docs/fused-attention.md), fp32 storage: the program
 * includes it when it has them (codegen/cuda/emit.c). The descriptor is
 * the CPU target's (galv_fattn_desc, runtime/galv_rt.h) and the score
 * functor is interpreted as runtime/attention.c does. One thread per query
 * row: the forward runs an online softmax over the keys and accumulates o
 * in place; the backward recomputes each score from lse, keeps its row of
 * dq and adds into dk / dv atomically (zeroed first). No S x S buffer. */
#ifndef GALV_FUSED_ATTENTION_CUH
#define GALV_FUSED_ATTENTION_CUH

struct galv_fattn_ptrs {
  const void *p[8];
};

__device__ static inline int64_t fattn_q(const galv_fattn_desc &d, int64_t b, int64_t i, int64_t x) { return (b * d.Sq + i) * d.D + x; }
__device__ static inline int64_t fattn_k(const galv_fattn_desc &d, int64_t b, int64_t j, int64_t x) {
  return d.kt ? (b * d.D + x) * d.Sk + j : (b * d.Sk + j) * d.D + x;
}
__device__ static inline int64_t fattn_v(const galv_fattn_desc &d, int64_t b, int64_t j, int64_t e) {
  return d.vt ? (b * d.Dv + e) * d.Sk + j : (b * d.Sk + j) * d.Dv + e;
}

__device__ static inline void fattn_boff(const galv_fattn_desc &d, int64_t b, int64_t *off) {
  for (int f = 0; f < d.nfn; f++) off[f] = 0;
  for (int x = d.nb - 1; x >= 0; x--) {
    int64_t ix = b % d.bd[x];
    b /= d.bd[x];
    for (int f = 0; f < d.nfn; f++) off[f] += ix * d.fst[f][x];
  }
}

/* f(s) at score (i, j); *slope = f'(s) */
__device__ static inline float fattn_functor(const galv_fattn_desc &d, const galv_fattn_ptrs &fn, const int64_t *boff, int64_t i,
                                             int64_t j, float s, float *slope) {
  float fv[8], sl = 1.0f;
  for (int f = 0; f < d.nfn; f++) {
    int64_t at = boff[f] + i * d.fst[f][d.nb] + j * d.fst[f][d.nb + 1];
    fv[f] = d.fbool[f] ? (float)(((const unsigned char *)fn.p[f])[at] != 0) : ((const float *)fn.p[f])[at];
  }
  for (int t = 0; t < d.nst; t++) {
    const galv_fattn_step &x = d.st[t];
    float a[3];
    for (int u = 0; u < x.nargs; u++) a[u] = x.arg[u] == -1 ? s : x.arg[u] == -2 ? x.lit[u] : fv[x.arg[u]];
    switch (x.kind) {
    case 0: s = a[0] + a[1]; break;
    case 1: s = a[0] - a[1], sl *= x.arg[0] == -1 ? 1.0f : -1.0f; break;
    case 2: s = a[0] * a[1], sl *= x.arg[0] == -1 ? a[1] : a[0]; break;
    case 3: s = a[0] / a[1], sl /= a[1]; break;
    default:
      s = a[0] != 0.0f ? a[1] : a[2];
      sl *= (a[0] != 0.0f) == (x.arg[1] == -1) ? 1.0f : 0.0f;
    }
  }
  if (slope) *slope = sl;
  return s;
}

__device__ static inline float fattn_score(const galv_fattn_desc &d, const float *q, const float *k, int64_t b, int64_t i, int64_t j) {
  float s = 0.0f;
  for (int64_t x = 0; x < d.D; x++) s += q[fattn_q(d, b, i, x)] * k[fattn_k(d, b, j, x)];
  return s;
}

__global__ static void galv_fattn_fwd_k(galv_fattn_desc d, const float *q, const float *k, const float *v, galv_fattn_ptrs fn,
                                        float *o, float *lse, int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  float *acc = o + r * d.Dv, mx = -INFINITY, l = 0.0f;
  for (int64_t e = 0; e < d.Dv; e++) acc[e] = 0.0f;
  for (int64_t j = 0; j < d.Sk; j++) {
    float s = fattn_functor(d, fn, boff, i, j, fattn_score(d, q, k, b, i, j), nullptr);
    if (s == -INFINITY) continue;
    if (s > mx) { /* rescale what is accumulated */
      float c = expf(mx - s);
      l *= c;
      for (int64_t e = 0; e < d.Dv; e++) acc[e] *= c;
      mx = s;
    }
    float w = expf(s - mx);
    l += w;
    for (int64_t e = 0; e < d.Dv; e++) acc[e] += w * v[fattn_v(d, b, j, e)];
  }
  for (int64_t e = 0; e < d.Dv; e++) acc[e] /= l;
  lse[r] = mx + logf(l);
}

__global__ static void galv_fattn_bwd_k(galv_fattn_desc d, const float *q, const float *k, const float *v, const float *o,
                                        const float *dout, const float *lse, galv_fattn_ptrs fn, float *dq, float *dk, float *dv,
                                        int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  const float *go = dout + r * d.Dv, *oo = o + r * d.Dv;
  float Dr = 0.0f, L = lse[r];
  for (int64_t e = 0; e < d.Dv; e++) Dr += go[e] * oo[e];
  for (int64_t x = 0; x < d.D; x++) dq[fattn_q(d, b, i, x)] = 0.0f;
  for (int64_t j = 0; j < d.Sk; j++) {
    float sl, s = fattn_functor(d, fn, boff, i, j, fattn_score(d, q, k, b, i, j), &sl);
    float p = expf(s - L), dp = 0.0f;
    if (p == 0.0f) continue; /* masked: no gradient anywhere */
    for (int64_t e = 0; e < d.Dv; e++) {
      dp += go[e] * v[fattn_v(d, b, j, e)];
      atomicAdd(dv + fattn_v(d, b, j, e), p * go[e]);
    }
    float ds = p * (dp - Dr) * sl;
    for (int64_t x = 0; x < d.D; x++) {
      dq[fattn_q(d, b, i, x)] += ds * k[fattn_k(d, b, j, x)];
      atomicAdd(dk + fattn_k(d, b, j, x), ds * q[fattn_q(d, b, i, x)]);
    }
  }
}

static inline galv_fattn_ptrs galv_fattn_pack(const void *const *fn, int n) {
  galv_fattn_ptrs p;
  for (int f = 0; f < 8; f++) p.p[f] = f < n ? fn[f] : nullptr;
  return p;
}

static inline int64_t galv_fattn_rows(const galv_fattn_desc *d) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  return B * d->Sq;
}

static void galv_cu_fattn(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn, float *o,
                          float *lse) {
  int64_t rows = galv_fattn_rows(d);
  if (rows == 0) return;
  GALV_LAUNCH(galv_fattn_fwd_k, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, galv_fattn_pack(fn, d->nfn),
              o, lse, rows);
  GALV_CU_LAUNCHED();
}

static void galv_cu_fattn_grad(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const float *o,
                               const float *dout, const float *lse, const void *const *fn, float *dq, float *dk, float *dv) {
  int64_t rows = galv_fattn_rows(d), B = rows / (d->Sq ? d->Sq : 1);
  cudaCheck(cudaMemsetAsync(dk, 0, (size_t)(B * d->Sk * d->D) * sizeof(float), galv_cu.stream));
  cudaCheck(cudaMemsetAsync(dv, 0, (size_t)(B * d->Sk * d->Dv) * sizeof(float), galv_cu.stream));
  if (rows == 0) return;
  GALV_LAUNCH(galv_fattn_bwd_k, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, o, dout, lse,
              galv_fattn_pack(fn, d->nfn), dq, dk, dv, rows);
  GALV_CU_LAUNCHED();
}

#endif
