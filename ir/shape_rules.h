/* shape_rules.h — private helpers shared by the shape rules (ir/infer.c) and
 * the reference evaluator (ir/eval.c), so that both compute slice windows,
 * axes and broadcast strides the same way. Not part of the public IR API. */
#ifndef GALV_SHAPE_RULES_H
#define GALV_SHAPE_RULES_H

#include "ir.h"

/* Normalises a possibly negative axis against rank; -1 when out of range. */
int gv_norm_axis(int64_t axis, int rank);

/* The per-dimension window of a slice: result dim d reads input index
 * start[d] + i * step[d]; count[d] is the result size (GV_DIM_UNKNOWN when
 * the input dim is unknown). Returns 1 when the parameters are known, 0 when
 * some slice operand has no known value (start/step/count then describe
 * nothing, and *unknown_all says whether every dim is affected), -1 on an
 * error reported through gv_error_op. */
int gv_slice_window(gv_module *m, const gv_op *op, const gv_type *x, const gv_tensor *const *values,
                    int64_t *start, int64_t *step, int64_t *count, bool *affected);

/* Strides (in elements) of a tensor of type in when read broadcast to the
 * result type out (right-aligned, 0 on broadcast dims). in and out static. */
void gv_bcast_strides(const gv_type *in, const gv_type *out, int64_t *strides);

#endif
