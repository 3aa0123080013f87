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

#endif
