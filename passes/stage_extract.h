/* stage_extract.h — per-stage programs of a pipeline (passes/stage_extract.c). */
#ifndef GALV_STAGE_EXTRACT_H
#define GALV_STAGE_EXTRACT_H

#include <stdint.h>

#include "../ir/ir.h"
#include "../planner/pipeline.h"

#define GV_STAGE_IO_MAX 256

typedef struct {
  const char *name;  /* "pp.OP.RES": the program input / output of that name */
  int peer;          /* inputs: the stage that sends it */
  uint64_t dst_mask; /* outputs: the stages that receive it */
} gv_stage_value;

typedef struct {
  int nin, nout;
  gv_stage_value in[GV_STAGE_IO_MAX], out[GV_STAGE_IO_MAX];
} gv_stage_io;

/* Per layer group figures for gv_stage_cost_analytic (flops: cluster-layers'). */
int gv_pipe_group_stats(gv_module *m, int ngroups, const int64_t *flops, gv_group_stats *out);
/* Training: per group the bytes a stage's stash keeps per microbatch for it,
 * and of those the bytes group - 1 recomputes when in the same stage (m:
 * clustered, then loss and autodiff; stage_extract.c). */
int gv_pipe_group_stash(gv_module *m, int ngroups, int64_t *stash, int64_t *credit);
/* The parameters of m (after cluster-layers) read by more than one layer
 * group, with those groups (planner/pipeline.h); free with
 * gv_pipe_shared_params_free. */
int gv_pipe_shared_params(const gv_module *m, gv_shared_param **out, int *n);
void gv_pipe_shared_params_free(gv_shared_param *sp, int n);
/* stage attributes from the groups' stages (stage i: groups [first[i], first[i+1])). */
int gv_pipe_assign_stages(gv_module *m, const int *first, int nstages);
/* Keeps stage s only (crossing values: inputs / outputs "pp.OP.RES"); io: those values. */
int gv_stage_extract(gv_module *m, int s, int nstages, gv_stage_io *io);
/* After gv_stage_extract: stage s of the training step (loss on the last stage,
 * gradients of the received values, inputs "gin:pp.X"; stage_extract.c). */
int gv_stage_train(gv_module *m, int s, int nstages);
/* Whether a stage's training function has "grad:" results. An earlier stage
 * with nothing to train and nothing received (only frozen parameters) has
 * none: it runs forward only, without a stash or a backward entry, and its
 * backward only receives the gradients of what it sent. */
bool gv_stage_has_grads(const gv_module *m);

#endif
