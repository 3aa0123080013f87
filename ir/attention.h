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

#endif
