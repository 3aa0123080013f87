/* galv_emu.h — the CUDA execution layer's view of the device API: what
 * cuda_runtime.h, cuda_bf16.h, cuda_fp16.h, cublas_v2.h and nccl.h declare for galvc's
 * programs when they are compiled by the host C++ compiler (`make emu` ->
 * program-emu) instead of nvcc. Only the symbols the generated programs and
 * runtime/cuda/ use are here (tests/cuda_emu_api.sh fails when a program
 * needs one outside this list), so the layer stays bounded.
 *
 * Device code is ordinary C++: __device__ vanishes, a __global__ function
 * stays a function of its own, threadIdx and blockIdx read the current
 * emulated thread, __shared__ variables are function-local statics (one
 * block runs at a time, so one copy is the block's shared memory) in the
 * section galv_shm — except a template's, where GCC ignores the section;
 * emu.cc finds those as the running kernel's local statics — so that emu.cc
 * can check each kernel's static size against the architecture's 48 KiB
 * and the race-check build find shared accesses, and a
 * launch is GALV_LAUNCH -> galv_emu_launch with a lambda calling the kernel
 * (so template arguments are deduced as under the triple-chevron launch). Barriers, shuffles
 * and votes are calls into the scheduler (emu.cc), which runs the threads
 * of a block as user-level contexts. Nothing here is shared with the CPU
 * target's runtime (runtime/ C files). */
#ifndef GALV_EMU_H
#define GALV_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* a kernel stays a function of its own (no inlining, no cloning): its
 * address names it, so a launch finds its mangled name, which ptxas's
 * register counts and the static __shared__ sizes are keyed by (emu.cc) */
#if defined(__clang__)
#define __global__ __attribute__((noinline))
#else
#define __global__ __attribute__((noipa))
#endif
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static __attribute__((section("galv_shm")))

/* ---- grid geometry */
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
/* set by the scheduler whenever it switches to a thread or block */
extern uint3 galv_emu_thread_idx, galv_emu_block_idx, galv_emu_block_dim, galv_emu_grid_dim;
/* While a launch does not yet know which kernel it runs (it needs to when
 * ptxas's register counts are linked in or dynamic shared memory is
 * asked for), the first read of a built-in index calls
 * galv_emu_kernel_pc, whose return address lies in the kernel's code
 * (the read is inlined there); elsewhere it costs a load and a branch. */
extern int galv_emu_want_pc;
void galv_emu_kernel_pc(void);
static inline __attribute__((always_inline)) void galv_emu_idx_hook(void) {
  if (__builtin_expect(galv_emu_want_pc, 0)) galv_emu_kernel_pc();
}
#define threadIdx (galv_emu_idx_hook(), galv_emu_thread_idx)
#define blockIdx (galv_emu_idx_hook(), galv_emu_block_idx)
#define blockDim (galv_emu_idx_hook(), galv_emu_block_dim)
#define gridDim (galv_emu_idx_hook(), galv_emu_grid_dim)
/* dynamic shared memory: GALV_DYNAMIC_SHARED(T, name) declares T *name, the
 * block's shmem bytes of the launch (an extern shared array under nvcc,
 * galv_cuda.h); here one buffer in galv_shm, the running block's */
void *galv_emu_dynamic_shared(void);
#define GALV_DYNAMIC_SHARED(T, name) T *name = (T *)galv_emu_dynamic_shared()
#define warpSize 32

/* ---- errors, streams, events */
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorNotReady = 600,
};
typedef struct galv_emu_stream *cudaStream_t;
typedef struct galv_emu_event *cudaEvent_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
#define cudaStreamNonBlocking 0x01
#define cudaEventDisableTiming 0x02
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int multiProcessorCount;
  int major, minor;
  int maxThreadsPerBlock;
};

const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k, cudaStream_t s = 0);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind k, cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s = 0);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);

/* ---- bf16 (cuda_bf16.h): round to nearest even, NaN kept quiet */
struct __nv_bfloat16 {
  uint16_t x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) x = (uint16_t)((u >> 16) | 0x40);
    else x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
  }
  __nv_bfloat16(double d) : __nv_bfloat16((float)d) {}
  __nv_bfloat16(int i) : __nv_bfloat16((float)i) {}
  operator float() const {
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
};
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }

/* ---- f16 (cuda_fp16.h): IEEE binary16, round to nearest even as the GPU's
 * __float2half: beyond the largest finite half (65504; from 65520 on, the
 * rounding boundary) inf, below half the smallest subnormal (2^-25) a signed
 * zero, NaN kept quiet. Widening is exact. */
struct __half {
  uint16_t x;
  __half() = default;
  __half(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t s = u >> 16 & 0x8000, e = u >> 23 & 255, m = u & 0x7fffff;
    if (e == 255) { x = (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0)); return; }
    int ee = (int)e - 112; /* the half's biased exponent */
    if (ee >= 31) { x = (uint16_t)(s | 0x7c00); return; }
    if (ee <= 0) { /* subnormal (or zero): 2^-24 units */
      if (ee < -10) { x = (uint16_t)s; return; }
      m |= 0x800000;
      uint32_t sh = (uint32_t)(14 - ee), r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
      if (rem > half || (rem == half && (r & 1))) r++;
      x = (uint16_t)(s | r);
      return;
    }
    uint32_t r = (uint32_t)ee << 10 | m >> 13, rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++; /* a carry into the exponent: 0x7c00 = inf */
    x = (uint16_t)(s | r);
  }
  __half(double d) : __half((float)d) {}
  __half(int i) : __half((float)i) {}
  operator float() const {
    uint32_t s = (uint32_t)(x >> 15) << 31, e = x >> 10 & 31, m = x & 1023, u;
    if (e == 0) {
      float f = (float)m * 5.9604645e-8f; /* 2^-24 */
      return s ? -f : f;
    }
    u = e == 31 ? s | 0x7f800000u | m << 13 : s | (e + 112) << 23 | m << 13;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
};
static inline __half __float2half(float f) { return __half(f); }
static inline float __half2float(__half h) { return (float)h; }

/* ---- device math without a libm name */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}
static inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}

/* ---- atomics: one block runs at a time and a context switches only at a
 * barrier or warp operation, so a read-modify-write is never interleaved.
 * In the race-check build their accesses are not instrumented as plain
 * loads and stores but reported as atomic (two atomics on the same bytes
 * never race; an atomic and a plain access of another thread may). */
#ifdef GALV_EMU_SHADOW
void galv_emu_atomic_access(void *p, size_t n);
#define GALV_EMU_ATOMIC(p) galv_emu_atomic_access((void *)(p), sizeof *(p))
#define GALV_EMU_ATOMIC_FN static inline __attribute__((no_sanitize_thread))
#else
#define GALV_EMU_ATOMIC(p) ((void)0)
#define GALV_EMU_ATOMIC_FN static inline
#endif
GALV_EMU_ATOMIC_FN int atomicCAS(int *p, int cmp, int val) {
  GALV_EMU_ATOMIC(p);
  int old = *p;
  if (old == cmp) *p = val;
  return old;
}
GALV_EMU_ATOMIC_FN float atomicAdd(float *p, float v) {
  GALV_EMU_ATOMIC(p);
  float old = *p;
  *p = old + v;
  return old;
}
GALV_EMU_ATOMIC_FN double atomicAdd(double *p, double v) {
  GALV_EMU_ATOMIC(p);
  double old = *p;
  *p = old + v;
  return old;
}

/* ---- block and warp synchronisation (emu.cc): CUDA's rules are checked —
 * every thread of the block reaches each __syncthreads, every lane named
 * in a mask calls the warp operation with the same mask. */
void galv_emu_syncthreads(const char *file, int line);
#define __syncthreads() galv_emu_syncthreads(__FILE__, __LINE__)
/* kind: 0 shfl (src lane), 1 shfl_xor (lane ^ arg), 2 shfl_down, 3 shfl_up, 4 any, 5 all, 6 ballot */
uint64_t galv_emu_warp_op(int kind, unsigned mask, uint64_t v, int arg, int width, const char *file, int line);
template <typename T>
static inline T galv_emu_shfl(int kind, unsigned mask, T v, int arg, int width, const char *file, int line) {
  static_assert(sizeof(T) <= 8, "shuffle of a value over 8 bytes");
  uint64_t u = 0;
  memcpy(&u, &v, sizeof v);
  u = galv_emu_warp_op(kind, mask, u, arg, width, file, line);
  memcpy(&v, &u, sizeof v);
  return v;
}
#define __shfl_sync(m, v, l, ...) galv_emu_shfl(0, (m), (v), (l), (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 32, __FILE__, __LINE__)
#define __shfl_xor_sync(m, v, l, ...) galv_emu_shfl(1, (m), (v), (l), (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 32, __FILE__, __LINE__)
#define __shfl_down_sync(m, v, l, ...) galv_emu_shfl(2, (m), (v), (l), (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 32, __FILE__, __LINE__)
#define __shfl_up_sync(m, v, l, ...) galv_emu_shfl(3, (m), (v), (l), (__VA_ARGS__ + 0) ? (__VA_ARGS__ + 0) : 32, __FILE__, __LINE__)
#define __any_sync(m, p) ((int)galv_emu_warp_op(4, (m), (p) != 0, 0, 32, __FILE__, __LINE__))
#define __all_sync(m, p) ((int)galv_emu_warp_op(5, (m), (p) != 0, 0, 32, __FILE__, __LINE__))
#define __ballot_sync(m, p) ((unsigned)galv_emu_warp_op(6, (m), (p) != 0, 0, 32, __FILE__, __LINE__))

/* ---- launch: every block, threads as user-level contexts (emu.cc) */
void galv_emu_launch_erased(const char *kernel, const char *file, int line, dim3 grid, dim3 block, size_t shmem,
                            cudaStream_t s, void (*call)(void *), void *fn);
template <typename F>
static inline void galv_emu_launch(const char *kernel, const char *file, int line, dim3 grid, dim3 block, size_t shmem,
                                   cudaStream_t s, F fn) {
  galv_emu_launch_erased(kernel, file, line, grid, block, shmem, s, [](void *p) { (*(F *)p)(); }, &fn);
}
#define GALV_LAUNCH(kernel, grid, block, shmem, stream, ...)                                                    \
  galv_emu_launch(#kernel, __FILE__, __LINE__, dim3(grid), dim3(block), (size_t)(shmem), (stream),             \
                  [=]() { kernel(__VA_ARGS__); })

#endif
