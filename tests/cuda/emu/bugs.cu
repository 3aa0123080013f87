/* bugs.cu — kernels and host code with the bugs the CUDA execution layer
 * (runtime/cuda/emu/) must catch, one per case, each next to its correct
 * form (tests/cuda_emu.sh runs both: the bug must be reported in one line
 * with exit status 1, the fixed form must pass). Plain CUDA: builds with
 * nvcc too (GALV_LAUNCH is the triple-chevron launch there).
 *
 *   bugs CASE      CASE: race | race-ok | divergence | divergence-ok | mask | mask-ok | oob | oob-ok |
 *                  block2048 | block1024 | grid | stream-race | stream-ok | kernel-race | kernel-ok |
 *                  kernel-apart | host-touch | free-touch | dyn | dyn-race | dyn-over | dyn-oob | regs | regs-ok |
 *                  global-ok | global-block | global-grid | global-atomic | global-mixed | early-race | early-ok
 *   (kernel-race / kernel-ok / kernel-apart, dyn-race, dyn-oob, global-*, early-*: the race-check build, where
 *   kernels' ranges are known and shared and global memory are shadowed; regs / regs-ok: linked with
 *   ptxas's register counts, runtime/cuda/emu/ptxas_regs.sh) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GALV_LAUNCH
#define GALV_LAUNCH(kernel, grid, block, shmem, stream, ...) kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
#endif
#ifndef GALV_DYNAMIC_SHARED /* as runtime/cuda/galv_cuda.h */
#define GALV_DYNAMIC_SHARED(T, name)                                 \
  extern __shared__ __align__(16) unsigned char galv_dynamic_shared_[]; \
  T *name = reinterpret_cast<T *>(galv_dynamic_shared_)
#endif

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "bugs: error: %s: %s\n", #call, cudaGetErrorString(e_));                   \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

/* reverse 256 values through shared memory; the barrier between the
 * writes and the reads of other threads' values is what `race` omits. A
 * template, as the runtime's kernels are: its __shared__ array is not in
 * the galv_shm section (GCC places a template's static locals in COMDAT
 * sections), the layer finds it as the kernel's local static */
template <typename T>
__global__ void reverse_k(T *out, const T *in, int sync) {
  __shared__ T s[256];
  s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  if (sync) __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = s[255 - threadIdx.x];
}

/* every thread of the block adds in[0] to one shared word before the kernel reads any index (`early-race`:
 * a lost update on a GPU), then thread 0 sets it to in[0] and every thread stores it. The layer learns a
 * launch's kernel at its first index read: the accesses before that, in the first launch from a site, are
 * checked all the same. A template, as the runtime's kernels are (its __shared__ word is not in galv_shm) */
template <typename T>
__global__ void early_k(T *out, const T *in, int race) {
  __shared__ T first;
  if (race) first = first + in[0];
  __syncthreads();
  if (threadIdx.x == 0) first = in[0];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = first;
}

/* a block sum where half the threads skip the barrier (divergence) */
__global__ void half_barrier_k(float *out, int all) {
  __shared__ float s[64];
  s[threadIdx.x] = (float)threadIdx.x;
  if (all || threadIdx.x < 32) __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0;
    for (int i = 0; i < 64; i++) t += s[i];
    *out = t;
  }
}

/* a warp sum whose odd lanes name only themselves in the mask */
__global__ void warp_sum_k(float *out, int good) {
  float v = (float)threadIdx.x;
  unsigned mask = good || threadIdx.x % 2 == 0 ? 0xffffffffu : 0x55555555u << 1;
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(mask, v, o);
  if (threadIdx.x == 0) *out = v;
}

/* writes n + extra elements of an n-element buffer */
__global__ void fill_k(float *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = 1.0f;
}

/* reverses each block's values through the launch's dynamic shared memory
 * (blockDim.x floats), next to 32 KiB of static shared memory: the two
 * together must fit 48 KiB; `reach` reads past the launch's bytes. A
 * template, as the runtime's kernels are (its static array's symbol names
 * the function without the return type its own symbol carries) */
template <typename T>
__global__ void dyn_reverse_k(T *out, const T *in, int sync, int reach) {
  GALV_DYNAMIC_SHARED(T, s);
  __shared__ T one[8192];
  unsigned t = threadIdx.x, n = blockDim.x;
  s[t] = in[blockIdx.x * n + t];
  one[t] = 1.0f;
  if (sync) __syncthreads();
  out[blockIdx.x * n + t] = s[n - 1 - t] + one[t] + (reach ? s[n + t] : (T)0);
}

/* 96 values live at once: ptxas gives it 127 registers per thread (sm_80,
 * sm_90), so a block of 1024 threads needs 131072 > 65536 registers */
__global__ void regs_k(float *out, const float *in, int n) {
  float a[96];
#pragma unroll
  for (int j = 0; j < 96; j++) a[j] = in[(threadIdx.x * 3 + j * 97) % n];
  float t = 0;
#pragma unroll
  for (int j = 0; j < 96; j++) t = t * a[95 - j] + a[j] * a[(j * 7) % 96];
  out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}

/* global memory shared between threads of one launch:
 *   0 (ok): in each block thread 0 writes g[b], a barrier, thread 1 reads it into g[8 + b];
 *   1 (block): the same without the barrier (a race inside the block);
 *   2 (grid): thread 0 of every block writes g[0] (two blocks are never ordered);
 *   3 (atomic): every thread of every block adds 1 to g[0] atomically (no race);
 *   4 (mixed): the same, and thread 5 of every block also reads g[0] plainly (a race) */
__global__ void global_k(float *g, int mode) {
  unsigned b = blockIdx.x, t = threadIdx.x;
  if (mode <= 1) {
    if (t == 0) g[b] = (float)(b + 1);
    if (mode == 0) __syncthreads();
    if (t == 1) g[8 + b] = g[b];
  } else if (mode == 2) {
    if (t == 0) g[0] = (float)b;
  } else {
    atomicAdd(g, 1.0f);
    if (mode == 4 && t == 5) g[16 + b] = g[0];
  }
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  float *d = NULL, *e = NULL, h[1024];
  CHECK(cudaMalloc((void **)&d, 1024 * sizeof(float)));
  CHECK(cudaMalloc((void **)&e, 1024 * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  for (int i = 0; i < 1024; i++) h[i] = (float)i;
  CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  if (!strcmp(c, "h2d-race")) {
    /* a legacy-stream copy from pageable memory may land after cudaMemcpy returns: a kernel on a non-blocking
     * stream reading it races with the copy (the GPU check's softmax lab read a half-copied input so) */
    GALV_LAUNCH(reverse_k, 4, 256, 0, s1, e, d, 1);
    CHECK(cudaStreamSynchronize(s1));
    return 0;
  }
  /* the copy has landed once the host synchronises with the legacy stream */
  CHECK(cudaStreamSynchronize(0));
  if (!strcmp(c, "race") || !strcmp(c, "race-ok")) {
    GALV_LAUNCH(reverse_k, 4, 256, 0, s1, e, d, !strcmp(c, "race-ok"));
    CHECK(cudaMemcpyAsync(h, e, sizeof h, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < 1024; i++)
      if (h[i] != (float)(i / 256 * 256 + 255 - i % 256)) {
        fprintf(stderr, "bugs: error: reverse: element %d is %g\n", i, h[i]);
        return 1;
      }
  } else if (!strcmp(c, "early-race") || !strcmp(c, "early-ok")) {
    /* one block: the launch's first block is the one that runs before its kernel is known */
    GALV_LAUNCH(early_k, 1, 64, 0, s1, e, d + 7, !strcmp(c, "early-race"));
    CHECK(cudaMemcpyAsync(h, e, 64 * sizeof(float), cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < 64; i++)
      if (h[i] != 7.0f) {
        fprintf(stderr, "bugs: error: early_k: element %d is %g\n", i, h[i]);
        return 1;
      }
  } else if (!strcmp(c, "divergence") || !strcmp(c, "divergence-ok")) {
    GALV_LAUNCH(half_barrier_k, 1, 64, 0, s1, e, !strcmp(c, "divergence-ok"));
  } else if (!strcmp(c, "mask") || !strcmp(c, "mask-ok")) {
    GALV_LAUNCH(warp_sum_k, 1, 32, 0, s1, e, !strcmp(c, "mask-ok"));
    CHECK(cudaMemcpyAsync(h, e, 4, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    if (h[0] != 496.0f) {
      fprintf(stderr, "bugs: error: warp sum %g\n", h[0]);
      return 1;
    }
  } else if (!strcmp(c, "oob") || !strcmp(c, "oob-ok")) {
    GALV_LAUNCH(fill_k, 4, 256, 0, s1, d, !strcmp(c, "oob") ? 1025 : 1024);
  } else if (!strcmp(c, "block2048") || !strcmp(c, "block1024")) {
    GALV_LAUNCH(fill_k, 1, !strcmp(c, "block2048") ? 2048 : 1024, 0, s1, d, 1024);
  } else if (!strcmp(c, "grid")) {
    GALV_LAUNCH(fill_k, dim3(1, 65536), 32, 0, s1, d, 1024);
  } else if (!strcmp(c, "stream-race") || !strcmp(c, "stream-ok")) {
    /* s1 fills d, s2 copies it to e: without the event s2 may read d before s1 wrote it */
    CHECK(cudaMemsetAsync(d, 0, 4096, s1));
    if (!strcmp(c, "stream-ok")) {
      cudaEvent_t ev;
      CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      CHECK(cudaEventRecord(ev, s1));
      CHECK(cudaStreamWaitEvent(s2, ev, 0));
      CHECK(cudaEventDestroy(ev));
    }
    CHECK(cudaMemcpyAsync(e, d, 4096, cudaMemcpyDeviceToDevice, s2));
  } else if (!strcmp(c, "kernel-race") || !strcmp(c, "kernel-ok") || !strcmp(c, "kernel-apart")) {
    /* a kernel on s1 fills the first half of d; s2 then copies out of d: without an event it may read
     * before the kernel wrote (kernel-race); kernel-apart copies the other half, which the kernel never
     * touches, and needs no event */
    GALV_LAUNCH(fill_k, 2, 256, 0, s1, d, 512);
    if (!strcmp(c, "kernel-ok")) {
      cudaEvent_t ev;
      CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      CHECK(cudaEventRecord(ev, s1));
      CHECK(cudaStreamWaitEvent(s2, ev, 0));
      CHECK(cudaEventDestroy(ev));
    }
    CHECK(cudaMemcpyAsync(e, d + (!strcmp(c, "kernel-apart") ? 512 : 256), 1024, cudaMemcpyDeviceToDevice, s2));
  } else if (!strncmp(c, "dyn", 3)) {
    /* 256 threads x 4 bytes of dynamic shared memory per block (dyn-over: 20 KiB, over 48 KiB with the
     * kernel's 32 KiB static) */
    GALV_LAUNCH(dyn_reverse_k, 4, 256, !strcmp(c, "dyn-over") ? 20480 : 1024, s1, e, d, strcmp(c, "dyn-race") != 0,
                !strcmp(c, "dyn-oob"));
    CHECK(cudaMemcpyAsync(h, e, sizeof h, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < 1024; i++)
      if (h[i] != (float)(i / 256 * 256 + 255 - i % 256) + 1.0f) {
        fprintf(stderr, "bugs: error: dynamic shared reverse: element %d is %g\n", i, h[i]);
        return 1;
      }
  } else if (!strcmp(c, "regs") || !strcmp(c, "regs-ok")) {
    GALV_LAUNCH(regs_k, 1, !strcmp(c, "regs") ? 1024 : 512, 0, s1, e, d, 1024);
  } else if (!strncmp(c, "global-", 7)) {
    static const char *modes[] = {"global-ok", "global-block", "global-grid", "global-atomic", "global-mixed"};
    int m = 0;
    while (m < 5 && strcmp(c, modes[m])) m++;
    if (m == 5) return 2;
    CHECK(cudaMemsetAsync(e, 0, 4096, s1));
    GALV_LAUNCH(global_k, 2, 64, 0, s1, e, m);
    CHECK(cudaMemcpyAsync(h, e, sizeof h, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    if ((m == 0 && (h[8] != 1.0f || h[9] != 2.0f)) || (m == 3 && h[0] != 128.0f)) {
      fprintf(stderr, "bugs: error: %s: %g %g %g\n", c, h[0], h[8], h[9]);
      return 1;
    }
  } else if (!strcmp(c, "host-touch")) {
    CHECK(cudaStreamSynchronize(s1));
    d[3] = 1.0f; /* a device pointer dereferenced on the host */
  } else if (!strcmp(c, "free-touch")) {
    CHECK(cudaFree(e));
    GALV_LAUNCH(fill_k, 1, 256, 0, s1, e, 256); /* a kernel on freed memory */
    e = NULL;
  } else {
    fprintf(stderr, "bugs: error: unknown case '%s'\n", c);
    return 2;
  }
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(d));
  CHECK(cudaFree(e));
  printf("bugs %s: ok\n", c);
  return 0;
}
