/* test_softmax.cu — galv_cu_softmax (one warp per row, online max/sum) vs a
 * CPU reference, rows x L sweep, fp32 and bf16; --time: GB/s at 4096 x 50257 / 16384 x 1024. */
#include "lab.cuh"

static std::vector<float> ref(const std::vector<float> &x, int64_t rows, int64_t L, int log_sm) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < L; j++) m = fmax(m, x[r * L + j]);
    for (int64_t j = 0; j < L; j++) s += exp(x[r * L + j] - m);
    for (int64_t j = 0; j < L; j++)
      y[r * L + j] = (float)(log_sm ? x[r * L + j] - m - log(s) : exp(x[r * L + j] - m) / s);
  }
  return y;
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  const int64_t sizes[][2] = {{1, 1}, {3, 7}, {5, 32}, {33, 100}, {128, 1024}, {64, 50257}, {0, 16} /* empty */};
  printf("softmax:\n");
  for (int dt : {GALV_F32, GALV_BF16})
    for (auto &s : sizes)
      for (int lg = 0; lg < 2; lg++) {
        int64_t rows = s[0], L = s[1];
        auto x = lab_stored(lab_vec((size_t)(rows * L), 8.0f), dt);
        void *dx = lab_upload(x, dt), *dy = lab_upload(x, dt);
        galv_cu_softmax(dt, dy, dx, rows, L, 1, lg);
        char what[96];
        snprintf(what, sizeof what, "%s %s rows %lld L %lld", lab_dt(dt), lg ? "log_softmax" : "softmax",
                 (long long)rows, (long long)L);
        lab_check(what, lab_download(dy, x.size(), dt), ref(x, rows, L, lg), dt == GALV_BF16 ? 1e-2f : 1e-6f,
                  dt == GALV_BF16 ? 1e-2f : 1e-5f);
        cudaCheck(cudaFree(dx));
        cudaCheck(cudaFree(dy));
      }
  if (timing)
    for (int dt : {GALV_F32, GALV_BF16})
      for (auto s : {std::make_pair<int64_t, int64_t>(4096, 50257), std::make_pair<int64_t, int64_t>(16384, 1024)}) {
        auto x = lab_vec((size_t)(s.first * s.second));
        void *dx = lab_upload(x, dt), *dy = lab_upload(x, dt);
        double ms = lab_time_ms([&] { galv_cu_softmax(dt, dy, dx, s.first, s.second, 1, 0); }, 20);
        char what[96];
        snprintf(what, sizeof what, "softmax %s %lldx%lld", lab_dt(dt), (long long)s.first, (long long)s.second);
        lab_report_bw(what, ms, 3.0 * x.size() * (dt == GALV_BF16 ? 2 : 4)); /* read twice, write once */
        cudaCheck(cudaFree(dx));
        cudaCheck(cudaFree(dy));
      }
  galv_cu_finish();
  return lab_fail;
}
