/* test_attention.cu — the fused attention kernel (attention.cuh: tiled keys,
 * online softmax, no S x S matrix in memory) with a causal-mask + scale score
 * functor like the one codegen/cuda generates, vs a CPU reference that
 * materialises the scores; fp32 and bf16, sequence lengths across tile
 * edges, head dims 16..128; --time: TFLOP/s at B=4, H=12, S=1024, D=64. */
#include "lab.cuh"
#include "../../runtime/cuda/attention.cuh"

struct causal_scale {
  float scale;
  int64_t S;
  __device__ float operator()(float s, int64_t e) const {
    int64_t j = e % S, i = (e / S) % S;
    return j > i ? -INFINITY : s * scale;
  }
};

/* q, k, v, out: [BH, S, D] contiguous */
static std::vector<float> ref(const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                              int64_t BH, int64_t S, int64_t D, float scale) {
  std::vector<float> o((size_t)(BH * S * D)), p((size_t)S);
  for (int64_t b = 0; b < BH; b++)
    for (int64_t i = 0; i < S; i++) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < S; j++) {
        double s = 0;
        for (int64_t d = 0; d < D; d++) s += (double)q[(b * S + i) * D + d] * k[(b * S + j) * D + d];
        p[j] = j > i ? -INFINITY : (float)(s * scale);
        m = fmax(m, p[j]);
      }
      for (int64_t j = 0; j < S; j++) sum += exp(p[j] - m);
      for (int64_t d = 0; d < D; d++) {
        double acc = 0;
        for (int64_t j = 0; j < S; j++) acc += exp(p[j] - m) / sum * v[(b * S + j) * D + d];
        o[(b * S + i) * D + d] = (float)acc;
      }
    }
  return o;
}

static galv_attn_desc desc(int64_t B, int64_t H, int64_t S, int64_t D) {
  galv_attn_desc a;
  memset(&a, 0, sizeof a);
  a.nb = 2, a.bdims[0] = B, a.bdims[1] = H;
  a.qb[0] = a.kb[0] = a.vb[0] = H * S * D, a.qb[1] = a.kb[1] = a.vb[1] = S * D;
  a.Sq = a.Sk = S, a.D = a.Dv = D;
  a.qi = a.kj = a.vj = D, a.qd = a.kd = a.vd = 1;
  return a;
}

template <typename T>
static void run(int dt, int64_t B, int64_t H, int64_t S, int64_t D, bool timing) {
  size_t n = (size_t)(B * H * S * D);
  auto q = lab_stored(lab_vec(n), dt), k = lab_stored(lab_vec(n), dt), v = lab_stored(lab_vec(n), dt);
  void *dq = lab_upload(q, dt), *dk = lab_upload(k, dt), *dv = lab_upload(v, dt), *dout = lab_upload(v, dt);
  galv_attn_desc a = desc(B, H, S, D);
  causal_scale sc = {1.0f / sqrtf((float)D), S};
  galv_attention<T>(&a, dq, dk, dv, dout, sc);
  char what[96];
  snprintf(what, sizeof what, "%s B %lld H %lld S %lld D %lld", lab_dt(dt), (long long)B, (long long)H, (long long)S,
           (long long)D);
  if (!timing) {
    lab_check(what, lab_download(dout, n, dt), ref(q, k, v, B * H, S, D, sc.scale), dt == GALV_BF16 ? 2e-2f : 1e-5f,
              dt == GALV_BF16 ? 2e-2f : 1e-4f);
  } else {
    double ms = lab_time_ms([&] { galv_attention<T>(&a, dq, dk, dv, dout, sc); }, 10);
    lab_report_flops(what, ms, 4.0 * B * H * S * S * D / 2 /* causal: half the scores count */, dt);
  }
  for (void *p : {dq, dk, dv, dout}) cudaCheck(cudaFree(p));
}

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  printf("attention (fused, causal):\n");
  const int64_t sizes[][4] = {{1, 1, 1, 16}, {1, 2, 31, 16}, {2, 3, 33, 64}, {1, 2, 100, 128}, {1, 1, 257, 64},
                              {2, 2, 40, 1} /* head dim 1 */, {0, 2, 16, 64} /* empty */};
  for (auto &s : sizes) {
    run<float>(GALV_F32, s[0], s[1], s[2], s[3], false);
    run<galv_bf16>(GALV_BF16, s[0], s[1], s[2], s[3], false);
  }
  if (timing) {
    run<float>(GALV_F32, 4, 12, 1024, 64, true);
    run<galv_bf16>(GALV_BF16, 4, 12, 1024, 64, true);
  }
  galv_cu_finish();
  return lab_fail;
}
