/* plan_sharding.h — the intra-operator planner (issue 6, docs/planner.md).
 *
 * `plan-sharding` runs before propagate-sharding when the driver asks for
 * --strategy auto (galvc's default with --gpus > 1) or --plan FILE. It
 * chooses the mesh shape, which mesh axes split the batch (data parallel),
 * which axis each layer uses for Megatron tensor parallelism, whether the
 * embedding / head are vocab-parallel, and per layer its ZeRO stage (0-3:
 * none, optimizer state, + gradients, + parameters sharded), minimising the predicted step time of
 * the cost model (planner/cost.h) within the memory per device. Its result
 * is a set of pinned argument shardings that propagate-sharding and
 * spmd-partition then realise, so the plan runs as chosen. */
#ifndef GALV_PLAN_SHARDING_H
#define GALV_PLAN_SHARDING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../ir/ir.h"
#include "../planner/cluster.h"

#define GV_PLAN_MAX_UNITS 1024

/* One plan: a mesh and the choices the planner makes on it. Unit 0 is the
 * "outer" part (embedding, final norm, head, loss); units 1..L the layers
 * (the repeated blocks of the forward program, found by structure:
 * passes/layer_units.h). */
typedef struct {
  int naxes;
  int64_t size[GV_MAX_MESH_AXES];
  char axis[GV_MAX_MESH_AXES][16];
  unsigned dmask;     /* axes splitting the batch (data parallel) */
  int t_layer;        /* the layers' tensor-parallel axis, -1 none */
  int t_outer;        /* the embedding / head's vocab-parallel axis, -1 none */
  int nunits;         /* 1 + layers */
  uint8_t zero[GV_PLAN_MAX_UNITS]; /* per unit: its ZeRO stage 0-3 over the dmask axes (docs/sharding.md) */
  uint8_t sp[GV_PLAN_MAX_UNITS];   /* per unit: sequence parallelism over t_layer (searched when t_layer is set; plan.json / --plan) */
  /* per layer unit: its tensor-parallel axis when not t_layer (plan.json's units[].tp_axis, read by --plan;
   * searched on the full path: plan_sharding.c tp_alternatives): 0 = t_layer, a + 1 = axis a, -1 = none (the unit's weights whole, its activations as the
   * neighbours leave them; propagation reshards between units of different axes, docs/planner.md) */
  int8_t tp_unit[GV_PLAN_MAX_UNITS];
} gv_plan;

/* What a plan costs, from its realised local program (fuse + memory-plan
 * applied), in integer ns and bytes per device. */
typedef struct {
  int64_t step_ns, compute_ns, comm_ns;
  int64_t slowdown_ns, exposed_ns;      /* step_ns = compute + slowdown + exposed communication (cost.h gv_cost_timeline) */
  int64_t mem_params, mem_grads, mem_optimizer, mem_activations, mem_total;
  int64_t coll_count[4], coll_bytes[4]; /* all_reduce, all_gather, reduce_scatter, all_to_all */
  int64_t kernels;                      /* ops of the realised program that take time (a fused op is one) */
  double plan_seconds;                  /* search time */
  int64_t candidates;                   /* plans realised */
  /* --profile: the units whose compute time (and kept activations) came from the profile, and the figures
   * they replaced (docs/planner.md, "Profiles") */
  int prof_units, prof_mem_units;
  int64_t prof_ns, prof_analytic_ns;    /* compute of those units: the profile's, the cost model's */
  int64_t prof_act, prof_analytic_act;  /* activations kept for backward by those units: the profile's, the memory plan's */
  int64_t prof_b, prof_tp;              /* the samples per microbatch per device and tp degree they were looked up at */
  int64_t bucket_bytes;                 /* the gradient bucket cap the realisation used (bucket.c; --bucket-mb auto: its choice), 0 none */
  int64_t mem_data;                     /* the data inputs' bytes within mem_activations (the whole batch: a stand-in's
                                         * count_as / 2 times its own); galvc scales the rest of the activations with
                                         * the microbatch size (docs/planner.md, "One planner run per recomputation") */
  int64_t mem_full;                     /* a reduced program's (plan_sharding.c, "reduced modules"): the memory per
                                         * device of the full program it stands for, estimated from its memory
                                         * plan; 0: none */
  int64_t mem_full_layer;               /* the same: what one more middle layer adds to it */
  bool bounded;                         /* gv_plan_intra returned 1 having left combinations out by
                                         * gv_plan_opts.stage_incumbent_ns: no plan both fits and runs under it */
  bool memory_bound;                    /* gv_plan_intra returned 0 and weighed a candidate predicted faster than its
                                         * choice that was over the memory limit */
} gv_plan_cost;

typedef struct {
  bool active;               /* run the search (or apply plan_in) */
  const gv_cluster *cluster; /* required when active */
  int64_t devices;           /* --gpus */
  int64_t memory_limit;      /* bytes per device; 0: the cluster's memory */
  bool mesh_fixed;           /* keep the module's mesh shape and names (--mesh) */
  const char *plan_in;       /* --plan FILE: reuse a saved plan */
  const char *plan_out;      /* plan.json path; NULL: not written */
  bool exhaustive;           /* realise every plan of the space (tests: the exact optimum) */
  bool quiet;                /* no report on stderr */
  bool explain;              /* keep the chosen plan for gv_plan_explain (galvc, unless -q) */
  bool probe;                /* no plan fits the memory: return 1 without an error line (galvc tries more microbatches) */
  unsigned zero_stages;      /* bit s: the search may give a unit ZeRO stage s (1-3) besides none; 0: 2 and 3 */
  const struct gv_profile *profile; /* --profile: measured per-layer figures replace the analytic ones (planner/profile.h) */
  /* The microbatch count priced from a stand-in (galvc's count search, docs/planner.md "Microbatch counts priced"):
   * the program accumulates 2 microbatches of batch / count_as samples, and every candidate is priced for count_as
   * of them (its second microbatch's ops repeated, the data inputs at the whole batch); 0: as the program is. */
  int64_t count_as;
  /* galvc's default search: the fastest step realised so far of a plan that fits (0: none). A combination of the
   * reduced search whose compute (or tp communication) bound, with and without sp, is at or above it by 1 % is
   * left out unrealised: none of its plans could be chosen over that one (docs/planner.md, "Planning time: counts, long
   * programs and the fastest step so far") */
  int64_t incumbent_ns;
  /* gv_plan_intra (a pipeline stage's program): the same bound on the stage program's step, from the pipeline
   * candidate's step to beat (galvc_pipeline.c: a stage's B microbatches run one after another, so a stage slower
   * than (step to beat - the stages before it) / B cannot be in a faster pipeline); 0: none */
  int64_t stage_incumbent_ns;
  const gv_plan *plan_fixed; /* a plan applied as given (like plan_in; galvc compiles the stand-in's choice at its count,
                              * or prices it with count_as: recomputation on some layers searched on the stand-in) */
  /* gv_plan_intra on a fixed mesh shape with the roles fixed (a pipeline stage compiled with --mesh and --strategy
   * dp,tp: the preset): the batch split over axis intra_dp only (-1: none), the layers' tp over intra_tp only (-1:
   * none), the outer unit over intra_tp or none, no ZeRO */
  bool intra_roles;
  int intra_dp, intra_tp;
  /* with intra_roles: sequence parallelism over the layers' tp axis on every op of each realisation (the stage preset
   * dp,tp,sp, as propagate-sharding compiles it), not searched per unit */
  bool intra_sp;
  /* gv_plan_intra on a pipeline stage: the samples per microbatch (every data input's dim 0 in the whole model; 0:
   * unknown). A stage input whose dim 0 it does not divide carries no batch (a value the earlier stage made from
   * constants alone, e.g. GPT's causal mask of seq x seq): no batch axis splits it, it stays whole */
  int64_t intra_batch;
  /* --profile on a pipeline stage (gv_stage_cost_intra): the share of the model's outer unit (embedding, head, loss)
   * the stage holds, its ops' forward FLOPs over the whole outer unit's; the profile's outer figure (time and kept
   * activations) is charged times it. 0: the module is the whole model (the whole figure); < 0: the stage's outer ops
   * compute nothing the figure measured (the embedding's lookup alone): their analytic figures stand */
  double profile_outer_share;
  /* galvc: why its default search plans no pipelines here though it would otherwise (NULL: it does, or would not
   * anyway); the no-plan error line then names --pipeline-stages */
  const char *no_pipe_why;
  /* galvc (a stand-in priced while a pipeline's step bounds the count search): a search whose choice is predicted on
   * the reduced programs above this step returns that prediction, not realised in full (0: every choice realised) */
  int64_t over_ns;
} gv_plan_options;
extern gv_plan_options gv_plan_opts;

int gv_pass_plan_sharding(gv_module *m);

/* The report's runner-up per layer group (docs/planner.md, "Report and plan.json"): for the plan the last
 * gv_pass_plan_sharding with gv_plan_opts.explain chose, each group of units the report prints on one line is
 * realised again with that group's choice changed (another ZeRO stage, sequence parallelism on or off, the layers'
 * tp axis or none: one change at a time); the fastest that fits is named with its step, memory and why it lost.
 * galvc calls it once it compiles that plan. Prints to f; 0, or -1 on an internal error. */
int gv_plan_explain(FILE *f);

/* The search's choice polished (docs/planner.md, "The choice polished"): the plan the last gv_pass_plan_sharding
 * with gv_plan_opts.explain chose, realised again with one layer group's choice changed at a time (the changes
 * gv_plan_explain weighs); where some change is faster and fits, the fastest such is taken and the groups are
 * weighed again from it, POLISH_ROUNDS times at most. When a later run with gv_plan_opts.explain and count_as priced
 * the same plan on a stand-in of that program's count (galvc's polish priced from 2 microbatches, docs/planner.md
 * "The polish priced from two microbatches"), each change is priced on the stand-in and only those priced faster
 * within the limit are realised in full, fastest priced first (POLISH_VERIFY per round); gv_plan_explain then explains
 * the plan compiled on the stand-in. Returns 1 with *out the polished plan (f, when given, gets one line per change
 * taken), 0 when no change is faster, -1 on an internal error. galvc compiles *out in place of the choice. */
int gv_plan_polish(gv_plan *out, FILE *f);

/* What the last gv_pass_plan_sharding that returned 0 chose: the chosen
 * plan's realised cost, and memory_bound: a candidate predicted faster than
 * it was over the memory limit (so recomputation or a different microbatch
 * count may buy a faster plan: galvc's recomputation search reads it). */
typedef struct {
  gv_plan_cost cost;
  bool memory_bound;
  /* a probe that found no plan (returned 1): the smallest memory any candidate needs and, when min_terms, that
   * candidate's realised terms (galvc's default search names the binding one) */
  int64_t min_mem;
  gv_plan_cost min_cost;
  bool min_terms;
  bool bounded; /* a probe that found no plan because every combination was bounded above incumbent_ns (returned 1) */
  /* a probe that found no plan: the least need of any candidate it weighed, predicted or realised (min_mem's
   * prediction where its full realisation needed more); galvc skips the counts it shows cannot fit */
  int64_t min_need;
  gv_plan plan;  /* the plan chosen (returned 0) */
  int64_t limit; /* the memory limit the search held it to (bytes per device) */
  int layers;    /* the model's repeated layers (units but the outer one), found by structure */
} gv_plan_outcome;
extern gv_plan_outcome gv_plan_last;

/* The planner as a function (for the pipeline stage DP: call it per stage
 * with that stage's module). Searches plans of `m` (a global program after
 * dce / the training passes, before propagate-sharding) on `devices`
 * devices (mesh_shape/naxes: a fixed mesh shape, or NULL/0 to search the
 * shapes), for cluster c within memory_limit bytes per device (0: the
 * cluster's). Fills *plan and *cost; m is not changed. Returns 0, 1 when
 * no plan fits (cost->mem_total = the smallest memory any plan needs), or
 * -1 after an error line. */
int gv_plan_intra(const gv_module *m, int64_t devices, const int64_t *mesh_shape, int naxes, const gv_cluster *c,
                  int64_t memory_limit, gv_plan *plan, gv_plan_cost *cost);
/* The mesh / strategy combinations gv_plan_intra's searches left out by gv_plan_opts.stage_incumbent_ns, in all
 * (galvc's pipeline candidates report theirs) */
extern int64_t gv_plan_intra_left_out;
/* Reads a plan.json (written by the pass) for a model of nunits planning
 * units (the outer unit + the layers): every field strict and in range.
 * Returns 0, or -1 after one error line naming the file (and line). */
int gv_plan_read(const char *path, gv_plan *plan, int nunits);
/* The gradient accumulation a training plan.json records ("microbatches"
 * and "zero_reduce", written when the plan accumulates gradients; 1 and
 * once when absent). Returns 0, or -1 after one error line naming the file. */
int gv_plan_read_microbatches(const char *path, int64_t *B, bool *each);
/* The recomputation a training plan.json records ("recompute": "none",
 * "selective" or "all"; written for training plans). *mode = NULL when the
 * field is absent. Returns 0, or -1 after one error line naming the file. */
int gv_plan_read_recompute(const char *path, const char **mode);
/* The numerics a plan.json records (both writers: the planner's and the
 * pipeline's): "precision" (fp32 | bf16 | fp16: --precision), for training
 * "grad_dtype" (--grad-dtype) and "clip_grad_norm" (0: off). --plan compiles
 * the same: a field absent from the file reads as NULL / -1 (no constraint). */
typedef struct {
  const char *precision, *grad_dtype; /* "fp32" | "bf16" | "fp16", or NULL */
  double clip;                        /* >= 0, or -1 when absent */
} gv_plan_numerics;
void gv_plan_write_numerics(FILE *f, bool train); /* the fields, each line ending ",\n" (from gv_precision_opts, gv_train_opts) */
int gv_plan_read_numerics(const char *path, gv_plan_numerics *n); /* 0, or -1 after one error line naming the file */
/* The dropout seed a training plan.json records ("seed", galvc --seed);
 * *found = false when absent. Returns 0, or -1 after one error line. */
int gv_plan_read_seed(const char *path, uint64_t *seed, bool *found);
/* The blocks plan splits each named parameter of m into (its tp split and ZeRO-3's, as gv_plan_apply pins them;
 * 1: whole; a name m lacks: 1). Returns 0, or -1 after an error line. */
int gv_plan_arg_blocks(const gv_module *m, const gv_plan *plan, const gv_cluster *c, const char *const *names, int n,
                       int64_t *blocks);
/* Pins plan's shardings onto m (its mesh becomes the plan's mesh). */
int gv_plan_apply(gv_module *m, const gv_plan *plan);
/* plan's sequence-parallel units (plan->sp) as propagate-sharding's region on m's units: sets gv_shard_opts.sp_axis,
 * sp_op and sp_arg (their storage kept until the next call), as the search's realisations set them; nothing when the
 * plan has no sp unit. A pipeline stage compiled from the planner's own plan (gv_plan_intra) calls it after
 * gv_plan_apply and restores gv_shard_opts' three fields after propagate-sharding. Returns 0, or -1 after an error line. */
int gv_plan_sp_region(const gv_module *m, const gv_plan *plan);
/* --profile: checks gv_plan_opts.profile against m (a whole model: its
 * layer count, hidden size, sequence length, vocabulary). Returns 0 (also
 * without a profile), or -1 after one error line naming the file and field. */
int gv_plan_profile_check(const gv_module *m);
/* --report-cost with --profile: m is the compiled (local) program of the
 * plan the pass chose; prints per profiled unit the analytic and the
 * profile's compute time and the step the profile predicts. */
void gv_plan_profile_report(const gv_module *m, FILE *f);
/* Describes unit u's strategy ("dp+tp(tp) zero"). */
void gv_plan_unit_str(const gv_plan *p, int u, char *buf, size_t n);

#endif
