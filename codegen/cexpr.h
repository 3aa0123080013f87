/* cexpr.h — elementwise C expressions shared by the CPU and CUDA emitters. */
#ifndef GALV_CEXPR_H
#define GALV_CEXPR_H

#include <stdbool.h>
#include <stddef.h>

#include "../ir/ir.h"

/* What differs between the targets' generated code. */
typedef struct {
  const char *target; /* in messages: "cpu", "cuda" */
  const char *fn;     /* helper prefix: galv_f2i, galv_gelu_f32 ... ("galv_") or gd_... ("gd_") */
  bool device;        /* integer division reports through galv_err / galv_k (device code) */
  bool half;          /* f16/bf16 values computed in float, each result rounded (fn##rnd_f16 / rnd_bf16) */
} cg_dialect;

typedef struct {
  const gv_value *v;
  char name[16];
} cg_binding;

/* Names bound to values while emitting one loop body. */
typedef struct {
  gv_module *m;
  const gv_op *fop; /* the fused (or lone) op, for messages */
  const cg_dialect *d;
  cg_binding *b;
  int nb, cap;
} cg_expr_ctx;

/* C type of a dtype (NULL when the target cannot compute it). */
const char *cg_ctype(gv_dtype t);
/* C type of a value of dtype t in a loop body: cg_ctype, or float for
 * f16/bf16 where the dialect has half storage (NULL: not computable). */
const char *cg_vtype(const cg_dialect *d, gv_dtype t);
const char *cg_expr_lookup(const cg_expr_ctx *c, const gv_value *v);
void cg_expr_bind(cg_expr_ctx *c, const gv_value *v, const char *fmt, int n);
void cg_expr_free(cg_expr_ctx *c);
/* The expression of one body op / one-element constant into out; -1 after an error. */
int cg_op_expr(cg_expr_ctx *c, const gv_op *op, char *out, size_t n);
int cg_const_expr(cg_expr_ctx *c, const gv_op *op, char *out, size_t n);

#endif
