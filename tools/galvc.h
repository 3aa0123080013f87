/* galvc.h — what the compiler driver's two files share: galvc.c (options,
 * the pass list, one program) and galvc_pipeline.c (--pipeline-stages: the
 * stage DP, one program per stage, the launcher). */
#ifndef GALVC_H
#define GALVC_H

#include <stdbool.h>
#include <stdint.h>

#include "../codegen/codegen.h"
#include "../frontend/onnx_import.h"
#include "../ir/ir.h"
#include "../planner/cost.h"
#include "../planner/pipeline.h"
#include "../runtime/galv_file.h"

/* With --train, inserted right after dce: the training step (galvc.c). */
enum { NTRAIN = 7 };
extern const char *const train_pipeline[NTRAIN];

int count_ops(const gv_block *b);
double now(void); /* seconds, monotonic */
double cpu_now(void); /* this process's CPU seconds */
int ensure_dir(const char *dir);
bool is_dir_arg(const char *out);
/* The target's program (CPU: program.c; CUDA: program.cu), weights.bin, Makefile, runtime/. */
int emit_program(gv_module *m, const char *dir, int quiet, const gv_cuda_options *cuda, const char *entry);
extern int64_t galvc_emit_const_base; /* emit_program's gv_emit_options.const_base (0: none) */
/* `make -C DIR` (its output on stderr). */
int build_program(const char *dir, int quiet);
/* Output files are replaced atomically (runtime/galv_file.h): open returns
 * the temporary file (NULL after reporting); close renames it over its path,
 * or, given an earlier failure rc, removes it and returns rc. */
FILE *galvc_open_out(galv_wfile *w, const char *path, int exec);
int galvc_close_out(galv_wfile *w, int rc);

/* ---- --pipeline-stages S (docs/pipeline.md, "Per-stage executables"):
 * import at the microbatch size, the front passes, cluster-layers, the
 * stage DP (planner/pipeline.c) on the groups' figures, then per stage a
 * fresh import cut to that stage (passes/stage_extract.c), fused, planned
 * and emitted into OUT/stageI/ (built with mpicc, main = runtime/pipe.c),
 * and OUT/launch (mpirun MPMD). The imports and passes are deterministic,
 * so every stage module numbers the crossing values alike. */
typedef struct {
  int stages, B, layers; /* stages 0 / B 0: chosen by the stage DP (--pipeline-stages auto, --microbatches auto) */
  bool on;                /* --pipeline-stages given */
  int cuts;               /* --stage-cuts: 0 not given (dp), 1 dp, 2 equal (docs/pipeline.md, "Equal cuts") */
  gv_schedule sched;
  int vstages;            /* --virtual-stages V: interleaved 1F1B's chunks per device group (0: not given) */
  const char *trace_plan;
  bool analytic;          /* --stage-cost analytic: gv_stage_cost_analytic instead of the intra-operator planner */
  bool recompute;         /* --pipeline-recompute: training stages as one combined program (no stash) */
  int zero;               /* --pipeline-zero 1 / 2: ZeRO-1 / ZeRO-2 inside stages of more than one device (0: off) */
  bool recompute_off;     /* --pipeline-recompute=off: no stage recomputes (else the stage DP may choose it) */
  bool zero_off;          /* --pipeline-zero 0: no stage splits its optimizer state (else the stage DP may choose it) */
  int zero_reduce;        /* --zero-reduce with --pipeline-stages: ZeRO-2's form, 0 not given (both offered as ways),
                           * 1 once (the step's sums reduce-scattered), 2 per-microbatch (each microbatch's) */
  bool choice_given;      /* a plan.json's per-stage choices (srec, szero, slrc): replayed, not chosen */
  signed char srec[GV_PIPE_MAX_STAGES], szero[GV_PIPE_MAX_STAGES];
  signed char slrc[GV_PIPE_MAX_STAGES]; /* a plan.json's per-layer recomputation per stage (GV_LAYER_RC_*; -1: any) */
  bool layer_rc_given;    /* --recompute given: every stage program recomputes its layers so (else chosen per stage
                           * with the stages or under --memory-limit, else none with a fixed --pipeline-stages S) */
  int naxes;             /* stages of more than one device: each stage's mesh (--strategy / --mesh), 0: the planner's */
  const char *axn[3];
  int64_t axs[3];
  bool mesh_given;       /* --mesh: axn / axs are one stage's mesh; else one axis sized by the stage's devices */
  int nsdev;             /* --stage-devices: devices per stage (0: --gpus / S each) */
  int sdev[GV_PIPE_MAX_STAGES];
  bool plan_only;        /* --plan-only: stop after the stage plan (prints it; works with --no-weights) */
  bool report_cost;      /* --report-cost: the plan's whole step and largest stage memory on stdout, as one program's
                          * "predicted step: N ns" / "memory per device: ... total N of L bytes" */
  bool batch_given;      /* --batch given: every data input's dim 0 must be it */
  bool joint;            /* the default search's pipeline side: S >= 2 only, no error line when nothing fits */
  bool cuts_given;       /* a pipeline plan.json (--plan, or the default search's choice): stages cut at first[] of
                          * `layers` groups on sdev[] devices, B, sched: no stage DP, the stages' costs from the planner */
  int first[GV_PIPE_MAX_STAGES + 1];
  const char *preset, *preset_mesh; /* a plan.json's stage_preset / stage_mesh (the stages' --strategy / --mesh; NULL: none) */
  const char *plan_out;  /* plan.json to write for the pipeline (NULL: none) */
  const char *plan_note; /* with plan_out: the default search's comparison, a JSON object written as "joint" */
  int64_t stage_limit;   /* the stage programs' own memory limit in their searches (0: the memory limit): the
                          * default search's least-memory pipeline plans smaller stage programs, the room left for
                          * the microbatches in flight */
  bool need_all;         /* cuts given: every stage planned, a stage over the limit ending nothing; the largest need
                          * over the stages (its way the smallest fitting, else its least) left in jall_need (the no-plan
                          * figure of the bottleneck DP's cuts past 16 groups, tools/galvc_pipeline.c) */
  int64_t joint_cut;     /* the default search's candidate with cuts given: once one stage's B microbatches take this long
                          * (a bound on the step), the rest is not planned (pipe_plan_b returns 2); 0: none */
} pipe_args;

/* The default search's pipeline side (galvc_pipeline_search): the best
 * pipelined plan of S >= 2 stages, or none and the smallest memory a stage
 * needs. */
typedef struct {
  bool found;
  int S, B, K;
  gv_schedule sched;
  int V;                    /* interleaved: the chunks per device group (S = P V stages, stage s on group s mod P); else 1 */
  int first[GV_PIPE_MAX_STAGES + 1], dev[GV_PIPE_MAX_STAGES];
  int64_t step_ns;          /* the key compared with one program's step: the whole predicted step (gv_pipe_plan_full_ns) */
  int64_t once_ns;          /* of step_ns: the once-per-step part (gv_pipe_plan_once_ns: the slowest stage's gradient
                             * reduction, ZeRO's collectives, the update, the shared parameters' sum) */
  char desc[512];           /* the plan in words (stages, devices, strategies) */
  int64_t stage_ns[GV_PIPE_MAX_STAGES]; /* each stage's planned ns per microbatch */
  int64_t stage_xfer_ns[GV_PIPE_MAX_STAGES]; /* of it: the stage's transfers (gv_stage_cost.xfer_ns) */
  int64_t mesh_dp, mesh_tp; /* the stages compiled as --strategy dp,tp --mesh dp=mesh_dp,tp=mesh_tp (0: the planner's plan
                             * per stage) */
  bool mesh_sp;             /* and with sp: --strategy dp,tp,sp */
  int64_t stage_limit;      /* the stage programs' own limit in their searches (pipe_args.stage_limit; 0: the limit) */
  int64_t min_need, min_state, min_act; /* none found: the smallest stage (analytic screen), -1: no stage runs */
  int layers;               /* the planner's layers (units 1..L) of the model */
  int screened, planned;    /* candidates screened with the analytic cost, planned with the planner */
  int skipped;              /* candidates not planned: their analytic step over JOINT_SKIP x one program's */
  int cut;                  /* of those planned: cut short (the stages planned bound the step above the step to beat) */
  int64_t skip_key;         /* the first of those's analytic step */
  double cpu_s, wall_s;
} galvc_pipe_choice;
/* The default search's pipeline side in two steps: the screen (the stage DP with the analytic stage cost; out->layers,
 * screened), then, once one program's step is known (one; -1: none fits), the screen's fastest candidates planned
 * with their stage programs (out->found and the rest). Each returns 0, or -1 after an error line. */
int galvc_pipeline_search(const char *model, gv_import_options opt, const pipe_args *pa, int64_t gpus, const gv_cluster *cluster,
                          int quiet, int train, galvc_pipe_choice *out);
int galvc_pipeline_plan(galvc_pipe_choice *out, int64_t one);
/* Before one program's search: the screen's equal-stage candidates planned as the preset dp,tp (dp) only (cheap: no
 * search per stage), the best of them in out (out->found): its step bounds one program's searches (the fastest step
 * realised so far); galvc_pipeline_plan then plans the rest and reads these outcomes. Returns 0, or -1 after an error. */
int galvc_pipeline_early(galvc_pipe_choice *out);
/* The default search's bounds by the fastest step realised so far (one program's searches, the pipeline candidates'
 * stage searches): on unless GALV_PLAN_INCUMBENT=off */
bool galvc_incumbent_on(void);
/* The option globals (train, plan, shard, pipe) as galvc_pipeline_search saw them, which its candidates were planned
 * under: restored before the chosen pipeline is compiled (one program's search changes them as it goes). */
void galvc_pipeline_options(void);
/* pa's stages compiled from the preset dp,tp on a mesh dp x tp (tp > 1), else dp on one axis of each stage's devices
 * (pa's mesh fields and gv_shard_opts.strategy set) */
void galvc_pipe_preset(pipe_args *pa, int64_t dp, int64_t tp, bool sp);
/* A plan.json with a "pipeline" object: *found, and pa set from it (stages, microbatches, schedule, layer groups,
 * cuts, devices per stage; pa->on). Returns 0, or -1 after one error line naming the file. */
int galvc_plan_read_pipeline(const char *path, pipe_args *pa, bool *found);

/* --microbatches B without pipeline stages (gradient accumulation,
 * passes/accumulate.c): checks the data inputs as a pipeline does (every one
 * has dim 0 = the global batch, which B divides; a bad one is one error line
 * naming the input) and sets opt to the microbatch size. *global: the batch
 * (B = 0: only *global is found). Returns 0, or 1 after an error line. */
int galvc_microbatch_shapes(const char *model, gv_import_options *opt, const pipe_args *pa, int B, int64_t *global);
void galvc_microbatch_done(void); /* frees what galvc_microbatch_shapes read */

int compile_pipeline(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, gv_cluster *cluster,
                     const char *out, int quiet, int build, int verify_each, int train, const gv_cuda_options *cuda);

#endif
