/* kcall.h — the kernel call of each non-elementwise op, described once for
 * every target (codegen/kcall.c). cg_kcall_fill reads one op of a device
 * program and fills a cg_kcall: which runtime kernel runs it, which of the
 * op's operands and results are the kernel's buffers (slots), and its static
 * shape parameters (dims, strides, rows, descriptors), checking everything a
 * target would otherwise check itself. Each emitter then prints the call in
 * its own syntax: codegen/cpu/emit.c a call into runtime/kernels*.c
 * (galv_NAME_f32 ...), codegen/cuda/emit.c a call into runtime/cuda/kernels*.cu
 * (galv_cu_NAME, with the storage dtype and the kernel number). The
 * elementwise ops and galv.fused loops are not here (codegen/cexpr.c), nor
 * the collectives (codegen/comm.c).
 *
 * Slots: slot i < op->nopnds is operand i, slot op->nopnds + j result j.
 * Counts (offsets, strides, chunks) are in elements; a target scales them by
 * the element size it stores the value at (the storage size on CUDA: bf16).
 * The calls both targets write alike (data movement) and the literals are
 * printed here too (cg_kcall_print_move); nothing here changes the IR. */
#ifndef GALV_CODEGEN_KCALL_H
#define GALV_CODEGEN_KCALL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/attention.h"
#include "../ir/dropout.h"
#include "../ir/ir.h"

/* The runtime kernels, by their target-independent name (the CPU's
 * galv_NAME[_f32], the CUDA runtime's galv_cu_NAME). */
#define CG_KERNELS(X)                                                                                           \
  X(NONE, "none") /* nothing to run: an empty slice */                                                         \
  X(COPY_STRIDED, "copy_strided")                                                                             \
  X(TILE, "tile")                                                                                             \
  X(CONCAT, "concat")                                                                                         \
  X(SPLIT, "split")                                                                                           \
  X(GATHER, "gather")                                                                                         \
  X(TRILU, "trilu")                                                                                           \
  X(CUMSUM, "cumsum")                                                                                         \
  X(REDUCE, "reduce")                                                                                         \
  X(SOFTMAX, "softmax")                                                                                       \
  X(NORM, "norm")                                                                                             \
  X(DOT, "dot")                                                                                               \
  X(CONV, "conv")                                                                                             \
  X(GATHER_GRAD, "gather_grad")                                                                               \
  X(SCATTER_STRIDED, "scatter_strided")                                                                       \
  X(CROSS_ENTROPY, "cross_entropy")                                                                           \
  X(CROSS_ENTROPY_GRAD, "cross_entropy_grad")                                                                 \
  X(CONV_GRAD_INPUT, "conv_grad_input")                                                                       \
  X(CONV_GRAD_WEIGHT, "conv_grad_weight")                                                                     \
  X(GATHER_ND, "gather_nd")                                                                                   \
  X(SCATTER_ND, "scatter_nd")                                                                                 \
  X(GATHER_ELEMENTS, "gather_elements")                                                                       \
  X(SCATTER_ELEMENTS, "scatter_elements")                                                                     \
  X(POOL, "pool")                                                                                             \
  X(POOL_GRAD, "pool_grad")                                                                                   \
  X(TOPK, "topk")                                                                                             \
  X(DROPOUT, "dropout")

typedef enum {
#define CG_K_ENUM(E, N) CG_K_##E,
  CG_KERNELS(CG_K_ENUM)
#undef CG_K_ENUM
  CG_K_COUNT
} cg_kernel;
extern const char *const cg_kernel_names[CG_K_COUNT];

/* One group of dot dims (batch, free or contracting), outer to inner: sizes
 * and the strides of the lhs (sa) and rhs (sb) in elements. */
typedef struct {
  int n;
  int64_t size[GV_MAX_RANK], sa[GV_MAX_RANK], sb[GV_MAX_RANK];
} cg_dim_group;

/* The runtime's galv_conv_desc (runtime/galv_rt.h), both targets: NC + S
 * spatial dims of x (in), w (k) and y (out). */
typedef struct {
  int S;
  int64_t N, C, M, G;
  int64_t in[GV_MAX_RANK], k[GV_MAX_RANK], out[GV_MAX_RANK];
  int64_t stride[GV_MAX_RANK], pad[GV_MAX_RANK], dil[GV_MAX_RANK];
} cg_conv;

/* The kernel call of one op. Which fields a kernel reads is said at each
 * fill function (codegen/kcall.c); the fields are zero otherwise. */
typedef struct {
  cg_kernel kernel;
  int src, dst;       /* slots of the main input and output */
  int aux[2];         /* further input slots (gather: indices; norm: scale, bias; dot / conv: rhs, bias), -1: none */
  int es_slot;        /* the slot whose element size scales byte counts (es, chunks, offsets) */
  int64_t base;       /* elements into src (copy_strided: a slice window) or dst (scatter_strided) */
  int rank;           /* dims / strides / dims2 */
  int64_t dims[GV_MAX_RANK], strides[GV_MAX_RANK], dims2[GV_MAX_RANK];
  int64_t outer, len, inner; /* rows of outer x len x inner elements (softmax, cumsum, gather: len = D ...) */
  int64_t count;      /* topk: k; gather(_grad): indices; gather_nd / scatter_nd: index tuples; reduce: output elements; norm: scale elements; cross_entropy: rows */
  int64_t count2;     /* norm: bias elements */
  int idx_es;         /* gather(_grad): index bytes (8 or 4) */
  int kind;           /* reduce: 0 sum 1 mean 2 max 3 min; softmax: log; norm: rms; trilu: upper; cumsum: exclusive;
                         scatter_nd: add; pool: 0 max 1 avg; topk: largest */
  int kind2;          /* cumsum: reverse; pool: count_include_pad */
  int64_t kdiag;      /* trilu: the diagonal (a constant) */
  int kdiag_slot;     /* trilu: the slot of an i64 scalar k read at run time, or -1 (kdiag) */
  double eps;         /* norm */
  int64_t ignore;     /* cross_entropy: ignore_index */
  int nparts, part0;  /* concat / split: the parts are slots part0 .. part0 + nparts - 1 */
  int axis;           /* concat / split */
  cg_dim_group bg, mg, kg, ng; /* dot: batch, lhs free, contracting, rhs free */
  cg_conv conv;       /* conv and its gradients; pool (M = G = C, dims: the end pads) */
  gv_dropout dro;     /* dropout: the mask's parameters (rank / dims: the local type; aux[0]: the offsets, or -1) */
} cg_kcall;

/* The kernel of op code c, CG_K_NONE when no kernel call runs it (an
 * elementwise op, a collective, a view, an op the targets do not run). */
cg_kernel cg_kcall_kernel(gv_opcode c);

/* Fills k for op (whose kernel is cg_kcall_kernel(op->code) != CG_K_NONE).
 * who: the target's name in messages ("cpu codegen"). Returns 0, or -1
 * after one error line naming the node. k->kernel may come back CG_K_NONE
 * (nothing to run). */
int cg_kcall_fill(gv_module *m, const gv_op *op, const char *who, cg_kcall *k);

/* The value in slot s of op. */
const gv_value *cg_kcall_value(const gv_op *op, int s);

/* Whether k moves elements as they are (any element size: copies, gathers,
 * concat / split, a scatter that overwrites): it runs in the storage of its
 * element-size slot (es_slot). Under 16-bit storage a slot stored otherwise
 * (a pipeline stage's 16-bit crossing value gathered from an fp32
 * parameter: ir/storage.c) goes through conversion scratch on every target. */
bool cg_kcall_moves(const cg_kcall *k);
/* concat / split: the elements of part i along the rows (dims[axis] x inner). */
int64_t cg_kcall_part_elems(const gv_op *op, const cg_kcall *k, int i);

/* ---- printing: the parts both targets write alike (C syntax) */

/* What a target tells the shared printer. */
typedef struct {
  const char *prefix; /* of the runtime's functions: "galv_" (CPU), "galv_cu_" (CUDA) */
  /* element bytes of v as stored; the pointer expression of v plus byte_off */
  size_t (*es)(const void *ctx, const gv_value *v);
  void (*ptr)(const void *ctx, const gv_value *v, int64_t byte_off, char *buf, size_t n);
  const void *ctx;
} cg_kcall_target;

/* `{a, b, ...}` ({0} for rank 0): a static dims / strides literal */
void cg_dims_lit(FILE *f, int rank, const int64_t *d);
/* Row-major strides of t's dims; the product of d[lo..hi). */
void cg_strides_of(const gv_type *t, int64_t *s);
int64_t cg_prod(const int64_t *d, int lo, int hi);
/* `  { static const galv_conv_desc d = {...};\n` (the caller closes the block) */
void cg_conv_lit(FILE *f, const cg_conv *c);
/* `  { static const galv_dropout_desc d = {...};\n` (runtime/galv_rng.h; the
 * caller closes the block) */
void cg_dropout_lit(FILE *f, const cg_kcall *k);
/* The data movement kernels (copy_strided, tile, concat, split), whose calls
 * are the same on both targets but for the prefix: p[i] is slot i's pointer
 * expression for i < np (after a target's storage conversions). Returns 0
 * when printed, 1 when k is another kernel. */
int cg_kcall_print_move(FILE *f, const gv_op *op, const cg_kcall *k, const cg_kcall_target *t, char p[][64], int np);

/* galv.attention / attention_grad (docs/fused-attention.md): `  { static
 * const galv_fattn_desc d = {...}; const void *const fn[] = {...};
 * FWD|BWD(&d, ...); }` with g the op's geometry (gv_attn_geometry) and p[i]
 * slot i's pointer expression; both targets' runtimes take this call. ty:
 * the element type of the q / k / v / o / do / dq / dk / dv pointers
 * (their storage: "float", or a 16-bit type); fdt[f]: functor operand f's
 * storage as the runtime's dtype name (GALV_F32, GALV_BOOL, GALV_BF16,
 * GALV_F16); tail: more arguments (", ..." or ""). lse is fp32. With
 * dropout (a `ratio` attribute) the descriptor carries galv.dropout's mask
 * parameters over the local scores and the call passes the offsets operand
 * (or 0), galv_rt_step and galv_rt_mb. -1 after an error line. */
int cg_fattn_call(FILE *f, gv_module *m, const gv_op *op, const gv_attn_geo *g, const char *fwd, const char *bwd, const char *ty,
                  const char *const *fdt, const char *tail, char p[][64]);

#endif
