/* kernels_grad.c — runtime kernels of the training ops (ir/train_ops.c):
 * gather_grad (scatter-add), slice_grad (zeros + strided window),
 * cross_entropy and its gradient, and the two conv gradients (im2col /
 * col2im around cblas_sgemm). Each computes what the reference evaluator
 * computes for the same op (ir/train_ops.c), f32 in and out; the loss and
 * its row statistics accumulate in double as the evaluator does. Kept apart
 * from kernels.c (the forward kernels). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"

static void *xcalloc(size_t n, size_t es) {
  void *p = calloc(n ? n : 1, es);
  if (!p) galv_fatal("out of memory (%zu bytes of kernel scratch)", n * es);
  return p;
}

/* ---------------------------------------------------------------- gather_grad, slice_grad */

void galv_gather_grad_f32(float *dst, const float *dy, const void *idx, int idx_es, int64_t nidx, int64_t outer,
                          int64_t D, int64_t inner, const char *where) {
  memset(dst, 0, (size_t)(outer * D * inner) * sizeof(float));
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < nidx; j++) {
      int64_t k = idx_es == 8 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
      if (k < -D || k >= D)
        galv_fatal("%s: gather_grad index %lld out of range for a dim of size %lld", where, (long long)k, (long long)D);
      if (k < 0) k += D;
      float *o = dst + (a * D + k) * inner;
      const float *s = dy + (a * nidx + j) * inner;
      for (int64_t i = 0; i < inner; i++) o[i] += s[i];
    }
}

void galv_scatter_strided(void *dst, int64_t dst_bytes, int64_t base, const void *src, size_t es, int rank,
                          const int64_t *dims, const int64_t *strides) {
  memset(dst, 0, (size_t)dst_bytes);
  int64_t n = 1, idx[GALV_RT_MAX_RANK] = {0}, off = base;
  for (int d = 0; d < rank; d++) n *= dims[d];
  const char *s = src;
  for (int64_t i = 0; i < n; i++, s += es) {
    memcpy((char *)dst + off * (int64_t)es, s, es);
    for (int d = rank - 1; d >= 0; d--) {
      idx[d]++;
      off += strides[d];
      if (idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

/* ---------------------------------------------------------------- cross entropy */

/* Row log-sum-exp (double, as the evaluator); labels checked. Returns the
 * number of rows that count. */
static int64_t ce_rows(const float *x, const int64_t *lab, int64_t rows, int64_t C, int64_t ign, double *lse,
                       const char *where) {
  int64_t count = 0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t y = lab[i];
    if (y == ign) continue;
    if (y < 0 || y >= C)
      galv_fatal("%s: cross_entropy label %lld out of range [0, %lld)", where, (long long)y, (long long)C);
    const float *r = x + i * C;
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; c++) mx = fmax(mx, r[c]);
    for (int64_t c = 0; c < C; c++) s += exp(r[c] - mx);
    lse[i] = mx + log(s);
    count++;
  }
  return count;
}

void galv_cross_entropy_f32(float *loss, const float *x, const int64_t *lab, int64_t rows, int64_t C, int64_t ign,
                            const char *where) {
  double *lse = xcalloc((size_t)rows, sizeof *lse), sum = 0;
  int64_t count = ce_rows(x, lab, rows, C, ign, lse, where);
  for (int64_t i = 0; i < rows; i++)
    if (lab[i] != ign) sum += lse[i] - x[i * C + lab[i]];
  free(lse);
  *loss = (float)(count ? sum / (double)count : 0.0);
}

void galv_cross_entropy_grad_f32(float *dx, const float *dloss, const float *x, const int64_t *lab, int64_t rows,
                                 int64_t C, int64_t ign, const char *where) {
  double *lse = xcalloc((size_t)rows, sizeof *lse);
  int64_t count = ce_rows(x, lab, rows, C, ign, lse, where);
  double scale = count ? (double)*dloss / (double)count : 0.0;
  for (int64_t i = 0; i < rows; i++) {
    int64_t y = lab[i];
    for (int64_t c = 0; c < C; c++)
      dx[i * C + c] = y == ign ? 0.0f : (float)((exp(x[i * C + c] - lse[i]) - (c == y ? 1.0 : 0.0)) * scale);
  }
  free(lse);
}

/* ---------------------------------------------------------------- conv gradients */

/* Input offset (within one channel plane) of column position p, kernel
 * position k; -1 when it falls in the padding. */
static int64_t col_off(const galv_conv_desc *d, int64_t k, int64_t p) {
  int64_t off = 0, kq = k, pq = p, pos[GALV_RT_MAX_RANK];
  for (int s = d->S - 1; s >= 0; s--) {
    pos[s] = (pq % d->out[s]) * d->stride[s] - d->pad[s] + (kq % d->k[s]) * d->dil[s];
    pq /= d->out[s];
    kq /= d->k[s];
  }
  for (int s = 0; s < d->S; s++) {
    if (pos[s] < 0 || pos[s] >= d->in[s]) return -1;
    off = off * d->in[s] + pos[s];
  }
  return off;
}

static void conv_sizes(const galv_conv_desc *d, int64_t *P, int64_t *KK, int64_t *IS) {
  *P = *KK = *IS = 1;
  for (int s = 0; s < d->S; s++) *P *= d->out[s], *KK *= d->k[s], *IS *= d->in[s];
}

/* dw[m][c][k] = sum_n,p dy[n][m][p] * x[n][g*Cg + c][pos(k, p)] */
void galv_conv_grad_weight_f32(const galv_conv_desc *d, const float *x, const float *dy, float *dw) {
  int64_t P, KK, IS, Cg = d->C / d->G, Mg = d->M / d->G;
  conv_sizes(d, &P, &KK, &IS);
  int64_t rows = Cg * KK;
  float *col = xcalloc((size_t)(rows * P), sizeof(float));
  memset(dw, 0, (size_t)(d->M * rows) * sizeof(float));
  for (int64_t n = 0; n < d->N; n++)
    for (int64_t g = 0; g < d->G; g++) {
      for (int64_t c = 0; c < Cg; c++) {
        const float *xp = x + (n * d->C + g * Cg + c) * IS;
        for (int64_t k = 0; k < KK; k++)
          for (int64_t p = 0; p < P; p++) {
            int64_t off = col_off(d, k, p);
            col[(c * KK + k) * P + p] = off < 0 ? 0.0f : xp[off];
          }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Mg, (int)rows, (int)P, 1.0f,
                  dy + (n * d->M + g * Mg) * P, (int)P, col, (int)P, 1.0f, dw + g * Mg * rows, (int)rows);
    }
  free(col);
}

/* dx[n][g*Cg + c][pos(k, p)] += sum_m w[m][c][k] * dy[n][m][p] */
void galv_conv_grad_input_f32(const galv_conv_desc *d, const float *dy, const float *w, float *dx) {
  int64_t P, KK, IS, Cg = d->C / d->G, Mg = d->M / d->G;
  conv_sizes(d, &P, &KK, &IS);
  int64_t rows = Cg * KK;
  float *col = xcalloc((size_t)(rows * P), sizeof(float));
  memset(dx, 0, (size_t)(d->N * d->C * IS) * sizeof(float));
  for (int64_t n = 0; n < d->N; n++)
    for (int64_t g = 0; g < d->G; g++) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)P, (int)Mg, 1.0f, w + g * Mg * rows,
                  (int)rows, dy + (n * d->M + g * Mg) * P, (int)P, 0.0f, col, (int)P);
      for (int64_t c = 0; c < Cg; c++) {
        float *xp = dx + (n * d->C + g * Cg + c) * IS;
        for (int64_t k = 0; k < KK; k++)
          for (int64_t p = 0; p < P; p++) {
            int64_t off = col_off(d, k, p);
            if (off >= 0) xp[off] += col[(c * KK + k) * P + p];
          }
      }
    }
  free(col);
}
