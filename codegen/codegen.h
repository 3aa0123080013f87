/* codegen.h — code generation entry points, one per target. An emitter reads
 * only the device-program form of the IR (docs/device-program.md: every op
 * one kernel call in schedule order, galv.fused loops, a galv.arena memory
 * plan) and writes a self-contained directory. Emitters never rewrite the IR
 * and never run passes: a module without a memory plan is an error. */
#ifndef GALV_CODEGEN_H
#define GALV_CODEGEN_H

#include "../ir/ir.h"

typedef struct {
  bool quiet;      /* no progress lines on stderr */
  int nkernels;    /* out: kernel calls in the generated run function */
  /* a second entry of the same program (a pipeline stage's backward entry,
   * docs/pipeline.md): NAME writes program_NAME.c and weights_NAME.bin (no
   * Makefile, runtime/ or launch) whose symbols are galv_NAME_* in place of
   * galv_* (galv_NAME_program_run, galv_NAME_inputs, ...); NULL: the program */
  const char *entry;
  /* the weights buffer's constants from this offset on (0: right after the parameters): a pipeline stage's
   * backward entry places its constants after the forward entry's weights (gv_emit_weights_bytes), so that one
   * buffer holds the parameters once and both entries' constants (runtime/pipe.c, galv_pipe_bwd_base); ZB-H1's
   * weight-gradient entry its constants after those (galv_pipe_wgt_base) */
  int64_t const_base;
} gv_emit_options;

/* The weights buffer (weights.bin) bytes of m as both emitters lay it out: each parameter argument in order, then
 * each top-level constant, every one 64-byte aligned (codegen/cpu/emit.c plan, codegen/cuda/emit.c). */
int64_t gv_emit_weights_bytes(const gv_module *m);
/* The same with the constants from const_base on (gv_emit_options.const_base): where such an entry's buffer ends. */
int64_t gv_emit_weights_bytes_at(const gv_module *m, int64_t const_base);

/* CPU target (codegen/cpu/): writes OUTDIR/program.c, weights.bin, Makefile
 * and runtime/ (the runtime sources embedded in galvc). Returns 0, or -1
 * after reporting one error line. */
int gv_emit_cpu(gv_module *m, const char *outdir, gv_emit_options *o);
/* The CPU program's 16-bit conversion scratch (bytes): the fp32 copies its
 * kernels read of 16-bit operands, and the 16-bit results they write to
 * fp32 first, at the largest kernel call (program.c's galv_cvt_scratch, one
 * buffer kept; cpu/emit.c convert_in). 0 without 16-bit storage; -1 when a
 * kernel call cannot be filled. The cost model's conversion scratch under
 * --target cpu (planner/cost.h gv_cost_convert_fn). */
int64_t gv_cpu_convert_scratch(const gv_module *m);

/* CUDA target (codegen/cuda/, docs/cuda-target.md): runs the CPU emitter
 * (plan check, weights.bin, program.c for `make cpu`) then writes
 * OUTDIR/program.cu, constants.bin, the nvcc Makefile and runtime/cuda/. */
typedef struct {
  const char *arch; /* "sm_90" (default) or a list "sm_90,sm_80" */
  bool bf16;        /* --precision bf16: float tensors stored as bf16, fp32 accumulation (fp16: the emitter
                     * stores f16 where the storage pass stored f16; docs/cuda-target.md, "fp16") */
  bool pipe_stage;  /* a pipeline stage (galvc --pipeline-stages): main = runtime/cuda/pipe_cuda.cu, MPI + comm backend */
  bool shared_gpu;  /* the stage's ranks share their GPUs with other stages' (interleaved 1F1B: a device group's V
                     * chunks): the Makefile's COMM defaults to staged (NCCL refuses two ranks on one GPU) */
} gv_cuda_options;
int gv_emit_cuda(gv_module *m, const char *outdir, gv_emit_options *o, const gv_cuda_options *co);

/* bf16 training on the CUDA target (codegen/cuda/storage.c): the storage
 * the runtime kernel of op needs for its f32 operand i (or result
 * i - nopnds): 1 bf16, 0 fp32, -1 as planned. half[value->id] = 1 for the
 * values the storage pass stores bf16 (ir/storage.h). */
int cu_kernel_storage(const gv_op *op, int i, const unsigned char *half);

/* The runtime sources embedded at build time (generated runtime_sources.c). */
typedef struct {
  const char *name;          /* file name inside runtime/, e.g. "kernels.c" */
  const unsigned char *data;
  size_t len;
} gv_embedded_file;
extern const gv_embedded_file gv_runtime_files[];
extern const int gv_nruntime_files;
/* runtime/cuda/ (generated runtime_cuda_sources.c), copied into OUTDIR/runtime/cuda/ */
extern const gv_embedded_file gv_runtime_cuda_files[];
extern const int gv_nruntime_cuda_files;

#endif
