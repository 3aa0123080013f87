/* pipe_cuda.cu — the main of CUDA pipeline-stage programs (galvc
 * --pipeline-stages S --target cuda; docs/pipeline.md, docs/cuda-target.md).
 * The schedule is runtime/pipe.c's, shared with the CPU target: this file
 * gives it device hooks (galv_pipe_device, galv_pipe.h) and hands over.
 *
 *   begin      galv_cu_init (the device the comm backend chose for the rank:
 *              NCCL one per local rank, staged all on GALV_CUDA_DEVICE / 0);
 *              without a device: the one-line "no CUDA device" error
 *   buffers    cudaMalloc'ed; copies on the compute stream (h2d: a pageable
 *              source is staged before cudaMemcpyAsync returns; d2h waits)
 *   run        galv_cu_run on the compute stream, then the device error flag
 *              (gather index / label out of range) is checked; run_entry the
 *              same for the backward entry (program_bwd.cu's
 *              galv_bwd_program_run, the stash as its device state buffer)
 *   add, opt   kernels: gradient sums, the optimizer update
 *              (galv_pipe_opt_elem: the host loop's formula)
 *   op16       16-bit sums and scalings (--grad-dtype bf16 / fp16 sums,
 *              16-bit crossing values): widened, fp32, rounded back as
 *              the host's narrowing rounds (nearest even)
 *   to_f32     a 16-bit sum widened for the optimizer
 *   scan       the overflow check / clipping norm: a reduction kernel,
 *              one partial per block added on the host in block order
 *   block      a split parameter's block of its whole gradient (strided copy)
 *   gather     a split tensor's global form: all_gather on the device over
 *              the stage's ranks, placed on the host (galv_cu_gather_host)
 *   box        a tile of a cross-stage value packed / unpacked
 *              (runtime/pipe_xfer.c): cudaMemcpy2DAsync per outer index
 * galv_send / galv_recv between the stages move device buffers (the NCCL
 * backend: ncclSend/ncclRecv grouped; the staged backend: through the host). */
#include <string.h>

#include "galv_cuda.h"

extern "C" {
#include "../galv_pipe.h"
}

static void *d_alloc(size_t n) {
  void *p = NULL;
  cudaCheck(cudaMalloc(&p, n ? n : 64));
  return p;
}
static void d_release(void *p) { /* after the copies queued on the compute stream that may read or write it */
  if (!p) return;
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  cudaCheck(cudaFree(p));
}
static void d_h2d(void *dst, const void *host, size_t n) {
  if (n) cudaCheck(cudaMemcpyAsync(dst, host, n, cudaMemcpyHostToDevice, galv_cu.stream));
}
static void d_d2h(void *host, const void *src, size_t n) {
  if (n) cudaCheck(cudaMemcpyAsync(host, src, n, cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
}
static void d_copy(void *dst, const void *src, size_t n) {
  if (n) cudaCheck(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, galv_cu.stream));
}
static void d_fill(void *dst, int byte, size_t n) {
  if (n) cudaCheck(cudaMemsetAsync(dst, byte, n, galv_cu.stream));
}
/* after a run: the device error flag (the first failing kernel + 1) of the program whose kernels are k */
static void d_check(const galv_kernel_info *k, const char *entry) {
  GALV_CU_LAUNCHED();
  int err = 0;
  cudaCheck(cudaMemcpyAsync(&err, galv_cu.err, sizeof err, cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  if (err) galv_fatal("%skernel %d (%s, node '%s'): index or label out of range, or integer division by zero", entry, err - 1,
                      k[err - 1].kind, k[err - 1].node);
}
static void d_run(char *arena, const char *weights) {
  galv_cu_run(arena, weights, NULL);
  d_check(galv_kernels, "");
}
/* the stage's backward entry (program_bwd.cu: galv_bwd_program_run enqueues its kernels on the compute stream),
 * its state buffer the microbatch's stash on the device; ZB-H1's weight-gradient entry (program_wgt.cu) alike,
 * on the microbatch's W stash */
static void d_run_entry(const galv_pipe_entry *e, char *arena, const char *weights, char *state) {
  e->run(arena, weights, state);
  d_check(e->kernels, e == &galv_pipe_wgt ? "weight-gradient entry: " : "backward entry: ");
}

__global__ static void add_kernel(float *dst, const float *src, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) dst[i] += src[i];
}
static void d_add(float *dst, const float *src, size_t n) {
  if (!n) return;
  GALV_LAUNCH(add_kernel, galv_cu_blocks((int64_t)n), 256, 0, galv_cu.stream, dst, src, n);
  GALV_CU_LAUNCHED();
}

__global__ static void scale_kernel(float *x, float a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
static void d_scale(float *x, float a, size_t n) {
  if (!n) return;
  GALV_LAUNCH(scale_kernel, galv_cu_blocks((int64_t)n), 256, 0, galv_cu.stream, x, a, n);
  GALV_CU_LAUNCHED();
}

__global__ static void opt_kernel(galv_pipe_opt o, float *x, float *m, float *v, const float *g, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float dm = 0, dv = 0;
    galv_pipe_opt_elem(&o, &x[i], m ? &m[i] : &dm, v ? &v[i] : &dv, g[i]);
  }
}
static void d_opt(const galv_pipe_opt *o, float *x, float *m, float *v, const float *g, size_t n) {
  if (!n) return;
  GALV_LAUNCH(opt_kernel, galv_cu_blocks((int64_t)n), 256, 0, galv_cu.stream, *o, x, m, v, g, n);
  GALV_CU_LAUNCHED();
}

/* ---- 16-bit values on the device (galv_pipe.h op16 / to_f32 / scan): widened, computed in fp32, rounded back
 * by __float2bfloat16 / __float2half (round-to-nearest-even, as runtime/galv_rt.h's narrowing on the host) */
__device__ static inline float ld16(const galv_bf16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ static inline float ld16(const galv_f16 *p, size_t i) { return __half2float(p[i]); }
__device__ static inline float ld16(const float *p, size_t i) { return p[i]; }
__device__ static inline void st16(galv_bf16 *p, size_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ static inline void st16(galv_f16 *p, size_t i, float v) { p[i] = __float2half(v); }
__device__ static inline void st16(float *p, size_t i, float v) { p[i] = v; }
template <typename T>
__global__ void op16_kernel(T *x, const T *y, float a, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    st16(x, i, y ? ld16(x, i) + ld16(y, i) : ld16(x, i) * a);
}
static void d_op16(int dt, void *dst, const void *src, float a, size_t n) {
  if (!n) return;
  if (dt != GALV_BF16 && dt != GALV_F16) galv_fatal("16-bit sum of a value stored %s", galv_dtype_name(dt));
  GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(op16_kernel<T>, galv_cu_blocks((int64_t)n), 256, 0, galv_cu.stream, (T *)dst, (const T *)src, a, n));
  GALV_CU_LAUNCHED();
}
static void d_to_f32(int dt, float *dst, const void *src, size_t n) { galv_cu_to_f32(dt, dst, src, (int64_t)n); }

/* the scan: SCAN_BLOCKS blocks of 256 threads, each thread's squares summed in double over its grid stride, the
 * block's in shared memory (a tree), one partial per block; the host adds the partials in block order (the same
 * order every run) */
enum { SCAN_BLOCKS = 64, SCAN_THREADS = 256 };
template <typename T>
__global__ void scan_kernel(const T *x, size_t n, int want_sq, double *part, int *bad) {
  __shared__ double s[SCAN_THREADS];
  __shared__ int b[SCAN_THREADS];
  double acc = 0;
  int nb = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = ld16(x, i);
    nb |= v * 0.0f != 0.0f; /* inf x 0 and NaN x 0 are NaN */
    if (want_sq) acc += (double)v * (double)v;
  }
  s[threadIdx.x] = acc, b[threadIdx.x] = nb;
  __syncthreads();
  for (unsigned h = SCAN_THREADS / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h], b[threadIdx.x] |= b[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) part[blockIdx.x] = s[0], bad[blockIdx.x] = b[0];
}
static char *scan_buf; /* SCAN_BLOCKS doubles, then SCAN_BLOCKS ints */
static void d_scan(int dt, const void *x, size_t n, float *bad, double *sq) {
  if (!n) return;
  if (!scan_buf) scan_buf = (char *)d_alloc(SCAN_BLOCKS * (sizeof(double) + sizeof(int)));
  double *part = (double *)(void *)scan_buf;
  int *pb = (int *)(void *)(scan_buf + SCAN_BLOCKS * sizeof(double));
  unsigned g = galv_cu_blocks((int64_t)n);
  if (g > SCAN_BLOCKS) g = SCAN_BLOCKS;
  GALV_CU_DISPATCH(dt, T, GALV_LAUNCH(scan_kernel<T>, g, SCAN_THREADS, 0, galv_cu.stream, (const T *)x, n, sq != NULL, part, pb));
  GALV_CU_LAUNCHED();
  double hp[SCAN_BLOCKS];
  int hb[SCAN_BLOCKS];
  cudaCheck(cudaMemcpyAsync(hp, part, g * sizeof(double), cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaMemcpyAsync(hb, pb, g * sizeof(int), cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  for (unsigned k = 0; k < g; k++) {
    if (hb[k]) *bad = 1;
    if (sq) *sq += hp[k];
  }
}

/* runtime/spmd.c's galv_spmd_block on device buffers */
static void d_block(const galv_io *l, const galv_io_split *s, void *dst, const void *whole) {
  if (galv_nranks <= 1 || !s->starts) {
    d_copy(dst, whole, (size_t)l->nbytes);
    return;
  }
  int64_t gs[GALV_RT_MAX_RANK], base = 0, k = 1;
  for (int d = l->rank - 1; d >= 0; d--) gs[d] = k, k *= s->gdims[d];
  for (int d = 0; d < l->rank; d++) base += s->starts[galv_spmd_rank() * l->rank + d] * gs[d];
  size_t es = galv_dtype_size(l->dtype);
  galv_cu_copy_strided(dst, (const char *)whole + base * (int64_t)es, es, l->rank, l->dims, gs);
}

/* the global form of a split tensor: every rank's block all-gathered on the device over the stage's ranks
 * (a collective; galv_cu_gather_host, shared with inference outputs and training checkpoints) */
static void *global_host;
static const void *d_gather(const galv_io *l, const galv_io_split *s, const void *local, galv_io *g) {
  free(global_host);
  global_host = galv_cu_gather_host(l, s, local, g);
  return global_host;
}

/* a box of a value to (pack: src = the value) / from (unpack: dst = the value) a contiguous buffer:
 * one 2D copy per index of the dims before the last two */
static void d_box(size_t es, int r, const int64_t *dims, const char *src, char *dst, const int64_t *off, const int64_t *len,
                  int pack) {
  if (r == 0) {
    d_copy(dst, src, es);
    return;
  }
  for (int d = 0; d < r; d++)
    if (len[d] <= 0) return;
  int64_t st[GALV_RT_MAX_RANK], idx[GALV_RT_MAX_RANK] = {0}, s = 1, outer = 1;
  for (int d = r - 1; d >= 0; d--) st[d] = s, s *= dims[d];
  for (int d = 0; d < r - 2; d++) outer *= len[d];
  size_t run = (size_t)len[r - 1] * es, height = r >= 2 ? (size_t)len[r - 2] : 1, pitch = r >= 2 ? (size_t)st[r - 2] * es : run;
  for (int64_t i = 0; i < outer; i++) {
    int64_t e = off[r - 1] + (r >= 2 ? off[r - 2] * st[r - 2] : 0);
    for (int d = 0; d < r - 2; d++) e += (off[d] + idx[d]) * st[d];
    size_t v = (size_t)e * es, b = (size_t)i * height * run; /* the value's and the buffer's byte offsets */
    if (pack) cudaCheck(cudaMemcpy2DAsync(dst + b, run, src + v, pitch, run, height, cudaMemcpyDeviceToDevice, galv_cu.stream));
    else cudaCheck(cudaMemcpy2DAsync(dst + v, pitch, src + b, run, run, height, cudaMemcpyDeviceToDevice, galv_cu.stream));
    for (int d = r - 3; d >= 0; d--) {
      if (++idx[d] < len[d]) break;
      idx[d] = 0;
    }
  }
}

/* The device: GALV_CUDA_DEVICE (the NCCL backend sets it per local rank when unset). Interleaved 1F1B, whose
 * device group's V ranks share a GPU through the staged backend (which sets none): the group's GPU,
 * galv_pipe_device_slot mod the GPUs seen (across nodes out/launch's rankfile, from GALV_HOSTS, puts a group's
 * ranks on the node of its devices: device D on host D / k, GPU D mod k). On a machine of several GPUs each rank says which it took. */
static void d_begin(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0; /* none: galv_cu_init says so in one line */
  if (n > 1 && galv_pipe_schedule == 3 /* interleaved */ && !getenv("GALV_CUDA_DEVICE")) {
    char b[16];
    snprintf(b, sizeof b, "%d", galv_pipe_device_slot % n);
    setenv("GALV_CUDA_DEVICE", b, 1);
  }
  galv_cu_init((size_t)galv_cu_scratch_bytes);
  if (n > 1) printf("%s: CUDA device %d of %d\n", galv_progname, galv_cu.device, n);
}
static void d_end(void) {
  free(global_host);
  global_host = NULL;
  if (scan_buf) cudaCheck(cudaFree(scan_buf));
  scan_buf = NULL;
  galv_cu_finish();
}

static const galv_pipe_device cuda_pipe = {d_begin, d_alloc, d_release, d_h2d, d_d2h, d_copy, d_fill, d_run, d_run_entry,
                                           d_add, d_block, d_gather, d_opt, d_box, d_end, d_scale, d_op16, d_to_f32, d_scan};

int main(int argc, char **argv) {
  const char *slash = strrchr(argv[0], '/');
  galv_progname = slash ? slash + 1 : argv[0];
  /* 16-bit: training stages only (mixed precision: fp32 weights as uploaded, 16-bit crossing values and stash) */
  if (galv_cu_precision != GALV_F32 && !galv_pipe_training)
    galv_fatal("16-bit (bf16 / fp16) inference pipeline stages are not supported on the cuda target yet (run the cpu target's stages)");
  galv_pipe_dev = &cuda_pipe;
  return galv_pipe_main(argc, argv);
}
