/* sharding_roles.h — how the tp preset recognises Megatron's roles in a
 * graph (defined in propagate_sharding.c). The planner (plan_sharding.c)
 * asks the same questions, so both use these and cannot drift apart. */
#ifndef GALV_SHARDING_ROLES_H
#define GALV_SHARDING_ROLES_H

#include <stdbool.h>

#include "../ir/ir.h"

/* The users of every value among the top-level ops of a block, for the
 * questions below (built once per block: a question then costs the value's
 * uses, not a scan of the rest of the block). The block must not change
 * while it is in use. NULL: out of memory (the questions then scan). */
typedef struct gv_users gv_users;
gv_users *gv_users_new(const gv_block *b);
void gv_users_free(gv_users *u);

/* A dot with a parameter rhs whose result (after an optional bias add)
 * feeds an activation, a head-split reshape, a split or a gating mul:
 * column-parallel. tp: the degree (a fused qkv projection whose leading
 * factor tp does not divide is not column at tp > 1). */
bool gv_megatron_is_column(const gv_module *m, const gv_users *u, const gv_op *op, int64_t tp);
/* v comes from a column-parallel chain (the lhs of a row-parallel dot). */
bool gv_megatron_from_column(const gv_module *m, const gv_users *u, const gv_value *v, int depth, int64_t tp);
/* The rhs dim of a dot that is contracting (true) or free (false), not batch; -1 if none. */
int gv_dot_rhs_dim(const gv_op *op, bool contracting);

/* ZeRO stages as pins (docs/sharding.md, "ZeRO stages"); the preset
 * (propagate-sharding) and the planner (plan_sharding.c) both pin through
 * this, so a stage means one program whichever chose it. `pin` records a
 * value's own sharding (an argument or a one-result op); `pin_use` asks
 * that the consumers of v (a gradient) read it resharded right after its
 * producer and returns the value they should read (v itself, or a
 * galv.reshard of it). v may be an argument (ZeRO-1/2's 16-bit working
 * copy below): its reshard then goes right before its first reader. */
typedef struct {
  void *ctx;
  const gv_sharding *(*get)(void *ctx, const gv_value *v);
  void (*pin)(void *ctx, gv_value *v, const gv_sharding *s);
  gv_value *(*pin_use)(void *ctx, gv_value *v, const gv_sharding *s);
} gv_pin_io;
/* stage[i] (per argument of m->main, 0..3) for trainable parameters;
 * dmask: the mesh axes ZeRO shards over (those splitting the batch).
 * Stage s >= 1 splits the parameter's optimizer state and its update ops
 * (ops at "optimizer/OPT/P") over dmask on the first dim the parameter's
 * own (tp) sharding leaves whole that dmask divides (a parameter with no
 * such dim stays at stage 0); stage 3 splits the parameter too, stages
 * 1 / 2 keep it whole (the updated parameter, a galv.updates result, is
 * then all-gathered after the update) — except under 16-bit training in
 * one program (gv_precision_opts.storage 16-bit, not a pipeline stage):
 * there stages 1 / 2 split the parameter (the fp32 master) too and every
 * reader but the update reads one whole gather of it, a galv.reshard
 * marked working_copy before its first reader (the storage pass makes it a
 * 16-bit gather; regather leaves it alone). Stage 1 pins the gradient the
 * optimizer reads replicated over dmask (all_reduce, then a local slice);
 * stage 2 pins it split (reduce_scatter right after the backward produces
 * it; with gradient accumulation every microbatch's gradient and the
 * sums, ops at "accumulate/P"); stage 3 leaves it to the update's first
 * read (as --strategy zero always did), and with gradient accumulation to
 * propagate-sharding's pin_accumulate (--zero-reduce). Returns 0, -1 after an error. */
int gv_zero_stage_pins(gv_module *m, const gv_mesh *mesh, const uint8_t *stage, unsigned dmask, const gv_pin_io *io);

/* Where pin_use puts v's galv.reshard: before the op after v's producer, or
 * for an argument before its first top-level reader (NULL: nothing reads
 * it); *at: the op whose location the reshard takes. */
static inline gv_op *gv_pin_use_before(const gv_block *body, const gv_value *v, const gv_op **at) {
  *at = v->def;
  if (v->def) return v->def->next;
  for (gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == v) return (gv_op *)(*at = op);
  return NULL;
}

#endif
