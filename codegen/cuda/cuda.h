/* cuda.h — shared declarations of the CUDA emitter's files (codegen/cuda/):
 * emit.c walks the device program and writes program.cu, the Makefile,
 * constants.bin and runtime/cuda/; kernels_gen.c writes the generated
 * kernels (elementwise, attention score functors). Private to codegen/cuda;
 * nothing here may change the IR. */
#ifndef GALV_CODEGEN_CUDA_H
#define GALV_CODEGEN_CUDA_H

#include <stdio.h>

#include "../codegen.h"

/* device compute type (float for f32) and storage type ("gf" for f32) */
const char *cu_stype(gv_dtype t);
/* The storage type of a value when the emitter decides per value (bf16
 * training: "float" or "gf"); NULL: cu_stype of its dtype. */
typedef const char *(*cu_stype_fn)(const void *ctx, const gv_value *v);

/* `__global__ void NAME(const T *x0.., T *y0.., int *galv_err)`: op (galv.fused
 * or one elementwise op) as a grid-stride loop; kn is its kernel number (for
 * integer division errors). Returns 0 or -1 after gv_error_op. */
int cu_emit_elementwise(gv_module *m, FILE *f, const char *name, const gv_op *op, int kn, cu_stype_fn st, const void *ctx);

/* `struct NAME { const T *xK..; int *galv_err; int galv_k; float operator()(float s, int64_t e) }`:
 * op (fused or elementwise, one f32 result) applied with operand score_opnd = s. */
int cu_emit_score_functor(gv_module *m, FILE *f, const char *name, const gv_op *op, int score_opnd, cu_stype_fn st,
                          const void *ctx);

#endif
