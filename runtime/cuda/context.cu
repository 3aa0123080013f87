/* context.cu — the device context of a CUDA-target process: device choice,
 * compute stream, cuBLAS handle, scratch and error flag (galv_cu), and the
 * one error path of every check macro (galv_cu_fail: file:line and rank,
 * then exit, or MPI_Abort of all ranks when a multi-rank backend set
 * galv_cu_abort_all). Separate from main_cuda.cu so that the kernel tests
 * (tests/cuda/) link the runtime without a generated program. */
#include "galv_cuda.h"

galv_cu_context galv_cu;
int galv_cu_rank = -1;
void (*galv_cu_abort_all)(void);
cudaEvent_t *galv_cu_prof_ev;

void galv_cu_fail(const char *lib, const char *call, const char *msg, const char *file, int line) {
  char where[32] = "";
  if (galv_cu_rank >= 0) snprintf(where, sizeof where, "rank %d: ", galv_cu_rank);
  if (galv_cu_abort_all) { /* one line, then the whole job goes down (never a hang in a peer) */
    fprintf(stderr, "%s: error: %s%s error at %s:%d: %s (%s)\n", galv_progname, where, lib, file, line, msg, call);
    galv_cu_abort_all();
  }
  galv_fatal("%s%s error at %s:%d: %s (%s)", where, lib, file, line, msg, call);
}

void galv_cu_init(size_t scratch_bytes) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)
    galv_fatal("no CUDA device found (%s). This program was built by galvc --target cuda; to run on this machine "
               "build the CPU program from the same directory (make cpu, then ./program-cpu; N ranks: "
               "GALV_PROGRAM=program-cpu ./launch) or compile the model with galvc --target cpu",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
  const char *dv = getenv("GALV_CUDA_DEVICE");
  galv_cu.device = dv ? atoi(dv) : 0;
  if (galv_cu.device < 0 || galv_cu.device >= n) galv_fatal("GALV_CUDA_DEVICE=%s: only %d devices", dv, n);
  cudaCheck(cudaSetDevice(galv_cu.device));
  cudaCheck(cudaDeviceGetAttribute(&galv_cu.sms, cudaDevAttrMultiProcessorCount, galv_cu.device));
  cudaCheck(cudaStreamCreateWithFlags(&galv_cu.stream, cudaStreamNonBlocking));
  cublasCheck(cublasCreate(&galv_cu.blas));
  cublasCheck(cublasSetStream(galv_cu.blas, galv_cu.stream));
  /* fp32 stays fp32 (no TF32): outputs are compared with the CPU target at 1e-4 */
  cublasCheck(cublasSetMathMode(galv_cu.blas, CUBLAS_PEDANTIC_MATH));
  galv_cu.scratch_bytes = scratch_bytes;
  if (scratch_bytes) cudaCheck(cudaMalloc((void **)&galv_cu.scratch, scratch_bytes));
  cudaCheck(cudaMalloc((void **)&galv_cu.err, sizeof(int)));
  cudaCheck(cudaMemset(galv_cu.err, 0, sizeof(int)));
}

void galv_cu_scratch_reserve(size_t bytes) {
  if (bytes <= galv_cu.scratch_bytes) return;
  cudaCheck(cudaStreamSynchronize(galv_cu.stream)); /* kernels queued before may still read the old buffer */
  cudaCheck(cudaFree(galv_cu.scratch));
  cudaCheck(cudaMalloc((void **)&galv_cu.scratch, bytes));
  galv_cu.scratch_bytes = bytes;
}

void galv_cu_finish(void) {
  cublasCheck(cublasDestroy(galv_cu.blas));
  cudaCheck(cudaFree(galv_cu.scratch));
  cudaCheck(cudaFree(galv_cu.err));
  cudaCheck(cudaStreamDestroy(galv_cu.stream));
}

