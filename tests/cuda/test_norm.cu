/* test_norm.cu — galv_cu_norm (LayerNorm and RMSNorm, one warp per row, one
 * Welford pass) vs a CPU reference (two-pass, double), fp32 and bf16;
 * --time: GB/s at 16384 x 768 and 8192 x 4096. */
#include "lab.cuh"

static std::vector<float> ref(const std::vector<float> &x, const std::vector<float> &g, const std::vector<float> &b,
                              int64_t rows, int64_t N, float eps, int rms) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; r++) {
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < N; j++) mean += x[r * N + j];
      mean /= N;
    }
    for (int64_t j = 0; j < N; j++) var += (x[r * N + j] - mean) * (x[r * N + j] - mean);
    double rstd = 1.0 / sqrt(var / N + eps);
    for (int64_t j = 0; j < N; j++) y[r * N + j] = (float)((x[r * N + j] - mean) * rstd * g[j] + (rms ? 0 : b[j]));
  }
  return y;
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  const int64_t sizes[][2] = {{1, 1}, {3, 31}, {7, 64}, {64, 768}, {5, 5000}, {0, 64} /* empty */};
  printf("layer_norm / rms_norm:\n");
  for (int dt : {GALV_F32, GALV_BF16})
    for (auto &s : sizes)
      for (int rms = 0; rms < 2; rms++) {
        int64_t rows = s[0], N = s[1];
        auto x = lab_stored(lab_vec((size_t)(rows * N), 3.0f), dt);
        for (auto &v : x) v += 2.0f; /* a mean far from 0 */
        x = lab_stored(x, dt);
        auto g = lab_stored(lab_vec((size_t)N), dt), b = lab_stored(lab_vec((size_t)N), dt);
        void *dx = lab_upload(x, dt), *dy = lab_upload(x, dt), *dg = lab_upload(g, dt), *db = lab_upload(b, dt);
        galv_cu_norm(dt, dy, dx, dg, N, rms ? NULL : db, N, rows, N, 1e-5f, rms);
        char what[96];
        snprintf(what, sizeof what, "%s %s rows %lld N %lld", lab_dt(dt), rms ? "rms_norm" : "layer_norm",
                 (long long)rows, (long long)N);
        lab_check(what, lab_download(dy, x.size(), dt), ref(x, g, b, rows, N, 1e-5f, rms), dt == GALV_BF16 ? 2e-2f : 1e-4f,
                  dt == GALV_BF16 ? 1e-2f : 1e-4f);
        for (void *p : {dx, dy, dg, db}) cudaCheck(cudaFree(p));
      }
  if (timing)
    for (int dt : {GALV_F32, GALV_BF16})
      for (auto s : {std::make_pair<int64_t, int64_t>(16384, 768), std::make_pair<int64_t, int64_t>(8192, 4096)}) {
        auto x = lab_vec((size_t)(s.first * s.second)), g = lab_vec((size_t)s.second);
        void *dx = lab_upload(x, dt), *dy = lab_upload(x, dt), *dg = lab_upload(g, dt);
        double ms = lab_time_ms([&] { galv_cu_norm(dt, dy, dx, dg, s.second, dg, s.second, s.first, s.second, 1e-5f, 0); }, 20);
        char what[96];
        snprintf(what, sizeof what, "layer_norm %s %lldx%lld", lab_dt(dt), (long long)s.first, (long long)s.second);
        lab_report_bw(what, ms, 3.0 * x.size() * (dt == GALV_BF16 ? 2 : 4));
        for (void *p : {dx, dy, dg}) cudaCheck(cudaFree(p));
      }
  galv_cu_finish();
  return lab_fail;
}
