/* test_grad.cu — the training kernels (runtime/cuda/kernels_grad.cu) vs CPU
 * references written as runtime/kernels_grad.c computes them:
 * gather_grad (repeated and negative indices: atomics), slice_grad (strided
 * window), cross_entropy + its gradient (ignored rows), conv gradients
 * (1-D/2-D, stride, pad, dilation, groups). fp32. --time: GB/s of a GPT-2
 * wte gradient (8192 tokens x 768 into 50257 rows) and of the cross-entropy
 * gradient over 8192 x 50257 logits. */
#include <math.h>

#include "lab.cuh"

static void *dev(const void *h, size_t bytes) {
  void *d;
  cudaCheck(cudaMalloc(&d, bytes ? bytes : 1));
  if (bytes) cudaCheck(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}
static std::vector<float> back(const void *d, size_t n) {
  std::vector<float> h(n);
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  cudaCheck(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
  return h;
}
static void no_error(const char *what) {
  int err = 0;
  cudaCheck(cudaMemcpy(&err, galv_cu.err, sizeof err, cudaMemcpyDeviceToHost));
  if (err) printf("  ✗ %s: error flag %d\n", what, err), lab_fail = 1;
}

static void test_gather_grad(void) {
  const int64_t outer = 3, D = 11, nidx = 29, inner = 7;
  auto dy = lab_vec((size_t)(outer * nidx * inner));
  std::vector<int64_t> idx(nidx);
  for (int64_t j = 0; j < nidx; j++) idx[j] = (j * 5) % D - (j % 4 == 0 ? D : 0); /* repeats, negatives */
  std::vector<float> want((size_t)(outer * D * inner), 0.0f);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < nidx; j++)
      for (int64_t i = 0; i < inner; i++) want[(a * D + (idx[j] + D) % D) * inner + i] += dy[(a * nidx + j) * inner + i];
  float *ddy = (float *)dev(dy.data(), dy.size() * 4), *dd = (float *)dev(NULL, want.size() * 4);
  void *di = dev(idx.data(), idx.size() * 8);
  galv_cu_gather_grad(dd, ddy, di, 8, nidx, outer, D, inner, 0);
  lab_check("gather_grad i64 (repeats, negative)", back(dd, want.size()), want, 1e-5f, 1e-5f);
  std::vector<int32_t> i32(idx.begin(), idx.end());
  void *di32 = dev(i32.data(), i32.size() * 4);
  galv_cu_gather_grad(dd, ddy, di32, 4, nidx, outer, D, inner, 0);
  lab_check("gather_grad i32", back(dd, want.size()), want, 1e-5f, 1e-5f);
  no_error("gather_grad");
  for (void *p : {(void *)ddy, (void *)dd, di, di32}) cudaCheck(cudaFree(p));
}

static void test_slice_grad(void) {
  /* dst [5, 12, 6]; window start {1, 2, 0}, step {2, 3, 1}, count {2, 4, 6} */
  const int64_t od[3] = {5, 12, 6}, cnt[3] = {2, 4, 6}, st[3] = {1, 2, 0}, sp[3] = {2, 3, 1};
  int64_t os[3] = {od[1] * od[2], od[2], 1}, s[3], base = 0, n = cnt[0] * cnt[1] * cnt[2];
  for (int d = 0; d < 3; d++) base += st[d] * os[d], s[d] = sp[d] * os[d];
  auto src = lab_vec((size_t)n);
  std::vector<float> want((size_t)(od[0] * od[1] * od[2]), 0.0f);
  for (int64_t a = 0, i = 0; a < cnt[0]; a++)
    for (int64_t b = 0; b < cnt[1]; b++)
      for (int64_t c = 0; c < cnt[2]; c++, i++) want[base + a * s[0] + b * s[1] + c * s[2]] = src[i];
  void *ds = dev(src.data(), src.size() * 4), *dd = dev(NULL, want.size() * 4);
  cudaCheck(cudaMemset(dd, 0x7f, want.size() * 4)); /* must be zeroed by the kernel */
  galv_cu_scatter_strided(dd, (int64_t)want.size() * 4, base, ds, 4, 3, cnt, s);
  lab_check("slice_grad (scatter_strided) strided window", back(dd, want.size()), want, 1e-30f, 0);
  cudaCheck(cudaFree(ds));
  cudaCheck(cudaFree(dd));
}

static void test_cross_entropy(int64_t rows, int64_t C) {
  const int64_t ign = -100;
  auto x = lab_vec((size_t)(rows * C), 4.0f);
  std::vector<int64_t> lab(rows);
  for (int64_t i = 0; i < rows; i++) lab[i] = i % 5 == 3 ? ign : (i * 37) % C;
  std::vector<double> lse(rows);
  double sum = 0, count = 0;
  for (int64_t i = 0; i < rows; i++) {
    if (lab[i] == ign) continue;
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[i * C + c]);
    for (int64_t c = 0; c < C; c++) s += exp(x[i * C + c] - mx);
    lse[i] = mx + log(s);
    sum += lse[i] - x[i * C + lab[i]], count++;
  }
  const float dloss = 0.75f;
  std::vector<float> wl = {(float)(count ? sum / count : 0)}, wg((size_t)(rows * C));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < C; c++)
      wg[i * C + c] = lab[i] == ign ? 0.0f : (float)((exp(x[i * C + c] - lse[i]) - (c == lab[i] ? 1.0 : 0.0)) * dloss / count);
  float *dx = (float *)dev(x.data(), x.size() * 4), *dg = (float *)dev(NULL, x.size() * 4), *dl = (float *)dev(NULL, 4);
  float *ddl = (float *)dev(&dloss, 4);
  void *dlab = dev(lab.data(), lab.size() * 8), *scr = dev(NULL, (size_t)(rows + 2) * 8);
  galv_cu_cross_entropy(dl, dx, (const int64_t *)dlab, rows, C, ign, scr, 0);
  char what[96];
  snprintf(what, sizeof what, "cross_entropy %lld x %lld", (long long)rows, (long long)C);
  lab_check(what, back(dl, 1), wl, 1e-5f, 1e-5f);
  galv_cu_cross_entropy_grad(dg, ddl, dx, (const int64_t *)dlab, rows, C, ign, scr, 0);
  snprintf(what, sizeof what, "cross_entropy_grad %lld x %lld", (long long)rows, (long long)C);
  lab_check(what, back(dg, wg.size()), wg, 1e-7f, 1e-5f);
  no_error("cross_entropy");
  for (void *p : {(void *)dx, (void *)dg, (void *)dl, (void *)ddl, dlab, scr}) cudaCheck(cudaFree(p));
}

/* the references of runtime/kernels_grad.c, written directly */
static void test_conv(int S, int64_t N, int64_t C, int64_t M, int64_t G, const int64_t *in, const int64_t *k,
                      const int64_t *stride, const int64_t *pad, const int64_t *dil) {
  galv_conv_desc d;
  memset(&d, 0, sizeof d);
  d.S = S, d.N = N, d.C = C, d.M = M, d.G = G;
  int64_t IS = 1, KK = 1, P = 1;
  for (int s = 0; s < S; s++) {
    d.in[s] = in[s], d.k[s] = k[s], d.stride[s] = stride[s], d.pad[s] = pad[s], d.dil[s] = dil[s];
    d.out[s] = (in[s] + 2 * pad[s] - dil[s] * (k[s] - 1) - 1) / stride[s] + 1;
    IS *= in[s], KK *= k[s], P *= d.out[s];
  }
  int64_t Cg = C / G, Mg = M / G;
  auto x = lab_vec((size_t)(N * C * IS)), w = lab_vec((size_t)(M * Cg * KK)), dy = lab_vec((size_t)(N * M * P));
  std::vector<float> wdx(x.size(), 0.0f), wdw(w.size(), 0.0f);
  for (int64_t n = 0; n < N; n++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t c = 0; c < Cg; c++)
        for (int64_t kk = 0; kk < KK; kk++)
          for (int64_t p = 0; p < P; p++) {
            int64_t kq = kk, pq = p, pos[GALV_RT_MAX_RANK], off = 0, ok = 1;
            for (int s = S - 1; s >= 0; s--) {
              pos[s] = (pq % d.out[s]) * stride[s] - pad[s] + (kq % k[s]) * dil[s];
              pq /= d.out[s], kq /= k[s];
            }
            for (int s = 0; s < S; s++) ok &= pos[s] >= 0 && pos[s] < in[s], off = off * in[s] + pos[s];
            if (!ok) continue;
            int64_t g = m / Mg, xi = (n * C + g * Cg + c) * IS + off, wi = (m * Cg + c) * KK + kk;
            double g_ = dy[(n * M + m) * P + p];
            wdx[xi] += (float)(g_ * w[wi]);
            wdw[wi] += (float)(g_ * x[xi]);
          }
  float *dx_ = (float *)dev(x.data(), x.size() * 4), *dw_ = (float *)dev(w.data(), w.size() * 4);
  float *ddy = (float *)dev(dy.data(), dy.size() * 4), *gx = (float *)dev(NULL, x.size() * 4), *gw = (float *)dev(NULL, w.size() * 4);
  galv_cu_conv_grad_input(&d, ddy, dw_, gx);
  galv_cu_conv_grad_weight(&d, dx_, ddy, gw);
  char what[96];
  snprintf(what, sizeof what, "conv_grad_input %dD C%lld M%lld G%lld", S, (long long)C, (long long)M, (long long)G);
  lab_check(what, back(gx, x.size()), wdx, 1e-4f, 1e-4f);
  snprintf(what, sizeof what, "conv_grad_weight %dD C%lld M%lld G%lld", S, (long long)C, (long long)M, (long long)G);
  lab_check(what, back(gw, w.size()), wdw, 1e-4f, 1e-4f);
  for (void *p : {(void *)dx_, (void *)dw_, (void *)ddy, (void *)gx, (void *)gw}) cudaCheck(cudaFree(p));
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  printf("training kernels (fp32):\n");
  test_gather_grad();
  test_slice_grad();
  test_cross_entropy(13, 17);
  test_cross_entropy(64, 50257);
  {
    const int64_t in[2] = {9, 8}, k[2] = {3, 2}, st[2] = {2, 1}, pd[2] = {1, 0}, dl[2] = {1, 2};
    test_conv(2, 2, 4, 6, 2, in, k, st, pd, dl);
    const int64_t in1[1] = {20}, k1[1] = {5}, st1[1] = {1}, pd1[1] = {2}, dl1[1] = {1};
    test_conv(1, 3, 3, 5, 1, in1, k1, st1, pd1, dl1);
    const int64_t inp[2] = {32, 32}, kp[2] = {16, 16}, sp[2] = {16, 16}, pp[2] = {0, 0}, dp[2] = {1, 1}; /* ViT patches */
    test_conv(2, 1, 3, 8, 1, inp, kp, sp, pp, dp);
  }
  if (timing) {
    const int64_t V = 50257, Cd = 768, T = 8192;
    float *dst, *dy, *lg, *g, *one;
    void *ids, *scr;
    cudaCheck(cudaMalloc((void **)&dst, V * Cd * 4));
    cudaCheck(cudaMalloc((void **)&dy, T * Cd * 4));
    cudaCheck(cudaMalloc(&ids, T * 8));
    cudaCheck(cudaMemset(ids, 0, T * 8));
    cudaCheck(cudaMemset(dy, 0, T * Cd * 4));
    double ms = lab_time_ms([&] { galv_cu_gather_grad(dst, dy, ids, 8, T, 1, V, Cd, 0); }, 10);
    lab_report_bw("gather_grad fp32 8192 x 768 -> 50257 rows", ms, 4.0 * (V * Cd + 2 * T * Cd));
    cudaCheck(cudaFree(dst));
    cudaCheck(cudaFree(dy));
    const int64_t R = 8192;
    cudaCheck(cudaMalloc((void **)&lg, R * V * 4));
    cudaCheck(cudaMalloc((void **)&g, R * V * 4));
    cudaCheck(cudaMemset(lg, 0, R * V * 4));
    cudaCheck(cudaMalloc(&scr, (R + 2) * 8));
    cudaCheck(cudaMalloc(&ids, R * 8));
    cudaCheck(cudaMemset(ids, 0, R * 8));
    const float h1 = 1.0f;
    one = (float *)dev(&h1, 4);
    ms = lab_time_ms([&] { galv_cu_cross_entropy_grad(g, one, lg, (const int64_t *)ids, R, V, -100, scr, 0); }, 5);
    lab_report_bw("cross_entropy_grad fp32 8192 x 50257", ms, 4.0 * 3 * R * V);
    for (void *p : {(void *)lg, (void *)g, (void *)one, ids, scr}) cudaCheck(cudaFree(p));
  }
  galv_cu_finish();
  return lab_fail;
}
