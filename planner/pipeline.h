/* pipeline.h — inter-operator (pipeline) stage partitioning (docs/pipeline.md).
 *
 * Alpa's stage DP over an ordered sequence of layer groups (from
 * cluster-layers) and sub-mesh shapes: it chooses the number of stages,
 * each stage's consecutive groups and sub-mesh, and the number of
 * microbatches B, minimising
 *     T = sum_i t_i + (B - 1) * max_i t_i          (t_i: a stage's fwd+bwd per microbatch)
 * subject to each stage's memory per device:
 *     states + inflight * activations-per-microbatch <= limit,
 * inflight = B under GPipe, min(B, later stages + 1) under 1F1B, min(B, S)
 * under ZB-H1 (gv_pipe_inflight; with the stage count free one DP run per
 * min(B, S)); interleaved (V chunks per
 * device, S fixed, a multiple of V): a plan is taken when each device
 * group's memory fits the limit (gv_pipe_group_mem: its V stages' states +
 * the peak over the group's order of their saved bytes, send copies and
 * batons), each stage charged its share of its group (gv_pipe_il_share)
 * against the limit, and where a group did not fit, against limit / V.
 * Stage costs come from a callback (the intra-operator planner's solve for
 * that group range on that sub-mesh); they are cached by the block
 * signatures of the range, the sub-mesh and B, so repeated blocks are
 * solved once. */
#ifndef GALV_PIPELINE_H
#define GALV_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

#define GV_PIPE_MAX_STAGES 256

/* the values of runtime/galv_pipe_sched.h's GALV_SCHED_*; AUTO: galvc chooses (the timeline's makespan) */
typedef enum { GV_SCHED_AUTO = -1, GV_SCHED_GPIPE = 0, GV_SCHED_1F1B = 1, GV_SCHED_ZBH1 = 2, GV_SCHED_INTERLEAVED = 3 } gv_schedule;

/* Per-layer recomputation inside a stage program (the recompute pass run by
 * gv_stage_train, docs/pipeline.md "Recomputation per layer inside stages"):
 * none, selective (the attention cores), all (each layer's input kept), or
 * the layers --recompute lists. */
enum { GV_LAYER_RC_NONE = 0, GV_LAYER_RC_SELECTIVE = 1, GV_LAYER_RC_ALL = 2, GV_LAYER_RC_LISTED = 3 };
/* "none", "selective", "all", "listed" */
const char *gv_layer_rc_name(int layer_rc);
/* The GV_LAYER_RC_* of a --recompute value (NULL: none). */
int gv_layer_rc_code(const char *spec);

/* One way to run a stage (training): with or without full recomputation of
 * an earlier stage (the runtime's combined program run in both entries, only
 * the stage inputs saved per microbatch in flight), with or without
 * per-layer recomputation inside the stage program (layer_rc) and with or
 * without ZeRO-1 (the optimizer state split over the stage's dp ranks, the
 * parameters all-gathered after the update). */
typedef struct {
  int64_t ns, state_bytes, act_bytes, once_ns, zero_ns, opt_ns, zero_ranks, xfer_ns, grad_ns;
  int64_t key_ns;       /* the DP's choice among the ways (0: ns): ns + the ZeRO collectives per step / B */
  bool recompute;       /* an earlier stage recomputes (no stash) */
  signed char zero;     /* GV_ZERO_*: none, ZeRO-1, ZeRO-2 reduced once per step, ZeRO-2 reduced per microbatch */
  signed char layer_rc; /* GV_LAYER_RC_*: per-layer recomputation inside the stage program */
  bool planner_plan;    /* --strategy dp / tp has no plan on the stage: the intra-operator planner's plan, compiled so */
  char desc[48];
  int64_t comm_ns;      /* of ns: the stage program's exposed communication (its collectives' waits) */
} gv_stage_var;
enum { GV_STAGE_MAX_VARS = 24 };
/* A stage's ZeRO way (docs/pipeline.md "ZeRO-2 inside stages"): none; ZeRO-1 (the optimizer state split over the
 * ranks holding equal parameters); ZeRO-2 with the step's gradient sums reduce-scattered once per step (the local
 * sums whole during the step: sums + a chunk) or each microbatch's gradients reduce-scattered into the rank's chunk
 * (sums / g, a collective per microbatch). The runtime's galv_pipe_zero takes these values. */
enum { GV_ZERO_NONE = 0, GV_ZERO_1 = 1, GV_ZERO_2 = 2, GV_ZERO_2_EACH = 3 };
/* ZeRO-2 per microbatch: the runtime reduce-scatters a microbatch's gradients in GV_ZERO_EACH_BUCKETS x g buckets
 * (g: the ranks), each one bucket of ceil(chunk / (GV_ZERO_EACH_BUCKETS x g)) elements per rank (runtime/pipe.c
 * ZE_BUCKETS, the same number) */
enum { GV_ZERO_EACH_BUCKETS = 4 };
/* "zero-1", "zero-2", "zero-2/mb" (NULL for none) */
const char *gv_zero_name(int zero);

/* One stage's cost: groups [first, last) on a sub-mesh of nodes x per_node
 * devices with microbatch count B (the microbatch is batch / B). */
typedef struct {
  int64_t ns;           /* forward + backward (training) or forward time of one microbatch, transfers included */
  int64_t state_bytes;  /* per device: weights (+ grads + optimizer states in training) */
  int64_t act_bytes;    /* per device: activations one in-flight microbatch keeps */
  int64_t once_ns;      /* per step, not per microbatch (gradient sync); reported, not in the DP */
  int64_t zero_ns;      /* of once_ns: ZeRO-1's all-gather of the parameters after the update, ZeRO-2's reduce-scatter
                         * of the step's sums (once per step) with it (0: none); without ZeRO (zero_ranks < 2) the
                         * intra stage cost's all-reduce of the step's sums over dp (the unreduced program's) */
  int64_t opt_ns;       /* of once_ns: the runtime's optimizer update (memory-bound; 0: not priced) */
  int64_t zero_ranks;   /* ZeRO-1 / 2: the ranks the optimizer state is split over (0 / 1: none) */
  signed char zero;     /* GV_ZERO_* (zero_ranks > 1), else GV_ZERO_NONE */
  int64_t key_ns;       /* the DP's choice key among the ways (0: ns): ns + zero_ns / B (ZeRO's per-step
                         * collectives spread over the step's microbatches) */
  int64_t xfer_ns;      /* of ns: the stage's point-to-point transfers and fixed overhead per microbatch */
  int64_t grad_ns;      /* of ns: the runtime's gradient sum of one microbatch (sums += gradients, memory-bound; 0: not
                         * priced) */
  bool feasible;        /* the range can run on this sub-mesh at all */
  bool int_only;        /* not feasible: training, the range sends later stages integers only (no value to train
                         * through: a position ids' or a mask's computation on its own), on any sub-mesh */
  char desc[48];        /* intra-op choice, e.g. "dp=2,tp=4" */
  bool recompute;       /* training, an earlier stage: it recomputes (the combined program; no stash) */
  signed char layer_rc; /* training: per-layer recomputation inside the stage program (GV_LAYER_RC_*) */
  bool planner_plan;    /* the one-axis preset (--strategy dp / tp without --mesh) has no plan on this sub-mesh (e.g. a
                         * microbatch dp cannot split): priced by the intra-operator planner's plan, which galvc then
                         * compiles for the stage (tools/galvc_pipeline.c stage_module) */
  int64_t zb_bytes;     /* training: ZB-H1's weight-gradient entry's own bytes (its constants and what its split
                         * changes in the entries' arena; its parameters share the stage's weights buffer,
                         * runtime/pipe.c galv_pipe_wgt_base), per device, in no way's state_bytes: the schedule adds it (gv_stage_cost_pick / _use); 0 where
                         * the stage has no such entry (its backward sends no gradient back: the first stage) */
  int64_t zb_act_bytes; /* training: under ZB-H1, what the weight-gradient entry reads per microbatch, saved by B and
                         * held until W (the runtime's "until W" bytes; 0: no such entry) */
  int64_t send_bytes;   /* training, per device and microbatch: the copies runtime/pipe.c sends from, the values sent on
                         * (once per receiving stage) and ... */
  int64_t gsend_bytes;  /* ... the gradients of the received values sent back; interleaved 1F1B holds each until the
                         * receiver is known to have it (galv_pipe_peak_group_mem), 0 where not priced (the analytic cost) */
  /* the ways the stage can run when the cost function offers a choice (nvar >= 2; the fields above are var[0],
   * the fastest per microbatch); the DP takes per stage the fastest that fits its memory with its microbatches in
   * flight (gv_stage_cost_pick), on a tie the earlier: var[] ordered no per-layer recomputation before selective
   * before all, then no ZeRO before ZeRO-1, stash before
   * recomputation */
  int64_t comm_ns;      /* of ns: the stage program's exposed communication (the waits for its collectives on the
                         * timeline, and ZeRO-2's reduce-scatters per microbatch); 0 where not priced (the analytic cost) */
  int nvar;
  gv_stage_var var[GV_STAGE_MAX_VARS];
  int way;              /* the var[] the fields above are (gv_stage_cost_use; 0 until it takes another) */
  bool bounded; /* no way fits and the stage's search left plans out by its bound (gv_plan_opts.stage_incumbent_ns):
                 * no plan of the stage both fits and runs under it (galvc's pipeline candidate is cut short) */
} gv_stage_cost;

/* Adds the way the main fields of w describe to c->var[] (the first call: var[0]). */
void gv_stage_cost_add_way(gv_stage_cost *c, const gv_stage_cost *w);
/* gv_stage_cost_add_way(c, c): c's own main fields. */
void gv_stage_cost_add_var(gv_stage_cost *c);
/* The saved bytes a stage holds at its peak, as a function of its bytes per microbatch: at most max over k of a[k]
 * x act_bytes + b[k] x zb_act_bytes (gv_pipe_charge_make). Outside ZB-H1 one point (inflight, 0); under ZB-H1 the
 * points of galv_pipe_peak over the stage's order where no other holds more of both (B saves what W reads before
 * releasing the stash; the last stage saves it in F). */
typedef struct {
  int n;
  int64_t a[4], b[4];
  /* interleaved 1F1B (il_V > 1): the stage's share of its device group's memory instead, stage il_i of il_P x il_V,
   * il_B microbatches, with the stage's send copies il_fs / il_bs per microbatch (gv_pipe_il_share; the callers taking
   * a stage's way set them from its cost: gv_stage_cost_pick, gv_stage_cost_min_need) */
  int il_P, il_V, il_i, il_B;
  int64_t il_fs, il_bs;
} gv_pipe_charge;
/* Stage i (from 0) of S, B microbatches, sched; inflight: gv_pipe_inflight's (or the interleaved group's) figure. */
void gv_pipe_charge_make(gv_schedule sched, int S, int i, int B, int64_t inflight, gv_pipe_charge *ch);
/* Interleaved 1F1B: stage i's share of its device group's memory besides its states (i of P x V stages, B
 * microbatches; act its saved bytes, fs / bs its forward / backward send copies per microbatch): the group's figure
 * (galv_pipe_group_held) with only this stage's bytes, the batons all counted. A group's figure is at most the sum of
 * its stages' shares. */
int64_t gv_pipe_il_share(int P, int V, int i, int B, int64_t act, int64_t fs, int64_t bs);
static inline int64_t gv_pipe_charge_bytes(const gv_pipe_charge *ch, int64_t act, int64_t wact) {
  if (ch->il_V > 1) return gv_pipe_il_share(ch->il_P, ch->il_V, ch->il_i, ch->il_B, act, ch->il_fs, ch->il_bs);
  int64_t m = 0;
  for (int k = 0; k < ch->n; k++)
    if (ch->a[k] * act + ch->b[k] * wact > m) m = ch->a[k] * act + ch->b[k] * wact;
  return m;
}
/* The way of c (an index of var[]; 0 when nvar < 2) that runs fastest (key_ns, else ns) within ns <= tmax (tmax <
 * 0: any) and fits state_bytes (+ zb_bytes under ZB-H1) + its saved bytes under ch <= limit, on a tie the earlier;
 * recomputing ways (whole-stage or per layer) only under schedules that run them (not ZB-H1 nor interleaved:
 * their stages stash all); want_recompute / want_zero (GV_ZERO_*) / want_layer >= 0: only the way with that choice (a
 * plan.json's). -1 when none fits. */
int gv_stage_cost_pick(const gv_stage_cost *c, const gv_pipe_charge *ch, int64_t limit, int64_t tmax, gv_schedule sched,
                       int want_recompute, int want_zero, int want_layer);
/* The smallest state_bytes (+ zb_bytes under ZB-H1) + saved bytes under ch over c's ways (recomputing ones where
 * sched runs them); *v its way. */
int64_t gv_stage_cost_min_need(const gv_stage_cost *c, const gv_pipe_charge *ch, gv_schedule sched, int *v);
/* Makes way v of c its main fields (c->var[] kept; v < 0: the main fields as they are) and, under ZB-H1, adds the
 * weight-gradient entry's bytes to its state_bytes (then zb_bytes 0): the stage of a plan, as the runtime holds it. */
void gv_stage_cost_use(gv_stage_cost *c, int v, gv_schedule sched);
/* Whether stages recompute under sched (ZB-H1's W entry reads the stash; interleaved chunks stash). */
bool gv_schedule_recomputes(gv_schedule sched);

/* The cost callback: groups [first, last) of ngroups (first = 0: the stage
 * receives nothing; last = ngroups: it sends nothing). The cache key
 * includes those two facts besides the block signatures. */
typedef int (*gv_stage_cost_fn)(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B,
                                gv_stage_cost *out);

/* A solve's table of stage costs, kept allocated for the next solve (gv_pipe_problem.table): each solve starts it
 * empty as its own would be, without allocating (and faulting in) a table of its size again. */
typedef struct gv_pipe_table gv_pipe_table;
gv_pipe_table *gv_pipe_table_new(void);
void gv_pipe_table_free(gv_pipe_table *t);
void gv_pipe_table_empty(gv_pipe_table *t);

typedef struct {
  int ngroups;
  const uint64_t *sig;   /* per group block signature (cache key); NULL: every group distinct */
  const gv_cluster *cluster;
  int64_t devices;       /* devices to use (all of them): <= cluster's */
  const int *mb_choices; /* microbatch counts to try */
  int nmb;
  gv_schedule schedule;
  int vstages;           /* GV_SCHED_INTERLEAVED: the chunks per device group (stages = P x vstages) */
  int64_t mem_limit;     /* bytes per device; 0: cluster memory */
  int stages;            /* 0: choose; else exactly this many */
  int64_t mesh_devices;  /* 0: any sub-mesh; else only sub-meshes of this many devices (equal stages) */
  const int *stage_devices; /* with stages fixed: stage i's sub-mesh has stage_devices[i] devices; NULL: any */
  gv_stage_cost_fn cost;
  void *ctx;
  bool probe;            /* no partition fits: return 1 without the error line (galvc's default search) */
  const char *why_none;  /* appended to the line when no stage or partition has a plan (NULL: nothing) */
  bool no_min_need;      /* with probe: no partition fits at a count: no search for the partition that needs the least
                          * (out->min_need then the least stage's need; the default search's screen, which never
                          * reports it) */
  gv_pipe_table *table;  /* NULL: the solve allocates its table of stage costs; else it reuses this one (emptied) */
  /* with table: the costs earlier solves left in it are read, not emptied (GALV_PIPE_PRUNE=off: emptied). A cost's
   * key holds its range's signatures, the sub-mesh's shape, the cluster's node shape and B, and a cost is taken
   * only for the range that computed it: the first range of a key a solve meets is priced as on its own table,
   * so the costs read are the same. The caller empties the table (gv_pipe_table_empty) when the cost's context
   * changes otherwise. */
  bool keep_costs;
} gv_pipe_problem;

typedef struct {
  int nstages, B;
  int first[GV_PIPE_MAX_STAGES + 1];          /* stage i covers groups [first[i], first[i+1]) */
  int64_t nodes[GV_PIPE_MAX_STAGES], per_node[GV_PIPE_MAX_STAGES];
  gv_stage_cost cost[GV_PIPE_MAX_STAGES];
  int64_t inflight[GV_PIPE_MAX_STAGES];
  int64_t step_ns, max_ns, sum_ns;
  gv_schedule schedule; /* the problem's (galvc: the one chosen) */
  int vstages;          /* interleaved: chunks per device group (stage i on group i mod nstages / vstages); else 1 */
  int64_t sched_ns;     /* galvc: the schedule's part of the step (the timeline's makespan, or step_ns; 0: step_ns) */
  int64_t tl_ns;        /* galvc: the key it chose the plan by, the whole predicted step (gv_pipe_plan_full_ns:
                           sched_ns + the once-per-step part; plan.json predicted_step_ns) */
  int64_t solves;       /* calls of the cost callback (cache misses) */
  int64_t lookups;      /* stage costs the DP asked for */
  int64_t tmax_tried;
  double seconds;
  int64_t limit;        /* the memory limit per device the solve held each stage to (the report's runner-up ways) */
  int64_t min_need;     /* no partition fits: the smallest stage's memory with one microbatch in flight (-1: no stage
                           runs at all), its states and activations */
  int64_t min_state, min_act;
} gv_pipe_plan;

/* Solves p. Returns 0; 1 when no partition fits (one error line says the
 * smallest memory a stage needed); -1 after an error line (bad input). */
int gv_pipe_solve(const gv_pipe_problem *p, gv_pipe_plan *out);

/* The training (or inference) timeline of a plan under a schedule, the cost
 * model's: each stage runs its entries in galv_pipe_order's order
 * (runtime/galv_pipe_sched.h, the runtime's); F(i,j) starts once F(i-1,j)
 * has ended, B(i,j) once B(i+1,j) and F(i,j) have, W(i,j) once B(i,j) has;
 * a stage runs one entry at a time. Durations: the stage's time per
 * microbatch (cost.ns, forward + backward) split F : B = 1 : 2, and under
 * ZB-H1 F : B : W = 1 : 1 : 1 (the backward's input-gradient and
 * weight-gradient halves, as the zero-bubble paper assumes); inference: F =
 * ns. Per stage: busy time, bubble = makespan - busy, and the peak of
 * microbatches holding saved values (galv_pipe_peak) and of bytes with
 * cost.act_bytes per microbatch (ZB-H1: cost.zb_act_bytes for what W reads).
 * Interleaved (pl->vstages = V, P = S / V groups): each device group runs
 * its order (galv_pipe_order_group) one entry at a time over its V stages;
 * per group its busy time, bubble and peak (galv_pipe_peak_group). Other
 * schedules: group i is stage i. */
typedef struct {
  int stage, kind, mb; /* kind: 0 backward (B), 1 forward (F), 2 weight gradient (W) */
  int64_t start_ns, dur_ns;
} gv_pipe_event;
typedef struct {
  int nev;
  gv_pipe_event *ev; /* in placement order */
  int64_t makespan_ns;
  int64_t busy_ns[GV_PIPE_MAX_STAGES], bubble_ns[GV_PIPE_MAX_STAGES], peak_bytes[GV_PIPE_MAX_STAGES];
  int peak_mb[GV_PIPE_MAX_STAGES];
  int ngroups; /* device groups (interleaved: S / V; else S) */
  int64_t group_busy_ns[GV_PIPE_MAX_STAGES], group_bubble_ns[GV_PIPE_MAX_STAGES], group_peak_bytes[GV_PIPE_MAX_STAGES];
  int group_peak_mb[GV_PIPE_MAX_STAGES];
} gv_pipe_timeline;
/* 0; -1 after an error line (out of memory, a schedule that deadlocks) */
int gv_pipe_timeline_make(const gv_pipe_plan *pl, bool train, gv_schedule sched, gv_pipe_timeline *t);
void gv_pipe_timeline_free(gv_pipe_timeline *t);
const char *gv_schedule_name(gv_schedule s);
/* The microbatches a stage holds in flight, s positions from the end (s = 1: the last) of S stages, as the runtime
 * holds them (runtime/galv_pipe_sched.h): GPipe B, ZB-H1 min(B, S) on every stage, 1F1B min(B, s); one rule for the
 * stage DP's memory charge, the plan's inflight figures and a replayed plan's. (Interleaved: the stage DP's
 * group peak.) */
int64_t gv_pipe_inflight(gv_schedule sched, int S, int s, int B);
/* Stage i's saved bytes at its peak in plan pl (its way in cost[i]): inflight[i] x act_bytes, under ZB-H1
 * galv_pipe_peak over its order with act_bytes until B and zb_act_bytes until W (the runtime's measure). */
int64_t gv_pipe_plan_saved(const gv_pipe_plan *pl, int i);
/* Interleaved 1F1B (pl->vstages > 1): device group d's memory in plan pl, its stages' states (*states, when not NULL)
 * + the peak over the group's order of their saved bytes, send copies and batons (galv_pipe_group_held on the stages'
 * act_bytes, send_bytes, gsend_bytes): what the stage DP accepts a plan by (each group within the limit). Every copy
 * counts as released when proven received: the stage costs do not split their copies by receiver, so a value sent to
 * a stage further on (a skip) or with no gradient back, which the runtime keeps until the step's end, is under-counted
 * here; galvc's per-group figure at compile time and the runtime's split them (tools/galvc_pipeline.c il_fk, il_bk). */
int64_t gv_pipe_group_mem(const gv_pipe_plan *pl, int d, int64_t *states);

/* Per-group figures for the analytic stage cost below (from the IR: FLOPs
 * of the group's forward ops, parameter bytes, activation bytes kept for
 * backward, bytes leaving the group; all for the global batch). */
typedef struct {
  int64_t flops, param_bytes, act_bytes, out_bytes;
  int64_t act_credit; /* training: bytes of act_bytes a stage does not keep when group g - 1 is in it too
                         (values g - 1's backward recomputes; passes/stage_extract.c gv_pipe_group_stash) */
  int reach;            /* 1 + the last group that reads a value group g computes (any dtype); -1: none; 0: not known */
  int float_reach;      /* 1 + the last group that reads a floating-point value group g computes; -1: none reads one;
                         * 0: not known (counted as read further on). In training a range [first, last) before the
                         * last stage is a stage only when one of its groups reaches last or further (its seed: the
                         * gradients of the floating-point values it sends on) */
} gv_group_stats;
/* A parameter read by more than one layer group (a tied embedding, a merged
 * initializer): the groups that read it, ascending. A stage holding any of
 * them holds a copy (its bytes in the stage's memory) and, when a group
 * outside the stage reads it too, sums the copies' gradients with the other
 * holding stages once per step (runtime/pipe.c; gv_pipe_shared_ns). */
typedef struct {
  int64_t bytes;
  int arg; /* its argument index in the module it was found in */
  int ngroups;
  int *groups;
} gv_shared_param;
/* Bytes of the shared parameters that [first, last) reads but whose first
 * reader is before first (gv_group_stats counts a parameter in its first
 * reader's group), and the per-step time of summing the gradients of those
 * that groups outside the range read too: a point-to-point message of the
 * whole gradient to the lowest holding stage and the sum back
 * (2 x GV_COLL_P2P; across nodes as gv_pipe_transfer_ns decides). bytes
 * (NULL: each parameter's bytes) gives per shared parameter the bytes of
 * one message: its block where the holding stages sum it block by block
 * (runtime/pipe.c shared_block_sum: each rank its block, in parallel), half
 * with 16-bit gradient sums. */
int64_t gv_pipe_shared_extra_bytes(const gv_shared_param *sp, int n, int first, int last);
int64_t gv_pipe_shared_ns(const gv_cluster *c, const gv_shared_param *sp, int n, int first, int last, int64_t nodes,
                          int64_t per_node, bool training, const int64_t *bytes);

typedef struct {
  const gv_group_stats *g;
  int ngroups;
  int64_t batch;        /* global batch (rows): a microbatch is batch / B */
  bool training;        /* fwd + bwd (3x FLOPs) and 16 bytes per parameter word */
  int dtype_bytes;      /* 2 (bf16) or 4 */
  const gv_cluster *cluster;
  const gv_shared_param *shared; /* parameters read by several groups (NULL: none) */
  int nshared;
  int64_t mem_limit;    /* bytes per device (0: the cluster's): the fastest (dp, tp) whose memory fits, else the smallest */
  bool recompute;       /* training: --pipeline-recompute (else an earlier stage keeps a second copy of its weights) */
  int opt_states;       /* training: optimizer state per parameter element (AdamW 2) */
  int zero;             /* --pipeline-zero 1: the optimizer state split over dp; 2: the gradient sums too (ZeRO-2) */
  int zero_reduce;      /* ZeRO-2's reduce-scatter: -1 both forms offered, 0 once per step, 1 per microbatch */
  bool choose_recompute; /* training: offer both ways of an earlier stage (stash, recomputation) as gv_stage_cost.var */
  bool choose_zero;      /* training: offer both ZeRO-1 and not (stages of dp > 1) */
} gv_analytic_ctx;

/* A stage's time per microbatch on the links to its neighbours, as the
 * runtime moves the crossing values (the cross-mesh plan: each byte crosses
 * once, spread over the stage's k = nodes x per_node devices, then an
 * all-gather inside the receiving stage): per device one point-to-point
 * message of bytes / k per direction that carries bytes (alpha + bytes /
 * bandwidth, planner/cost.c GV_COLL_P2P; across nodes when the stage's
 * sub-mesh is whole nodes of a cluster of several) and the all-gather of
 * the received bytes over the k devices, received and sent one after the
 * other (training: the gradients go back the same way), plus `kernels`
 * launches of the cluster's launch_overhead_us. Integer ns. */
int64_t gv_pipe_transfer_ns(const gv_cluster *c, int64_t nodes, int64_t per_node, int64_t in_bytes, int64_t out_bytes,
                            int64_t kernels, bool training);
/* Whether a stage of k devices reaches its neighbours across nodes (whole nodes of a cluster of several): the
 * transfers' point-to-point messages on the inter-node link. */
bool gv_pipe_across(const gv_cluster *c, int64_t k);
/* The q = k / D ranks that scatter each dp block of a value kept split over dp between two stages of k devices and
 * the same mesh (docs/pipeline.md, "Scattered over tp, gathered in place"): where dp is the mesh's first axis alone
 * (dp_first), the value's elements (a gcd of several values' counts) divide over the k ranks and the stages' messages
 * cross nodes; else 1 (each rank sends its block). GALV_PIPE_SCATTER=off: 1. The compile (tools/galvc_pipeline.c) and
 * the stage cost decide it here. */
int64_t gv_pipe_scatter_q(const gv_cluster *c, int64_t k, int64_t D, bool dp_first, int64_t elems);
/* The same with in_rows / out_rows of those bytes kept split over the batch (docs/pipeline.md, "Cross-mesh
 * transfers": both stages hold dim 0 over dp ranks of one size D > 1): each rank sends / receives only its rows,
 * bytes / D in one message with its share of the rest, and only the rest is all-gathered after receiving. q > 1:
 * the q ranks holding each block (tp) scatter it, each sending a q-th, and the receivers all-gather the block
 * among their q (consecutive ranks: inside a node while q fits one; runtime/pipe_xfer.c, galv_pipe_xfer.scatter),
 * where the stage's messages cross nodes (gv_pipe_across; inside a node the gather costs what the scatter saves).
 * D <= 1 (or no rows): gv_pipe_transfer_ns. */
int64_t gv_pipe_transfer_split_ns(const gv_cluster *c, int64_t nodes, int64_t per_node, int64_t in_bytes, int64_t out_bytes,
                                  int64_t in_rows, int64_t out_rows, int64_t D, int64_t q, int64_t kernels, bool training);
/* A gv_stage_cost_fn: the best of the intra-op presets on the sub-mesh
 * (tp over 1, 2, 4 ... devices inside a node, dp over the rest; the
 * microbatch must split over dp): compute on the roofline peak, Megatron's
 * 2 all-reduces forward (+2 backward) of the group's output per group under
 * tp, gradient all-reduce over dp once per step; activations / tp; plus
 * gv_pipe_transfer_ns of the bytes leaving the group before the stage
 * (in) and the stage's last group (out) per microbatch; no kernel count:
 * no launch term. */
int gv_stage_cost_analytic(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *out);

/* Writes the plan as text ("stage 0: groups 0-11 on 2x8 (dp=2,tp=8): ...") */
void gv_pipe_plan_print(const gv_pipe_plan *pl, void *file);
/* The plan's once-per-step part: the slowest stage's once_ns (plan.json sync_ns): its gradient reduction after the
 * last microbatch, ZeRO's collectives (zero_ns), the optimizer update (opt_ns) and the shared parameters' sum. */
int64_t gv_pipe_plan_once_ns(const gv_pipe_plan *pl);
/* The whole predicted step: the schedule's part (sched_ns, else the stage DP's step_ns) + gv_pipe_plan_once_ns
 * (galvc's tl_ns, plan.json predicted_step_ns). */
int64_t gv_pipe_plan_full_ns(const gv_pipe_plan *pl);
/* The whole step's parts: the schedule's (sched), and of the once-per-step part the slowest stage's (*k) gradient
 * reduction with the shared parameters' sum (sync), ZeRO's collectives (zero) and the optimizer update (upd);
 * interleaved: the slowest device group's (its V stages' summed; k its first stage);
 * sched + sync + zero + upd = gv_pipe_plan_full_ns. */
typedef struct {
  int64_t sched, sync, zero, upd;
  int k;
} gv_pipe_step_parts;
gv_pipe_step_parts gv_pipe_plan_parts(const gv_pipe_plan *pl);

#endif
