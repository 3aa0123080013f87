/* attention.h — the attention chain the CUDA target runs as one kernel
 * (codegen/cuda/emit.c, runtime/cuda/attention.cuh), matched in one place
 * so that the emitter and the cost model (planner/cost.c) agree on which
 * chains never write their S x S scores. */
#ifndef GALV_ATTENTION_H
#define GALV_ATTENTION_H

#include "ir.h"

typedef struct {
  const gv_op *d1, *mid, *sm, *d2; /* dot(Q, K), the optional elementwise op, softmax, dot(P, V) */
  int score_opnd;                  /* mid's operand that is the score */
} gv_attn_chain;

/* The emitter fuses at most this many chains per program, the first in program order. */
enum { GV_ATTN_MAX = 64 };

/* Whether d1 (a top-level op) heads dot(Q, K) -> [one elementwise op] ->
 * softmax(last axis) -> dot(P, V) with every link the sole use of the
 * value before it, all f32, leading batch dims, one contracting dim per
 * operand, head dims <= 128 and nothing between the dots that writes
 * memory. Fills *c when it does. Uses are counted by scanning the ops after
 * d1 (nested regions included); value->nuses is not read. */
bool gv_attn_match(const gv_op *d1, gv_attn_chain *c);
/* The uses of the values of block b, counted once (nested regions included): gv_attn_match_in reads them instead of
 * scanning the ops after d1 for each dot, which was quadratic in a long program (every dot of a training step's
 * microbatches; ir/attention.c). The block must not change while they are read. NULL when out of memory. */
typedef struct gv_attn_uses gv_attn_uses;
gv_attn_uses *gv_attn_uses_new(const gv_block *b);
void gv_attn_uses_free(gv_attn_uses *u);
/* gv_attn_match with b's uses (d1 a top-level op of b); ix NULL: scanned, as gv_attn_match */
bool gv_attn_match_in(const gv_op *d1, gv_attn_chain *c, const gv_attn_uses *ix);

/* ---- training: galv.attention / galv.attention_grad (docs/fused-attention.md) */

/* One step of the score functor: kind applied to its arguments, one of which
 * is the running score. arg[i]: -1 the score, >= 0 functor operand arg[i],
 * -2 the literal lit[i]. The slope of each step in the score does not depend
 * on the score (add 1, sub +-1, mul m, div 1/m, where cond ? 1 : 0). */
enum { GV_ATTN_ADD, GV_ATTN_SUB, GV_ATTN_MUL, GV_ATTN_DIV, GV_ATTN_WHERE };
enum { GV_ATTN_MAX_STEPS = 8, GV_ATTN_MAX_FN = 8 };
typedef struct {
  int kind, nargs;
  int arg[3];
  double lit[3];
} gv_attn_step;

/* Parses the `score` attribute (steps "OP:ARG,ARG[,ARG]" separated by ';',
 * ARG `s`, a functor operand number < nfn, or a number); returns the step
 * count (0 for "") or -1 with *why set. */
int gv_attn_score_parse(const char *text, int nfn, gv_attn_step *st, const char **why);
/* The score after the steps; *slope (may be NULL) multiplied by each step's
 * slope. fn[i]: functor operand i's value at this score position. */
double gv_attn_score_apply(const gv_attn_step *st, int n, double s, const double *fn, double *slope);

/* The geometry of a galv.attention / attention_grad op: nb batch dims bd
 * (B their product), Sq queries, Sk keys, head dims D (q, k) and Dv (v);
 * kt: k stored [.., D, Sk]; vt: v stored [.., Dv, Sk]; the parsed functor.
 * Returns 0, 1 while a type is not static, -1 (after an error line when m
 * is non-NULL) when the op is malformed. */
typedef struct {
  int nb;
  int64_t bd[4], B, Sq, Sk, D, Dv;
  int kt, vt;
  int nst;
  gv_attn_step st[GV_ATTN_MAX_STEPS];
  int fn0, nfn; /* the functor operands: op->opnds[fn0 .. fn0 + nfn) */
  int off;      /* the dropout's offsets operand (gv_attn_off), or -1 */
  bool drop;    /* dropout on the probabilities (a `ratio` attribute) */
} gv_attn_geo;
int gv_attn_geometry(gv_module *m, const gv_op *op, gv_attn_geo *g);

/* galv.attention / attention_grad with dropout (docs/fused-attention.md)
 * carry galv.dropout's attributes (ratio, seed, id, acc, rows: ir/dropout.h
 * gv_dropout_params reads them; rows defaults to q's dim 0, the scores'
 * dim 0) and, once spmd-partition has split the batch, the scores' shard
 * offsets as a last operand of type i64 [nb + 2] after the functor
 * operands (the same operand galv.dropout gets). The index of that
 * operand, or -1. */
int gv_attn_off(const gv_op *op);
/* Whether op is a galv.attention / attention_grad with dropout (its value then depends on the step: never folded). */
bool gv_attn_dropout(const gv_op *op);

/* A chain galv.attention replaces (passes/fuse_attention.c). */
typedef struct {
  const gv_op *d1, *sm, *d2;
  const gv_op *drop;                     /* galv.dropout between sm and d2, or NULL */
  const gv_op *steps[GV_ATTN_MAX_STEPS]; /* the elementwise ops between d1 and sm, in order */
  int nsteps;
  int nfn;                               /* functor operands */
  gv_value *fn[GV_ATTN_MAX_FN];
  int64_t k_contract, v_contract;        /* of K and V (absolute axes) */
  char score[512];                       /* the score attribute */
} gv_attn_train_chain;

/* Whether d1 heads dot(Q, K) -> [add | sub | mul | div | where]* ->
 * softmax(last axis) -> [galv.dropout] -> dot(P, V) with each link the sole use of the value
 * before it, f32, nb leading batch dims, Q's contracting dim its last, the
 * score the dividend of a div and a branch of a where, the other operands
 * broadcastable to the score (rank-0 / one-element constants become
 * literals). Fills *c when it does. */
bool gv_attn_match_train(const gv_op *d1, gv_attn_train_chain *c);
/* ... with the block's uses counted once (gv_attn_uses_new; ix NULL: scanned). A pass that changes the block between
 * matches marks each value whose uses it changed (gv_attn_uses_dirty): those are scanned again when a match asks.
 * gv_attn_uses_count: a value's uses as counted, -1 when it is marked (or the table could not mark one). */
bool gv_attn_match_train_in(const gv_op *d1, gv_attn_train_chain *c, const gv_attn_uses *ix);
void gv_attn_uses_dirty(gv_attn_uses *u, const gv_value *v);
int gv_attn_uses_count(const gv_attn_uses *u, const gv_value *v);

/* Where training's galv.attention / attention_grad run as kernels, the one
 * place the drivers ask (galvc, galv-eval: --fused-attention auto, their
 * default, and whether `on` can run): target "cpu" | "cuda", storage the
 * activations' dtype (GV_DT_F32, or GV_DT_BF16 / GV_DT_F16 under
 * --precision). GV_ATTN_KERNEL_AUTO: a kernel runs it and auto fuses;
 * GV_ATTN_KERNEL_OPT_IN: a kernel runs it, fused only with `on` (not tuned);
 * GV_ATTN_KERNEL_NONE: no kernel (`on` only under --plan-only, which prices
 * the fused program). A new kernel is one line here. */
enum { GV_ATTN_KERNEL_NONE, GV_ATTN_KERNEL_OPT_IN, GV_ATTN_KERNEL_AUTO };
int gv_attn_train_kernel(const char *target, gv_dtype storage);

/* galvc's --fused-attention decision for a training compile: kernel
 * gv_attn_train_kernel's answer, mode 1 (on), 0 (off) or -1 (auto, the
 * default), plan_only --plan-only. 1: the cores fused (galv.attention), 0:
 * the four-op chains, -1: refused (`on` where no kernel runs it, outside
 * --plan-only: galvc's "no kernel runs fused attention" error). galvc's
 * own inputs never give GV_ATTN_KERNEL_NONE today (--target is cpu or
 * cuda, the storage f32 / bf16 / f16), so tests/unit/test_attention.c
 * checks every target x dtype x mode here. */
int gv_attn_train_fuse(int kernel, int mode, bool plan_only);

#endif
