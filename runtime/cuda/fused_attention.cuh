/* fused_attention.cuh — the CUDA target's galv.attention and
 * galv.attention_grad (docs/fused-attention.md): the program includes it
 * when it has them (codegen/cuda/emit.c). The descriptor is the CPU
 * target's (galv_fattn_desc, runtime/galv_rt.h) and the score functor is
 * interpreted as runtime/attention.c does. No S x S buffer.
 *
 * Head dims D, Dv up to FA_DMAX (128): tiled kernels, FlashAttention-2's
 * structure in fp32 FMA arithmetic. The forward runs a block per (batch
 * slice, 64 queries): key tiles of 64 staged through shared memory and
 * shared by the block's queries, each thread 4 x 4 scores and 4 x 4 (or
 * 4 x 8) of o in registers, online softmax per row, o and lse written once.
 * The backward runs a block per (batch slice, 64 keys) looping over the
 * query tiles: the scores recomputed from lse, dk and dv in registers and
 * written once, dq added atomically (zeroed first). A tile whose p is zero
 * throughout (masked: causal tiles above the diagonal) skips its products
 * after the scores (exact: it adds nothing). Past 128: a thread per query
 * row (online softmax over the keys; the backward keeps its row of dq and
 * adds into dk / dv atomically).
 *
 * The kernels are templated on the storage of q, k, v, o, do and the
 * gradients (float, __nv_bfloat16, __half; lse is fp32): 16-bit values are
 * loaded into fp32, every result accumulates in fp32 (o in registers, or
 * for the per-row kernel in place for float storage and in the caller's
 * scratch for 16-bit; dq, dk, dv in the results for float storage and in
 * the scratch for 16-bit) and a 16-bit result is rounded once
 * (round-to-nearest-even) when stored.
 *
 * Dropout (d->drop; docs/fused-attention.md): every kernel recomputes the
 * mask of galv.dropout per score from its global coordinates
 * (runtime/galv_rng.h: the hash of the batch coordinates and the query once
 * per row, one step and the finaliser per key), so no mask is stored. The
 * forward multiplies p by mask / (1 - ratio) before p v (l and lse stay
 * undropped), the backward uses that p_drop for dv and multiplies dO v^T by
 * the same factor before ds = p (dp - Dr) f'. */
#ifndef GALV_FUSED_ATTENTION_CUH
#define GALV_FUSED_ATTENTION_CUH

struct galv_fattn_ptrs {
  const void *p[8];
};

/* the dropout's run-time part: the step's key (galv_rng_key), this rank's shard offsets of the scores (device, i64
 * [nb + 2], may be NULL), the pipeline microbatch */
struct galv_fattn_rng {
  uint64_t key;
  const int64_t *off;
  int64_t mb;
};

/* the hash of score row (b, i)'s leading global coordinates (batch..., query) */
__device__ static inline uint64_t fattn_row_hash(const galv_fattn_desc &d, const galv_fattn_rng &r, int64_t b, int64_t i) {
  int64_t c[6];
  for (int x = d.nb - 1; x >= 0; x--) c[x] = b % d.bd[x], b /= d.bd[x];
  c[d.nb] = i;
  return galv_rng_lead(r.key, &d.dro, c, d.nb + 1, r.off, r.mb);
}
/* the dropout's factor of key j in the row hashed to h: scale where galv.dropout keeps the score, 0 where it drops it
 * (ko: the key dim's shard offset) */
__device__ static inline float fattn_keep(const galv_fattn_desc &d, uint64_t h, int64_t j, int64_t ko) {
  return galv_rng_last(h, j + ko, d.dro.thr) ? d.dro.scale : 0.0f;
}
__device__ static inline int64_t fattn_koff(const galv_fattn_desc &d, const galv_fattn_rng &r) { return r.off ? r.off[d.nb + 1] : 0; }

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
__global__ static void galv_fattn_fwd_row_k(galv_fattn_desc d, const T *q, const T *k, const T *v, galv_fattn_ptrs fn,
                                            galv_fattn_rng rng, T *o, float *accp, float *lse, int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  const uint64_t h = d.drop ? fattn_row_hash(d, rng, b, i) : 0;
  const int64_t ko = d.drop ? fattn_koff(d, rng) : 0;
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
    if (d.drop) w *= fattn_keep(d, h, j, ko); /* p_drop v; l undropped */
    for (int64_t e = 0; e < d.Dv; e++) acc[e] += w * fattn_f(v[fattn_v(d, b, j, e)]);
  }
  for (int64_t e = 0; e < d.Dv; e++) fattn_put(o + r * d.Dv + e, acc[e] / l);
  lse[r] = mx + logf(l);
}

/* dq, dk, dv: fp32 (the results for float storage, scratch for 16-bit) */
template <typename T>
__global__ static void galv_fattn_bwd_row_k(galv_fattn_desc d, const T *q, const T *k, const T *v, const T *o, const T *dout,
                                            const float *lse, galv_fattn_ptrs fn, galv_fattn_rng rng, float *dq, float *dk, float *dv,
                                            int64_t rows) {
  int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  int64_t b = r / d.Sq, i = r % d.Sq, boff[8];
  fattn_boff(d, b, boff);
  const uint64_t h = d.drop ? fattn_row_hash(d, rng, b, i) : 0;
  const int64_t ko = d.drop ? fattn_koff(d, rng) : 0;
  const T *go = dout + r * d.Dv, *oo = o + r * d.Dv;
  float Dr = 0.0f, L = lse[r];
  for (int64_t e = 0; e < d.Dv; e++) Dr += fattn_f(go[e]) * fattn_f(oo[e]);
  for (int64_t x = 0; x < d.D; x++) dq[fattn_q(d, b, i, x)] = 0.0f;
  for (int64_t j = 0; j < d.Sk; j++) {
    float sl, s = fattn_functor(d, fn, boff, i, j, fattn_score(d, q, k, b, i, j), &sl);
    float p = expf(s - L), dp = 0.0f;
    if (p == 0.0f) continue; /* masked: no gradient anywhere */
    const float m = d.drop ? fattn_keep(d, h, j, ko) : 1.0f; /* dropout: dv += p_drop dO, dp = (dO v) m */
    for (int64_t e = 0; e < d.Dv; e++) {
      float g = fattn_f(go[e]);
      dp += g * fattn_f(v[fattn_v(d, b, j, e)]);
      if (m != 0.0f) atomicAdd(dv + fattn_v(d, b, j, e), p * m * g);
    }
    float ds = p * (dp * m - Dr) * sl;
    for (int64_t x = 0; x < d.D; x++) {
      dq[fattn_q(d, b, i, x)] += ds * fattn_f(k[fattn_k(d, b, j, x)]);
      atomicAdd(dk + fattn_k(d, b, j, x), ds * fattn_f(q[fattn_q(d, b, i, x)]));
    }
  }
}

/* ---- the tiled kernels (head dims D, Dv up to FA_DMAX): FlashAttention-2's structure in fp32 FMA arithmetic.
 * A block of FA_NT threads (tx = t % 16, ty = t / 16) works a 64 x 64 tile of scores, each thread 4 x 4 of them
 * from shared memory; the operands are staged through shared memory in chunks of 32 along the contracted dim
 * (zero-padded past the sequence and head dims), so any Sq, Sk, D, Dv fits one 48 KiB of static shared memory:
 * a 64 x 68 tile of P (or dS) and a 17.9 KiB staging buffer. Output columns: 4 per thread per 64 (NH halves). */
#define FA_B 64     /* queries / keys per tile */
#define FA_C 32     /* chunk of a contracted dim staged at a time */
#define FA_NT 256   /* threads per block */
#define FA_DMAX 128 /* head dims of the tiled kernels */
#define FA_PS 68    /* row stride of the P / dS tile and of a [32][64] chunk */
#define FA_RS 36    /* row stride of a [64][32] chunk */
#define FA_WS 132   /* row stride of a [32][128] chunk */
#define FA_BUF (FA_B * FA_RS + FA_C * FA_PS)

/* loops over a thread's registers, unrolled so that they stay registers (nvcc; the execution layer's compiler
 * needs no hint) */
#ifdef __CUDACC__
#define FA_UNROLL _Pragma("unroll")
#else
#define FA_UNROLL
#endif

/* four consecutive floats of shared memory at a 16-byte aligned address */
__device__ static inline void fa_ld4(const float *p, float *v) {
#ifdef __CUDA_ARCH__
  float4 t = *reinterpret_cast<const float4 *>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
#else
  v[0] = p[0], v[1] = p[1], v[2] = p[2], v[3] = p[3];
#endif
}

/* xs[r * FA_RS + x] = row r0 + r of a [rows, n] operand (element (r, x) at base + r * rs + x * xs_), columns x0 + x,
 * r < FA_B, x < FA_C; zero past rows / n */
template <typename T>
__device__ static inline void fa_stage_rows(float *dst, const T *src, int64_t rs, int64_t cs, int64_t r0, int64_t rows, int64_t x0,
                                            int64_t n, bool xfast) {
  for (int e = threadIdx.x; e < FA_B * FA_C; e += FA_NT) {
    int r = xfast ? e / FA_C : e % FA_B, x = xfast ? e % FA_C : e / FA_B;
    int64_t gr = r0 + r, gx = x0 + x;
    dst[r * FA_RS + x] = gr < rows && gx < n ? fattn_f(src[gr * rs + gx * cs]) : 0.0f;
  }
}
/* dst[x * FA_PS + r]: the same chunk transposed (x < FA_C rows of FA_B) */
template <typename T>
__device__ static inline void fa_stage_cols(float *dst, const T *src, int64_t rs, int64_t cs, int64_t r0, int64_t rows, int64_t x0,
                                            int64_t n, bool xfast) {
  for (int e = threadIdx.x; e < FA_B * FA_C; e += FA_NT) {
    int r = xfast ? e / FA_C : e % FA_B, x = xfast ? e % FA_C : e / FA_B;
    int64_t gr = r0 + r, gx = x0 + x;
    dst[x * FA_PS + r] = gr < rows && gx < n ? fattn_f(src[gr * rs + gx * cs]) : 0.0f;
  }
}
/* dst[r * FA_WS + x]: FA_C rows r0.. of the operand, all its n <= 64 NH columns */
template <int NH, typename T>
__device__ static inline void fa_stage_wide(float *dst, const T *src, int64_t rs, int64_t cs, int64_t r0, int64_t rows, int64_t n,
                                            bool xfast) {
  for (int e = threadIdx.x; e < FA_C * 64 * NH; e += FA_NT) {
    int r = xfast ? e / (64 * NH) : e % FA_C, x = xfast ? e % (64 * NH) : e / FA_C;
    int64_t gr = r0 + r;
    dst[r * FA_WS + x] = gr < rows && x < n ? fattn_f(src[gr * rs + x * cs]) : 0.0f;
  }
}

/* acc[a][c] += sum over a chunk of 32: rows[(ty * 4 + a) * FA_RS + x] * cols[x * FA_PS + tx * 4 + c] */
__device__ static inline void fa_tile_mma(float (*acc)[4], const float *rows, const float *cols, int tx, int ty) {
  for (int x = 0; x < FA_C; x += 4) {
    float ra[4][4], cb[4];
    FA_UNROLL
    for (int a = 0; a < 4; a++) fa_ld4(rows + (ty * 4 + a) * FA_RS + x, ra[a]);
    FA_UNROLL
    for (int u = 0; u < 4; u++) {
      fa_ld4(cols + (x + u) * FA_PS + tx * 4, cb);
      FA_UNROLL
      for (int a = 0; a < 4; a++)
        FA_UNROLL
        for (int c = 0; c < 4; c++) acc[a][c] += ra[a][u] * cb[c];
    }
  }
}

/* acc[a][h * 4 + c] += sum over FA_C rows y: lhs[(ty * 4 + a) * FA_PS + y0 + y] * w[y * FA_WS + h * 64 + tx * 4 + c] */
template <int NH>
__device__ static inline void fa_wide_mma(float (*acc)[4 * NH], const float *lhs, int y0, const float *w, int tx, int ty) {
  for (int y = 0; y < FA_C; y += 4) {
    float la[4][4], wb[4];
    FA_UNROLL
    for (int a = 0; a < 4; a++) fa_ld4(lhs + (ty * 4 + a) * FA_PS + y0 + y, la[a]);
    FA_UNROLL
    for (int u = 0; u < 4; u++)
      FA_UNROLL
      for (int h = 0; h < NH; h++) {
        fa_ld4(w + (y + u) * FA_WS + h * 64 + tx * 4, wb);
        FA_UNROLL
        for (int a = 0; a < 4; a++)
          FA_UNROLL
          for (int c = 0; c < 4; c++) acc[a][h * 4 + c] += la[a][u] * wb[c];
      }
  }
}

__device__ static inline float fa_rowmax16(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ static inline float fa_rowsum16(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* whether any thread's p[4][4] has a nonzero; flag: the block's per-warp votes, alternated between consecutive
 * tiles (a barrier lies between a tile's reads and the next but one's writes). Ends with a barrier. */
__device__ static inline bool fa_block_any(const float (*p)[4], int *flag) {
  bool any = false;
  FA_UNROLL
  for (int a = 0; a < 4; a++)
    FA_UNROLL
    for (int c = 0; c < 4; c++) any |= p[a][c] != 0.0f;
  any = __any_sync(0xffffffffu, any);
  if (threadIdx.x % 32 == 0) flag[threadIdx.x / 32] = any;
  __syncthreads();
  for (int w = 0; w < FA_NT / 32; w++) any |= flag[w] != 0;
  return any;
}

/* the functor on a thread's 4 x 4 scores, a step at a time over all of them (the step table decoded once per step
 * rather than per score, as fattn_functor does, and with the same arithmetic per score): s[a][c] is the score of
 * query ib + a, key jb + c (TR: query ib + c, key jb + a); slopes into sl (SLOPE). Scores past Sq or Sk are left
 * as they are (the caller masks them). */
template <bool TR, bool SLOPE>
__device__ static inline void fa_functor(const galv_fattn_desc &d, const galv_fattn_ptrs &fn, const int64_t *boff, int64_t ib, int64_t jb,
                                         float (*s)[4], float (*sl)[4]) {
  if (SLOPE)
    FA_UNROLL
    for (int a = 0; a < 4; a++)
      FA_UNROLL
      for (int c = 0; c < 4; c++) sl[a][c] = 1.0f;
  for (int t = 0; t < d.nst; t++) {
    const galv_fattn_step &x = d.st[t];
    const int kind = x.kind;
    int arg[3], dt[3] = {0, 0, 0};
    float lit[3];
    const void *p[3] = {nullptr, nullptr, nullptr};
    int64_t off[3] = {0, 0, 0}, si[3] = {0, 0, 0}, sj[3] = {0, 0, 0};
    FA_UNROLL
    for (int u = 0; u < 3; u++) {
      arg[u] = u < x.nargs ? x.arg[u] : -2, lit[u] = x.lit[u];
      if (arg[u] >= 0) {
        int f = arg[u];
        p[u] = fn.p[f], dt[u] = d.fdt[f], si[u] = d.fst[f][d.nb], sj[u] = d.fst[f][d.nb + 1];
        off[u] = boff[f] + ib * si[u] + jb * sj[u];
      }
    }
    FA_UNROLL
    for (int a = 0; a < 4; a++)
      FA_UNROLL
      for (int c = 0; c < 4; c++) {
        const int qa = TR ? c : a, ka = TR ? a : c;
        if (ib + qa >= d.Sq || jb + ka >= d.Sk) continue;
        float v[3], y = s[a][c], g = 1.0f;
        FA_UNROLL
        for (int u = 0; u < 3; u++) v[u] = arg[u] == -1 ? y : arg[u] == -2 ? lit[u] : fattn_load(dt[u], p[u], off[u] + qa * si[u] + ka * sj[u]);
        switch (kind) {
        case 0: y = v[0] + v[1]; break;
        case 1: y = v[0] - v[1], g = arg[0] == -1 ? 1.0f : -1.0f; break;
        case 2: y = v[0] * v[1], g = arg[0] == -1 ? v[1] : v[0]; break;
        case 3: y = v[0] / v[1], g = 1.0f / v[1]; break;
        default:
          y = v[0] != 0.0f ? v[1] : v[2];
          g = (v[0] != 0.0f) == (arg[1] == -1) ? 1.0f : 0.0f;
        }
        s[a][c] = y;
        if (SLOPE) sl[a][c] = kind == 3 ? sl[a][c] / v[1] : sl[a][c] * g;
      }
  }
}

/* forward: block = (batch slice, 64 queries); thread (tx, ty) scores queries ty * 4 + a against keys tx * 4 + c of
 * each key tile and owns o's columns h * 64 + tx * 4 + c of its four queries */
template <int NH, typename T>
__global__ static void __launch_bounds__(FA_NT) galv_fattn_fwd_k(galv_fattn_desc d, const T *q, const T *k, const T *v,
                                                                 galv_fattn_ptrs fn, galv_fattn_rng rng, T *o, float *lse,
                                                                 int64_t qtiles) {
  alignas(16) __shared__ float ps[FA_B * FA_PS];
  alignas(16) __shared__ float buf[FA_BUF];
  __shared__ int live[2][FA_NT / 32];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int64_t b = blockIdx.x / qtiles, i0 = blockIdx.x % qtiles * FA_B;
  int64_t boff[8];
  fattn_boff(d, b, boff);
  const T *qb = q + b * d.Sq * d.D, *kb = k + b * d.Sk * d.D, *vb = v + b * d.Sk * d.Dv;
  const int64_t krs = d.kt ? 1 : d.D, kcs = d.kt ? d.Sk : 1, vrs = d.vt ? 1 : d.Dv, vcs = d.vt ? d.Sk : 1;
  uint64_t hq[4] = {0, 0, 0, 0}; /* dropout: the hash of each of the thread's four queries */
  const int64_t ko = d.drop ? fattn_koff(d, rng) : 0;
  if (d.drop)
    FA_UNROLL
    for (int a = 0; a < 4; a++) hq[a] = fattn_row_hash(d, rng, b, i0 + ty * 4 + a);
  float m[4], l[4], acc[4][4 * NH];
  FA_UNROLL
  for (int a = 0; a < 4; a++) {
    m[a] = -INFINITY, l[a] = 0.0f;
    FA_UNROLL
    for (int c = 0; c < 4 * NH; c++) acc[a][c] = 0.0f;
  }
  for (int64_t j0 = 0; j0 < d.Sk; j0 += FA_B) {
    float s[4][4] = {};
    __syncthreads(); /* the last tile's reads of ps and buf are done */
    for (int64_t x0 = 0; x0 < d.D; x0 += FA_C) { /* s = q k^T over one chunk of the head dim */
      if (x0) __syncthreads();
      fa_stage_rows(buf, qb, d.D, 1, i0, d.Sq, x0, d.D, true);
      fa_stage_cols(buf + FA_B * FA_RS, kb, krs, kcs, j0, d.Sk, x0, d.D, !d.kt);
      __syncthreads();
      fa_tile_mma(s, buf, buf + FA_B * FA_RS, tx, ty);
    }
    fa_functor<false, false>(d, fn, boff, i0 + ty * 4, j0 + tx * 4, s, nullptr);
    FA_UNROLL
    for (int a = 0; a < 4; a++) { /* the online softmax of the row */
      int64_t i = i0 + ty * 4 + a;
      float mt = -INFINITY;
      FA_UNROLL
      for (int c = 0; c < 4; c++) {
        if (i >= d.Sq || j0 + tx * 4 + c >= d.Sk) s[a][c] = -INFINITY;
        mt = fmaxf(mt, s[a][c]);
      }
      float nm = fmaxf(m[a], fa_rowmax16(mt)), sc = 1.0f, rs = 0.0f;
      if (nm != -INFINITY) {
        sc = expf(m[a] - nm);
        FA_UNROLL
        for (int c = 0; c < 4; c++) rs += s[a][c] = s[a][c] == -INFINITY ? 0.0f : expf(s[a][c] - nm);
      } else
        FA_UNROLL
        for (int c = 0; c < 4; c++) s[a][c] = 0.0f;
      l[a] = l[a] * sc + fa_rowsum16(rs), m[a] = nm;
      FA_UNROLL
      for (int c = 0; c < 4 * NH; c++) acc[a][c] *= sc;
      FA_UNROLL
      for (int c = 0; c < 4; c++) /* p_drop = p * mask / (1 - ratio) for p v; l is the undropped sum */
        ps[(ty * 4 + a) * FA_PS + tx * 4 + c] = d.drop ? s[a][c] * fattn_keep(d, hq[a], j0 + tx * 4 + c, ko) : s[a][c];
    }
    if (!fa_block_any(s, live[j0 / FA_B % 2])) continue; /* p = 0 throughout (a masked tile): o and l as they are */
    for (int y0 = 0; y0 < FA_B && j0 + y0 < d.Sk; y0 += FA_C) { /* o += p v over 32 keys at a time */
      __syncthreads();
      fa_stage_wide<NH>(buf, vb, vrs, vcs, j0 + y0, d.Sk, d.Dv, !d.vt);
      __syncthreads();
      fa_wide_mma<NH>(acc, ps, y0, buf, tx, ty);
    }
  }
  FA_UNROLL
  for (int a = 0; a < 4; a++) {
    int64_t i = i0 + ty * 4 + a;
    if (i >= d.Sq) continue;
    if (tx == 0) lse[b * d.Sq + i] = m[a] + logf(l[a]);
    FA_UNROLL
    for (int h = 0; h < NH; h++)
      FA_UNROLL
      for (int c = 0; c < 4; c++) {
        int64_t e = h * 64 + tx * 4 + c;
        if (e < d.Dv) fattn_put(o + (b * d.Sq + i) * d.Dv + e, acc[a][h * 4 + c] / l[a]);
      }
  }
}

/* backward: block = (batch slice, 64 keys), looping over the query tiles; thread (tx, ty) scores keys ty * 4 + a
 * against queries tx * 4 + c, owns dk's and dv's columns h * 64 + tx * 4 + c of its four keys (written once, no
 * atomics) and adds its share of dq (queries ty * 4 + a, the same columns) atomically (dq zeroed first) */
template <int NH, typename T>
__global__ static void __launch_bounds__(FA_NT)
    galv_fattn_bwd_k(galv_fattn_desc d, const T *q, const T *k, const T *v, const T *o, const T *dout, const float *lse,
                     galv_fattn_ptrs fn, galv_fattn_rng rng, float *dq, float *dk, float *dv, int64_t ktiles) {
  alignas(16) __shared__ float xs[FA_B * FA_PS];
  alignas(16) __shared__ float buf[FA_BUF];
  __shared__ float lq[FA_B], dr[FA_B];
  __shared__ int live[2][FA_NT / 32];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int64_t b = blockIdx.x / ktiles, j0 = blockIdx.x % ktiles * FA_B;
  int64_t boff[8];
  fattn_boff(d, b, boff);
  const T *qb = q + b * d.Sq * d.D, *kb = k + b * d.Sk * d.D, *vb = v + b * d.Sk * d.Dv;
  const T *ob = o + b * d.Sq * d.Dv, *gb = dout + b * d.Sq * d.Dv;
  const int64_t krs = d.kt ? 1 : d.D, kcs = d.kt ? d.Sk : 1, vrs = d.vt ? 1 : d.Dv, vcs = d.vt ? d.Sk : 1;
  float gk[4][4 * NH], gv[4][4 * NH];
  FA_UNROLL
  for (int a = 0; a < 4; a++)
    FA_UNROLL
    for (int c = 0; c < 4 * NH; c++) gk[a][c] = gv[a][c] = 0.0f;
  for (int64_t i0 = 0; i0 < d.Sq; i0 += FA_B) {
    __syncthreads();
    { /* each query's lse and Dr = rowsum(dO * o): four threads a row */
      int r = t / 4;
      int64_t i = i0 + r;
      float x = 0.0f;
      if (i < d.Sq)
        for (int64_t e = t % 4; e < d.Dv; e += 4) x += fattn_f(gb[i * d.Dv + e]) * fattn_f(ob[i * d.Dv + e]);
      x += __shfl_xor_sync(0xffffffffu, x, 1);
      x += __shfl_xor_sync(0xffffffffu, x, 2);
      if (t % 4 == 0) dr[r] = x, lq[r] = i < d.Sq ? lse[b * d.Sq + i] : 0.0f;
    }
    float s[4][4] = {}, p[4][4], dp[4][4] = {};
    for (int64_t x0 = 0; x0 < d.D; x0 += FA_C) { /* s^T = k q^T */
      __syncthreads();
      fa_stage_rows(buf, kb, krs, kcs, j0, d.Sk, x0, d.D, !d.kt);
      fa_stage_cols(buf + FA_B * FA_RS, qb, d.D, 1, i0, d.Sq, x0, d.D, true);
      __syncthreads();
      fa_tile_mma(s, buf, buf + FA_B * FA_RS, tx, ty);
    }
    float sl[4][4];
    fa_functor<true, true>(d, fn, boff, i0 + tx * 4, j0 + ty * 4, s, sl);
    uint64_t hq[4] = {0, 0, 0, 0}; /* dropout: the hash of each of the thread's four queries */
    const int64_t ko = d.drop ? fattn_koff(d, rng) : 0;
    if (d.drop)
      FA_UNROLL
      for (int c = 0; c < 4; c++) hq[c] = fattn_row_hash(d, rng, b, i0 + tx * 4 + c);
    FA_UNROLL
    for (int a = 0; a < 4; a++) /* p = exp(f(s) - lse), p_drop^T into xs (p with no dropout) */
      FA_UNROLL
      for (int c = 0; c < 4; c++) {
        p[a][c] = i0 + tx * 4 + c < d.Sq && j0 + ty * 4 + a < d.Sk ? expf(s[a][c] - lq[tx * 4 + c]) : 0.0f;
        xs[(ty * 4 + a) * FA_PS + tx * 4 + c] = d.drop ? p[a][c] * fattn_keep(d, hq[c], j0 + ty * 4 + a, ko) : p[a][c];
      }
    if (!fa_block_any(p, live[i0 / FA_B % 2])) continue; /* p = 0 throughout (a masked tile): no gradient */
    for (int64_t x0 = 0; x0 < d.Dv; x0 += FA_C) { /* dp^T = v dO^T */
      __syncthreads();
      fa_stage_rows(buf, vb, vrs, vcs, j0, d.Sk, x0, d.Dv, !d.vt);
      fa_stage_cols(buf + FA_B * FA_RS, gb, d.Dv, 1, i0, d.Sq, x0, d.Dv, true);
      __syncthreads();
      fa_tile_mma(dp, buf, buf + FA_B * FA_RS, tx, ty);
    }
    if (d.drop) /* dp = (dO v^T) * mask / (1 - ratio), the mask recomputed (fewer registers than keeping it) */
      FA_UNROLL
      for (int a = 0; a < 4; a++)
        FA_UNROLL
        for (int c = 0; c < 4; c++) dp[a][c] *= fattn_keep(d, hq[c], j0 + ty * 4 + a, ko);
    FA_UNROLL
    for (int a = 0; a < 4; a++) /* ds = p (dp - Dr) f'(s) into dp; where p = 0 (masked) no gradient anywhere */
      FA_UNROLL
      for (int c = 0; c < 4; c++) dp[a][c] = p[a][c] != 0.0f ? p[a][c] * (dp[a][c] - dr[tx * 4 + c]) * sl[a][c] : 0.0f;
    for (int y0 = 0; y0 < FA_B && i0 + y0 < d.Sq; y0 += FA_C) { /* dv += p^T dO */
      __syncthreads();
      fa_stage_wide<NH>(buf, gb, d.Dv, 1, i0 + y0, d.Sq, d.Dv, true);
      __syncthreads();
      fa_wide_mma<NH>(gv, xs, y0, buf, tx, ty);
    }
    __syncthreads();
    FA_UNROLL
    for (int a = 0; a < 4; a++)
      FA_UNROLL
      for (int c = 0; c < 4; c++) xs[(ty * 4 + a) * FA_PS + tx * 4 + c] = dp[a][c];
    for (int y0 = 0; y0 < FA_B && i0 + y0 < d.Sq; y0 += FA_C) { /* dk += ds^T q */
      __syncthreads();
      fa_stage_wide<NH>(buf, qb, d.D, 1, i0 + y0, d.Sq, d.D, true);
      __syncthreads();
      fa_wide_mma<NH>(gk, xs, y0, buf, tx, ty);
    }
    float g[4][4 * NH] = {};
    for (int y0 = 0; y0 < FA_B && j0 + y0 < d.Sk; y0 += FA_C) { /* dq += ds k: queries ty * 4 + a */
      __syncthreads();
      fa_stage_wide<NH>(buf, kb, krs, kcs, j0 + y0, d.Sk, d.D, !d.kt);
      __syncthreads();
      for (int y = 0; y < FA_C; y++) {
        float sa[4], wb[4];
        fa_ld4(xs + (y0 + y) * FA_PS + ty * 4, sa);
        FA_UNROLL
        for (int h = 0; h < NH; h++) {
          fa_ld4(buf + y * FA_WS + h * 64 + tx * 4, wb);
          FA_UNROLL
          for (int a = 0; a < 4; a++)
            FA_UNROLL
            for (int c = 0; c < 4; c++) g[a][h * 4 + c] += sa[a] * wb[c];
        }
      }
    }
    FA_UNROLL
    for (int a = 0; a < 4; a++) {
      int64_t i = i0 + ty * 4 + a;
      if (i >= d.Sq) continue;
      FA_UNROLL
      for (int h = 0; h < NH; h++)
        FA_UNROLL
        for (int c = 0; c < 4; c++) {
          int64_t x = h * 64 + tx * 4 + c;
          if (x < d.D && g[a][h * 4 + c] != 0.0f) atomicAdd(dq + (b * d.Sq + i) * d.D + x, g[a][h * 4 + c]);
        }
    }
  }
  FA_UNROLL
  for (int a = 0; a < 4; a++) {
    int64_t j = j0 + ty * 4 + a;
    if (j >= d.Sk) continue;
    FA_UNROLL
    for (int h = 0; h < NH; h++)
      FA_UNROLL
      for (int c = 0; c < 4; c++) {
        int64_t x = h * 64 + tx * 4 + c;
        if (x < d.D) dk[b * d.Sk * d.D + j * krs + x * kcs] = gk[a][h * 4 + c];
        if (x < d.Dv) dv[b * d.Sk * d.Dv + j * vrs + x * vcs] = gv[a][h * 4 + c];
      }
  }
}

static inline galv_fattn_ptrs galv_fattn_pack(const void *const *fn, int n) {
  galv_fattn_ptrs p;
  for (int f = 0; f < 8; f++) p.p[f] = f < n ? fn[f] : nullptr;
  return p;
}

static inline int64_t galv_fattn_slices(const galv_fattn_desc *d) {
  int64_t B = 1;
  for (int x = 0; x < d->nb; x++) B *= d->bd[x];
  return B;
}

static inline galv_fattn_rng galv_fattn_rng_of(const galv_fattn_desc *d, const int64_t *off, int64_t step, int64_t mb) {
  galv_fattn_rng r;
  r.key = d->drop ? galv_rng_key(d->dro.seed, d->dro.id, (uint64_t)step) : 0;
  r.off = off, r.mb = mb;
  return r;
}

/* acc: the per-row kernel's fp32 accumulator of o (o itself for float storage; the tiled kernel keeps it in registers) */
template <typename T>
static inline void galv_fattn_fwd(const galv_fattn_desc *d, const T *q, const T *k, const T *v, const void *const *fn, const int64_t *off,
                                  int64_t step, int64_t mb, T *o, float *acc, float *lse) {
  int64_t B = galv_fattn_slices(d), rows = B * d->Sq, qt = (d->Sq + FA_B - 1) / FA_B;
  const galv_fattn_rng rng = galv_fattn_rng_of(d, off, step, mb);
  if (rows == 0) return;
  if (d->D > FA_DMAX || d->Dv > FA_DMAX)
    GALV_LAUNCH(galv_fattn_fwd_row_k<T>, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, galv_fattn_pack(fn, d->nfn),
                rng, o, acc, lse, rows);
  else if (d->D > 64 || d->Dv > 64)
    GALV_LAUNCH((galv_fattn_fwd_k<2, T>), (unsigned)(B * qt), FA_NT, 0, galv_cu.stream, *d, q, k, v, galv_fattn_pack(fn, d->nfn), rng, o, lse, qt);
  else
    GALV_LAUNCH((galv_fattn_fwd_k<1, T>), (unsigned)(B * qt), FA_NT, 0, galv_cu.stream, *d, q, k, v, galv_fattn_pack(fn, d->nfn), rng, o, lse, qt);
  GALV_CU_LAUNCHED();
}

/* dq, dk, dv fp32 (the results for float storage, scratch for 16-bit); dq accumulates atomically (zeroed here) */
template <typename T>
static inline void galv_fattn_bwd(const galv_fattn_desc *d, const T *q, const T *k, const T *v, const T *o, const T *dout, const float *lse,
                           const void *const *fn, const int64_t *off, int64_t step, int64_t mb, float *dq, float *dk, float *dv) {
  int64_t B = galv_fattn_slices(d), rows = B * d->Sq, kt = (d->Sk + FA_B - 1) / FA_B;
  const galv_fattn_rng rng = galv_fattn_rng_of(d, off, step, mb);
  cudaCheck(cudaMemsetAsync(dq, 0, (size_t)(rows * d->D) * sizeof(float), galv_cu.stream));
  if (d->D > FA_DMAX || d->Dv > FA_DMAX) { /* the per-row kernel: dk, dv by atomics too */
    cudaCheck(cudaMemsetAsync(dk, 0, (size_t)(B * d->Sk * d->D) * sizeof(float), galv_cu.stream));
    cudaCheck(cudaMemsetAsync(dv, 0, (size_t)(B * d->Sk * d->Dv) * sizeof(float), galv_cu.stream));
    if (rows == 0) return;
    GALV_LAUNCH(galv_fattn_bwd_row_k<T>, (unsigned)((rows + 127) / 128), 128, 0, galv_cu.stream, *d, q, k, v, o, dout, lse,
                galv_fattn_pack(fn, d->nfn), rng, dq, dk, dv, rows);
  } else if (B * kt == 0)
    return;
  else if (d->D > 64 || d->Dv > 64) /* every element of dk, dv written once (zero where Sq = 0) */
    GALV_LAUNCH((galv_fattn_bwd_k<2, T>), (unsigned)(B * kt), FA_NT, 0, galv_cu.stream, *d, q, k, v, o, dout, lse,
                galv_fattn_pack(fn, d->nfn), rng, dq, dk, dv, kt);
  else
    GALV_LAUNCH((galv_fattn_bwd_k<1, T>), (unsigned)(B * kt), FA_NT, 0, galv_cu.stream, *d, q, k, v, o, dout, lse,
                galv_fattn_pack(fn, d->nfn), rng, dq, dk, dv, kt);
  GALV_CU_LAUNCHED();
}

/* fp32 storage: o, dq, dk, dv accumulate in place */
static inline void galv_cu_fattn(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const void *const *fn,
                                 const int64_t *off, int64_t step, int64_t mb, float *o, float *lse) {
  galv_fattn_fwd(d, q, k, v, fn, off, step, mb, o, o, lse);
}

static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const float *q, const float *k, const float *v, const float *o,
                                      const float *dout, const float *lse, const void *const *fn, const int64_t *off, int64_t step,
                                      int64_t mb, float *dq, float *dk, float *dv) {
  galv_fattn_bwd(d, q, k, v, o, dout, lse, fn, off, step, mb, dq, dk, dv);
}

/* 16-bit storage: the fp32 accumulators in scratch (the emitter reserves them: B Sq Dv floats for the forward's
 * o; for the backward dq, dk, dv, each 64-byte aligned), the 16-bit results converted from them */
static inline int64_t galv_fattn_al(int64_t bytes) { return (bytes + 63) / 64 * 64; }
template <typename T>
static inline void galv_cu_fattn16_grad(int dt, const galv_fattn_desc *d, const T *q, const T *k, const T *v, const T *o, const T *dout,
                                 const float *lse, const void *const *fn, const int64_t *off, int64_t step, int64_t mb, T *dq, T *dk,
                                 T *dv, char *scratch) {
  int64_t B = galv_fattn_slices(d), nq = B * d->Sq * d->D, nk = B * d->Sk * d->D, nv = B * d->Sk * d->Dv;
  float *dq32 = (float *)scratch, *dk32 = (float *)(scratch + galv_fattn_al(nq * 4)),
        *dv32 = (float *)(scratch + galv_fattn_al(nq * 4) + galv_fattn_al(nk * 4));
  galv_fattn_bwd(d, q, k, v, o, dout, lse, fn, off, step, mb, dq32, dk32, dv32);
  galv_cu_from_f32(dt, dq, dq32, nq);
  galv_cu_from_f32(dt, dk, dk32, nk);
  galv_cu_from_f32(dt, dv, dv32, nv);
}
static inline void galv_cu_fattn(const galv_fattn_desc *d, const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                                 const void *const *fn, const int64_t *off, int64_t step, int64_t mb, __nv_bfloat16 *o, float *lse,
                                 char *scratch) {
  galv_fattn_fwd(d, q, k, v, fn, off, step, mb, o, (float *)scratch, lse);
}
static inline void galv_cu_fattn(const galv_fattn_desc *d, const __half *q, const __half *k, const __half *v, const void *const *fn,
                                 const int64_t *off, int64_t step, int64_t mb, __half *o, float *lse, char *scratch) {
  galv_fattn_fwd(d, q, k, v, fn, off, step, mb, o, (float *)scratch, lse);
}
static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                                      const __nv_bfloat16 *o, const __nv_bfloat16 *dout, const float *lse, const void *const *fn,
                                      const int64_t *off, int64_t step, int64_t mb, __nv_bfloat16 *dq, __nv_bfloat16 *dk,
                                      __nv_bfloat16 *dv, char *scratch) {
  galv_cu_fattn16_grad(GALV_BF16, d, q, k, v, o, dout, lse, fn, off, step, mb, dq, dk, dv, scratch);
}
static inline void galv_cu_fattn_grad(const galv_fattn_desc *d, const __half *q, const __half *k, const __half *v, const __half *o,
                                      const __half *dout, const float *lse, const void *const *fn, const int64_t *off, int64_t step,
                                      int64_t mb, __half *dq, __half *dk, __half *dv, char *scratch) {
  galv_cu_fattn16_grad(GALV_F16, d, q, k, v, o, dout, lse, fn, off, step, mb, dq, dk, dv, scratch);
}

#endif
