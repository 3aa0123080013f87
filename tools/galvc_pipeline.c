/* galvc_pipeline.c — galvc --pipeline-stages: cluster-layers and the stage
 * DP choose the stages, then one program per stage and OUT/launch
 * (docs/pipeline.md). The pass list and the options stay in galvc.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../codegen/codegen.h"
#include "../codegen/comm.h"
#include "../codegen/cpu/cpu.h"
#include "../frontend/onnx_import.h"
#include "../ir/ir.h"
#include "../ir/storage.h"
#include "../passes/layer_units.h"
#include "../passes/passes.h"
#include "../passes/plan_sharding.h"
#include "../passes/stage_cost.h"
#include "../passes/stage_extract.h"
#include "../planner/cost.h"
#include "../planner/cross_mesh.h"
#include "../planner/json.h"
#include "../planner/pipeline.h"
#include "../runtime/galv_pipe_sched.h"
#include "galvc.h"
static int run_named(gv_module *m, const char *const *names, int n, int quiet, int verify_each);

/* The mesh of a stage of k devices: --mesh, else one axis named after the
 * strategy (or "d") of size k. */
static gv_mesh stage_mesh(const pipe_args *pa, int k) {
  gv_mesh m = {0};
  m.name = "m";
  if (pa->mesh_given && k > 1) {
    m.naxes = pa->naxes;
    for (int a = 0; a < pa->naxes; a++) m.axis[a] = pa->axn[a], m.size[a] = pa->axs[a];
  } else {
    m.naxes = 1;
    m.axis[0] = pa->naxes ? pa->axn[0] : "d";
    m.size[0] = k;
  }
  return m;
}

/* Crossing values kept split over the batch (docs/pipeline.md, "Cross-mesh transfers"): when every stage is
 * compiled from --strategy / --mesh with an axis named "dp" of one size D > 1 (xs_D; 1: none, the replicated path),
 * a crossing value whose dim 0 is the microbatch (xs_mb) and divides by D stays split over dp on both sides: the
 * sending stage returns its rows ("pp.X"; its gradient "grad:pp.X" likewise), the receiving stage takes its rows as
 * its input ("pp.X", "gin:pp.X"), and the transfer moves them rank to rank (write_xfers), no gather on either side. */
static int64_t xs_D = 1, xs_mb;

/* The presets whose stages keep the crossing values split (the stage cost prices them so, gv_intra_stage_ctx.xsplit):
 * --strategy dp (one axis named dp) or --strategy dp,tp with --mesh naming dp and tp, every stage of one device count
 * (no uneven --stage-devices). */
static bool xs_roles(const pipe_args *pa) {
  const char *st = gv_shard_opts.strategy;
  if (!pa->naxes || !st) return false;
  for (int i = 1; i < pa->nsdev; i++)
    if (pa->sdev[i] != pa->sdev[0]) return false;
  if (!pa->mesh_given) return !strcmp(st, "dp");
  bool dp = false, tp = false;
  for (int a = 0; a < pa->naxes; a++) dp |= !strcmp(pa->axn[a], "dp"), tp |= !strcmp(pa->axn[a], "tp");
  return (!strcmp(st, "dp,tp") || !strcmp(st, "dp,tp,sp")) && dp && tp;
}

static bool xs_split(const gv_type *t) {
  return xs_D > 1 && t && t->rank >= 1 && t->dims[0] == xs_mb && t->dims[0] % xs_D == 0;
}

/* The sharding of a crossing value on mesh: dim 0 over the axis named dp when it is kept split, else replicated. */
static gv_sharding xs_sharding(const gv_mesh *mesh, const gv_type *t) {
  gv_sharding sh = {.mesh = mesh, .rank = t->rank};
  int a = gv_mesh_axis(mesh, "dp", 2);
  if (xs_split(t) && a >= 0 && mesh->size[a] == xs_D) sh.axes[0][sh.naxes[0]++] = (uint8_t)a;
  return sh;
}

/* A value kept split over dp between two stages of the same mesh whose dp axis is the outermost: the q = devices / dp
 * ranks holding each block (its tp ranks) scatter it, each sending one q-th, and the receivers gather it in place
 * (Megatron's scatter / gather; runtime/pipe_xfer.c, galv_pipe_xfer.scatter); 1 when the block's elements do not
 * divide q ways, the meshes differ, dp is not the outermost axis (then each rank sends its whole block) or the
 * stages' messages stay inside a node (gv_pipe_scatter_q, the stage cost's rule too). */
static int xs_scatter(const gv_mesh *ma, const gv_mesh *mb, const gv_type *t, const gv_cluster *cl) {
  if (!xs_split(t) || ma->naxes != mb->naxes) return 1;
  for (int a = 0; a < ma->naxes; a++)
    if (ma->size[a] != mb->size[a]) return 1;
  const bool dp_first = gv_mesh_axis(ma, "dp", 2) == 0 && gv_mesh_axis(mb, "dp", 2) == 0 && ma->size[0] == xs_D;
  return (int)gv_pipe_scatter_q(cl, gv_mesh_devices(ma), xs_D, dp_first, gv_type_numel(t));
}

/* A stage of k > 1 devices: its mesh, the cross-stage values (pp.X,
 * gin:pp.X) pinned replicated (dim 0 over dp when kept split: xs_split), propagate-sharding (--strategy) and
 * spmd-partition: an SPMD program over the stage's ranks. */
static int partition_stage(gv_module *ms, const pipe_args *pa, int k, int quiet, int verify_each) {
  gv_mesh sm = stage_mesh(pa, k);
  const gv_mesh *mesh = gv_module_add_mesh(ms, "m", sm.naxes, sm.axis, sm.size);
  if (!mesh) return 1;
  gv_func *f = ms->main;
  if (!f->arg_sharding) {
    int cap = f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs;
    f->arg_sharding = gv_alloc(ms->arena, (size_t)(cap ? cap : 1) * sizeof *f->arg_sharding);
    memset(f->arg_sharding, 0, (size_t)(cap ? cap : 1) * sizeof *f->arg_sharding);
  }
  for (int i = 0; i < f->body->nargs; i++) {
    const char *n = f->arg_names[i];
    if (n && (!strncmp(n, "pp.", 3) || !strncmp(n, "gin:pp.", 7))) {
      gv_sharding *sh = gv_sharding_new(ms, mesh, f->body->args[i]->type.rank);
      *sh = xs_sharding(mesh, &f->body->args[i]->type);
      f->arg_sharding[i] = sh;
    }
  }
  /* the crossing results kept split (sent "pp.X", the gradients "grad:pp.X" of received values): returned with dim 0
   * over dp (propagate-sharding reads the return's batch_split / batch_axes) */
  gv_op *ret = gv_block_terminator(f->body);
  const char **names = calloc((size_t)f->nres_names + 1, sizeof *names);
  int nn = 0;
  if (!names) return gv_error_plain("out of memory");
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds; i++) {
    const char *n = f->res_names[i];
    if (n && (!strncmp(n, "pp.", 3) || !strncmp(n, "grad:pp.", 8)) && strcmp(n, "pp.seed") &&
        xs_sharding(mesh, &ret->opnds[i]->type).naxes[0])
      names[nn++] = n;
  }
  if (nn) {
    static const char *const dp[] = {"dp"};
    gv_set_strs(ms, ret, "batch_split", nn, names);
    gv_set_strs(ms, ret, "batch_axes", 1, dp);
  }
  free(names);
  static const char *const sp[] = {"propagate-sharding", "storage", "spmd-partition"}; /* collectives move values as stored */
  return run_named(ms, sp, 3, quiet, verify_each);
}

/* A stage of k > 1 devices without --strategy (or whose --strategy dp / tp
 * has no plan there, the stage cost's planner_plan: priced so): the intra-operator
 * planner's plan for the stage program on k devices, pinned; the
 * cross-stage values (pp.X, gin:pp.X: whole on every rank of the stage, as
 * the runtime sends them) arrive replicated and a galv.reshard gives them
 * the plan's sharding (a local slice where the plan splits them); then
 * propagate-sharding and spmd-partition. desc: the plan in words. */
static int plan_stage(gv_module *ms, int64_t k, int64_t microbatch, const gv_cluster *cluster, int verify_each) {
  gv_plan plan;
  gv_plan_cost pc;
  gv_plan_opts.intra_batch = microbatch; /* as the stage cost planned it: an input carrying no batch stays whole */
  int r = gv_plan_intra(ms, k, NULL, 0, cluster, gv_plan_opts.memory_limit, &plan, &pc);
  gv_plan_opts.intra_batch = 0;
  if (r > 0) return gv_error(ms, "pipeline: no plan of this stage fits on %lld devices (the smallest needs %lld bytes per device)",
                             (long long)k, (long long)pc.mem_total);
  if (r || gv_plan_apply(ms, &plan)) return 1;
  gv_func *f = ms->main;
  gv_block *body = f->body;
  const gv_mesh *mesh = ms->meshes[0];
  for (int i = 0; i < body->nargs; i++) {
    const char *n = f->arg_names[i];
    if (!n || (strncmp(n, "pp.", 3) && strncmp(n, "gin:pp.", 7))) continue;
    const gv_sharding *sh = f->arg_sharding[i];
    gv_value *arg = body->args[i];
    f->arg_sharding[i] = gv_sharding_new(ms, mesh, arg->type.rank);
    bool split = false;
    for (int d = 0; sh && d < sh->rank; d++) split |= sh->naxes[d] > 0;
    if (!split || !body->first) continue;
    gv_op *rs = gv_op_new(ms, GV_OP_RESHARD, 1, &arg, 1);
    rs->res[0]->type = arg->type;
    gv_set_shardings(ms, rs, &sh);
    gv_insert_before(body->first, rs);
    gv_replace_uses(body, arg, rs->res[0]);
    rs->opnds[0] = arg;
  }
  static const char *const sp[] = {"propagate-sharding", "storage", "spmd-partition"}; /* collectives move values as stored */
  const gv_shard_options keep = gv_shard_opts;
  gv_shard_opts.strategy = NULL;
  /* the plan's sequence-parallel units, as the stage cost's realisations had them */
  int rc = gv_plan_sp_region(ms, &plan) || run_named(ms, sp, 3, 1, verify_each);
  gv_shard_opts.strategy = keep.strategy, gv_shard_opts.sp_axis = keep.sp_axis, gv_shard_opts.sp_op = keep.sp_op;
  gv_shard_opts.sp_arg = keep.sp_arg;
  return rc;
}

static int run_named(gv_module *m, const char *const *names, int n, int quiet, int verify_each) {
  for (int i = 0; i < n; i++) {
    const gv_pass *p = gv_pass_lookup(names[i]);
    double t = now(), tc = cpu_now();
    if (p->run(m) || (verify_each && gv_verify(m))) return 1;
    if (!quiet)
      fprintf(stderr, "galvc: %-18s %6d ops (%.3f s, cpu %.3f s)\n", p->name, count_ops(m->main->body), now() - t, cpu_now() - tc);
  }
  return 0;
}

static gv_module *pipe_front(const char *model, const gv_import_options *opt, int train, int quiet, int verify_each) {
  gv_module *m = gv_import_onnx(model, opt);
  if (!m) return NULL;
  static const char *const front[] = {"shape-infer", "compute-f32", "fold-constants", "canonicalize", "dce"};
  if (gv_verify(m) || run_named(m, front, 5, quiet, verify_each) || (train && run_named(m, train_pipeline, NTRAIN, quiet, verify_each))) {
    gv_module_free(m);
    return NULL;
  }
  return m;
}

/* The cost model's timeline (planner/pipeline.c gv_pipe_timeline_make: the
 * runtime's order per stage, galv_pipe_order; the dependencies; durations
 * split F : B = 1 : 2, ZB-H1 F : B : W = 1 : 1 : 1) as a Chrome trace, pid
 * = tid = stage, one "X" event per entry. otherData: step_us = the
 * makespan, dp_step_us = the DP's formula, per stage the bubble (makespan -
 * busy), the peak of microbatches holding saved values and of their bytes
 * at the stage DP's estimate per microbatch. */
static int write_plan_trace(const char *path, const gv_pipe_plan *pl, int train, gv_schedule sched) {
  static const char *const kn[] = {"backward", "forward", "weight"};
  gv_pipe_timeline tl;
  if (gv_pipe_timeline_make(pl, train != 0, sched, &tl)) return -1;
  galv_wfile wf;
  FILE *f = galvc_open_out(&wf, path, 0);
  if (!f) {
    gv_pipe_timeline_free(&tl);
    return -1;
  }
  fprintf(f, "{\"traceEvents\": [\n");
  for (int k = 0; k < tl.nev; k++) { /* tid: the device group (interleaved: stage mod P; else the stage) */
    const gv_pipe_event *e = &tl.ev[k];
    fprintf(f, "%s  {\"name\": \"%s mb%d\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d}",
            k ? ",\n" : "", kn[e->kind], e->mb, kn[e->kind], (double)e->start_ns / 1e3, (double)e->dur_ns / 1e3, e->stage,
            e->stage % tl.ngroups);
  }
  fprintf(f, "\n], \"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"cost model\", \"training\": %s, "
             "\"schedule\": \"%s\", \"stages\": %d, \"microbatches\": %d, \"step_us\": %.3f, \"dp_step_us\": %.3f, "
             "\"sync_us\": %.3f, \"predicted_step_us\": %.3f, \"bubble_us\": [",
          train ? "true" : "false", train ? gv_schedule_name(sched) : "inference", pl->nstages, pl->B,
          (double)tl.makespan_ns / 1e3, (double)pl->step_ns / 1e3, (double)gv_pipe_plan_once_ns(pl) / 1e3,
          (double)gv_pipe_plan_full_ns(pl) / 1e3);
  for (int i = 0; i < pl->nstages; i++) fprintf(f, "%s%.3f", i ? ", " : "", (double)tl.bubble_ns[i] / 1e3);
  fprintf(f, "], \"peak_microbatches\": [");
  for (int i = 0; i < pl->nstages; i++) fprintf(f, "%s%d", i ? ", " : "", train ? tl.peak_mb[i] : 0);
  fprintf(f, "], \"peak_bytes\": [");
  for (int i = 0; i < pl->nstages; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)tl.peak_bytes[i]);
  /* per device group (interleaved: V stages each; else one stage) */
  fprintf(f, "], \"virtual_stages\": %d, \"groups\": %d, \"group_bubble_us\": [", train && sched == GV_SCHED_INTERLEAVED ? pl->vstages : 1,
          tl.ngroups);
  for (int i = 0; i < tl.ngroups; i++) fprintf(f, "%s%.3f", i ? ", " : "", (double)tl.group_bubble_ns[i] / 1e3);
  fprintf(f, "], \"group_peak_bytes\": [");
  for (int i = 0; i < tl.ngroups; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)tl.group_peak_bytes[i]);
  fprintf(f, "], \"group_peak_microbatches\": [");
  for (int i = 0; i < tl.ngroups; i++) fprintf(f, "%s%d", i ? ", " : "", train ? tl.group_peak_mb[i] : 0);
  fprintf(f, "]}}\n");
  gv_pipe_timeline_free(&tl);
  return galvc_close_out(&wf, 0);
}

/* The stage DP for B microbatches on the import at the microbatch size
 * global / B, cluster-layers with *K groups (0: --layers, else min(4 S, ops
 * - 1) with S = gpus when the stages are chosen). S > 0: S stages of gpus / S
 * devices each (at least 1); S = 0: the best over k = 1, 2, 4 .. devices per
 * stage and 1 .. gpus / k stages. Stage costs: the intra-operator planner
 * per stage program (gv_stage_cost_intra), or --stage-cost analytic. Fills
 * *pl with the best plan; returns 0, 1 when no partition fits, -1 after an
 * error. */
/* The data inputs at the global batch (the model's shapes as --batch, --seq
 * and --input-shape bind them) and the same at one microbatch: a pipeline
 * splits dim 0 of every data input into B microbatches, other dims stay
 * whole, so the stages are imported with these shapes. */
static struct {
  int n;
  gv_input_shape *glob, *mb;
} pin;

static gv_import_options at_microbatch(gv_import_options opt, int64_t global, int B) {
  for (int i = 0; i < pin.n; i++) pin.mb[i] = pin.glob[i], pin.mb[i].dims[0] = global / B;
  opt.shapes = pin.mb;
  opt.nshapes = pin.n;
  opt.batch = global / B;
  return opt;
}

/* Reads the data inputs' global shapes and checks them: every data input has
 * a dim 0, all of one size (the global batch, returned in *global), equal to
 * --batch when it was given (a static batch dim that differs is an error
 * naming the input), and divisible by a fixed --microbatches. */
static int pipe_inputs(const char *model, gv_import_options opt, const pipe_args *pa, int64_t *global) {
  opt.load_weights = false;
  gv_module *m = gv_import_onnx(model, &opt);
  if (!m) return 1;
  const gv_func *f = m->main;
  int rc = 0, n = 0;
  pin.glob = calloc((size_t)f->body->nargs + 1, sizeof *pin.glob);
  pin.mb = calloc((size_t)f->body->nargs + 1, sizeof *pin.mb);
  if (!pin.glob || !pin.mb) rc = gv_error_plain("out of memory");
  const char *first = NULL;
  for (int a = 0; !rc && a < f->body->nargs; a++) {
    if (f->arg_is_param[a]) continue;
    const gv_type *t = &f->body->args[a]->type;
    const char *name = f->arg_names[a];
    if (t->rank < 1)
      rc = gv_error_plain("%s: input '%s' is a scalar: microbatches (pipeline stages, --microbatches) split dim 0 (the "
                          "batch) of every data input", model, name);
    else if (first && t->dims[0] != *global)
      rc = gv_error_plain("%s: input '%s' has a batch (dim 0) of %lld, input '%s' of %lld: microbatches (pipeline stages, "
                          "--microbatches) split dim 0 of every data input", model, name, (long long)t->dims[0], first, (long long)*global);
    else if (pa->batch_given && t->dims[0] != opt.batch)
      rc = gv_error_plain("%s: input '%s' has a static batch (dim 0) of %lld, but --batch is %lld", model, name,
                          (long long)t->dims[0], (long long)opt.batch);
    else if (pa->B && t->dims[0] % pa->B)
      rc = gv_error_plain("%s: input '%s': its batch (dim 0) of %lld does not split into --microbatches %d", model, name,
                          (long long)t->dims[0], pa->B);
    if (rc) break;
    if (!first) first = name, *global = t->dims[0];
    gv_input_shape *g = &pin.glob[n++];
    g->name = strdup(name);
    if (!g->name) { rc = gv_error_plain("out of memory"); break; }
    g->rank = t->rank;
    memcpy(g->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  }
  pin.n = n;
  if (!rc && gv_plan_profile_check(m)) rc = 1; /* --profile: measured on this model's shape */
  gv_module_free(m);
  if (!rc && !n) rc = gv_error_plain("%s: the model has no data input to split into microbatches", model);
  return rc;
}

static int64_t pin_global;

int galvc_microbatch_shapes(const char *model, gv_import_options *opt, const pipe_args *pa, int B, int64_t *global) {
  if (!pin.glob) { /* the inputs are read once; later calls (--microbatches auto) only rescale them */
    pipe_args p = *pa;
    p.B = B;
    if (pipe_inputs(model, *opt, &p, &pin_global)) return galvc_microbatch_done(), 1;
  }
  *global = pin_global;
  if (B) *opt = at_microbatch(*opt, pin_global, B);
  return 0;
}

void galvc_microbatch_done(void) {
  for (int i = 0; pin.glob && i < pin.n; i++) free((char *)pin.glob[i].name);
  free(pin.glob), free(pin.mb);
  pin.glob = pin.mb = NULL, pin.n = 0;
}

/* The key plans are compared by (pl->tl_ns), the whole predicted step
 * (gv_pipe_plan_full_ns): the schedule's part (pl->sched_ns: training, the
 * timeline's makespan under the plan's schedule, whether --schedule gave it,
 * the default 1F1B or --schedule auto chose it; inference, the DP's step
 * formula) + the slowest stage's once-per-step part (its gradient reduction,
 * ZeRO's collectives, the update). -1 after an error. */
/* Per schedule, the best plan's key and group 0's bubble for one B (pipe_plan_b; printed with the choice). */
typedef struct {
  int ok;
  int64_t tl_ns, bubble_ns;
} sched_rec;
static sched_rec rec_b[4], rec_best[4];

static int plan_key(gv_pipe_plan *pl, int train, gv_schedule given) {
  pl->sched_ns = pl->step_ns;
  pl->tl_ns = gv_pipe_plan_full_ns(pl);
  if (!train) return 0;
  gv_pipe_timeline tl;
  if (gv_pipe_timeline_make(pl, true, pl->schedule, &tl)) return -1;
  pl->sched_ns = tl.makespan_ns;
  pl->tl_ns = gv_pipe_plan_full_ns(pl);
  sched_rec *r = &rec_b[pl->schedule];
  if (given == GV_SCHED_AUTO && (!r->ok || pl->tl_ns < r->tl_ns)) *r = (sched_rec){1, pl->tl_ns, tl.group_bubble_ns[0]}; /* the whole step */
  gv_pipe_timeline_free(&tl);
  return 0;
}

enum { JOINT_MAX_S = 32, JOINT_MAX_MB = 8 }; /* the screen's equal-stage runs: at most 32 stages; 8 microbatch counts */
/* The default search's screen (pa->joint): every stage DP run's best plan
 * (S >= 2 stages) with its key, and the smallest stage need when none fit. */
typedef struct {
  int S, B;
  int64_t per;      /* devices per stage (equal stages); 0: sdev[] */
  int64_t key;      /* the plan's key (plan_key) + its largest per-step sync */
  int sdev[GV_PIPE_MAX_STAGES];
  int first[GV_PIPE_MAX_STAGES + 1]; /* its cuts */
} screen_cand;
enum { SCREEN_MAX = 512 };
static screen_cand *screen;
static int nscreen;
static int64_t jmin_need = -1, jmin_state, jmin_act;
static int jmin_S;          /* ... of the bottleneck DP's pipelines (joint_minmem): its stages, */
static int64_t jmin_per;    /* ... and devices per stage (0: jmin_need is not the bottleneck DP's) */
/* the default search: the least need of a planned candidate's stage over the limit (its stage programs planned; -1:
 * none), with its states and activations: every planned candidate needs at least its own such stage's */
static int64_t jreal_need = -1, jreal_state, jreal_act;
static int64_t jall_need = -1, jall_state, jall_act; /* pipe_args.need_all: the largest stage need of the cuts given */
enum { JMC_MAX = 24 };
typedef struct {
  int64_t need, per;
  int S, first[GV_PIPE_MAX_STAGES + 1];
} jmc_cut;
static jmc_cut jmc[JMC_MAX]; /* the bottleneck DP's cuts per devices per stage, with their need */
static int njmc;
static int jmc_cmp(const void *a, const void *b) {
  const jmc_cut *x = a, *y = b;
  return (x->need > y->need) - (x->need < y->need);
}
static int joint_mbc[64], joint_nmbc; /* the screen: every microbatch count in one stage DP (the analytic cost scales) */
static char joint_why[256]; /* the default search: why a candidate's planned stages do not fit */
bool galvc_incumbent_on(void) {
  const char *e = getenv("GALV_PLAN_INCUMBENT");
  return !(e && !strcmp(e, "off"));
}

/* a planned stage's time per microbatch as the step bound counts it (its transfers may overlap) */
static int64_t stage_mb_ns(const gv_pipe_plan *pl, int j) { return pl->cost[j].ns - pl->cost[j].xfer_ns; }

/* what the planned stages before i add ahead of stage i's B microbatches (a stage not planned yet: 0; under ZB-H1
 * their forwards only, ns / 3) */
static int64_t stages_before_ns(const gv_pipe_plan *pl, const bool *done, int i) {
  int64_t pre = 0;
  for (int j = 0; j < i; j++)
    if (done[j]) pre += pl->schedule == GV_SCHED_ZBH1 ? stage_mb_ns(pl, j) / 3 : stage_mb_ns(pl, j);
  return pre;
}

/* stage i's memory charge in pl (its microbatches in flight; interleaved: its share of its device group's figure, as
 * the stage DP charges it) */
static void stage_charge(const gv_pipe_plan *pl, int i, gv_pipe_charge *ch) {
  const int S = pl->nstages, V = pl->vstages > 1 ? pl->vstages : 1;
  gv_pipe_charge_make(pl->schedule, S, i, pl->B, pl->inflight[i], ch);
  if (V > 1) ch->il_P = S / V, ch->il_V = V, ch->il_i = i, ch->il_B = pl->B;
}

static bool joint_minmem; /* the default search found no pipeline: pipe_plan_b finds the smallest need (jmin_need) */
static int joint_layers; /* the planner's layers of the model (the default search's K = 2 L, at least 8) */

static int pipe_plan_b(const char *model, gv_import_options opt, int64_t global, int B, int S, int64_t gpus, const pipe_args *pa,
                       gv_cluster *cluster, int train, int quiet, int verify_each, int *K, gv_pipe_plan *pl, double *plan_s) {
  double t0 = now();
  opt = at_microbatch(opt, global, B);
  gv_module *m = pipe_front(model, &opt, 0, quiet, verify_each); /* training: per stage, after extraction */
  if (!m) return -1;
  if (train && !quiet) gv_print_trainable(m->main, "galvc", stderr);
  const int nvert = gv_cluster_layers_vertices(m); /* the default group counts stay under the ops METIS groups */
  int want = S ? S * (pa->vstages ? pa->vstages : 1) : (int)gpus; /* interleaved: P x V stages */
  memset(rec_b, 0, sizeof rec_b);
  /* --profile without --layers: a group per block, the cuts at the layers' boundaries (a stage is priced by the
   * profile's per-layer figures only where it holds its layers whole and its program finds them: gv_stage_cost_intra) */
  if (!*K && gv_plan_opts.profile && !pa->layers && !gv_pipe_opts.blocks) {
    gv_layer_units u;
    if (gv_layer_units_find(m, &u)) { gv_module_free(m); return -1; }
    if (u.nl >= 2 && u.nl <= GV_PIPE_MAX_STAGES) gv_pipe_opts.blocks = true;
    gv_layer_units_free(&u);
  }
  if (!*K && gv_pipe_opts.blocks) { /* --layers blocks: a group per block */
    gv_layer_units u;
    if (gv_layer_units_find(m, &u)) { gv_module_free(m); return -1; }
    *K = joint_layers = u.nl;
    gv_layer_units_free(&u);
    if (*K < 2) { /* no pipeline: fewer than two blocks to cut between */
      gv_module_free(m);
      return *K < 1 ? gv_error_plain("%s: --layers blocks: the model has no repeated blocks (give --layers K)", model), -1 : 1;
    }
    if (*K > GV_PIPE_MAX_STAGES) { gv_module_free(m); return gv_error_plain("%s: --layers blocks: %d blocks, at most %d groups", model, *K, GV_PIPE_MAX_STAGES), -1; }
  }
  if (!*K && pa->joint && !pa->layers) { /* the default search: twice the planner's layers (at least 8) */
    gv_layer_units u;
    if (gv_layer_units_find(m, &u)) { gv_module_free(m); return -1; }
    int L = u.nl;
    gv_layer_units_free(&u);
    joint_layers = L;
    *K = 2 * L > 8 ? 2 * L : 8;
    if (*K > GV_PIPE_MAX_STAGES) *K = GV_PIPE_MAX_STAGES;
    if (*K > nvert) *K = nvert;
    if (L < 2) { /* no pipeline: fewer than two layers to cut between */
      gv_module_free(m);
      return 1;
    }
  }
  if (!*K && !pa->layers && !pa->joint && S) { /* a given stage count: a group per block when the model has at least
                                               * 4 blocks per stage (the cuts at its layer boundaries, Megatron's among
                                               * them); fewer: 4 METIS groups per stage (finer than its blocks) */
    gv_layer_units u;
    if (gv_layer_units_find(m, &u)) { gv_module_free(m); return -1; }
    int L = u.nl;
    gv_layer_units_free(&u);
    if (L >= 4 * want && L <= GV_PIPE_MAX_STAGES) *K = L, gv_pipe_opts.blocks = true;
  }
  if (!*K && pa->joint && pa->layers) joint_layers = pa->layers; /* the default search with --layers K: K groups to cut between */
  if (!*K) *K = pa->layers ? pa->layers : (4 * want < nvert ? 4 * want : nvert);
  int k = *K;
  /* --profile: the units found before the grouping reorders the ops (the stages' share of the outer figure, the ranges
   * holding their layers whole: gv_stage_units_set) */
  gv_layer_units pre;
  const bool pre_ok = gv_plan_opts.profile && gv_pipe_opts.blocks && !gv_layer_units_find(m, &pre);
  gv_layer_groups g;
  if (gv_cluster_layers(m, k, &g)) {
    if (pre_ok) gv_layer_units_free(&pre);
    gv_module_free(m);
    return -1;
  }
  gv_intra_stage_ctx ux = {.base = m, .ngroups = k}; /* the maps, moved into the stage costs' context below */
  const int urc = pre_ok ? gv_stage_units_set(&ux, &pre) : 0;
  if (pre_ok) gv_layer_units_free(&pre);
  if (urc) { gv_intra_stage_ctx_free(&ux), gv_module_free(m); return -1; }
  gv_group_stats *gs = calloc((size_t)k, sizeof *gs);
  gv_pipe_plan *tmp = calloc(1, sizeof *tmp);
  if (!gs || !tmp) { free(gs); free(tmp); gv_intra_stage_ctx_free(&ux), gv_module_free(m); return gv_error_plain("out of memory"), -1; }
  gv_pipe_group_stats(m, k, g.flops, gs);
  if (train && pa->analytic) { /* the analytic cost's memory per microbatch in flight: an earlier stage's stash, from
                                 * the whole model's loss, fused attention (as the stages will run it) and autodiff
                                 * on a copy (m stays the stage costs' base) */
    static const char *const la[] = {"master-weights", "loss", "fuse-attention", "autodiff"};
    int64_t *st = calloc((size_t)k, sizeof *st), *cr = calloc((size_t)k, sizeof *cr);
    bool oom = false;
    gv_module *mt = gv_module_clone(m); /* in memory; through the text only when that cannot copy it */
    if (!mt) {
      char *buf = NULL;
      size_t len = 0;
      FILE *mf = open_memstream(&buf, &len);
      if (mf) gv_print_module(m, mf), fclose(mf);
      mt = mf && buf ? gv_parse_module(buf, len, m->source) : NULL;
      oom = !mf;
      free(buf);
    }
    int bad = !st || !cr || !mt || run_named(mt, la, 4, 1, verify_each) || gv_pipe_group_stash(mt, k, st, cr);
    if (mt) gv_module_free(mt);
    if (bad) {
      free(st), free(cr), free(gs), free(tmp), gv_intra_stage_ctx_free(&ux), gv_module_free(m);
      return oom ? gv_error_plain("out of memory"), -1 : -1;
    }
    for (int i = 0; i < k; i++) gs[i].act_bytes = st[i], gs[i].act_credit = cr[i] * B;
    free(st), free(cr);
  }
  for (int i = 0; i < k; i++) gs[i].flops *= B; /* the stats are per microbatch, the cost wants the global batch */
  for (int i = 0; i < k; i++) gs[i].act_bytes *= B, gs[i].out_bytes *= B;
  gv_shared_param *sh = NULL; /* parameters read by several groups: each stage reading one holds a copy */
  int nsh = 0;
  if (gv_pipe_shared_params(m, &sh, &nsh)) {
    free(gs), free(tmp), gv_intra_stage_ctx_free(&ux), gv_module_free(m);
    return -1;
  }
  const int nopt = !train ? 0 : !strcmp(gv_train_opts.optimizer, "adamw") ? 2 : gv_train_opts.momentum != 0 ? 1 : 0;
  gv_analytic_ctx actx = {.g = gs, .shared = sh, .nshared = nsh, .ngroups = k, .batch = global, .training = train != 0,
                          .dtype_bytes = gv_precision_opts.storage == GV_DT_F32 ? 4 : 2, .cluster = cluster,
                          .mem_limit = gv_plan_opts.memory_limit, .recompute = pa->recompute, .opt_states = nopt,
                          .zero = pa->zero, .zero_reduce = pa->zero_reduce - 1};
  gv_intra_stage_ctx ictx = {.base = m, .ngroups = k, .B = B, .training = train != 0, .recompute = pa->recompute,
                             .cluster = cluster, .mem_limit = pa->stage_limit ? pa->stage_limit : gv_plan_opts.memory_limit,
                             .shared = sh, .nshared = nsh,
                             .opt_states = nopt, .zero = pa->zero, .zero_reduce = pa->zero_reduce - 1,
                             .outer_fl = ux.outer_fl, .outer_total = ux.outer_total, .nl = ux.nl, .lay_lo = ux.lay_lo,
                             .lay_hi = ux.lay_hi, .units_ok = ux.units_ok};
  if (pa->mesh_given && pa->naxes <= 3) { /* --mesh: every stage of its devices is compiled on it, and priced so */
    ictx.mesh_naxes = pa->naxes;
    for (int a = 0; a < pa->naxes; a++) ictx.mesh_shape[a] = pa->axs[a];
    /* --strategy dp,tp (the preset each stage is compiled with): its roles, dp over the axis named dp, tp over tp */
    const char *st = gv_shard_opts.strategy;
    if (st && (!strcmp(st, "dp,tp") || !strcmp(st, "dp,tp,sp"))) { /* dp,tp,sp: sp on every op (ictx.sp) */
      ictx.sp = !strcmp(st, "dp,tp,sp");
      ictx.mesh_dp = ictx.mesh_tp = -1;
      for (int a = 0; a < pa->naxes; a++) {
        if (!strcmp(pa->axn[a], "dp")) ictx.mesh_dp = a;
        if (!strcmp(pa->axn[a], "tp")) ictx.mesh_tp = a;
      }
      ictx.mesh_roles = ictx.mesh_dp >= 0 && ictx.mesh_tp >= 0; /* else the planner's roles on the shape */
    }
  } else if (pa->naxes && gv_shard_opts.strategy && (!strcmp(gv_shard_opts.strategy, "dp") || !strcmp(gv_shard_opts.strategy, "tp"))) {
    /* --strategy dp / tp: each stage compiled on one axis with that role (stage_mesh), and priced so */
    ictx.one_axis = ictx.mesh_roles = true;
    ictx.mesh_dp = strcmp(gv_shard_opts.strategy, "dp") ? -1 : 0, ictx.mesh_tp = strcmp(gv_shard_opts.strategy, "tp") ? -1 : 0;
  }
  ictx.xsplit = xs_roles(pa) && !getenv("GALV_PIPE_XSPLIT_OFF"); /* crossing values kept split over dp, as compiled */
  /* recomputation and ZeRO per stage: chosen (the ways offered to the DP) with the stages chosen (auto, the default
   * search, its chosen plan's stages) or fixed under --memory-limit (--pipeline-stages S, the planner's plan per stage:
   * the DP with the stage count fixed; without a limit, or with a preset the cost does not price, the flags' choice);
   * given or ruled out by the flags; a plan.json's replayed */
  const bool choose = train && (S == 0 || pa->joint || pa->cuts_given || (gv_plan_opts.memory_limit > 0 && !pa->naxes));
  actx.choose_recompute = ictx.choose_recompute = choose && !pa->recompute && !pa->recompute_off;
  actx.choose_zero = ictx.choose_zero = choose && !pa->zero && !pa->zero_off;
  ictx.choose_layer_rc = choose && !pa->layer_rc_given; /* per-layer recomputation: chosen with the stages unless given */
  ictx.zb = train && (pa->sched == GV_SCHED_ZBH1 || pa->sched == GV_SCHED_AUTO); /* ZB-H1's W entry priced */
  gv_stage_cost_fn fn = pa->analytic ? gv_stage_cost_analytic : gv_stage_cost_intra;
  void *fctx = pa->analytic ? (void *)&actx : (void *)&ictx;
  int mbc[1] = {B};
  int rc = 1;
  /* the DP runs: {devices, stages (0: chosen), devices per stage (0: any), per-stage counts} */
  typedef struct { int64_t D; int S; int64_t per; const int *sdev; } dp_run;
  dp_run runs[512];
  int nruns = 0;
  int64_t kn = cluster->devices_per_node;
  if (S && pa->nsdev) {
    int64_t D = 0;
    for (int i = 0; i < S; i++) D += pa->sdev[i];
    runs[nruns++] = (dp_run){D, S, 0, pa->sdev};
  } else if (S) {
    int64_t per = gpus / S > 1 ? gpus / S : 1;
    runs[nruns++] = (dp_run){S * per, S, per, NULL};
  } else if (pa->joint) { /* the default search's screen: equal stages of 1, 2, 4 .. devices, S = 2, 3, 4, 6, 8, 12 .. */
    for (int64_t per = 1; per <= gpus / 2; per *= 2)
      for (int s = 2; s <= gpus / per && s <= k && s <= JOINT_MAX_S && nruns < 500; s = (s & (s - 1)) ? s / 3 * 4 : s / 2 * 3)
        runs[nruns++] = (dp_run){s * per, s, per, NULL};
    /* equal stages of whole nodes on every device (Megatron's pp x (tp x dp) at its GPU counts: 16 stages of 120 on
     * 1920, 8 of 192 on 1536): S dividing the devices, gpus / S a multiple of the node and not a power of 2 (above) */
    for (int s = 2; kn > 0 && gpus > kn && s <= k && s <= JOINT_MAX_S && nruns < 500; s++) {
      const int64_t per = gpus % s ? 0 : gpus / s;
      if (per && per % kn == 0 && (per & (per - 1))) runs[nruns++] = (dp_run){gpus, s, per, NULL};
    }
    if (gpus <= kn ? gpus >= 3 : gpus % kn == 0 && gpus / kn >= 3) runs[nruns++] = (dp_run){gpus, 0, 0, NULL};
  } else { /* equal stages of k = 1, 2, 4 .. devices (S k <= gpus), then the DP's free choice over all gpus */
    for (int64_t per = 1; per <= gpus && nruns < 40; per = per * 2 > gpus && per < gpus ? gpus : per * 2)
      for (int s = 1; s <= gpus / per && s <= k && nruns < 40; s++) runs[nruns++] = (dp_run){s * per, s, per, NULL};
    /* the free run only when its sub-meshes allow stages of different sizes on all gpus: 1 x 2^j inside a
     * node (3 devices or more), whole nodes across (3 nodes or more) */
    if (gpus <= kn ? gpus >= 3 : gpus % kn == 0 && gpus / kn >= 3) runs[nruns++] = (dp_run){gpus, 0, 0, NULL};
  }
  /* the schedules: --schedule, else (training) each of them, the one with the shortest timeline chosen
   * (1F1B first: on a tie the one with less memory in flight; ZB-H1 needs the stashing stages) */
  gv_schedule sch[4] = {pa->sched == GV_SCHED_AUTO ? GV_SCHED_1F1B : pa->sched, GV_SCHED_ZBH1, GV_SCHED_GPIPE};
  int nsch = train && pa->sched == GV_SCHED_AUTO ? 3 : 1;
  bool layer_rc = pa->layer_rc_given && gv_train_opts.recompute && strcmp(gv_train_opts.recompute, "none");
  if (nsch == 3 && (pa->recompute || layer_rc)) sch[1] = GV_SCHED_GPIPE, nsch = 2; /* recomputing stages have no W to defer */
  if (nsch > 1 && pa->vstages) sch[nsch++] = GV_SCHED_INTERLEAVED; /* auto with --virtual-stages: priced too */
  gv_cluster cs = *cluster, cs_best = *cluster; /* the cluster view of a run, of the best plan's run */
  if (pa->cuts_given) { /* a plan.json's stages: cut at pa->first on pa->sdev devices, no DP; costed as the DP costs them */
    int64_t D = 0, minper = 0;
    for (int i = 0; i < S; i++) D += pa->sdev[i], minper = !i || pa->sdev[i] < minper ? pa->sdev[i] : minper;
    if (minper < kn && D > kn) cs.devices_per_node = D, cs.nodes = 1; /* stages inside a node: the DP's one-node view */
    cs_best = cs;
    actx.cluster = ictx.cluster = &cs;
    memset(pl, 0, sizeof *pl);
    pl->nstages = S, pl->B = B, pl->schedule = train ? pa->sched : GV_SCHED_1F1B, pl->vstages = 1;
    pl->limit = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cs.memory_bytes; /* the report's runner-ups */
    /* interleaved (a plan.json's, or the default search's candidate): the S cuts are P x V chunks, stage s on device
     * group s mod P; each stage charged its share of its group's memory (gv_pipe_il_share, as the stage DP charges
     * it), the groups' memory checked once every stage is planned */
    const int V = train && pa->sched == GV_SCHED_INTERLEAVED && pa->vstages > 1 ? pa->vstages : 1;
    const int64_t lim = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cs.memory_bytes;
    int il_inflight = 0;
    int64_t sum = 0, mx = 0;
    rc = 0;
    if (V > 1 && (S % V || S / V < 2 || B % (S / V)))
      rc = gv_error_plain("pipeline: %d stages interleaved with %d chunks per device group over %d microbatches: the "
                          "stages must be P x %d for P >= 2 groups, the microbatches a multiple of P", S, V, B, V);
    else if (V > 1) {
      galv_pipe_act *ga = malloc(sizeof *ga * (size_t)(2 * V * B));
      int64_t one[GV_PIPE_MAX_STAGES];
      int pmb = 0;
      if (!ga) rc = gv_error_plain("out of memory");
      else {
        for (int c = 0; c < V; c++) one[c] = 1;
        galv_pipe_peak_group(ga, galv_pipe_order_group(S / V, V, 0, B, ga), one, &pmb);
        free(ga);
        il_inflight = (pmb + V - 1) / V, pl->vstages = V;
      }
    }
    /* with a step to beat (the default search's joint_cut), the stages in the order of their analytic cost per
     * microbatch, the slowest first (on a tie the later first: the head and the loss): the bound below is the strongest
     * early, the stage most likely to reach it alone planned first */
    bool cut = pa->joint && pa->joint_cut > 0 && S > 1, done_st[GV_PIPE_MAX_STAGES] = {false};
    int sord[GV_PIPE_MAX_STAGES];
    int64_t san[GV_PIPE_MAX_STAGES];
    for (int oi = 0; oi < S; oi++) sord[oi] = !cut ? oi : oi == 0 ? S - 1 : oi - 1;
    for (int i = 0; cut && i < S; i++) {
      int64_t d = pa->sdev[i], pn = cs.devices_per_node > 0 ? cs.devices_per_node : d;
      gv_stage_cost ac;
      san[i] = 0;
      if (!gv_stage_cost_analytic(&actx, pa->first[i], pa->first[i + 1], d <= pn ? 1 : d / pn, d <= pn ? d : pn, B, &ac) &&
          ac.feasible)
        san[i] = ac.ns;
    }
    for (int a = 1; cut && a < S; a++) /* insertion: by analytic ns, descending; the index, descending, on a tie */
      for (int b = a; b > 0 && (san[sord[b]] > san[sord[b - 1]] || (san[sord[b]] == san[sord[b - 1]] && sord[b] > sord[b - 1])); b--) {
        int t = sord[b];
        sord[b] = sord[b - 1], sord[b - 1] = t;
      }
    bool over_all = false; /* need_all: a stage over the limit */
    for (int oi = 0; oi < S && !rc; oi++) {
      const int i = sord[oi];
      int64_t d = pa->sdev[i], pn = cs.devices_per_node > 0 ? cs.devices_per_node : d;
      pl->first[i] = pa->first[i], pl->first[i + 1] = pa->first[i + 1];
      pl->nodes[i] = d <= pn ? 1 : d / pn, pl->per_node[i] = d <= pn ? d : pn;
      pl->inflight[i] = V > 1 ? il_inflight : gv_pipe_inflight(pl->schedule, S, S - i, B);
      gv_pipe_charge ch;
      stage_charge(pl, i, &ch);
      /* the step bound below, turned into one on this stage's program before it is planned: its search leaves out
       * the plans slower than (step to beat - the stages before it planned so far) / B (GALV_PLAN_INCUMBENT=off:
       * none) */
      const int64_t pre_i = cut ? stages_before_ns(pl, done_st, i) : 0;
      gv_plan_opts.stage_incumbent_ns = cut && galvc_incumbent_on() && pa->joint_cut > pre_i ? (pa->joint_cut - pre_i) / B : 0;
      if (fn(fctx, pl->first[i], pl->first[i + 1], pl->nodes[i], pl->per_node[i], B, &pl->cost[i])) rc = -1;
      else if (pl->cost[i].feasible && pl->cost[i].nvar > 1) { /* the stage's way: the plan's, else the fastest that fits */
        int wr = pa->choice_given ? pa->srec[i] : -1, wz = pa->choice_given ? pa->szero[i] : -1;
        int wl = pa->choice_given ? pa->slrc[i] : -1;
        int v = gv_stage_cost_pick(&pl->cost[i], &ch, lim, -1, pl->schedule, wr, wz, wl);
        if (v < 0 && wr < 0 && wz < 0 && wl < 0) gv_stage_cost_min_need(&pl->cost[i], &ch, pl->schedule, &v); /* none fits: the smallest */
        if (v < 0) /* a plan.json's way that this stage does not offer: the nearest (the recomputation as given; 1F1B's
                    * rule lets every way through) */
          v = gv_stage_cost_pick(&pl->cost[i], &ch, INT64_MAX / 4, -1, GV_SCHED_1F1B, wr, -1, wl);
        gv_stage_cost_use(&pl->cost[i], v < 0 ? 0 : v, pl->schedule);
      } else if (pl->cost[i].feasible) gv_stage_cost_use(&pl->cost[i], -1, pl->schedule); /* one way: ZB-H1's copy */
      /* A bound on the step from the stages planned so far: stage i runs its B microbatches one after another, after
       * the first microbatch's forward through the stages before it and before the last one's backward through them,
       * so the step is at least B x ns_i + the sum of ns_j over the stages j < i (ns less the transfers, which may
       * overlap; a stage not planned yet counts 0), and the key compared adds the largest per-step sync of a stage
       * (gv_pipe_plan_once_ns). At the step to beat the candidate cannot be chosen: the rest of its stages are not planned (rc 2).
       * Under ZB-H1 the stages before i add only their forwards (the timeline's ns / 3): their last entries, the weight
       * gradients, need not follow stage i's last one. */
      done_st[i] = pl->cost[i].feasible;
      int64_t lb = 0, once = 0;
      /* interleaved: a device group g runs the B microbatches of each of its chunks planned so far (g, g + P, ...), one
       * after another, after the first microbatch's forward through the chunks before its first (g) and before the
       * last one's backward through them (1F1B: each stage its own group) */
      const int P = V > 1 ? S / V : S;
      for (int g = 0; cut && g < P; g++) {
        int64_t work = -1;
        for (int j = g; j < S; j += P) {
          if (!done_st[j]) continue;
          work = (work < 0 ? 0 : work) + (int64_t)B * stage_mb_ns(pl, j);
          if (pl->cost[j].once_ns > once) once = pl->cost[j].once_ns;
        }
        const int64_t v = work < 0 ? -1 : stages_before_ns(pl, done_st, g) + work;
        if (v > lb) lb = v;
      }
      lb += once;
      if (!rc && cut && oi + 1 < S && lb >= pa->joint_cut) {
        rc = 2;
        snprintf(joint_why, sizeof joint_why, "the %d stage%s planned bound the step at %.3f ms, not under %.3f ms; %d not planned",
                 oi + 1, oi ? "s" : "", (double)lb / 1e6, (double)pa->joint_cut / 1e6, S - oi - 1);
      }
      gv_plan_opts.stage_incumbent_ns = 0;
      if (rc) ;
      else if (pl->cost[i].bounded) { /* no plan of the stage fits and runs under the bound: as the step bound cuts */
        rc = 2;
        snprintf(joint_why, sizeof joint_why, "stage %d (groups %d-%d): no plan of its program fits and runs under %.3f ms "
                 "per microbatch (its compute and tp communication bound); %d not planned", i, pl->first[i],
                 pl->first[i + 1] - 1, (double)(pa->joint_cut - pre_i) / B / 1e6, S - oi - 1);
      } else if (!pl->cost[i].feasible && pl->cost[i].int_only && pa->joint) {
        rc = 1;
        snprintf(joint_why, sizeof joint_why, "stage %d (groups %d-%d) sends later stages integers only (nothing to train "
                 "through)", i, pl->first[i], pl->first[i + 1] - 1);
      } else if (!pl->cost[i].feasible && pl->cost[i].int_only)
        rc = gv_error_plain("pipeline: stage %d (groups %d-%d) sends later stages integers only: nothing to train through "
                            "(cut elsewhere: its groups with the next stage's)", i, pl->first[i], pl->first[i + 1] - 1);
      else if (!pl->cost[i].feasible && pa->joint) {
        rc = 1;
        snprintf(joint_why, sizeof joint_why, "stage %d (groups %d-%d) cannot run on %lld devices", i, pl->first[i],
                 pl->first[i + 1] - 1, (long long)d);
      } else if (!pl->cost[i].feasible) rc = gv_error_plain("pipeline: stage %d (groups %d-%d) cannot run on %lld devices", i,
                                                          pl->first[i], pl->first[i + 1] - 1, (long long)d);
      else sum += pl->cost[i].ns, mx = pl->cost[i].ns > mx ? pl->cost[i].ns : mx;
      const int64_t nd = rc || !pa->joint || V > 1 ? 0 : pl->cost[i].state_bytes + gv_pipe_plan_saved(pl, i); /* its need */
      if (nd > jall_need && pa->need_all)
        jall_need = nd, jall_state = pl->cost[i].state_bytes, jall_act = nd - pl->cost[i].state_bytes;
      if (nd > lim && pa->need_all) over_all = true; /* the rest planned too: the largest need */
      else if (nd > lim) { /* over the limit */
        rc = 1;
        if (!pa->analytic && (jreal_need < 0 || nd < jreal_need))
          jreal_need = nd, jreal_state = pl->cost[i].state_bytes, jreal_act = nd - pl->cost[i].state_bytes;
        snprintf(joint_why, sizeof joint_why, "stage %d needs %lld bytes: states %lld + %lld x %lld activations, over %lld", i,
                 (long long)nd, (long long)pl->cost[i].state_bytes, (long long)pl->inflight[i], (long long)pl->cost[i].act_bytes,
                 (long long)lim);
      }
    }
    /* interleaved: each device group's memory (its V stages' states, the saved bytes, send copies and batons at the
     * group's peak: gv_pipe_group_mem); a group over the limit: each of its stages' ways picked again against an
     * equal share of it (limit / V; the shares add up to at least the group's figure) */
    for (int d = 0; !rc && V > 1 && d < S / V; d++) {
      if (gv_pipe_group_mem(pl, d, NULL) <= lim) continue;
      for (int c = 0; c < V; c++) {
        const int i = c * (S / V) + d;
        if (pl->cost[i].nvar < 2) continue;
        gv_pipe_charge ch;
        stage_charge(pl, i, &ch);
        int wr = pa->choice_given ? pa->srec[i] : -1, wz = pa->choice_given ? pa->szero[i] : -1, wl = pa->choice_given ? pa->slrc[i] : -1;
        int v = gv_stage_cost_pick(&pl->cost[i], &ch, lim / V, -1, pl->schedule, wr, wz, wl);
        if (v >= 0) gv_stage_cost_use(&pl->cost[i], v, pl->schedule);
      }
      const int64_t gm = gv_pipe_group_mem(pl, d, NULL);
      if (gm > lim && pa->joint) {
        rc = 1;
        if (!pa->analytic && (jreal_need < 0 || gm < jreal_need)) jreal_need = gm, jreal_state = 0, jreal_act = gm;
        snprintf(joint_why, sizeof joint_why, "device group %d (its %d stages) needs %lld bytes, over %lld", d, V,
                 (long long)gm, (long long)lim);
      } else if (gm > lim)
        rc = gv_error_plain("pipeline: device group %d (stages %d, .. every %d-th) needs %lld bytes per device, over the "
                            "memory limit of %lld", d, d, S / V, (long long)gm, (long long)lim);
    }
    if (!rc && over_all) rc = 1;
    pl->sum_ns = sum, pl->max_ns = mx, pl->step_ns = sum + (int64_t)(B - 1) * mx;
    if (!rc && plan_key(pl, train, pa->sched)) rc = -1;
    nruns = 0;
  }
  if (pa->joint && joint_minmem) { /* nothing fit: the smallest memory over the pipelines, per stage devices 1, 2, 4 ..
                                    * with as many stages as fit (S = min(gpus / k, groups), 1F1B's microbatches in
                                    * flight): the cuts minimising the largest stage's need (a bottleneck DP) */
    nruns = 0;
    enum { NE = 1 + 2 * GV_STAGE_MAX_VARS }; /* per range: the ways' count, then each way's state and act */
    int64_t *need = malloc(sizeof *need * (size_t)(k + 1) * (size_t)(k + 1) * NE);
    int64_t *f = malloc(sizeof *f * (size_t)(k + 1) * 3);
    int64_t *g2 = malloc(sizeof *g2 * (size_t)(k + 1) * 3);
    int *bp = malloc(sizeof *bp * (size_t)(k + 1) * (size_t)(k + 1)); /* bp[st][b]: where the last of st + 1 stages ending at b starts */
    rc = !need || !f || !g2 || !bp ? -1 : 1;
    for (int64_t per = 1; rc == 1 && per <= gpus; per *= 2) {
      int S2 = (int)(gpus / per < k ? gpus / per : k);
      if (S2 < 2) break;
      cs = *cluster;
      if (per < kn && S2 * per > kn) cs.devices_per_node = S2 * per, cs.nodes = 1;
      if (per > cs.devices_per_node && per % cs.devices_per_node) continue;
      actx.cluster = ictx.cluster = &cs;
      int64_t nodes = per <= cs.devices_per_node ? 1 : per / cs.devices_per_node, pn = per <= cs.devices_per_node ? per : cs.devices_per_node;
      for (int a = 0; a < k && rc == 1; a++) /* need[a][b]: state, act of groups [a, b) (-1: cannot run) */
        for (int b = a + 1; b <= k; b++) {
          gv_stage_cost c = {.feasible = false};
          /* every group is no stage of S2 >= 2 (one program's: not costed as a stage; its recomputation modes need
           * the model's repeated blocks, which a stage names by its layers) */
          if ((a || b < k) && fn(fctx, a, b, nodes, pn, B, &c)) { rc = -1; break; }
          int64_t *e = &need[((size_t)a * (size_t)(k + 1) + (size_t)b) * NE];
          e[0] = !c.feasible ? 0 : c.nvar < 2 ? 1 : c.nvar;
          for (int v = 0; v < e[0]; v++)
            e[1 + 2 * v] = c.nvar < 2 ? c.state_bytes : c.var[v].state_bytes, e[2 + 2 * v] = c.nvar < 2 ? c.act_bytes : c.var[v].act_bytes;
        }
      if (rc != 1) break;
      /* f[j]: the smallest largest need of s stages over groups [0, j); with that stage's state and act */
      for (int j = 0; j <= k; j++) f[3 * j] = j ? INT64_MAX : 0, f[3 * j + 1] = f[3 * j + 2] = 0;
      for (int st = 0; st < S2; st++) {
        int64_t infl = S2 - st < B ? S2 - st : B;
        for (int j = 0; j <= k; j++) g2[3 * j] = INT64_MAX;
        for (int a = 0; a < k; a++) {
          if (f[3 * a] == INT64_MAX) continue;
          for (int b = a + 1; b <= k; b++) {
            const int64_t *e = &need[((size_t)a * (size_t)(k + 1) + (size_t)b) * NE];
            if (e[0] < 1) continue;
            int bw = 0; /* the way that needs the least with infl microbatches in flight (1F1B: any way) */
            for (int w = 1; w < e[0]; w++)
              if (e[1 + 2 * w] + infl * e[2 + 2 * w] < e[1 + 2 * bw] + infl * e[2 + 2 * bw]) bw = w;
            int64_t es = e[1 + 2 * bw], ea = e[2 + 2 * bw];
            int64_t nd = es + infl * ea, v = nd > f[3 * a] ? nd : f[3 * a];
            if (v < g2[3 * b])
              g2[3 * b] = v, g2[3 * b + 1] = nd > f[3 * a] ? es : f[3 * a + 1], g2[3 * b + 2] = nd > f[3 * a] ? infl * ea : f[3 * a + 2],
              bp[(size_t)st * (size_t)(k + 1) + (size_t)b] = a;
          }
        }
        memcpy(f, g2, sizeof *f * (size_t)(k + 1) * 3);
      }
      if (f[3 * k] != INT64_MAX && (jmin_need < 0 || f[3 * k] < jmin_need))
        jmin_need = f[3 * k], jmin_state = f[3 * k + 1], jmin_act = f[3 * k + 2], jmin_S = S2, jmin_per = per;
      if (f[3 * k] != INT64_MAX && S2 <= GV_PIPE_MAX_STAGES && njmc < JMC_MAX) {
        int *cf = jmc[njmc].first;
        jmc[njmc].need = f[3 * k], jmc[njmc].per = per, jmc[njmc].S = S2, cf[S2] = k;
        for (int st = S2 - 1; st >= 0; st--) cf[st] = bp[(size_t)st * (size_t)(k + 1) + (size_t)cf[st + 1]];
        njmc += cf[0] == 0;
      }
    }
    free(need), free(f), free(g2), free(bp);
    if (rc == -1 && (!need || !f || !g2 || !bp)) gv_error_plain("out of memory");
  }
  gv_pipe_table *ptable = nruns > 1 ? gv_pipe_table_new() : NULL; /* one table of stage costs for the runs' solves */
  /* the screen's equal-stage runs of the same devices per stage and cluster view read each other's analytic costs
   * (gv_pipe_problem.keep_costs; the table emptied when those change: a free run's costs over every sub-mesh are
   * not kept) */
  int64_t kept_per = -1, kept_dpn = -1, kept_nodes = -1;
  for (int ri = 0; ri < nruns && rc >= 0; ri++) {
    dp_run *R = &runs[ri];
    if (pa->joint && R->S == 1) continue; /* one stage is the single program's (the default search plans it) */
    int64_t minper = R->per ? R->per : 1;
    for (int i = 0; R->sdev && i < R->S; i++) minper = R->sdev[i] < minper || i == 0 ? R->sdev[i] : minper;
    /* stages smaller than a node on more than one node: the DP's sub-meshes
     * across nodes are whole nodes, so such stages are planned on a
     * one-node view of D devices (each stage inside a node; its links
     * costed inside a node). The free run keeps the cluster as it is. */
    cs = *cluster;
    if ((R->per || R->sdev) && minper < kn && R->D > kn) cs.devices_per_node = R->D, cs.nodes = 1;
    if (R->per && (cs.devices_per_node >= R->D ? (R->per & (R->per - 1)) && R->per != R->D : R->per % kn)) continue; /* no sub-mesh */
    actx.cluster = &cs;
    ictx.cluster = &cs;
    const bool keep = pa->joint && pa->analytic && R->per > 0 && ptable;
    if (keep && (R->per != kept_per || cs.devices_per_node != kept_dpn || cs.nodes != kept_nodes)) gv_pipe_table_empty(ptable);
    kept_per = keep ? R->per : -1, kept_dpn = cs.devices_per_node, kept_nodes = cs.nodes;
    for (int si = 0; si < nsch && rc >= 0; si++) {
      /* interleaved: the P groups' P x V stages, a device each in the DP's view (the timeline puts V on a group) */
      const int il = sch[si] == GV_SCHED_INTERLEAVED, V = il ? pa->vstages : 1;
      if (il && (!R->S || B % R->S)) continue; /* B a multiple of the groups (galvc refuses a fixed B that is not) */
      gv_pipe_problem pp = {.ngroups = k, .sig = g.sig, .cluster = &cs, .devices = R->D * V, .mesh_devices = R->per,
                            .stage_devices = R->sdev, .mb_choices = mbc, .nmb = 1, .schedule = sch[si], .vstages = V,
                            .mem_limit = gv_plan_opts.memory_limit, .stages = R->S * V, .cost = fn, .ctx = fctx,
                            .probe = pa->joint, .table = ptable, .keep_costs = keep,
                            .why_none = ictx.units_ok && fn == gv_stage_cost_intra
                                            ? " (under --profile a stage is priced by the profile's per-layer figures: it holds "
                                              "whole layers, two at least, its program finding them by their repetition)"
                                            : NULL,
                            .no_min_need = pa->joint && pa->analytic}; /* the screen: its least need is never reported
                                                                        * (galvc_pipeline_plan seeks it when nothing fits) */
      int rmbc[64], nr = 0;
      if (pa->joint && pa->analytic && joint_nmbc) { /* the screen's counts, and those of one sample or a few per data-parallel
                                                       * rank of a stage of R->per devices: global / (per / t x m), t a power
                                                       * of 2 up to a node dividing per (its tensor-parallel part), m = 1, 2, 4 */
        for (int i = 0; i < joint_nmbc; i++) rmbc[nr++] = joint_mbc[i];
        for (int64_t t = 1; R->per > 1 && t <= R->per && t <= (kn > 0 ? kn : 1); t *= 2)
          for (int64_t mm = 1; R->per % t == 0 && mm <= 4 && nr < 64; mm *= 2) {
            const int64_t d = R->per / t * mm, c = global % d ? 0 : global / d;
            bool have = c < 2 || c > INT32_MAX;
            for (int i = 0; i < nr && !have; i++) have = rmbc[i] == c;
            if (!have) rmbc[nr++] = (int)c;
          }
        pp.mb_choices = rmbc, pp.nmb = nr;
      }
      int r = gv_pipe_solve(&pp, tmp);
      if (r == 1 && pa->joint && tmp->min_need >= 0 && (jmin_need < 0 || tmp->min_need < jmin_need))
        jmin_need = tmp->min_need, jmin_state = tmp->min_state, jmin_act = tmp->min_act;
      if (r == 1 && rc == 1 && tmp->min_need >= 0 && (pl->min_need < 0 || tmp->min_need < pl->min_need))
        pl->min_need = tmp->min_need; /* no plan yet: the least need so far (--microbatches auto's error line) */
      if (r == 0 && pa->joint && tmp->nstages < 2) r = 1; /* the free run chose one stage */
      if (r == 0 && plan_key(tmp, train, pa->sched)) r = -1;
      if (r == 0 && pa->joint && screen && nscreen < SCREEN_MAX) { /* the screen's candidate: this run's plan */
        screen_cand *c = &screen[nscreen++];
        c->S = tmp->nstages, c->B = tmp->B, c->per = R->per, c->key = tmp->tl_ns;
        for (int i = 0; i < tmp->nstages; i++) c->sdev[i] = (int)(tmp->nodes[i] * tmp->per_node[i]);
        for (int i = 0; i <= tmp->nstages; i++) c->first[i] = tmp->first[i];
      }
      if (r < 0) rc = -1;
      else if (r == 0 && (rc == 1 || tmp->tl_ns < pl->tl_ns)) *pl = *tmp, rc = 0, cs_best = cs;
    }
  }
  gv_pipe_table_free(ptable);
  actx.cluster = ictx.cluster = &cs_best;
  if (rc == 0 && pa->cuts == 2) { /* --stage-cuts equal: the DP's sub-meshes, groups cut at i k / S, costed alike */
    int64_t sum = 0, mx = 0;
    for (int i = 0; i <= pl->nstages; i++) pl->first[i] = (int)((int64_t)i * k / pl->nstages);
    for (int i = 0; i < pl->nstages && rc == 0; i++) {
      if (fn(fctx, pl->first[i], pl->first[i + 1], pl->nodes[i], pl->per_node[i], B, &pl->cost[i])) rc = -1;
      else if (!pl->cost[i].feasible) rc = 1;
      else sum += pl->cost[i].ns, mx = pl->cost[i].ns > mx ? pl->cost[i].ns : mx;
    }
    pl->sum_ns = sum, pl->max_ns = mx, pl->step_ns = sum + (int64_t)(B - 1) * mx;
    if (rc == 0 && plan_key(pl, train, pa->sched)) rc = -1;
  }
  if (!quiet && !pa->analytic && !pa->joint)
    fprintf(stderr, "galvc: stage costs for B = %d: %lld stage programs planned in %.3f s\n", B, (long long)ictx.plans, ictx.seconds);
  gv_intra_stage_ctx_free(&ictx);
  free(gs);
  gv_pipe_shared_params_free(sh, nsh);
  free(tmp);
  gv_module_free(m);
  *plan_s += now() - t0;
  return rc;
}

/* Stage module m's input or output named name, NULL when none. */
static const gv_value *stage_value(const gv_module *m, const char *name) {
  const gv_func *f = m->main;
  for (int i = 0; i < f->body->nargs; i++)
    if (f->arg_names[i] && !strcmp(f->arg_names[i], name)) return f->body->args[i];
  const gv_op *ret = f->body->last;
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds; i++)
    if (f->res_names[i] && !strcmp(f->res_names[i], name)) return ret->opnds[i];
  return NULL;
}

/* The type of stage module m's input or output named name, NULL when none. */
static const gv_type *stage_value_type(const gv_module *m, const char *name) {
  const gv_value *v = stage_value(m, name);
  return v ? &v->type : NULL;
}

/* The bytes of value name as stage module m stores it (its storage: 16-bit for a crossing value under bf16 / fp16);
 * 64 for an empty one, 0 when m has none (runtime/pipe.c il_keep: a send's copy). */
static int64_t stage_value_copy_bytes(const gv_module *m, const char *name) {
  const gv_value *v = stage_value(m, name);
  int64_t b = v ? gv_value_storage_bytes(v) : 0;
  return !v ? 0 : b > 0 ? b : 64;
}

/* Its global type (a partitioned stage holds a crossing value kept split as its block: the dims times the split). */
static bool stage_value_global(const gv_module *m, const char *name, gv_type *t) {
  const gv_value *v = stage_value(m, name);
  if (!v) return false;
  *t = v->type;
  const gv_sharding *sh = gv_value_sharding(m, v);
  for (int d = 0; sh && d < t->rank && d < sh->rank; d++) t->dims[d] *= gv_sharding_dim_split(sh, d);
  return true;
}

/* The dtype stage module m holds its input or output named name in (16-bit
 * storage: bf16 / f16 for an f32 crossing value, ir/storage.h), or its
 * type's when m has no value of that name. */
static gv_dtype stage_value_storage(const gv_module *m, const char *name) {
  const gv_func *f = m->main;
  for (int i = 0; i < f->body->nargs; i++)
    if (f->arg_names[i] && !strcmp(f->arg_names[i], name)) return gv_value_storage(f->body->args[i]);
  const gv_op *ret = f->body->last;
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds; i++)
    if (f->res_names[i] && !strcmp(f->res_names[i], name)) return gv_value_storage(ret->opnds[i]);
  return GV_DT_COUNT;
}

/* Each transfer's element dtype as the stages written so far hold it: the
 * sender's and the receiver's tables must agree (a value sent 16-bit is
 * received 16-bit), checked as each stage's table is written. */
static struct {
  char name[256];
  int grad;
  gv_dtype dt;
} xdt[4 * GV_PIPE_MAX_STAGES * 64];
static int nxdt;

static int xfer_dtype_check(int s, const char *name, int grad, gv_dtype dt) {
  for (int i = 0; i < nxdt; i++)
    if (xdt[i].grad == grad && !strcmp(xdt[i].name, name)) {
      if (xdt[i].dt != dt)
        return gv_error_plain("pipeline: stage %d holds %s'%s' as %s, its peer as %s (the storage of a crossing value differs "
                              "between the stages)", s, grad ? "the gradient of " : "", name, gv_dtype_name(dt), gv_dtype_name(xdt[i].dt));
      return 0;
    }
  if (nxdt < (int)(sizeof xdt / sizeof *xdt) && strlen(name) < sizeof xdt[0].name) {
    snprintf(xdt[nxdt].name, sizeof xdt[nxdt].name, "%s", name);
    xdt[nxdt].grad = grad, xdt[nxdt++].dt = dt;
  }
  return 0;
}

/* pipe_stage.c's galv_pipe_xfers: per value stage s sends or receives (and,
 * training, per gradient going back), the cross-mesh plan (planner/cross_mesh.c,
 * the plan stage-split prints): replicated on the sender's dev[from] devices ->
 * replicated on the receiver's dev[to], local all-gather on. m: stage s's module
 * (the crossing values are replicated: global types); mb: its backward entry
 * (training with a stash: the gradients' inputs and outputs), else NULL. */
static int write_xfers(FILE *f, const gv_module *m, const gv_module *mb, const gv_stage_io *io, int s, const int *dev,
                       const pipe_args *pa, int train, const gv_cluster *cl) {
  typedef struct { const char *name; int grad, from, to; } xf;
  xf *list = malloc(sizeof *list * (size_t)(2 * (io->nin + io->nout * GV_PIPE_MAX_STAGES) + 1));
  if (!list) return gv_error_plain("out of memory");
  int n = 0;
  char gname[300];
  for (int i = 0; i < io->nin; i++) {
    list[n++] = (xf){io->in[i].name, 0, io->in[i].peer, s};
    snprintf(gname, sizeof gname, "grad:%s", io->in[i].name);
    if (train && stage_value_type(mb ? mb : m, gname)) list[n++] = (xf){io->in[i].name, 1, s, io->in[i].peer};
  }
  for (int i = 0; i < io->nout; i++)
    for (int st = 0; st < GV_PIPE_MAX_STAGES && st < 64; st++)
      if (io->out[i].dst_mask >> st & 1) {
        list[n++] = (xf){io->out[i].name, 0, s, st};
        snprintf(gname, sizeof gname, "gin:%s", io->out[i].name);
        if (train && stage_value_type(mb ? mb : m, gname)) list[n++] = (xf){io->out[i].name, 1, st, s};
      }
  int rc = 0;
  gv_type *tt = calloc((size_t)n + 1, sizeof *tt); /* per transfer: the value's type at the dtype it moves in (its storage) */
  if (!tt) rc = gv_error_plain("out of memory");
  for (int i = 0; i < n && !rc; i++) {
    if (!stage_value_global(m, list[i].name, &tt[i])) { rc = gv_error_plain("stage %d: no crossing value '%s'", s, list[i].name); break; }
    const gv_module *g = mb ? mb : m;
    if (list[i].grad) snprintf(gname, sizeof gname, "%s:%s", list[i].from == s ? "grad" : "gin", list[i].name);
    gv_dtype dt = list[i].grad ? stage_value_storage(g, gname) : stage_value_storage(m, list[i].name);
    if (dt != GV_DT_COUNT) tt[i].dtype = dt;
    rc = xfer_dtype_check(s, list[i].name, list[i].grad, tt[i].dtype);
  }
  for (int i = 0; i < n && !rc; i++) { /* the tiles */
    const gv_type *t = &tt[i];
    gv_mesh ma = stage_mesh(pa, dev[list[i].from]), mb = stage_mesh(pa, dev[list[i].to]);
    /* kept split (xs_split): the sender's rows to the receiver holding the same rows, no local all-gather */
    gv_sharding src = xs_sharding(&ma, t), dst = xs_sharding(&mb, t);
    gv_xmesh_plan pl;
    if (gv_xmesh_plan_make(t, &src, &dst, !dst.naxes[0], &pl)) { rc = gv_error_plain("stage %d: value '%s': cannot plan the transfer", s, list[i].name); break; }
    const int q = xs_scatter(&ma, &mb, t, cl); /* > 1: each block scattered over its q ranks and gathered (no tiles) */
    fprintf(f, "static const galv_pipe_tile xfer_tiles%d[] = {\n", i);
    for (int k = 0; q < 2 && k < pl.nx; k++) {
      fprintf(f, "    {%d, %d, {", pl.x[k].src, pl.x[k].dst);
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)pl.x[k].off[d]);
      fprintf(f, "%s}, {", t->rank ? "" : "0");
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)pl.x[k].len[d]);
      fprintf(f, "%s}},\n", t->rank ? "" : "0");
    }
    fprintf(f, "    {0, 0, {0}, {0}}};\n");
    if (q > 1) /* every byte of the value crosses once */
      fprintf(f, "#define XFER%d 0, xfer_tiles%d, 0, %lldll, %lldll, %d\n", i, i, (long long)(gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype)),
              (long long)pl.naive_bytes, q);
    else
      fprintf(f, "#define XFER%d %d, xfer_tiles%d, %d, %lldll, %lldll, 0\n", i, pl.nx, i, pl.ag_dim >= 0, (long long)pl.bytes,
              (long long)pl.naive_bytes);
    gv_xmesh_free(&pl);
  }
  if (!rc) {
    fprintf(f, "const galv_pipe_xfer galv_pipe_xfers[] = {\n");
    for (int i = 0; i < n; i++) {
      const gv_type *t = &tt[i];
      fprintf(f, "    {\"%s\", %d, %d, %d, %s, %d, {", list[i].name, list[i].grad, list[i].from, list[i].to, cg_rt_dtype(t->dtype), t->rank);
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
      fprintf(f, "%s}, XFER%d},\n", t->rank ? "" : "0", i);
    }
    fprintf(f, "    {0}};\nconst int galv_pipe_nxfers = %d;\n", n);
  }
  free(list);
  free(tt);
  return rc;
}

/* The devices of each stage of the plan (the per-stage device array every
 * later step reads: stage meshes, transfer plans, ranks, launch):
 * --stage-devices, else the stage DP's sub-mesh of the stage (--gpus / S
 * each with S fixed; its own choice with auto). *gpus: their sum. */
static int pipe_stage_devices(const pipe_args *P, const gv_pipe_plan *pl, int64_t *gpus, int *dev) {
  int S = pl->nstages;
  *gpus = 0;
  for (int i = 0; i < S; i++) {
    dev[i] = P->nsdev ? P->sdev[i] : (int)(pl->nodes[i] * pl->per_node[i]); /* --stage-devices, else the stage DP's sub-mesh */
    *gpus += dev[i];
  }
  return 0;
}

/* Stage s's module: a fresh import through the front passes, cut to the
 * stage (its training function with --train), partitioned over the stage's
 * devices when it has more than one (--strategy, else the intra-operator
 * planner). NULL after one error line. */
static gv_module *stage_module(const char *model, const gv_import_options *opt, int K, const gv_pipe_plan *pl, int s, int S,
                               int train, int per, const pipe_args *pa, const gv_cluster *cluster, int verify_each,
                               gv_stage_io *io) {
  gv_module *ms = pipe_front(model, opt, 0, 1, verify_each);
  gv_layer_groups g2;
  /* the stage's per-layer recomputation: --recompute's, else the stage DP's way (docs/pipeline.md, "Recomputation
   * per layer inside stages"); gv_stage_train runs the recompute pass with it */
  const char *keep = gv_train_opts.recompute;
  if (train && !pa->layer_rc_given) gv_train_opts.recompute = gv_layer_rc_name(pl->cost[s].layer_rc);
  if (ms && (gv_cluster_layers(ms, K, &g2) || gv_pipe_assign_stages(ms, pl->first, S) || gv_stage_extract(ms, s, S, io) ||
             (train && gv_stage_train(ms, s, S)) ||
             (per > 1 && (gv_verify(ms) || (pa->naxes && !pl->cost[s].planner_plan ? partition_stage(ms, pa, per, 1, verify_each)
                                                                                   : plan_stage(ms, per, opt->batch, cluster, verify_each)))))) {
    gv_module_free(ms);
    ms = NULL;
  }
  gv_train_opts.recompute = keep;
  return ms;
}

/* The back passes (fuse, storage, memory-plan) on a stage entry, its returned values' shardings kept: a crossing
 * value kept split (xs_split) is returned as its block, and codegen's output table (galv_output_split, which the
 * runtime's transfers read) takes the block from the returned value's sharding, which a fused producer (galv.fused)
 * does not carry; set on the value that stands for it afterwards. */
static int run_back(gv_module *m, const char *const *back, int verify_each) {
  gv_op *ret = gv_block_terminator(m->main->body);
  int n = ret ? ret->nopnds : 0;
  const gv_sharding **sh = calloc((size_t)n + 1, sizeof *sh);
  if (!sh) return gv_error_plain("out of memory");
  const gv_func *f = m->main;
  for (int i = 0; i < n; i++) {
    const char *rn = i < f->nres_names && f->res_names ? f->res_names[i] : NULL;
    const gv_sharding *h = rn && (!strncmp(rn, "pp.", 3) || !strncmp(rn, "grad:pp.", 8)) ? gv_value_sharding(m, ret->opnds[i]) : NULL;
    sh[i] = h && !h->partial && cg_is_split(h) ? h : NULL;
  }
  int rc = run_named(m, back, 3, 1, verify_each);
  ret = gv_block_terminator(m->main->body);
  /* which returned values lack a sharding, known before any is set: a producer returning two of them (a fused
   * chain's two gradients) gets both (setting the first gives the other a replicated placeholder) */
  bool *lack = calloc((size_t)n + 1, sizeof *lack);
  if (!lack) rc = gv_error_plain("out of memory");
  for (int i = 0; !rc && ret && i < n && i < ret->nopnds; i++)
    lack[i] = sh[i] && ret->opnds[i]->def && !gv_value_sharding(m, ret->opnds[i]);
  for (int i = 0; !rc && ret && i < n && i < ret->nopnds; i++) {
    gv_op *d = ret->opnds[i]->def;
    if (!lack[i]) continue;
    const gv_sharding **ds = calloc((size_t)d->nres + 1, sizeof *ds);
    if (!ds) { rc = gv_error_plain("out of memory"); break; }
    for (int r = 0; r < d->nres; r++) /* the producer's other results: their shardings, else replicated (the verifier
                                         * wants one per result) */
      if (!(ds[r] = gv_op_sharding(d, r))) ds[r] = gv_sharding_new(m, sh[i]->mesh, d->res[r]->type.rank);
    ds[ret->opnds[i]->index] = sh[i];
    gv_set_shardings(m, d, ds);
    free(ds);
  }
  free(lack);
  free(sh);
  return rc;
}

/* The two entries of a stage read one parameter layout (weights.bin and
 * weights_bwd.bin start alike; the runtime updates both): the same
 * parameters, in order, of the same types. */
static int same_params(gv_module *f, gv_module *b) {
  gv_func *x = f->main, *y = b->main;
  int i = 0, j = 0;
  for (;; i++, j++) {
    while (i < x->body->nargs && !x->arg_is_param[i]) i++;
    while (j < y->body->nargs && !y->arg_is_param[j]) j++;
    if (i == x->body->nargs || j == y->body->nargs) break;
    if (strcmp(x->arg_names[i], y->arg_names[j]) || !gv_type_equal(&x->body->args[i]->type, &y->body->args[j]->type))
      return gv_error_plain("pipeline: the stage's forward and backward entries differ in parameter '%s'", x->arg_names[i]);
  }
  if (i != x->body->nargs || j != y->body->nargs) return gv_error_plain("pipeline: the stage's forward and backward entries differ in their parameters");
  return 0;
}

static int compile_stages(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, gv_cluster *cluster,
                          const char *out, int quiet, int build, int verify_each, int train, const gv_cuda_options *cuda);

/* A stage's ZeRO (GV_ZERO_*): the stage DP's way, or --pipeline-zero's given for every stage (its form:
 * --zero-reduce's, else the way's) */
static int stage_zero(const pipe_args *pa, const gv_stage_cost *c) {
  int z = c->zero_ranks > 1 ? (c->zero ? c->zero : GV_ZERO_1) : GV_ZERO_NONE;
  if (pa->zero == 1 && z != GV_ZERO_1) z = GV_ZERO_1;
  if (pa->zero == 2 && z < GV_ZERO_2) z = pa->zero_reduce == 2 ? GV_ZERO_2_EACH : GV_ZERO_2;
  return z;
}

/* plan.json for a pipelined plan (docs/planner.md, "Report and plan.json"):
 * the stages as chosen (count, cuts over the layer groups, devices per
 * stage, microbatches, schedule) and, per stage, the intra-operator plan in
 * words and its predicted time per microbatch. --plan FILE compiles the
 * same stages (galvc_plan_read_pipeline); each stage's sharding is planned
 * again (the planner is deterministic), not read. */
static int write_pipe_plan(const char *path, const pipe_args *P, const gv_pipe_plan *pl, int K, const int *dev,
                           const gv_cluster *c, int train, int quiet) {
  galv_wfile w;
  FILE *f = galvc_open_out(&w, path, 0);
  if (!f) return -1;
  int S = pl->nstages;
  fprintf(f, "{\n  \"cluster\": \"%s\",\n  \"devices_per_node\": %lld,\n  \"memory_limit\": %lld,\n", c->name,
          (long long)c->devices_per_node, (long long)(gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : c->memory_bytes));
  const int V = train && P->sched == GV_SCHED_INTERLEAVED && pl->vstages > 1 ? pl->vstages : 1;
  fprintf(f, "  \"pipeline\": {\"stages\": %d, \"microbatches\": %d, \"schedule\": \"%s\", ", S, pl->B,
          train ? gv_schedule_name(P->sched) : "inference");
  if (V > 1) fprintf(f, "\"virtual_stages\": %d, ", V); /* stage s on device group s mod S / V */
  fprintf(f, "\"layer_groups\": %d,%s \"cuts\": [", K, gv_pipe_opts.blocks ? " \"layer_blocks\": true," : "");
  for (int i = 0; i <= S; i++) fprintf(f, "%s%d", i ? ", " : "", pl->first[i]);
  fprintf(f, "],");
  if (P->naxes && gv_shard_opts.strategy) { /* the stages compiled from a preset (--strategy, --mesh): --plan compiles them so */
    fprintf(f, " \"stage_preset\": \"%s\",", gv_shard_opts.strategy);
    if (P->mesh_given) {
      fprintf(f, " \"stage_mesh\": \"");
      for (int a = 0; a < P->naxes; a++) fprintf(f, "%s%s=%lld", a ? "," : "", P->axn[a], (long long)P->axs[a]);
      fprintf(f, "\",");
    }
  }
  if (P->stage_limit > 0) fprintf(f, " \"stage_memory_limit\": %lld,", (long long)P->stage_limit);
  fprintf(f, " \"stage_devices\": [");
  for (int i = 0; i < S; i++) fprintf(f, "%s%d", i ? ", " : "", dev[i]);
  fprintf(f, "],\n    \"stage_strategies\": [");
  for (int i = 0; i < S; i++) fprintf(f, "%s\"%s\"", i ? ", " : "", pl->cost[i].desc);
  if (train) { /* per stage: the way it runs (recomputation: the combined program; ZeRO-1's ranks) */
    fprintf(f, "],\n    \"stage_recompute\": [");
    for (int i = 0; i < S; i++) fprintf(f, "%s%s", i ? ", " : "", P->recompute || pl->cost[i].recompute ? "true" : "false");
    fprintf(f, "], \"stage_zero\": [");
    for (int i = 0; i < S; i++) fprintf(f, "%s%d", i ? ", " : "", stage_zero(P, &pl->cost[i]) >= GV_ZERO_2 ? 2 : stage_zero(P, &pl->cost[i]));
    fprintf(f, "], \"stage_zero_reduce\": ["); /* ZeRO-2's form (other stages: "once") */
    for (int i = 0; i < S; i++)
      fprintf(f, "%s\"%s\"", i ? ", " : "", stage_zero(P, &pl->cost[i]) == GV_ZERO_2_EACH ? "per-microbatch" : "once");
    /* per-layer recomputation inside the stage program (given or chosen; a --recompute list of layers: not recorded) */
    int given = gv_layer_rc_code(P->layer_rc_given ? gv_train_opts.recompute : NULL);
    if (given != GV_LAYER_RC_LISTED) fprintf(f, "], \"stage_layer_recompute\": [");
    for (int i = 0; i < S && given != GV_LAYER_RC_LISTED; i++)
      fprintf(f, "%s\"%s\"", i ? ", " : "", gv_layer_rc_name(P->layer_rc_given ? given : pl->cost[i].layer_rc));
    fprintf(f, "], \"stage_bytes\": [");
    for (int i = 0; i < S; i++)
      fprintf(f, "%s%lld", i ? ", " : "", (long long)(pl->cost[i].state_bytes + gv_pipe_plan_saved(pl, i)));
    if (V > 1) { /* a device's memory: its group's V stages and what the group holds at its peak (gv_pipe_group_mem) */
      fprintf(f, "], \"group_bytes\": [");
      for (int d = 0; d < S / V; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)gv_pipe_group_mem(pl, d, NULL));
    }
  }
  fprintf(f, "], \"stage_ns_per_microbatch\": [");
  for (int i = 0; i < S; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)pl->cost[i].ns);
  if (train) { /* of it: the runtime's gradient sum per microbatch */
    fprintf(f, "], \"stage_grad_add_ns\": [");
    for (int i = 0; i < S; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)pl->cost[i].grad_ns);
  }
  /* the whole step (the key the plan was chosen by) = the schedule's part + the once-per-step part (sync_ns) */
  const int64_t once = gv_pipe_plan_once_ns(pl), sched = gv_pipe_plan_parts(pl).sched;
  fprintf(f, "],\n    \"predicted_step_ns\": %lld, \"schedule_ns\": %lld, \"sync_ns\": %lld},\n", (long long)(sched + once),
          (long long)sched, (long long)once);
  if (P->plan_note) fprintf(f, "  \"joint\": %s,\n", P->plan_note);
  bool anyrc = false;
  for (int i = 0; i < S; i++) anyrc |= pl->cost[i].recompute;
  gv_plan_write_numerics(f, train);
  if (train) fprintf(f, "  \"seed\": %llu,\n", (unsigned long long)gv_train_opts.seed); /* the dropout masks' seed */
  fprintf(f, "  \"recompute\": \"%s\"\n}\n", train && (P->recompute || anyrc) ? "pipeline" : "none");
  int rc = galvc_close_out(&w, 0);
  if (!rc && !quiet) fprintf(stderr, "plan: wrote %s\n", path);
  return rc;
}

int galvc_plan_read_pipeline(const char *path, pipe_args *pa, bool *found) {
  *found = false;
  char *buf = NULL, err[256];
  size_t len = 0;
  if (galv_read_whole(path, 16 << 20, &buf, &len, err, sizeof err)) return gv_error_plain("%s: %s", path, err);
  gv_json *root = gv_json_parse(buf, len, err, sizeof err);
  free(buf);
  if (!root) return gv_error_plain("%s: not valid JSON: %s", path, err);
  const gv_json *p = gv_json_get(root, "pipeline");
  int rc = 0;
  if (!p) { gv_json_free(root); return 0; }
  const gv_json *st = gv_json_get(p, "stages"), *mb = gv_json_get(p, "microbatches"), *sc = gv_json_get(p, "schedule"),
                *lg = gv_json_get(p, "layer_groups"), *lb = gv_json_get(p, "layer_blocks"), *cu = gv_json_get(p, "cuts"), *sd = gv_json_get(p, "stage_devices");
#define INT_IN(v, lo, hi) ((v) && (v)->kind == GV_JSON_NUMBER && (v)->num >= (lo) && (v)->num <= (hi) && (v)->num == (double)(int64_t)(v)->num)
  int line = p->line;
  if (!INT_IN(st, 1, GV_PIPE_MAX_STAGES)) rc = gv_error_plain("%s: line %d: field 'pipeline.stages': expected an integer from 1 to %d", path, st ? st->line : line, GV_PIPE_MAX_STAGES);
  else if (!INT_IN(mb, 1, 1000000)) rc = gv_error_plain("%s: line %d: field 'pipeline.microbatches': expected an integer from 1 to 1000000", path, mb ? mb->line : line);
  else if (!INT_IN(lg, st->num, 1000000)) rc = gv_error_plain("%s: line %d: field 'pipeline.layer_groups': expected an integer of at least the stages", path, lg ? lg->line : line);
  else if (lb && lb->kind != GV_JSON_BOOL) rc = gv_error_plain("%s: line %d: field 'pipeline.layer_blocks': expected true or false", path, lb->line);
  else if (!sc || sc->kind != GV_JSON_STRING || (strcmp(sc->str, "1f1b") && strcmp(sc->str, "gpipe") && strcmp(sc->str, "zb-h1") &&
                                                 strcmp(sc->str, "interleaved") && strcmp(sc->str, "inference")))
    rc = gv_error_plain("%s: line %d: field 'pipeline.schedule': expected \"1f1b\", \"gpipe\", \"zb-h1\", \"interleaved\" or "
                        "\"inference\"", path, sc ? sc->line : line);
  const gv_json *vs = rc ? NULL : gv_json_get(p, "virtual_stages"); /* interleaved: the chunks per device group */
  const bool il = !rc && !strcmp(sc->str, "interleaved");
  if (!rc && il && (!INT_IN(vs, 2, 64) || (int)st->num % (int)vs->num || (int)st->num / (int)vs->num < 2))
    rc = gv_error_plain("%s: line %d: field 'pipeline.virtual_stages': expected the chunks per device group of the interleaved "
                        "schedule, an integer from 2 dividing the stages into 2 groups or more", path, vs ? vs->line : line);
  else if (!rc && !il && vs)
    rc = gv_error_plain("%s: line %d: field 'pipeline.virtual_stages': only with the schedule \"interleaved\"", path, vs->line);
  else if (!cu || cu->kind != GV_JSON_ARRAY || cu->n != (int)st->num + 1)
    rc = gv_error_plain("%s: line %d: field 'pipeline.cuts': expected an array of stages + 1 group indices", path, cu ? cu->line : line);
  else if (!sd || sd->kind != GV_JSON_ARRAY || sd->n != (int)st->num)
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_devices': expected an array of one device count per stage", path, sd ? sd->line : line);
  int S = rc ? 0 : (int)st->num, K = rc ? 0 : (int)lg->num;
  for (int i = 0; !rc && i <= S; i++) {
    const gv_json *v = &cu->items[i];
    int lo = i ? pa->first[i - 1] + 1 : 0, hi = i == S ? K : K - 1;
    if (!INT_IN(v, i ? lo : 0, i ? hi : 0) || (i == S && v->num != K))
      rc = gv_error_plain("%s: line %d: field 'pipeline.cuts': expected 0, then increasing group indices, last the layer groups (%d)",
                          path, v->line, K);
    else pa->first[i] = (int)v->num;
  }
  for (int i = 0; !rc && i < S; i++) {
    const gv_json *v = &sd->items[i];
    if (!INT_IN(v, 1, 65536)) rc = gv_error_plain("%s: line %d: field 'pipeline.stage_devices': expected positive integers", path, v->line);
    else pa->sdev[i] = (int)v->num;
  }
  /* optional (plans before the stage DP chose them): each stage's recomputation and ZeRO-1 */
  const gv_json *sr = rc ? NULL : gv_json_get(p, "stage_recompute"), *sz = rc ? NULL : gv_json_get(p, "stage_zero");
  const gv_json *sl = rc ? NULL : gv_json_get(p, "stage_layer_recompute");
  const gv_json *szr = rc ? NULL : gv_json_get(p, "stage_zero_reduce");
  if (szr && (szr->kind != GV_JSON_ARRAY || szr->n != S))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_zero_reduce': expected an array of one \"once\" / \"per-microbatch\" "
                        "per stage", path, szr->line);
  if (sl && (sl->kind != GV_JSON_ARRAY || sl->n != S))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_layer_recompute': expected an array of one \"none\" / \"selective\" / "
                        "\"all\" per stage", path, sl->line);
  if (sr && (sr->kind != GV_JSON_ARRAY || sr->n != S))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_recompute': expected an array of one true / false per stage", path, sr->line);
  else if (sz && (sz->kind != GV_JSON_ARRAY || sz->n != S))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_zero': expected an array of one 0 / 1 / 2 per stage", path, sz->line);
  for (int i = 0; !rc && i < S; i++) {
    pa->srec[i] = pa->szero[i] = pa->slrc[i] = -1;
    const gv_json *li = sl ? &sl->items[i] : NULL;
    int lc = !li || li->kind != GV_JSON_STRING ? -1 : !strcmp(li->str, "none") ? GV_LAYER_RC_NONE
             : !strcmp(li->str, "selective") ? GV_LAYER_RC_SELECTIVE : !strcmp(li->str, "all") ? GV_LAYER_RC_ALL : -1;
    if (li && lc < 0) {
      rc = gv_error_plain("%s: line %d: field 'pipeline.stage_layer_recompute': expected \"none\", \"selective\" or \"all\"", path,
                          li->line);
      break;
    }
    pa->slrc[i] = (signed char)lc;
    if (sr && sr->items[i].kind != GV_JSON_BOOL)
      rc = gv_error_plain("%s: line %d: field 'pipeline.stage_recompute': expected true or false", path, sr->items[i].line);
    else if (sz && !INT_IN(&sz->items[i], 0, 2))
      rc = gv_error_plain("%s: line %d: field 'pipeline.stage_zero': expected 0, 1 or 2", path, sz->items[i].line);
    else {
      if (sr) pa->srec[i] = sr->items[i].b ? 1 : 0;
      if (sz) pa->szero[i] = (signed char)sz->items[i].num;
      const gv_json *zr = szr ? &szr->items[i] : NULL;
      if (zr && (zr->kind != GV_JSON_STRING || (strcmp(zr->str, "once") && strcmp(zr->str, "per-microbatch"))))
        rc = gv_error_plain("%s: line %d: field 'pipeline.stage_zero_reduce': expected \"once\" or \"per-microbatch\"", path, zr->line);
      else if (zr && pa->szero[i] == 2 && !strcmp(zr->str, "per-microbatch")) pa->szero[i] = GV_ZERO_2_EACH;
    }
  }
  if (!rc) pa->choice_given = sr || sz || sl;
  /* the stages' preset (the stage programs compiled from --strategy / --mesh, their crossing values split over dp) */
  const gv_json *spr = rc ? NULL : gv_json_get(p, "stage_preset"), *smh = rc ? NULL : gv_json_get(p, "stage_mesh");
  static char preset[64], pmesh[256];
  pa->preset = pa->preset_mesh = NULL;
  if (spr && (spr->kind != GV_JSON_STRING || (strcmp(spr->str, "dp") && strcmp(spr->str, "tp") && strcmp(spr->str, "dp,tp") && strcmp(spr->str, "dp,tp,sp"))))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_preset': expected \"dp\", \"tp\", \"dp,tp\" or \"dp,tp,sp\"", path, spr->line);
  else if (smh && (smh->kind != GV_JSON_STRING || !spr || strlen(smh->str) >= sizeof pmesh))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_mesh': expected a mesh such as \"dp=2,tp=4\" beside stage_preset", path,
                        smh->line);
  else if (spr) {
    snprintf(preset, sizeof preset, "%s", spr->str), pa->preset = preset;
    if (smh) snprintf(pmesh, sizeof pmesh, "%s", smh->str), pa->preset_mesh = pmesh;
  }
  /* the stage programs' own limit in their searches (the default search's least-memory pipeline) */
  const gv_json *sml = rc ? NULL : gv_json_get(p, "stage_memory_limit");
  if (sml && !INT_IN(sml, 1, 1e15))
    rc = gv_error_plain("%s: line %d: field 'pipeline.stage_memory_limit': expected a byte count of at least 1", path, sml->line);
#undef INT_IN
  if (!rc) {
    *found = true;
    pa->stage_limit = sml ? (int64_t)sml->num : 0;
    pa->on = true, pa->cuts_given = true;
    pa->stages = S, pa->nsdev = S, pa->B = (int)mb->num, pa->layers = K;
    if (lb && lb->kind == GV_JSON_BOOL && lb->b) gv_pipe_opts.blocks = true; /* the groups are the blocks (K of them) */
    pa->sched = !strcmp(sc->str, "gpipe") ? GV_SCHED_GPIPE : !strcmp(sc->str, "zb-h1") ? GV_SCHED_ZBH1
                : !strcmp(sc->str, "interleaved") ? GV_SCHED_INTERLEAVED : GV_SCHED_1F1B;
    pa->vstages = pa->sched == GV_SCHED_INTERLEAVED ? (int)vs->num : 0; /* the S stages are P x V chunks */
  }
  gv_json_free(root);
  return rc ? -1 : 0;
}

static int cand_cmp(const void *a, const void *b) {
  const screen_cand *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The default search's pipeline side: the stage DP over every microbatch
 * count (divisors of the batch) with the analytic stage cost screens the
 * stage counts and devices per stage (S >= 2; galvc_pipeline_search);
 * after one program's search (galvc_pipeline_plan) the JOINT_TOP fastest
 * distinct candidates are planned again with stage costs from the
 * intra-operator planner (each stage program planned), and the fastest of
 * those is the answer. A candidate whose analytic step is over JOINT_SKIP
 * times one program's predicted step is not planned, nor any after it
 * (the screen is sorted): the analytic stage cost leaves out what the
 * stage programs' plans add (their collectives' exposure, the memory
 * plan), so the planned step has been above the analytic one (Llama2-7B /
 * 64: 3060.8 -> 4583.2 ms; the GPT-3 shape, 12 layers / 1024: 7280.8 ->
 * 10446.5, 7971.2 -> 12227.7, 8201.1 -> 11976.9 ms). GALV_PIPE_SKIP=off
 * plans them. */
enum { JOINT_TOP = 3 };
#define JOINT_SKIP 1.25
#define RECUT_MAX 16 /* the chosen pipeline's cut moves tried at most (plan_candidates) */
enum { IL_VMAX = 4 };  /* the default search's interleaved forms of a candidate: 2 .. IL_VMAX chunks per device group */
static struct { /* the screen's state between galvc_pipeline_search and galvc_pipeline_plan */
  bool on;
  const char *model;
  gv_import_options opt;
  pipe_args P;
  gv_cluster cl;
  int64_t global, gpus;
  int K, quiet, train;
  double plan_s;
  /* the options as the screen ran: one program's search sets some (the recomputation mode tried last, the planner's
   * probe and stand-in counts); the candidates are planned under the screen's, as when they were planned first */
  gv_train_options train_opts;
  gv_plan_options plan_opts;
  gv_shard_options shard_opts;
  gv_pipe_options pipe_opts;
} pend;

int galvc_pipeline_search(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, const gv_cluster *cluster0,
                          int quiet, int train, galvc_pipe_choice *out) {
  memset(out, 0, sizeof *out);
  out->min_need = -1;
  double t0 = now(), c0 = cpu_now();
  pend.on = false;
  pipe_args P = *pa0;
  P.joint = true, P.stages = 0, P.B = 0, P.nsdev = 0, P.analytic = true, P.cuts = 0, P.cuts_given = false;
  gv_cluster cl = *cluster0;
  int64_t global = 0;
  jmin_need = -1, jreal_need = -1, nscreen = 0, joint_layers = 0;
  { /* the pipeline splits dim 0 of every data input into microbatches: inputs that cannot be split plan one program
     * only (pipe_inputs would say why as an error) */
    gv_import_options o = opt;
    o.load_weights = false;
    gv_module *m = gv_import_onnx(model, &o);
    if (!m) return -1;
    const gv_func *f = m->main;
    int64_t b = -1;
    bool ok = true;
    for (int a = 0; ok && a < f->body->nargs; a++) {
      if (f->arg_is_param[a]) continue;
      const gv_type *t = &f->body->args[a]->type;
      ok = t->rank >= 1 && (b < 0 || t->dims[0] == b) && (!P.batch_given || t->dims[0] == opt.batch);
      if (ok) b = t->dims[0];
    }
    gv_module_free(m);
    if (!ok || b < 1) {
      if (!quiet) fprintf(stderr, "galvc: default search: no pipelines (the data inputs do not share a batch dim 0 to split into microbatches)\n");
      out->layers = -1;
      return 0;
    }
  }
  int rc = pipe_inputs(model, opt, &P, &global) ? -1 : 0;
  screen = rc ? NULL : calloc(SCREEN_MAX, sizeof *screen);
  gv_pipe_plan *cand = calloc(1, sizeof *cand);
  if (!rc && (!screen || !cand)) rc = gv_error_plain("out of memory");
  gv_pipe_opts.quiet = true;
  int K = 0, nb = 0;
  double plan_s = 0;
  joint_nmbc = 0;
  { /* the microbatch counts: JOINT_MAX_MB divisors of the batch spread evenly on a log scale, 1 and the batch among them */
    int div[64], nd = 0;
    for (int64_t d = 1; d <= global && nd < 64; d++)
      if (global % d == 0) div[nd++] = (int)d;
    for (int i = 0; i < JOINT_MAX_MB && nd; i++) {
      double want = pow((double)div[nd - 1], (double)i / (JOINT_MAX_MB - 1));
      int best = 0;
      for (int j = 1; j < nd; j++)
        if (fabs(log(div[j] / want)) < fabs(log(div[best] / want))) best = j;
      if (!joint_nmbc || joint_mbc[joint_nmbc - 1] < div[best]) joint_mbc[joint_nmbc++] = div[best];
    }
  }
  nb = joint_nmbc;
  if (!rc) { /* the screen: one import (at the whole batch: the analytic figures scale with it), every count in the DP */
    int r = pipe_plan_b(model, opt, global, 1, 0, gpus, &P, &cl, train, 1, 0, &K, cand, &plan_s);
    if (r < 0) rc = -1;
  }
  joint_nmbc = 0;
  out->layers = joint_layers;
  if (screen && !rc) qsort(screen, (size_t)nscreen, sizeof *screen, cand_cmp);
  out->screened = rc ? 0 : nscreen;
  if (!rc && !quiet && joint_layers >= 2)
    fprintf(stderr, "galvc: pipelines: the stage DP with the analytic stage cost screened %d microbatch count%s x stage counts "
                    "(%d layers, %d layer groups): %d candidate%s fit (%.2f s)\n", nb, nb == 1 ? "" : "s", joint_layers, K, nscreen,
            nscreen == 1 ? "" : "s", now() - t0);
  free(cand);
  out->cpu_s = cpu_now() - c0, out->wall_s = now() - t0;
  if (rc) {
    free(screen), screen = NULL;
    galvc_microbatch_done();
    return rc;
  }
  pend = (typeof(pend)){.on = true, .model = model, .opt = opt, .P = P, .cl = cl, .global = global, .gpus = gpus, .K = K,
                        .quiet = quiet, .train = train, .plan_s = plan_s, .train_opts = gv_train_opts, .plan_opts = gv_plan_opts,
                        .shard_opts = gv_shard_opts, .pipe_opts = gv_pipe_opts};
  galvc_microbatch_done();
  return 0;
}

void galvc_pipeline_options(void) {
  gv_train_opts = pend.train_opts, gv_plan_opts = pend.plan_opts, gv_shard_opts = pend.shard_opts, gv_pipe_opts = pend.pipe_opts;
}

/* The screen's candidates planned as the preset before one program's search (galvc_pipeline_early): per screen index,
 * planned so (its outcome, as pipe_plan_b returned it) */
static signed char early_r[SCREEN_MAX];
static bool early_done[SCREEN_MAX];

void galvc_pipe_preset(pipe_args *pa, int64_t dp, int64_t tp, bool sp) {
  if (tp > 1) /* dp,tp on the stage mesh dp x tp */
    pa->naxes = 2, pa->mesh_given = true, pa->axn[0] = "dp", pa->axn[1] = "tp", pa->axs[0] = dp, pa->axs[1] = tp;
  else /* dp: one axis of the stage's devices */
    pa->naxes = 1, pa->mesh_given = false, pa->axn[0] = "dp", pa->axs[0] = dp;
  gv_shard_opts.strategy = tp > 1 && sp ? "dp,tp,sp" : tp > 1 ? "dp,tp" : "dp";
}

/* the step a candidate must beat: one program's (one > 0) or the best pipeline's so far, the smaller; 0: none */
static int64_t step_to_beat(int64_t one, int64_t best) { return one > 0 && (best < 0 || one < best) ? one : best > 0 ? best : 0; }

/* out <- the planned pipeline cand (its whole step key) as the search's choice so far: stages, cuts, devices, the stages'
 * preset (dp x tp, sp; 0: the planner's plan per stage) and the plan in words */
static void take_choice(galvc_pipe_choice *out, const gv_pipe_plan *cand, const pipe_args *P, int64_t key, int K, int B, int train,
                        int64_t mdp, int64_t mtp, bool msp) {
  out->found = true;
  out->mesh_dp = mdp, out->mesh_tp = mtp, out->mesh_sp = msp, out->stage_limit = 0;
  out->S = cand->nstages, out->B = B, out->K = K, out->sched = train ? cand->schedule : GV_SCHED_1F1B;
  out->V = out->sched == GV_SCHED_INTERLEAVED && cand->vstages > 1 ? cand->vstages : 1;
  out->step_ns = key, out->once_ns = gv_pipe_plan_once_ns(cand);
  for (int s = 0; s <= cand->nstages; s++) out->first[s] = cand->first[s];
  for (int s = 0; s < cand->nstages; s++) out->stage_ns[s] = cand->cost[s].ns, out->stage_xfer_ns[s] = cand->cost[s].xfer_ns;
  size_t n = 0;
  for (int s = 0; s < cand->nstages; s++) {
    out->dev[s] = (int)(cand->nodes[s] * cand->per_node[s]);
    const char *zn = train ? gv_zero_name(stage_zero(P, &cand->cost[s])) : NULL;
    n += (size_t)snprintf(out->desc + n, n < sizeof out->desc ? sizeof out->desc - n : 0, "%s%d:%s%s%s%s%s", s ? " | " : "", out->dev[s],
                          cand->cost[s].desc, train && cand->cost[s].recompute ? ",recompute" : "", zn ? "," : "", zn ? zn : "",
                          train && cand->cost[s].layer_rc == GV_LAYER_RC_ALL         ? ",recompute=all"
                          : train && cand->cost[s].layer_rc == GV_LAYER_RC_SELECTIVE ? ",recompute=selective"
                                                                                     : "");
    if (n >= sizeof out->desc) n = sizeof out->desc - 1;
  }
}

/* Q's stage programs planned as a search's candidate (pipe_plan_b at B microbatches, S stages, g devices), quiet (no
 * spmd table), each stage compiled from the preset dp x tp (sp: dp,tp,sp) when dp > 0; a dp,tp,sp variant sp cannot
 * apply to (a sequence tp does not divide) is no plan (1), why in joint_why. Returns pipe_plan_b's outcome. */
static int plan_variant(pipe_args *Q, int64_t dp, int64_t tp, bool sp, int B, int S, int64_t g, int *K, gv_pipe_plan *cand,
                        double *plan_s) {
  const char *st_keep = gv_shard_opts.strategy;
  const bool sq_keep = gv_shard_opts.quiet;
  gv_shard_opts.quiet = true;
  if (dp) galvc_pipe_preset(Q, dp, tp, sp); /* the preset on every stage (partition_stage compiles it so; the stage cost
                                             * prices it so) */
  if (sp) gv_error_quiet++;
  gv_cluster cl = pend.cl;
  int r = pipe_plan_b(pend.model, pend.opt, pend.global, B, S, g, Q, &cl, pend.train, 1, 0, K, cand, plan_s);
  if (sp && (gv_error_quiet--, r < 0))
    r = 1, snprintf(joint_why, sizeof joint_why, "sequence parallelism does not apply to the stage programs");
  gv_shard_opts.strategy = st_keep, gv_shard_opts.quiet = sq_keep;
  return r;
}

/* The screen's candidates planned (galvc_pipeline_search's), one: one program's predicted step (-1: no program fits;
 * then, when no pipeline fits either, the smallest memory a pipeline needs). early: only the preset variants, one
 * program's step not known (galvc_pipeline_early). */
static int plan_candidates(galvc_pipe_choice *out, int64_t one, bool early) {
  double t0 = now(), c0 = cpu_now();
  const char *model = pend.model;
  gv_import_options opt = pend.opt;
  pipe_args P = pend.P;
  gv_cluster cl = pend.cl;
  int64_t global = pend.global, gpus = pend.gpus;
  int K = pend.K, quiet = pend.quiet, train = pend.train, rc = 0;
  double plan_s = pend.plan_s;
  const gv_train_options train_now = gv_train_opts;
  const gv_plan_options plan_now = gv_plan_opts;
  const gv_shard_options shard_now = gv_shard_opts;
  const gv_pipe_options pipe_now = gv_pipe_opts;
  const gv_plan_outcome last_now = gv_plan_last; /* one program's outcome (joint_finish's error reads it): kept */
  gv_train_opts = pend.train_opts, gv_plan_opts = pend.plan_opts, gv_shard_opts = pend.shard_opts, gv_pipe_opts = pend.pipe_opts;
  gv_pipe_plan *cand = calloc(1, sizeof *cand);
  if (!cand) rc = gv_error_plain("out of memory");
  const bool had = pin.glob != NULL; /* one program's search still reads the inputs read (galvc_microbatch_shapes) */
  if (!rc && !had) {
    int64_t g2 = 0;
    rc = pipe_inputs(model, opt, &P, &g2) ? -1 : 0;
  }
  const char *sk = getenv("GALV_PIPE_SKIP");
  const bool cut_on = !(sk && !strcmp(sk, "off")); /* the cuts against the step to beat (GALV_PIPE_SKIP=off: none) */
  int64_t best = out->found ? out->step_ns : -1; /* the preset variants planned early: the best of them */
  /* the candidates planned: their screen index, outcome and key (a later candidate with the same stage devices, cuts
   * and microbatches plans the same stage programs: its outcome is read, not planned again) */
  int pl_i[3 * JOINT_TOP], pl_r[3 * JOINT_TOP], pl_n[3 * JOINT_TOP], npl = 0;
  for (int i = 0, done = 0, fit = 0; !rc && i < nscreen && fit < JOINT_TOP && done < 3 * JOINT_TOP; i++) {
    screen_cand *c = &screen[i];
    /* the step to beat: one program's, and the best pipeline's planned so far (the preset ones planned early among them) */
    const int64_t beat = step_to_beat(one, best);
    const bool skip = cut_on && beat > 0;
    if (skip && (double)c->key > JOINT_SKIP * (double)beat) { /* this one and every later one (sorted): not planned */
      if (!early) out->skipped = nscreen - i, out->skip_key = c->key;
      if (!quiet)
        fprintf(stderr, "galvc: pipeline candidates from %d%s: analytic %.3f ms and slower, over %.2f x %s (%.3f ms): not planned (%d)\n",
                done + 1, early ? " (as the preset)" : "", (double)c->key / 1e6, JOINT_SKIP,
                beat == one ? "one program's predicted step" : "the best pipeline's planned step", (double)beat / 1e6, nscreen - i);
      break;
    }
    bool dup = false; /* the same stages and microbatches screened by another run */
    for (int j = 0; j < i && !dup; j++)
      dup = screen[j].S == c->S && screen[j].B == c->B && screen[j].per == c->per &&
            (c->per || !memcmp(screen[j].sdev, c->sdev, sizeof(int) * (size_t)c->S));
    if (dup) continue;
    done++;
    int same = -1; /* an earlier candidate whose stage programs these are (another run's stages of the same devices) */
    for (int j = 0; j < npl && same < 0; j++) {
      const screen_cand *d = &screen[pl_i[j]];
      if (d->S == c->S && d->B == c->B && !memcmp(d->sdev, c->sdev, sizeof(int) * (size_t)c->S) &&
          !memcmp(d->first, c->first, sizeof(int) * (size_t)(c->S + 1)))
        same = j;
    }
    if (same >= 0) { /* its outcome: never faster than the one it repeats (best is at most that key) */
      if (!quiet) {
        fprintf(stderr, "galvc: pipeline candidate %d: %d stages of ", done, c->S);
        if (c->per) fprintf(stderr, "%lld device%s", (long long)c->per, c->per == 1 ? "" : "s");
        else
          for (int s = 0; s < c->S; s++) fprintf(stderr, "%s%d", s ? "," : "", c->sdev[s]);
        fprintf(stderr, ", %d microbatch%s: analytic %.3f ms, the stage programs of candidate %d (the same devices, cuts and "
                        "microbatches: not planned again)\n", c->B, c->B == 1 ? "" : "es", (double)c->key / 1e6, pl_n[same]);
      }
      fit += pl_r[same] == 0 || pl_r[same] == 2;
      continue;
    }
    /* each candidate planned twice where its stages are equal and of more than one device: the planner's plan per
     * stage, then the preset dp,tp each stage compiled on a mesh of dp = P / t x tp = t (t the largest power of 2 up to
     * a node dividing P whose dp divides the microbatch), as --strategy dp,tp --mesh gives it: its crossing values
     * stay split over dp (no gather of them per microbatch), as Megatron's stages exchange them */
    int64_t vt = 0, kn = cl.devices_per_node > 0 ? cl.devices_per_node : 1;
    for (int64_t t = kn < c->per ? kn : c->per; c->per > 1 && t >= 1 && !vt; t /= 2)
      if (c->per % t == 0 && c->per / t > 1 && (global / c->B) % (c->per / t) == 0) vt = t;
    if (early && !vt) continue; /* no preset variant: planned after one program's search */
    /* and with tp (t > 1), a third time as dp,tp,sp: Megatron's sequence parallelism on every op of the stages (the
     * norms, dropout and residual adds split over the sequence, each tp all-reduce a reduce-scatter + all-gather) */
    for (int var = early ? 1 : 0; var < (vt > 1 ? 3 : vt ? 2 : 1) && !rc; var++) {
      if (var && !early && early_done[i]) { /* planned before one program's search: its outcome */
        if (early_r[i] == 0 || pl_r[npl - 1] == 1) pl_r[npl - 1] = early_r[i];
        continue;
      }
      pipe_args Q = P; /* the screen's stages and cuts, each stage program planned (no DP over the cuts again) */
      Q.analytic = false, Q.stages = c->S, Q.cuts_given = true, Q.nsdev = c->S, Q.B = c->B;
      int64_t g = 0;
      for (int s = 0; s < c->S; s++) Q.sdev[s] = c->sdev[s], g += c->sdev[s];
      for (int s = 0; s <= c->S; s++) Q.first[s] = c->first[s];
      double t1 = now();
      const int64_t left0 = gv_plan_intra_left_out;
      snprintf(joint_why, sizeof joint_why, "none planned");
      /* the step a candidate must beat to be chosen: one program's and the best pipeline's so far (the stages planned
       * stop once one stage alone reaches it; GALV_PIPE_SKIP=off: every stage planned) */
      Q.joint_cut = cut_on ? step_to_beat(one, best) : 0;
      int r = plan_variant(&Q, var ? c->per / vt : 0, vt, var == 2, c->B, c->S, g, &K, cand, &plan_s);
      if (r < 0) { rc = -1; break; }
      out->planned++;
      out->cut += r == 2;
      int64_t key = r == 0 ? cand->tl_ns : -1;
      if (!var || (early && var == 1)) pl_i[npl] = i, pl_r[npl] = r, pl_n[npl++] = done;
      else if (r == 0 || pl_r[npl - 1] == 1) pl_r[npl - 1] = r; /* the candidate's outcome: the better of its ways */
      if (early) early_done[i] = true, early_r[i] = (signed char)pl_r[npl - 1];
      if (!quiet) {
        fprintf(stderr, "galvc: pipeline candidate %d%s: %d stages of ", done,
                !var ? "" : var == 2 ? " as dp,tp,sp" : vt > 1 ? " as dp,tp" : " as dp", c->S);
        if (c->per) fprintf(stderr, "%lld device%s", (long long)c->per, c->per == 1 ? "" : "s");
        else
          for (int s = 0; s < c->S; s++) fprintf(stderr, "%s%d", s ? "," : "", c->sdev[s]);
        if (var) fprintf(stderr, " (each dp=%lld,tp=%lld, the crossing values split over dp)", (long long)(c->per / vt), (long long)vt);
        fprintf(stderr, ", %d microbatch%s: analytic %.3f ms, ", c->B, c->B == 1 ? "" : "es", (double)c->key / 1e6);
        int nrc = 0, nz = 0, nz2 = 0; /* the stages' ways the stage costs chose (recomputation, ZeRO-1, ZeRO-2) */
        for (int s = 0; r == 0 && train && s < cand->nstages; s++) {
          int z = stage_zero(&P, &cand->cost[s]);
          nrc += cand->cost[s].recompute, nz += z == GV_ZERO_1, nz2 += z >= GV_ZERO_2;
        }
        if (r == 0) fprintf(stderr, "stage programs planned %.3f ms (%d stage%s recomputing, %d with ZeRO-1, %d with ZeRO-2)",
                            (double)key / 1e6, nrc, nrc == 1 ? "" : "s", nz, nz2);
        else if (r == 2) fprintf(stderr, "slower than the step to beat (%s)", joint_why);
        else fprintf(stderr, "the stage programs do not fit (%s)", joint_why);
        if (gv_plan_intra_left_out > left0) /* the stage searches' bound (gv_plan_opts.stage_incumbent_ns) */
          fprintf(stderr, "; its stage searches left %lld mesh / strategy combinations out, slower per microbatch than "
                          "the step to beat allows", (long long)(gv_plan_intra_left_out - left0));
        fprintf(stderr, " (%.2f s)\n", now() - t1);
      }
      if (r != 0 || (best >= 0 && key >= best)) continue;
      best = key;
      take_choice(out, cand, &P, key, K, c->B, train, var ? c->per / vt : 0, var ? vt : 0, var == 2);
    }
    fit += !rc && (pl_r[npl - 1] == 0 || pl_r[npl - 1] == 2); /* a candidate cut short is one of the planned ones (it could not be chosen) */
  }
  /* The chosen candidate's cuts moved by a layer group at a time: the screen cut it by the analytic stage cost, its
   * stage programs then planned on those cuts; the slowest planned stage gives its first group to the stage before it
   * or its last to the stage after it (the faster of the two first), each move planned again and kept when the whole
   * step is faster, until neither move is (at most RECUT_MAX). GALV_PIPE_RECUT=off: not moved. */
  const char *rcv = getenv("GALV_PIPE_RECUT");
  for (int it = 0, moved = 0; !rc && !early && out->found && out->S > 1 && it < RECUT_MAX && !(rcv && !strcmp(rcv, "off")); it++) {
    double t1 = now();
    int sl = 0;
    int64_t sum = 0;
    for (int s = 0; s < out->S; s++) {
      sum += out->stage_ns[s];
      if (out->stage_ns[s] > out->stage_ns[sl]) sl = s;
    }
    /* no move can bring it under one program's step: even stages would save at most (slowest - mean) per schedule slot */
    const int64_t save = (out->stage_ns[sl] - sum / out->S) * (int64_t)(out->B + out->S - 1);
    if (one > 0 && best - save >= one) break;
    int order[2], no = 0; /* the neighbours to give to: the faster first */
    const bool lo = sl > 0 && out->first[sl + 1] - out->first[sl] > 1, hi = sl < out->S - 1 && out->first[sl + 1] - out->first[sl] > 1;
    if (lo && hi) order[no++] = out->stage_ns[sl - 1] <= out->stage_ns[sl + 1] ? -1 : 1, order[no++] = -order[0];
    else if (lo) order[no++] = -1;
    else if (hi) order[no++] = 1;
    bool better = false;
    for (int k = 0; k < no && !better && !rc; k++) {
      pipe_args Q = P;
      Q.analytic = false, Q.stages = out->S, Q.cuts_given = true, Q.nsdev = out->S, Q.B = out->B;
      int64_t g = 0;
      for (int s = 0; s < out->S; s++) Q.sdev[s] = out->dev[s], g += out->dev[s];
      for (int s = 0; s <= out->S; s++) Q.first[s] = out->first[s];
      if (order[k] < 0) Q.first[sl]++; /* its first group to the stage before */
      else Q.first[sl + 1]--;          /* its last group to the stage after */
      Q.joint_cut = cut_on ? step_to_beat(one, best) : 0;
      int r = plan_variant(&Q, out->mesh_dp, out->mesh_tp, out->mesh_sp, out->B, out->S, g, &K, cand, &plan_s);
      if (r < 0) { rc = -1; break; }
      const int64_t key = r == 0 ? cand->tl_ns : -1;
      if (r == 0 && key < best) {
        if (!quiet)
          fprintf(stderr, "galvc: pipeline chosen: stage %d's %s group to stage %d: %.3f -> %.3f ms (%.2f s)\n", sl,
                  order[k] < 0 ? "first" : "last", sl + order[k], (double)best / 1e6, (double)key / 1e6, now() - t1);
        best = key, better = true, moved++;
        take_choice(out, cand, &P, key, K, out->B, train, out->mesh_dp, out->mesh_tp, out->mesh_sp);
      }
    }
    if (!better) {
      if (!quiet && moved)
        fprintf(stderr, "galvc: pipeline chosen: %d group%s moved between stages; no further move is faster (%.2f s)\n", moved,
                moved == 1 ? "" : "s", now() - t1);
      break;
    }
  }
  /* Interleaved 1F1B (training): the fastest pipeline so far (its cuts moved as above), when its S stages are equal (c devices each) and its B
   * microbatches a multiple of S, planned again with V = 2 .. IL_VMAX chunks per device group in the same way (its
   * preset or the planner's plan per stage): the K groups cut equally into S V chunks (Megatron's virtual stages:
   * chunk j on group j mod S) while each chunk holds a group or more, each V planned as the candidates are (cut short
   * against the step to beat); the fastest is kept. The other candidates' interleaved forms are not planned (their
   * 1F1B steps are slower; the chunks add transfers as they cut the bubble). GALV_PIPE_INTERLEAVED=off: none. */
  const char *ile = getenv("GALV_PIPE_INTERLEAVED");
  bool even = out->found && out->S >= 2 && out->sched != GV_SCHED_INTERLEAVED;
  for (int s = 1; even && s < out->S; s++) even = out->dev[s] == out->dev[0];
  const int il_S = out->S, il_B = out->B, il_per = even ? out->dev[0] : 0;
  const int64_t il_dp = out->mesh_dp, il_tp = out->mesh_tp;
  const bool il_sp = out->mesh_sp;
  /* a bound on any interleaved form's step: its S device groups share the stages' work, so the busiest runs at least
   * B x (the stages' compute per microbatch, transfers left out) / S, and the once-per-step part of the slowest stage
   * follows (its parameters, gradients and update move with its layers: counted 0 here); at or above the step to beat,
   * no form is planned */
  int64_t il_work = 0;
  for (int s = 0; even && s < il_S; s++) il_work += out->stage_ns[s] - out->stage_xfer_ns[s];
  const int64_t il_lb = even ? (int64_t)il_B * il_work / il_S : 0, il_beat = step_to_beat(one, best);
  if (even && cut_on && il_beat > 0 && il_lb >= il_beat) {
    if (!quiet)
      fprintf(stderr, "galvc: pipeline interleaved: not planned (its device groups' work bounds the step at %.3f ms, not under "
                      "%.3f ms)\n", (double)il_lb / 1e6, (double)il_beat / 1e6);
    even = false;
  }
  for (int V = 2; !rc && !early && train && even && il_B % il_S == 0 && !(ile && !strcmp(ile, "off")) && V <= IL_VMAX &&
                  il_S * V <= GV_PIPE_MAX_STAGES && K / (il_S * V) >= 1;
       V++) {
    const int SV = il_S * V;
    pipe_args Q = P;
    Q.analytic = false, Q.stages = SV, Q.cuts_given = true, Q.nsdev = SV, Q.B = il_B;
    Q.sched = GV_SCHED_INTERLEAVED, Q.vstages = V;
    for (int s = 0; s < SV; s++) Q.sdev[s] = il_per;
    for (int s = 0; s <= SV; s++) Q.first[s] = (int)((int64_t)s * K / SV);
    double t1 = now();
    snprintf(joint_why, sizeof joint_why, "none planned");
    Q.joint_cut = cut_on ? step_to_beat(one, best) : 0;
    int r = plan_variant(&Q, il_dp, il_tp, il_sp, il_B, SV, (int64_t)SV * il_per, &K, cand, &plan_s);
    if (r < 0) { rc = -1; break; }
    out->planned++;
    out->cut += r == 2;
    const int64_t key = r == 0 ? cand->tl_ns : -1;
    if (!quiet) {
      fprintf(stderr, "galvc: pipeline interleaved, %d chunks per device group: %d stages of %d device%s%s, %d microbatches: ", V, SV,
              il_per, il_per == 1 ? "" : "s", il_sp ? " (dp,tp,sp)" : il_tp > 1 ? " (dp,tp)" : il_dp ? " (dp)" : "", il_B);
      if (r == 0) fprintf(stderr, "stage programs planned %.3f ms", (double)key / 1e6);
      else if (r == 2) fprintf(stderr, "slower than the step to beat (%s)", joint_why);
      else fprintf(stderr, "the stage programs do not fit (%s)", joint_why);
      fprintf(stderr, " (%.2f s)\n", now() - t1);
    }
    if (r == 0 && (best < 0 || key < best)) {
      best = key;
      take_choice(out, cand, &P, key, K, il_B, train, il_dp, il_tp, il_sp);
    }
  }
  if (!rc && !early && !out->found && one < 0 && joint_layers >= 2) { /* none fits (nor one program): the smallest memory any pipeline
                                                             * needs, at the smallest microbatch */
    jmin_need = -1, jmin_S = 0, jmin_per = 0, joint_minmem = true, njmc = 0;
    pipe_args Q = P;
    Q.analytic = K > 16; /* the stage programs' planned memory (what a compiled stage needs); K^2 / 2 ranges: the
                          * analytic figure past 16 groups */
    Q.stage_limit = 1;   /* each stage program its smallest plan (a search under the limit takes the fastest that fits
                          * its own memory, the microbatches in flight not counted: the least need would vary with the
                          * limit) */
    int r = pipe_plan_b(model, opt, global, (int)global, 0, gpus, &Q, &cl, train, 1, 0, &K, cand, &plan_s);
    joint_minmem = false;
    if (r < 0) rc = -1;
    /* the analytic figure within the limit is one the planned stage programs contradict (their arenas and buffers
     * need more than it counts): the least planned candidate's stage over the limit stands instead */
    const int64_t lim = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cl.memory_bytes;
    /* that smallest need within the limit (the stage programs planned, at a sample per microbatch): a pipeline fits
     * that the screen's candidates missed (cut and counted by the analytic step, each the fastest of its stage
     * count): the stage DP over those stages and devices at that count, on the planned stage programs, plans it */
    if (!rc && r == 1 && !Q.analytic && jmin_need >= 0 && jmin_need <= lim && jmin_S >= 2 && jmin_per > 0 &&
        global <= INT32_MAX) {
      pipe_args Q2 = P;
      Q2.analytic = false, Q2.stages = jmin_S, Q2.B = (int)global, Q2.joint_cut = 0;
      double t1 = now();
      snprintf(joint_why, sizeof joint_why, "none planned");
      const int S2 = jmin_S;
      const int64_t per2 = jmin_per, need2 = jmin_need;
      /* the stage programs planned under the limit, half of it, then each its smallest plan (the least need's) */
      int r2 = 1;
      for (int t = 0; t < 3 && r2 == 1; t++) {
        Q2.stage_limit = t == 0 ? 0 : t == 1 ? (lim / 2 > 0 ? lim / 2 : 1) : 1;
        r2 = plan_variant(&Q2, 0, 0, false, (int)global, S2, (int64_t)S2 * per2, &K, cand, &plan_s);
      }
      if (r2 < 0) rc = -1;
      else {
        out->planned++;
        if (r2 == 0) take_choice(out, cand, &P, cand->tl_ns, K, (int)global, train, 0, 0, false), out->stage_limit = Q2.stage_limit;
        if (!quiet)
          fprintf(stderr, "galvc: pipeline of the least memory (%lld bytes per device, within the limit): %d stages of %lld "
                          "device%s, %lld microbatches, cut by the stage DP on the planned stage programs: %s", (long long)need2,
                  S2, (long long)per2, per2 == 1 ? "" : "s", (long long)global, r2 == 0 ? "" : "the stage programs do not fit (");
        if (!quiet && r2 == 0) fprintf(stderr, "planned %.3f ms (%.2f s)\n", (double)cand->tl_ns / 1e6, now() - t1);
        else if (!quiet) fprintf(stderr, "%s) (%.2f s)\n", joint_why, now() - t1);
      }
    }
    /* past 16 groups the bottleneck DP's cuts come from the analytic figure, which the planned stage programs can
     * exceed several times over (MobileNetV2: a microbatch of one sample that dp cannot split): each devices-per-stage's
     * cuts, in the order of their analytic need, have their stage programs planned, each at its smallest fitting way
     * (else its least), until one fits the limit (planned: the least-memory pipeline) or the analytic need reaches the
     * least planned one; that least planned need is the figure (one these cuts meet: with it as the limit they plan) */
    if (!rc && r == 1 && Q.analytic && global <= INT32_MAX) {
      int64_t best_need = -1, bs = 0, ba = 0, bper = 0;
      int bS = 0, tried = 0;
      bool fit = false;
      double t1 = now();
      qsort(jmc, (size_t)njmc, sizeof *jmc, jmc_cmp); /* in order of analytic need */
      for (int n = 0; n < njmc && !fit && rc >= 0; n++) {
        if (jmc[n].S < 2 || (best_need >= 0 && jmc[n].need >= best_need)) break;
        pipe_args Q3 = P;
        Q3.analytic = false, Q3.stages = jmc[n].S, Q3.B = (int)global, Q3.joint_cut = 0, Q3.cuts_given = true;
        Q3.nsdev = jmc[n].S, Q3.need_all = true, Q3.stage_limit = 1;
        for (int st = 0; st < jmc[n].S; st++) Q3.sdev[st] = (int)jmc[n].per;
        for (int st = 0; st <= jmc[n].S; st++) Q3.first[st] = jmc[n].first[st];
        jall_need = -1;
        snprintf(joint_why, sizeof joint_why, "none planned");
        int r3 = pipe_plan_b(model, opt, global, (int)global, jmc[n].S, (int64_t)jmc[n].S * jmc[n].per, &Q3, &cl, train, 1, 0, &K, cand, &plan_s);
        tried++;
        if (r3 < 0) rc = -1;
        else if (r3 == 0) {
          fit = true, out->planned++;
          take_choice(out, cand, &P, cand->tl_ns, K, (int)global, train, 0, 0, false), out->stage_limit = Q3.stage_limit;
        } else if (jall_need >= 0 && (best_need < 0 || jall_need < best_need))
          best_need = jall_need, bs = jall_state, ba = jall_act, bS = jmc[n].S, bper = jmc[n].per;
      }
      if (!fit && best_need >= 0) jmin_need = best_need, jmin_state = bs, jmin_act = ba;
      else if (!fit && jreal_need >= 0 && jmin_need <= lim) /* none planned through: the least planned stage over the limit */
        jmin_need = jreal_need, jmin_state = jreal_state, jmin_act = jreal_act;
      if (!quiet && tried)
        fprintf(stderr, "galvc: pipelines of the least memory by the analytic stage cost (%d groups): %d cut%s planned (%.2f s): %s",
                K, tried, tried == 1 ? "" : "s", now() - t1, fit ? "one fits the limit\n" : best_need < 0 ? "none through\n" : "");
      if (!quiet && !fit && best_need >= 0)
        fprintf(stderr, "the least needs %lld bytes per device (%d stages of %lld device%s)\n", (long long)best_need, bS,
                (long long)bper, bper == 1 ? "" : "s");
    }
  }
  out->min_need = jmin_need, out->min_state = jmin_state, out->min_act = jmin_act;
  if (!early) free(screen), screen = NULL, memset(early_done, 0, sizeof early_done);
  free(cand);
  if (!had) galvc_microbatch_done();
  gv_train_opts = train_now, gv_plan_opts = plan_now, gv_shard_opts = shard_now, gv_pipe_opts = pipe_now;
  gv_plan_last = last_now;
  out->cpu_s += cpu_now() - c0, out->wall_s += now() - t0;
  return rc;
}

int galvc_pipeline_plan(galvc_pipe_choice *out, int64_t one) {
  if (!pend.on) return 0;
  pend.on = false;
  return plan_candidates(out, one, false);
}

int galvc_pipeline_early(galvc_pipe_choice *out) {
  const char *e = getenv("GALV_PIPE_EARLY");
  if (!pend.on || (e && !strcmp(e, "off"))) return 0;
  return plan_candidates(out, -1, true);
}

/* The bytes of a module's galv.state inputs (the emitter's layout: 64-byte aligned, in argument order), *n their count. */
static int64_t state_bytes(const gv_module *m, int *n) {
  int64_t bytes = 0;
  *n = 0;
  for (int a = 0; a < m->main->body->nargs; a++)
    if (m->main->arg_is_state && m->main->arg_is_state[a]) {
      int64_t b = gv_value_storage_bytes(m->main->body->args[a]); /* in its storage dtype, as the stash holds it */
      (*n)++, bytes += ((b > 0 ? b : 0) + 63) / 64 * 64;
    }
  return bytes;
}

/* The bytes of the results whose names start with prefix, as stored (16-bit storage: a crossing value's gradient
 * 16-bit), 64-byte aligned each: the last stage keeps its "grad:pp." results per microbatch in flight,
 * runtime/pipe.c. */
static int64_t result_bytes(const gv_module *m, const char *prefix) {
  const gv_func *f = m->main;
  const gv_op *ret = f->body->last;
  int64_t bytes = 0;
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds; i++)
    if (f->res_names[i] && !strncmp(f->res_names[i], prefix, strlen(prefix))) {
      int64_t b = gv_value_storage_bytes(ret->opnds[i]);
      bytes += ((b > 0 ? b : 0) + 63) / 64 * 64;
    }
  return bytes;
}

/* ZB-H1 splits a backward (an earlier stage's backward entry, the last stage's combined program) when it has
 * parameter gradients and other results (passes/stage_stash.c input-grad / weight-grad). */
static bool zb_splits(const gv_module *m) {
  const gv_func *f = m->main;
  bool w = false, b = false;
  for (int i = 0; i < f->nres_names; i++) {
    const char *n = f->res_names[i];
    bool g = n && !strncmp(n, "grad:", 5) && strncmp(n, "grad:pp.", 8);
    w |= g, b |= !g;
  }
  return w && b;
}

int compile_pipeline(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, gv_cluster *cluster,
                     const char *out, int quiet, int build, int verify_each, int train, const gv_cuda_options *cuda) {
  int rc = compile_stages(model, opt, pa0, gpus, cluster, out, quiet, build, verify_each, train, cuda);
  for (int i = 0; i < pin.n; i++) free((char *)pin.glob[i].name);
  free(pin.glob), free(pin.mb);
  memset(&pin, 0, sizeof pin);
  return rc;
}

static int compile_stages(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, gv_cluster *cluster,
                          const char *out, int quiet, int build, int verify_each, int train, const gv_cuda_options *cuda) {
  pipe_args P = *pa0;
  const pipe_args *pa = &P;
  nxdt = 0;
  if (train && strcmp(gv_train_opts.optimizer, "adamw") && strcmp(gv_train_opts.optimizer, "sgd"))
    return gv_error_plain("--optimizer %s: expected adamw or sgd", gv_train_opts.optimizer);
  if (!P.plan_only && (!out || !is_dir_arg(out))) return gv_error_plain("--pipeline-stages writes one program per stage: give -o DIR/");
  int64_t global = 0;
  if (pipe_inputs(model, opt, pa, &global)) return 1;
  int autoS = P.stages == 0, autoB = P.B == 0;
  if (autoS && P.cuts == 2) return gv_error_plain("--stage-cuts equal needs a fixed --pipeline-stages S (not auto)");
  if (autoS && P.naxes)
    return gv_error_plain("--pipeline-stages auto chooses each stage's devices and strategy (the intra-operator planner): drop --strategy / --mesh");
  if (autoS && P.nsdev) return gv_error_plain("--stage-devices needs a fixed --pipeline-stages S (not auto)");
  if (autoS && gpus > GV_PIPE_MAX_STAGES) gpus = GV_PIPE_MAX_STAGES;
  if (!autoS && !P.nsdev && gpus > 1 && gpus % P.stages)
    return gv_error_plain("--gpus %lld with %d pipeline stages: the devices must divide evenly into the stages", (long long)gpus, P.stages);
  if (!autoS && gpus > P.stages && P.analytic && !P.naxes)
    return gv_error_plain("--stage-cost analytic with stages of more than one device needs --strategy tp|dp (the planner's plan needs its costs)");
  int Bs[64], nb = 0;
  if (!autoB) Bs[nb++] = P.B;
  else
    for (int64_t d = 1; d <= global && nb < 64; d++) /* interleaved: multiples of the device groups */
      if (global % d == 0 && (P.sched != GV_SCHED_INTERLEAVED || d % P.stages == 0)) Bs[nb++] = (int)d;
  if (!nb) return gv_error_plain("--microbatches auto: no divisor of the batch %lld is a multiple of the %d device groups", (long long)global, P.stages);
  if (!P.plan_only && ensure_dir(out)) return gv_error_plain("%s: cannot create output directory", out);
  gv_pipe_opts.quiet = true;
  gv_pipe_plan *pl = calloc(1, sizeof *pl), *cand = calloc(1, sizeof *cand);
  if (!pl || !cand) { free(pl); free(cand); return gv_error_plain("out of memory"); }
  int rc = 1, K = 0, least_i = nb - 1;
  int64_t least_need = -1;
  double plan_s = 0;
  for (int i = 0; i < nb && rc >= 0; i++) {
    int k = 0; /* the group count: fixed by --layers, else by the stage count (the largest tried when chosen) */
    /* --microbatches auto: the counts solved quietly; when none fits, the count whose binding stage needs the least
     * (else the last) is solved again for its one error line; an error other than no fit, solved again to print it */
    const bool hush = nb > 1;
    gv_error_quiet += hush;
    cand->min_need = -1;
    int r = pipe_plan_b(model, opt, global, Bs[i], P.stages, gpus, pa, cluster, train, quiet || i > 0, verify_each, &k, cand, &plan_s);
    gv_error_quiet -= hush;
    if (r == 1 && cand->min_need >= 0 && (least_need < 0 || cand->min_need < least_need)) least_need = cand->min_need, least_i = i;
    if (r < 0 && hush) r = pipe_plan_b(model, opt, global, Bs[i], P.stages, gpus, pa, cluster, train, true, verify_each, &k, cand, &plan_s);
    if (r < 0) rc = -1;
    else if (r == 0 && (rc == 1 || cand->tl_ns < pl->tl_ns)) *pl = *cand, K = k, rc = 0, memcpy(rec_best, rec_b, sizeof rec_b);
  }
  if (rc == 1 && nb > 1) { /* none fits: the least-need count's error line */
    int k = 0;
    if (pipe_plan_b(model, opt, global, Bs[least_i], P.stages, gpus, pa, cluster, train, true, verify_each, &k, cand, &plan_s) < 0) rc = -1;
  }
  free(cand);
  if (rc) { free(pl); return 1; }
  P.stages = pl->nstages;
  P.B = pl->B;
  if (train) P.sched = pl->schedule; /* --schedule, else the one chosen */
  if (train && pa0->sched == GV_SCHED_AUTO && !quiet) { /* the choice: each schedule's timeline on the chosen stages */
    fprintf(stderr, "galvc: pipeline schedule %s (chosen: the shortest predicted step; per schedule its best plan's step / "
                    "bubble of device group 0:", gv_schedule_name(P.sched));
    for (int sc = GV_SCHED_GPIPE; sc <= GV_SCHED_INTERLEAVED; sc++)
      if (rec_best[sc].ok)
        fprintf(stderr, " %s %.3f / %.3f ms", gv_schedule_name((gv_schedule)sc), (double)rec_best[sc].tl_ns / 1e6,
                (double)rec_best[sc].bubble_ns / 1e6);
    fprintf(stderr, ")\n");
  }
  opt = at_microbatch(opt, global, P.B);
  int S = P.stages;
  /* interleaved: V chunks per device group, stage s on group s mod P (galv_pipe_sched.h); else V = 1 */
  const int V = train && P.sched == GV_SCHED_INTERLEAVED ? pl->vstages : 1, NG = S / V;
  int64_t il_fb[GV_PIPE_MAX_STAGES] = {0}; /* interleaved: each stage's saved bytes per microbatch */
  int64_t il_fs[GV_PIPE_MAX_STAGES] = {0}, il_bs[GV_PIPE_MAX_STAGES] = {0}; /* ... its forward and backward sends' bytes */
  int64_t il_fk[GV_PIPE_MAX_STAGES] = {0}, il_bk[GV_PIPE_MAX_STAGES] = {0}; /* ... of them, those kept until the step's end */
  /* dev[s]: the devices of stage s (its sub-mesh, the DP's choice; the runtime's ranks first_rank[s] ..) */
  int dev[GV_PIPE_MAX_STAGES], first_rank[GV_PIPE_MAX_STAGES + 1] = {0};
  if (pipe_stage_devices(&P, pl, &gpus, dev)) { free(pl); return 1; }
  bool uneven = false;
  for (int i = 0; i < S; i++) first_rank[i + 1] = first_rank[i] + dev[i], uneven |= dev[i] != dev[0];
  int64_t mprod = 1;
  for (int a = 0; a < pa->naxes; a++) mprod *= pa->axs[a];
  for (int i = 0; i < S; i++) {
    if (pa->mesh_given && dev[i] > 1 && mprod != dev[i]) {
      free(pl);
      return gv_error_plain("--gpus %lld with %d pipeline stages: each stage's mesh has %lld devices, not %d", (long long)gpus, S,
                            (long long)mprod, dev[i]);
    }
  }
  /* crossing values kept split over dp: every stage from --strategy / --mesh (not the planner's plan) with a dp axis
   * of one size (xs_split) */
  xs_D = xs_roles(pa) ? 0 : 1, xs_mb = opt.batch;
  for (int i = 0; i < S && xs_D != 1; i++) {
    gv_mesh sm = stage_mesh(pa, dev[i]);
    int a = dev[i] > 1 && pa->naxes && !pl->cost[i].planner_plan ? gv_mesh_axis(&sm, "dp", 2) : -1;
    int64_t d = a >= 0 ? sm.size[a] : 1;
    xs_D = !xs_D || xs_D == d ? d : 1;
  }
  if (xs_D < 1 || getenv("GALV_PIPE_XSPLIT_OFF")) xs_D = 1;
  if (xs_D > 1 && !quiet && !P.plan_only)
    fprintf(stderr, "galvc: pipeline: crossing values whose dim 0 is the microbatch (%lld) stay split over dp = %lld: each rank "
                    "sends and receives its rows (a q-th of them where q ranks hold them, gathered in place among those)\n",
            (long long)xs_mb, (long long)xs_D);
  /* fixed stages whose ways the stage DP chose (under --memory-limit): reported as chosen stages are */
  const bool ways = train && !autoS && gv_plan_opts.memory_limit > 0 && !P.naxes;
  if ((autoS || autoB || P.cuts || P.cuts_given || ways) && !(P.joint && quiet)) {
    printf("pipeline %s: %d stages%s",
           autoS || autoB ? "auto" : P.cuts_given ? (P.joint ? "chosen by the default search" : "plan") : P.cuts == 2 ? "equal cuts" : "dp cuts", S,
           autoS ? " (chosen)" : "");
    if (V > 1) printf(" (interleaved: %d device groups of %d chunks, stage s on group s mod %d)", NG, V, NG);
    printf(", cuts at groups");
    for (int i = 0; i <= S; i++) printf("%s%d", i ? "|" : " ", pl->first[i]);
    printf(" of %d, %d microbatches%s, predicted step %.3f ms (schedule %.3f ms + once per step %.3f ms; stage ms/microbatch", K,
           P.B, autoB ? " (chosen)" : "", (double)gv_pipe_plan_full_ns(pl) / 1e6,
           (double)(gv_pipe_plan_full_ns(pl) - gv_pipe_plan_once_ns(pl)) / 1e6, (double)gv_pipe_plan_once_ns(pl) / 1e6);
    for (int i = 0; i < S; i++) printf(" %.3f", (double)pl->cost[i].ns / 1e6);
    if (uneven) {
      printf("), devices per stage");
      for (int i = 0; i < S; i++) printf("%s%d", i ? "," : " ", dev[i]);
      printf("%s, strategies", autoS ? " (chosen)" : "");
    } else
      printf("), %d device%s per stage%s, strategies", dev[0], dev[0] == 1 ? "" : "s", autoS ? " (chosen)" : "");
    for (int i = 0; i < S; i++) /* and the stage's way: recomputation (whole stage, per layer), ZeRO-1 (given or chosen) */
      printf("%s%s%s%s%s%s%s", i ? " | " : " ", pa->naxes && !pl->cost[i].planner_plan ? gv_shard_opts.strategy : pl->cost[i].desc,
             train && i < S - 1 && (pa->recompute || pl->cost[i].recompute) ? " +recompute" : "",
             train && pl->cost[i].zero_ranks > 1 ? " +" : "", train && pl->cost[i].zero_ranks > 1 ? gv_zero_name(stage_zero(pa, &pl->cost[i])) : "",
             train && !pa->layer_rc_given && pl->cost[i].layer_rc ? " +recompute=" : "",
             train && !pa->layer_rc_given && pl->cost[i].layer_rc ? gv_layer_rc_name(pl->cost[i].layer_rc) : "");
    printf(", planned in %.2f s\n", plan_s);
    fflush(stdout);
  }
  if (!rc && !quiet) gv_pipe_plan_print(pl, stderr);
  if (!rc && pa->report_cost) { /* --report-cost (-q too): the whole step and the largest stage's memory, in the one
                                 * program's form (each stage program's own table: GALV_STAGE_REPORT=1) */
    const gv_pipe_step_parts p = gv_pipe_plan_parts(pl);
    const int64_t full = gv_pipe_plan_full_ns(pl);
    int big = 0;
    for (int i = 1; i < S; i++)
      big = pl->cost[i].state_bytes + gv_pipe_plan_saved(pl, i) > pl->cost[big].state_bytes + gv_pipe_plan_saved(pl, big) ? i : big;
    printf("predicted step: %lld ns = %.3f ms (pipeline of %d stages, %d microbatches, %s: schedule %.3f ms + once-per-step sync "
           "%.3f ms + ZeRO %.3f ms + update %.3f ms, the once-per-step part %s %d's)\n", (long long)full, (double)full / 1e6, S,
           pl->B, train ? gv_schedule_name(P.sched) : "inference", (double)p.sched / 1e6, (double)p.sync / 1e6, (double)p.zero / 1e6,
           (double)p.upd / 1e6, pl->vstages > 1 ? "device group" : "stage", p.k);
    int64_t gbig = -1; /* interleaved: a device holds its group's V stages */
    int gb = 0;
    for (int d = 0; V > 1 && d < NG; d++) {
      const int64_t gm = gv_pipe_group_mem(pl, d, NULL);
      if (gm > gbig) gbig = gm, gb = d;
    }
    if (V > 1)
      printf("memory per device: the largest device group's (group %d, its %d stages, %d device%s) total %lld of %lld bytes\n", gb,
             V, dev[gb], dev[gb] == 1 ? "" : "s", (long long)gbig,
             (long long)(gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cluster->memory_bytes));
    else
      printf("memory per device: the largest stage's (stage %d, %d device%s) total %lld of %lld bytes\n", big, dev[big],
             dev[big] == 1 ? "" : "s", (long long)(pl->cost[big].state_bytes + gv_pipe_plan_saved(pl, big)),
             (long long)(gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cluster->memory_bytes));
    fflush(stdout);
  }
  if (!rc && pa->plan_out) rc = write_pipe_plan(pa->plan_out, &P, pl, K, dev, cluster, train, quiet);
  if (!rc && pa->trace_plan) rc = write_plan_trace(pa->trace_plan, pl, train, pa->sched);
  /* the stages that read each parameter: a parameter read by several stages is held by each, its gradient summed
   * across them every step (runtime/pipe.c; docs/pipeline.md, "Shared parameters") */
  gv_module *mp = NULL;
  uint64_t *pmask = NULL; /* per argument of mp: the stages reading it (0: one stage) */
  if (!rc) {
    gv_layer_groups g0;
    gv_shared_param *sh = NULL;
    int nsh = 0;
    mp = pipe_front(model, &opt, 0, 1, verify_each);
    rc = !mp || gv_cluster_layers(mp, K, &g0) || !(pmask = calloc((size_t)mp->main->body->nargs + 1, sizeof *pmask)) ||
         gv_pipe_shared_params(mp, &sh, &nsh);
    for (int i = 0; !rc && i < nsh; i++) /* a parameter read by several groups: the stages of those groups */
      for (int j = 0; j < sh[i].ngroups; j++)
        for (int s = 0; s < S; s++)
          if (sh[i].groups[j] >= pl->first[s] && sh[i].groups[j] < pl->first[s + 1]) pmask[sh[i].arg] |= 1ull << s;
    gv_pipe_shared_params_free(sh, nsh);
    for (int a = 0; !rc && !quiet && train && a < mp->main->body->nargs; a++) {
      if (__builtin_popcountll(pmask[a]) < 2) continue;
      fprintf(stderr, "galvc: pipeline: parameter '%s' is read by stages", mp->main->arg_names[a]);
      for (int i = 0, n = 0; i < S; i++)
        if (pmask[a] >> i & 1) fprintf(stderr, "%s %d", n++ ? "," : "", i);
      fprintf(stderr, ": each holds a copy, their gradients are summed every step\n");
    }
  }
  if (!rc && P.plan_only) { /* --plan-only: the stage plan above is the result */
    gv_module_free(mp);
    free(pmask);
    free(pl);
    return 0;
  }
  /* shared parameters split alike by every holding stage (docs/pipeline.md, "Shared parameters"): their gradients
   * returned split as the parameter (gv_pipe_opts.shared_split) and summed across the stages block by block
   * (runtime/pipe.c, galv_pipe_shared_split). Tried wherever the holding stages have the same number of ranks (more
   * than one); the stages are compiled, each holder's split of the parameter compared (ssig: its dims and every
   * rank's block starts, "-" unsplit), and where they differ the holders that split it are compiled again with its
   * gradient whole (pass 1). */
  const int nargs = mp ? mp->main->body->nargs : 0;
  signed char *ssplit = calloc((size_t)nargs + 1, 1);
  char **ssig = calloc((size_t)S * (size_t)(nargs + 1), sizeof *ssig);
  if (!rc && (!ssplit || !ssig)) rc = gv_error_plain("out of memory");
  const bool shared_whole = getenv("GALV_PIPE_SHARED_WHOLE") != NULL; /* a diagnostic: every shared gradient whole */
  for (int a = 0; !rc && train && !shared_whole && a < nargs; a++) {
    if (!mp->main->arg_is_param[a] || __builtin_popcountll(pmask[a]) < 2) continue;
    int k = -1;
    ssplit[a] = 1;
    for (int s = 0; s < S; s++)
      if (pmask[a] >> s & 1) ssplit[a] &= dev[s] > 1 && (k < 0 || dev[s] == k), k = dev[s];
  }
  uint64_t redo = 0;
  for (int pass = 0; pass < 2 && !rc; pass++) {
  for (int s = 0; !rc && s < S; s++) {
    if (pass && !(redo >> s & 1)) continue;
    const int per = dev[s]; /* this stage's devices */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%sstage%d/", out, out[strlen(out) - 1] == '/' ? "" : "/", s);
    gv_stage_io *io = calloc(1, sizeof *io);
    gv_module *ms = NULL, *mb = NULL, *mw = NULL; /* the stage's program (training with a stash: its forward entry), backward
                                                   * entry, and under ZB-H1 its weight-gradient entry */
    bool stash = train && !pa->recompute && !pl->cost[s].recompute && s < S - 1; /* forced, or the stage DP's way */
    /* ZeRO-2 (--pipeline-zero 2): the stage's parameter gradients left pending over the ranks holding equal
     * parameters, except those of parameters other stages hold too (their sum across the stages is whole) */
    const char **z2whole = calloc((size_t)mp->main->body->nargs + 1, sizeof *z2whole);
    int nz2whole = 0;
    const char **ssnames = calloc((size_t)mp->main->body->nargs + 1, sizeof *ssnames); /* of them: returned split */
    int nsplit = 0;
    for (int a = 0; z2whole && a < mp->main->body->nargs; a++)
      if (mp->main->arg_is_param[a] && __builtin_popcountll(pmask[a]) > 1) z2whole[nz2whole++] = mp->main->arg_names[a];
    for (int a = 0; ssnames && a < mp->main->body->nargs; a++)
      if (ssplit[a] > 0 && (pmask[a] >> s & 1)) ssnames[nsplit++] = mp->main->arg_names[a];
    if (!z2whole || !ssnames) rc = gv_error_plain("out of memory");
    gv_pipe_opts.shared_split = ssnames, gv_pipe_opts.nshared_split = nsplit;
    const int zlev = train ? stage_zero(pa, &pl->cost[s]) : GV_ZERO_NONE; /* given, or the stage DP's way */
    /* no ZeRO: the data-parallel gradients reduced once per step by the runtime, the program leaves them unreduced */
    const bool once = train && zlev == GV_ZERO_NONE && gv_pipe_opts.grad_once && per > 1;
    gv_pipe_opts.zero2 = (zlev >= GV_ZERO_2 || once) && per > 1, gv_pipe_opts.zero2_whole = z2whole, gv_pipe_opts.nzero2_whole = nz2whole;
    gv_pipe_opts.zero2_shared = once && per > 1; /* no ZeRO: shared parameters' gradients reduced once per step too */
    rc = rc || !io || !(ms = stage_module(model, &opt, K, pl, s, S, train, per, pa, cluster, verify_each, io));
    if (!rc && stash && !gv_stage_has_grads(ms)) stash = false; /* forward only: nothing trains in it */
    if (!rc && stash) { /* the same stage module again (deterministic), split into the two entries */
      gv_stage_io *io2 = calloc(1, sizeof *io2);
      rc = !io2 || !(mb = stage_module(model, &opt, K, pl, s, S, train, per, pa, cluster, verify_each, io2));
      free(io2);
      static const char *const st[] = {"stage-stash"};
      gv_pipe_opts.stash = "forward";
      if (!rc) rc = run_named(ms, st, 1, 1, verify_each) || gv_verify(ms);
      gv_pipe_opts.stash = "backward";
      if (!rc) rc = run_named(mb, st, 1, 1, verify_each) || gv_verify(mb);
      gv_pipe_opts.stash = NULL;
      if (!rc) rc = same_params(ms, mb);
    }
    /* ZB-H1: the backward (the backward entry; the last stage's combined program) split once more into its
     * input-gradient part (stays) and its weight-gradient entry (program_wgt.c), from a third import */
    gv_module *zsrc = !rc && train && pa->sched == GV_SCHED_ZBH1 ? (mb ? mb : s == S - 1 ? ms : NULL) : NULL;
    if (zsrc && zb_splits(zsrc)) {
      gv_stage_io *io3 = calloc(1, sizeof *io3);
      rc = !io3 || !(mw = stage_module(model, &opt, K, pl, s, S, train, per, pa, cluster, verify_each, io3));
      free(io3);
      static const char *const st[] = {"stage-stash"};
      gv_pipe_opts.stash = "backward";
      if (!rc && mb) rc = run_named(mw, st, 1, 1, verify_each) || gv_verify(mw);
      gv_pipe_opts.stash = "weight-grad";
      if (!rc) rc = run_named(mw, st, 1, 1, verify_each) || gv_verify(mw);
      gv_pipe_opts.stash = "input-grad";
      if (!rc) rc = run_named(zsrc, st, 1, 1, verify_each) || gv_verify(zsrc);
      gv_pipe_opts.stash = NULL;
      if (!rc) rc = same_params(ms, mw);
    }
    gv_pipe_opts.zero2 = false, gv_pipe_opts.zero2_whole = NULL, gv_pipe_opts.nzero2_whole = 0, gv_pipe_opts.zero2_shared = false;
    gv_pipe_opts.shared_split = NULL, gv_pipe_opts.nshared_split = 0;
    free(z2whole);
    free(ssnames);
    /* each shared parameter's split in this stage (ssig): compared across the holders after the first pass */
    for (int a = 0; !rc && a < ms->main->body->nargs; a++) {
      if (!ms->main->arg_is_param[a]) continue;
      int b = 0;
      while (b < nargs && !(mp->main->arg_is_param[b] && !strcmp(mp->main->arg_names[b], ms->main->arg_names[a]))) b++;
      if (b == nargs || ssplit[b] <= 0) continue;
      const gv_value *v = ms->main->body->args[a];
      const gv_sharding *sh = gv_value_sharding(ms, v);
      char *sig = malloc((size_t)per * (size_t)(v->type.rank + 1) * 24 + 64), *e = sig;
      if (!sig) { rc = gv_error_plain("out of memory"); break; }
      if (per > 1 && cg_is_split(sh)) {
        for (int d = 0; d < v->type.rank; d++)
          e += sprintf(e, "%lld,", (long long)(v->type.dims[d] * (d < sh->rank ? gv_sharding_dim_split(sh, d) : 1)));
        for (int r = 0; r < per; r++) {
          int64_t st[GV_MAX_RANK];
          cg_block_start(sh, v->type.rank, v->type.dims, r, st);
          e += sprintf(e, ";");
          for (int d = 0; d < v->type.rank; d++) e += sprintf(e, "%lld,", (long long)st[d]);
        }
      } else sprintf(e, "-");
      free(ssig[(size_t)s * (size_t)nargs + (size_t)b]);
      ssig[(size_t)s * (size_t)nargs + (size_t)b] = sig;
    }
    /* ZeRO-2: per parameter (ms's order) the mesh axes its gradient results leave pending, from every entry */
    int z2err = 0;
    unsigned *gpart = calloc((size_t)(ms ? ms->main->body->nargs : 0) + 1, sizeof *gpart);
    if (!gpart) rc = rc ? rc : gv_error_plain("out of memory");
    for (int k = 0; !rc && (zlev >= GV_ZERO_2 || once) && k < 3; k++) {
      gv_module *e = k == 0 ? ms : k == 1 ? mb : mw;
      const gv_op *ret = e ? e->main->body->last : NULL;
      for (int i = 0; ret && ret->code == GV_OP_RETURN && i < ret->nopnds && i < e->main->nres_names; i++) {
        const char *n = e->main->res_names[i];
        const gv_sharding *sh = n && !strncmp(n, "grad:", 5) ? gv_value_sharding(e, ret->opnds[i]) : NULL;
        for (int a = 0, np = 0; sh && a < ms->main->body->nargs; a++)
          if (ms->main->arg_is_param[a] && np++ >= 0 && !strcmp(ms->main->arg_names[a], n + 5)) gpart[np - 1] |= sh->partial;
      }
    }
    /* an entry split out of the stage program runs part of its collectives (not the seed's): each entry predicts
     * its own collectives' bytes (codegen/comm.c), which runtime/pipe.c checks against the communicator */
    gv_module *split[3] = {mb || (zsrc == ms && mw) ? ms : NULL, mb, mw};
    for (int k = 0; k < 3 && !rc; k++)
      for (int i = 0; split[k] && i < split[k]->nmeshes; i++) split[k]->meshes[i]->has_predicted = false;
    /* storage: --precision bf16 / fp16, the crossing values and stashes 16-bit (ir/storage.h gv_func_stage_kind) */
    static const char *const back[] = {"fuse", "storage", "memory-plan"};
    /* the stash slots an entry stores fp32 (a reduction's row statistic) are read fp32 by the next entry */
    const char *wide[2 * GV_PIPE_MAX_STAGES * 64];
    int nwide = 0;
    gv_precision_opts.stage_wide = wide, gv_precision_opts.nstage_wide = 0;
    if (!rc) rc = gv_verify(ms) || run_back(ms, back, verify_each) || gv_verify(ms);
    if (!rc) nwide = gv_stash_wide(ms, wide, nwide, (int)(sizeof wide / sizeof *wide));
    if (!rc && getenv("GALV_STAGE_REPORT") && cluster) { /* each stage program's cost table (--report-cost's), a diagnostic */
      fprintf(stderr, "galvc: stage %d program (%d devices):\n", s, per);
      gv_cost_report(cluster, ms, stderr);
    }
    gv_precision_opts.nstage_wide = nwide;
    if (!rc && mb) rc = run_back(mb, back, verify_each) || gv_verify(mb);
    if (!rc && mb) nwide = gv_stash_wide(mb, wide, nwide, (int)(sizeof wide / sizeof *wide));
    if (!rc && mb && getenv("GALV_STAGE_REPORT") && cluster) {
      fprintf(stderr, "galvc: stage %d backward entry (%d devices):\n", s, per);
      gv_cost_report(cluster, mb, stderr);
    }
    gv_precision_opts.nstage_wide = nwide;
    if (!rc && mw) rc = run_back(mw, back, verify_each) || gv_verify(mw);
    gv_precision_opts.stage_wide = NULL, gv_precision_opts.nstage_wide = 0;
    if (!rc && ensure_dir(dir)) rc = gv_error_plain("%s: cannot create output directory", dir);
    gv_cuda_options cs = {0};
    if (cuda) cs = *cuda, cs.pipe_stage = true; /* the CUDA emitter writes the stage's Makefile (main = pipe_cuda.cu) */
    cs.shared_gpu = V > 1; /* interleaved: a device group's chunks share its GPU (COMM defaults to staged) */
    /* the backward entry's constants after the forward entry's weights: one buffer holds the parameters once for both
     * entries (runtime/pipe.c, galv_pipe_bwd_base) */
    const int64_t bwd_base = mb ? gv_emit_weights_bytes(ms) : 0;
    galvc_emit_const_base = bwd_base;
    if (!rc && mb) rc = emit_program(mb, dir, quiet, cuda ? &cs : NULL, "bwd"); /* program_bwd.c (.cu), weights_bwd.bin */
    /* ZB-H1's weight-gradient entry: its constants after those (galv_pipe_wgt_base), the same buffer again */
    const int64_t wgt_base = !mw ? 0 : mb ? gv_emit_weights_bytes_at(mb, bwd_base) : gv_emit_weights_bytes(ms);
    galvc_emit_const_base = wgt_base;
    if (!rc && mw) rc = emit_program(mw, dir, quiet, cuda ? &cs : NULL, "wgt"); /* program_wgt.c (.cu), weights_wgt.bin */
    galvc_emit_const_base = 0;
    if (!rc) rc = emit_program(ms, dir, quiet, cuda ? &cs : NULL, NULL);
    if (!rc && mb && !quiet) { /* the stash per microbatch: the backward entry's galv.state inputs */
      int n = 0;
      int64_t bytes = state_bytes(mb, &n);
      fprintf(stderr, "galvc: stage %d: forward and backward entries, stash %d values, %lld bytes per microbatch "
                      "(the stage DP's estimate %lld)\n", s, n, (long long)bytes, (long long)pl->cost[s].act_bytes);
    }
    if (!rc && train && !quiet && (mb || s == S - 1)) { /* the saved bytes in flight the schedule predicts (galv_pipe_peak) */
      int n = 0, wn = 0, pmb = 0;
      int64_t fb = mb ? state_bytes(mb, &n) : result_bytes(ms, "grad:pp."), wb = mw ? state_bytes(mw, &wn) : 0;
      galv_pipe_act *acts = malloc(sizeof *acts * (size_t)(3 * pa->B * V));
      il_fb[s] = fb;
      /* interleaved: the copies pipe.c sends from per microbatch: the forward's values, one per receiving stage (none
       * from the last stage), released at B where their gradients come back, else (il_fk) kept until the step's end;
       * the backward's gradients of the received values, released once the previous stage's next input arrives, those
       * to other stages (il_bk) kept until the step's end (galv_pipe_peak_group_mem) */
      il_fs[s] = il_bs[s] = il_fk[s] = il_bk[s] = 0;
      for (int i = 0; i < io->nout && s < S - 1; i++) {
        char gname[300];
        snprintf(gname, sizeof gname, "gin:%s", io->out[i].name);
        const int64_t b = stage_value_copy_bytes(ms, io->out[i].name) * __builtin_popcountll(io->out[i].dst_mask);
        *(stage_value_type(mb ? mb : ms, gname) ? &il_fs[s] : &il_fk[s]) += b;
      }
      for (int i = 0; i < io->nin; i++) {
        char gname[300];
        snprintf(gname, sizeof gname, "grad:%s", io->in[i].name);
        *(io->in[i].peer == s - 1 ? &il_bs[s] : &il_bk[s]) += stage_value_copy_bytes(mb ? mb : ms, gname);
      }
      if (!acts) rc = gv_error_plain("out of memory");
      else {
        int na = galv_pipe_order_v(S, V, s, pa->B, pa->sched, acts);
        int64_t peak = galv_pipe_peak(acts, na, fb, wb, s == S - 1, &pmb);
        fprintf(stderr, "galvc: stage %d: %s: predicted peak saved bytes %lld (%d microbatches; %lld bytes per microbatch until "
                        "B%s", s, gv_schedule_name(pa->sched), (long long)peak, pmb, (long long)fb, mw ? "" : ")\n");
        if (mw) fprintf(stderr, ", %lld until W: %d values)\n", (long long)wb, wn);
        free(acts);
      }
    }
    if (!rc) { /* the stage table and (cpu) its Makefile: mpicc, -DGALV_PIPE_STAGE, pipe_stage.c */
      char path[4200];
      snprintf(path, sizeof path, "%spipe_stage.c", dir);
      galv_wfile wf;
      FILE *f = galvc_open_out(&wf, path, 0);
      if (!f) rc = -1;
      else {
        fprintf(f, "/* Generated by galvc: pipeline stage %d of %d (runtime/galv_pipe.h). */\n#include \"runtime/galv_pipe.h\"\n\n", s, S);
        fprintf(f, "const int galv_pipe_stage = %d, galv_pipe_nstages = %d, galv_pipe_microbatches = %d;\n", s, S, pa->B);
        fprintf(f, "const int galv_pipe_first_rank[] = {");
        for (int i = 0; i <= S; i++) fprintf(f, "%s%d", i ? ", " : "", first_rank[i]);
        fprintf(f, "};\nconst double galv_pipe_predicted_ms[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%.6f", i ? ", " : "", (double)pl->cost[i].ns / 1e6);
        fprintf(f, "};\nconst int64_t galv_pipe_predicted_state[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%lldLL", i ? ", " : "", (long long)pl->cost[i].state_bytes);
        fprintf(f, "};\nconst int64_t galv_pipe_predicted_act[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%lldLL", i ? ", " : "", (long long)pl->cost[i].act_bytes);
        fprintf(f, "};\nconst int galv_pipe_predicted_inflight[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)pl->inflight[i]);
        fprintf(f, "};\nconst int64_t galv_pipe_predicted_saved[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%lldLL", i ? ", " : "", (long long)(train ? gv_pipe_plan_saved(pl, i) : 0));
        fprintf(f, "};\nconst galv_pipe_value galv_pipe_in[] = {\n");
        for (int i = 0; i < io->nin; i++) fprintf(f, "    {\"%s\", %d, 0},\n", io->in[i].name, io->in[i].peer);
        fprintf(f, "    {0, 0, 0}};\nconst int galv_pipe_nin = %d;\nconst galv_pipe_value galv_pipe_out[] = {\n", io->nin);
        for (int i = 0; i < io->nout; i++) fprintf(f, "    {\"%s\", -1, 0x%llxull},\n", io->out[i].name, (unsigned long long)io->out[i].dst_mask);
        fprintf(f, "    {0, 0, 0}};\nconst int galv_pipe_nout = %d;\n", io->nout);
        /* training: schedule, optimizer, the parameters' weights.bin slots (the emitter's layout: arg order, 64-aligned) */
        const gv_train_options *to = &gv_train_opts;
        fprintf(f, "const int galv_pipe_training = %d, galv_pipe_schedule = %d; /* 0 gpipe, 1 1f1b, 2 zb-h1, 3 interleaved */\n",
                train ? 1 : 0, train ? (int)pa->sched : GV_SCHED_1F1B);
        fprintf(f, "const int galv_pipe_vstages = %d; /* interleaved: chunks per device group (stage s on group s %% %d) */\n", V, NG);
        fprintf(f, "const int64_t galv_pipe_bwd_base = %lldLL; /* the backward entry's constants from here: one weights buffer "
                   "for both entries (0: none) */\n", (long long)bwd_base);
        fprintf(f, "const int64_t galv_pipe_wgt_base = %lldLL; /* ZB-H1: the weight-gradient entry's constants from here, the "
                   "same buffer (0: none) */\n", (long long)wgt_base);
        fprintf(f, "const char galv_pipe_optimizer[] = \"%s\";\n", train ? to->optimizer : "");
        /* cross entropy: the microbatches weighted by their counted labels (runtime/pipe.c) */
        fprintf(f, "const int galv_pipe_ce = %d;\nconst char galv_pipe_labels[] = \"%s\";\nconst int64_t galv_pipe_ignore_index = %lldLL;\n",
                train && !strcmp(to->loss, "cross_entropy") ? 1 : 0, train && to->labels ? to->labels : "",
                (long long)to->ignore_index);
        fprintf(f, "const double galv_pipe_hparams[6] = {%.17g, %.17g, %.17g, %.17g, %.17g, %.17g}; /* lr wd beta1 beta2 eps momentum */\n",
                to->lr, to->weight_decay, to->beta1, to->beta2, to->eps, to->momentum);
        fprintf(f, "const double galv_pipe_clip = %.17g; /* --clip-grad-norm (0: none) */\n", train ? to->clip_grad_norm : 0.0);
        fprintf(f, "const double galv_pipe_loss_scale[5] = {%d, %.17g, %.17g, %.17g, %lld}; /* mode scale growth backoff interval */\n",
                train ? to->loss_scale_mode : 0, to->loss_scale, to->scale_growth, to->scale_backoff, (long long)to->scale_interval);
        fprintf(f, "const galv_io galv_pipe_params[] = {\n");
        int np = 0;
        int64_t w = 0, pend = 0; /* pend: the end of the last parameter (the span ZeRO-1 splits) */
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          const gv_type *t = &ms->main->body->args[a]->type;
          int64_t nb = gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype);
          fprintf(f, "    {\"%s\", %s, %d, {", ms->main->arg_names[a], cg_rt_dtype(t->dtype), t->rank);
          for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
          fprintf(f, "%s}, 1, %lld, %lld, 0},\n", t->rank ? "" : "0", (long long)w, (long long)nb);
          pend = w + nb;
          w = (w + nb + 63) / 64 * 64;
          np++;
        }
        fprintf(f, "    {0}};\nconst int galv_pipe_nparams = %d;\n", np);
        /* per parameter: the stages holding a copy (more than this one: a shared parameter) */
        fprintf(f, "const uint64_t galv_pipe_param_stages[] = {");
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          uint64_t mk = 1ull << s;
          for (int b = 0; b < mp->main->body->nargs; b++)
            if (mp->main->arg_is_param[b] && !strcmp(mp->main->arg_names[b], ms->main->arg_names[a])) mk |= pmask[b];
          fprintf(f, "0x%llxull, ", (unsigned long long)mk);
        }
        fprintf(f, "0};\n");
        /* per parameter: 1 when it is shared and every holding stage splits it alike (its gradient returned as this
         * rank's block, summed across the stages block by block); 0: a shared one's gradient whole */
        fprintf(f, "const unsigned char galv_pipe_shared_split[] = {");
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          int b = 0;
          while (b < nargs && !(mp->main->arg_is_param[b] && !strcmp(mp->main->arg_names[b], ms->main->arg_names[a]))) b++;
          const char *sig = b < nargs && ssplit[b] > 0 ? ssig[(size_t)s * (size_t)nargs + (size_t)b] : NULL;
          fprintf(f, "%d, ", sig && strcmp(sig, "-") ? 1 : 0);
        }
        fprintf(f, "0};\n");
        /* the parameters' splits over the stage's ranks (runtime/galv_spmd.h galv_io_split) */
        np = 0;
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          const gv_value *v = ms->main->body->args[a];
          const gv_sharding *sh = gv_value_sharding(ms, v);
          if (per > 1 && cg_is_split(sh)) {
            fprintf(f, "static const int64_t param_starts%d[] = {", np);
            for (int r = 0; r < per; r++) {
              int64_t st[GV_MAX_RANK];
              cg_block_start(sh, v->type.rank, v->type.dims, r, st);
              for (int d = 0; d < v->type.rank; d++) fprintf(f, "%s%lld", r || d ? ", " : "", (long long)st[d]);
            }
            fprintf(f, "};\n");
          }
          np++;
        }
        fprintf(f, "const galv_io_split galv_pipe_param_split[] = {\n");
        np = 0;
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          const gv_value *v = ms->main->body->args[a];
          const gv_sharding *sh = gv_value_sharding(ms, v);
          int split = per > 1 && cg_is_split(sh);
          fprintf(f, "    {{");
          for (int d = 0; d < v->type.rank; d++)
            fprintf(f, "%s%lld", d ? ", " : "", (long long)(v->type.dims[d] * (split && d < sh->rank ? gv_sharding_dim_split(sh, d) : 1)));
          if (split) fprintf(f, "%s}, param_starts%d},\n", v->type.rank ? "" : "0", np);
          else fprintf(f, "%s}, NULL},\n", v->type.rank ? "" : "0");
          np++;
        }
        fprintf(f, "    {{0}, NULL}};\n");
        { /* --pipeline-zero 1: the optimizer state split over the stage mesh's axes that split no parameter */
          const gv_mesh *zm = per > 1 && ms->nmeshes ? ms->meshes[0] : NULL;
          unsigned used = 0;
          for (int a = 0; zm && a < ms->main->body->nargs; a++) {
            const gv_sharding *sh = ms->main->arg_is_param[a] ? gv_value_sharding(ms, ms->main->body->args[a]) : NULL;
            for (int d = 0; sh && d < sh->rank; d++)
              for (int x = 0; x < sh->naxes[d]; x++) used |= 1u << sh->axes[d][x];
          }
          const bool zon = zlev != GV_ZERO_NONE || once;
          unsigned zaxes = zm && train && zon ? ((1u << zm->naxes) - 1) & ~used : 0;
          for (int x = 0; zm && x < zm->naxes; x++)
            if (zm->size[x] == 1) zaxes &= ~(1u << x);
          bool upart = false; /* no ZeRO: some gradient left unreduced (else every one is whole already: nothing to reduce) */
          for (int a = 0, np = 0; once && a < ms->main->body->nargs; a++)
            if (ms->main->arg_is_param[a]) upart |= (gpart[np++] & zaxes) != 0;
          const bool allwhole = once && !upart && zaxes;
          if (allwhole) zaxes = 0;
          const int zst = zaxes ? (once ? 4 : zlev) : 0; /* the runtime's galv_pipe_zero: GV_ZERO_*, 4: none, reduced once */
          fprintf(f, "const int galv_pipe_zero = %d, galv_pipe_zero_nmesh = %d;\nconst int64_t galv_pipe_zero_mesh[] = {", zst,
                  zm ? zm->naxes : 0);
          for (int x = 0; zm && x < zm->naxes; x++) fprintf(f, "%lld, ", (long long)zm->size[x]);
          fprintf(f, "0};\nconst unsigned galv_pipe_zero_axes = 0x%xu;\n", zaxes);
          /* ZeRO-2: per parameter 1 when its gradient outputs are this rank's share of a sum over the zero axes */
          fprintf(f, "const unsigned char galv_pipe_zero_partial[] = {");
          for (int a = 0, np = 0; a < ms->main->body->nargs; a++) {
            if (!ms->main->arg_is_param[a]) continue;
            unsigned pz = zst >= GV_ZERO_2 ? gpart[np] & zaxes : 0;
            if (pz && pz != zaxes && !z2err)
              z2err = gv_error_plain("stage %d: --pipeline-zero 2: the gradient of '%s' is pending over some of the ranks holding "
                                  "equal parameters only: not yet", s, ms->main->arg_names[a]);
            fprintf(f, "%d, ", pz ? 1 : 0);
            np++;
          }
          fprintf(f, "0};\n");
          if (train && allwhole && !quiet)
            fprintf(stderr, "galvc: stage %d: every parameter gradient whole in the stage program (nothing to reduce over its "
                            "ranks)\n", s);
          else if (train && once && !quiet) { /* all-reduced in place once per step: g chunks of zn elements, 2 (g - 1) zn sent */
            int64_t g = 1;
            for (int x = 0; zm && x < zm->naxes; x++)
              if (zaxes >> x & 1) g *= zm->size[x];
            /* one all-reduce per run of consecutive unreduced parameters (runtime/pipe.c), their slots' padding between
             * them included; a ring all-reduce sends 2 (g - 1) / g of its bytes (galv_comm_counters) */
            const int eb = gv_precision_opts.grad != GV_DT_F32 && gv_precision_opts.storage != GV_DT_F32 ? 2 : 4;
            int npart = 0, nparam = 0;
            int64_t sent = 0, w = 0, lo = -1, hi = 0;
            for (int a = 0, np = 0; a <= ms->main->body->nargs; a++) {
              if (a < ms->main->body->nargs && !ms->main->arg_is_param[a]) continue;
              bool up = a < ms->main->body->nargs && (gpart[np] & zaxes) != 0;
              for (int b = 0; up && b < mp->main->body->nargs; b++) /* a shared parameter's: its whole sum, apart */
                if (mp->main->arg_is_param[b] && __builtin_popcountll(pmask[b]) > 1 && !strcmp(mp->main->arg_names[b], ms->main->arg_names[a])) {
                  /* (split alike across the stages: its block) */
                  const gv_type *tb = ssplit[b] > 0 ? &ms->main->body->args[a]->type : &mp->main->body->args[b]->type;
                  sent += 2 * (g - 1) * (gv_type_numel(tb) * eb) / g, up = false, npart++;
                  break;
                }
              if (!up && lo >= 0) sent += 2 * (g - 1) * ((hi - lo) / 4 * eb) / g, lo = -1;
              if (a == ms->main->body->nargs) break;
              const gv_type *t = &ms->main->body->args[a]->type;
              const int64_t nb = gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype);
              if (up && lo < 0) lo = w;
              if (up) hi = w + nb;
              w = (w + nb + 63) / 64 * 64;
              npart += up, nparam++, np++;
            }
            if (g > 1)
              fprintf(stderr, "galvc: stage %d: gradients reduced once per step over %lld ranks (%d of %d parameters' gradients "
                              "left unreduced by the stage program), all-reduce %lld bytes sent per rank per step\n", s,
                      (long long)g, npart, nparam, (long long)sent);
          } else if (train && zon && !quiet) {
            int64_t g = 1;
            for (int x = 0; zm && x < zm->naxes; x++)
              if (zaxes >> x & 1) g *= zm->size[x];
            int64_t zn = ((pend + 3) / 4 + g - 1) / g; /* floats per rank (runtime/pipe.c) */
            if (g > 1)
              fprintf(stderr, "galvc: stage %d: ZeRO-1: optimizer state split over %lld ranks (%lld floats each), all-gather "
                              "%lld bytes sent per rank per step\n", s, (long long)g, (long long)zn, (long long)((g - 1) * zn * 4));
            else fprintf(stderr, "galvc: stage %d: ZeRO-1 off (no mesh axis of more than one rank holds equal parameters)\n", s);
            if (g > 1 && zst >= GV_ZERO_2) { /* the step's sums reduce-scattered once: (g - 1) chunks of zn elements sent;
                                               * per microbatch: GV_ZERO_EACH_BUCKETS x g buckets of bs elements each */
              const int eb = gv_precision_opts.grad != GV_DT_F32 && gv_precision_opts.storage != GV_DT_F32 ? 2 : 4;
              int npart = 0, nparam = 0;
              for (int a = 0, np = 0; a < ms->main->body->nargs; a++)
                if (ms->main->arg_is_param[a]) npart += (gpart[np++] & zaxes) != 0, nparam++;
              const int64_t nbk = GV_ZERO_EACH_BUCKETS * g, bs = (zn + nbk - 1) / nbk;
              if (zst == GV_ZERO_2)
                fprintf(stderr, "galvc: stage %d: ZeRO-2: gradient sums reduce-scattered over %lld ranks once per step (%d of %d "
                                "parameters' gradients left unreduced by the stage program), reduce-scatter %lld bytes sent per "
                                "rank per step\n", s, (long long)g, npart, nparam, (long long)((g - 1) * zn * eb));
              else { /* parameters other stages hold too: summed across the stages, then one more pass per step */
                int shared = 0;
                for (int a = 0; a < mp->main->body->nargs; a++)
                  shared += mp->main->arg_is_param[a] && __builtin_popcountll(pmask[a]) > 1 && (pmask[a] >> s & 1);
                fprintf(stderr, "galvc: stage %d: ZeRO-2: each microbatch's gradients reduce-scattered over %lld ranks into "
                                "the rank's chunk (%d of %d parameters' gradients left unreduced by the stage program; %lld "
                                "buckets of %lld elements per rank), reduce-scatter %lld bytes sent per rank per microbatch%s\n",
                        s, (long long)g, npart, nparam, (long long)nbk, (long long)bs, (long long)(nbk * (g - 1) * bs * eb),
                        shared ? " and once more per step (the parameters other stages hold too, after their sum)" : "");
              }
            }
          }
        }
        /* training with a stash: the backward entry (program_bwd.c); else none */
        if (mb) fprintf(f, "GALV_PIPE_ENTRY_DECL(bwd);\nconst galv_pipe_entry galv_pipe_bwd = GALV_PIPE_ENTRY(bwd);\n");
        else fprintf(f, "const galv_pipe_entry galv_pipe_bwd = {0};\n");
        /* ZB-H1: the weight-gradient entry (program_wgt.c); else none */
        if (mw) fprintf(f, "GALV_PIPE_ENTRY_DECL(wgt);\nconst galv_pipe_entry galv_pipe_wgt = GALV_PIPE_ENTRY(wgt);\n");
        else fprintf(f, "const galv_pipe_entry galv_pipe_wgt = {0};\n");
        rc = write_xfers(f, ms, mb, io, s, dev, pa, train, cluster);
        if (z2err) rc = z2err;
        rc = galvc_close_out(&wf, rc);
      }
      snprintf(path, sizeof path, "%sMakefile", dir);
      char *mk = NULL;
      size_t len = 0;
      f = rc || cuda ? NULL : fopen(path, "r");
      if (!rc && f) {
        mk = malloc(1 << 16);
        len = mk ? fread(mk, 1, (1 << 16) - 1, f) : 0;
        fclose(f);
      }
      if (!rc && !cuda && (!mk || !len)) rc = gv_error_plain("%s: cannot read the generated Makefile", path);
      if (!rc && !cuda) {
        mk[len] = 0;
        f = galvc_open_out(&wf, path, 0);
        if (!f) rc = -1;
        else {
          fprintf(f, "# pipeline stage %d of %d: main = runtime/pipe.c (run all stages with ../launch)\n", s, S);
          for (char *line = strtok(mk, "\n"); line; line = strtok(NULL, "\n")) {
            if (!strncmp(line, "CC ?= cc", 8)) fprintf(f, "MPICC ?= mpicc\nCC = $(MPICC)\n");
            else if (!strncmp(line, "COMM = ", 7)) fprintf(f, "COMM = mpi\n");
            else if (!strncmp(line, "WARN = ", 7)) fprintf(f, "WARN = -DGALV_PIPE_STAGE %s\n", line + 7);
            else if (!strncmp(line, "SRC = program.c ", 16))
              fprintf(f, "SRC = program.c %s%spipe_stage.c %s\n", mb ? "program_bwd.c " : "", mw ? "program_wgt.c " : "", line + 16);
            else fprintf(f, "%s\n", line);
          }
          rc = galvc_close_out(&wf, 0);
        }
      }
      free(mk);
    }
    free(io);
    free(gpart);
    if (ms) gv_module_free(ms);
    if (mb) gv_module_free(mb);
    if (mw) gv_module_free(mw);
  }
  /* after the first pass: a shared parameter tried split stays so where every holder splits it alike; else whole,
   * and the holders that split it are compiled again (their table's galv_pipe_shared_split 0) */
  for (int a = 0; !rc && pass == 0 && a < nargs; a++) {
    if (ssplit[a] <= 0) continue;
    const char *first = NULL;
    bool same = true, any = false;
    for (int t = 0; t < S; t++) {
      const char *g = pmask[a] >> t & 1 ? ssig[(size_t)t * (size_t)nargs + (size_t)a] : NULL;
      if (!g) continue;
      if (!first) first = g;
      same &= !strcmp(g, first) && strcmp(g, "-");
      any |= strcmp(g, "-") != 0;
    }
    if (same && first) {
      if (!quiet)
        fprintf(stderr, "galvc: pipeline: parameter '%s': every holding stage splits it alike: its gradient stays split, "
                        "summed across the stages block by block\n", mp->main->arg_names[a]);
      continue;
    }
    ssplit[a] = 0;
    for (int t = 0; t < S && any; t++) {
      const char *g = pmask[a] >> t & 1 ? ssig[(size_t)t * (size_t)nargs + (size_t)a] : NULL;
      if (g && strcmp(g, "-")) redo |= 1ull << t;
    }
    if (any && !quiet)
      fprintf(stderr, "galvc: pipeline: parameter '%s': the holding stages split it differently: its gradient summed "
                      "whole (the stages that split it compiled again)\n", mp->main->arg_names[a]);
  }
  }
  for (int s = 0; !rc && build && s < S; s++) { /* each stage's program, once its table is final */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%sstage%d/", out, out[strlen(out) - 1] == '/' ? "" : "/", s);
    rc = build_program(dir, quiet);
  }
  for (size_t i = 0; ssig && i < (size_t)S * (size_t)nargs; i++) free(ssig[i]);
  free(ssig);
  free(ssplit);
  if (mp) gv_module_free(mp);
  free(pmask);
  for (int d = 0; !rc && !quiet && V > 1 && d < NG; d++) { /* interleaved: each group's peak over its order and chunks */
    galv_pipe_act *ga = malloc(sizeof *ga * (size_t)(2 * V * pa->B));
    int64_t fb[GV_PIPE_MAX_STAGES];
    int pmb = 0;
    if (!ga) { rc = gv_error_plain("out of memory"); break; }
    for (int c = 0; c < V; c++) fb[c] = il_fb[c * NG + d];
    int64_t peak = galv_pipe_peak_group(ga, galv_pipe_order_group(NG, V, d, pa->B, ga), fb, &pmb);
    fprintf(stderr, "galvc: device group %d (stages", d);
    for (int c = 0; c < V; c++) fprintf(stderr, "%s%d", c ? "," : " ", c * NG + d);
    fprintf(stderr, "): interleaved: predicted peak saved bytes %lld (%d chunk microbatches)\n", (long long)peak, pmb);
    /* the group's memory: its stages' states (the plan's) + the peak over its order of the saved bytes, the send
     * copies the runtime holds until their receivers are known to have them, and the batons (runtime/pipe.c prints
     * its tracker beside it) */
    int64_t fs[GV_PIPE_MAX_STAGES], bs[GV_PIPE_MAX_STAGES], fk[GV_PIPE_MAX_STAGES], bk[GV_PIPE_MAX_STAGES], states = 0;
    for (int c = 0; c < V; c++) {
      const int st = c * NG + d;
      fs[c] = il_fs[st], bs[c] = il_bs[st], fk[c] = il_fk[st], bk[c] = il_bk[st], states += pl->cost[st].state_bytes;
    }
    int64_t held = galv_pipe_group_held(NG, V, d, pa->B, fb, fs, bs, fk, bk, ga);
    fprintf(stderr, "galvc: device group %d (stages", d);
    for (int c = 0; c < V; c++) fprintf(stderr, "%s%d", c ? "," : " ", c * NG + d);
    fprintf(stderr, "): interleaved: predicted memory peak %lld bytes (states %lld + saved activations, send copies and "
                    "batons at their peak %lld)\n", (long long)(states + held), (long long)states, (long long)held);
    if (getenv("GALV_PLAN_DEBUG")) /* the stage DP's figure for the group: the same, on the stage costs' bytes */
      fprintf(stderr, "plan-debug: device group %d: the stage DP's figure %lld bytes\n", d, (long long)gv_pipe_group_mem(pl, d, NULL));
    free(ga);
  }
  if (!rc) { /* out/launch: mpirun MPMD, one program per stage */
    char path[4200];
    snprintf(path, sizeof path, "%s%slaunch", out, out[strlen(out) - 1] == '/' ? "" : "/");
    galv_wfile wf;
    FILE *f = galvc_open_out(&wf, path, 1);
    if (!f) rc = -1;
    else {
      fprintf(f, "#!/bin/sh\n# Generated by galvc: the %d pipeline stages, %d microbatches, ranks per stage", S, pa->B);
      for (int s = 0; s < S; s++) fprintf(f, "%s%d", s ? "," : " ", dev[s]);
      if (V > 1) fprintf(f, "; interleaved: %d device groups of %d stages (stage s on group s mod %d)", NG, V, NG);
      fprintf(f, "; ranks -> stage programs.\n"
                 "# usage: ./launch [PROGRAM OPTIONS] (every stage gets the same options); MPIRUN overrides mpirun.\n%s"
                 "d=$(cd \"$(dirname \"$0\")\" && pwd)\n[ \"$(id -u)\" = 0 ] && ROOT=--allow-run-as-root\n%s"
                 "GALV_WHO=$d\nGALV_RANKS=\"",
              cuda ? "# CUDA stages: one device per rank (NCCL); built with make COMM=staged every rank may share one GPU.\n"
                     "# GALV_STAGE_PROGRAM (or GALV_PROGRAM)=program-cpu runs the stages' CPU builds (make cpu in each stage).\n" : "",
              cg_launch_mpirun_sh);
      for (int s = 0, k = 0; s < S; s++) /* each rank's stage folder, in rank order: names a failing rank's program */
        for (int r = 0; r < dev[s]; r++) fprintf(f, "%sstage%d", k++ ? " " : "", s);
      /* each rank's device in the plan, in rank order (nodes of the cluster's devices per node): a stage's ranks
       * follow the stages before it; under interleaved 1F1B the V stages of a device group have its devices
       * (runtime/pipe.c galv_pipe_device_slot), so GALV_HOSTS places them on one node (galv_place) */
      int64_t pn = cluster->devices_per_node > 0 ? cluster->devices_per_node : gpus > 0 ? gpus : 1;
      fprintf(f, "\"\n%s# GALV_HOSTS=h0,h1,.. (or GALV_HOSTFILE=FILE): the nodes in the plan's order; each rank placed on its device's\n"
                 "# node by a rankfile (GALV_RANKFILE=FILE keeps it), GALV_CORES_PER_NODE cores bound per node (default nproc)\n"
                 "GALV_PER_NODE=%lld\nGALV_DEVS=\"", cg_launch_place_sh, (long long)pn);
      for (int s = 0, k = 0, first = 0; s < S; first += dev[s], s++)
        for (int r = 0; r < dev[s]; r++) fprintf(f, "%s%d", k++ ? " " : "", (V > 1 ? (s % NG) * dev[s] : first) + r);
      fprintf(f, "\"\nRF=\n"
                 "if [ -n \"${GALV_HOSTS:-}${GALV_HOSTFILE:-}\" ]; then\n"
                 "  RF=${GALV_RANKFILE:-$(mktemp \"${TMPDIR:-/tmp}/galv-rankfile.XXXXXX\")} || exit 1\n"
                 "  if ! galv_place \"$RF\"; then [ -z \"${GALV_RANKFILE:-}\" ] && rm -f \"$RF\"; exit 1; fi\n"
                 "fi\n"
                 "galv_mpirun ${MPIRUN:-mpirun $ROOT --oversubscribe --bind-to none} ${MPIRUN_ARGS:-} ${RF:+--rankfile \"$RF\"}");
      for (int s = 0; s < S; s++)
        fprintf(f, cuda ? "%s -np %d \"$d/stage%d/${GALV_STAGE_PROGRAM:-${GALV_PROGRAM:-program}}\" \"$@\"" : "%s -np %d \"$d/stage%d/program\" \"$@\"",
                s ? " :" : "", dev[s], s);
      fprintf(f, "\nrc=$?\n[ -n \"$RF\" ] && [ -z \"${GALV_RANKFILE:-}\" ] && rm -f \"$RF\"\nexit $rc\n");
      rc = galvc_close_out(&wf, 0);
      if (!rc && !quiet) {
        fprintf(stderr, "galvc: wrote %s (%d stages)\n", path, S);
        if (!build) fprintf(stderr, "galvc: build: make -C DIR for each of %s%sstage0/ .. stage%d/\n", out, out[strlen(out) - 1] == '/' ? "" : "/", S - 1);
        fprintf(stderr, "galvc: run: %s %s\n", path,
                train ? "--batches DIR/ --steps N -o weights/  (DIR/NAME.npy per data input and labels)"
                      : "--input NAME=FILE.npy ... -o results/  (every data input)");
      }
    }
  }
  free(pl);
  return rc;
}

