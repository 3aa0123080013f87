/* kernels.cu — the library kernels of the CUDA target: what is not a
 * generated elementwise kernel (program.cu) or the fused attention kernel
 * (attention.cuh). Each computes what ir/eval.c (and the CPU runtime,
 * runtime/kernels.c) computes; tests/cuda/ compares each with a CPU
 * reference. Float data is stored as T (float, bf16 or f16) and accumulated in
 * fp32. Launch errors are checked after every launch; nothing here
 * synchronises the stream. */
#include <string.h>

#include "galv_cuda.h"

#define MAXR GALV_RT_MAX_RANK

typedef struct {
  int rank;
  int64_t dims[MAXR], str[MAXR];
} shape_t;

static shape_t mkshape(int rank, const int64_t *dims, const int64_t *str) {
  shape_t s;
  memset(&s, 0, sizeof s);
  s.rank = rank;
  for (int d = 0; d < rank; d++) s.dims[d] = dims[d], s.str[d] = str ? str[d] : 0;
  return s;
}
static int64_t numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  return n;
}

__device__ static inline float ldf(const float *p, int64_t i) { return p[i]; }
__device__ static inline float ldf(const galv_bf16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ static inline void stf(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void stf(galv_bf16 *p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ static inline float ldf(const galv_f16 *p, int64_t i) { return __half2float(p[i]); }
__device__ static inline void stf(galv_f16 *p, int64_t i, float v) { p[i] = __float2half(v); }

#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- copies */

template <typename E>
__global__ void copy_strided_k(E *dst, const E *src, int64_t n, shape_t s) {
  GRID_STRIDE(i, n) {
    int64_t r = i, off = 0;
    for (int d = s.rank - 1; d >= 0; d--) {
      int64_t q = r / s.dims[d];
      off += (r - q * s.dims[d]) * s.str[d];
      r = q;
    }
    dst[i] = src[off];
  }
}

void galv_cu_copy_strided(void *dst, const void *src, size_t es, int rank, const int64_t *dims, const int64_t *strides) {
  int64_t n = numel(rank, dims);
  if (n == 0) return;
  shape_t s = mkshape(rank, dims, strides);
  unsigned g = galv_cu_blocks(n);
  cudaStream_t st = galv_cu.stream;
  switch (es) {
  case 1: GALV_LAUNCH(copy_strided_k, g, 256, 0, st, (uint8_t *)dst, (const uint8_t *)src, n, s); break;
  case 2: GALV_LAUNCH(copy_strided_k, g, 256, 0, st, (uint16_t *)dst, (const uint16_t *)src, n, s); break;
  case 4: GALV_LAUNCH(copy_strided_k, g, 256, 0, st, (uint32_t *)dst, (const uint32_t *)src, n, s); break;
  case 8: GALV_LAUNCH(copy_strided_k, g, 256, 0, st, (uint64_t *)dst, (const uint64_t *)src, n, s); break;
  default: galv_fatal("copy_strided: element size %zu not supported", es);
  }
  GALV_CU_LAUNCHED();
}

template <typename E>
__global__ void tile_k(E *dst, const E *src, int64_t n, shape_t in, shape_t out) {
  GRID_STRIDE(i, n) {
    int64_t r = i, off = 0, k = 1;
    for (int d = out.rank - 1; d >= 0; d--) {
      int64_t q = r / out.dims[d];
      off += ((r - q * out.dims[d]) % in.dims[d]) * k;
      k *= in.dims[d];
      r = q;
    }
    dst[i] = src[off];
  }
}

void galv_cu_tile(void *dst, const void *src, size_t es, int rank, const int64_t *in_dims, const int64_t *out_dims) {
  int64_t n = numel(rank, out_dims);
  if (n == 0) return;
  shape_t a = mkshape(rank, in_dims, NULL), b = mkshape(rank, out_dims, NULL);
  unsigned g = galv_cu_blocks(n);
  cudaStream_t st = galv_cu.stream;
  switch (es) {
  case 1: GALV_LAUNCH(tile_k, g, 256, 0, st, (uint8_t *)dst, (const uint8_t *)src, n, a, b); break;
  case 2: GALV_LAUNCH(tile_k, g, 256, 0, st, (uint16_t *)dst, (const uint16_t *)src, n, a, b); break;
  case 4: GALV_LAUNCH(tile_k, g, 256, 0, st, (uint32_t *)dst, (const uint32_t *)src, n, a, b); break;
  case 8: GALV_LAUNCH(tile_k, g, 256, 0, st, (uint64_t *)dst, (const uint64_t *)src, n, a, b); break;
  default: galv_fatal("tile: element size %zu not supported", es);
  }
  GALV_CU_LAUNCHED();
}

/* concat / split: one 2-D copy per piece (rows = outer) */
void galv_cu_concat(void *dst, const void *const *srcs, const int64_t *chunk, int n, int64_t outer) {
  int64_t row = 0, at = 0;
  for (int i = 0; i < n; i++) row += chunk[i];
  for (int i = 0; i < n; at += chunk[i], i++)
    if (chunk[i] && outer)
      cudaCheck(cudaMemcpy2DAsync((char *)dst + at, (size_t)row, srcs[i], (size_t)chunk[i], (size_t)chunk[i],
                                  (size_t)outer, cudaMemcpyDeviceToDevice, galv_cu.stream));
}

void galv_cu_split(void *const *dsts, const void *src, const int64_t *chunk, int n, int64_t outer) {
  int64_t row = 0, at = 0;
  for (int i = 0; i < n; i++) row += chunk[i];
  for (int i = 0; i < n; at += chunk[i], i++)
    if (chunk[i] && outer)
      cudaCheck(cudaMemcpy2DAsync(dsts[i], (size_t)chunk[i], (const char *)src + at, (size_t)row, (size_t)chunk[i],
                                  (size_t)outer, cudaMemcpyDeviceToDevice, galv_cu.stream));
}

/* gather: one thread per 4-byte word (or byte when the chunk is not a multiple of 4) */
template <typename E>
__global__ void gather_k(E *dst, const E *data, const void *idx, int idx_es, int64_t nidx, int64_t outer, int64_t D,
                         int64_t words, int *err, int k) {
  int64_t n = outer * nidx * words;
  GRID_STRIDE(i, n) {
    int64_t w = i % words, j = (i / words) % nidx, o = i / (words * nidx);
    int64_t t = idx_es == 8 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
    if (t < 0) t += D;
    if (t < 0 || t >= D) {
      atomicCAS(err, 0, k + 1);
      t = 0;
    }
    dst[i] = data[(o * D + t) * words + w];
  }
}

void galv_cu_gather(void *dst, const void *data, const void *idx, int idx_es, int64_t nidx, int64_t outer, int64_t D,
                    int64_t chunk, int k) {
  int64_t n = outer * nidx * chunk;
  if (n == 0) return;
  if (chunk % 4 == 0) {
    GALV_LAUNCH(gather_k, galv_cu_blocks(n / 4), 256, 0, galv_cu.stream, (uint32_t *)dst, (const uint32_t *)data, idx,
                idx_es, nidx, outer, D, chunk / 4, galv_cu.err, k);
  } else {
    GALV_LAUNCH(gather_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, (uint8_t *)dst, (const uint8_t *)data, idx, idx_es,
                nidx, outer, D, chunk, galv_cu.err, k);
  }
  GALV_CU_LAUNCHED();
}

/* gather_nd / scatter_nd: s holds the k dims the index tuples address; one
 * thread per 4-byte word (or byte) of a row; scatter_nd copies data first,
 * then writes the update rows, or combines them into f32 data atomically
 * (red 1..4: add, mul, max, min; atomic_red). */
__device__ static void atomic_red(float *p, float v, int red) {
  if (red == 1) {
    atomicAdd(p, v);
    return;
  }
  /* compare-and-swap loop; the first read is an atomic too (a swap of a bit
   * pattern with itself), so no plain load meets another thread's swap */
  int *a = (int *)p, old = atomicCAS(a, 0x7fc00001, 0x7fc00001), seen;
  do {
    seen = old;
    float cur = __int_as_float(seen);
    old = atomicCAS(a, seen, __float_as_int(GALV_SCATTER_RED(red, cur, v)));
  } while (old != seen);
}

template <typename I>
__device__ static int64_t nd_row(const I *idx, int64_t r, const shape_t &s, int *err, int k) {
  int64_t off = 0;
  for (int j = 0; j < s.rank; j++) {
    int64_t v = idx[r * s.rank + j], d = s.dims[j];
    if (v < -d || v >= d) {
      atomicCAS(err, 0, k + 1);
      v = 0;
    }
    off = off * d + (v < 0 ? v + d : v);
  }
  return off;
}

template <typename E>
__global__ void gather_nd_k(E *dst, const E *data, const void *idx, int idx_es, int64_t rows, shape_t s,
                            int64_t words, int *err, int k) {
  GRID_STRIDE(i, rows * words) {
    int64_t r = i / words, w = i % words;
    int64_t off = idx_es == 8 ? nd_row((const int64_t *)idx, r, s, err, k) : nd_row((const int32_t *)idx, r, s, err, k);
    dst[i] = data[off * words + w];
  }
}

template <typename E>
__global__ void scatter_nd_k(E *dst, const E *upd, const void *idx, int idx_es, int64_t rows, shape_t s,
                             int64_t words, int red, int *err, int k) {
  GRID_STRIDE(i, rows * words) {
    int64_t r = i / words, w = i % words;
    int64_t off = idx_es == 8 ? nd_row((const int64_t *)idx, r, s, err, k) : nd_row((const int32_t *)idx, r, s, err, k);
    if (red) atomic_red((float *)dst + off * words + w, ((const float *)upd)[i], red);
    else dst[off * words + w] = upd[i];
  }
}

void galv_cu_gather_nd(void *dst, const void *data, const void *idx, int idx_es, int64_t rows, int kd,
                       const int64_t *dims, int64_t chunk, int k) {
  if (rows * chunk == 0) return;
  shape_t s = mkshape(kd, dims, NULL);
  if (chunk % 4 == 0)
    GALV_LAUNCH(gather_nd_k, galv_cu_blocks(rows * chunk / 4), 256, 0, galv_cu.stream, (uint32_t *)dst,
                (const uint32_t *)data, idx, idx_es, rows, s, chunk / 4, galv_cu.err, k);
  else
    GALV_LAUNCH(gather_nd_k, galv_cu_blocks(rows * chunk), 256, 0, galv_cu.stream, (uint8_t *)dst, (const uint8_t *)data,
                idx, idx_es, rows, s, chunk, galv_cu.err, k);
  GALV_CU_LAUNCHED();
}

void galv_cu_scatter_nd(void *dst, const void *data, int64_t nbytes, const void *idx, int idx_es, const void *upd,
                        int64_t rows, int kd, const int64_t *dims, int64_t chunk, int red, int k) {
  if (dst != data && nbytes)
    cudaCheck(cudaMemcpyAsync(dst, data, (size_t)nbytes, cudaMemcpyDeviceToDevice, galv_cu.stream));
  if (rows * chunk == 0) return;
  shape_t s = mkshape(kd, dims, NULL);
  if (chunk % 4 == 0)
    GALV_LAUNCH(scatter_nd_k, galv_cu_blocks(rows * chunk / 4), 256, 0, galv_cu.stream, (uint32_t *)dst,
                (const uint32_t *)upd, idx, idx_es, rows, s, chunk / 4, red, galv_cu.err, k);
  else
    GALV_LAUNCH(scatter_nd_k, galv_cu_blocks(rows * chunk), 256, 0, galv_cu.stream, (uint8_t *)dst, (const uint8_t *)upd,
                idx, idx_es, rows, s, chunk, 0, galv_cu.err, k);
  GALV_CU_LAUNCHED();
}

/* gather_elements / scatter_elements: one thread per index element; s holds
 * the indices' dims and data's strides */
template <typename I>
__device__ static int64_t elem_off(const I *idx, int64_t i, const shape_t &s, int axis, int64_t D, int *err, int k) {
  int64_t off = 0, q = i;
  for (int d = s.rank - 1; d >= 0; d--) {
    int64_t c = q % s.dims[d];
    q /= s.dims[d];
    if (d == axis) {
      c = idx[i];
      if (c < -D || c >= D) {
        atomicCAS(err, 0, k + 1);
        c = 0;
      }
      if (c < 0) c += D;
    }
    off += c * s.str[d];
  }
  return off;
}

template <typename E>
__global__ void gather_elements_k(E *dst, const E *data, const void *idx, int idx_es, int64_t n, shape_t s, int axis,
                                  int64_t D, int *err, int k) {
  GRID_STRIDE(i, n) {
    int64_t off = idx_es == 8 ? elem_off((const int64_t *)idx, i, s, axis, D, err, k)
                              : elem_off((const int32_t *)idx, i, s, axis, D, err, k);
    dst[i] = data[off];
  }
}

template <typename E>
__global__ void scatter_elements_k(E *dst, const E *upd, const void *idx, int idx_es, int64_t n, shape_t s, int axis,
                                   int64_t D, int red, int *err, int k) {
  GRID_STRIDE(i, n) {
    int64_t off = idx_es == 8 ? elem_off((const int64_t *)idx, i, s, axis, D, err, k)
                              : elem_off((const int32_t *)idx, i, s, axis, D, err, k);
    if (red) atomic_red((float *)dst + off, ((const float *)upd)[i], red);
    else dst[off] = upd[i];
  }
}

#define ELEM_LAUNCH(kern, es, dst, src, ...)                                                                           \
  switch (es) {                                                                                                       \
  case 1: GALV_LAUNCH(kern, galv_cu_blocks(n), 256, 0, galv_cu.stream, (uint8_t *)dst, (const uint8_t *)src, __VA_ARGS__); break;    \
  case 2: GALV_LAUNCH(kern, galv_cu_blocks(n), 256, 0, galv_cu.stream, (uint16_t *)dst, (const uint16_t *)src, __VA_ARGS__); break;  \
  case 4: GALV_LAUNCH(kern, galv_cu_blocks(n), 256, 0, galv_cu.stream, (uint32_t *)dst, (const uint32_t *)src, __VA_ARGS__); break;  \
  default: GALV_LAUNCH(kern, galv_cu_blocks(n), 256, 0, galv_cu.stream, (uint64_t *)dst, (const uint64_t *)src, __VA_ARGS__); break; \
  }

void galv_cu_gather_elements(void *dst, const void *data, const void *idx, int idx_es, int rank, const int64_t *dims,
                             const int64_t *str, int axis, int64_t D, size_t es, int k) {
  int64_t n = numel(rank, dims);
  if (n == 0) return;
  shape_t s = mkshape(rank, dims, str);
  ELEM_LAUNCH(gather_elements_k, es, dst, data, idx, idx_es, n, s, axis, D, galv_cu.err, k);
  GALV_CU_LAUNCHED();
}

void galv_cu_scatter_elements(void *dst, const void *data, int64_t nbytes, const void *idx, int idx_es, const void *upd,
                              int rank, const int64_t *dims, const int64_t *str, int axis, int64_t D, size_t es, int red,
                              int k) {
  if (dst != data && nbytes)
    cudaCheck(cudaMemcpyAsync(dst, data, (size_t)nbytes, cudaMemcpyDeviceToDevice, galv_cu.stream));
  int64_t n = numel(rank, dims);
  if (n == 0) return;
  shape_t s = mkshape(rank, dims, str);
  ELEM_LAUNCH(scatter_elements_k, es, dst, upd, idx, idx_es, n, s, axis, D, red, galv_cu.err, k);
  GALV_CU_LAUNCHED();
}
#undef ELEM_LAUNCH

/* topk: one thread per row; pick t is the first element (in TopK's total
 * order) after pick t - 1, so no scratch and no sort: O(k len) per row,
 * for the small k of the models' TopK. x and the values in their storage
 * (f32 or bf16, each its own), compared in fp32 of the widened value; a
 * picked value is stored back unchanged (a bf16 value is exact in fp32). */
template <typename TX, typename TY>
__global__ void topk_k(TY *vals, int64_t *idx, const TX *x, int64_t rows, int64_t len, int64_t inner, int64_t k,
                       int largest) {
  GRID_STRIDE(r, rows) {
    int64_t o = r / inner, j = r % inner;
    const TX *xr = x + o * len * inner + j;
    float pv = 0.0f;
    int64_t pi = -1;
    for (int64_t t = 0; t < k; t++) {
      float bv = 0.0f;
      int64_t bi = -1;
      for (int64_t i = 0; i < len; i++) {
        float v = ldf(xr, i * inner);
        if (pi >= 0 && !(GALV_TOPK_BEFORE(pv, pi, v, i, largest))) continue;
        if (bi < 0 || GALV_TOPK_BEFORE(v, i, bv, bi, largest)) bv = v, bi = i;
      }
      stf(vals, (o * k + t) * inner + j, bv);
      idx[(o * k + t) * inner + j] = bi;
      pv = bv, pi = bi;
    }
  }
}

void galv_cu_topk(int xdt, int ydt, void *vals, int64_t *idx, const void *x, int64_t outer, int64_t len, int64_t inner,
                  int64_t k, int largest) {
  int64_t rows = outer * inner;
  if (rows == 0 || k == 0) return;
  unsigned g = galv_cu_blocks(rows);
  cudaStream_t st = galv_cu.stream;
  GALV_CU_DISPATCH2(xdt, ydt, TX, TY,
                    GALV_LAUNCH(topk_k, g, 256, 0, st, (TY *)vals, idx, (const TX *)x, rows, len, inner, k, largest));
  GALV_CU_LAUNCHED();
}

template <typename E>
__global__ void trilu_k(E *dst, const E *src, int64_t n, int64_t R, int64_t C, int64_t kd, int upper) {
  GRID_STRIDE(i, n) {
    int64_t c = i % C, r = (i / C) % R;
    bool keep = upper ? c - r >= kd : c - r <= kd;
    dst[i] = keep ? src[i] : E(0);
  }
}

void galv_cu_trilu(void *dst, const void *src, size_t es, int64_t batch, int64_t R, int64_t C, int64_t kd, int upper) {
  int64_t n = batch * R * C;
  if (n == 0) return;
  unsigned g = galv_cu_blocks(n);
  cudaStream_t st = galv_cu.stream;
  switch (es) {
  case 1: GALV_LAUNCH(trilu_k, g, 256, 0, st, (uint8_t *)dst, (const uint8_t *)src, n, R, C, kd, upper); break;
  case 2: GALV_LAUNCH(trilu_k, g, 256, 0, st, (uint16_t *)dst, (const uint16_t *)src, n, R, C, kd, upper); break;
  case 4: GALV_LAUNCH(trilu_k, g, 256, 0, st, (uint32_t *)dst, (const uint32_t *)src, n, R, C, kd, upper); break;
  case 8: GALV_LAUNCH(trilu_k, g, 256, 0, st, (uint64_t *)dst, (const uint64_t *)src, n, R, C, kd, upper); break;
  default: galv_fatal("trilu: element size %zu not supported", es);
  }
  GALV_CU_LAUNCHED();
}

/* cumsum over L of rows [outer, L, inner] (ONNX CumSum; the CPU target's galv_cumsum): one thread per row, each
 * element read as V and summed in A (floats, 16-bit ones through float, in double; integers in 64 bits), each prefix
 * stored back as E */
template <typename E, typename V, typename A>
__global__ void cumsum_k(E *dst, const E *src, int64_t rows, int64_t L, int64_t inner, int exclusive, int reverse) {
  GRID_STRIDE(r, rows) {
    int64_t a = r / inner, c = r % inner;
    A s = 0;
    for (int64_t t = 0; t < L; t++) {
      int64_t l = reverse ? L - 1 - t : t, i = (a * L + l) * inner + c;
      if (exclusive) dst[i] = E((V)s);
      s += (A)(V)src[i];
      if (!exclusive) dst[i] = E((V)s);
    }
  }
}

void galv_cu_cumsum(int dt, void *dst, const void *src, int64_t outer, int64_t L, int64_t inner, int exclusive, int reverse) {
  int64_t rows = outer * inner;
  if (rows == 0 || L == 0) return;
  unsigned g = galv_cu_blocks(rows);
  cudaStream_t st = galv_cu.stream;
  switch (dt) {
  case GALV_F32: GALV_LAUNCH((cumsum_k<float, float, double>), g, 256, 0, st, (float *)dst, (const float *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_BF16: GALV_LAUNCH((cumsum_k<galv_bf16, float, double>), g, 256, 0, st, (galv_bf16 *)dst, (const galv_bf16 *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_F16: GALV_LAUNCH((cumsum_k<galv_f16, float, double>), g, 256, 0, st, (galv_f16 *)dst, (const galv_f16 *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_I64: GALV_LAUNCH((cumsum_k<int64_t, int64_t, int64_t>), g, 256, 0, st, (int64_t *)dst, (const int64_t *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_I32: GALV_LAUNCH((cumsum_k<int32_t, int64_t, int64_t>), g, 256, 0, st, (int32_t *)dst, (const int32_t *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_I16: GALV_LAUNCH((cumsum_k<int16_t, int64_t, int64_t>), g, 256, 0, st, (int16_t *)dst, (const int16_t *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_I8: GALV_LAUNCH((cumsum_k<int8_t, int64_t, int64_t>), g, 256, 0, st, (int8_t *)dst, (const int8_t *)src, rows, L, inner, exclusive, reverse); break;
  case GALV_U8: GALV_LAUNCH((cumsum_k<uint8_t, int64_t, int64_t>), g, 256, 0, st, (uint8_t *)dst, (const uint8_t *)src, rows, L, inner, exclusive, reverse); break;
  default: galv_fatal("cumsum: %s not supported", galv_dtype_name(dt));
  }
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- warp reductions */

__device__ static inline float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ static inline float warp_max(float v) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* ---------------------------------------------------------------- reduce */

/* One warp per output element; the reduced dims are walked by index r.
 * kept: dims/strides of the output index space in the input; red: the
 * reduced dims and their input strides. Max/min propagate NaN (as eval). */
template <typename TY, typename TX>
__global__ void reduce_k(TY *y, const TX *x, int64_t no, shape_t kept, shape_t red, int64_t nr, int kind) {
  int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t o = warp; o < no; o += nwarps) {
    int64_t q = o, base = 0;
    for (int d = kept.rank - 1; d >= 0; d--) {
      int64_t t = q / kept.dims[d];
      base += (q - t * kept.dims[d]) * kept.str[d];
      q = t;
    }
    float acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0.0f;
    bool nan = false;
    for (int64_t r = lane; r < nr; r += 32) {
      int64_t s = r, off = base;
      for (int d = red.rank - 1; d >= 0; d--) {
        int64_t t = s / red.dims[d];
        off += (s - t * red.dims[d]) * red.str[d];
        s = t;
      }
      float v = ldf(x, off);
      nan |= v != v;
      acc = kind < 2 ? acc + v : kind == 2 ? fmaxf(acc, v) : fminf(acc, v);
    }
    if (kind < 2) acc = warp_sum(acc);
    else if (kind == 2) acc = warp_max(acc);
    else acc = -warp_max(-acc);
    nan = __any_sync(0xffffffffu, nan);
    if (kind == 1) acc /= (float)nr;
    if (nan && kind >= 2) acc = NAN;
    if (lane == 0) stf(y, o, acc);
  }
}

void galv_cu_reduce(int dt, void *y, const void *x, int rank, const int64_t *dims, const int64_t *ostr, int64_t no,
                    int kind) {
  galv_cu_reduce_to(dt, dt, y, x, rank, dims, ostr, no, kind);
}

void galv_cu_reduce_to(int xdt, int ydt, void *y, const void *x, int rank, const int64_t *dims, const int64_t *ostr,
                       int64_t no, int kind) {
  shape_t kept, red;
  memset(&kept, 0, sizeof kept);
  memset(&red, 0, sizeof red);
  int64_t str[MAXR], k = 1, nr = 1;
  for (int d = rank - 1; d >= 0; d--) str[d] = k, k *= dims[d];
  for (int d = 0; d < rank; d++) {
    if (ostr[d] == 0 && dims[d] != 1) {
      red.dims[red.rank] = dims[d], red.str[red.rank++] = str[d], nr *= dims[d];
    } else {
      kept.dims[kept.rank] = dims[d], kept.str[kept.rank++] = str[d];
    }
  }
  if (no == 0) return;
  unsigned g = galv_cu_blocks(no * 32);
  cudaStream_t st = galv_cu.stream;
  GALV_CU_DISPATCH2(xdt, ydt, TX, TY, GALV_LAUNCH(reduce_k, g, 256, 0, st, (TY *)y, (const TX *)x, no, kept, red, nr, kind));
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- softmax */

/* One warp per row of L contiguous elements: one pass for the running max
 * and sum (online softmax: the sum is rescaled when the max grows), one pass
 * writing. Rows that are all -inf give NaN, as the reference does. */
template <typename T>
__global__ void softmax_rows_k(T *y, const T *x, int64_t rows, int64_t L, int log_softmax) {
  int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t row = warp; row < rows; row += nwarps) {
    const T *xr = x + row * L;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = lane; j < L; j += 32) {
      float v = ldf(xr, j);
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else if (v != -INFINITY) {
        s += expf(v - m);
      }
    }
    float M = warp_max(m);
    s = m == -INFINITY ? 0.0f : s * expf(m - M);
    s = warp_sum(s);
    float inv = 1.0f / s, ls = logf(s);
    T *yr = y + row * L;
    for (int64_t j = lane; j < L; j += 32) {
      float v = ldf(xr, j) - M;
      stf(yr, j, log_softmax ? v - ls : expf(v) * inv);
    }
  }
}

/* strided rows (softmax over a non-last axis): one thread per row */
template <typename T>
__global__ void softmax_strided_k(T *y, const T *x, int64_t outer, int64_t L, int64_t inner, int log_softmax) {
  GRID_STRIDE(r, outer * inner) {
    int64_t base = (r / inner) * L * inner + r % inner;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = 0; j < L; j++) m = fmaxf(m, ldf(x, base + j * inner));
    for (int64_t j = 0; j < L; j++) s += expf(ldf(x, base + j * inner) - m);
    for (int64_t j = 0; j < L; j++) {
      float v = ldf(x, base + j * inner) - m;
      stf(y, base + j * inner, log_softmax ? v - logf(s) : expf(v) / s);
    }
  }
}

void galv_cu_softmax(int dt, void *y, const void *x, int64_t outer, int64_t L, int64_t inner, int log_softmax) {
  if (outer * L * inner == 0) return;
  cudaStream_t st = galv_cu.stream;
  if (inner == 1) {
    unsigned g = galv_cu_blocks(outer * 32);
    GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(softmax_rows_k, g, 256, 0, st, (T *)y, (const T *)x, outer, L, log_softmax));
  } else {
    unsigned g = galv_cu_blocks(outer * inner);
    GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(softmax_strided_k, g, 256, 0, st, (T *)y, (const T *)x, outer, L, inner, log_softmax));
  }
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- dropout */

/* One thread per element: its global coordinates (local index, shard
 * offset, the accumulated microbatch's and the pipeline microbatch's rows),
 * the mask of runtime/galv_rng.h, the scale in fp32 as the CPU kernel. */
template <typename T>
__global__ void dropout_k(T *y, const T *x, galv_dropout_desc d, const int64_t *off, int64_t n, uint64_t key, int64_t mb) {
  GRID_STRIDE(e, n) {
    int64_t g[GALV_RNG_MAX_RANK], rem = e;
    for (int k = d.rank - 1; k >= 0; k--) {
      g[k] = rem % d.dims[k] + (off ? off[k] : 0);
      rem /= d.dims[k];
    }
    if (d.rank) g[0] = galv_rng_row(g[0], d.acc[0], d.acc[1], d.acc[2], mb, d.rows);
    stf(y, e, galv_rng_keep(key, g, d.rank, d.thr) ? ldf(x, e) * d.scale : 0.0f);
  }
}

void galv_cu_dropout(int dt, void *y, const void *x, const galv_dropout_desc *d, const int64_t *off, int64_t step,
                     int64_t mb) {
  int64_t n = 1;
  for (int k = 0; k < d->rank; k++) n *= d->dims[k];
  if (n == 0) return;
  cudaStream_t st = galv_cu.stream;
  uint64_t key = galv_rng_key(d->seed, d->id, (uint64_t)step);
  unsigned g = galv_cu_blocks(n);
  GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(dropout_k, g, 256, 0, st, (T *)y, (const T *)x, *d, off, n, key, mb));
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- layer / rms norm */

/* One warp per row: one pass computing mean and variance (Welford per lane,
 * merged across the warp — stable where sum/sum-of-squares is not), one pass
 * writing. The row stays in L1/L2 between the two. */
template <typename T>
__global__ void norm_k(T *y, const T *x, const T *scale, int64_t sn, const T *bias, int64_t bn, int64_t rows, int64_t N,
                       float eps, int rms) {
  int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t row = warp; row < rows; row += nwarps) {
    const T *xr = x + row * N;
    float n = 0, mean = 0, m2 = 0;
    for (int64_t j = lane; j < N; j += 32) {
      float v = ldf(xr, j);
      if (rms) {
        m2 += v * v;
      } else {
        n += 1;
        float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
      }
    }
    if (rms) {
      m2 = warp_sum(m2);
      mean = 0;
    } else {
      for (int o = 16; o; o >>= 1) { /* Chan et al. merge of (n, mean, m2) */
        float n2 = __shfl_xor_sync(0xffffffffu, n, o), mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
        float m22 = __shfl_xor_sync(0xffffffffu, m2, o), nn = n + n2;
        if (nn > 0) {
          float d = mean2 - mean;
          m2 = m2 + m22 + d * d * n * n2 / nn;
          mean = mean + d * n2 / nn;
        }
        n = nn;
      }
    }
    float rstd = rsqrtf(m2 / (float)N + eps);
    T *yr = y + row * N;
    for (int64_t j = lane; j < N; j += 32) {
      float v = (ldf(xr, j) - mean) * rstd * ldf(scale, sn == 1 ? 0 : j);
      if (bias) v += ldf(bias, bn == 1 ? 0 : j);
      stf(yr, j, v);
    }
  }
}

void galv_cu_norm(int dt, void *y, const void *x, const void *scale, int64_t sn, const void *bias, int64_t bn,
                  int64_t outer, int64_t N, float eps, int rms) {
  if (outer * N == 0) return;
  unsigned g = galv_cu_blocks(outer * 32);
  GALV_CU_DISPATCH(dt, T,
                   GALV_LAUNCH(norm_k, g, 256, 0, galv_cu.stream, (T *)y, (const T *)x, (const T *)scale, sn,
                               (const T *)bias, bn, outer, N, eps, rms));
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- GEMM */

/* Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets (B, A) with
 * m = N, n = M. A row-major matrix with row stride ld is a column-major one
 * of its transpose with the same ld, so no copy is made. */
/* storage dtype -> cuBLAS type: 16-bit inputs and C (fp32 compute: CUBLAS_COMPUTE_32F) */
static cudaDataType blas_type(int dt) { return dt == GALV_BF16 ? CUDA_R_16BF : dt == GALV_F16 ? CUDA_R_16F : CUDA_R_32F; }

void galv_cu_gemm(int dt, const galv_cu_gemm_desc *g, const void *a, const void *b, void *c) {
  galv_cu_gemm_to(dt, dt, g, a, b, c);
}

void galv_cu_gemm_to(int dt, int cdt, const galv_cu_gemm_desc *g, const void *a, const void *b, void *c) {
  if (g->M == 0 || g->N == 0 || g->batch == 0) return;
  const float one = 1.0f, zero = 0.0f;
  cudaDataType ty = blas_type(dt), cty = blas_type(cdt);
  if (cdt != GALV_F32 && cdt != dt)
    galv_fatal("gemm: %s inputs with a %s result are not supported", galv_dtype_name(dt), galv_dtype_name(cdt));
  cublasOperation_t opb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g->K == 0) {
    size_t es = cdt == GALV_F32 ? 4 : 2;
    cudaCheck(cudaMemsetAsync(c, 0, (size_t)(g->batch * g->M * g->N) * es, galv_cu.stream));
    return;
  }
  cublasCheck(cublasGemmStridedBatchedEx(galv_cu.blas, opb, opa, (int)g->N, (int)g->M, (int)g->K, &one, b, ty,
                                         (int)g->ldb, g->sb, a, ty, (int)g->lda, g->sa, &zero, c, cty, (int)g->N,
                                         g->M * g->N, (int)g->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* ---------------------------------------------------------------- conv */

/* Direct convolution, one thread per output element (patch embeddings and
 * small convs; a large conv would want implicit GEMM). Layout NC + S spatial. */
typedef struct {
  galv_conv_desc d;
} conv_arg;

template <typename T>
__global__ void conv_k(T *y, const T *x, const T *w, const T *bias, conv_arg a, int64_t n) {
  const galv_conv_desc &d = a.d;
  GRID_STRIDE(i, n) {
    int64_t r = i, op[MAXR];
    int S = d.S;
    for (int s = S - 1; s >= 0; s--) op[s] = r % d.out[s], r /= d.out[s];
    int64_t m = r % d.M, b = r / d.M, cpg = d.C / d.G, mpg = d.M / d.G, g = m / mpg;
    int64_t kn = 1;
    for (int s = 0; s < S; s++) kn *= d.k[s];
    float acc = bias ? ldf(bias, m) : 0.0f;
    for (int64_t c = 0; c < cpg; c++) {
      for (int64_t kk = 0; kk < kn; kk++) {
        int64_t q = kk, xoff = 0, ok = 1, xs = 1;
        for (int s = S - 1; s >= 0; s--) {
          int64_t ks = q % d.k[s];
          q /= d.k[s];
          int64_t p = op[s] * d.stride[s] - d.pad[s] + ks * d.dil[s];
          ok &= p >= 0 && p < d.in[s];
          xoff += p * xs;
          xs *= d.in[s];
        }
        if (!ok) continue;
        acc += ldf(x, (b * d.C + g * cpg + c) * xs + xoff) * ldf(w, (m * cpg + c) * kn + kk);
      }
    }
    stf(y, i, acc);
  }
}

void galv_cu_conv(int dt, const galv_conv_desc *d, const void *x, const void *w, const void *bias, void *y) {
  int64_t n = d->N * d->M;
  for (int s = 0; s < d->S; s++) n *= d->out[s];
  if (n == 0) return;
  conv_arg a;
  a.d = *d;
  unsigned g = galv_cu_blocks(n);
  GALV_CU_DISPATCH(dt, T,
                   GALV_LAUNCH(conv_k, g, 256, 0, galv_cu.stream, (T *)y, (const T *)x, (const T *)w, (const T *)bias, a, n));
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- pool */

typedef struct {
  galv_conv_desc d;
  int64_t pe[GALV_RT_MAX_RANK];
  int mode, cip;
} pool_arg;

/* The avg divisor of output position op[] (the window clipped to the input,
 * or with cip to the padded extent). */
__device__ static int64_t pool_count(const pool_arg &a, const int64_t *op) {
  const galv_conv_desc &d = a.d;
  int64_t count = 1;
  for (int s = 0; s < d.S; s++) {
    int64_t c = 0;
    for (int64_t j = 0; j < d.k[s]; j++) {
      int64_t q = op[s] * d.stride[s] - d.pad[s] + j * d.dil[s];
      c += a.cip ? (q >= -d.pad[s] && q < d.in[s] + a.pe[s]) : (q >= 0 && q < d.in[s]);
    }
    count *= c;
  }
  return count;
}

/* Visits output p's window of plane xp in order: max (mode 0) returns the
 * value and *arg the offset of the first maximum; avg returns the mean. */
template <typename T>
__device__ static float pool_one(const pool_arg &a, const T *xp, int64_t p, int64_t *arg, int64_t *cnt) {
  const galv_conv_desc &d = a.d;
  int S = d.S;
  int64_t op[GALV_RT_MAX_RANK], kn = 1;
  for (int s = S - 1; s >= 0; s--) op[s] = p % d.out[s], p /= d.out[s];
  for (int s = 0; s < S; s++) kn *= d.k[s];
  float best = -INFINITY, sum = 0.0f;
  *arg = -1;
  for (int64_t kk = 0; kk < kn; kk++) {
    int64_t q = kk, off = 0, ok = 1, kc[GALV_RT_MAX_RANK];
    for (int s = S - 1; s >= 0; s--) kc[s] = q % d.k[s], q /= d.k[s];
    for (int s = 0; s < S && ok; s++) {
      int64_t pos = op[s] * d.stride[s] - d.pad[s] + kc[s] * d.dil[s];
      ok = pos >= 0 && pos < d.in[s];
      off = off * d.in[s] + pos;
    }
    if (!ok) continue;
    float v = ldf(xp, off);
    if (*arg < 0 || v > best || (isnan(v) && !isnan(best))) best = v, *arg = off;
    sum += v;
  }
  *cnt = pool_count(a, op);
  return a.mode == 0 ? best : (*cnt ? sum / (float)*cnt : 0.0f);
}

template <typename T>
__global__ void pool_k(T *y, const T *x, pool_arg a, int64_t n, int64_t P, int64_t IS) {
  GRID_STRIDE(i, n) {
    int64_t arg, cnt;
    stf(y, i, pool_one(a, x + (i / P) * IS, i % P, &arg, &cnt));
  }
}

template <typename T>
__global__ void pool_grad_k(T *dx, const T *x, const T *dy, pool_arg a, int64_t planes, int64_t P, int64_t IS) {
  const galv_conv_desc &d = a.d;
  GRID_STRIDE(pl, planes) {
    T *dp = dx + pl * IS;
    for (int64_t j = 0; j < IS; j++) stf(dp, j, 0.0f);
    for (int64_t p = 0; p < P; p++) {
      int64_t arg, cnt;
      pool_one(a, x + pl * IS, p, &arg, &cnt);
      float g = ldf(dy, pl * P + p);
      if (a.mode == 0) {
        if (arg >= 0) stf(dp, arg, ldf(dp, arg) + g);
        continue;
      }
      /* avg: every in-input position of the window */
      int64_t op[GALV_RT_MAX_RANK], q = p, kn = 1;
      for (int s = d.S - 1; s >= 0; s--) op[s] = q % d.out[s], q /= d.out[s];
      for (int s = 0; s < d.S; s++) kn *= d.k[s];
      float v = cnt ? g / (float)cnt : 0.0f;
      for (int64_t kk = 0; kk < kn; kk++) {
        int64_t r = kk, off = 0, ok = 1, kc[GALV_RT_MAX_RANK];
        for (int s = d.S - 1; s >= 0; s--) kc[s] = r % d.k[s], r /= d.k[s];
        for (int s = 0; s < d.S && ok; s++) {
          int64_t pos = op[s] * d.stride[s] - d.pad[s] + kc[s] * d.dil[s];
          ok = pos >= 0 && pos < d.in[s];
          off = off * d.in[s] + pos;
        }
        if (ok) stf(dp, off, ldf(dp, off) + v);
      }
    }
  }
}

static pool_arg pool_arg_of(const galv_conv_desc *d, const int64_t *pe, int mode, int cip, int64_t *P, int64_t *IS) {
  pool_arg a;
  a.d = *d;
  a.mode = mode, a.cip = cip;
  *P = 1, *IS = 1;
  for (int s = 0; s < d->S; s++) a.pe[s] = pe[s], *P *= d->out[s], *IS *= d->in[s];
  return a;
}

void galv_cu_pool(int dt, const galv_conv_desc *d, const int64_t *pe, int mode, int cip, const void *x, void *y) {
  int64_t P, IS;
  pool_arg a = pool_arg_of(d, pe, mode, cip, &P, &IS);
  int64_t n = d->N * d->C * P;
  if (n == 0) return;
  unsigned g = galv_cu_blocks(n);
  GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(pool_k, g, 256, 0, galv_cu.stream, (T *)y, (const T *)x, a, n, P, IS));
  GALV_CU_LAUNCHED();
}

void galv_cu_pool_grad(int dt, const galv_conv_desc *d, const int64_t *pe, int mode, int cip, const void *x,
                       const void *dy, void *dx) {
  int64_t P, IS;
  pool_arg a = pool_arg_of(d, pe, mode, cip, &P, &IS);
  int64_t planes = d->N * d->C;
  if (planes == 0 || IS == 0) return;
  unsigned g = galv_cu_blocks(planes);
  GALV_CU_DISPATCH(dt, T,
                   GALV_LAUNCH(pool_grad_k, g, 256, 0, galv_cu.stream, (T *)dx, (const T *)x, (const T *)dy, a, planes, P, IS));
  GALV_CU_LAUNCHED();
}

/* ---------------------------------------------------------------- conversions */

/* stf / ldf: round to nearest even (__float2bfloat16, __float2half: an f16 beyond 65520 is inf) */
template <typename T>
__global__ void from_f32_k(T *d, const float *s, int64_t n) {
  GRID_STRIDE(i, n) stf(d, i, s[i]);
}
template <typename T>
__global__ void to_f32_k(float *d, const T *s, int64_t n) {
  GRID_STRIDE(i, n) d[i] = ldf(s, i);
}

void galv_cu_from_f32(int dt, void *dst, const float *src, int64_t n) {
  if (n == 0) return;
  if (dt != GALV_BF16 && dt != GALV_F16) {
    cudaCheck(cudaMemcpyAsync(dst, src, (size_t)n * 4, cudaMemcpyDeviceToDevice, galv_cu.stream));
    return;
  }
  if (dt == GALV_BF16) GALV_LAUNCH(from_f32_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, (galv_bf16 *)dst, src, n);
  else GALV_LAUNCH(from_f32_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, (galv_f16 *)dst, src, n);
  GALV_CU_LAUNCHED();
}

void galv_cu_to_f32(int dt, float *dst, const void *src, int64_t n) {
  if (n == 0) return;
  if (dt != GALV_BF16 && dt != GALV_F16) {
    cudaCheck(cudaMemcpyAsync(dst, src, (size_t)n * 4, cudaMemcpyDeviceToDevice, galv_cu.stream));
    return;
  }
  if (dt == GALV_BF16) GALV_LAUNCH(to_f32_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, dst, (const galv_bf16 *)src, n);
  else GALV_LAUNCH(to_f32_k, galv_cu_blocks(n), 256, 0, galv_cu.stream, dst, (const galv_f16 *)src, n);
  GALV_CU_LAUNCHED();
}
