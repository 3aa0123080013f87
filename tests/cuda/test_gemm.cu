/* test_gemm.cu — galv_cu_gemm (cublasGemmStridedBatchedEx, fp32 compute)
 * for the four operand layouts codegen/cuda produces (A or B stored
 * transposed) and batches, vs a CPU reference; --time: TFLOP/s at
 * 4096^3 (fp32, bf16) and a GPT-2 MLP shape. */
#include "lab.cuh"

static std::vector<float> ref(const std::vector<float> &a, const std::vector<float> &b, const galv_cu_gemm_desc &g) {
  std::vector<float> c((size_t)(g.batch * g.M * g.N));
  for (int64_t t = 0; t < g.batch; t++)
    for (int64_t i = 0; i < g.M; i++)
      for (int64_t j = 0; j < g.N; j++) {
        double s = 0;
        for (int64_t k = 0; k < g.K; k++) {
          float x = a[t * g.sa + (g.ta ? k * g.lda + i : i * g.lda + k)];
          float y = b[t * g.sb + (g.tb ? j * g.ldb + k : k * g.ldb + j)];
          s += (double)x * y;
        }
        c[(t * g.M + i) * g.N + j] = (float)s;
      }
  return c;
}

static galv_cu_gemm_desc mk(int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int tb) {
  galv_cu_gemm_desc g = {batch, M, N, K, ta, tb, ta ? M : K, tb ? K : N, M * K, K * N};
  if (batch == 1) g.sa = g.sb = 0;
  return g;
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  cublasCheck(cublasSetMathMode(galv_cu.blas, CUBLAS_PEDANTIC_MATH));
  printf("gemm:\n");
  const int64_t sizes[][4] = {{1, 1, 1, 1}, {1, 7, 5, 3}, {3, 33, 17, 64}, {8, 16, 16, 16}, {1, 128, 192, 64}};
  for (int dt : {GALV_F32, GALV_BF16})
    for (auto &s : sizes)
      for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
          galv_cu_gemm_desc g = mk(s[0], s[1], s[2], s[3], ta, tb);
          auto a = lab_stored(lab_vec((size_t)(g.batch * g.M * g.K)), dt), b = lab_stored(lab_vec((size_t)(g.batch * g.K * g.N)), dt);
          void *da = lab_upload(a, dt), *db = lab_upload(b, dt), *dc;
          cudaCheck(cudaMalloc(&dc, (size_t)(g.batch * g.M * g.N) * 4));
          galv_cu_gemm(dt, &g, da, db, dc);
          char what[96];
          snprintf(what, sizeof what, "%s batch %lld %lldx%lldx%lld ta %d tb %d", lab_dt(dt), (long long)g.batch,
                   (long long)g.M, (long long)g.N, (long long)g.K, ta, tb);
          lab_check(what, lab_download(dc, (size_t)(g.batch * g.M * g.N), dt), ref(a, b, g), dt == GALV_BF16 ? 5e-2f : 1e-5f,
                    dt == GALV_BF16 ? 1e-2f : 1e-5f);
          for (void *p : {da, db, dc}) cudaCheck(cudaFree(p));
        }
  if (timing) {
    const int64_t ts[][3] = {{4096, 4096, 4096}, {8192, 3072, 768}};
    for (int dt : {GALV_F32, GALV_BF16})
      for (auto &s : ts) {
        galv_cu_gemm_desc g = mk(1, s[0], s[1], s[2], 0, 0);
        void *da = lab_upload(lab_vec((size_t)(g.M * g.K)), dt), *db = lab_upload(lab_vec((size_t)(g.K * g.N)), dt), *dc;
        cudaCheck(cudaMalloc(&dc, (size_t)(g.M * g.N) * 4));
        double ms = lab_time_ms([&] { galv_cu_gemm(dt, &g, da, db, dc); }, 10);
        char what[96];
        snprintf(what, sizeof what, "gemm %s %lldx%lldx%lld", lab_dt(dt), (long long)g.M, (long long)g.N, (long long)g.K);
        lab_report_flops(what, ms, 2.0 * g.M * g.N * g.K, dt);
        for (void *p : {da, db, dc}) cudaCheck(cudaFree(p));
      }
  }
  galv_cu_finish();
  return lab_fail;
}
