/* storage.c — the storage plan of bf16 training on the CUDA target
 * (--train --precision bf16; docs/cuda-target.md, "bf16 training"): which
 * f32 values program.cu stores as bf16, and which storage each runtime
 * kernel needs for its operands and results (the emitter converts the
 * others through scratch). Shared by the emitter (emit.c) and galv-eval
 * --precision bf16, which rounds the same values in the reference
 * evaluator to check the plan's numerics without a GPU. Reads the IR only. */
#include <stdlib.h>

#include "../codegen.h"
#include "../comm.h"

/* ops whose result holds its operand's elements as they are (copies,
 * collectives): stored like the operand */
static bool moves_data(const gv_op *op) {
  switch (op->code) {
  case GV_OP_TRANSPOSE: case GV_OP_EXPAND: case GV_OP_SLICE: case GV_OP_TILE: case GV_OP_CONCAT: case GV_OP_SPLIT:
  case GV_OP_GATHER: case GV_OP_TRILU: case GV_OP_SLICE_GRAD:
    return true;
  default:
    return cg_comm_is_op(op);
  }
}

/* the ops whose f32 inputs are bf16 activations (they compute in fp32 from
 * them): GEMMs, convolutions, norms, softmax, cross-entropy */
static bool takes_activations(const gv_op *op) {
  switch (op->code) {
  case GV_OP_DOT: case GV_OP_CONV: case GV_OP_CONV_GRAD_INPUT: case GV_OP_CONV_GRAD_WEIGHT: case GV_OP_SOFTMAX:
  case GV_OP_LOG_SOFTMAX: case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM: case GV_OP_CROSS_ENTROPY:
  case GV_OP_CROSS_ENTROPY_GRAD:
    return true;
  default:
    return false;
  }
}

static bool skip(const gv_op *op) {
  return op->code == GV_OP_CONSTANT || op->code == GV_OP_ARENA || op->code == GV_OP_RETURN ||
         (gv_ops[op->code].flags & GV_VIEW);
}

/* fp32: the function's arguments (the state buffer: parameters = master
 * weights, optimizer state; the data inputs), constants, the step's results
 * (loss, new parameters and state), and every op result all of whose uses
 * are by ops other than GEMMs, convolutions, norms, softmax and
 * cross-entropy that have an fp32 result (or by cross-entropy's gradient as
 * its d loss) — the parameter gradients, their
 * sums and partial sums (dW from a GEMM, bias and norm-scale gradients from
 * a reduce, embedding gradients from gather_grad, their all-reduces) and
 * what goes only into them or into the loss. A copy or collective stores
 * its result as its operand (concat: bf16 when any piece is). Every other
 * op result (activations, activation gradients, logits) is bf16. Decided
 * per root (a view shares its root's storage): the fp32 closure in reverse
 * schedule order, then forward for copies. */
int cu_plan_storage(gv_module *m, unsigned char *half, int nvals) {
  gv_block *body = m->main->body;
  int nops = 0, rc = 0;
  for (const gv_op *op = body->first; op; op = op->next) nops++;
  const gv_op **ops = malloc((size_t)(nops + 1) * sizeof *ops);
  int *root = malloc((size_t)(nvals + 1) * sizeof *root);
  char *used = calloc((size_t)nvals + 1, 1), *bad = calloc((size_t)nvals + 1, 1), *ret = calloc((size_t)nvals + 1, 1);
  char *f32 = calloc((size_t)nvals + 1, 1);
  if (!ops || !root || !used || !bad || !ret || !f32) abort();
  for (int i = 0; i < nvals; i++) root[i] = i, half[i] = 0;
  nops = 0;
  for (const gv_op *op = body->first; op; op = op->next) {
    ops[nops++] = op;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]->id < 0 || op->res[i]->id >= nvals) {
        rc = gv_error_op(m, op, "cuda storage plan: value numbering out of range (internal error)");
        goto done;
      }
    if ((gv_ops[op->code].flags & GV_VIEW) && op->nopnds && op->nres) root[op->res[0]->id] = root[op->opnds[0]->id];
  }
  for (int k = nops - 1; k >= 0; k--) {
    const gv_op *op = ops[k];
    if (op->code == GV_OP_RETURN)
      for (int i = 0; i < op->nopnds; i++) ret[root[op->opnds[i]->id]] = 1;
    if (skip(op)) continue;
    bool any = false; /* every use of each result is known now (later in the schedule) */
    for (int i = 0; i < op->nres; i++) {
      int r = op->res[i]->id;
      f32[r] = ret[r] || (used[r] && !bad[r]);
      any = any || (f32[r] && op->res[i]->type.dtype == GV_DT_F32);
    }
    bool through = any && !takes_activations(op);
    for (int i = 0; i < op->nopnds; i++) {
      int r = root[op->opnds[i]->id];
      /* cross_entropy_grad's d loss is a scalar its kernel reads as fp32: an
       * accumulated microbatch's weight (passes/accumulate.c) stays fp32 */
      if (through || (op->code == GV_OP_CROSS_ENTROPY_GRAD && i == 0)) used[r] = 1;
      else bad[r] = 1;
    }
  }
  for (int k = 0; k < nops && !rc; k++) {
    const gv_op *op = ops[k];
    if (gv_ops[op->code].flags & GV_VIEW) {
      for (int i = 0; i < op->nres; i++) half[op->res[i]->id] = half[root[op->res[i]->id]];
      continue;
    }
    if (skip(op)) continue;
    bool any = false;
    for (int i = 0; i < op->nopnds; i++) any = any || half[op->opnds[i]->id];
    for (int i = 0; i < op->nres && !rc; i++) {
      int r = op->res[i]->id;
      if (op->res[i]->type.dtype != GV_DT_F32) continue;
      half[r] = moves_data(op) ? (op->code == GV_OP_CONCAT ? any : half[op->opnds[0]->id]) : !f32[r];
      if (half[r] && ret[r])
        rc = gv_error_op(m, op, "cuda codegen: --precision bf16 training: the step result from galv.%s would be stored "
                                "bf16 (its operand is a bf16 activation); not supported", gv_ops[op->code].name);
    }
  }
done:
  free(ops), free(root), free(used), free(bad), free(ret), free(f32);
  return rc;
}

/* GEMM inputs are bf16; conv, concat, softmax and norms compute in their
 * result's storage; parameter gradients of the training kernels and the
 * loss are fp32; cross_entropy_grad's dx and conv_grad_input's dx follow
 * the activation they are the gradient of. */
int cu_kernel_storage(const gv_op *op, int i, const unsigned char *half) {
  bool res = i >= op->nopnds;
  const gv_value *v = res ? op->res[i - op->nopnds] : op->opnds[i];
  if (v->type.dtype != GV_DT_F32) return -1;
  switch (op->code) {
  case GV_OP_DOT: return res ? -1 : 1;
  case GV_OP_CONV: case GV_OP_CONCAT: case GV_OP_SOFTMAX: case GV_OP_LOG_SOFTMAX: case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM:
    return res ? -1 : half[op->res[0]->id];
  case GV_OP_TOPK: return 0; /* the kernel reads and writes f32 */
  case GV_OP_GATHER_GRAD: case GV_OP_CROSS_ENTROPY: return res ? 0 : -1;
  case GV_OP_CROSS_ENTROPY_GRAD: return res ? half[op->opnds[1]->id] : i == 0 ? 0 : -1;
  case GV_OP_CONV_GRAD_INPUT: return res ? half[op->opnds[0]->id] : i == 1 ? 0 : -1;
  case GV_OP_CONV_GRAD_WEIGHT: return res ? 0 : i == 0 ? half[op->opnds[1]->id] : -1;
  default: return -1;
  }
}
