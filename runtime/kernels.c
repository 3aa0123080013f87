/* kernels.c — the runtime kernels of generated CPU programs: data movement,
 * gather, reductions, softmax, norms, dot (cblas_sgemm) and conv (im2col +
 * sgemm). Each computes what the reference evaluator (ir/eval.c) computes
 * for the same op, on raw pointers with shapes from program.c. Kernels never
 * allocate in the hot path except the scratch of reductions, a packed dot
 * operand that BLAS cannot read in place, and conv's im2col buffer; they
 * never print except through galv_fatal. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_rt.h"

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) galv_fatal("out of memory (%zu bytes of kernel scratch)", n);
  return p;
}

/* ---------------------------------------------------------------- data movement */

void galv_copy_strided(void *dst, const void *src, size_t es, int rank, const int64_t *dims, const int64_t *strides) {
  int64_t n = 1, idx[GALV_RT_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++) n *= dims[d];
  if (n == 0) return;
  /* The innermost dim is a run: one memcpy when contiguous. */
  int64_t inner = rank ? dims[rank - 1] : 1, is = rank ? strides[rank - 1] : 0;
  int64_t off = 0;
  char *o = dst;
  const char *s = src;
  for (int64_t i = 0; i < n; i += inner) {
    if (is == 1) {
      memcpy(o, s + off * (int64_t)es, (size_t)inner * es);
      o += inner * (int64_t)es;
    } else if (es == 4) {
      const uint32_t *p = (const uint32_t *)(s + off * 4);
      for (int64_t j = 0; j < inner; j++, o += 4) memcpy(o, p + j * is, 4);
    } else {
      for (int64_t j = 0; j < inner; j++, o += es) memcpy(o, s + (off + j * is) * (int64_t)es, es);
    }
    for (int d = rank - 2; d >= 0; d--) {
      idx[d]++;
      off += strides[d];
      if (idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void galv_tile(void *dst, const void *src, size_t es, int rank, const int64_t *in_dims, const int64_t *out_dims) {
  int64_t n = 1, idx[GALV_RT_MAX_RANK] = {0}, s[GALV_RT_MAX_RANK];
  for (int d = 0; d < rank; d++) n *= out_dims[d];
  int64_t k = 1;
  for (int d = rank - 1; d >= 0; d--) {
    s[d] = k;
    k *= in_dims[d];
  }
  char *o = dst;
  for (int64_t i = 0; i < n; i++, o += es) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += (idx[d] % in_dims[d]) * s[d];
    memcpy(o, (const char *)src + off * (int64_t)es, es);
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
}

void galv_concat(void *dst, const void *const *srcs, const int64_t *chunk, int n, int64_t outer) {
  char *o = dst;
  for (int64_t j = 0; j < outer; j++)
    for (int i = 0; i < n; i++) {
      memcpy(o, (const char *)srcs[i] + j * chunk[i], (size_t)chunk[i]);
      o += chunk[i];
    }
}

void galv_split(void *const *dsts, const void *src, const int64_t *chunk, int n, int64_t outer) {
  const char *s = src;
  for (int64_t j = 0; j < outer; j++)
    for (int i = 0; i < n; i++) {
      memcpy((char *)dsts[i] + j * chunk[i], s, (size_t)chunk[i]);
      s += chunk[i];
    }
}

void galv_gather(void *dst, const void *data, const void *idx, int idx_es, int64_t nidx, int64_t outer, int64_t D,
                 int64_t chunk, const char *where) {
  char *o = dst;
  for (int64_t j = 0; j < outer; j++)
    for (int64_t i = 0; i < nidx; i++) {
      int64_t k = idx_es == 8 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i];
      if (k < -D || k >= D)
        galv_fatal("%s: gather index %lld out of range for a dim of size %lld", where, (long long)k, (long long)D);
      if (k < 0) k += D;
      memcpy(o, (const char *)data + (j * D + k) * chunk, (size_t)chunk);
      o += chunk;
    }
}

/* gather_nd / scatter_nd: rows index tuples of k coordinates (negative
 * ones wrap) into dims[0..k) of data; each addresses a row of chunk bytes
 * (inner elements of es bytes). scatter_nd copies data into dst first;
 * add sums f32 updates into the row instead of replacing it. */
static int64_t nd_row(const void *idx, int idx_es, int64_t r, int k, const int64_t *dims, const char *where) {
  int64_t off = 0;
  for (int j = 0; j < k; j++) {
    int64_t v = idx_es == 8 ? ((const int64_t *)idx)[r * k + j] : ((const int32_t *)idx)[r * k + j];
    if (v < -dims[j] || v >= dims[j])
      galv_fatal("%s: index %lld out of range for a dim of size %lld", where, (long long)v, (long long)dims[j]);
    off = off * dims[j] + (v < 0 ? v + dims[j] : v);
  }
  return off;
}

void galv_gather_nd(void *dst, const void *data, const void *idx, int idx_es, int64_t rows, int k, const int64_t *dims,
                    int64_t chunk, const char *where) {
  for (int64_t r = 0; r < rows; r++)
    memcpy((char *)dst + r * chunk, (const char *)data + nd_row(idx, idx_es, r, k, dims, where) * chunk, (size_t)chunk);
}

void galv_scatter_nd(void *dst, const void *data, int64_t nbytes, const void *idx, int idx_es, const void *upd,
                     int64_t rows, int k, const int64_t *dims, int64_t inner, size_t es, int red, const char *where) {
  if (dst != data) memmove(dst, data, (size_t)nbytes);
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = nd_row(idx, idx_es, r, k, dims, where) * inner;
    if (red)
      for (int64_t i = 0; i < inner; i++) {
        float *a = (float *)dst + off + i, b = ((const float *)upd)[r * inner + i];
        *a = GALV_SCATTER_RED(red, *a, b);
      }
    else
      memcpy((char *)dst + (size_t)off * es, (const char *)upd + (size_t)(r * inner) * es, (size_t)inner * es);
  }
}

/* gather_elements / scatter_elements: element i of the indices (dims,
 * row-major) addresses data at its own coordinates (strides: data's) with
 * the axis coordinate replaced by the index (D: data's axis size). */
static int64_t elem_off(const void *idx, int idx_es, int64_t i, int rank, const int64_t *dims, const int64_t *str,
                        int axis, int64_t D, const char *where) {
  int64_t off = 0, q = i;
  for (int d = rank - 1; d >= 0; d--) {
    int64_t c = q % dims[d];
    q /= dims[d];
    if (d == axis) {
      c = idx_es == 8 ? ((const int64_t *)idx)[i] : ((const int32_t *)idx)[i];
      if (c < -D || c >= D) galv_fatal("%s: index %lld out of range for a dim of size %lld", where, (long long)c, (long long)D);
      if (c < 0) c += D;
    }
    off += c * str[d];
  }
  return off;
}

void galv_gather_elements(void *dst, const void *data, const void *idx, int idx_es, int rank, const int64_t *dims,
                          const int64_t *str, int axis, int64_t D, size_t es, const char *where) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)dst + (size_t)i * es, (const char *)data + (size_t)elem_off(idx, idx_es, i, rank, dims, str, axis, D, where) * es, es);
}

void galv_scatter_elements(void *dst, const void *data, int64_t nbytes, const void *idx, int idx_es, const void *upd,
                           int rank, const int64_t *dims, const int64_t *str, int axis, int64_t D, size_t es, int red,
                           const char *where) {
  if (dst != data) memmove(dst, data, (size_t)nbytes);
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  for (int64_t i = 0; i < n; i++) {
    int64_t off = elem_off(idx, idx_es, i, rank, dims, str, axis, D, where);
    if (red) {
      float *a = (float *)dst + off, b = ((const float *)upd)[i];
      *a = GALV_SCATTER_RED(red, *a, b);
    }
    else memcpy((char *)dst + (size_t)off * es, (const char *)upd + (size_t)i * es, es);
  }
}

/* topk: each row's (value, index) pairs sorted in TopK's order
 * (GALV_TOPK_BEFORE, ties by index: a total order, so qsort's instability
 * does not matter), the first k kept. */
typedef struct {
  float v;
  int64_t i;
} topk_entry;

static int topk_cmp_largest(const void *pa, const void *pb) {
  const topk_entry *a = pa, *b = pb;
  return GALV_TOPK_BEFORE(a->v, a->i, b->v, b->i, 1) ? -1 : GALV_TOPK_BEFORE(b->v, b->i, a->v, a->i, 1) ? 1 : 0;
}

static int topk_cmp_smallest(const void *pa, const void *pb) {
  const topk_entry *a = pa, *b = pb;
  return GALV_TOPK_BEFORE(a->v, a->i, b->v, b->i, 0) ? -1 : GALV_TOPK_BEFORE(b->v, b->i, a->v, a->i, 0) ? 1 : 0;
}

void galv_topk_f32(float *vals, int64_t *idx, const float *x, int64_t outer, int64_t len, int64_t inner, int64_t k,
                   int largest) {
  if (k == 0) return;
  topk_entry *row = xmalloc((size_t)len * sizeof *row);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      for (int64_t i = 0; i < len; i++) row[i] = (topk_entry){x[(o * len + i) * inner + j], i};
      qsort(row, (size_t)len, sizeof *row, largest ? topk_cmp_largest : topk_cmp_smallest);
      for (int64_t i = 0; i < k; i++) vals[(o * k + i) * inner + j] = row[i].v, idx[(o * k + i) * inner + j] = row[i].i;
    }
  free(row);
}

void galv_trilu(void *dst, const void *src, size_t es, int64_t batch, int64_t R, int64_t C, int64_t k, int upper) {
  memset(dst, 0, (size_t)(batch * R * C) * es);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < R; i++)
      for (int64_t j = 0; j < C; j++)
        if (upper ? j - i >= k : j - i <= k) {
          size_t off = (size_t)((b * R + i) * C + j) * es;
          memcpy((char *)dst + off, (const char *)src + off, es);
        }
}

static int64_t geti(const void *p, int dt, int64_t i) {
  switch (dt) {
  case GALV_I64: return ((const int64_t *)p)[i];
  case GALV_I32: return ((const int32_t *)p)[i];
  case GALV_I16: return ((const int16_t *)p)[i];
  case GALV_I8: return ((const int8_t *)p)[i];
  default: return ((const uint8_t *)p)[i];
  }
}
static void seti(void *p, int dt, int64_t i, int64_t v) {
  switch (dt) {
  case GALV_I64: ((int64_t *)p)[i] = v; break;
  case GALV_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case GALV_I16: ((int16_t *)p)[i] = (int16_t)v; break;
  case GALV_I8: ((int8_t *)p)[i] = (int8_t)v; break;
  case GALV_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  default: ((uint8_t *)p)[i] = (uint8_t)v; break;
  }
}

void galv_cumsum(void *dst, const void *src, int dtype, int64_t outer, int64_t L, int64_t inner, int exclusive,
                 int reverse) {
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      double sf = 0;
      uint64_t si = 0;
      for (int64_t t = 0; t < L; t++) {
        int64_t l = reverse ? L - 1 - t : t, i = (a * L + l) * inner + c;
        if (dtype == GALV_F32) {
          if (exclusive) ((float *)dst)[i] = (float)sf;
          sf += ((const float *)src)[i];
          if (!exclusive) ((float *)dst)[i] = (float)sf;
        } else {
          if (exclusive) seti(dst, dtype, i, (int64_t)si);
          si += (uint64_t)geti(src, dtype, i);
          if (!exclusive) seti(dst, dtype, i, (int64_t)si);
        }
      }
    }
}

/* ---------------------------------------------------------------- reductions, softmax, norms */

void galv_reduce_f32(float *y, const float *x, int rank, const int64_t *dims, const int64_t *ostr, int64_t no,
                     int kind) {
  double *acc = xmalloc((size_t)no * sizeof(double));
  double init = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0.0;
  for (int64_t j = 0; j < no; j++) acc[j] = init;
  int64_t ni = 1, idx[GALV_RT_MAX_RANK] = {0}, off = 0;
  for (int d = 0; d < rank; d++) ni *= dims[d];
  for (int64_t i = 0; i < ni; i++) {
    double v = x[i], *a = &acc[off];
    if (kind == 2) *a = v > *a || v != v ? v : *a;
    else if (kind == 3) *a = v < *a || v != v ? v : *a;
    else *a += v;
    for (int d = rank - 1; d >= 0; d--) {
      idx[d]++;
      off += ostr[d];
      if (idx[d] < dims[d]) break;
      off -= ostr[d] * dims[d];
      idx[d] = 0;
    }
  }
  double cnt = no ? (double)ni / (double)no : 0;
  for (int64_t j = 0; j < no; j++) y[j] = (float)(kind == 1 ? acc[j] / cnt : acc[j]);
  free(acc);
}

/* Row kernels: a row is in L1, so separate passes (max, exp, sum, scale)
 * cost little and each vectorises; reductions sum in double. */
static double row_sum(const float *restrict p, int64_t N) {
  double s = 0;
  GALV_SIMD(reduction(+ : s))
  for (int64_t j = 0; j < N; j++) s += p[j];
  return s;
}

/* Sum of (p - m)^2. */
static double row_sq(const float *restrict p, int64_t N, double m) {
  double s = 0;
  GALV_SIMD(reduction(+ : s))
  for (int64_t j = 0; j < N; j++) s += ((double)p[j] - m) * ((double)p[j] - m);
  return s;
}

/* Softmax of one contiguous row of L. */
static void softmax_row(float *restrict py, const float *restrict px, int64_t L) {
  float mx = -INFINITY;
  GALV_SIMD(reduction(max : mx))
  for (int64_t l = 0; l < L; l++) mx = px[l] > mx ? px[l] : mx;
  for (int64_t l = 0; l < L; l++) py[l] = galv_expf(px[l] - mx);
  float inv = (float)(1.0 / row_sum(py, L));
  for (int64_t l = 0; l < L; l++) py[l] *= inv;
}

void galv_softmax_f32(float *y, const float *x, int64_t outer, int64_t L, int64_t inner, int log_softmax) {
  if (inner == 1 && !log_softmax) {
    for (int64_t a = 0; a < outer; a++) softmax_row(y + a * L, x + a * L, L);
    return;
  }
  for (int64_t a = 0; a < outer; a++)
    for (int64_t c = 0; c < inner; c++) {
      const float *px = x + a * L * inner + c;
      float *py = y + a * L * inner + c;
      float mx = -INFINITY;
      for (int64_t l = 0; l < L; l++)
        if (px[l * inner] > mx) mx = px[l * inner];
      double sum = 0;
      if (log_softmax) {
        for (int64_t l = 0; l < L; l++) sum += exp((double)px[l * inner] - mx);
        double ls = log(sum);
        for (int64_t l = 0; l < L; l++) py[l * inner] = (float)((double)px[l * inner] - mx - ls);
      } else {
        for (int64_t l = 0; l < L; l++) sum += py[l * inner] = galv_expf(px[l * inner] - mx);
        float inv = (float)(1.0 / sum);
        for (int64_t l = 0; l < L; l++) py[l * inner] *= inv;
      }
    }
}

/* Two passes over each row (mean, then centred variance: exact where
 * E[x^2] - mean^2 would cancel), then one to normalise; a row is in L1. */
void galv_norm_f32(float *y, const float *x, const float *scale, int64_t sn, const float *bias, int64_t bn,
                   int64_t outer, int64_t N, float eps, int rms) {
  for (int64_t a = 0; a < outer; a++) {
    const float *restrict px = x + a * N;
    float *restrict py = y + a * N;
    double mean = rms ? 0 : row_sum(px, N) / (double)N;
    double var = row_sq(px, N, mean) / (double)N;
    float inv = (float)(1.0 / sqrt(var + (double)eps)), fm = (float)mean;
    if (sn == N && (!bias || bn == N)) {
      if (bias)
        for (int64_t j = 0; j < N; j++) py[j] = (px[j] - fm) * inv * scale[j] + bias[j];
      else
        for (int64_t j = 0; j < N; j++) py[j] = (px[j] - fm) * inv * scale[j];
      continue;
    }
    for (int64_t j = 0; j < N; j++) {
      float v = (px[j] - fm) * inv * scale[sn == 1 ? 0 : j];
      py[j] = bias ? v + bias[bn == 1 ? 0 : j] : v;
    }
  }
}

/* ---------------------------------------------------------------- dot */

/* Drops size-1 dims and merges adjacent dims that are contiguous in every
 * listed operand (nstr stride arrays). Returns the new count. */
static int merge_dims(int n, int64_t *dims, int nstr, int64_t **str) {
  int j = 0;
  for (int i = 0; i < n; i++) {
    if (dims[i] == 1) continue;
    int can = j > 0;
    for (int s = 0; can && s < nstr; s++)
      if (str[s][j - 1] != str[s][i] * dims[i]) can = 0;
    if (can) {
      dims[j - 1] *= dims[i];
      for (int s = 0; s < nstr; s++) str[s][j - 1] = str[s][i];
    } else {
      dims[j] = dims[i];
      for (int s = 0; s < nstr; s++) str[s][j] = str[s][i];
      j++;
    }
  }
  return j;
}

/* One matrix view: rows x cols with (row stride, col stride) after merging;
 * ok = 0 when the group does not collapse to one dim. */
typedef struct {
  int64_t rows, cols, rs, cs;
  int ok;
} mview;

static mview group_view(int nr, const int64_t *rd, const int64_t *rstr, int nc, const int64_t *cd, const int64_t *cstr) {
  int64_t d1[GALV_RT_MAX_RANK], s1[GALV_RT_MAX_RANK], d2[GALV_RT_MAX_RANK], s2[GALV_RT_MAX_RANK];
  memcpy(d1, rd, sizeof(int64_t) * (size_t)nr);
  memcpy(s1, rstr, sizeof(int64_t) * (size_t)nr);
  memcpy(d2, cd, sizeof(int64_t) * (size_t)nc);
  memcpy(s2, cstr, sizeof(int64_t) * (size_t)nc);
  int64_t *p1 = s1, *p2 = s2;
  int a = merge_dims(nr, d1, 1, &p1), b = merge_dims(nc, d2, 1, &p2);
  mview v = {1, 1, 0, 0, a <= 1 && b <= 1};
  if (a == 1) v.rows = d1[0], v.rs = s1[0];
  if (b == 1) v.cols = d2[0], v.cs = s2[0];
  return v;
}

/* Decides how BLAS reads a rows x cols operand in place: NoTrans needs unit
 * column stride, Trans unit row stride; ld must cover the other extent. */
static int blas_layout(const mview *v, CBLAS_TRANSPOSE *t, int64_t *ld) {
  if (!v->ok) return 0;
  if ((v->cols == 1 || v->cs == 1) && (v->rows == 1 || v->rs >= v->cols)) {
    *t = CblasNoTrans;
    *ld = v->rows == 1 ? v->cols : v->rs;
    return 1;
  }
  if ((v->rows == 1 || v->rs == 1) && (v->cols == 1 || v->cs >= v->rows)) {
    *t = CblasTrans;
    *ld = v->cols == 1 ? v->rows : v->cs;
    return 1;
  }
  return 0;
}

void galv_dot_f32(const galv_dot_desc *d, const float *a, const float *b, float *c) {
  int64_t B = 1, M = 1, K = 1, N = 1;
  for (int i = 0; i < d->nb; i++) B *= d->bdims[i];
  for (int i = 0; i < d->nm; i++) M *= d->mdims[i];
  for (int i = 0; i < d->nk; i++) K *= d->kdims[i];
  for (int i = 0; i < d->nn; i++) N *= d->ndims[i];
  if (B * M * N == 0) return;
  if (K == 0) {
    memset(c, 0, sizeof(float) * (size_t)(B * M * N));
    return;
  }
  mview va = group_view(d->nm, d->mdims, d->msa, d->nk, d->kdims, d->ksa);
  mview vb = group_view(d->nk, d->kdims, d->ksb, d->nn, d->ndims, d->nsb);
  CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans;
  int64_t lda = K, ldb = N;
  float *pa = NULL, *pb = NULL;
  /* Batch offsets of each operand (strides for an operand that was packed
   * become the packed matrix size). */
  int64_t bd[GALV_RT_MAX_RANK], sa[GALV_RT_MAX_RANK], sb[GALV_RT_MAX_RANK];
  int nb = d->nb;
  memcpy(bd, d->bdims, sizeof bd);
  memcpy(sa, d->bsa, sizeof sa);
  memcpy(sb, d->bsb, sizeof sb);
  if (!blas_layout(&va, &ta, &lda)) {
    /* pack A as [batch..., M, K] contiguous */
    int64_t dims[3 * GALV_RT_MAX_RANK], st[3 * GALV_RT_MAX_RANK];
    int r = 0;
    for (int i = 0; i < d->nb; i++) dims[r] = d->bdims[i], st[r++] = d->bsa[i];
    for (int i = 0; i < d->nm; i++) dims[r] = d->mdims[i], st[r++] = d->msa[i];
    for (int i = 0; i < d->nk; i++) dims[r] = d->kdims[i], st[r++] = d->ksa[i];
    pa = xmalloc(sizeof(float) * (size_t)(B * M * K));
    if (r > GALV_RT_MAX_RANK) galv_fatal("dot: operand rank above %d", GALV_RT_MAX_RANK);
    galv_copy_strided(pa, a, 4, r, dims, st);
    int64_t s = M * K;
    for (int i = nb - 1; i >= 0; i--) sa[i] = s, s *= bd[i];
    a = pa, ta = CblasNoTrans, lda = K;
  }
  if (!blas_layout(&vb, &tb, &ldb)) {
    int64_t dims[3 * GALV_RT_MAX_RANK], st[3 * GALV_RT_MAX_RANK];
    int r = 0;
    for (int i = 0; i < d->nb; i++) dims[r] = d->bdims[i], st[r++] = d->bsb[i];
    for (int i = 0; i < d->nk; i++) dims[r] = d->kdims[i], st[r++] = d->ksb[i];
    for (int i = 0; i < d->nn; i++) dims[r] = d->ndims[i], st[r++] = d->nsb[i];
    if (r > GALV_RT_MAX_RANK) galv_fatal("dot: operand rank above %d", GALV_RT_MAX_RANK);
    pb = xmalloc(sizeof(float) * (size_t)(B * K * N));
    galv_copy_strided(pb, b, 4, r, dims, st);
    int64_t s = K * N;
    for (int i = nb - 1; i >= 0; i--) sb[i] = s, s *= bd[i];
    b = pb, tb = CblasNoTrans, ldb = N;
  }
  /* Merged batch loop: one sgemm per batch element. */
  int64_t *bs[2] = {sa, sb};
  nb = merge_dims(nb, bd, 2, bs);
  int64_t idx[GALV_RT_MAX_RANK] = {0}, oa = 0, ob = 0;
  for (int64_t i = 0; i < B; i++) {
    cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f, a + oa, (int)lda, b + ob, (int)ldb, 0.0f,
                c + i * M * N, (int)N);
    for (int k = nb - 1; k >= 0; k--) {
      idx[k]++;
      oa += sa[k];
      ob += sb[k];
      if (idx[k] < bd[k]) break;
      oa -= sa[k] * bd[k];
      ob -= sb[k] * bd[k];
      idx[k] = 0;
    }
  }
  free(pa);
  free(pb);
}

/* ---------------------------------------------------------------- conv */

void galv_conv_f32(const galv_conv_desc *d, const float *x, const float *w, const float *bias, float *y) {
  int S = d->S;
  int64_t Cg = d->C / d->G, Mg = d->M / d->G, P = 1, KK = 1, IS = 1;
  for (int s = 0; s < S; s++) P *= d->out[s], KK *= d->k[s], IS *= d->in[s];
  int64_t rows = Cg * KK;
  float *col = xmalloc(sizeof(float) * (size_t)(rows * P));
  int64_t kp[GALV_RT_MAX_RANK], op[GALV_RT_MAX_RANK];
  for (int64_t n = 0; n < d->N; n++)
    for (int64_t g = 0; g < d->G; g++) {
      /* im2col: col[(c*KK + k)][p] */
      for (int64_t c = 0; c < Cg; c++) {
        const float *xp = x + (n * d->C + g * Cg + c) * IS;
        for (int64_t k = 0; k < KK; k++) {
          for (int64_t s = S - 1, q = k; s >= 0; s--) kp[s] = (q % d->k[s]) * d->dil[s], q /= d->k[s];
          float *cp = col + (c * KK + k) * P;
          for (int64_t p = 0; p < P; p++) {
            for (int64_t s = S - 1, q = p; s >= 0; s--) op[s] = (q % d->out[s]) * d->stride[s] - d->pad[s], q /= d->out[s];
            int64_t off = 0;
            int inside = 1;
            for (int s = 0; s < S; s++) {
              int64_t q = op[s] + kp[s];
              if (q < 0 || q >= d->in[s]) {
                inside = 0;
                break;
              }
              off = off * d->in[s] + q;
            }
            cp[p] = inside ? xp[off] : 0.0f;
          }
        }
      }
      float *yp = y + (n * d->M + g * Mg) * P;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)Mg, (int)P, (int)rows, 1.0f, w + g * Mg * rows,
                  (int)rows, col, (int)P, 0.0f, yp, (int)P);
      if (bias)
        for (int64_t mo = 0; mo < Mg; mo++)
          for (int64_t p = 0; p < P; p++) yp[mo * P + p] += bias[g * Mg + mo];
    }
  free(col);
}

/* ---------------------------------------------------------------- pool */

/* The input offsets (within one plane) of output p's window, inside the
 * input, in window order; returns the avg divisor (ir/pool_ops.c). */
static int64_t pool_window(const galv_conv_desc *d, const int64_t *pe, int cip, int64_t p, int64_t *offs, int64_t *n) {
  int S = d->S;
  int64_t o[GALV_RT_MAX_RANK], KK = 1, count = 1;
  for (int s = S - 1; s >= 0; s--) o[s] = p % d->out[s], p /= d->out[s];
  for (int s = 0; s < S; s++) KK *= d->k[s];
  if (cip)
    for (int s = 0; s < S; s++) {
      int64_t c = 0;
      for (int64_t j = 0; j < d->k[s]; j++) {
        int64_t q = o[s] * d->stride[s] - d->pad[s] + j * d->dil[s];
        c += q >= -d->pad[s] && q < d->in[s] + pe[s];
      }
      count *= c;
    }
  *n = 0;
  for (int64_t kk = 0; kk < KK; kk++) {
    int64_t q = kk, kc[GALV_RT_MAX_RANK], off = 0;
    int inside = 1;
    for (int s = S - 1; s >= 0; s--) kc[s] = q % d->k[s], q /= d->k[s];
    for (int s = 0; s < S && inside; s++) {
      int64_t pos = o[s] * d->stride[s] - d->pad[s] + kc[s] * d->dil[s];
      inside = pos >= 0 && pos < d->in[s];
      off = off * d->in[s] + pos;
    }
    if (inside) offs[(*n)++] = off;
  }
  return cip ? count : *n;
}

static void pool_run(const galv_conv_desc *d, const int64_t *pe, int mode, int cip, const float *x, const float *dy,
                     float *out) {
  int64_t IS = 1, P = 1, KK = 1;
  for (int s = 0; s < d->S; s++) IS *= d->in[s], P *= d->out[s], KK *= d->k[s];
  int64_t *offs = xmalloc(sizeof(int64_t) * (size_t)(KK ? KK : 1));
  if (dy) memset(out, 0, sizeof(float) * (size_t)(d->N * d->C * IS));
  for (int64_t pl = 0; pl < d->N * d->C; pl++) {
    const float *xp = x + pl * IS;
    for (int64_t p = 0; p < P; p++) {
      int64_t n, cnt = pool_window(d, pe, cip, p, offs, &n);
      if (mode == 0) {
        int64_t best = -1;
        float bv = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
          float v = xp[offs[i]];
          if (best < 0 || v > bv || (isnan(v) && !isnan(bv))) best = offs[i], bv = v;
        }
        if (!dy) out[pl * P + p] = bv;
        else if (best >= 0) out[pl * IS + best] += dy[pl * P + p];
      } else if (dy) {
        float v = cnt ? dy[pl * P + p] / (float)cnt : 0.0f;
        for (int64_t i = 0; i < n; i++) out[pl * IS + offs[i]] += v;
      } else {
        float acc = 0.0f;
        for (int64_t i = 0; i < n; i++) acc += xp[offs[i]];
        out[pl * P + p] = cnt ? acc / (float)cnt : 0.0f;
      }
    }
  }
  free(offs);
}

void galv_pool_f32(const galv_conv_desc *d, const int64_t *pe, int mode, int cip, const float *x, float *y) {
  pool_run(d, pe, mode, cip, x, NULL, y);
}

void galv_pool_grad_f32(const galv_conv_desc *d, const int64_t *pe, int mode, int cip, const float *x, const float *dy,
                        float *dx) {
  pool_run(d, pe, mode, cip, x, dy, dx);
}

/* ---------------------------------------------------------------- 16-bit storage */

/* --precision bf16 / fp16 (docs/cpu-target.md, "16-bit storage"): f32
 * values stored as bf16 (dt GALV_BF16) or f16 (GALV_F16) are widened into
 * f32 scratch before an f32 kernel (exact) and its results narrowed after
 * it (round-to-nearest-even, galv_f32_to_bf16 / galv_f32_to_f16), as the
 * CUDA runtime's kernels load, compute in fp32 and store. */
void galv_widen16(int dt, float *dst, const void *src, int64_t n) {
  const uint16_t *s = src;
  if (dt == GALV_BF16)
    for (int64_t i = 0; i < n; i++) dst[i] = galv_bf16_to_f32(s[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = galv_f16_to_f32(s[i]);
}

void galv_narrow16(int dt, void *dst, const float *src, int64_t n) {
  uint16_t *d = dst;
  if (dt == GALV_BF16)
    for (int64_t i = 0; i < n; i++) d[i] = galv_f32_to_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = galv_f32_to_f16(src[i]);
}

void galv_round16(int dt, float *dst, const float *src, int64_t n) {
  if (dt == GALV_BF16)
    for (int64_t i = 0; i < n; i++) dst[i] = galv_rnd_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = galv_rnd_f16(src[i]);
}

/* ---------------------------------------------------------------- dropout */

/* Each row of the last dim: the polynomial over the row's global
 * coordinates once, then one step and the finaliser per element (the same
 * value as galv_rng_keep over all coordinates). */
void galv_dropout_f32(float *y, const float *x, const galv_dropout_desc *d, const int64_t *off) {
  const int r = d->rank;
  const uint64_t key = galv_rng_key(d->seed, d->id, (uint64_t)galv_rt_step);
  if (r == 0) {
    y[0] = galv_rng_keep(key, NULL, 0, d->thr) ? x[0] * d->scale : 0.0f;
    return;
  }
  int64_t inner = d->dims[r - 1], rows = 1, idx[GALV_RNG_MAX_RANK] = {0};
  for (int k = 0; k < r - 1; k++) rows *= d->dims[k];
  for (int64_t row = 0; row < rows; row++) {
    uint64_t h = key;
    for (int k = 0; k < r - 1; k++) {
      int64_t g = idx[k] + (off ? off[k] : 0);
      if (k == 0) g = galv_rng_row(g, d->acc[0], d->acc[1], d->acc[2], galv_rt_mb, d->rows);
      h = (h + (uint64_t)g) * GALV_RNG_MUL;
    }
    const float *xr = x + row * inner;
    float *yr = y + row * inner;
    int64_t o = off ? off[r - 1] : 0;
    for (int64_t j = 0; j < inner; j++) {
      int64_t g = j + o;
      if (r == 1) g = galv_rng_row(g, d->acc[0], d->acc[1], d->acc[2], galv_rt_mb, d->rows);
      yr[j] = (uint32_t)(galv_rng_mix((h + (uint64_t)g) * GALV_RNG_MUL) >> 40) >= d->thr ? xr[j] * d->scale : 0.0f;
    }
    for (int k = r - 2; k >= 0; k--) {
      if (++idx[k] < d->dims[k]) break;
      idx[k] = 0;
    }
  }
}
