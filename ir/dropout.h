/* dropout.h — galv.dropout's mask parameters as every target reads them
 * (ir/dropout_ops.c; the mask: runtime/galv_rng.h). */
#ifndef GALV_IR_DROPOUT_H
#define GALV_IR_DROPOUT_H

#include <stdint.h>

#include "ir.h"

typedef struct {
  float ratio;      /* drop probability, [0, 1) */
  float scale;      /* 1 / (1 - ratio), rounded to fp32 */
  uint32_t thr;     /* galv_rng_threshold(ratio) */
  uint64_t seed, id;
  int64_t acc[3];   /* gradient accumulation's [M, k, q]; [1, 0, 1]: none */
  int64_t rows;     /* the global dim 0 (a pipeline microbatch's rows) */
} gv_dropout;

/* Reads op's attributes; -1 after one error line naming the node. */
int gv_dropout_params(gv_module *m, const gv_op *op, gv_dropout *p);

/* The optimizer step the reference evaluator draws galv.dropout's mask for
 * (galv-eval --steps sets it per step; 0 otherwise). */
extern int64_t gv_eval_step;

#endif
