/* big_shared.cu — a kernel whose static shared memory (64 KiB) is over the
 * 48 KiB a block may declare statically: ptxas rejects it, and the CUDA
 * execution layer (runtime/cuda/emu/) reports it when the program starts
 * (tests/cuda_emu.sh). With -DSMALL the array is 32 KiB and runs. */
#include <cuda_runtime.h>
#include <stdio.h>

#ifndef GALV_LAUNCH
#define GALV_LAUNCH(kernel, grid, block, shmem, stream, ...) kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
#endif
#ifdef SMALL
#define N 8192
#else
#define N 16384
#endif

__global__ void big_k(float *out) {
  __shared__ float s[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x) s[i] = (float)i;
  __syncthreads();
  if (threadIdx.x == 0) *out = s[N - 1];
}

int main(void) {
  float *d, h = 0;
  if (cudaMalloc((void **)&d, 4) != cudaSuccess) return 1;
  GALV_LAUNCH(big_k, 1, 256, 0, (cudaStream_t)0, d);
  if (cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost) != cudaSuccess || h != (float)(N - 1)) return 1;
  cudaFree(d);
  printf("big_shared: ok\n");
  return 0;
}
