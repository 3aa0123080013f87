/* galv_pipe.h — pipeline-stage programs (docs/pipeline.md, "Per-stage
 * executables"). galvc --pipeline-stages S writes out/stageI/ per stage:
 * program.c (the stage's ops: the values it receives are inputs named
 * "pp.OP.RES", the values it sends are outputs of the same name) and
 * pipe_stage.c with the tables below; the stage's Makefile builds with
 * mpicc and -DGALV_PIPE_STAGE, so main.c hands over to galv_pipe_main
 * (runtime/pipe.c): microbatches, p2p between the stages' ranks
 * (galv_send / galv_recv), timing, arena high-water, --trace. With
 * --target cuda the stage is program.cu and its main is
 * runtime/cuda/pipe_cuda.cu, which sets device hooks (galv_pipe_device
 * below) and hands over to the same galv_pipe_main. */
#ifndef GALV_PIPE_H
#define GALV_PIPE_H

#include <math.h>
#include <stddef.h>
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
/* per stage: the stage cost's memory per device (training: the weights, the entries' copies of them, the
 * gradient sums, the optimizer state, the arena; the bytes saved per microbatch in flight) */
extern const int64_t galv_pipe_predicted_state[], galv_pipe_predicted_act[];
extern const int galv_pipe_predicted_inflight[]; /* per stage: the microbatches in flight the plan charges act for */
/* per stage: the stage plan's saved bytes at their peak (planner gv_pipe_plan_saved: under ZB-H1 with what the
 * weight-gradient entry reads from B until W) */
extern const int64_t galv_pipe_predicted_saved[];
/* ZeRO-1 inside the stage (galvc --pipeline-zero 1): the optimizer state split over the ranks that hold the same
 * parameters (the stage mesh's axes in galv_pipe_zero_axes: those no parameter is split over); 0: not split */
extern const int galv_pipe_zero, galv_pipe_zero_nmesh;
extern const int64_t galv_pipe_zero_mesh[];
extern const unsigned galv_pipe_zero_axes;
/* ZeRO-2 (galv_pipe_zero 2 or 3, galvc --pipeline-zero 2): the gradient sums split too; 2: the runtime sums the
 * microbatches locally and reduce-scatters the step's sums once; 3: it reduce-scatters each microbatch's gradients
 * into the rank's chunk of the sums (no local sums). Per parameter 1 when the stage entries output its gradient
 * unreduced over the zero axes (this rank's share of the sum), 0 when whole (a parameter other stages hold) */
extern const unsigned char galv_pipe_zero_partial[];

/* training (galvc --train --pipeline-stages): the schedule, the optimizer and
 * its hyperparameters, the stage's parameters (their weights.bin slots) */
extern const int galv_pipe_training, galv_pipe_schedule; /* schedule: 0 gpipe, 1 1f1b, 2 zb-h1, 3 interleaved (galv_pipe_sched.h) */
/* interleaved 1F1B: the model chunks per device group (V; P = nstages / V groups, stage s on group s mod P,
 * its V stages' ranks taking turns in the group's order, runtime/pipe.c); else 1 */
extern const int galv_pipe_vstages;
/* ---- runtime/pipe.c: this rank's device among the pipeline's, set before
 * the device hooks' begin: interleaved 1F1B, its device group's place (rank
 * r of stage g + c P: device g k + r, k ranks a stage, the group's V chunks
 * on one device); else its world rank. */
extern int galv_pipe_device_slot;
/* the backward entry's constants start at this offset of its weights block, past the forward entry's weights
 * (galvc gv_emit_options.const_base): one buffer holds the parameters once and both entries' constants; 0: the
 * backward entry holds a copy of the parameters of its own */
extern const int64_t galv_pipe_bwd_base;
/* ZB-H1: the weight-gradient entry's constants start here, past the backward entry's (or, without one, the forward
 * entry's) weights: the same buffer serves it too; 0: it holds a copy of the parameters of its own */
extern const int64_t galv_pipe_wgt_base;
extern const char galv_pipe_optimizer[];                 /* "adamw" | "sgd" */
extern const double galv_pipe_hparams[6];                /* lr, weight decay, beta1, beta2, eps, momentum */
/* --clip-grad-norm X (else 0): before the update the step's gradients are scaled by min(X / (n + 1e-6), 1), n the
 * global 2-norm over every trained parameter of every stage, each counted once (runtime/pipe.c, clip_coef) */
extern const double galv_pipe_clip;
/* loss scaling (16-bit training): {mode (0 off, 1 static, 2 dynamic), the scale (dynamic: the initial one), growth,
 * backoff, interval}. The last stage's seed is the scale (dynamic: its input "opt.loss_scale"); before the update every
 * rank checks its gradient sums for inf / NaN, one all-reduce (max) over the world decides, and an overflowing step is
 * skipped on every rank (runtime/pipe.c; torch's GradScaler rule, as passes/optimizer.c) */
extern const double galv_pipe_loss_scale[5];
/* cross-entropy loss (else 0): the last stage weights microbatch j's loss and gradients by c_j B / sum c
 * (c_j: its labels other than the ignore index), so the step equals the full batch's mean */
extern const int galv_pipe_ce;
extern const char galv_pipe_labels[];
extern const int64_t galv_pipe_ignore_index;
extern const galv_io galv_pipe_params[];        /* this rank's block (local dims) */
extern const galv_io_split galv_pipe_param_split[]; /* per parameter: split over the stage's ranks (NULL starts: whole) */
extern const int galv_pipe_nparams;
/* per parameter: bit i set when stage i holds a copy (this stage's bit always; more than one bit: a
 * shared parameter, whose gradient pipe.c sums across those stages before the update) */
extern const uint64_t galv_pipe_param_stages[];
/* per parameter: 1 when it is shared and every holding stage splits it alike (the same ranks, the same block per
 * rank; galvc compares the stages' splits): its gradient is returned as this rank's block and pipe.c sums it across
 * the stages block by block (rank r of the lowest holding stage with rank r of the others); 0: a shared parameter's
 * gradient is returned whole and summed whole (docs/pipeline.md, "Shared parameters") */
extern const unsigned char galv_pipe_shared_split[];

/* Cross-stage transfers (docs/pipeline.md, "Cross-mesh transfers"): per
 * crossing value and pair of stages, the tiles of the cross-mesh resharding
 * plan (planner/cross_mesh.c, the same plan stage-split prints as
 * galv.send / galv.recv tiles). The value is replicated on the sending
 * stage's k_from ranks and wanted replicated on the receiving stage's k_to;
 * each tile (a box of the value, global coordinates) goes once from sending
 * rank src to receiving rank dst; with allgather the receivers then
 * all-gather their boxes inside their stage (the local all-gather: each byte
 * crosses between the stages once). grad: the value's gradient, going back
 * from the value's receiving stage (from) to its sender (to).
 * scatter = q > 1 (no tiles): a value kept split over the batch on two stages
 * of the same mesh whose dp axis is the outermost, each dp block held by q
 * consecutive ranks (tp): rank r sends chunk r mod q of its block (its
 * elements in q equal contiguous runs) to rank r of the other stage, which
 * all-gathers the q chunks in place inside its q ranks (Megatron's
 * scatter / gather: each byte of a block crosses once, not q times). */
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
  int scatter;   /* > 1: the block scattered over that many consecutive ranks and gathered (above); tiles unused */
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
/* galv_pipe_xfer_send whose packed tiles' staging buffers (the stage's alloc hook) go to own(ctx, buf, n) instead of
 * being released at the next galv_pipe_xfer_complete: for sends on a queue that call does not wait for (runtime/pipe.c's
 * interleaved copies), whose caller frees them once the send is known complete. */
void galv_pipe_xfer_send_own(const galv_pipe_xfer *x, const void *whole, galv_queue *q, void (*own)(void *ctx, void *buf, size_t n),
                             void *ctx);
/* The other stage's local ranks this rank sends x's bytes to (send = 1) or
 * receives them from (send = 0), a bit each. A rank past 63: all bits when
 * sending, left out when receiving (a proof built on them fails). */
uint64_t galv_pipe_xfer_peers(const galv_pipe_xfer *x, int send);
/* After `runs` microbatches (x steps): checks that the communicator's send
 * bytes equal the plan's plus `other` (bytes the caller sent itself: shared
 * parameters' gradients; one error line otherwise) and prints measured,
 * planned and naive bytes per direction. Call before any other galv_send. */
void galv_pipe_xfer_report(long runs, uint64_t other);

/* Where a stage's buffers live and how its program runs: runtime/pipe.c
 * (microbatches, schedules, p2p, gradient accumulation, the optimizer step,
 * losses, -o) is one schedule for every target and touches its arena,
 * weights, saved inputs, received values, gradient sums and optimizer state
 * only through these hooks. NULL (galv_pipe_dev unset): host memory and
 * galv_program_run (the CPU target, pipe.c's own hooks). The CUDA target
 * (runtime/cuda/pipe_cuda.cu) sets device hooks before galv_pipe_main;
 * galv_send / galv_recv (runtime/pipe_xfer.c's tiles) then move device
 * buffers (NCCL, or host-staged). galv_pipe_main sets galv_pipe_dev to the
 * host hooks when no target set it, so pipe_xfer.c always goes through it. */
typedef struct {
  int adamw, one;                  /* one: B == 1 (the gradient sum is not scaled) */
  float lr, wd, b1, omb1, b2, omb2, eps, mom, decay; /* decay: 1 - lr wd (AdamW) */
  float inv, stepsz, bc2s;         /* 1 / B, lr / (1 - b1^t), sqrt(1 - b2^t) */
} galv_pipe_opt;
struct galv_pipe_entry; /* below */
typedef struct {
  void (*begin)(void);                               /* after the world is up: the device context */
  void *(*alloc)(size_t n);                          /* a buffer (64-byte aligned; never NULL) */
  void (*release)(void *p);
  void (*h2d)(void *dst, const void *host, size_t n); /* host -> buffer (the host bytes may change on return) */
  void (*d2h)(void *host, const void *src, size_t n); /* buffer -> host, complete on return */
  void (*copy)(void *dst, const void *src, size_t n); /* buffer -> buffer */
  void (*fill)(void *dst, int byte, size_t n);
  void (*run)(char *arena, const char *weights);      /* the stage's program on its buffers */
  /* a second entry of the stage (its backward entry) on buffers: state is the microbatch's stash */
  void (*run_entry)(const struct galv_pipe_entry *e, char *arena, const char *weights, char *state);
  void (*add_f32)(float *dst, const float *src, size_t n); /* dst += src (buffers) */
  /* this rank's block of the whole tensor l (split s) from buffer to buffer */
  void (*block)(const galv_io *l, const galv_io_split *s, void *dst, const void *whole);
  /* a collective: l's global form from every rank's block (host in, host out, valid until the next call) */
  const void *(*gather)(const galv_io *l, const galv_io_split *s, const void *local, galv_io *g);
  /* one optimizer update of n elements: x, m, v (NULL when unused) and the gradient sum g are buffers */
  void (*optimizer)(const galv_pipe_opt *o, float *x, float *m, float *v, const float *g, size_t n);
  /* the box len at off of a value (dims, element bytes es) to (pack: src = the value, dst = a contiguous
   * buffer) or from (unpack: src = the buffer, dst = the value) a contiguous buffer */
  void (*box)(size_t es, int rank, const int64_t *dims, const char *src, char *dst, const int64_t *off, const int64_t *len,
              int pack);
  void (*end)(void);
  void (*scale_f32)(float *x, float a, size_t n); /* x *= a (a buffer) */
  /* 16-bit values (dt GALV_BF16 / GALV_F16) on buffers, each element widened, computed in fp32 and rounded back
   * (round-to-nearest-even, f16 overflowing to inf), as the programs' elementwise ops round: the runtime's 16-bit
   * gradient sums (--grad-dtype bf16 / fp16) and 16-bit crossing values' sums and scalings. dst += src (src), or
   * dst *= a (src NULL) */
  void (*op16)(int dt, void *dst, const void *src, float a, size_t n);
  void (*to_f32)(int dt, float *dst, const void *src, size_t n); /* widened (exact); the optimizer's sum */
  /* the overflow check and the clipping norm of n elements of x (dt GALV_F32 or 16-bit): *bad = 1 when one is inf
   * or NaN (else unchanged); when sq, the sum of their squares (in double) added to *sq. Complete on return. */
  void (*scan)(int dt, const void *x, size_t n, float *bad, double *sq);
} galv_pipe_device;
extern const galv_pipe_device *galv_pipe_dev; /* set by a device target's main, else the host hooks */
/* runtime/pipe_xfer.c: the host hooks' box copy (memcpy per contiguous run) */
void galv_pipe_box_host(size_t es, int rank, const int64_t *dims, const char *src, char *dst, const int64_t *off,
                        const int64_t *len, int pack);

/* The update of one element (torch formulas, as passes/optimizer.c), shared
 * by the host loop and the device kernel. */
#ifdef __CUDACC__
#define GALV_PIPE_HD __host__ __device__
#else
#define GALV_PIPE_HD
#endif
GALV_PIPE_HD static inline void galv_pipe_opt_elem(const galv_pipe_opt *o, float *x, float *m, float *v, float gsum) {
  float gg = o->one ? gsum : gsum * o->inv;
  if (o->adamw) {
    float p1 = o->wd != 0 ? *x * o->decay : *x;
    *m = *m * o->b1 + gg * o->omb1;
    *v = *v * o->b2 + gg * gg * o->omb2;
    *x = p1 - o->stepsz * (*m / (sqrtf(*v) / o->bc2s + o->eps));
  } else {
    float g1 = o->wd != 0 ? gg + *x * o->wd : gg, d = g1;
    if (o->mom != 0) d = *m = *m * o->mom + g1;
    *x = *x - d * o->lr;
  }
}

/* training, an earlier stage with a stash (galvc without --pipeline-recompute):
 * program.c (program.cu) is the stage's forward entry (outputs: the sent "pp." values and
 * "stash.N"), program_bwd.c its backward entry (gv_emit_options.entry "bwd",
 * weights_bwd.bin; inputs "gin:pp.X", the stash "stash.N" as its state
 * buffer, planned offsets in .stash, .stash_bytes per microbatch; outputs
 * grad:<param>, grad:pp.X). run == NULL: no backward entry (the last stage,
 * inference, or the combined recomputing program of --pipeline-recompute). */
typedef struct galv_pipe_entry {
  const galv_io *inputs, *outputs;
  const int *ninputs, *noutputs;
  const galv_io_split *input_split, *output_split;
  const galv_state_entry *stash;
  const int *nstash;
  const int64_t *stash_bytes, *arena_bytes, *weights_bytes;
  const int *nranks;
  void (*run)(char *arena, const char *weights, char *state); /* run through galv_pipe_dev->run_entry */
  void (*comm_free)(void);
  const galv_kernel_info *kernels; /* its kernels (the device target's error lines) */
  const char *weights_file; /* next to the program */
  const int64_t *comm_predicted; /* its collectives' bytes per run (codegen/comm.c; -1: unknown), checked by pipe.c */
} galv_pipe_entry;
extern const galv_pipe_entry galv_pipe_bwd;
/* ZB-H1 (galv_pipe_schedule 2): a stage's weight-gradient entry (program_wgt.c, weights_wgt.bin; passes/stage_stash.c
 * weight-grad): state inputs "wstash.N" (outputs of the backward entry, or of the last stage's program) and
 * "stash.N" (slots of the microbatch's stash); outputs grad:<param>. run == NULL: none (the backward is whole). */
extern const galv_pipe_entry galv_pipe_wgt;

/* the declarations and the galv_pipe_entry of program_N.c (pipe_stage.c uses them) */
#define GALV_PIPE_ENTRY_DECL(N)                                                                                   \
  extern const galv_io galv_##N##_inputs[], galv_##N##_outputs[];                                              \
  extern const int galv_##N##_ninputs, galv_##N##_noutputs, galv_##N##_nstate, galv_##N##_nranks;             \
  extern const galv_io_split galv_##N##_input_split[], galv_##N##_output_split[];                              \
  extern const galv_state_entry galv_##N##_state[];                                                            \
  extern const galv_kernel_info galv_##N##_kernels[];                                                          \
  extern const int64_t galv_##N##_state_bytes, galv_##N##_arena_bytes, galv_##N##_weights_bytes;              \
  extern const int64_t galv_##N##_comm_predicted[4];                                                           \
  void galv_##N##_program_run(char *arena, const char *weights, char *state);                                  \
  void galv_##N##_program_comm_free(void)
#define GALV_PIPE_ENTRY(N)                                                                                        \
  {galv_##N##_inputs,         galv_##N##_outputs,         &galv_##N##_ninputs,    &galv_##N##_noutputs,           \
   galv_##N##_input_split,    galv_##N##_output_split,    galv_##N##_state,       &galv_##N##_nstate,             \
   &galv_##N##_state_bytes,   &galv_##N##_arena_bytes,    &galv_##N##_weights_bytes, &galv_##N##_nranks,          \
   galv_##N##_program_run,    galv_##N##_program_comm_free, galv_##N##_kernels,  "weights_" #N ".bin",           \
   galv_##N##_comm_predicted}

int galv_pipe_main(int argc, char **argv);

#endif
