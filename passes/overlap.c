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
 * memory plan keeps the gradient live until the program waits for its
 * reduction (memory_plan.c), which the window below bounds; the cost
 * model's timeline prices the order (cost.h gv_cost_timeline).
 * At most two layers' gradient reductions in flight: of the reductions
 * of backward results (those moved here, ZeRO-2's reduce-scatters where
 * the gradient is made) the first of each layer after the first (the
 * planner's units) is marked `wait_posted`: before posting it the
 * program waits for the calls posted before the previous marked one
 * (comm_sync.h; the previous layer's stay in flight, with this layer's
 * backward to run under), and the memory plan frees their operands (the
 * whole gradients, under ZeRO-2 the unreduced fp32 ones) there, instead of
 * keeping every gradient of the backward until the update. The wait costs
 * time only where a layer's reductions outlast the next layer's backward;
 * the timeline prices it as placed.
 * ZeRO-3's parameter gathers (the forward's and the regather pass's
 * backward ones, of the parameter or its 16-bit copy) are prefetched one
 * layer ahead (prefetch_gathers). It never changes what the program computes: only the
 * order of independent ops. Nothing happens in a program without
 * collectives; nothing under galvc --overlap off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/comm_sync.h"
#include "layer_units.h"
#include "passes.h"

static bool is_view(const gv_op *op) { return (gv_ops[op->code].flags & GV_VIEW) != 0; }

/* The first op after `from` that reads (not through a view: views touch no
 * bytes) a result of one of the n ops in g; NULL when none. */
static gv_op *first_reader(gv_op *from, gv_op *const *g, int n) {
  for (gv_op *op = from; op; op = op->next) {
    if (is_view(op)) continue;
    for (int i = 0; i < op->nopnds; i++) {
      const gv_value *v = op->opnds[i];
      while (v->def && is_view(v->def) && v->def->nopnds) v = v->def->opnds[0];
      for (int k = 0; k < n; k++)
        if (v->def == g[k]) return op;
    }
  }
  return NULL;
}

/* A gather of a split parameter: its operand is the function argument, or
 * in 16-bit training the argument's 16-bit copy (a galv.cast marked
 * gather_copy, passes/storage.c). */
static bool param_gather(const gv_op *op) {
  if (op->code != GV_OP_ALL_GATHER || op->nopnds != 1 || gv_comm_sync_at_once(op)) return false;
  const gv_op *d = op->opnds[0]->def;
  return !d || (d->code == GV_OP_CAST && d->nopnds == 1 && !d->opnds[0]->def && gv_get_attr(d, "gather_copy"));
}

/* ZeRO-3 gathers one layer ahead: spmd-partition gathers a split parameter
 * (an all_gather of a function argument) right before its use, forward and
 * backward. Consecutive gathers whose nodes are in one layer (the planner's
 * units, found by structure: passes/layer_units.h) form a group; each group after the first moves right after the first op
 * that reads the previous group's gathers (where the emitters sync for
 * those), so its calls run while that layer computes. Earlier would not
 * help: a sync waits for every call posted (one queue), so a gather posted
 * before the previous layer's sync would be waited for there. */
static void prefetch_gathers(gv_module *m, gv_block *b) {
  int n = 0;
  for (gv_op *op = b->first; op; op = op->next)
    if (param_gather(op)) n++;
  if (n < 2) return;
  gv_op **g = malloc(sizeof *g * (size_t)n);
  int *grp = malloc(sizeof *grp * (size_t)n);
  if (!g || !grp) {
    free(g), free(grp);
    return; /* no prefetch: the order stays valid */
  }
  gv_layer_units own;
  const gv_layer_units *lu = gv_layer_units_for(m);
  if (!lu) {
    if (gv_layer_units_find(m, &own)) {
      free(g), free(grp);
      return; /* no prefetch: the order stays valid */
    }
    lu = &own;
  }
  int k = 0, ng = 0, prev = -1;
  for (gv_op *op = b->first; op; op = op->next)
    if (param_gather(op)) {
      int key = gv_layer_units_loc(lu, op->loc);
      if (!k || key != prev) ng++;
      prev = key;
      grp[k] = ng - 1, g[k++] = op;
    }
  if (lu == &own) gv_layer_units_free(&own);
  for (int i = 0, lo = 0; i < ng; i++) {
    int hi = lo;
    while (hi < n && grp[hi] == i) hi++;
    if (i > 0) {
      int plo = lo - 1;
      while (plo > 0 && grp[plo - 1] == i - 1) plo--;
      gv_op *r = first_reader(g[plo]->next, g + plo, lo - plo);
      bool before = false; /* r precedes this group's first gather */
      for (gv_op *op = r; op && !before; op = op->next) before = op == g[lo];
      gv_op *at = r ? r->next : NULL; /* past the group's own gathers and copies already there: never insert before a moved op */
      for (bool own = true; at && own; at = own ? at->next : at) {
        own = false;
        for (int j = lo; j < hi && !own; j++) own = at == g[j] || at == g[j]->opnds[0]->def;
      }
      if (r && before && at && r->next != g[lo]) {
        for (int j = lo; j < hi; j++) {
          gv_op *c = g[j]->opnds[0]->def; /* a 16-bit copy made between `at` and the gather moves with it */
          bool after = false;
          for (gv_op *op = at; c && op && op != g[j] && !after; op = op->next) after = op == c;
          if (after) {
            gv_op_unlink(c);
            gv_insert_before(at, c);
          }
          gv_op_unlink(g[j]);
          gv_insert_before(at, g[j]);
        }
      }
    }
    lo = hi;
  }
    free(g), free(grp);
}

/* The op that makes reduction op's operand, through the views between them (NULL: an argument). */
static const gv_op *grad_producer(const gv_op *op) {
  const gv_op *d = op->opnds[0]->def;
  while (d && is_view(d) && d->nopnds >= 1 && d->opnds[0]->def) d = d->opnds[0]->def;
  return d;
}

/* The layer (units' key) of the op that produces reduction op's gradient. */
static int grad_layer(const gv_layer_units *lu, const gv_op *op) {
  const gv_op *d = grad_producer(op);
  return d && d->loc ? gv_layer_units_loc(lu, d->loc) : -1;
}

/* A reduction of a backward op's result: its operand made by an op located
 * ".../grad" (ZeRO-2's reduce-scatter where the gradient is made, a
 * reduction this pass moved there). */
static bool grad_reduction(const gv_op *op) {
  const gv_op *d = grad_producer(op);
  size_t n = d && d->loc ? strlen(d->loc) : 0;
  return n >= 5 && !strcmp(d->loc + n - 5, "/grad");
}

/* Marks the first early reduction of each layer after the first
 * `wait_posted` (the window above). */
static void window(gv_module *m, gv_op *const *early, int n) {
  if (n < 2) return;
  gv_layer_units own;
  const gv_layer_units *lu = gv_layer_units_for(m);
  if (!lu) {
    if (gv_layer_units_find(m, &own)) return; /* no units: no window, the order stays valid */
    lu = &own;
  }
  int prev = grad_layer(lu, early[0]);
  for (int i = 1; i < n; i++) {
    int key = grad_layer(lu, early[i]);
    if (key >= 0 && key != prev) gv_set_int(m, early[i], "wait_posted", 1);
    if (key >= 0) prev = key;
  }
  if (lu == &own) gv_layer_units_free(&own);
}

int gv_pass_overlap(gv_module *m) {
  if (!m->main || !m->main->body || gv_shard_opts.no_overlap) return 0;
  gv_block *b = m->main->body;
  prefetch_gathers(m, b);
  int n = 0;
  for (gv_op *op = b->first; op; op = op->next) op->id = n++;
  gv_op **early = malloc(sizeof *early * (size_t)(n + 1));
  int ne = 0;
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
    if (!ok) continue;
    gv_op *e = d->next; /* already in place: d, its views in order, op */
    for (int i = nv - 1; i >= 0 && e == views[i]; i--) e = e->next;
    if (e == op) continue;
    for (int i = nv - 1; i >= 0; i--) gv_op_unlink(views[i]);
    gv_op_unlink(op);
    gv_op *at = d->next;
    for (int i = nv - 1; i >= 0; i--) gv_insert_before(at, views[i]);
    gv_insert_before(at, op);
  }
  if (early) { /* the gradient reductions in flight, in program order after the moves */
    for (gv_op *op = b->first; op; op = op->next)
      if ((op->code == GV_OP_ALL_REDUCE || op->code == GV_OP_REDUCE_SCATTER) && op->nopnds == 1 && !gv_comm_sync_at_once(op) &&
          grad_reduction(op))
        early[ne++] = op;
    window(m, early, ne);
    free(early);
  }
  return 0;
}
