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
 * arguments keep their dtype.
 * On a device program (after spmd-partition) every collective the partition
 * built (it has `bytes`) keeps the storage the partition gave it — the
 * global program's plan, which the planner's prediction of the bytes on the
 * wire counts — and so does its operand: the rule applied to the device
 * program after fusion may see other uses (a fused consumer with an fp32
 * result) and would otherwise move other bytes than predicted.
 * Runs before memory-plan; never changes what the program computes in the
 * IR's types. value->id is scratch. */
#include <stdlib.h>

#include "../ir/storage.h"
#include "passes.h"

/* a collective spmd-partition built (with the bytes it moves per device) */
static bool partition_collective(const gv_op *op) {
  switch (op->code) {
  case GV_OP_ALL_REDUCE: case GV_OP_ALL_GATHER: case GV_OP_REDUCE_SCATTER: case GV_OP_ALL_TO_ALL:
    return gv_get_attr(op, "bytes") && op->nres == 1 && op->nopnds == 1;
  default:
    return false;
  }
}

gv_precision_options gv_precision_opts = {.storage = GV_DT_F32, .grad = GV_DT_F32};

int gv_pass_storage(gv_module *m) {
  if (!m->main || !m->main->body) return gv_error(m, "storage: module has no function");
  gv_block *body = m->main->body;
  gv_dtype h = gv_precision_opts.storage;
  int npin = 0;
  for (gv_op *op = body->first; op; op = op->next)
    if (partition_collective(op)) npin++;
  gv_op **pin = calloc((size_t)npin + 1, sizeof *pin);
  unsigned char *pin16 = calloc((size_t)npin + 1, 1);
  if (!pin || !pin16) abort();
  npin = 0;
  for (gv_op *op = body->first; op; op = op->next)
    if (partition_collective(op)) {
      pin16[npin] = gv_value_storage(op->res[0]) != op->res[0]->type.dtype;
      pin[npin++] = op;
    }
  for (gv_op *op = body->first; op; op = op->next)
    gv_remove_attr(op, "storage"), gv_remove_attr(op, "input_storage"), gv_remove_attr(op, "arg_storage");
  if (h == GV_DT_F32 || (h != GV_DT_BF16 && h != GV_DT_F16)) free(pin), free(pin16);
  if (h == GV_DT_F32) return 0;
  if (h != GV_DT_BF16 && h != GV_DT_F16) return gv_error(m, "storage: precision %s is not a 16-bit float", gv_dtype_name(h));
  bool train = m->main->res_updates != NULL, grad16 = gv_precision_opts.grad != GV_DT_F32;
  int n = 0;
  for (int i = 0; i < body->nargs; i++) body->args[i]->id = n++;
  for (gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
  unsigned char *half = calloc((size_t)n + 1, 1);
  if (!half) abort();
  int rc = 0;
  if (train) {
    rc = gv_storage_plan_train(m, half, n, grad16);
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
  for (int k = 0; k < npin && !rc; k++) { /* the partition's collectives and their operands (through views) */
    gv_value *v = pin[k]->opnds[0];
    while (v->def && (gv_ops[v->def->code].flags & GV_VIEW) && v->def->nopnds) v = v->def->opnds[0];
    half[pin[k]->res[0]->id] = pin16[k];
    if (v->def && v->type.dtype == GV_DT_F32) half[v->id] = pin16[k];
  }
  for (gv_op *op = body->first; op && npin; op = op->next) /* a view is stored like its root */
    if ((gv_ops[op->code].flags & GV_VIEW) && op->nopnds && op->nres) half[op->res[0]->id] = half[op->opnds[0]->id];
  free(pin), free(pin16);
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
  return rc;
}
