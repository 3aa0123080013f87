/* storage.h — storage precision of values (docs/cuda-target.md, "Storage
 * precision"): the dtype a value's bytes are held in on the device, which
 * may be narrower than its IR type (an f32 value stored bf16 / f16 under
 * --precision bf16|fp16). The storage pass (passes/storage.c) decides it
 * once and writes it as attributes; the memory plan, the cost model, the
 * planner and both emitters read it through these functions, so there is one
 * definition of which value is stored how. */
#ifndef GALV_STORAGE_H
#define GALV_STORAGE_H

#include "ir.h"

/* The dtype v is stored in: its defining op's `storage` attribute (one
 * dtype name per result) when present; for an argument of the function
 * body, the body's galv.return's `arg_storage` (one per argument: a 16-bit
 * inference program's inputs and weights are converted on upload; a
 * training step's arguments — fp32 master weights, optimizer state, data —
 * have none); else its type's dtype. */
gv_dtype gv_value_storage(const gv_value *v);
/* numel x the storage dtype's size; -1 when the type is not static. */
int64_t gv_value_storage_bytes(const gv_value *v);
/* The dtype a GEMM (galv.dot) or convolution reads its f32 operands in
 * (its `input_storage` attribute: 16-bit operands stored fp32 are converted
 * before the kernel); else its first operand's dtype. It sets the compute
 * peak the cost model prices the op at. */
gv_dtype gv_op_input_storage(const gv_op *op);
/* Whether any top-level value of m's body is stored narrower than its type. */
bool gv_module_has_narrow_storage(const gv_module *m);

/* The mixed-precision training rule over a training step's top-level values
 * numbered 0..nvals-1 (value->id: block arguments, then op results in
 * order): half[id] = 1 for every f32 value stored 16-bit. fp32: the
 * function's arguments (master weights, optimizer state, data inputs),
 * constants, the step's results, and every op result all of whose uses are
 * by ops other than GEMMs, convolutions, norms, softmax and cross-entropy
 * that have an fp32 result (or by cross-entropy's gradient as its d loss):
 * the parameter gradients, their sums and partial sums and what goes only
 * into them or into the loss — unless grad16 (--grad-dtype bf16): then the
 * parameter gradients are 16-bit too and only the optimizer update and what
 * feeds the loss stay fp32. A copy or collective stores its result like its
 * operand (concat: 16-bit when any piece is); a view like its root. Every
 * other op result (activations, activation gradients, logits) is 16-bit.
 * Returns 0, or -1 after one error line (a step result that would be
 * 16-bit). */
/* reduce (--reduce-dtype): the dtype of the parameter gradients' pending
 * sums that a gradient reduction (all-reduce / reduce-scatter over the
 * ranks) moves: a backward op's result that is a partial sum (its sharding)
 * and flows by copies, views and sums only into the optimizer (loc
 * "optimizer/...") is stored fp32 (reduce f32) or 16-bit (reduce = the
 * storage dtype) whatever grad16 says; GV_DT_UNKNOWN: as the gradient. */
int gv_storage_plan_train(gv_module *m, unsigned char *half, int nvals, bool grad16, gv_dtype reduce, const char *const *wide,
                          int nwide);


/* Pipeline stage programs (docs/pipeline.md, "16-bit storage"): the values
 * that cross between stages or entries are named — received "pp.X" and
 * "gin:pp.X" inputs, the sent "pp.X" and "grad:pp.X" results, the stash
 * "stash.N" / "wstash.N" (results of one entry, galv.state inputs of the
 * next). gv_name_crosses(n): n is such a name. gv_func_stage_kind(f): 0 not
 * a stage program, 1 a stage without training (a forward: inference, or a
 * training pipeline's stage with nothing to train), 2 a training stage
 * (gradient inputs or results, a loss, a stash). A training stage takes the
 * mixed-precision rule above, except that the values sent to or received
 * from another stage ("pp.X", "grad:pp.X", "gin:pp.X") are stored 16-bit on
 * both sides (an input by `arg_storage`, a result by its op's `storage`):
 * the p2p messages hold 2 bytes per element. A stash result is no step
 * result: it is stored as the rule stores the value in the whole step (an
 * activation 16-bit, a row statistic of a reduction fp32); the entry that
 * reads it gets those stored fp32 in wide[] (nwide names: the writing
 * entry's decision, passed on by the driver), every other one 16-bit. The
 * loss and the parameter gradients stay step results (fp32). */
bool gv_name_crosses(const char *n);
int gv_func_stage_kind(const gv_func *f);

#endif
