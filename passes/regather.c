/* regather.c — the `regather` pass (global program, right after
 * propagate-sharding; training steps only): a parameter gathered by a
 * galv.reshard (ZeRO-3: the parameter is stored split over the data-parallel
 * axes and gathered whole before use) is gathered again before each later
 * layer that uses it, instead of keeping the first gather's whole copy
 * alive across the rest of the forward and the backward. So a ZeRO-3
 * layer's weights are gathered before its forward and again before its
 * backward (and before each microbatch's forward and backward under
 * gradient accumulation, or its recomputed forward), and the memory plan
 * frees each whole copy after the layer that read it (ZeRO-3 as Rajbhandari
 * et al. and FSDP run it: docs/sharding.md, "ZeRO stages").
 *
 * Uses are grouped into segments: a use starts a new segment (and reads a
 * new gather, cloned right before it) when an op of another layer lies
 * between it and the previous use (layers as the planner finds them, by
 * structure: passes/layer_units.h, unit 0 the embeddings, head and loss;
 * constants do not count). A layer's forward and backward are apart (the later
 * layers run between them), so they get a gather each; a tied embedding
 * read by the embedding lookup and by the head is gathered for each; the
 * head's forward and backward (only the loss between them) share one.
 * Clones compute the same values from the same stored parameter, so
 * results are bit-identical; the communication grows by one gather per
 * extra segment, which the cost model and the runtime's byte count both
 * see (the clone is an ordinary galv.reshard of the global program).
 *
 * Only reshards whose operand is a trained parameter of the function body
 * are cloned (not a ZeRO-1/2 working copy, marked `working_copy`: it is
 * gathered once and kept whole for the step by design) (inputs, activations and optimizer state are left alone), and
 * only uses by top-level ops (a use inside a region keeps the first
 * gather). Inference programs are left as they are. */
#include <stdlib.h>
#include <string.h>

#include "layer_units.h"
#include "passes.h"

/* A reshard of a trained parameter (an argument of the body; its id: the
 * argument's index, set by the caller). */
static bool is_param_gather(const gv_func *f, const gv_op *op) {
  if (op->code != GV_OP_RESHARD || op->nopnds != 1 || op->opnds[0]->def || gv_get_attr(op, "working_copy")) return false;
  int a = op->opnds[0]->id;
  return a >= 0 && a < f->body->nargs && f->body->args[a] == op->opnds[0] && gv_arg_trains(f, a);
}

/* The clone takes the location of the use it serves, so it counts in that
 * use's layer and phase (a backward op's "/grad", a recomputed one's
 * "/recompute": plan_sharding.c's phases, spmd-partition's per-layer bytes). */
static gv_op *clone_gather(gv_module *m, const gv_op *r, const gv_op *use) {
  gv_value *in = r->opnds[0];
  gv_op *c = gv_op_new(m, r->code, 1, &in, 1);
  for (int i = 0; i < r->nattrs; i++) gv_set_attr(m, c, &r->attrs[i]);
  c->res[0]->type = r->res[0]->type;
  c->res[0]->name = r->res[0]->name;
  c->id = -1;
  gv_op_set_loc(m, c, use->loc, r->onnx_op);
  return c;
}

int gv_pass_regather(gv_module *m) {
  gv_func *f = m ? m->main : NULL;
  if (!f || !f->body || !f->res_updates) return 0; /* not a training step */
  gv_block *b = f->body;
  /* found first: the finder uses the ops' ids as scratch. Without the planner's units (a --strategy preset) the
   * units found here on the global program are kept as the hint for the later passes of this module (overlap
   * groups by them after spmd-partition, where the partitioned blocks may no longer look alike) */
  static gv_layer_units own;
  const gv_layer_units *lu = gv_layer_units_for(m);
  if (!lu) {
    gv_layer_units_hint(NULL, NULL);
    gv_layer_units_free(&own);
    if (gv_layer_units_find(m, &own)) return -1;
    lu = &own;
    gv_layer_units_hint(m, &own);
  }
  int n = 0;
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = i;
  for (gv_op *op = b->first; op; op = op->next) op->id = n++;
  if (!n) return 0;
  /* run[k]: the first position of the run of ops of op k's layer that ends
   * at k (constants belong to every run); last[k] / cur[k] for a gather at
   * position k: the position of its latest use, the value that use read */
  int *run = malloc((size_t)n * sizeof *run), *last = malloc((size_t)n * sizeof *last);
  gv_value **cur = calloc((size_t)n, sizeof *cur);
  if (!run || !last || !cur) {
    free(run), free(last), free(cur);
    return gv_error(m, "regather: out of memory");
  }
  int prev = -1, start = 0;
  for (gv_op *op = b->first; op; op = op->next) {
    int k = op->id;
    last[k] = -1;
    if (op->code == GV_OP_CONSTANT) {
      run[k] = start;
      continue;
    }
    int key = gv_layer_units_loc(lu, op->loc);
    if (key != prev) start = k, prev = key;
    run[k] = start;
    if (is_param_gather(f, op)) last[k] = k, cur[k] = op->res[0];
  }
  int cloned = 0;
  for (gv_op *op = b->first, *next; op; op = next) {
    next = op->next;
    if (op->id < 0) continue;
    for (int i = 0; i < op->nopnds; i++) {
      gv_op *r = op->opnds[i]->def;
      if (!r || r->id < 0 || last[r->id] < 0) continue;
      int g = r->id;
      if (run[op->id] > last[g] + 1) { /* another layer ran since the last use: gather again */
        gv_op *c = clone_gather(m, r, op);
        gv_insert_before(op, c);
        cur[g] = c->res[0];
        cloned++;
      }
      op->opnds[i] = cur[g];
      last[g] = op->id;
    }
  }
  free(run), free(last), free(cur);
  if (cloned) gv_count_uses(b);
  return 0;
}
