/* emu_blas.cc — cuBLAS for the CUDA execution layer, over OpenBLAS:
 * cublasGemmStridedBatchedEx with cuBLAS's column-major semantics (op(A) is
 * m x k, op(B) k x n, C m x n with leading dims lda / ldb / ldc and batch
 * strides), fp32 compute (CUBLAS_COMPUTE_32F, no TF32: the programs set
 * CUBLAS_PEDANTIC_MATH), bf16 / f16 operands widened exactly to fp32 and a
 * bf16 / f16 C rounded once from the fp32 result (galv_emu.h), as the GPU's fp32-accumulating GEMM
 * does up to summation order. Invalid arguments return the status cuBLAS
 * returns (the programs' cublasCheck reports it). The operands' byte ranges
 * go to the stream check of emu.cc on the handle's stream. */
#include <cblas.h>

#include <vector>

#include "cublas_v2.h"
#include "galv_emu_impl.h"

struct galv_emu_blas {
  cudaStream_t s;
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
  *h = new galv_emu_blas{nullptr};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  h->s = s;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  (void)h;
  return m == CUBLAS_PEDANTIC_MATH || m == CUBLAS_DEFAULT_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
const char *cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "unknown cuBLAS status";
}

/* a column-major rows x cols operand at p (leading dim ld), batch strides s */
static size_t span(int rows, int cols, int ld, long long s, int batch, size_t es) {
  return ((size_t)(batch - 1) * (size_t)s + (size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
}
static void widen(float *dst, const void *src, cudaDataType t, int rows, int cols, int ld) {
  for (int c = 0; c < cols; c++)
    for (int r = 0; r < rows; r++) {
      size_t i = (size_t)c * (size_t)ld + (size_t)r;
      dst[i] = t == CUDA_R_16BF ? (float)((const __nv_bfloat16 *)src)[i]
               : t == CUDA_R_16F ? (float)((const __half *)src)[i]
                                 : ((const float *)src)[i];
    }
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  (void)algo;
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  /* 16-bit A and B (both bf16 or both f16) into C of their type or fp32; fp32 into fp32 */
  if (compute != CUBLAS_COMPUTE_32F || at != bt || (at != CUDA_R_32F && at != CUDA_R_16BF && at != CUDA_R_16F) ||
      (ct != CUDA_R_32F && ct != at))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) ||
      ldc < (m > 1 ? m : 1) || sa < 0 || sb < 0 || sc < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  size_t aes = at == CUDA_R_32F ? 4 : 2, ces = ct == CUDA_R_32F ? 4 : 2;
  size_t an = k ? span(ar, ac, lda, sa, batch, aes) : 0, bn = k ? span(br, bc, ldb, sb, batch, aes) : 0;
  size_t cn = span(m, n, ldc, sc, batch, ces);
  galv_emu_check_device(A, an, "cublasGemmStridedBatchedEx (A)");
  galv_emu_check_device(B, bn, "cublasGemmStridedBatchedEx (B)");
  galv_emu_check_device(C, cn, "cublasGemmStridedBatchedEx (C)");
  galv_emu_check_host(alpha, 4, "cublasGemmStridedBatchedEx (alpha)");
  galv_emu_check_host(beta, 4, "cublasGemmStridedBatchedEx (beta)");
  galv_emu_open o;
  float al = *(const float *)alpha, be = *(const float *)beta;
  galv_emu_range r[3] = {{A, an, false}, {B, bn, false}, {C, cn, true}};
  galv_emu_stream_op(h->s, r, 3, "cublasGemmStridedBatchedEx");
  std::vector<float> a32, b32, c32;
  CBLAS_TRANSPOSE oa = ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, ob = tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
  for (int i = 0; i < batch; i++) {
    const char *Ai = (const char *)A + (size_t)i * (size_t)sa * aes, *Bi = (const char *)B + (size_t)i * (size_t)sb * aes;
    char *Ci = (char *)C + (size_t)i * (size_t)sc * ces;
    const float *pa = (const float *)Ai, *pb = (const float *)Bi;
    if (at != CUDA_R_32F && k) {
      a32.assign((size_t)(ac - 1) * lda + ar, 0.0f);
      b32.assign((size_t)(bc - 1) * ldb + br, 0.0f);
      widen(a32.data(), Ai, at, ar, ac, lda);
      widen(b32.data(), Bi, bt, br, bc, ldb);
      pa = a32.data(), pb = b32.data();
    }
    float *pc = (float *)Ci;
    if (ct != CUDA_R_32F) {
      c32.assign((size_t)(n - 1) * ldc + m, 0.0f);
      if (be != 0.0f) widen(c32.data(), Ci, ct, m, n, ldc);
      pc = c32.data();
    }
    if (k == 0) {
      for (int c = 0; c < n; c++)
        for (int rr = 0; rr < m; rr++) {
          float &v = pc[(size_t)c * ldc + rr];
          v = be == 0.0f ? 0.0f : be * v;
        }
    } else {
      cblas_sgemm(CblasColMajor, oa, ob, m, n, k, al, pa, lda, pb, ldb, be, pc, ldc);
    }
    if (ct != CUDA_R_32F)
      for (int c = 0; c < n; c++)
        for (int rr = 0; rr < m; rr++) {
          size_t j = (size_t)c * ldc + rr;
          if (ct == CUDA_R_16BF) ((__nv_bfloat16 *)Ci)[j] = __nv_bfloat16(pc[j]);
          else ((__half *)Ci)[j] = __half(pc[j]);
        }
  }
  return CUBLAS_STATUS_SUCCESS;
}
