/* storage.c — the storage pass: decides the dtype every top-level value of
 * the device program is stored in on the device (ir/storage.h; the contract
 * is docs/cuda-target.md, "Storage precision") and writes it on the IR, so
 * that the memory plan sizes each value at its storage bytes, the cost
 * model prices its traffic, collectives and GEMM peak from it, and the
 * emitters place and convert it — one decision that all of them read.
 *
 * --precision fp32 (gv_precision_opts.storage = f32): no annotation (old
 * ones removed). bf16 / fp16 inference: every f32 op result is stored
 * 16-bit. 16-bit training (a step: galv.updates): the mixed-precision rule
 * of ir/storage.c (fp32 master weights, optimizer state, parameter
 * gradients unless --grad-dtype bf16, the loss; 16-bit activations and
 * activation gradients). Attributes: `storage = ["bf16", ...]` (one dtype
 * per result) on each op with a result stored narrower than its type;
 * `input_storage = "bf16"` on every galv.dot (its kernel reads 16-bit
 * inputs, converting fp32 ones) and on a convolution that computes in
 * 16-bit; so are its f32 arguments (`arg_storage` on galv.return: inputs
 * and weights are converted on upload; the weights keep their weights.bin
 * slots, a data input gets a 16-bit arena slot). A training step's
 * arguments keep their dtype. On a device program (after spmd-partition)
 * each collective keeps the global program's decision for it and its
 * operand (its `storage` as spmd-partition wrote it), which its predicted
 * bytes count.
 * Runs before memory-plan; never changes what the program computes in the
 * IR's types. value->id is scratch. */
#include <stdlib.h>
#include <string.h>

#include "../ir/storage.h"
#include "passes.h"

gv_precision_options gv_precision_opts = {.storage = GV_DT_F32, .grad = GV_DT_F32, .reduce = GV_DT_UNKNOWN};

/* a collective spmd-partition made, with its predicted bytes */
static bool moved(const gv_op *op) {
  bool coll = op->code == GV_OP_ALL_REDUCE || op->code == GV_OP_ALL_GATHER || op->code == GV_OP_REDUCE_SCATTER ||
              op->code == GV_OP_ALL_TO_ALL;
  return coll && op->nres == 1 && op->nopnds == 1 && gv_get_attr(op, "bytes") != NULL;
}

/* 16-bit training, global program: a trained parameter that a galv.reshard
 * gathers (ZeRO-3, ZeRO-1/2's working copy, a tp gather) is gathered as a 16-bit copy of its shard
 * when every reader of the gathered value reads it 16-bit anyway (a GEMM
 * converts its fp32 operands): a galv.cast to f32 marked `gather_copy`
 * between the parameter and its reshards, stored 16-bit by the plan
 * (ir/storage.c), so the collective moves 2 bytes per element. The copy is
 * rounded as the GEMM's own conversion rounds it, so results are unchanged.
 * Where the plan keeps the gathered value fp32 the copy is removed again.
 * Returns the number of copies inserted. */
static int gather_copies(gv_module *m, gv_op ***copies) {
  gv_func *f = m->main;
  gv_block *body = f->body;
  int n = 0;
  *copies = NULL;
  gv_op **by_arg = calloc((size_t)body->nargs + 1, sizeof *by_arg);
  if (!by_arg) abort();
  for (int i = 0; i < body->nargs; i++) body->args[i]->id = i; /* renumbered by the caller afterwards */
  for (gv_op *op = body->first; op; op = op->next) {
    if (op->code != GV_OP_RESHARD || op->nopnds != 1 || op->opnds[0]->def || op->opnds[0]->type.dtype != GV_DT_F32) continue;
    int a = op->opnds[0]->id;
    if (a < 0 || a >= body->nargs || body->args[a] != op->opnds[0] || !gv_arg_trains(f, a)) continue;
    if (!by_arg[a]) {
      gv_value *w = body->args[a];
      gv_op *c = gv_op_new(m, GV_OP_CAST, 1, &w, 1);
      gv_set_type(m, c, "to", GV_DT_F32);
      gv_set_int(m, c, "gather_copy", 1);
      c->res[0]->type = w->type;
      const gv_sharding *sh = gv_value_sharding(m, w); /* an elementwise copy: the parameter's own sharding */
      if (sh) gv_set_shardings(m, c, &sh);
      gv_op_set_loc(m, c, op->loc, op->onnx_op);
      gv_insert_before(op, c);
      by_arg[a] = c;
      n++;
    }
    op->opnds[0] = by_arg[a]->res[0];
  }
  if (n) {
    *copies = malloc((size_t)n * sizeof **copies);
    if (!*copies) abort();
    n = 0;
    for (int i = 0; i < body->nargs; i++)
      if (by_arg[i]) (*copies)[n++] = by_arg[i];
  }
  free(by_arg);
  return n;
}

int gv_pass_storage(gv_module *m) {
  if (!m->main || !m->main->body) return gv_error(m, "storage: module has no function");
  gv_block *body = m->main->body;
  gv_dtype h = gv_precision_opts.storage;
  if (h != GV_DT_F32 && h != GV_DT_BF16 && h != GV_DT_F16)
    return gv_error(m, "storage: precision %s is not a 16-bit float", gv_dtype_name(h));
  /* a training step, or a training pipeline stage's entry (ir/storage.h gv_func_stage_kind) */
  const int stage = gv_func_stage_kind(m->main);
  bool train = m->main->res_updates != NULL || stage == 2, grad16 = gv_precision_opts.grad != GV_DT_F32;
  /* the collectives spmd-partition made (they carry `bytes`) move what the global program's storage decided
   * (their `storage`, before this pass clears it): the planner predicted those bytes and the program's
   * communicator is checked against them, so the device program keeps that decision for each collective and
   * its operand even where fusion would change it (a fused op with an fp32 result keeps its operands fp32) */
  int ncoll = 0;
  for (gv_op *op = body->first; op; op = op->next) ncoll += moved(op);
  gv_op **coll = malloc((size_t)(ncoll + 1) * sizeof *coll);
  unsigned char *coll16 = malloc((size_t)ncoll + 1);
  if (!coll || !coll16) abort();
  ncoll = 0;
  for (gv_op *op = body->first; op; op = op->next)
    if (moved(op))
      coll[ncoll] = op, coll16[ncoll++] = gv_value_storage(op->res[0]) != op->res[0]->type.dtype;
  int n = 0;
  static const char *k_st, *k_in, *k_arg; /* interned: compared by address */
  if (!k_st) k_st = gv_intern("storage"), k_in = gv_intern("input_storage"), k_arg = gv_intern("arg_storage");
  for (gv_op *op = body->first; op; op = op->next)
    if (op->nattrs) gv_remove_attr_key(op, k_st), gv_remove_attr_key(op, k_in), gv_remove_attr_key(op, k_arg);
  if (h == GV_DT_F32) {
    free(coll), free(coll16);
    return 0;
  }
  for (int i = 0; i < body->nargs; i++) body->args[i]->id = n++;
  for (gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
  unsigned char *half = calloc((size_t)n + 1, 1);
  if (!half) abort();
  int rc = 0;
  if (train) {
    gv_op **copies = NULL;
    int ncopies = gather_copies(m, &copies);
    if (ncopies) { /* renumbered with the copies */
      n = 0;
      for (int i = 0; i < body->nargs; i++) body->args[i]->id = n++;
      for (gv_op *op = body->first; op; op = op->next)
        for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
      free(half);
      if (!(half = calloc((size_t)n + 1, 1))) abort();
    }
    rc = gv_storage_plan_train(m, half, n, grad16, gv_precision_opts.reduce, gv_precision_opts.stage_wide,
                                gv_precision_opts.nstage_wide);
    for (int k = 0; k < ncopies; k++) { /* a copy the plan keeps fp32 saves nothing: the reshards read the parameter */
      gv_op *c = copies[k];
      if (half[c->res[0]->id]) continue;
      for (gv_op *op = c->next; op; op = op->next)
        for (int i = 0; i < op->nopnds; i++)
          if (op->opnds[i] == c->res[0]) op->opnds[i] = c->opnds[0];
      gv_op_unlink(c);
    }
    free(copies);
    const gv_op *ret = gv_block_terminator(body);
    bool changed = false;
    for (int k = 0; k < ncoll && !rc; k++) { /* the global program's decision for each collective (above) */
      gv_op *c = coll[k];
      gv_value *x = c->nopnds ? c->opnds[0] : NULL;
      if (!x || x->type.dtype != GV_DT_F32 || half[c->res[0]->id] == coll16[k]) continue;
      bool step_result = false; /* the step's results stay fp32 */
      for (int i = 0; ret && i < ret->nopnds; i++) step_result = step_result || ret->opnds[i] == x || ret->opnds[i] == c->res[0];
      if (step_result) continue;
      if (x->def && x->def->code != GV_OP_CONSTANT && !(gv_ops[x->def->code].flags & GV_VIEW)) half[x->id] = coll16[k];
      half[c->res[0]->id] = half[x->id];
      changed = true;
    }
    /* views follow their root, and a shard_slice or slice (they move their operand's elements as they are, stored
     * like it: ir/storage.c) their operand: a collective kept fp32 above is read as fp32 — ZeRO-1's all-reduce of
     * a --grad-dtype bf16 gradient's fp32 microbatch sum sliced for the update, a gradient bucket's all-reduce
     * unpacked by slices */
    for (gv_op *op = body->first; op && changed; op = op->next)
      if (((gv_ops[op->code].flags & GV_VIEW) || op->code == GV_OP_SHARD_SLICE || op->code == GV_OP_SLICE) && op->nopnds &&
          op->nres && op->res[0]->type.dtype == op->opnds[0]->type.dtype)
        half[op->res[0]->id] = half[op->opnds[0]->id];
    gv_op *rt = gv_block_terminator(body);
    if (!rc && stage == 2 && rt) { /* a stage's crossing inputs arrive 16-bit; its parameters and data stay as they are */
      const char **s = gv_alloc(m->arena, (size_t)(body->nargs ? body->nargs : 1) * sizeof *s);
      for (int i = 0; i < body->nargs; i++)
        s[i] = gv_dtype_name(half[body->args[i]->id] && body->args[i]->type.dtype == GV_DT_F32 ? h : body->args[i]->type.dtype);
      if (body->nargs) gv_set_strs(m, rt, "arg_storage", body->nargs, s);
    }
  } else {
    for (gv_op *op = body->first; op; op = op->next)
      for (int i = 0; op->code != GV_OP_CONSTANT && i < op->nres; i++) half[op->res[i]->id] = op->res[i]->type.dtype == GV_DT_F32;
    gv_op *ret = gv_block_terminator(body);
    bool anyf = false;
    for (int i = 0; i < body->nargs; i++) anyf = anyf || body->args[i]->type.dtype == GV_DT_F32;
    if (ret && anyf) { /* inputs and weights are converted to 16-bit on upload */
      const char **s = gv_alloc(m->arena, (size_t)body->nargs * sizeof *s);
      for (int i = 0; i < body->nargs; i++)
        s[i] = gv_dtype_name(body->args[i]->type.dtype == GV_DT_F32 ? h : body->args[i]->type.dtype);
      gv_set_strs(m, ret, "arg_storage", body->nargs, s);
    }
  }
  const char *name = gv_dtype_name(h);
  for (gv_op *op = body->first; op && !rc; op = op->next) {
    const char *buf[16], **s = op->nres <= 16 ? buf : gv_alloc(m->arena, (size_t)op->nres * sizeof *s);
    bool any = false;
    for (int i = 0; i < op->nres; i++) {
      bool hv = half[op->res[i]->id] && op->res[i]->type.dtype == GV_DT_F32;
      s[i] = hv ? name : gv_dtype_name(op->res[i]->type.dtype);
      any = any || hv;
    }
    if (any) gv_set_strs(m, op, "storage", op->nres, s);
    bool conv16 = op->code == GV_OP_CONV && op->nres && half[op->res[0]->id];
    if ((op->code == GV_OP_DOT || conv16) && op->nopnds && op->opnds[0]->type.dtype == GV_DT_F32)
      gv_set_str(m, op, "input_storage", name);
  }
  free(half);
  free(coll), free(coll16);
  return rc;
}

int gv_stash_wide(const gv_module *m, const char **wide, int n, int cap) {
  const gv_func *f = m->main;
  const gv_op *ret = gv_block_terminator(f->body);
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds && n < cap; i++) {
    const char *r = f->res_names[i];
    if (r && (!strncmp(r, "stash.", 6) || !strncmp(r, "wstash.", 7)) && ret->opnds[i]->type.dtype == GV_DT_F32 &&
        gv_value_storage(ret->opnds[i]) == GV_DT_F32)
      wide[n++] = r;
  }
  return n;
}
