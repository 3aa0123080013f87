/* storage.c — the kernel side of bf16 training on the CUDA target
 * (--train --precision bf16; docs/cuda-target.md, "bf16 training"): which
 * storage each runtime kernel needs for its operands and results, given
 * which values are stored bf16 (the storage pass, ir/storage.h); the
 * emitter converts the others through scratch. Shared by the emitter
 * (emit.c) and galv-eval --precision bf16, which rounds the same values in
 * the reference evaluator to check the plan's numerics without a GPU.
 * Reads the IR only. */
#include "../codegen.h"

/* GEMM inputs are bf16; conv, concat, softmax and norms compute in their
 * result's storage; parameter gradients of the training kernels and the
 * loss are fp32; cross_entropy_grad's dx and conv_grad_input's dx follow
 * the activation they are the gradient of; fused attention takes its
 * tensors 16-bit and lse fp32. */
int cu_kernel_storage(const gv_op *op, int i, const unsigned char *half) {
  bool res = i >= op->nopnds;
  const gv_value *v = res ? op->res[i - op->nopnds] : op->opnds[i];
  if (v->type.dtype != GV_DT_F32) return -1;
  switch (op->code) {
  case GV_OP_DOT: return res ? -1 : 1;
  case GV_OP_CONV: case GV_OP_CONCAT: case GV_OP_SOFTMAX: case GV_OP_LOG_SOFTMAX: case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM:
  case GV_OP_DROPOUT:
    return res ? -1 : half[op->res[0]->id];
  case GV_OP_GATHER_GRAD: case GV_OP_CROSS_ENTROPY: return res ? 0 : -1;
  case GV_OP_CROSS_ENTROPY_GRAD: return res ? half[op->opnds[1]->id] : i == 0 ? 0 : -1;
  case GV_OP_CONV_GRAD_INPUT: return res ? half[op->opnds[0]->id] : i == 1 ? 0 : -1;
  case GV_OP_CONV_GRAD_WEIGHT: return res ? 0 : i == 0 ? half[op->opnds[1]->id] : -1;
  /* fused attention (runtime/cuda/fused_attention.cuh): q, k, v, o, do and the gradients in the program's
   * 16-bit storage, lse fp32, the functor operands read as stored */
  case GV_OP_ATTENTION: return i < 3 || i == op->nopnds ? 1 : i == op->nopnds + 1 ? 0 : -1;
  case GV_OP_ATTENTION_GRAD: return i < 5 || res ? 1 : i == 5 ? 0 : -1;
  default: return -1;
  }
}
