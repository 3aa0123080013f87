/* dce.c — dead code elimination: removes pure ops (GV_PURE) whose results
 * are all unused, in the function body and in nested regions, until nothing
 * more can be removed.
 *
 * It must never remove a terminator, an op without GV_PURE (galv.if and
 * anything with side effects), or an op any of whose results still has a use.
 * Removed ops are only unlinked: their memory belongs to the module arena.
 */
#include "passes.h"

/* One reverse sweep over b. Users of a value always come after its
 * definition (SSA dominance, nested regions included), so walking backwards
 * sees every user before the definer; decrementing the operands' use counts
 * as ops go lets whole dead chains disappear in one sweep. Returns the number
 * of ops removed. */
static int sweep(gv_block *b) {
  int removed = 0;
  gv_op *prev;
  for (gv_op *op = b->last; op; op = prev) {
    prev = op->prev;
    for (int r = 0; r < op->nregions; r++) removed += sweep(op->regions[r]);
    unsigned fl = gv_ops[op->code].flags;
    if (!(fl & GV_PURE) || (fl & GV_TERMINATOR) || op->nregions) continue;
    int used = 0;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]->nuses > 0) used = 1;
    if (used) continue;
    for (int i = 0; i < op->nopnds; i++) op->opnds[i]->nuses--;
    gv_op_unlink(op);
    removed++;
  }
  return removed;
}

int gv_pass_dce(gv_module *m) {
  if (!m || !m->main || !m->main->body) return 0;
  /* One sweep reaches the fixed point for SSA; the loop is a guard that
   * costs one extra sweep and keeps the result right should a caller hand
   * over IR whose order is not yet verified. */
  for (int iter = 0; iter < 64; iter++) {
    gv_count_uses(m->main->body);
    if (sweep(m->main->body) == 0) break;
  }
  return 0;
}
