/* attention.cuh — fused attention: out = softmax(score(Q K^T)) V in one
 * kernel, with tiling over the keys and an online softmax, so the Sq x Sk
 * score matrix never lives in global memory (FlashAttention's idea, in its
 * simplest form). codegen/cuda recognises the chain
 *     dot(Q, K) -> [elementwise: scale, mask add / where] -> softmax -> dot(P, V)
 * and instantiates galv_attention<T, Score> in program.cu with a generated
 * Score functor: the elementwise middle op applied to one score, reading its
 * other operands (the mask, the scale) by the score's flat index
 * e = (b * Sq + i) * Sk + j. Without a middle op Score is the identity.
 *
 * Layout: one warp per query row, ATT_ROWS rows per block; each block walks
 * the keys in tiles of 32 staged in shared memory (K padded against bank
 * conflicts); lane j scores key j of the tile, lanes own output dims
 * d = lane + 32 t. Head dims up to ATT_DMAX; larger heads take the unfused
 * path (the emitter checks). Header-only because Score is generated. */
#ifndef GALV_ATTENTION_CUH
#define GALV_ATTENTION_CUH

#include "galv_cuda.h"

#define ATT_ROWS 4
#define ATT_DMAX 128

typedef struct {
  int nb;                      /* batch dims (up to 4) */
  int64_t bdims[4], qb[4], kb[4], vb[4];
  int64_t Sq, Sk, D, Dv;
  int64_t qi, qd;              /* Q strides: row, head dim */
  int64_t kj, kd;              /* K strides: key, head dim */
  int64_t vj, vd;              /* V strides: key, value dim */
} galv_attn_desc;              /* out: contiguous [batch..., Sq, Dv] */

struct galv_attn_identity {
  __device__ float operator()(float s, int64_t) const { return s; }
};

__device__ static inline float att_ld(const float *p, int64_t i) { return p[i]; }
__device__ static inline float att_ld(const galv_bf16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ static inline void att_st(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void att_st(galv_bf16 *p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ static inline float att_ld(const galv_f16 *p, int64_t i) { return __half2float(p[i]); }
__device__ static inline void att_st(galv_f16 *p, int64_t i, float v) { p[i] = __float2half(v); }

template <typename T, typename Score>
__global__ void __launch_bounds__(ATT_ROWS * 32)
galv_attention_k(T *out, const T *q, const T *k, const T *v, galv_attn_desc a, Score score) {
  __shared__ float ks[32][ATT_DMAX + 1], vs[32][ATT_DMAX], qs[ATT_ROWS][ATT_DMAX];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t b = blockIdx.y, i = (int64_t)blockIdx.x * ATT_ROWS + warp;
  int64_t qo = 0, ko = 0, vo = 0, r = b;
  for (int d = a.nb - 1; d >= 0; d--) {
    int64_t t = r % a.bdims[d];
    r /= a.bdims[d];
    qo += t * a.qb[d], ko += t * a.kb[d], vo += t * a.vb[d];
  }
  const bool live = i < a.Sq;
  if (live)
    for (int64_t d = lane; d < a.D; d += 32) qs[warp][d] = att_ld(q, qo + i * a.qi + d * a.qd);
  float m = -INFINITY, l = 0.0f, acc[ATT_DMAX / 32];
  for (int t = 0; t < ATT_DMAX / 32; t++) acc[t] = 0.0f;
  for (int64_t j0 = 0; j0 < a.Sk; j0 += 32) {
    __syncthreads(); /* the previous tile is consumed (and qs written) */
    for (int64_t x = threadIdx.x; x < 32 * a.D; x += blockDim.x) {
      int64_t jj = x / a.D, d = x % a.D;
      ks[jj][d] = j0 + jj < a.Sk ? att_ld(k, ko + (j0 + jj) * a.kj + d * a.kd) : 0.0f;
    }
    for (int64_t x = threadIdx.x; x < 32 * a.Dv; x += blockDim.x) {
      int64_t jj = x / a.Dv, d = x % a.Dv;
      vs[jj][d] = j0 + jj < a.Sk ? att_ld(v, vo + (j0 + jj) * a.vj + d * a.vd) : 0.0f;
    }
    __syncthreads();
    if (!live) continue;
    const int64_t j = j0 + lane;
    float s = -INFINITY;
    if (j < a.Sk) {
      float dot = 0.0f;
      for (int64_t d = 0; d < a.D; d++) dot += qs[warp][d] * ks[lane][d];
      s = score(dot, (b * a.Sq + i) * a.Sk + j);
    }
    float mt = s;
    for (int o = 16; o; o >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, o));
    const float mn = fmaxf(m, mt);
    const float p = mn == -INFINITY ? 0.0f : expf(s - mn), alpha = m == -INFINITY ? 0.0f : expf(m - mn);
    float ps = p;
    for (int o = 16; o; o >>= 1) ps += __shfl_xor_sync(0xffffffffu, ps, o);
    l = l * alpha + ps;
    m = mn;
    for (int t = 0; t < ATT_DMAX / 32; t++) acc[t] *= alpha;
    for (int jj = 0; jj < 32; jj++) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      for (int t = 0; t < ATT_DMAX / 32; t++)
        if (lane + 32 * t < a.Dv) acc[t] += pj * vs[jj][lane + 32 * t];
    }
  }
  if (!live) return;
  const float inv = 1.0f / l; /* a fully masked row gives NaN, as softmax does */
  for (int t = 0; t < ATT_DMAX / 32; t++)
    if (lane + 32 * t < a.Dv) att_st(out, (b * a.Sq + i) * a.Dv + lane + 32 * t, acc[t] * inv);
}

template <typename T, typename Score>
static void galv_attention(const galv_attn_desc *a, const void *q, const void *k, const void *v, void *out, Score score) {
  int64_t nb = 1;
  for (int d = 0; d < a->nb; d++) nb *= a->bdims[d];
  if (nb == 0 || a->Sq == 0) return;
  if (a->D > ATT_DMAX || a->Dv > ATT_DMAX || nb > 65535) galv_fatal("attention: head dim above %d or too many heads", ATT_DMAX);
  dim3 grid((unsigned)((a->Sq + ATT_ROWS - 1) / ATT_ROWS), (unsigned)nb);
  auto *kern = galv_attention_k<T, Score>; /* one GALV_LAUNCH argument */
  GALV_LAUNCH(kern, grid, ATT_ROWS * 32, 0, galv_cu.stream, (T *)out, (const T *)q, (const T *)k, (const T *)v, *a, score);
  GALV_CU_LAUNCHED();
}

#endif
