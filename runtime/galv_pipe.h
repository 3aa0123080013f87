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
extern const int galv_pipe_first_rank[]; /* stage i runs on world ranks [first[i], first[i+1]) (k_i ranks, stages may
                                          * differ): an SPMD program over its sub-world */
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

/* Cross-stage transfers (docs/pipeline.md, "Cross-mesh transfers"): per
 * crossing value and pair of stages, the tiles of the cross-mesh resharding
 * plan (planner/cross_mesh.c, the same plan stage-split prints as
 * galv.send / galv.recv tiles). The value is replicated on the sending
 * stage's k_from ranks and wanted replicated on the receiving stage's k_to;
 * each tile (a box of the value, global coordinates) goes once from sending
 * rank src to receiving rank dst; with allgather the receivers then
 * all-gather their boxes inside their stage (the local all-gather: each byte
 * crosses between the stages once). grad: the value's gradient, going back
 * from the value's receiving stage (from) to its sender (to). */
typedef struct {
  int src, dst; /* stage-local ranks: sender in stage `from`, receiver in stage `to` */
  int64_t off[GALV_RT_MAX_RANK], len[GALV_RT_MAX_RANK];
} galv_pipe_tile;

typedef struct {
  const char *name; /* the value "pp.OP.RES" */
  int grad, from, to;
  int dtype, rank;
  int64_t dims[GALV_RT_MAX_RANK];
  int ntiles;
  const galv_pipe_tile *tiles;
  int allgather;
  int64_t bytes; /* per transfer: bytes crossing between the stages (the plan) */
  int64_t naive; /* the same if every receiving rank got the whole value from a sender */
} galv_pipe_xfer;

/* ---- defined by pipe_stage.c: the transfers this stage sends or receives */
extern const galv_pipe_xfer galv_pipe_xfers[];
extern const int galv_pipe_nxfers;

/* ---- runtime/pipe_xfer.c. Per group: galv_group_start, xfer_send / xfer_recv
 * (they post this rank's tiles), galv_group_end, xfer_complete (waits, puts
 * the received tiles in place, runs the local all-gathers inside the stage —
 * collectives: every rank of a stage posts the same transfers in the same order). */
void galv_pipe_xfer_init(galv_comm *world, int stage, int lrank, int nlocal);
const galv_pipe_xfer *galv_pipe_xfer_find(const char *name, int grad, int from, int to); /* fatal when none */
void galv_pipe_xfer_send(const galv_pipe_xfer *x, const void *whole, galv_queue *q);
void galv_pipe_xfer_recv(const galv_pipe_xfer *x, void *whole, galv_queue *q);
void galv_pipe_xfer_complete(galv_queue *q);
/* After `runs` microbatches (x steps): checks that the communicator's send
 * bytes equal the plan (one error line otherwise) and prints measured,
 * planned and naive bytes per direction. Call before any other galv_send. */
void galv_pipe_xfer_report(long runs);

int galv_pipe_main(int argc, char **argv);

#endif
