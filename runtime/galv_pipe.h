/* galv_pipe.h — pipeline-stage programs (docs/pipeline.md, "Per-stage
 * executables"). galvc --pipeline-stages S writes out/stageI/ per stage:
 * program.c (the stage's ops: the values it receives are inputs named
 * "pp.OP.RES", the values it sends are outputs of the same name) and
 * pipe_stage.c with the tables below; the stage's Makefile builds with
 * mpicc and -DGALV_PIPE_STAGE, so main.c hands over to galv_pipe_main
 * (runtime/pipe.c): microbatches, p2p between the stages' ranks
 * (galv_send / galv_recv), timing, arena high-water, --trace. */
#ifndef GALV_PIPE_H
#define GALV_PIPE_H

#include <stdint.h>

#include "galv_rt.h"
#include "galv_spmd.h"

typedef struct {
  const char *name; /* a program input ("pp.OP.RES", received) or output (sent) */
  int peer;         /* inputs: the stage that sends it */
  uint64_t dst;     /* outputs: bit mask of the stages that receive it */
} galv_pipe_value;

/* ---- defined by pipe_stage.c */
extern const int galv_pipe_stage, galv_pipe_nstages, galv_pipe_microbatches;
extern const int galv_pipe_first_rank[]; /* stage i runs on world ranks [first[i], first[i+1]), all stages alike:
                                          * an SPMD program over its sub-world; stage-local rank j talks to rank j of the others */
extern const galv_pipe_value galv_pipe_in[], galv_pipe_out[];
extern const int galv_pipe_nin, galv_pipe_nout;
extern const double galv_pipe_predicted_ms[]; /* per stage: the cost model's time per microbatch */

/* training (galvc --train --pipeline-stages): the schedule, the optimizer and
 * its hyperparameters, the stage's parameters (their weights.bin slots) */
extern const int galv_pipe_training, galv_pipe_schedule; /* schedule: 0 gpipe, 1 1f1b */
extern const char galv_pipe_optimizer[];                 /* "adamw" | "sgd" */
extern const double galv_pipe_hparams[6];                /* lr, weight decay, beta1, beta2, eps, momentum */
extern const galv_io galv_pipe_params[];        /* this rank's block (local dims) */
extern const galv_io_split galv_pipe_param_split[]; /* per parameter: split over the stage's ranks (NULL starts: whole) */
extern const int galv_pipe_nparams;

int galv_pipe_main(int argc, char **argv);

#endif
