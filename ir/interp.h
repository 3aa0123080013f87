/* interp.h — whole-function evaluation with the reference evaluator. */
#ifndef GALV_INTERP_H
#define GALV_INTERP_H

#include "ir.h"

/* Evaluates the module's function: inputs[i] for the i-th non-parameter
 * argument, parameters from func->param_data. On success *outputs (arena
 * memory, one per galv.return operand) and *noutputs are set. Returns 0, or
 * -1 after one error line naming the op. */
int gv_interpret(gv_module *m, const gv_tensor *const *inputs, int ninputs, gv_tensor ***outputs,
                 int *noutputs);

#endif
