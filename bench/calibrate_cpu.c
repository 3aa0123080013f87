/* calibrate_cpu.c — measures this machine as a galvc cluster (docs/cluster.md)
 * and writes the cpu-local JSON: sgemm TFLOP/s (OpenBLAS, one thread: one
 * device = one rank = one core), copy bandwidth, and MPI point-to-point and
 * all-reduce latency / bandwidth between the ranks it runs on. Built and run
 * by bench/calibrate_cpu.sh; never part of galvc. Figures only. */
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MPI_CHECK(x)                                                                               \
  do {                                                                                             \
    int rc_ = (x);                                                                                 \
    if (rc_ != MPI_SUCCESS) {                                                                      \
      fprintf(stderr, "calibrate_cpu: %s:%d: MPI call failed (%d)\n", __FILE__, __LINE__, rc_);    \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) { fprintf(stderr, "calibrate_cpu: out of memory\n"); exit(1); }
  memset(p, 1, n);
  return p;
}

/* Best of a few timed sgemms of n x n. */
static double sgemm_tflops(int n) {
  float *a = xmalloc(sizeof(float) * n * n), *b = xmalloc(sizeof(float) * n * n), *c = xmalloc(sizeof(float) * n * n);
  for (int i = 0; i < n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
  double best = 1e30;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
  for (int r = 0; r < 10; r++) {
    double t = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    t = now() - t;
    if (t < best) best = t;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * (double)n / best / 1e12;
}

/* Copy bandwidth in GB/s counting read + write bytes (as the roofline does). */
static double copy_gbps(size_t bytes) {
  char *a = xmalloc(bytes), *b = xmalloc(bytes);
  double best = 1e30;
  for (int r = 0; r < 10; r++) {
    double t = now();
    memcpy(b, a, bytes);
    t = now() - t;
    a[r] = b[bytes - 1 - r];
    if (t < best) best = t;
  }
  free(a), free(b);
  return 2.0 * (double)bytes / best / 1e9;
}

static long long mem_total(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  long long kb = 0;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) break;
    fclose(f);
  }
  return kb * 1024;
}

int main(int argc, char **argv) {
  MPI_CHECK(MPI_Init(&argc, &argv));
  int rank, p;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &p));
  const char *out = argc > 1 ? argv[1] : "cpu-local.json";
  int gemm_n = argc > 2 ? atoi(argv[2]) : 1024;
  double tf = 0, gbps = 0;
  if (rank == 0) {
    tf = sgemm_tflops(gemm_n);
    gbps = copy_gbps((size_t)128 << 20);
  }
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

  /* point-to-point ping-pong between ranks 0 and 1: one-way latency and bandwidth */
  double lat_us = 0, p2p_gbps = 0, ar_lat_us = 0, ar_bus = 0;
  size_t big = (size_t)16 << 20;
  char *buf = xmalloc(big), *buf2 = xmalloc(big);
  if (p >= 2) {
    for (int pass = 0; pass < 2; pass++) {
      size_t n = pass ? big : 8;
      int iters = pass ? 10 : 2000;
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      double t = now();
      for (int i = 0; i < iters; i++) {
        if (rank == 0) {
          MPI_CHECK(MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD));
          MPI_CHECK(MPI_Recv(buf2, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
          MPI_CHECK(MPI_Recv(buf2, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
          MPI_CHECK(MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD));
        }
      }
      double one_way = (now() - t) / iters / 2;
      if (pass) p2p_gbps = (double)n / (one_way - lat_us * 1e-6) / 1e9;
      else lat_us = one_way * 1e6;
    }
    /* all-reduce over all ranks: alpha from a tiny buffer, bus bandwidth from a big one */
    for (int pass = 0; pass < 2; pass++) {
      size_t n = pass ? big / sizeof(float) : 2;
      int iters = pass ? 10 : 2000;
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      double t = now();
      for (int i = 0; i < iters; i++)
        MPI_CHECK(MPI_Allreduce(buf, buf2, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      t = (now() - t) / iters;
      if (pass) ar_bus = (double)(n * sizeof(float)) / (t - ar_lat_us * 1e-6 * 2 * (p - 1)) / 1e9 * 2.0 * (p - 1) / p;
      else ar_lat_us = t / (2.0 * (p - 1)) * 1e6;
    }
  }
  free(buf), free(buf2);
  if (rank == 0) {
    FILE *f = fopen(out, "w");
    if (!f) { fprintf(stderr, "calibrate_cpu: cannot write %s\n", out); MPI_Abort(MPI_COMM_WORLD, 1); }
    char host[256] = "this machine";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    time_t now_t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now_t));
    long long mem = mem_total() / (p > 0 ? p : 1);
    if (p < 2) { lat_us = 1; p2p_gbps = ar_bus = gbps / 2; ar_lat_us = 1; }
    const char *src = "measured by bench/calibrate_cpu.sh";
    fprintf(f, "{\n  \"name\": \"cpu-local\",\n");
    fprintf(f, "  \"description\": \"this machine (%s, %s): one device = one MPI rank = one core with OpenBLAS on one thread\",\n", host, date);
    fprintf(f, "  \"nodes\": 1,\n  \"devices_per_node\": %d,\n", p);
    fprintf(f, "  \"peak_tflops\": {\"f32\": %.6f, \"bf16\": %.6f, \"f16\": %.6f},\n", tf, tf, tf);
    fprintf(f, "  \"memory_bytes\": %lld,\n  \"memory_bandwidth_gbps\": %.3f,\n", mem, gbps);
    fprintf(f, "  \"intra_node\": {\"bus_bandwidth_gbps\": %.3f, \"latency_us\": %.3f},\n", ar_bus, lat_us);
    fprintf(f, "  \"inter_node\": {\"bandwidth_gbps\": %.3f, \"latency_us\": %.3f},\n", p2p_gbps, lat_us);
    fprintf(f, "  \"sources\": {\n");
    fprintf(f, "    \"devices_per_node\": \"%s: the MPI ranks it ran on (mpirun -np %d)\",\n", src, p);
    fprintf(f, "    \"peak_tflops.f32\": \"%s: best of 10 cblas_sgemm %dx%dx%d, OpenBLAS on one thread\",\n", src, gemm_n, gemm_n, gemm_n);
    fprintf(f, "    \"peak_tflops.bf16\": \"the CPU target computes in f32: same as f32\",\n");
    fprintf(f, "    \"peak_tflops.f16\": \"the CPU target computes in f32: same as f32\",\n");
    fprintf(f, "    \"memory_bytes\": \"%s: MemTotal of /proc/meminfo divided by the %d ranks\",\n", src, p);
    fprintf(f, "    \"memory_bandwidth_gbps\": \"%s: best of 10 memcpy of 128 MiB, read + write bytes counted\",\n", src);
    fprintf(f, "    \"intra_node.bus_bandwidth_gbps\": \"%s: MPI_Allreduce of 16 MiB over %d ranks, bus bandwidth = algbw x 2(p-1)/p (alpha removed); all-reduce alpha per step was %.3f us\",\n", src, p, ar_lat_us);
    fprintf(f, "    \"intra_node.latency_us\": \"%s: MPI ping-pong of 8 bytes between ranks 0 and 1, one way\",\n", src);
    fprintf(f, "    \"inter_node.bandwidth_gbps\": \"one node: no network; set to the measured MPI point-to-point bandwidth (16 MiB ping-pong)\",\n");
    fprintf(f, "    \"inter_node.latency_us\": \"one node: no network; set to the measured MPI point-to-point latency\"\n");
    fprintf(f, "  }\n}\n");
    fclose(f);
    printf("calibrate_cpu: sgemm %.1f GFLOP/s, copy %.2f GB/s, p2p %.2f us %.2f GB/s, all-reduce alpha %.2f us bus %.2f GB/s -> %s\n",
           tf * 1e3, gbps, lat_us, p2p_gbps, ar_lat_us, ar_bus, out);
  }
  MPI_CHECK(MPI_Finalize());
  return 0;
}
