/* stage_cost.h — pipeline stage costs from the intra-operator planner
 * (passes/stage_cost.c, docs/pipeline.md). */
#ifndef GALV_STAGE_COST_H
#define GALV_STAGE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "../planner/pipeline.h"
#include "layer_units.h"

/* Bytes per microbatch of a stage program: received "pp." values (in), sent
 * ones (out), and every non-parameter input (saved: what the training
 * runtime keeps per microbatch in flight). */
typedef struct {
  int64_t in, out, saved;
  int64_t in_rows, out_rows; /* of in / out: the values whose dim 0 is the microbatch (kept split over dp, xsplit) */
  /* training, as runtime/pipe.c holds them (crossing values 16-bit under --precision, ir/storage.h): recv, the
   * forward's inputs' buffer (every non-parameter input, 64-byte aligned each: the received "pp." values and the
   * data slices; a recomputing stage's saved inputs per microbatch); send, the values sent per microbatch, each once per later layer group reading it (the runtime's
   * receiving stages, at most: one send copy and one gradient buffer "gin:pp.X" each); gsend, the gradients of the
   * received values sent back (in storage bytes); *_rows: of them, the values whose dim 0 is the microbatch */
  int64_t recv, recv_rows, send, send_rows, gsend, gsend_rows;
  int64_t gkeep, gkeep_rows; /* the last stage's input gradients kept per microbatch: gsend's values 64-byte aligned each */
  int64_t rows_gcd; /* the gcd of the element counts of in's and out's values whose dim 0 is the microbatch (0: none):
                     * a block of each divides q ways over the ranks holding it when rows_gcd % (D q) == 0 */
} gv_stage_bytes;

/* The stage program of layer groups [first, last) of base (imported at the
 * microbatch size, after cluster-layers), as galvc builds it: extracted,
 * and in training the combined forward + backward function. base is not
 * changed. NULL after an error line. */
gv_module *gv_stage_module(const gv_module *base, int first, int last, int ngroups, bool training, gv_stage_bytes *bytes);

/* Whether groups [first, last) of base define a value (other than a
 * constant) that a later group or the function's result uses: a stage
 * needs one (gv_stage_extract refuses a stage without outputs). */
bool gv_stage_range_sends(const gv_module *base, int first, int last);
/* whether a later layer reads a floating-point value the range computes (a training stage's seed needs one) */
bool gv_stage_range_sends_float(const gv_module *base, int first, int last);

struct gv_stage_cache;
typedef struct {
  const gv_module *base;      /* imported at batch / B, after cluster-layers */
  int ngroups, B;
  bool training;
  bool recompute;             /* training: the runtime recomputes (galvc --pipeline-recompute, both targets):
                               * an earlier stage runs its combined program twice and saves its inputs; else it
                               * runs its forward and backward entries once each and saves its stash */
  const gv_cluster *cluster;
  const gv_shared_param *shared; /* parameters read by several groups (their gradient sum: once_ns) */
  int nshared;
  int64_t mem_limit;          /* bytes per device, 0: the cluster's */
  int opt_states;             /* training: optimizer state per trained parameter element (AdamW 2, SGD with
                               * momentum 1, else 0), each the parameter's bytes */
  int zero;                   /* galvc --pipeline-zero 1: the optimizer state split over the plan's dp ranks; 2: the sums too */
  bool choose_recompute;      /* training: an earlier stage offers both ways, stash and recomputation (gv_stage_cost.var) */
  int zero_reduce;            /* ZeRO-2 (given or offered): -1 both forms as ways, 0 the step's sums reduce-scattered once
                               * (GV_ZERO_2), 1 each microbatch's (GV_ZERO_2_EACH) */
  bool choose_zero;           /* training: no ZeRO, ZeRO-1 and ZeRO-2 offered as ways (a plan with dp ranks and no ZeRO
                               * unit; ZeRO-2 its program planned again with the gradients unreduced) */
  bool zb;                    /* training under ZB-H1 (given, or compared by --schedule auto): price its
                               * weight-gradient entry (gv_stage_cost.zb_bytes, zb_act_bytes) from the stage's
                               * entries compiled with the W split, and the stash on a device from them */
  bool choose_layer_rc;       /* training: per-layer recomputation inside the stage program offered as ways: none,
                               * selective, all (each its own realised and planned program); else gv_train_opts.recompute */
  int mesh_naxes;             /* --mesh: a stage of mesh_shape's product of devices is planned on that shape (the
                               * mesh galvc compiles it on; the planner chooses the axes' roles), 0: on any mesh */
  int64_t mesh_shape[3];
  bool one_axis;              /* no --mesh, a one-axis preset (--strategy dp / tp): each stage of k > 1 devices is
                               * planned on one axis of k with the preset's roles (mesh_dp / mesh_tp 0 or -1) */
  bool mesh_roles;            /* with mesh_naxes: the roles fixed too (--strategy dp,tp: the batch over mesh_dp, the
                               * layers' tp over mesh_tp, -1: none; gv_plan_opts.intra_roles) */
  int mesh_dp, mesh_tp;
  bool sp;                    /* with mesh_roles: --strategy dp,tp,sp, sequence parallelism over mesh_tp on every op
                               * (gv_plan_opts.intra_sp) */
  bool xsplit;                /* the crossing values whose dim 0 is the microbatch are kept split over the dp axis
                               * (mesh_roles with mesh_dp; galvc compiles them so when every stage has a dp axis of one
                               * size): the stage program returns its rows ("pp.X", "grad:pp.X": the return's
                               * batch_split), and the transfers move bytes / D per rank, no all-gather */
  int64_t plans;              /* gv_plan_intra calls */
  double seconds;             /* spent in them (extraction included) */
  struct gv_stage_cache *cache;
  int ncache, capcache;
  /* --profile (gv_stage_units_set): per group the forward FLOPs of its ops in no layer found by structure (the outer
   * unit), and per layer its first and last group: a stage's share of the profile's outer figure
   * (gv_plan_opts.profile_outer_share) and the ranges that hold their layers whole */
  double *outer_fl;
  double outer_total;
  int nl, *lay_lo, *lay_hi;
  bool units_ok;
} gv_intra_stage_ctx;

/* The samples per microbatch of a pipeline's stage programs: dim 0 of the first data input of the whole model
 * imported at the microbatch size (galvc checks every data input has that dim 0); 0 when it has none. The stage
 * planner's gv_plan_opts.intra_batch. */
int64_t gv_stage_microbatch(const gv_module *base);

/* A gv_stage_cost_fn (ctx: gv_intra_stage_ctx): the stage program planned by
 * gv_plan_intra on the sub-mesh, plus gv_pipe_transfer_ns. Infeasible when
 * no plan fits or applies (or B is not ctx's). */
int gv_stage_cost_intra(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *out);
void gv_intra_stage_ctx_free(gv_intra_stage_ctx *x);
/* --profile: x's maps of the outer unit's FLOPs per group and each layer's groups, from the units lu found on the
 * model before its ops were grouped (lu's locations; the grouping reorders the ops, and the units found on the
 * grouped program can differ). Returns 0, or -1 after an error line. */
int gv_stage_units_set(gv_intra_stage_ctx *x, const gv_layer_units *lu);

#endif
