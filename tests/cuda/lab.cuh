/* lab.cuh — the kernel lab's shared harness (llm.c's dev/cuda style): each
 * tests/cuda/test_KERNEL.cu runs the runtime kernel against a plain CPU
 * reference over a sweep of sizes (fp32 and bf16 storage), then, with
 * --time, times it (L2 flushed before every run, CUDA events) and prints
 * GB/s or TFLOP/s against the H200's figures (shared/REFERENCES.md: 4.8 TB/s
 * HBM, 989 TFLOP/s bf16 and 67 fp32 dense). Exit status 1 on any mismatch. */
#ifndef GALV_LAB_CUH
#define GALV_LAB_CUH

#include <string.h>
#include <vector>

#include "../../runtime/cuda/galv_cuda.h"

#define H200_GBS 4800.0
#define H200_TF_BF16 989.0
#define H200_TF_F32 67.0

static int lab_fail = 0;
static uint64_t lab_seed = 12345;

static float lab_rand(void) { /* uniform [-1, 1) */
  lab_seed = lab_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((lab_seed >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static std::vector<float> lab_vec(size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (auto &x : v) x = lab_rand() * scale;
  return v;
}
static float lab_round_bf16(float f) { /* what bf16 storage keeps */
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

/* host -> device bytes, complete on return: on galv_cu.stream, as the kernels (a legacy-stream cudaMemcpy from
 * pageable memory may return before the copy lands, and galv_cu.stream, non-blocking, does not wait for it) */
static void lab_h2d(void *d, const void *h, size_t bytes) {
  if (!bytes) return;
  cudaCheck(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
}

/* device copy of host floats in storage dt (GALV_F32 or GALV_BF16) */
static void *lab_upload(const std::vector<float> &h, int dt) {
  float *tmp;
  void *d;
  size_t n = h.size() ? h.size() : 1;
  cudaCheck(cudaMalloc((void **)&tmp, n * 4));
  cudaCheck(cudaMalloc(&d, n * 4));
  /* on galv_cu.stream: a legacy-stream cudaMemcpy from pageable memory may return before the copy lands, and the
   * non-blocking stream does not wait for it (the GPU read half-copied inputs before this was so) */
  cudaCheck(cudaMemcpyAsync(tmp, h.data(), h.size() * 4, cudaMemcpyHostToDevice, galv_cu.stream));
  galv_cu_from_f32(dt, d, tmp, (int64_t)h.size());
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  cudaCheck(cudaFree(tmp));
  return d;
}
static std::vector<float> lab_download(const void *d, size_t n, int dt) {
  std::vector<float> h(n);
  float *tmp;
  cudaCheck(cudaMalloc((void **)&tmp, (n ? n : 1) * 4));
  galv_cu_to_f32(dt, tmp, d, (int64_t)n);
  /* galv_cu.stream is non-blocking: the legacy stream's cudaMemcpy does not wait for it */
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  cudaCheck(cudaMemcpy(h.data(), tmp, n * 4, cudaMemcpyDeviceToHost));
  cudaCheck(cudaFree(tmp));
  return h;
}

/* max |got - want| / (atol + rtol |want|) must stay <= 1 */
static void lab_check(const char *what, const std::vector<float> &got, const std::vector<float> &want, float atol,
                      float rtol) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); i++) {
    double d = fabs((double)got[i] - want[i]);
    double e = d == 0 ? 0 : d / (atol + rtol * fabs((double)want[i])); /* atol = rtol = 0: exact (0/0 is no error) */
    if (!(e <= worst)) worst = e, at = i; /* NaN counts as worst */
  }
  bool ok = worst <= 1.0;
  printf("  %-48s %s", what, ok ? "ok" : "MISMATCH");
  if (!ok) printf(" (element %zu: got %g, want %g)", at, got[at], want[at]);
  printf("\n");
  lab_fail |= !ok;
}

/* mean ms of fn over reps runs, each after flushing L2 with a 256 MiB memset */
template <typename F>
static double lab_time_ms(F fn, int reps) {
#ifdef GALV_EMU_H /* the CPU execution layer (tests/cuda_lab_emu.sh): checks only; lab_timing refuses --time */
  (void)fn, (void)reps;
  return 0;
#else
  static char *flush;
  if (!flush) cudaCheck(cudaMalloc((void **)&flush, 256 << 20));
  cudaEvent_t a, b;
  cudaCheck(cudaEventCreate(&a));
  cudaCheck(cudaEventCreate(&b));
  fn(); /* warm-up */
  double total = 0;
  for (int r = 0; r < reps; r++) {
    cudaCheck(cudaMemsetAsync(flush, r, 256 << 20, galv_cu.stream));
    cudaCheck(cudaEventRecord(a, galv_cu.stream));
    fn();
    cudaCheck(cudaEventRecord(b, galv_cu.stream));
    cudaCheck(cudaEventSynchronize(b));
    float ms;
    cudaCheck(cudaEventElapsedTime(&ms, a, b));
    total += ms;
  }
  cudaCheck(cudaEventDestroy(a));
  cudaCheck(cudaEventDestroy(b));
  return total / reps;
#endif
}
static void lab_report_bw(const char *what, double ms, double bytes) {
  double gbs = bytes / (ms * 1e-3) / 1e9;
  printf("  time %-42s %9.4f ms %9.1f GB/s  (%5.1f%% of H200 HBM %.0f GB/s)\n", what, ms, gbs, 100 * gbs / H200_GBS, H200_GBS);
}
static void lab_report_flops(const char *what, double ms, double flops, int dt) {
  double tf = flops / (ms * 1e-3) / 1e12, peak = dt == GALV_BF16 ? H200_TF_BF16 : H200_TF_F32;
  printf("  time %-42s %9.4f ms %9.1f TFLOP/s (%5.1f%% of H200 %s %.0f)\n", what, ms, tf, 100 * tf / peak,
         dt == GALV_BF16 ? "bf16" : "fp32", peak);
}

static const char *lab_dt(int dt) { return dt == GALV_BF16 ? "bf16" : "fp32"; }
/* storage rounding of a reference input */
static std::vector<float> lab_stored(std::vector<float> v, int dt) {
  if (dt == GALV_BF16)
    for (auto &x : v) x = lab_round_bf16(x);
  return v;
}

static bool lab_timing(int argc, char **argv) {
  galv_progname = argv[0];
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--time")) {
#ifdef GALV_EMU_H
      fprintf(stderr, "%s: --time needs a GPU (this build runs on the CPU execution layer)\n", argv[0]);
      exit(2);
#endif
      return true;
    }
  return false;
}

#endif
