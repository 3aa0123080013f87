/* passes.h — the pass registry. One pass per file in passes/, one entry
 * function each: int gv_pass_NAME(gv_module *m), returning 0 or -1 after
 * reporting one error line. The driver runs them as a straight list. */
#ifndef GALV_PASSES_H
#define GALV_PASSES_H

#include "../ir/ir.h"

typedef struct {
  const char *name;               /* as on the command line: shape-infer */
  int (*run)(gv_module *m);
  const char *help;               /* one line for --help */
} gv_pass;

extern const gv_pass gv_pass_table[];
extern const int gv_pass_count;
const gv_pass *gv_pass_lookup(const char *name);

int gv_pass_shape_infer(gv_module *m);    /* passes/shape_infer.c */
int gv_pass_compute_f32(gv_module *m);    /* passes/compute_f32.c */
int gv_pass_fold_constants(gv_module *m); /* passes/fold_constants.c */
int gv_pass_canonicalize(gv_module *m);   /* passes/canonicalize.c */
int gv_pass_dce(gv_module *m);            /* passes/dce.c */
int gv_pass_master_weights(gv_module *m); /* passes/master_weights.c */
int gv_pass_loss(gv_module *m);           /* passes/loss.c */
int gv_pass_fuse_attention(gv_module *m); /* passes/fuse_attention.c */
int gv_pass_autodiff(gv_module *m);       /* passes/autodiff.c */
int gv_pass_optimizer(gv_module *m);      /* passes/optimizer.c */
int gv_pass_recompute(gv_module *m);      /* passes/recompute.c */
int gv_pass_accumulate(gv_module *m);     /* passes/accumulate.c */
int gv_pass_regather(gv_module *m);       /* passes/regather.c */

/* Training options, set by the drivers (galvc --train, galv-eval --train,
 * galv-opt) before running loss / optimizer; defaults in passes/registry.c
 * (torch's AdamW defaults, cross-entropy on an input named "labels"). */
typedef struct {
  const char *loss;       /* "cross_entropy" (labels: i64, logits' shape without the last dim) | "mse" */
  const char *labels;     /* name of the new labels / target input */
  int64_t ignore_index;   /* cross_entropy rows with this label do not count (-100) */
  const char *optimizer;  /* "adamw" | "sgd" */
  double lr, weight_decay, beta1, beta2, eps, momentum;
  double clip_grad_norm;  /* > 0: gradients scaled to this global 2-norm at most (torch's clip_grad_norm_); 0: off */
  const char *recompute;  /* recomputed in backward: "none" | "all" | LIST (layers) | "selective" | "selective:LIST" (attention cores; recompute.c) */
  bool unfused_attention; /* --fused-attention off: fuse-attention leaves the chains (docs/fused-attention.md) */
  uint64_t seed;          /* galvc --seed: the dropout masks' seed (recorded in plan.json; docs/training.md "Dropout") */
  int64_t microbatches;   /* > 1: gradients accumulated over this many microbatches in one program (accumulate.c) */
  bool zero_reduce_each;  /* ZeRO-3 with microbatches: reduce-scatter every microbatch's gradient (propagate-sharding; the
                           * default); false: --zero-reduce once */
  /* loss scaling (16-bit training; autodiff scales the seed, the optimizer unscales, checks and skips):
   * 0 off, 1 static (scale fixed), 2 dynamic (torch's GradScaler: state opt.loss_scale, opt.growth_tracker) */
  int loss_scale_mode;
  double loss_scale;      /* static: the scale; dynamic: the initial scale (torch: 65536) */
  double scale_growth, scale_backoff; /* dynamic: x growth after scale_interval good steps, x backoff on overflow */
  int64_t scale_interval;
} gv_train_options;
extern gv_train_options gv_train_opts;
/* Sharding (docs/sharding.md): options set by the drivers (galvc --strategy,
 * --sharding; galv-opt --strategy, --sharding). */
typedef struct {
  const char *strategy;   /* "dp" | "tp" | "zero" | "dp,tp" | "tp,sp" | "dp,tp,sp"; NULL: only pinned values */
  const char *file;       /* sharding file: NAME [{"dp"}, {}] per line; NULL: none */
  bool quiet;             /* spmd-partition: no collective table on stderr */
  bool no_overlap;        /* galvc --overlap off: the overlap pass leaves every collective where spmd-partition put it */
  int64_t bucket_bytes;   /* galvc --bucket-mb: gradient reductions coalesced into buckets of at most this many bytes (bucket.c); 0: one call
                             each; GV_BUCKET_AUTO (--bucket-mb auto): the bucket pass prices a few caps on gv_plan_opts.cluster and keeps the
                             fastest (docs/planner.md, "Gradient buckets") */
  int64_t bucket_chosen;  /* set by the bucket pass: the cap it applied (auto: the one it chose; 0: none) */
  int64_t bucket_planned; /* with GV_BUCKET_AUTO: the cap the planner chose with the plan (or plan.json's bucket_mb), applied as
                             given; -1: none (the pass chooses) */
  /* sequence parallelism chosen by a plan (plan.json's per-unit "sp"):
   * over axis sp_axis (NULL: only the preset's / a file's), the region
   * restricted to the ops sp_op accepts (NULL: all) */
  const char *sp_axis;
  bool (*sp_op)(const gv_op *op, void *arg);
  void *sp_arg;
} gv_shard_options;
extern gv_shard_options gv_shard_opts;
#define GV_BUCKET_AUTO ((int64_t)-1)
int gv_pass_propagate_sharding(gv_module *m); /* passes/propagate_sharding.c */
int gv_pass_spmd_partition(gv_module *m);     /* passes/spmd_partition.c */
int gv_pass_fuse(gv_module *m);           /* passes/fuse.c */
int gv_pass_overlap(gv_module *m);        /* passes/overlap.c */
int gv_pass_bucket(gv_module *m);         /* passes/bucket.c */
int gv_pass_memory_plan(gv_module *m);    /* passes/memory_plan.c */
/* An observer of the memory plan (the planner's reduced-program memory
 * estimate, plan_sharding.c): the op at each point of the schedule, and per
 * arena value (a root, not a view or an external) its bytes, its live range
 * and whether its end is an in-flight call's completion (the overlap
 * window's wait, or the first read of the call's result). NULL: none. */
typedef struct gv_mem_observer {
  void (*point)(void *ud, int point, const gv_op *op);
  void (*root)(void *ud, int start, int end, int64_t bytes, bool in_flight_end);
  void *ud;
} gv_mem_observer;
extern const gv_mem_observer *gv_memory_plan_observer;

/* Storage precision (docs/cuda-target.md, "Storage precision"): set by the
 * drivers (galvc --precision, --grad-dtype; galv-opt --precision=) before
 * the storage pass; defined in passes/storage.c. */
typedef struct {
  gv_dtype storage;       /* f32: every value at its type; bf16 / f16: 16-bit storage (--precision) */
  gv_dtype grad;          /* training under 16-bit storage: the parameter gradients' storage, f32 or = storage */
  /* a pipeline stage's entry: the stash slots ("stash.N", "wstash.N") its writing entry stores fp32 (galvc sets
   * them between the entries; ir/storage.h gv_func_stage_kind) */
  const char *const *stage_wide;
  int nstage_wide;
  gv_dtype reduce;        /* the dtype gradient reductions move (--reduce-dtype): f32, = storage, or unknown: = grad */
} gv_precision_options;
extern gv_precision_options gv_precision_opts;
int gv_pass_storage(gv_module *m);        /* passes/storage.c */
/* Appends to wide[] (n so far, at most cap) the names of m's stash results ("stash.N", "wstash.N") stored fp32
 * after its storage pass: the entry that reads them takes them so (stage_wide). Returns the new count. */
int gv_stash_wide(const gv_module *m, const char **wide, int n, int cap);

/* Pipeline (inter-operator) parallelism, docs/pipeline.md: options set by the
 * drivers (galvc --layers, galv-opt --layers=K); defined in
 * passes/cluster_layers.c. */
typedef struct {
  int layers;           /* cluster-layers: number of layer groups K (0: pass is a no-op) */
  bool blocks;          /* --layers blocks: a group per repeated block found by structure (layer_units.h), the
                         * parts before the first and after the last in the first and last groups; K = the blocks */
  double delta;         /* FLOPs balance: each group <= max((1+delta)*total/K, total/K + largest op) */
  bool quiet;           /* no summary line on stderr */
  const char *stash;    /* stage-stash: the entry the module becomes, "forward" | "backward" */
  /* ZeRO-2 inside a training stage (galvc --pipeline-zero 2): propagate-sharding leaves each parameter gradient
   * result ("grad:P") a pending sum over the mesh axes that split no parameter (the runtime reduce-scatters the
   * step's sums over them), except the parameters named in zero2_whole (held by several stages: summed whole).
   * zero2_whole also names, with or without ZeRO-2, the gradient results a training stage returns whole; the
   * others are returned split as their parameters (propagate-sharding, runtime/pipe.c) */
  bool zero2;
  /* no ZeRO: a training stage over more than one rank leaves its gradients unreduced as zero2 does and the runtime
   * all-reduces the step's sums once (galv_pipe_zero 4); set by galvc (either target; --reduce-dtype the sums'),
   * read by galvc's stage compile and the stage cost. false: the program all-reduces each microbatch's gradients */
  bool grad_once;
  const char *const *zero2_whole;
  int nzero2_whole;
  /* with zero2 and no ZeRO (grad_once): the gradients of the parameters in zero2_whole are left pending over the same
   * ranks too, whole in their dims; runtime/pipe.c all-reduces their step sums over the ranks once, then sums them
   * across the stages (galv_pipe_zero 4). false: the program reduces them every microbatch */
  bool zero2_shared;
  /* of the parameters in zero2_whole, those whose gradient is returned split as the parameter nevertheless (every
   * stage holding it splits it alike: runtime/pipe.c sums it across the stages block by block, galvc's
   * galv_pipe_shared_split); left pending or reduced as zero2_whole says (docs/pipeline.md, "Shared parameters") */
  const char *const *shared_split;
  int nshared_split;
  /* training pipelines (set by galvc): a floating-point value read past the next stage is relayed through the stages
   * between (gv_stage_extract), so that every schedule's grouped transfers are between neighbours */
  bool relay;
} gv_pipe_options;
extern gv_pipe_options gv_pipe_opts;
/* The layer groups cluster-layers found (arrays in the module arena). */
typedef struct {
  int ngroups, nops;
  int64_t *flops;       /* per group */
  int *nops_per;        /* per group */
  int64_t *in_bytes;    /* per group: bytes of values entering it from earlier groups */
  uint64_t *sig;        /* per group: block signature */
  int *block;           /* per group: first group with the same signature */
  int64_t total_flops, bound;
  int moved;            /* ops the acyclicity repair moved to a later group */
  bool metis, recut;    /* METIS ran; its repaired parts were re-cut to meet count / balance */
  bool blocks;          /* the groups are the blocks found by structure (--layers blocks) */
} gv_layer_groups;
/* Clusters m's body into k groups (attrs layer, layer_block; body reordered
 * group by group). Returns 0, or -1 after one error line. */
/* k groups; with gv_pipe_opts.blocks a group per block found by structure (out->ngroups; k is not read) */
int gv_cluster_layers(gv_module *m, int k, gv_layer_groups *out);
/* The ops cluster-layers groups (not the constants, nor what reads only constants and parameters): at most that
 * many groups (uses the ops' id scratch). */
int gv_cluster_layers_vertices(gv_module *m);
int gv_pass_cluster_layers(gv_module *m); /* passes/cluster_layers.c */
int gv_pass_stage_split(gv_module *m);    /* passes/stage_split.c */
int gv_pass_stage_stash(gv_module *m);    /* passes/stage_stash.c: an earlier stage's forward / backward entry */

#endif
