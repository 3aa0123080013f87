/* overlap.c — the overlap pass (docs/planner.md, "Step time"): gradient
 * reductions issued as the backward produces them. spmd-partition puts a
 * trained parameter's gradient reduction (galv.all_reduce, ZeRO-2/3
 * galv.reduce_scatter, located "optimizer/...") at its update, after the
 * whole backward; its operand, the gradient, is final as soon as the
 * backward op that defines it has run. The pass moves each such reduction
 * (with the views between it and that op) right after that op, so that it
 * is posted on the communication queue while the backward of the earlier
 * layers computes; the update still reads the result, and the emitters'
 * sync rule (ir/comm_sync.h) waits for it there. Reductions synced at once
 * (packed through scratch: comm_sync.h) and those of accumulated gradients
 * (an argument, or the accumulate pass's "accumulate/..." ops) stay. The
 * memory plan keeps the gradient live until the update (memory_plan.c), so
 * this trades bytes (a reduced copy beside each gradient reduced early) for
 * time, which the cost model's timeline prices (cost.h gv_cost_timeline).
 * It never changes what the program computes: only the order of
 * independent ops. Nothing happens in a program without collectives. */
#include <string.h>

#include "../ir/comm_sync.h"
#include "passes.h"

static bool is_view(const gv_op *op) { return (gv_ops[op->code].flags & GV_VIEW) != 0; }

int gv_pass_overlap(gv_module *m) {
  if (!m->main || !m->main->body) return 0;
  gv_block *b = m->main->body;
  int n = 0;
  for (gv_op *op = b->first; op; op = op->next) op->id = n++;
  for (gv_op *op = b->first, *next; op; op = next) {
    next = op->next;
    if ((op->code != GV_OP_ALL_REDUCE && op->code != GV_OP_REDUCE_SCATTER) || !op->loc || strncmp(op->loc, "optimizer/", 10) ||
        op->nopnds != 1 || gv_comm_sync_at_once(op))
      continue;
    /* the views between the gradient's producer and the reduction, nearest first */
    enum { MAXV = 8 };
    gv_op *views[MAXV];
    int nv = 0;
    gv_op *d = op->opnds[0]->def;
    while (d && d->parent == b && is_view(d) && d->nopnds >= 1 && nv < MAXV) views[nv++] = d, d = d->opnds[0]->def;
    if (!d || d->parent != b || is_view(d) || d->code == GV_OP_CONSTANT || (d->loc && !strncmp(d->loc, "accumulate/", 11)))
      continue;
    bool ok = true; /* the views read nothing defined after d but their own chain */
    for (int i = 0; i < nv && ok; i++)
      for (int k = 1; k < views[i]->nopnds && ok; k++) {
        const gv_op *o = views[i]->opnds[k]->def;
        ok = !o || o->parent != b || o->id <= d->id;
      }
    if (!ok || d->next == (nv ? views[nv - 1] : op)) continue;
    gv_op *at = d->next;
    for (int i = nv - 1; i >= 0; i--) {
      gv_op_unlink(views[i]);
      gv_insert_before(at, views[i]);
    }
    gv_op_unlink(op);
    gv_insert_before(at, op);
  }
  return 0;
}
