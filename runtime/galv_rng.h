/* galv_rng.h — the dropout mask of galv.dropout (docs/training.md
 * "Dropout"), one definition for the reference evaluator (ir/eval), the CPU
 * runtime (runtime/kernels.c) and the CUDA kernels (runtime/cuda/kernels.cu).
 *
 * The mask is counter-based: element e of a dropout keeps its value iff
 *
 *   u(seed, id, step, g_0 .. g_{r-1}) >= T,   T = round(ratio * 2^24)
 *
 * where g_d are e's GLOBAL coordinates (the coordinates in the whole
 * step's batch on one device: a rank's shard offset, the accumulated
 * microbatch's rows and the pipeline microbatch added by the kernel's
 * caller), id the op's number in the model (the frontend's count of
 * training Dropout nodes), step the optimizer step, and u the top 24 bits
 * of a splitmix64 finaliser over a polynomial in those numbers:
 *
 *   k = mix(mix(mix(seed) ^ id) ^ step)            once per call
 *   h = k; for each d: h = (h + g_d) * GALV_RNG_MUL  per element
 *   u = mix(h) >> 40
 *
 * No state, nothing stored: the forward, its gradient and any recomputation
 * regenerate the same mask, and every sharding of the same tensor draws the
 * same mask as one device does. Kept elements are scaled by 1 / (1 - ratio)
 * (the scale computed in fp32, as torch's nn.Dropout). tests/train_dropout.sh
 * checks a numpy transcription of these lines. */
#ifndef GALV_RNG_H
#define GALV_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define GALV_RNG_FN static inline __host__ __device__
#else
#define GALV_RNG_FN static inline
#endif

#define GALV_RNG_MUL 0xD6E8FEB86659FD93ull

/* splitmix64's finaliser (Steele, Lea and Flood 2014) */
GALV_RNG_FN uint64_t galv_rng_mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* the per-call key: seed, the op's id, the step */
GALV_RNG_FN uint64_t galv_rng_key(uint64_t seed, uint64_t id, uint64_t step) {
  return galv_rng_mix(galv_rng_mix(galv_rng_mix(seed) ^ id) ^ step);
}

/* the threshold of a ratio in [0, 1): elements whose u is below it drop */
GALV_RNG_FN uint32_t galv_rng_threshold(double ratio) {
  double t = ratio * 16777216.0 + 0.5;
  return t <= 0 ? 0u : t >= 16777216.0 ? 16777216u : (uint32_t)t;
}

/* Whether the element at global coordinates g[0 .. r) keeps its value. */
GALV_RNG_FN int galv_rng_keep(uint64_t key, const int64_t *g, int r, uint32_t thr) {
  uint64_t h = key;
  for (int d = 0; d < r; d++) h = (h + (uint64_t)g[d]) * GALV_RNG_MUL;
  return (uint32_t)(galv_rng_mix(h) >> 40) >= thr;
}

/* Global dim-0 coordinate of local row c0 (already plus the shard offset):
 * gradient accumulation's microbatch k of M reads rows {j M + k} of the
 * batch in groups of q rows per sample (acc_m = 1: none), and pipeline
 * microbatch mb covers rows [mb rows, (mb + 1) rows). */
GALV_RNG_FN int64_t galv_rng_row(int64_t c0, int64_t acc_m, int64_t acc_k, int64_t acc_q, int64_t mb, int64_t rows) {
  if (acc_m > 1) c0 = ((c0 / acc_q) * acc_m + acc_k) * acc_q + c0 % acc_q;
  return c0 + mb * rows;
}

/* One dropout call's static parameters (the emitters print it from
 * galv.dropout's attributes and local type; codegen/kcall.c cg_dropout_lit). */
#define GALV_RNG_MAX_RANK 8
typedef struct {
  int rank;
  int64_t dims[GALV_RNG_MAX_RANK]; /* the local (this rank's) dims */
  uint64_t seed, id;
  uint32_t thr;   /* galv_rng_threshold(ratio) */
  float scale;    /* 1 / (1 - ratio) in fp32 */
  int64_t acc[3]; /* gradient accumulation's [M, k, q] ([1, 0, 1]: none) */
  int64_t rows;   /* the global dim 0 of one pipeline microbatch */
} galv_dropout_desc;

/* The mask of one element of a tensor of rank n + 1 > 1 in two parts, for
 * kernels that walk the last dim (the fused attention's scores, whose key
 * index is the last dim): h = galv_rng_lead(key, d, c, n, off, mb) over the
 * element's local leading coordinates c[0 .. n) (plus off[0 .. n), may be
 * NULL; dim 0 through galv_rng_row), then galv_rng_last(h, g, thr) with g
 * the last global coordinate. The same value as galv_rng_keep over all of
 * them. */
GALV_RNG_FN uint64_t galv_rng_lead(uint64_t key, const galv_dropout_desc *d, const int64_t *c, int n, const int64_t *off, int64_t mb) {
  uint64_t h = key;
  for (int k = 0; k < n; k++) {
    int64_t g = c[k] + (off ? off[k] : 0);
    if (k == 0) g = galv_rng_row(g, d->acc[0], d->acc[1], d->acc[2], mb, d->rows);
    h = (h + (uint64_t)g) * GALV_RNG_MUL;
  }
  return h;
}
GALV_RNG_FN int galv_rng_last(uint64_t h, int64_t g, uint32_t thr) {
  return (uint32_t)(galv_rng_mix((h + (uint64_t)g) * GALV_RNG_MUL) >> 40) >= thr;
}

#endif
