/* test_fattn_train.cu — the CUDA target's training attention kernels
 * (runtime/cuda/fused_attention.cuh: galv.attention's forward with its
 * per-row logsumexp, galv.attention_grad's FlashAttention-2 backward with
 * the scores recomputed from it), through the entry points the emitted
 * programs call (galv_cu_fattn / galv_cu_fattn_grad), against a double
 * precision CPU reference that materialises the scores. The score functor is
 * the emitter's form for a causal decoder: s * scale, plus an additive
 * per-head bias (a functor operand broadcast over the batch), then where(mask,
 * s, -inf) with a bool mask (another operand); the slope is checked through
 * dq / dk. Storage fp32, bf16 and fp16 (lse fp32; 16-bit results from fp32
 * accumulators in the caller's scratch); k and v stored transposed or not;
 * sequences across the kernels' 64-row tiles and 32-row chunks (1, 31, 33,
 * 64, 70, 100, 129, 130), Sq != Sk, head dims 1, 16, 32, 48, 64, 80, 96, 128
 * (the tiled kernels), 136 and 160 (the per-row kernels past 128), Dv != D
 * both ways, an empty batch, no queries (dk, dv zero). With dropout (ratio
 * 0.25, nonzero shard offsets, an accumulated microbatch's rows, a pipeline
 * microbatch and a step): the same cases, the reference drawing each
 * score's mask with galv_rng_keep over its global coordinates (galv.dropout's
 * definition, runtime/galv_rng.h) and applying FlashAttention-2's dropout
 * (o = p_drop v, dv = p_drop^T dO, ds = p (dp * mask / (1 - p) - Dr) f').
 * --dropout: only the dropout cases (the race-check build's run). --time: forward and backward TFLOP/s at B=4,
 * H=12, S=1024, D=64 (causal: half the scores count; the backward's five
 * products against the forward's two). */
#include <string>

#include "lab.cuh"
#include "../../runtime/cuda/fused_attention.cuh"

struct fcase {
  int64_t B, H, Sq, Sk, D, Dv;
  int kt, vt, bias;
};

/* the functor as the kernels interpret it: s * scale [+ bias] then where(mask, s, -inf); *slope = ds_out / ds_in */
static double functor(double s, double scale, double bias, int keep, double *slope) {
  s = s * scale + bias;
  *slope = keep ? scale : 0.0;
  return keep ? s : -INFINITY;
}

struct ref_out {
  std::vector<float> o, lse, dq, dk, dv;
};

/* the dropout of the cases that have one: galv.dropout's parameters over the scores [B, H, Sq, Sk] */
struct fdrop {
  bool on;
  galv_dropout_desc dd;
  int64_t off[4], step, mb;
};

/* the dropout's factor of score (b, h, i, j): galv_rng_keep over its global coordinates (galv.dropout's mask) */
static double drop_factor(const fdrop &x, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!x.on) return 1.0;
  const galv_dropout_desc &d = x.dd;
  int64_t g[4] = {b + x.off[0], h + x.off[1], i + x.off[2], j + x.off[3]};
  g[0] = galv_rng_row(g[0], d.acc[0], d.acc[1], d.acc[2], x.mb, d.rows);
  return galv_rng_keep(galv_rng_key(d.seed, d.id, (uint64_t)x.step), g, 4, d.thr) ? (double)d.scale : 0.0;
}

static ref_out reference(const fcase &c, const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                         const std::vector<float> &dout, const std::vector<unsigned char> &mask, const std::vector<float> &bias,
                         double scale, const fdrop &dr) {
  int64_t BH = c.B * c.H;
  ref_out r;
  r.o.assign((size_t)(BH * c.Sq * c.Dv), 0), r.lse.assign((size_t)(BH * c.Sq), 0);
  r.dq.assign((size_t)(BH * c.Sq * c.D), 0), r.dk.assign((size_t)(BH * c.Sk * c.D), 0), r.dv.assign((size_t)(BH * c.Sk * c.Dv), 0);
  std::vector<double> dk((size_t)(BH * c.Sk * c.D), 0), dv((size_t)(BH * c.Sk * c.Dv), 0), p((size_t)c.Sk), sl((size_t)c.Sk);
  auto K = [&](int64_t b, int64_t j, int64_t x) { return k[(size_t)(c.kt ? (b * c.D + x) * c.Sk + j : (b * c.Sk + j) * c.D + x)]; };
  auto V = [&](int64_t b, int64_t j, int64_t e) { return (size_t)(c.vt ? (b * c.Dv + e) * c.Sk + j : (b * c.Sk + j) * c.Dv + e); };
  for (int64_t b = 0; b < BH; b++)
    for (int64_t i = 0; i < c.Sq; i++) {
      double m = -INFINITY, sum = 0;
      int64_t h = b % c.H;
      for (int64_t j = 0; j < c.Sk; j++) {
        double s = 0;
        for (int64_t x = 0; x < c.D; x++) s += (double)q[(size_t)((b * c.Sq + i) * c.D + x)] * K(b, j, x);
        p[j] = functor(s, scale, c.bias ? bias[(size_t)((h * c.Sq + i) * c.Sk + j)] : 0.0, mask[(size_t)(i * c.Sk + j)], &sl[j]);
        m = fmax(m, p[j]);
      }
      for (int64_t j = 0; j < c.Sk; j++) sum += exp(p[j] - m);
      for (int64_t j = 0; j < c.Sk; j++) p[j] = exp(p[j] - m) / sum;
      r.lse[(size_t)(b * c.Sq + i)] = (float)(m + log(sum));
      std::vector<double> mk((size_t)c.Sk);
      for (int64_t j = 0; j < c.Sk; j++) mk[(size_t)j] = drop_factor(dr, b / c.H, h, i, j);
      double Dr = 0;
      std::vector<double> o((size_t)c.Dv, 0);
      for (int64_t e = 0; e < c.Dv; e++) {
        for (int64_t j = 0; j < c.Sk; j++) o[e] += p[j] * mk[(size_t)j] * v[V(b, j, e)];
        r.o[(size_t)((b * c.Sq + i) * c.Dv + e)] = (float)o[e];
        Dr += o[e] * dout[(size_t)((b * c.Sq + i) * c.Dv + e)];
      }
      for (int64_t j = 0; j < c.Sk; j++) {
        if (p[j] == 0) continue;
        double dp = 0;
        for (int64_t e = 0; e < c.Dv; e++) {
          double g = dout[(size_t)((b * c.Sq + i) * c.Dv + e)];
          dp += g * v[V(b, j, e)];
          dv[V(b, j, e)] += p[j] * mk[(size_t)j] * g;
        }
        double ds = p[j] * (dp * mk[(size_t)j] - Dr) * sl[j];
        for (int64_t x = 0; x < c.D; x++) {
          r.dq[(size_t)((b * c.Sq + i) * c.D + x)] += (float)(ds * K(b, j, x));
          size_t kx = (size_t)(c.kt ? (b * c.D + x) * c.Sk + j : (b * c.Sk + j) * c.D + x);
          dk[kx] += ds * q[(size_t)((b * c.Sq + i) * c.D + x)];
        }
      }
    }
  for (size_t i = 0; i < dk.size(); i++) r.dk[i] = (float)dk[i];
  for (size_t i = 0; i < dv.size(); i++) r.dv[i] = (float)dv[i];
  return r;
}

static galv_fattn_desc make_desc(const fcase &c, float scale) {
  galv_fattn_desc d;
  memset(&d, 0, sizeof d);
  d.nb = 2, d.bd[0] = c.B, d.bd[1] = c.H;
  d.Sq = c.Sq, d.Sk = c.Sk, d.D = c.D, d.Dv = c.Dv, d.kt = c.kt, d.vt = c.vt;
  int t = 0;
  d.st[t].kind = 2, d.st[t].nargs = 2, d.st[t].arg[0] = -1, d.st[t].arg[1] = -2, d.st[t].lit[1] = scale, t++;
  if (c.bias) d.st[t].kind = 0, d.st[t].nargs = 2, d.st[t].arg[0] = -1, d.st[t].arg[1] = 1, t++;
  d.st[t].kind = 4, d.st[t].nargs = 3, d.st[t].arg[0] = 0, d.st[t].arg[1] = -1, d.st[t].arg[2] = -2, d.st[t].lit[2] = -INFINITY, t++;
  d.nst = t, d.nfn = c.bias ? 2 : 1;
  /* operand 0: the mask [Sq, Sk] (bool); operand 1: the bias [H, Sq, Sk] (f32), both broadcast over the batch */
  d.fdt[0] = GALV_BOOL, d.fst[0][0] = 0, d.fst[0][1] = 0, d.fst[0][2] = c.Sk, d.fst[0][3] = 1;
  d.fdt[1] = GALV_F32, d.fst[1][0] = 0, d.fst[1][1] = c.Sq * c.Sk, d.fst[1][2] = c.Sk, d.fst[1][3] = 1;
  return d;
}

static const char *dtn(int dt) { return dt == GALV_BF16 ? "bf16" : dt == GALV_F16 ? "fp16" : "fp32"; }

template <typename T>
static void run(int dt, const fcase &c, bool timing, bool drop = false) {
  int64_t BH = c.B * c.H;
  size_t nq = (size_t)(BH * c.Sq * c.D), nk = (size_t)(BH * c.Sk * c.D), nv = (size_t)(BH * c.Sk * c.Dv), no = (size_t)(BH * c.Sq * c.Dv);
  float scale = 1.0f / sqrtf((float)c.D);
  std::vector<unsigned char> mask((size_t)(c.Sq * c.Sk));
  for (int64_t i = 0; i < c.Sq; i++) /* causal, the queries aligned to the last keys (Sk >= Sq) */
    for (int64_t j = 0; j < c.Sk; j++) mask[(size_t)(i * c.Sk + j)] = j <= i + (c.Sk - c.Sq);
  std::vector<float> bias = lab_vec((size_t)(c.H * c.Sq * c.Sk), 0.5f);
  void *dq = lab_upload(lab_vec(nq), dt), *dk = lab_upload(lab_vec(nk), dt), *dv = lab_upload(lab_vec(nv), dt);
  void *ddo = lab_upload(lab_vec(no), dt);
  /* the reference reads what the storage keeps */
  std::vector<float> q = lab_download(dq, nq, dt), k = lab_download(dk, nk, dt), v = lab_download(dv, nv, dt), dout = lab_download(ddo, no, dt);
  unsigned char *dmask;
  float *dbias, *dlse;
  void *dout_o, *gq, *gk, *gv;
  char *scratch = NULL;
  cudaCheck(cudaMalloc((void **)&dmask, mask.size() ? mask.size() : 1));
  lab_h2d(dmask, mask.data(), mask.size());
  cudaCheck(cudaMalloc((void **)&dbias, (bias.size() ? bias.size() : 1) * 4));
  lab_h2d(dbias, bias.data(), bias.size() * 4);
  cudaCheck(cudaMalloc((void **)&dlse, (size_t)(BH * c.Sq + 1) * 4));
  size_t es = dt == GALV_F32 ? 4 : 2;
  cudaCheck(cudaMalloc(&dout_o, no * es + 4));
  cudaCheck(cudaMalloc(&gq, nq * es + 4));
  cudaCheck(cudaMalloc(&gk, nk * es + 4));
  cudaCheck(cudaMalloc(&gv, nv * es + 4));
  for (auto [p, n] : {std::pair<void *, size_t>{dout_o, no}, {gq, nq}, {gk, nk}, {gv, nv}}) /* NaN where a kernel leaves one unwritten */
    cudaCheck(cudaMemset(p, 0xff, n * es));
  if (dt != GALV_F32) { /* the emitter's reservation: o's accumulator, or dq, dk, dv's, each 64-byte aligned */
    size_t sb = (size_t)(galv_fattn_al((int64_t)nq * 4) + galv_fattn_al((int64_t)nk * 4) + galv_fattn_al((int64_t)nv * 4));
    size_t so = no * 4;
    cudaCheck(cudaMalloc((void **)&scratch, (sb > so ? sb : so) + 64));
  }
  galv_fattn_desc d = make_desc(c, scale);
  const void *fn[8] = {dmask, dbias}; /* as many as galv_fattn_ptrs holds (the pack reads up to nfn of them) */
  fdrop dr;
  memset(&dr, 0, sizeof dr);
  int64_t *doff = NULL;
  if (drop) { /* ratio 0.25 on the probabilities; this rank's shard offsets (device), microbatch 1 of 2, step 3, pipeline microbatch 1 */
    dr.on = true, dr.step = 3, dr.mb = 1;
    dr.off[0] = 2 * c.B, dr.off[1] = c.H, dr.off[2] = 5, dr.off[3] = 7;
    galv_dropout_desc &x = dr.dd;
    x.rank = 4, x.dims[0] = c.B, x.dims[1] = c.H, x.dims[2] = c.Sq, x.dims[3] = c.Sk;
    x.seed = 11, x.id = 4, x.thr = galv_rng_threshold(0.25), x.scale = (float)(1.0 / (1.0 - 0.25));
    x.acc[0] = 2, x.acc[1] = 1, x.acc[2] = 1, x.rows = 4 * c.B + 1;
    d.drop = 1, d.dro = x;
    cudaCheck(cudaMalloc((void **)&doff, sizeof dr.off));
    lab_h2d(doff, dr.off, sizeof dr.off);
  }
  auto fwd = [&] {
    if constexpr (sizeof(T) == 4)
      galv_cu_fattn(&d, (const T *)dq, (const T *)dk, (const T *)dv, fn, doff, dr.step, dr.mb, (T *)dout_o, dlse);
    else
      galv_cu_fattn(&d, (const T *)dq, (const T *)dk, (const T *)dv, fn, doff, dr.step, dr.mb, (T *)dout_o, dlse, scratch);
  };
  auto bwd = [&] {
    if constexpr (sizeof(T) == 4)
      galv_cu_fattn_grad(&d, (const T *)dq, (const T *)dk, (const T *)dv, (const T *)dout_o, (const T *)ddo, dlse, fn, doff, dr.step,
                         dr.mb, (T *)gq, (T *)gk, (T *)gv);
    else
      galv_cu_fattn_grad(&d, (const T *)dq, (const T *)dk, (const T *)dv, (const T *)dout_o, (const T *)ddo, dlse, fn, doff, dr.step,
                         dr.mb, (T *)gq, (T *)gk, (T *)gv, scratch);
  };
  char what[128];
  snprintf(what, sizeof what, "%s B %lld H %lld Sq %lld Sk %lld D %lld%s%s%s%s", dtn(dt), (long long)c.B, (long long)c.H,
           (long long)c.Sq, (long long)c.Sk, (long long)c.D, c.kt ? " kT" : "", c.vt ? " vT" : "", c.bias ? " +bias" : "",
           drop ? " dropout 0.25" : "");
  if (!timing) {
    fwd();
    bwd();
    ref_out r = reference(c, q, k, v, dout, mask, bias, scale, dr);
    /* fp32: summation order only; 16-bit: each result rounded once from fp32 (2^-8 / 2^-11 relative), and the
     * backward reads the stored (rounded) o where the reference uses the exact one */
    float at = dt == GALV_F32 ? 2e-5f : dt == GALV_BF16 ? 3e-2f : 4e-3f, rt = dt == GALV_F32 ? 1e-4f : dt == GALV_BF16 ? 2e-2f : 4e-3f;
    std::vector<float> lse((size_t)(BH * c.Sq));
    cudaCheck(cudaStreamSynchronize(galv_cu.stream));
    cudaCheck(cudaMemcpy(lse.data(), dlse, lse.size() * 4, cudaMemcpyDeviceToHost));
    printf(" %s\n", what);
    lab_check("  o", lab_download(dout_o, no, dt), r.o, at, rt);
    lab_check("  lse (fp32)", lse, r.lse, 2e-5f, 1e-5f);
    lab_check("  dq", lab_download(gq, nq, dt), r.dq, at, rt);
    lab_check("  dk", lab_download(gk, nk, dt), r.dk, at, rt);
    lab_check("  dv", lab_download(gv, nv, dt), r.dv, at, rt);
  } else {
    double f = 2.0 * BH * c.Sq * c.Sk * (c.D + c.Dv) / 2; /* causal: half the scores */
    fwd();
    lab_report_flops((std::string(what) + " fwd").c_str(), lab_time_ms(fwd, 5), f, dt == GALV_F16 ? GALV_BF16 : dt);
    lab_report_flops((std::string(what) + " bwd").c_str(), lab_time_ms(bwd, 5), 2.5 * f, dt == GALV_F16 ? GALV_BF16 : dt);
  }
  for (void *p : {dq, dk, dv, ddo, (void *)dmask, (void *)dbias, (void *)dlse, dout_o, gq, gk, gv, (void *)scratch, (void *)doff})
    if (p) cudaCheck(cudaFree(p));
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv), only_drop = false;
  for (int i = 1; i < argc; i++) only_drop |= !strcmp(argv[i], "--dropout");
  galv_cu_init(0);
  printf("training attention (galv.attention / attention_grad: forward, lse, dq, dk, dv):\n");
  const fcase cases[] = {
      {1, 1, 1, 1, 16, 16, 0, 0, 0},    {1, 2, 31, 31, 16, 16, 0, 0, 1},   {2, 3, 33, 33, 64, 64, 0, 0, 0},
      {1, 2, 100, 100, 128, 128, 1, 0, 1}, {1, 1, 129, 129, 64, 64, 0, 1, 0}, {2, 2, 40, 40, 1, 1, 0, 0, 1} /* head dim 1 */,
      {1, 2, 17, 48, 32, 16, 1, 1, 1} /* Sq < Sk, Dv != D */, {0, 2, 16, 16, 64, 64, 0, 0, 0} /* empty */,
      {1, 2, 64, 130, 80, 48, 0, 1, 1} /* a whole query tile, keys into a third tile, 64 < D <= 128, Dv <= 64 */,
      {2, 1, 70, 70, 48, 96, 1, 0, 0} /* D <= 64 < Dv */, {1, 2, 0, 20, 16, 16, 0, 0, 1} /* no queries: dk, dv zero */,
      {1, 1, 20, 37, 160, 136, 1, 0, 0} /* head dims over 128: the per-row kernels */};
  if (!timing && !only_drop)
    for (const fcase &c : cases) {
      run<float>(GALV_F32, c, false);
      run<__nv_bfloat16>(GALV_BF16, c, false);
      run<__half>(GALV_F16, c, false);
    }
  if (!timing) { /* with dropout: fp32 every case, the 16-bit kernels on a tiled and a per-row one */
    printf("with dropout on the probabilities:\n");
    for (const fcase &c : cases) run<float>(GALV_F32, c, false, true);
    run<__nv_bfloat16>(GALV_BF16, cases[4], false, true);
    run<__half>(GALV_F16, cases[11], false, true);
  }
  else {
    const fcase big = {4, 12, 1024, 1024, 64, 64, 0, 0, 0};
    run<float>(GALV_F32, big, true);
    run<__nv_bfloat16>(GALV_BF16, big, true);
    run<float>(GALV_F32, big, true, true); /* with dropout 0.25 */
    run<__nv_bfloat16>(GALV_BF16, big, true, true);
  }
  galv_cu_finish();
  return lab_fail;
}
