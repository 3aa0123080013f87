/* test_grad.cu — the training kernels (runtime/cuda/kernels_grad.cu) and
 * the mixed-storage kernels of bf16 training (kernels.cu: reduce and GEMM
 * from bf16 into fp32) vs CPU references written as runtime/kernels_grad.c
 * computes them: gather_grad (repeated and negative indices: atomics),
 * slice_grad (strided window), cross_entropy + its gradient (ignored rows),
 * conv gradients (1-D/2-D, stride, pad, dilation, groups). Each with the
 * activation side stored fp32 and bf16 (the references take the same
 * bf16-rounded inputs; fp32 accumulation both ways, so the bf16 paths are
 * held to fp32 tolerances except where the result itself is stored bf16).
 * --time, fp32 and bf16: GB/s of a GPT-2 wte gradient (8192 tokens x 768
 * into 50257 rows), of cross-entropy and its gradient over 8192 x 50257
 * logits, of a slice_grad of that size; TFLOP/s of both conv gradients of
 * a ViT-B patch embedding; bf16 only: GB/s of a bias gradient (8192 x 3072
 * bf16 rows summed into fp32) and TFLOP/s of a weight-gradient GEMM (768 x
 * 3072 over 8192 tokens, bf16 in, fp32 out). */
#include <math.h>

#include "lab.cuh"

static void *dev(const void *h, size_t bytes) {
  void *d;
  cudaCheck(cudaMalloc(&d, bytes ? bytes : 1));
  if (h) lab_h2d(d, h, bytes); /* h NULL: left for the kernel to fill */
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

/* tolerances: a result stored in dt (bf16: one rounding, 2^-8 relative) after fp32 accumulation */
static float rtol_of(int dt, float fp32) { return dt == GALV_BF16 ? 1e-2f : fp32; }

static void test_gather_grad(int dt) {
  const int64_t outer = 3, D = 11, nidx = 29, inner = 7;
  auto dy = lab_stored(lab_vec((size_t)(outer * nidx * inner)), dt);
  std::vector<int64_t> idx(nidx);
  for (int64_t j = 0; j < nidx; j++) idx[j] = (j * 5) % D - (j % 4 == 0 ? D : 0); /* repeats, negatives */
  std::vector<float> want((size_t)(outer * D * inner), 0.0f);
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < nidx; j++)
      for (int64_t i = 0; i < inner; i++) want[(a * D + (idx[j] + D) % D) * inner + i] += dy[(a * nidx + j) * inner + i];
  void *ddy = lab_upload(dy, dt);
  float *dd = (float *)dev(NULL, want.size() * 4);
  void *di = dev(idx.data(), idx.size() * 8);
  char what[96];
  galv_cu_gather_grad(dt, dd, ddy, di, 8, nidx, outer, D, inner, 0);
  snprintf(what, sizeof what, "gather_grad %s dy -> fp32, i64 (repeats, negative)", lab_dt(dt));
  lab_check(what, back(dd, want.size()), want, 1e-5f, 1e-5f);
  std::vector<int32_t> i32(idx.begin(), idx.end());
  void *di32 = dev(i32.data(), i32.size() * 4);
  galv_cu_gather_grad(dt, dd, ddy, di32, 4, nidx, outer, D, inner, 0);
  snprintf(what, sizeof what, "gather_grad %s dy -> fp32, i32", lab_dt(dt));
  lab_check(what, back(dd, want.size()), want, 1e-5f, 1e-5f);
  no_error("gather_grad");
  for (void *q : {ddy, (void *)dd, di, di32}) cudaCheck(cudaFree(q));
}

static void test_slice_grad(int dt) {
  /* dst [5, 12, 6]; window start {1, 2, 0}, step {2, 3, 1}, count {2, 4, 6} */
  const int64_t od[3] = {5, 12, 6}, cnt[3] = {2, 4, 6}, st[3] = {1, 2, 0}, sp[3] = {2, 3, 1};
  int64_t os[3] = {od[1] * od[2], od[2], 1}, s[3], base = 0, n = cnt[0] * cnt[1] * cnt[2];
  for (int d = 0; d < 3; d++) base += st[d] * os[d], s[d] = sp[d] * os[d];
  auto src = lab_stored(lab_vec((size_t)n), dt);
  std::vector<float> want((size_t)(od[0] * od[1] * od[2]), 0.0f);
  for (int64_t a = 0, i = 0; a < cnt[0]; a++)
    for (int64_t b = 0; b < cnt[1]; b++)
      for (int64_t c = 0; c < cnt[2]; c++, i++) want[base + a * s[0] + b * s[1] + c * s[2]] = src[i];
  size_t es = dt == GALV_BF16 ? 2 : 4;
  void *ds = lab_upload(src, dt), *dd = dev(NULL, want.size() * 4);
  cudaCheck(cudaMemset(dd, 0x7f, want.size() * 4)); /* must be zeroed by the kernel */
  galv_cu_scatter_strided(dd, (int64_t)(want.size() * es), base, ds, es, 3, cnt, s);
  char what[96];
  snprintf(what, sizeof what, "slice_grad (scatter_strided) %s strided window", lab_dt(dt));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  lab_check(what, lab_download(dd, want.size(), dt), want, 1e-30f, 0);
  cudaCheck(cudaFree(ds));
  cudaCheck(cudaFree(dd));
}

static void test_cross_entropy(int dt, int64_t rows, int64_t C) {
  const int64_t ign = -100;
  auto x = lab_stored(lab_vec((size_t)(rows * C), 4.0f), dt);
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
  void *dx = lab_upload(x, dt), *dg = lab_upload(std::vector<float>(x.size()), dt);
  float *dl = (float *)dev(NULL, 4), *ddl = (float *)dev(&dloss, 4);
  void *dlab = dev(lab.data(), lab.size() * 8), *scr = dev(NULL, (size_t)(rows + 2) * 8);
  galv_cu_cross_entropy(dt, dl, dx, (const int64_t *)dlab, rows, C, ign, scr, 0);
  char what[96];
  snprintf(what, sizeof what, "cross_entropy %s logits %lld x %lld", lab_dt(dt), (long long)rows, (long long)C);
  lab_check(what, back(dl, 1), wl, 1e-5f, 1e-5f); /* the loss is fp32 whatever the logits */
  galv_cu_cross_entropy_grad(dt, dg, ddl, dx, (const int64_t *)dlab, rows, C, ign, scr, 0);
  snprintf(what, sizeof what, "cross_entropy_grad %s %lld x %lld", lab_dt(dt), (long long)rows, (long long)C);
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  lab_check(what, lab_download(dg, wg.size(), dt), wg, 1e-7f, rtol_of(dt, 1e-5f));
  no_error("cross_entropy");
  for (void *q : {dx, dg, (void *)dl, (void *)ddl, dlab, scr}) cudaCheck(cudaFree(q));
}

/* the references of runtime/kernels_grad.c, written directly; x, dy stored dt, w fp32 (a parameter) */
static void test_conv(int dt, int S, int64_t N, int64_t C, int64_t M, int64_t G, const int64_t *in, const int64_t *k,
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
  auto x = lab_stored(lab_vec((size_t)(N * C * IS)), dt), w = lab_vec((size_t)(M * Cg * KK));
  auto dy = lab_stored(lab_vec((size_t)(N * M * P)), dt);
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
  void *dx_ = lab_upload(x, dt), *ddy = lab_upload(dy, dt), *gx = lab_upload(std::vector<float>(x.size()), dt);
  float *dw_ = (float *)dev(w.data(), w.size() * 4), *gw = (float *)dev(NULL, w.size() * 4);
  galv_cu_conv_grad_input(dt, &d, ddy, dw_, gx);
  galv_cu_conv_grad_weight(dt, &d, dx_, ddy, gw);
  char what[96];
  snprintf(what, sizeof what, "conv_grad_input %s %dD C%lld M%lld G%lld", lab_dt(dt), S, (long long)C, (long long)M, (long long)G);
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  lab_check(what, lab_download(gx, x.size(), dt), wdx, 1e-4f, rtol_of(dt, 1e-4f));
  snprintf(what, sizeof what, "conv_grad_weight %s -> fp32 %dD C%lld M%lld G%lld", lab_dt(dt), S, (long long)C, (long long)M,
           (long long)G);
  lab_check(what, back(gw, w.size()), wdw, 1e-4f, 1e-4f);
  for (void *q : {dx_, (void *)dw_, ddy, gx, (void *)gw}) cudaCheck(cudaFree(q));
}

/* bf16 training's parameter-gradient kernels: a bias gradient (reduce_sum over
 * the tokens of a bf16 activation gradient into fp32) and a weight gradient
 * (dW = X^T dY, bf16 inputs, fp32 C) */
static void test_param_grads(void) {
  const int64_t T = 37, H = 19, F = 23, dims[2] = {T, F}, ostr[2] = {0, 1};
  auto dy = lab_stored(lab_vec((size_t)(T * F)), GALV_BF16), x = lab_stored(lab_vec((size_t)(T * H)), GALV_BF16);
  std::vector<float> wb((size_t)F, 0.0f), ww((size_t)(H * F), 0.0f);
  for (int64_t t = 0; t < T; t++)
    for (int64_t f = 0; f < F; f++) {
      wb[f] += dy[t * F + f];
      for (int64_t h = 0; h < H; h++) ww[h * F + f] += x[t * H + h] * dy[t * F + f];
    }
  void *ddy = lab_upload(dy, GALV_BF16), *dxx = lab_upload(x, GALV_BF16);
  float *gb = (float *)dev(NULL, wb.size() * 4), *gw = (float *)dev(NULL, ww.size() * 4);
  galv_cu_reduce_to(GALV_BF16, GALV_F32, gb, ddy, 2, dims, ostr, F, 0);
  lab_check("bias grad: reduce_sum bf16 37x23 -> fp32", back(gb, wb.size()), wb, 1e-5f, 1e-5f);
  /* row-major dW [H, F] = X^T [H, T] dY [T, F]: A = X stored transposed (T x H, ld H) */
  galv_cu_gemm_desc g = {1, H, F, T, 1, 0, H, F, 0, 0};
  galv_cu_gemm_to(GALV_BF16, GALV_F32, &g, dxx, ddy, gw);
  lab_check("weight grad: gemm X^T dY bf16 -> fp32 19x23 (K 37)", back(gw, ww.size()), ww, 1e-4f, 1e-4f);
  for (void *q : {ddy, dxx, (void *)gb, (void *)gw}) cudaCheck(cudaFree(q));
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  for (int dt : {GALV_F32, GALV_BF16}) {
    printf("training kernels (activations %s):\n", lab_dt(dt));
    test_gather_grad(dt);
    test_slice_grad(dt);
    test_cross_entropy(dt, 13, 17);
    test_cross_entropy(dt, 64, 50257);
    const int64_t in[2] = {9, 8}, k[2] = {3, 2}, st[2] = {2, 1}, pd[2] = {1, 0}, dl[2] = {1, 2};
    test_conv(dt, 2, 2, 4, 6, 2, in, k, st, pd, dl);
    const int64_t in1[1] = {20}, k1[1] = {5}, st1[1] = {1}, pd1[1] = {2}, dl1[1] = {1};
    test_conv(dt, 1, 3, 3, 5, 1, in1, k1, st1, pd1, dl1);
    const int64_t inp[2] = {32, 32}, kp[2] = {16, 16}, sp[2] = {16, 16}, pp[2] = {0, 0}, dp[2] = {1, 1}; /* ViT patches */
    test_conv(dt, 2, 1, 3, 8, 1, inp, kp, sp, pp, dp);
  }
  printf("parameter gradients of bf16 training (bf16 in, fp32 out):\n");
  test_param_grads();
  if (timing)
    for (int dt : {GALV_F32, GALV_BF16}) {
      const int64_t V = 50257, Cd = 768, T = 8192;
      size_t es = dt == GALV_BF16 ? 2 : 4;
      char what[96];
      float *dst, *one;
      void *dy, *ids, *scr, *lg, *g;
      cudaCheck(cudaMalloc((void **)&dst, V * Cd * 4));
      cudaCheck(cudaMalloc(&dy, T * Cd * es));
      cudaCheck(cudaMalloc(&ids, T * 8));
      cudaCheck(cudaMemset(ids, 0, T * 8));
      cudaCheck(cudaMemset(dy, 0, T * Cd * es));
      double ms = lab_time_ms([&] { galv_cu_gather_grad(dt, dst, dy, ids, 8, T, 1, V, Cd, 0); }, 10);
      snprintf(what, sizeof what, "gather_grad %s 8192 x 768 -> 50257 rows", lab_dt(dt));
      lab_report_bw(what, ms, 4.0 * V * Cd + (4.0 + es) * T * Cd);
      cudaCheck(cudaFree(dst));
      cudaCheck(cudaFree(dy));
      cudaCheck(cudaFree(ids));
      const int64_t R = 8192;
      cudaCheck(cudaMalloc(&lg, R * V * es));
      cudaCheck(cudaMalloc(&g, R * V * es));
      cudaCheck(cudaMemset(lg, 0, R * V * es));
      cudaCheck(cudaMalloc(&scr, (R + 2) * 8));
      cudaCheck(cudaMalloc(&ids, R * 8));
      cudaCheck(cudaMemset(ids, 0, R * 8));
      const float h1 = 1.0f;
      one = (float *)dev(&h1, 4);
      ms = lab_time_ms([&] { galv_cu_cross_entropy(dt, one, lg, (const int64_t *)ids, R, V, -100, scr, 0); }, 5);
      snprintf(what, sizeof what, "cross_entropy %s 8192 x 50257", lab_dt(dt));
      lab_report_bw(what, ms, (double)es * R * V);
      lab_h2d(one, &h1, 4);
      ms = lab_time_ms([&] { galv_cu_cross_entropy_grad(dt, g, one, lg, (const int64_t *)ids, R, V, -100, scr, 0); }, 5);
      snprintf(what, sizeof what, "cross_entropy_grad %s 8192 x 50257", lab_dt(dt));
      lab_report_bw(what, ms, (double)es * 3 * R * V);
      /* slice_grad of a [8192, 50257] window (rows 0..8191 of 16384): zero the whole, write the window */
      const int64_t sd[2] = {R, V}, ss[2] = {V, 1};
      void *big;
      cudaCheck(cudaMalloc(&big, 2 * R * V * es));
      ms = lab_time_ms([&] { galv_cu_scatter_strided(big, 2 * R * V * (int64_t)es, 0, lg, es, 2, sd, ss); }, 5);
      snprintf(what, sizeof what, "slice_grad %s 8192 x 50257 into 16384 rows", lab_dt(dt));
      lab_report_bw(what, ms, (double)es * 4 * R * V); /* zero 2 R V, read and write R V */
      cudaCheck(cudaFree(big));
      for (void *q : {lg, g, (void *)one, ids, scr}) cudaCheck(cudaFree(q));
      /* conv_grad_weight of a ViT-B patch embedding (batch 8, 224 x 224, 16 x 16 patches, 768 channels) */
      galv_conv_desc d;
      memset(&d, 0, sizeof d);
      d.S = 2, d.N = 8, d.C = 3, d.M = 768, d.G = 1;
      for (int s = 0; s < 2; s++) d.in[s] = 224, d.k[s] = 16, d.stride[s] = 16, d.dil[s] = 1, d.out[s] = 14;
      void *cx, *cdy;
      float *cdw;
      cudaCheck(cudaMalloc(&cx, 8 * 3 * 224 * 224 * es));
      cudaCheck(cudaMalloc(&cdy, 8 * 768 * 196 * es));
      cudaCheck(cudaMalloc((void **)&cdw, 768 * 3 * 256 * 4));
      cudaCheck(cudaMemset(cx, 0, 8 * 3 * 224 * 224 * es));
      cudaCheck(cudaMemset(cdy, 0, 8 * 768 * 196 * es));
      ms = lab_time_ms([&] { galv_cu_conv_grad_weight(dt, &d, cx, cdy, cdw); }, 5);
      snprintf(what, sizeof what, "conv_grad_weight %s ViT-B patches, batch 8", lab_dt(dt));
      lab_report_flops(what, ms, 2.0 * 8 * 768 * 196 * 3 * 256, GALV_F32);
      cudaCheck(cudaMemset(cdw, 0, 768 * 3 * 256 * 4));
      ms = lab_time_ms([&] { galv_cu_conv_grad_input(dt, &d, cdy, cdw, cx); }, 5);
      snprintf(what, sizeof what, "conv_grad_input %s ViT-B patches, batch 8", lab_dt(dt));
      lab_report_flops(what, ms, 2.0 * 8 * 768 * 196 * 3 * 256, GALV_F32);
      for (void *q : {cx, cdy, (void *)cdw}) cudaCheck(cudaFree(q));
      if (dt != GALV_BF16) continue;
      /* bf16 training's parameter gradients: bias (8192 x 3072 bf16 -> fp32) and weight (768 x 3072, K 8192) */
      const int64_t F = 3072, H = 768, dims[2] = {T, F}, ostr[2] = {0, 1};
      void *a, *b;
      float *c;
      cudaCheck(cudaMalloc(&a, T * F * 2));
      cudaCheck(cudaMalloc(&b, T * H * 2));
      cudaCheck(cudaMalloc((void **)&c, H * F * 4));
      cudaCheck(cudaMemset(a, 0, T * F * 2));
      cudaCheck(cudaMemset(b, 0, T * H * 2));
      ms = lab_time_ms([&] { galv_cu_reduce_to(GALV_BF16, GALV_F32, c, a, 2, dims, ostr, F, 0); }, 10);
      lab_report_bw("bias grad reduce_sum bf16 8192x3072 -> fp32", ms, 2.0 * T * F + 4.0 * F);
      galv_cu_gemm_desc gd = {1, H, F, T, 1, 0, H, F, 0, 0};
      ms = lab_time_ms([&] { galv_cu_gemm_to(GALV_BF16, GALV_F32, &gd, b, a, c); }, 10);
      lab_report_flops("weight grad gemm bf16 -> fp32 768x3072, K 8192", ms, 2.0 * H * F * T, GALV_BF16);
      for (void *q : {a, b, (void *)c}) cudaCheck(cudaFree(q));
    }
  galv_cu_finish();
  return lab_fail;
}
