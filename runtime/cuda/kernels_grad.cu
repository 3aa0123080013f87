/* kernels_grad.cu — the training ops' kernels of the CUDA target
 * (ir/train_ops.c semantics, the same as runtime/kernels_grad.c on the CPU):
 * gather_grad (zero + scatter-add with fp32 atomics), slice_grad (zero +
 * strided window), cross_entropy and its gradient (one block per row for
 * the log-sum-exp, double accumulation as the evaluator; one block for the
 * mean), and the two conv gradients (direct, one thread per result element:
 * no atomics, deterministic). The activation side (dy, logits, conv x and
 * dx) is stored as T (float, or bf16 / f16 under --precision bf16 / fp16: dispatched on
 * dt); parameter gradients and the loss are fp32 and every sum is fp32 (or
 * double). An index or label out of range sets the error flag to k + 1.
 * Launch errors are checked after every launch; nothing synchronises. */
#include <string.h>

#include "galv_cuda.h"

__device__ static inline float ldf(const float *p, int64_t i) { return p[i]; }
__device__ static inline float ldf(const galv_bf16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ static inline void stf(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void stf(galv_bf16 *p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ static inline float ldf(const galv_f16 *p, int64_t i) { return __half2float(p[i]); }
__device__ static inline void stf(galv_f16 *p, int64_t i, float v) { p[i] = __float2half(v); }

#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- gather_grad, slice_grad */

template <typename T>
__global__ static void gather_grad_k(float *dst, const T *dy, const void *idx, int idx_es, int64_t nidx,
                                     int64_t outer, int64_t D, int64_t inner, int *err, int k) {
  int64_t n = outer * nidx * inner;
  GRID_STRIDE(i, n) {
    int64_t w = i % inner, j = (i / inner) % nidx, o = i / (inner * nidx);
    int64_t t = idx_es == 8 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
    if (t < -D || t >= D) {
      atomicCAS(err, 0, k + 1);
      continue;
    }
    if (t < 0) t += D;
    atomicAdd(dst + (o * D + t) * inner + w, ldf(dy, i));
  }
}

void galv_cu_gather_grad(int dt, float *dst, const void *dy, const void *idx, int idx_es, int64_t nidx, int64_t outer,
                         int64_t D, int64_t inner, int k) {
  cudaCheck(cudaMemsetAsync(dst, 0, (size_t)(outer * D * inner) * sizeof(float), galv_cu.stream));
  int64_t n = outer * nidx * inner;
  if (n == 0) return;
  GALV_CU_DISPATCH(dt, T,
                   GALV_LAUNCH(gather_grad_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, dst, (const T *)dy, idx, idx_es, nidx,
                               outer, D, inner, galv_cu.err, k));
  GALV_CU_LAUNCHED();
}

typedef struct {
  int rank;
  int64_t dims[GALV_RT_MAX_RANK], str[GALV_RT_MAX_RANK];
} gshape;

template <typename E>
__global__ static void scatter_strided_k(E *dst, const E *src, int64_t n, gshape s) {
  GRID_STRIDE(i, n) {
    int64_t r = i, off = 0;
    for (int d = s.rank - 1; d >= 0; d--) {
      int64_t q = r / s.dims[d];
      off += (r - q * s.dims[d]) * s.str[d];
      r = q;
    }
    dst[off] = src[i];
  }
}

void galv_cu_scatter_strided(void *dst, int64_t dst_bytes, int64_t base, const void *src, size_t es, int rank,
                             const int64_t *dims, const int64_t *strides) {
  cudaCheck(cudaMemsetAsync(dst, 0, (size_t)dst_bytes, galv_cu.stream));
  gshape s;
  memset(&s, 0, sizeof s);
  int64_t n = 1;
  s.rank = rank;
  for (int d = 0; d < rank; d++) s.dims[d] = dims[d], s.str[d] = strides[d], n *= dims[d];
  if (n == 0) return;
  char *d0 = (char *)dst + base * (int64_t)es;
  unsigned g = galv_cu_blocks(n);
  switch (es) {
  case 1: GALV_LAUNCH(scatter_strided_k, g, 256, 0, galv_cu.stream, (uint8_t *)d0, (const uint8_t *)src, n, s); break;
  case 2: GALV_LAUNCH(scatter_strided_k, g, 256, 0, galv_cu.stream, (uint16_t *)d0, (const uint16_t *)src, n, s); break;
  case 4: GALV_LAUNCH(scatter_strided_k, g, 256, 0, galv_cu.stream, (uint32_t *)d0, (const uint32_t *)src, n, s); break;
  default: GALV_LAUNCH(scatter_strided_k, g, 256, 0, galv_cu.stream, (uint64_t *)d0, (const uint64_t *)src, n, s); break;
  }
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- cross entropy */

__device__ static double block_sum(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  v = threadIdx.x < nw ? sh[threadIdx.x] : 0.0;
  if (wid == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) sh[0] = v;
  __syncthreads();
  return sh[0];
}
__device__ static float block_max(float v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  v = threadIdx.x < nw ? (float)sh[threadIdx.x] : -INFINITY;
  if (wid == 0)
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) sh[0] = v;
  __syncthreads();
  return (float)sh[0];
}

/* lse[row] = log-sum-exp of the row (NaN for an ignored row) */
template <typename T>
__global__ static void ce_lse_k(double *lse, const T *x, const int64_t *lab, int64_t C, int64_t ign, int *err, int k) {
  __shared__ double sh[32];
  int64_t row = blockIdx.x, y = lab[row];
  const T *r = x + row * C;
  if (y == ign) {
    if (threadIdx.x == 0) lse[row] = nan("");
    return;
  }
  if (y < 0 || y >= C) {
    if (threadIdx.x == 0) atomicCAS(err, 0, k + 1), lse[row] = nan("");
    return;
  }
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) mx = fmaxf(mx, ldf(r, c));
  mx = block_max(mx, sh);
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += exp((double)ldf(r, c) - mx);
  s = block_sum(s, sh);
  if (threadIdx.x == 0) lse[row] = mx + log(s);
}

/* lse[rows] = mean nll over the counted rows (loss != NULL: also stored as f32); lse[rows + 1] = count */
template <typename T>
__global__ static void ce_mean_k(float *loss, double *lse, const T *x, const int64_t *lab, int64_t rows, int64_t C) {
  __shared__ double sh[32];
  double s = 0, n = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
    if (lse[i] == lse[i]) s += lse[i] - ldf(x, i * C + lab[i]), n += 1;
  s = block_sum(s, sh);
  n = block_sum(n, sh);
  if (threadIdx.x == 0) {
    lse[rows] = n ? s / n : 0.0;
    lse[rows + 1] = n;
    if (loss) *loss = (float)lse[rows];
  }
}

template <typename T>
__global__ static void ce_grad_k(T *dx, const float *dloss, const T *x, const int64_t *lab, const double *lse,
                                 int64_t rows, int64_t C) {
  double count = lse[rows + 1], scale = count ? (double)*dloss / count : 0.0;
  GRID_STRIDE(i, rows * C) {
    int64_t row = i / C, c = i - row * C;
    double l = lse[row];
    stf(dx, i, l != l ? 0.0f : (float)((exp((double)ldf(x, i) - l) - (c == lab[row] ? 1.0 : 0.0)) * scale));
  }
}

/* scratch: (rows + 2) doubles */
template <typename T>
static void cross_entropy_t(float *loss, const T *x, const int64_t *lab, int64_t rows, int64_t C, int64_t ign,
                            void *scratch, int k) {
  double *lse = (double *)scratch;
  if (rows > 0) {
    GALV_LAUNCH(ce_lse_k, (unsigned)rows, 256, 0, galv_cu.stream, lse, x, lab, C, ign, galv_cu.err, k);
    GALV_CU_LAUNCHED();
  }
  GALV_LAUNCH(ce_mean_k, 1, 1024, 0, galv_cu.stream, loss, lse, x, lab, rows, C);
  GALV_CU_LAUNCHED();
}

template <typename T>
static void cross_entropy_grad_t(T *dx, const float *dloss, const T *x, const int64_t *lab, int64_t rows, int64_t C,
                                 int64_t ign, void *scratch, int k) {
  cross_entropy_t(NULL, x, lab, rows, C, ign, scratch, k);
  if (rows * C == 0) return;
  GALV_LAUNCH(ce_grad_k, galv_cu_blocks(rows * C), 256, 0, galv_cu.stream, dx, dloss, x, lab, (const double *)scratch, rows, C);
  GALV_CU_LAUNCHED();
}

void galv_cu_cross_entropy(int dt, float *loss, const void *x, const int64_t *lab, int64_t rows, int64_t C, int64_t ign,
                           void *scratch, int k) {
  GALV_CU_DISPATCH(dt, T, cross_entropy_t(loss, (const T *)x, lab, rows, C, ign, scratch, k));
}

void galv_cu_cross_entropy_grad(int dt, void *dx, const float *dloss, const void *x, const int64_t *lab, int64_t rows,
                                int64_t C, int64_t ign, void *scratch, int k) {
  GALV_CU_DISPATCH(dt, T, cross_entropy_grad_t((T *)dx, dloss, (const T *)x, lab, rows, C, ign, scratch, k));
}

/* ---------------------------------------------------------------- conv gradients */

typedef struct {
  galv_conv_desc d;
} cdesc;

/* dx[n][c][ipos] = sum over m of c's group, kernel positions k with
 * ipos = opos * stride - pad + k * dil: w[m][c'][k] * dy[n][m][opos] */
template <typename T>
__global__ static void conv_grad_input_k(T *dx, const T *dy, const float *w, cdesc a, int64_t n) {
  const galv_conv_desc &d = a.d;
  int S = d.S;
  int64_t kn = 1, P = 1, IS = 1;
  for (int s = 0; s < S; s++) kn *= d.k[s], P *= d.out[s], IS *= d.in[s];
  GRID_STRIDE(i, n) {
    int64_t r = i, ip[GALV_RT_MAX_RANK];
    for (int s = S - 1; s >= 0; s--) ip[s] = r % d.in[s], r /= d.in[s];
    int64_t c = r % d.C, b = r / d.C, cpg = d.C / d.G, mpg = d.M / d.G, g = c / cpg, cl = c - g * cpg;
    float acc = 0;
    for (int64_t kk = 0; kk < kn; kk++) {
      int64_t q = kk, opos = 0, ok = 1;
      int64_t kc[GALV_RT_MAX_RANK];
      for (int s = S - 1; s >= 0; s--) kc[s] = q % d.k[s], q /= d.k[s];
      for (int s = 0; s < S && ok; s++) {
        int64_t t = ip[s] + d.pad[s] - kc[s] * d.dil[s];
        ok = t >= 0 && t % d.stride[s] == 0 && t / d.stride[s] < d.out[s];
        opos = opos * d.out[s] + (ok ? t / d.stride[s] : 0);
      }
      if (!ok) continue;
      for (int64_t m = g * mpg; m < (g + 1) * mpg; m++) acc += w[(m * cpg + cl) * kn + kk] * ldf(dy, (b * d.M + m) * P + opos);
    }
    stf(dx, i, acc);
    (void)IS;
  }
}

/* dw[m][c][k] = sum over n, output positions p: dy[n][m][p] * x[n][g*Cg + c][pos(k, p)] */
template <typename T>
__global__ static void conv_grad_weight_k(float *dw, const T *x, const T *dy, cdesc a, int64_t n) {
  const galv_conv_desc &d = a.d;
  int S = d.S;
  int64_t kn = 1, P = 1, IS = 1;
  for (int s = 0; s < S; s++) kn *= d.k[s], P *= d.out[s], IS *= d.in[s];
  GRID_STRIDE(i, n) {
    int64_t kk = i % kn, r = i / kn, cpg = d.C / d.G, mpg = d.M / d.G;
    int64_t c = r % cpg, m = r / cpg, g = m / mpg;
    int64_t kc[GALV_RT_MAX_RANK], q = kk;
    for (int s = S - 1; s >= 0; s--) kc[s] = q % d.k[s], q /= d.k[s];
    float acc = 0;
    for (int64_t b = 0; b < d.N; b++) {
      const T *xp = x + (b * d.C + g * cpg + c) * IS, *dp = dy + (b * d.M + m) * P;
      for (int64_t p = 0; p < P; p++) {
        int64_t pq = p, off = 0, ok = 1, pos[GALV_RT_MAX_RANK];
        for (int s = S - 1; s >= 0; s--) pos[s] = (pq % d.out[s]) * d.stride[s] - d.pad[s] + kc[s] * d.dil[s], pq /= d.out[s];
        for (int s = 0; s < S; s++) ok &= pos[s] >= 0 && pos[s] < d.in[s], off = off * d.in[s] + pos[s];
        if (ok) acc += ldf(dp, p) * ldf(xp, off);
      }
    }
    dw[i] = acc;
  }
}

void galv_cu_conv_grad_input(int dt, const galv_conv_desc *d, const void *dy, const float *w, void *dx) {
  int64_t n = d->N * d->C;
  for (int s = 0; s < d->S; s++) n *= d->in[s];
  if (n == 0) return;
  cdesc a;
  a.d = *d;
  GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(conv_grad_input_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, (T *)dx, (const T *)dy, w, a, n));
  GALV_CU_LAUNCHED();
}

void galv_cu_conv_grad_weight(int dt, const galv_conv_desc *d, const void *x, const void *dy, float *dw) {
  int64_t n = d->M * (d->C / d->G);
  for (int s = 0; s < d->S; s++) n *= d->k[s];
  if (n == 0) return;
  cdesc a;
  a.d = *d;
  GALV_CU_DISPATCH(dt, T,
                   GALV_LAUNCH(conv_grad_weight_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, dw, (const T *)x, (const T *)dy, a, n));
  GALV_CU_LAUNCHED();
}
