/* test_copy.cu — the data-movement kernels: galv_cu_copy_strided (transpose,
 * slice, expand), galv_cu_gather (embedding rows), galv_cu_concat/split,
 * each vs a CPU reference; --time: GB/s of a [8,1024,12,64] -> [8,12,1024,64]
 * transpose and a 50257 x 768 embedding gather of 8192 tokens. */
#include "lab.cuh"

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  printf("copy_strided / gather / concat / split:\n");
  for (int dt : {GALV_F32, GALV_BF16}) {
    size_t es = dt == GALV_BF16 ? 2 : 4;
    /* transpose [B,S,H,D] -> [B,H,S,D] */
    const int64_t B = 2, S = 37, H = 3, D = 20;
    auto x = lab_stored(lab_vec((size_t)(B * S * H * D)), dt);
    std::vector<float> want(x.size());
    for (int64_t b = 0; b < B; b++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t s = 0; s < S; s++)
          for (int64_t d = 0; d < D; d++) want[((b * H + h) * S + s) * D + d] = x[((b * S + s) * H + h) * D + d];
    void *dx = lab_upload(x, dt), *dy = lab_upload(x, dt);
    const int64_t dims[] = {B, H, S, D}, str[] = {S * H * D, D, H * D, 1};
    galv_cu_copy_strided(dy, dx, es, 4, dims, str);
    lab_check(dt == GALV_BF16 ? "bf16 transpose 0213" : "fp32 transpose 0213", lab_download(dy, x.size(), dt), want, 0, 0);
    /* gather rows of a [V, D] table by i64 indices */
    const int64_t V = 50, n = 17;
    auto table = lab_stored(lab_vec((size_t)(V * D)), dt);
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; i++) idx[i] = (i * 7) % V - (i == 3 ? V : 0); /* one negative index */
    std::vector<float> gw((size_t)(n * D));
    for (int64_t i = 0; i < n; i++)
      for (int64_t d = 0; d < D; d++) gw[i * D + d] = table[((idx[i] + V) % V) * D + d];
    void *dt_ = lab_upload(table, dt), *dg = lab_upload(gw, dt), *di;
    cudaCheck(cudaMalloc(&di, n * 8));
    lab_h2d(di, idx.data(), n * 8);
    galv_cu_gather(dg, dt_, di, 8, n, 1, V, D * (int64_t)es, 0);
    lab_check(dt == GALV_BF16 ? "bf16 gather" : "fp32 gather", lab_download(dg, gw.size(), dt), gw, 0, 0);
    /* split the transposed tensor in 3 along the last axis and concat it back */
    void *parts[3];
    const int64_t chunk[3] = {5 * (int64_t)es, 7 * (int64_t)es, 8 * (int64_t)es};
    for (int i = 0; i < 3; i++) cudaCheck(cudaMalloc(&parts[i], x.size() * 4));
    galv_cu_split(parts, dy, chunk, 3, B * H * S);
    galv_cu_concat(dx, (const void *const *)parts, chunk, 3, B * H * S);
    lab_check(dt == GALV_BF16 ? "bf16 split + concat" : "fp32 split + concat", lab_download(dx, x.size(), dt), want, 0, 0);
    for (void *p : {dx, dy, dt_, dg, di, parts[0], parts[1], parts[2]}) cudaCheck(cudaFree(p));
  }
  if (timing)
    for (int dt : {GALV_F32, GALV_BF16}) {
      size_t es = dt == GALV_BF16 ? 2 : 4;
      const int64_t B = 8, S = 1024, H = 12, D = 64, n = B * S * H * D;
      void *dx, *dy;
      cudaCheck(cudaMalloc(&dx, n * es));
      cudaCheck(cudaMalloc(&dy, n * es));
      const int64_t dims[] = {B, H, S, D}, str[] = {S * H * D, D, H * D, 1};
      double ms = lab_time_ms([&] { galv_cu_copy_strided(dy, dx, es, 4, dims, str); }, 20);
      lab_report_bw(dt == GALV_BF16 ? "transpose bf16 8x1024x12x64" : "transpose fp32 8x1024x12x64", ms, 2.0 * n * es);
      const int64_t V = 50257, C = 768, T = 8192;
      void *tab, *out, *ids;
      cudaCheck(cudaMalloc(&tab, V * C * es));
      cudaCheck(cudaMalloc(&out, T * C * es));
      cudaCheck(cudaMalloc(&ids, T * 8));
      cudaCheck(cudaMemset(ids, 0, T * 8));
      ms = lab_time_ms([&] { galv_cu_gather(out, tab, ids, 8, T, 1, V, C * (int64_t)es, 0); }, 20);
      lab_report_bw(dt == GALV_BF16 ? "gather bf16 8192 x 768" : "gather fp32 8192 x 768", ms, 2.0 * T * C * es);
      for (void *p : {dx, dy, tab, out, ids}) cudaCheck(cudaFree(p));
    }
  galv_cu_finish();
  return lab_fail;
}
