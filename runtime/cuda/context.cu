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


/* ---------------------------------------------------------------- --trace (galv_cuda.h) */
int galv_cu_trace_on;
static int prof_cur = -1; /* the last kernel mark of the run */
typedef struct {
  int k, stream; /* the mark before it; 0: a wait of the compute stream, 1: a collective */
  const char *what;
  long long bytes;
  cudaEvent_t e0, e1; /* created once, reused by later runs */
} cu_span;
static cu_span *spans;
static int nspan, cspan, nspan_ev; /* spans of this run, allocated, with events created */
static cudaEvent_t trace_base;     /* the first traced run's mark 0 */
static int have_base;

void galv_cu_prof_mark(int k) {
  if (galv_cu_trace_on && k == 0 && !have_base) {
    cudaCheck(cudaEventCreate(&trace_base));
    cudaCheck(cudaEventRecord(trace_base, galv_cu.stream));
    have_base = 1;
  }
  cudaCheck(cudaEventRecord(galv_cu_prof_ev[k], galv_cu.stream));
  prof_cur = k;
}

int galv_cu_trace_span_begin(cudaStream_t s, int stream, const char *what, long long bytes) {
  if (!galv_cu_trace_on || !galv_cu_prof_ev) return -1;
  if (nspan == cspan) {
    int c = cspan ? 2 * cspan : 256;
    cu_span *n = (cu_span *)realloc(spans, sizeof *n * (size_t)c);
    if (!n) galv_fatal("out of memory");
    spans = n, cspan = c;
  }
  cu_span *p = &spans[nspan];
  if (nspan == nspan_ev) {
    cudaCheck(cudaEventCreate(&p->e0));
    cudaCheck(cudaEventCreate(&p->e1));
    nspan_ev++;
  }
  p->k = prof_cur, p->stream = stream, p->what = what, p->bytes = bytes;
  cudaCheck(cudaEventRecord(p->e0, s));
  return nspan++;
}

void galv_cu_trace_span_end(int id, cudaStream_t s) {
  if (id >= 0 && id < nspan) cudaCheck(cudaEventRecord(spans[id].e1, s));
}

void galv_cu_trace_collect(int nk, galv_cu_trace_emit emit) {
  if (!galv_cu_prof_ev || !have_base || prof_cur < 0) {
    nspan = 0, prof_cur = -1;
    return;
  }
  float o = 0;
  cudaCheck(cudaEventElapsedTime(&o, trace_base, galv_cu_prof_ev[0]));
  double off = o;
  auto T = [off](cudaEvent_t e) {
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, galv_cu_prof_ev[0], e));
    return off + (double)ms;
  };
  int j = 0;
  for (int k = -1; k < nk; k++) {
    if (k >= 0) {
      int coll = 0;
      double t0 = T(galv_cu_prof_ev[k]), t1 = T(galv_cu_prof_ev[k + 1]);
      for (int i = j; i < nspan && spans[i].k == k; i++) {
        if (spans[i].stream) coll = 1;
        else {
          double w = T(spans[i].e0);
          if (w < t1) t1 = w;
        }
      }
      if (!coll) emit(k, 0, NULL, 0, t0, t1 > t0 ? t1 : t0); /* a collective's call site: its span below */
    }
    for (; j < nspan && spans[j].k == k; j++) emit(k, spans[j].stream, spans[j].what, spans[j].bytes, T(spans[j].e0), T(spans[j].e1));
  }
  nspan = 0, prof_cur = -1;
}

void galv_cu_prof_collect(int nk, void (*charge)(int k, double ms)) {
  if (galv_cu_prof_ev && prof_cur == nk) { /* the run's end mark was recorded: every call site is timed */
    int j = 0;
    for (int k = 0; k < nk; k++) {
      float a = 0, b = 0;
      cudaCheck(cudaEventElapsedTime(&a, galv_cu_prof_ev[0], galv_cu_prof_ev[k]));
      cudaCheck(cudaEventElapsedTime(&b, galv_cu_prof_ev[0], galv_cu_prof_ev[k + 1]));
      double t0 = a, t1 = b;
      for (; j < nspan && spans[j].k < k; j++) {}
      for (; j < nspan && spans[j].k == k; j++)
        if (!spans[j].stream) { /* a wait of the compute stream: the call site ends where it starts */
          float w = 0;
          cudaCheck(cudaEventElapsedTime(&w, galv_cu_prof_ev[0], spans[j].e0));
          if (w < t1) t1 = w;
        }
      charge(k, t1 > t0 ? t1 - t0 : 0);
    }
  }
  nspan = 0, prof_cur = -1;
}

void galv_cu_trace_free(void) {
  for (int i = 0; i < nspan_ev; i++) {
    cudaCheck(cudaEventDestroy(spans[i].e0));
    cudaCheck(cudaEventDestroy(spans[i].e1));
  }
  free(spans);
  spans = NULL, nspan = cspan = nspan_ev = 0;
  if (have_base) cudaCheck(cudaEventDestroy(trace_base));
  have_base = 0;
}
