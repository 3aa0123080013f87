/* fused_attention.cuh — the CUDA target's galv.attention and
 * galv.attention_grad (docs/fused-attention.md): the program includes it
 * when it has them (codegen/cuda/emit.c). The descriptor is the CPU
 * target's (galv_fattn_desc, runtime/galv_rt.h) and the score functor is
 * interpreted as runtime/attention.c does. One thread per query row: the
 * forward runs an online softmax over the keys and accumulates o; the
 * backward recomputes each score from lse, keeps its row of dq and adds
 * into dk / dv atomically (zeroed first). No S x S buffer. The kernels are
 * templated on the storage of q, k, v, o, do and the gradients (float,
 * __nv_bfloat16, __half; lse is fp32): 16-bit values are loaded into fp32,
 * o and the gradients accumulate in fp32 (in place for float storage, in
 * the caller's scratch for 16-bit) and a 16-bit result is rounded once
 * (round-to-nearest-even) when stored. */
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

__device__ static inline float fattn_f(float x) { return x; }
__device__ static inline float fattn_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ static inline float fattn_f(__half x) { return __half2float(x); }
__device__ static inline void fattn_put(float *p, float x) { *p = x; }
__device__ static inline void fattn_put(__nv_bfloat16 *p, float x) { *p = __float2bfloat16(x); }
__device__ static inline void fattn_put(__half *p, float x) { *p = __float2half(x); }

/* element at of functor operand p stored as dt (a bool condition as 0 / 1) */
__device__ static inline float fattn_load(int dt, const void *p, int64_t at) {
  switch (dt) {
  case GALV_BOOL: return (float)(((const unsigned char *)p)[at] != 0);
  case GALV_BF16: return fattn_f(((const __nv_bfloat16 *)p)[at]);
  case GALV_F16: return fattn_f(((const __half *)p)[at]);
  default: return ((const float *)p)[at];
  }
}

/* f(s) at score (i, j); *slope = f'(s) */
__device__ static inline float fattn_functor(const galv_fattn_desc &d, const galv_fattn_ptrs &fn, const int64_t *boff, int64_t i,
                                             int64_t j, float s, float *slope) {
  float fv[8], sl = 1.0f;
  for (int f = 0; f < d.nfn; f++) {
    int64_t at = boff[f] + i * d.fst[f][d.nb] + j * d.fst[f][d.nb + 1];
    fv[f] = fattn_load(d.fdt[f], fn.p[f], at);
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

template <typename T>
__device__ static inline float fattn_score(const galv_fattn_desc &d, const T *q, const T *k, int64_t b, int64_t i, int64_t j) {
  float s = 0.0f;
  for (int64_t x = 0; x < d.D; x++) s += fattn_f(q[fattn_q(d, b, i, x)]) * fattn_f(k[fattn_k(d, b, j, x)]);
  return s;
}

/* acc: the fp32 accumulator of o (o itself for float storage) */
template <typename T>
__global__ static void galv_fattn_fwd_k(galv_fattn_desc d, const T *q, const T *k, const T *v, galv_fattn_ptrs fn, T *o, float *accp,
                                        float *lse, int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  float *acc = accp + r * d.Dv, mx = -INFINITY, l = 0.0f;
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
    for (int64_t e = 0; e < d.Dv; e++) acc[e] += w * fattn_f(v[fattn_v(d, b, j, e)]);
  }
  for (int64_t e = 0; e < d.Dv; e++) fattn_put(o + r * d.Dv + e, acc[e] / l);
  lse[r] = mx + logf(l);
}

/* dq, dk, dv: fp32 (the results for float storage, scratch for 16-bit) */
template <typename T>
__global__ static void galv_fattn_bwd_k(galv_fattn_desc d, const T *q, const T *k, const T *v, const T *o, const T *dout,
                                        const float *lse, galv_fattn_ptrs fn, float *dq, float *dk, float *dv, int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  const T *go = dout + r * d.Dv, *oo = o + r * d.Dv;
  float Dr = 0.0f, L = lse[r];
  for (int64_t e = 0; e < d.Dv; e++) Dr += fattn_f(go[e]) * fattn_f(oo[e]);
  for (int64_t x = 0; x < d.D; x++) dq[fattn_q(d, b, i, x)] = 0.0f;
  for (int64_t j = 0; j < d.Sk; j++) {
    float sl, s = fattn_functor(d, fn, boff, i, j, fattn_score(d, q, k, b, i, j), &sl);
    float p = expf(s - L), dp = 0.0f;
    if (p == 0.0f) continue; /* masked: no gradient anywhere */
    for (int64_t e = 0; e < d.Dv; e++) {
      float g = fattn_f(go[e]);
      dp += g * fattn_f(v[fattn_v(d, b, j, e)]);
      atomicAdd(dv + fattn_v(d, b, j, e), p * g);
    }
    float ds = p * (dp - Dr) * sl;
    for (int64_t x = 0; x < d.D; x++) {
      dq[fattn_q(d, b, i, x)] += ds * fattn_f(k[fattn_k(d, b, j, x)]);
      atomicAdd(dk + fattn_k(d, b, j, x), ds * fattn_f(q[fattn_q(d, b, i, x)]));
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

template <typename T>
static inline void galv_fattn_fwd(const galv_fattn_desc *d, const T *q, const T *k, const T *v, const void *const *fn, T *o, float *acc, float *lse) {
  int64_t rows = galv_fattn_rows(d);
  if (rows == 0) return;
  GALV_LAUNCH(galv_fattn_fwd_k<T>, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, galv_fattn_pack(fn, d->nfn),
              o, acc, lse, rows);
  GALV_CU_LAUNCHED();
}

template <typename T>
static inline void galv_fattn_bwd(const galv_fattn_desc *d, const T *q, const T *k, const T *v, const T *o, const T *dout, const float *lse,
                           const void *const *fn, float *dq, float *dk, float *dv) {
  int64_t rows = galv_fattn_rows(d), B = rows / (d->Sq ? d->Sq : 1);
  cudaCheck(cudaMemsetAsync(dk, 0, (size_t)(B * d->Sk * d->D) * sizeof(float), galv_cu.stream));
  cudaCheck(cudaMemsetAsync(dv, 0, (size_t)(B * d->Sk * d->Dv) * sizeof(float), galv_cu.stream));
  if (rows == 0) return;
  GALV_LAUNCH(galv_fattn_bwd_k<T>, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, o, dout, lse,
              galv_fattn_pack(fn, d->nfn), dq, dk, dv, rows);
  GALV_CU_LAUNCHED();
}

/* fp32 storage: o, dq, dk, dv accumulate in place */
static inline void galv_cu_fattn(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn, float *o,
                          float *lse) {
  galv_fattn_fwd(d, q, k, v, fn, o, o, lse);
}

static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const float *o,
                               const float *dout, const float *lse, const void *const *fn, float *dq, float *dk, float *dv) {
  galv_fattn_bwd(d, q, k, v, o, dout, lse, fn, dq, dk, dv);
}

/* 16-bit storage: the fp32 accumulators in scratch (the emitter reserves them: B Sq Dv floats for the forward's
 * o; for the backward dq, dk, dv, each 64-byte aligned), the 16-bit results converted from them */
static inline int64_t galv_fattn_al(int64_t bytes) { return (bytes + 63) / 64 * 64; }
template <typename T>
static inline void galv_cu_fattn16_grad(int dt, const galv_fattn_desc *d, const T *q, const T *k, const T *v, const T *o, const T *dout,
                                 const float *lse, const void *const *fn, T *dq, T *dk, T *dv, char *scratch) {
  int64_t rows = galv_fattn_rows(d), B = rows / (d->Sq ? d->Sq : 1);
  int64_t nq = rows * d->D, nk = B * d->Sk * d->D, nv = B * d->Sk * d->Dv;
  float *dq32 = (float *)scratch, *dk32 = (float *)(scratch + galv_fattn_al(nq * 4)),
        *dv32 = (float *)(scratch + galv_fattn_al(nq * 4) + galv_fattn_al(nk * 4));
  galv_fattn_bwd(d, q, k, v, o, dout, lse, fn, dq32, dk32, dv32);
  galv_cu_from_f32(dt, dq, dq32, nq);
  galv_cu_from_f32(dt, dk, dk32, nk);
  galv_cu_from_f32(dt, dv, dv32, nv);
}
static inline void galv_cu_fattn(const galv_fattn_desc *d, const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                          const void *const *fn, __nv_bfloat16 *o, float *lse, char *scratch) {
  galv_fattn_fwd(d, q, k, v, fn, o, (float *)scratch, lse);
}
static inline void galv_cu_fattn(const galv_fattn_desc *d, const __half *q, const __half *k, const __half *v, const void *const *fn, __half *o,
                          float *lse, char *scratch) {
  galv_fattn_fwd(d, q, k, v, fn, o, (float *)scratch, lse);
}
static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                               const __nv_bfloat16 *o, const __nv_bfloat16 *dout, const float *lse, const void *const *fn,
                               __nv_bfloat16 *dq, __nv_bfloat16 *dk, __nv_bfloat16 *dv, char *scratch) {
  galv_cu_fattn16_grad(GALV_BF16, d, q, k, v, o, dout, lse, fn, dq, dk, dv, scratch);
}
static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const __half *q, const __half *k, const __half *v, const __half *o,
                               const __half *dout, const float *lse, const void *const *fn, __half *dq, __half *dk, __half *dv,
                               char *scratch) {
  galv_cu_fattn16_grad(GALV_F16, d, q, k, v, o, dout, lse, fn, dq, dk, dv, scratch);
}

#endif
