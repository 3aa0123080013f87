/* galvc — the compiler driver. The pipeline is the straight list of passes
 * in `pipeline` below; each pass is one file in passes/. This file parses
 * options, imports the model, runs the list and writes the results. It must
 * never hold pass logic. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "../codegen/codegen.h"
#include "../codegen/comm.h"
#include "../codegen/cpu/cpu.h"
#include "../frontend/onnx_import.h"
#include "../ir/ir.h"
#include "../passes/passes.h"
#include "../passes/plan_sharding.h"
#include "../planner/cost.h"
#include "../planner/cross_mesh.h"
#include "../passes/stage_cost.h"
#include "../passes/stage_extract.h"
#include "../planner/pipeline.h"
#include "../runtime/galv_pipe_sched.h"

#ifndef GALV_VERSION
#define GALV_VERSION "0.0.0"
#endif

/* The pipeline, in order. */
static const char *const pipeline[] = {
    "shape-infer",    /* every value gets a type; shapes static once dims are bound */
    "fold-constants", /* shape chains, masks, constant If -> constants */
    "canonicalize",   /* decomposed LayerNorm / RMSNorm / GELU -> single ops */
    "dce",            /* drop what nothing uses */
    "cluster-layers", /* with --layers K: METIS layer groups (docs/pipeline.md) */
    "propagate-sharding", /* with --gpus > 1 / --mesh: shardings, galv.reshard (docs/sharding.md) */
    "spmd-partition", /* one rank's local program: local shapes, collectives */
    "fuse",           /* elementwise chains -> galv.fused (docs/device-program.md) */
    "memory-plan",    /* one activation arena: galv.arena, offsets */
};
enum { NPIPELINE = sizeof pipeline / sizeof pipeline[0] };

/* With --train, inserted right after dce: the training step. */
static const char *const train_pipeline[] = {
    "loss",      /* --loss over the first output; new input --labels */
    "autodiff",  /* gradients of the loss for every parameter */
    "recompute", /* --recompute layers: forward clones before their backward uses */
    "optimizer", /* --optimizer update; the function becomes the training step */
};
enum { NTRAIN = sizeof train_pipeline / sizeof train_pipeline[0] };

static void usage(FILE *f) {
  fprintf(f,
          "usage: galvc MODEL.onnx [options]\n"
          "\n"
          "galvc compiles an ONNX model into a parallel plan and per-device programs.\n"
          "Pipeline: import (frontend/) -> passes (passes/):");
  for (int i = 0; i < NPIPELINE; i++) fprintf(f, " %s%s", pipeline[i], i + 1 < NPIPELINE ? "," : "");
  fprintf(f,
          " -> output.\n"
          "\n"
          "options:\n"
          "  --gpus N                 devices to plan for (default 1)\n"
          "  --gpus-per-node K        devices per node (default: all in one node)\n"
          "  --mesh dp=2,tp=4         the logical mesh: 1 to 3 named axes multiplying to --gpus\n"
          "                           (default: one axis named after --strategy, or dp)\n"
          "  --strategy dp|tp|zero|dp,tp|auto  sharding presets (docs/sharding.md); auto (the default with\n"
          "                           --gpus > 1): the planner searches (docs/planner.md)\n"
          "  --plan FILE              reuse a saved plan.json; --plan-out FILE writes it (default: -o DIR/plan.json)\n"
          "  --plan-only              stop after planning (with --no-weights: shapes only, for big models)\n"
          "  --memory-limit BYTES     memory per device for the planner (default: the cluster's)\n"
          "  --plan-search dp|exhaustive  dp (default): ZeRO pattern by knapsack DP; exhaustive: realise every\n"
          "                           plan of the space (the exact optimum, small models)\n"
          "  --layers K               cluster-layers: K layer groups; --pipe-stats prints a summary (docs/pipeline.md)\n"
          "  --pipeline-stages S (--pp S)  pipeline: S stages (cluster-layers + stage DP), one program per stage\n"
          "                           in DIR/stageI/, DIR/launch runs them (mpirun MPMD); --microbatches B (1),\n"
          "                           --schedule gpipe|1f1b (1f1b), --trace-plan FILE (the cost model's Chrome trace;\n"
          "                           with --train: forward and backward per stage and microbatch, the runtime's order);\n"
          "                           --gpus N: N / S devices per stage, each stage's sharding from the planner\n"
          "                           (or --strategy tp|dp|dp,tp [--mesh]); S = auto (0): the stage DP chooses\n"
          "                           the stages, each stage's devices (equal k = 1, 2, 4 .. with S k <= --gpus,\n"
          "                           or uneven over all --gpus) and each stage's plan; --microbatches auto: B\n"
          "                           among the divisors of --batch; the choice is printed. --stage-cost\n"
          "                           planner|analytic: stage costs from the intra-operator planner per stage\n"
          "                           program (default) or the analytic formula\n"
          "                           --stage-cuts dp|equal: the stage DP's cuts (default) or K/S layer groups per\n"
          "                           stage (equal cuts; --layers K = the blocks; docs/pipeline.md)\n"
          "                           stages of k devices: --gpus S*k [--strategy tp|dp (or --mesh per stage with\n"
          "                           --strategy dp,tp)]; --stage-devices 2,1: devices per stage\n"
          "                           (may differ; sum = --gpus). Values crossing stages move as the cross-mesh\n"
          "                           plan's tiles, each byte once, then an all-gather inside the receiving stage\n"
          "                           --target cuda (the default with --gpus): CUDA stage programs (make: NCCL,\n"
          "                           make COMM=staged: ranks sharing a GPU, make cpu; fp32; docs/cuda-target.md)\n"
          "                           --train: an earlier stage's program has a forward and a backward entry with a\n"
          "                           per-microbatch stash between them (cpu); --pipeline-recompute (and cuda): one\n"
          "                           combined program per stage that recomputes its forward in the backward\n"
          "  --sharding FILE          pinned shardings: NAME [{\"dp\"}, {}, {\"tp\"}] per line\n"
          "  --cluster PRESET|FILE.json  the cluster model (docs/cluster.md); presets: a100-40g, a100-80g,\n"
          "                           h100-sxm, h200, cpu-local (default cpu-local)\n"
          "  --report-cost            print the cost model's per-op table (FLOPs, bytes, time), totals and\n"
          "                           memory per device for the compiled program (stdout; no IR there)\n"
          "  --input-shape NAME=DxD.. bind a graph input's shape, e.g. input_ids=8x128 (repeatable)\n"
          "  --batch N                bind symbolic batch dims (batch, batch_size, N, B...) (default 1)\n"
          "  --seq N                  bind symbolic sequence dims (seq, sequence, seq_len, T...) (default 128)\n"
          "  -o PATH                  a directory (ends in '/' or exists): write the program there\n"
          "                           (program.c, weights.bin, Makefile, runtime/, README) and build it with\n"
          "                           make; a file (or none: stdout): write the IR after the pipeline\n"
          "  --target cpu|cuda        code generation target: cuda (CUDA C + cuBLAS + NCCL, built with nvcc;\n"
          "                           runs where a GPU is) is the default when --gpus is given, cpu (C +\n"
          "                           OpenBLAS + MPI; runs anywhere) otherwise (docs/cuda-target.md, cpu-target.md)\n"
          "  --cuda-arch sm_90[,sm_80]  GPU architectures of the cuda target (default sm_90)\n"
          "  --precision fp32|bf16    cuda target: float storage (bf16: bf16 storage, fp32 accumulation;\n"
          "                           with --train mixed precision: fp32 parameters, optimizer state and\n"
          "                           parameter gradients, bf16 activations and GEMM inputs)\n"
          "  --emit=ir|program        force the output kind: ir = IR text (MLIR generic syntax; into a\n"
          "                           directory as MODEL.mlir), program = the target's program\n"
          "  --no-build               write the program but do not run make\n"
          "  --dump-ir-after=PASS|all write the IR after PASS (or after import and every pass)\n"
          "  --dump-dir DIR           where dumps go, one numbered file per pass (default: galvc-dumps)\n"
          "  --verify-each            run the IR verifier after every pass\n"
          "  --stats                  print op counts after import and after each pass (stderr)\n"
          "  --no-weights             import shapes only, do not read weight bytes\n"
          "  --train                  compile the training step: + loss, autodiff, optimizer\n"
          "  --loss cross_entropy|mse the loss over the first output (default cross_entropy)\n"
          "  --labels NAME            the new labels / target input (default labels)\n"
          "  --ignore-index N         cross_entropy label that does not count (default -100)\n"
          "  --optimizer adamw|sgd    (default adamw); --lr X (1e-3), --weight-decay X (0.01),\n"
          "                           --beta1 X (0.9), --beta2 X (0.999), --eps X (1e-8), --momentum X (0)\n"
          "  --recompute=none|all|L,..  recompute these layers' activations in backward (layer = NAME.N\n"
          "                           segment of the node names, e.g. h.0 / layers.3, or its index N)\n"
          "  -q, --quiet              no progress output\n"
          "  -h, --help, --version\n"
          "\n"
          "passes:\n");
  for (int i = 0; i < gv_pass_count; i++)
    fprintf(f, "  %-16s %s\n", gv_pass_table[i].name, gv_pass_table[i].help);
  fprintf(f, "\nexamples:\n  galvc gpt2.onnx --input-shape input_ids=8x128 --emit=ir -o gpt2.mlir\n"
             "  galvc gpt2.onnx --batch 2 --seq 16 --target cpu -o out/ && out/program --input input_ids=ids.npy -o res\n"
             "  galvc gpt2.onnx --gpus 8 --batch 8 -o out8/ && out8/launch --input input_ids=ids.npy -o res   (CUDA, 8 ranks)\n");
}

static int count_ops(const gv_block *b) {
  int n = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    n++;
    for (int r = 0; r < op->nregions; r++) n += count_ops(op->regions[r]);
  }
  return n;
}

static void histogram(const gv_block *b, int *h) {
  for (const gv_op *op = b->first; op; op = op->next) {
    h[op->code]++;
    for (int r = 0; r < op->nregions; r++) histogram(op->regions[r], h);
  }
}

static void print_stats(const gv_module *m, const char *after) {
  int h[GV_OP_COUNT] = {0};
  histogram(m->main->body, h);
  fprintf(stderr, "galvc: stats after %s: %d ops:", after, count_ops(m->main->body));
  for (int i = 0; i < GV_OP_COUNT; i++)
    if (h[i]) fprintf(stderr, " %s=%d", gv_ops[i].name, h[i]);
  fputc('\n', stderr);
}

/* The memory plan's figures, read off the galv.arena op. */
static void print_arena(const gv_module *m) {
  const gv_op *a = m->main->body->first;
  if (!a || a->code != GV_OP_ARENA) return;
  long long bytes = (long long)gv_get_int(a, "bytes", 0), lb = (long long)gv_get_int(a, "lower_bound", 0);
  fprintf(stderr, "galvc: memory-plan: arena %lld bytes (lower bound %lld, %.1f%% over)\n", bytes, lb,
          lb > 0 ? 100.0 * (double)(bytes - lb) / (double)lb : 0.0);
  long long pb = (long long)gv_get_int(a, "param_bytes", -1);
  if (pb < 0) return;
  long long gb = (long long)gv_get_int(a, "grad_bytes", 0), ob = (long long)gv_get_int(a, "optimizer_bytes", 0);
  long long act = (long long)gv_get_int(a, "activation_bytes", 0), kept = (long long)gv_get_int(a, "saved_activation_bytes", 0);
  fprintf(stderr, "galvc: memory: parameters %lld bytes, gradients %lld, optimizer state %lld (model states %lld = "
                  "%.1f bytes per f32 parameter), activations kept for backward %lld (forward peak %lld), arena %lld\n",
          pb, gb, ob, pb + gb + ob, pb ? 4.0 * (double)(pb + gb + ob) / (double)pb : 0.0, kept, act, bytes);
}

/* DIR and its missing parents (mkdir -p); -1 with errno when a component is not a directory. */
static int ensure_dir(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return errno = ENAMETOOLONG, -1;
  for (char *c = p + 1;; c++)
    if (*c == '/' || !*c) {
      char keep = *c;
      *c = 0;
      struct stat st;
      if (stat(p, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
      } else if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
      *c = keep;
      if (!keep) return 0;
    }
}

static int write_ir(const gv_module *m, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
  gv_print_module(m, f);
  if (fclose(f)) return gv_error_plain("%s: write failed: %s", path, strerror(errno));
  return 0;
}

static int dump(const gv_module *m, const char *dir, int n, const char *name) {
  if (ensure_dir(dir)) return gv_error_plain("%s: cannot create dump directory", dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/%02d-%s.mlir", dir, n, name);
  return write_ir(m, path);
}

static double now(void);

static bool is_dir_arg(const char *out) {
  struct stat st;
  size_t n = strlen(out);
  return (n && out[n - 1] == '/') || (stat(out, &st) == 0 && S_ISDIR(st.st_mode));
}

/* Emit: the target's program (CPU: program.c; CUDA: program.cu), weights.bin, Makefile, runtime/. */
static int emit_program(gv_module *m, const char *dir, int quiet, const gv_cuda_options *cuda, const char *entry) {
  gv_emit_options eo = {.quiet = quiet, .entry = entry};
  double t = now();
  if (cuda ? gv_emit_cuda(m, dir, &eo, cuda) : gv_emit_cpu(m, dir, &eo)) return 1;
  if (!quiet) fprintf(stderr, "galvc: wrote %s%sprogram%s%s.%s (%d kernels, %.3f s)\n", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                      entry ? "_" : "", entry ? entry : "", cuda ? "cu" : "c", eo.nkernels, now() - t);
  return 0;
}

/* Build: `make -C DIR` (its output on stderr). */
static int build_program(const char *dir, int quiet) {
  extern char **environ;
  char *argv[] = {"make", "-s", "-C", (char *)dir, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  double t = now();
  if (!quiet) /* nvcc takes a minute or more */
    fprintf(stderr, "galvc: building %s%sprogram (make -C %s) ...\n", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", dir);
  int err = posix_spawnp(&pid, "make", &fa, NULL, argv, environ), status = 0;
  posix_spawn_file_actions_destroy(&fa);
  if (err) return gv_error_plain("cannot run make to build %s: %s", dir, strerror(err)), 1;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return gv_error_plain("building %s failed (make -C %s)", dir, dir), 1;
  if (!quiet) fprintf(stderr, "galvc: built %s%sprogram (%.1f s)\n", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", now() - t);
  return 0;
}

/* The graph's data inputs (not weights) as bound at import, one per entry of fmt:
 * fmt's %1$s is the name, %2$s the type (e.g. "%1$s %2$s" or "--input %1$s=FILE.npy"). */
static void describe_inputs(const gv_module *m, const char *fmt, const char *sep, char *buf, size_t n) {
  const gv_func *f = m->main;
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < f->body->nargs && k < n; i++) {
    if (f->arg_is_param[i]) continue;
    char t[256], e[512];
    gv_type_str(&f->body->args[i]->type, t, sizeof t);
    const char *name = f->arg_names[i] ? f->arg_names[i] : "?";
    snprintf(e, sizeof e, fmt, name, t);
    k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? sep : "", e);
  }
}

/* How to run what was written: "DIR/launch --input input_ids=FILE.npy -o results/  (...)". */
static void run_line(char *buf, size_t n, const char *out, bool here, int train, const char *args) {
  char launch[4200];
  struct stat st;
  const char *sep = out[strlen(out) - 1] == '/' ? "" : "/";
  snprintf(launch, sizeof launch, "%s%slaunch", out, sep);
  bool ranks = stat(launch, &st) == 0;
  if (here) out = ".", sep = "/"; /* DIR/README: relative to DIR */
  if (train)
    snprintf(buf, n, "%s%s%s --batches DIR/ --steps N -o weights/  (DIR/NAME.npy for %s, %s; --help lists the options)",
             out, sep, ranks ? "launch" : "program", args, gv_train_opts.labels ? gv_train_opts.labels : "labels");
  else
    snprintf(buf, n, "%s%s%s %s -o results/  (--help lists the options)", out, sep, ranks ? "launch" : "program", args);
}

/* The closing lines: how to build and run what was written. */
static void print_run_hint(const char *out, int built, int train, const char *args) {
  char line[8192];
  run_line(line, sizeof line, out, false, train, args);
  if (!built) fprintf(stderr, "galvc: build: make -C %s\n", out);
  fprintf(stderr, "galvc: run: %s\n", line);
}

/* DIR/README: the command that wrote the directory, the inputs, how to build and run it. */
static int write_readme(const char *out, int argc, char **argv, int train, bool cuda, const char *inputs, const char *args) {
  char path[4200], line[8192];
  snprintf(path, sizeof path, "%s%sREADME", out, out[strlen(out) - 1] == '/' ? "" : "/");
  FILE *f = fopen(path, "w");
  if (!f) return gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
  fprintf(f, "Written by galvc %s:", GALV_VERSION);
  for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
  fprintf(f, "\n\n%s program (%s); inputs, the global shapes the files hold:\n  %s\n\n",
          train ? "A training step" : "An inference", cuda ? "CUDA target: program.cu, and program.c for make cpu" : "CPU target: program.c",
          inputs);
  fprintf(f, "build:  make%s\n", cuda ? "        (make cpu: ./program-cpu, the same program on the CPU)" : "");
  run_line(line, sizeof line, out, true, train, args);
  fprintf(f, "run:    %s\n", line);
  if (cuda && strstr(line, "launch"))
    fprintf(f, "        without a GPU: make cpu, then GALV_PROGRAM=program-cpu ./launch ...\n");
  fprintf(f, "\nFiles: weights.bin (the parameters%s), Makefile, runtime/ (linked into the program)%s.\n",
          strstr(line, "launch") ? ", one block per rank" : "", strstr(line, "launch") ? ", launch (mpirun)" : "");
  if (fclose(f)) return gv_error_plain("%s: write failed", path);
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An option that takes a value came last: one error line, exit 2. */
static bool missing_value(const char *opt) {
  gv_error_plain("%s needs a value (see galvc --help)", opt);
  exit(2);
}

static int parse_pos_int(const char *opt, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v <= 0) return gv_error_plain("%s expects a positive integer, got '%s'", opt, s);
  *out = v;
  return 0;
}


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
  const char *trace_plan;
  bool analytic;          /* --stage-cost analytic: gv_stage_cost_analytic instead of the intra-operator planner */
  bool recompute;         /* --pipeline-recompute: training stages as one combined program (no stash) */
  int naxes;             /* stages of more than one device: each stage's mesh (--strategy / --mesh), 0: the planner's */
  const char *axn[3];
  int64_t axs[3];
  bool mesh_given;       /* --mesh: axn / axs are one stage's mesh; else one axis sized by the stage's devices */
  int nsdev;             /* --stage-devices: devices per stage (0: --gpus / S each) */
  int sdev[GV_PIPE_MAX_STAGES];
} pipe_args;

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

/* A stage of k > 1 devices: its mesh, the cross-stage values (pp.X,
 * gin:pp.X) pinned replicated, propagate-sharding (--strategy) and
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
    if (n && (!strncmp(n, "pp.", 3) || !strncmp(n, "gin:pp.", 7)))
      f->arg_sharding[i] = gv_sharding_new(ms, mesh, f->body->args[i]->type.rank);
  }
  static const char *const sp[] = {"propagate-sharding", "spmd-partition"};
  return run_named(ms, sp, 2, quiet, verify_each);
}

/* A stage of k > 1 devices without --strategy: the intra-operator
 * planner's plan for the stage program on k devices, pinned; the
 * cross-stage values (pp.X, gin:pp.X: whole on every rank of the stage, as
 * the runtime sends them) arrive replicated and a galv.reshard gives them
 * the plan's sharding (a local slice where the plan splits them); then
 * propagate-sharding and spmd-partition. desc: the plan in words. */
static int plan_stage(gv_module *ms, int64_t k, const gv_cluster *cluster, int verify_each) {
  gv_plan plan;
  gv_plan_cost pc;
  int r = gv_plan_intra(ms, k, NULL, 0, cluster, gv_plan_opts.memory_limit, &plan, &pc);
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
  static const char *const sp[] = {"propagate-sharding", "spmd-partition"};
  const char *strategy = gv_shard_opts.strategy;
  gv_shard_opts.strategy = NULL;
  int rc = run_named(ms, sp, 2, 1, verify_each);
  gv_shard_opts.strategy = strategy;
  return rc;
}

static int run_named(gv_module *m, const char *const *names, int n, int quiet, int verify_each) {
  for (int i = 0; i < n; i++) {
    const gv_pass *p = gv_pass_lookup(names[i]);
    double t = now();
    if (p->run(m) || (verify_each && gv_verify(m))) return 1;
    if (!quiet) fprintf(stderr, "galvc: %-18s %6d ops (%.3f s)\n", p->name, count_ops(m->main->body), now() - t);
  }
  return 0;
}

static gv_module *pipe_front(const char *model, const gv_import_options *opt, int train, int quiet, int verify_each) {
  gv_module *m = gv_import_onnx(model, opt);
  if (!m) return NULL;
  static const char *const front[] = {"shape-infer", "fold-constants", "canonicalize", "dce"};
  if (gv_verify(m) || run_named(m, front, 4, quiet, verify_each) || (train && run_named(m, train_pipeline, NTRAIN, quiet, verify_each))) {
    gv_module_free(m);
    return NULL;
  }
  return m;
}

/* The cost model's timeline as a Chrome trace, pid = tid = stage.
 * Inference: stage i runs forward j once stage i-1 has finished it and
 * stage i has finished j-1. Training: each stage runs its forward F(j) and
 * backward B(j) entries in the runtime's order (galv_pipe_order,
 * runtime/galv_pipe_sched.h); F(i,j) starts after F(i-1,j), B(i,j) after
 * B(i+1,j) and F(i,j); the stage's time per microbatch (forward + backward)
 * is split forward : backward = 1 : 2 (the analytic cost's 1x + 2x FLOPs).
 * step_us: the makespan. */
static int write_plan_trace(const char *path, const gv_pipe_plan *pl, int train, gv_schedule sched) {
  const int S = pl->nstages, B = pl->B;
  int64_t *fend = calloc((size_t)S * (size_t)B, sizeof *fend), *bend = calloc((size_t)S * (size_t)B, sizeof *bend);
  galv_pipe_act *acts = malloc(sizeof *acts * (size_t)S * 2 * (size_t)B);
  int *next = calloc((size_t)S, sizeof *next);
  if (!fend || !bend || !acts || !next) {
    free(fend), free(bend), free(acts), free(next);
    return gv_error_plain("out of memory");
  }
  for (size_t k = 0; k < (size_t)S * (size_t)B; k++) fend[k] = bend[k] = -1;
  int64_t free_at[GV_PIPE_MAX_STAGES] = {0}, makespan = 0;
  int per = train ? 2 * B : B, left = S * per, rc = 0;
  for (int i = 0; i < S; i++) { /* the stage's entries in the order it runs them */
    if (train) galv_pipe_order(S, i, B, sched == GV_SCHED_1F1B, acts + (size_t)i * (size_t)per);
    else
      for (int j = 0; j < B; j++) acts[(size_t)i * (size_t)per + (size_t)j] = (galv_pipe_act){1, j};
  }
  FILE *f = fopen(path, "w");
  if (!f) rc = gv_error_plain("%s: cannot write the trace: %s", path, strerror(errno));
  else fprintf(f, "{\"traceEvents\": [\n");
  while (!rc && left) { /* each stage takes its next entry once the entries it depends on have ended */
    int progress = 0;
    for (int i = 0; i < S; i++) {
      if (next[i] == per) continue;
      const galv_pipe_act *a = &acts[(size_t)i * (size_t)per + (size_t)next[i]];
      const size_t at = (size_t)i * (size_t)B + (size_t)a->mb; /* ends: -1 until the entry is placed */
      int64_t dep = 0;
      if (a->fwd) {
        if (i && fend[at - (size_t)B] < 0) continue;
        if (i) dep = fend[at - (size_t)B];
      } else {
        if ((i + 1 < S && bend[at + (size_t)B] < 0) || fend[at] < 0) continue;
        dep = i + 1 < S && bend[at + (size_t)B] > fend[at] ? bend[at + (size_t)B] : fend[at];
      }
      int64_t ns = pl->cost[i].ns, fwd = train ? ns / 3 : ns, dur = a->fwd ? fwd : ns - fwd;
      int64_t start = dep > free_at[i] ? dep : free_at[i];
      free_at[i] = start + dur;
      (a->fwd ? fend : bend)[at] = start + dur;
      if (start + dur > makespan) makespan = start + dur;
      fprintf(f, "%s  {\"name\": \"%s mb%d\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d}",
              left == S * per ? "" : ",\n", a->fwd ? "forward" : "backward", a->mb, a->fwd ? "forward" : "backward",
              (double)start / 1e3, (double)dur / 1e3, i, i);
      next[i]++, left--, progress = 1;
    }
    if (!progress) rc = gv_error_plain("%s: the pipeline schedule deadlocks (no stage can run its next entry)", path);
  }
  if (f) {
    fprintf(f, "\n], \"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"cost model\", \"training\": %s, "
               "\"schedule\": \"%s\", \"stages\": %d, \"microbatches\": %d, \"step_us\": %.3f, \"dp_step_us\": %.3f}}\n",
            train ? "true" : "false", train ? (sched == GV_SCHED_1F1B ? "1f1b" : "gpipe") : "inference", S, B,
            (double)makespan / 1e3, (double)pl->step_ns / 1e3);
    if (fclose(f) && !rc) rc = gv_error_plain("%s: write failed", path);
  }
  free(fend), free(bend), free(acts), free(next);
  return rc;
}

/* The stage DP for B microbatches on the import at the microbatch size
 * global / B, cluster-layers with *K groups (0: --layers, else min(4 S, ops
 * - 1) with S = gpus when the stages are chosen). S > 0: S stages of gpus / S
 * devices each (at least 1); S = 0: the best over k = 1, 2, 4 .. devices per
 * stage and 1 .. gpus / k stages. Stage costs: the intra-operator planner
 * per stage program (gv_stage_cost_intra), or --stage-cost analytic. Fills
 * *pl with the best plan; returns 0, 1 when no partition fits, -1 after an
 * error. */
static int pipe_plan_b(const char *model, gv_import_options opt, int64_t global, int B, int S, int64_t gpus, const pipe_args *pa,
                       gv_cluster *cluster, int train, int quiet, int verify_each, int *K, gv_pipe_plan *pl, double *plan_s) {
  double t0 = now();
  opt.batch = global / B;
  gv_module *m = pipe_front(model, &opt, 0, quiet, verify_each); /* training: per stage, after extraction */
  if (!m) return -1;
  int nops = 0;
  for (gv_op *op = m->main->body->first; op; op = op->next) nops++;
  int want = S ? S : (int)gpus;
  if (!*K) *K = pa->layers ? pa->layers : (4 * want < nops - 1 ? 4 * want : nops - 1);
  int k = *K;
  gv_layer_groups g;
  if (gv_cluster_layers(m, k, &g)) { gv_module_free(m); return -1; }
  gv_group_stats *gs = calloc((size_t)k, sizeof *gs);
  gv_pipe_plan *tmp = calloc(1, sizeof *tmp);
  if (!gs || !tmp) { free(gs); free(tmp); gv_module_free(m); return gv_error_plain("out of memory"), -1; }
  gv_pipe_group_stats(m, k, g.flops, gs);
  if (train && pa->analytic) { /* the analytic cost's memory per microbatch in flight: an earlier stage's stash, from
                                 * the whole model's loss and autodiff on a copy (m stays the stage costs' base) */
    static const char *const la[] = {"loss", "autodiff"};
    int64_t *st = calloc((size_t)k, sizeof *st), *cr = calloc((size_t)k, sizeof *cr);
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) gv_print_module(m, mf), fclose(mf);
    gv_module *mt = mf && buf ? gv_parse_module(buf, len, m->source) : NULL;
    free(buf);
    int bad = !st || !cr || !mt || run_named(mt, la, 2, 1, verify_each) || gv_pipe_group_stash(mt, k, st, cr);
    if (mt) gv_module_free(mt);
    if (bad) {
      free(st), free(cr), free(gs), free(tmp), gv_module_free(m);
      return mf ? -1 : gv_error_plain("out of memory"), -1;
    }
    for (int i = 0; i < k; i++) gs[i].act_bytes = st[i], gs[i].act_credit = cr[i] * B;
    free(st), free(cr);
  }
  for (int i = 0; i < k; i++) gs[i].flops *= B; /* the stats are per microbatch, the cost wants the global batch */
  for (int i = 0; i < k; i++) gs[i].act_bytes *= B, gs[i].out_bytes *= B;
  gv_analytic_ctx actx = {.g = gs, .ngroups = k, .batch = global, .training = train != 0, .dtype_bytes = 4, .cluster = cluster};
  gv_intra_stage_ctx ictx = {.base = m, .ngroups = k, .B = B, .training = train != 0, .recompute = pa->recompute,
                             .cluster = cluster, .mem_limit = gv_plan_opts.memory_limit};
  gv_stage_cost_fn fn = pa->analytic ? gv_stage_cost_analytic : gv_stage_cost_intra;
  void *fctx = pa->analytic ? (void *)&actx : (void *)&ictx;
  int mbc[1] = {B};
  int rc = 1;
  /* the DP runs: {devices, stages (0: chosen), devices per stage (0: any), per-stage counts} */
  typedef struct { int64_t D; int S; int64_t per; const int *sdev; } dp_run;
  dp_run runs[48];
  int nruns = 0;
  int64_t kn = cluster->devices_per_node;
  if (S && pa->nsdev) {
    int64_t D = 0;
    for (int i = 0; i < S; i++) D += pa->sdev[i];
    runs[nruns++] = (dp_run){D, S, 0, pa->sdev};
  } else if (S) {
    int64_t per = gpus / S > 1 ? gpus / S : 1;
    runs[nruns++] = (dp_run){S * per, S, per, NULL};
  } else { /* equal stages of k = 1, 2, 4 .. devices (S k <= gpus), then the DP's free choice over all gpus */
    for (int64_t per = 1; per <= gpus && nruns < 40; per = per * 2 > gpus && per < gpus ? gpus : per * 2)
      for (int s = 1; s <= gpus / per && s <= k && nruns < 40; s++) runs[nruns++] = (dp_run){s * per, s, per, NULL};
    /* the free run only when its sub-meshes allow stages of different sizes on all gpus: 1 x 2^j inside a
     * node (3 devices or more), whole nodes across (3 nodes or more) */
    if (gpus <= kn ? gpus >= 3 : gpus % kn == 0 && gpus / kn >= 3) runs[nruns++] = (dp_run){gpus, 0, 0, NULL};
  }
  gv_cluster cs = *cluster, cs_best = *cluster; /* the cluster view of a run, of the best plan's run */
  for (int ri = 0; ri < nruns && rc >= 0; ri++) {
    dp_run *R = &runs[ri];
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
    gv_pipe_problem pp = {.ngroups = k, .sig = g.sig, .cluster = &cs, .devices = R->D, .mesh_devices = R->per,
                          .stage_devices = R->sdev, .mb_choices = mbc, .nmb = 1, .schedule = pa->sched,
                          .mem_limit = gv_plan_opts.memory_limit, .stages = R->S, .cost = fn, .ctx = fctx};
    int r = gv_pipe_solve(&pp, tmp);
    if (r < 0) rc = -1;
    else if (r == 0 && (rc == 1 || tmp->step_ns < pl->step_ns)) *pl = *tmp, rc = 0, cs_best = cs;
  }
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
  }
  if (!quiet && !pa->analytic)
    fprintf(stderr, "galvc: stage costs for B = %d: %lld stage programs planned in %.3f s\n", B, (long long)ictx.plans, ictx.seconds);
  gv_intra_stage_ctx_free(&ictx);
  free(gs);
  free(tmp);
  gv_module_free(m);
  *plan_s += now() - t0;
  return rc;
}

/* The type of stage module m's input or output named name, NULL when none. */
static const gv_type *stage_value_type(const gv_module *m, const char *name) {
  const gv_func *f = m->main;
  for (int i = 0; i < f->body->nargs; i++)
    if (f->arg_names[i] && !strcmp(f->arg_names[i], name)) return &f->body->args[i]->type;
  const gv_op *ret = f->body->last;
  for (int i = 0; ret && i < f->nres_names && i < ret->nopnds; i++)
    if (f->res_names[i] && !strcmp(f->res_names[i], name)) return &ret->opnds[i]->type;
  return NULL;
}

/* pipe_stage.c's galv_pipe_xfers: per value stage s sends or receives (and,
 * training, per gradient going back), the cross-mesh plan (planner/cross_mesh.c,
 * the plan stage-split prints): replicated on the sender's dev[from] devices ->
 * replicated on the receiver's dev[to], local all-gather on. m: stage s's module
 * (the crossing values are replicated: global types); mb: its backward entry
 * (training with a stash: the gradients' inputs and outputs), else NULL. */
static int write_xfers(FILE *f, const gv_module *m, const gv_module *mb, const gv_stage_io *io, int s, const int *dev,
                       const pipe_args *pa, int train) {
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
  for (int i = 0; i < n && !rc; i++) { /* the tiles */
    const gv_type *t = stage_value_type(m, list[i].name);
    if (!t) { rc = gv_error_plain("stage %d: no crossing value '%s'", s, list[i].name); break; }
    gv_mesh ma = stage_mesh(pa, dev[list[i].from]), mb = stage_mesh(pa, dev[list[i].to]);
    gv_sharding src = {.mesh = &ma, .rank = t->rank}, dst = {.mesh = &mb, .rank = t->rank};
    gv_xmesh_plan pl;
    if (gv_xmesh_plan_make(t, &src, &dst, true, &pl)) { rc = gv_error_plain("stage %d: value '%s': cannot plan the transfer", s, list[i].name); break; }
    fprintf(f, "static const galv_pipe_tile xfer_tiles%d[] = {\n", i);
    for (int k = 0; k < pl.nx; k++) {
      fprintf(f, "    {%d, %d, {", pl.x[k].src, pl.x[k].dst);
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)pl.x[k].off[d]);
      fprintf(f, "%s}, {", t->rank ? "" : "0");
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)pl.x[k].len[d]);
      fprintf(f, "%s}},\n", t->rank ? "" : "0");
    }
    fprintf(f, "    {0, 0, {0}, {0}}};\n");
    fprintf(f, "#define XFER%d %d, xfer_tiles%d, %d, %lldll, %lldll\n", i, pl.nx, i, pl.ag_dim >= 0, (long long)pl.bytes,
            (long long)pl.naive_bytes);
    gv_xmesh_free(&pl);
  }
  if (!rc) {
    fprintf(f, "const galv_pipe_xfer galv_pipe_xfers[] = {\n");
    for (int i = 0; i < n; i++) {
      const gv_type *t = stage_value_type(m, list[i].name);
      fprintf(f, "    {\"%s\", %d, %d, %d, %s, %d, {", list[i].name, list[i].grad, list[i].from, list[i].to, cg_rt_dtype(t->dtype), t->rank);
      for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
      fprintf(f, "%s}, XFER%d},\n", t->rank ? "" : "0", i);
    }
    fprintf(f, "    {0}};\nconst int galv_pipe_nxfers = %d;\n", n);
  }
  free(list);
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
  if (ms && (gv_cluster_layers(ms, K, &g2) || gv_pipe_assign_stages(ms, pl->first, S) || gv_stage_extract(ms, s, S, io) ||
             (train && gv_stage_train(ms, s, S)) ||
             (per > 1 && (gv_verify(ms) || (pa->naxes ? partition_stage(ms, pa, per, 1, verify_each)
                                                      : plan_stage(ms, per, cluster, verify_each)))))) {
    gv_module_free(ms);
    return NULL;
  }
  return ms;
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

static int compile_pipeline(const char *model, gv_import_options opt, const pipe_args *pa0, int64_t gpus, gv_cluster *cluster,
                            const char *out, int quiet, int build, int verify_each, int train, const gv_cuda_options *cuda) {
  pipe_args P = *pa0;
  const pipe_args *pa = &P;
  if (cuda) P.recompute = true; /* the CUDA emitter has no second entry yet: the recomputing stage programs */
  if (train && strcmp(gv_train_opts.optimizer, "adamw") && strcmp(gv_train_opts.optimizer, "sgd"))
    return gv_error_plain("--optimizer %s: expected adamw or sgd", gv_train_opts.optimizer);
  if (!out || !is_dir_arg(out)) return gv_error_plain("--pipeline-stages writes one program per stage: give -o DIR/");
  if (opt.nshapes) return gv_error_plain("--pipeline-stages takes the batch from --batch (not --input-shape)");
  if (P.B && opt.batch % P.B) return gv_error_plain("--batch %lld is not a multiple of --microbatches %d", (long long)opt.batch, P.B);
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
  int64_t global = opt.batch;
  int Bs[64], nb = 0;
  if (!autoB) Bs[nb++] = P.B;
  else
    for (int64_t d = 1; d <= global && nb < 64; d++)
      if (global % d == 0) Bs[nb++] = (int)d;
  if (ensure_dir(out)) return gv_error_plain("%s: cannot create output directory", out);
  gv_pipe_opts.quiet = true;
  gv_pipe_plan *pl = calloc(1, sizeof *pl), *cand = calloc(1, sizeof *cand);
  if (!pl || !cand) { free(pl); free(cand); return gv_error_plain("out of memory"); }
  int rc = 1, K = 0;
  double plan_s = 0;
  for (int i = 0; i < nb && rc >= 0; i++) {
    int k = 0; /* the group count: fixed by --layers, else by the stage count (the largest tried when chosen) */
    int r = pipe_plan_b(model, opt, global, Bs[i], P.stages, gpus, pa, cluster, train, quiet || i > 0, verify_each, &k, cand, &plan_s);
    if (r < 0) rc = -1;
    else if (r == 0 && (rc == 1 || cand->step_ns < pl->step_ns)) *pl = *cand, K = k, rc = 0;
  }
  free(cand);
  if (rc) { free(pl); return 1; }
  P.stages = pl->nstages;
  P.B = pl->B;
  opt.batch = global / P.B;
  int S = P.stages;
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
  if (autoS || autoB || P.cuts) {
    printf("pipeline %s: %d stages%s, cuts at groups", autoS || autoB ? "auto" : P.cuts == 2 ? "equal cuts" : "dp cuts", S,
           autoS ? " (chosen)" : "");
    for (int i = 0; i <= S; i++) printf("%s%d", i ? "|" : " ", pl->first[i]);
    printf(" of %d, %d microbatches%s, predicted step %.3f ms (stage ms/microbatch", K, P.B, autoB ? " (chosen)" : "",
           (double)pl->step_ns / 1e6);
    for (int i = 0; i < S; i++) printf(" %.3f", (double)pl->cost[i].ns / 1e6);
    if (uneven) {
      printf("), devices per stage");
      for (int i = 0; i < S; i++) printf("%s%d", i ? "," : " ", dev[i]);
      printf("%s, strategies", autoS ? " (chosen)" : "");
    } else
      printf("), %d device%s per stage%s, strategies", dev[0], dev[0] == 1 ? "" : "s", autoS ? " (chosen)" : "");
    for (int i = 0; i < S; i++) printf("%s%s", i ? " | " : " ", pa->naxes ? gv_shard_opts.strategy : pl->cost[i].desc);
    printf(", planned in %.2f s\n", plan_s);
    fflush(stdout);
  }
  if (!rc && !quiet) gv_pipe_plan_print(pl, stderr);
  if (!rc && pa->trace_plan) rc = write_plan_trace(pa->trace_plan, pl, train, pa->sched);
  for (int s = 0; !rc && s < S; s++) {
    const int per = dev[s]; /* this stage's devices */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%sstage%d/", out, out[strlen(out) - 1] == '/' ? "" : "/", s);
    gv_stage_io *io = calloc(1, sizeof *io);
    gv_module *ms = NULL, *mb = NULL; /* the stage's program (training with a stash: its forward entry) and backward entry */
    bool stash = train && !pa->recompute && s < S - 1;
    rc = !io || !(ms = stage_module(model, &opt, K, pl, s, S, train, per, pa, cluster, verify_each, io));
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
    static const char *const back[] = {"fuse", "memory-plan"};
    if (!rc) rc = gv_verify(ms) || run_named(ms, back, 2, 1, verify_each) || gv_verify(ms);
    if (!rc && mb) rc = run_named(mb, back, 2, 1, verify_each) || gv_verify(mb);
    if (!rc && ensure_dir(dir)) rc = gv_error_plain("%s: cannot create output directory", dir);
    gv_cuda_options cs = {0};
    if (cuda) cs = *cuda, cs.pipe_stage = true; /* the CUDA emitter writes the stage's Makefile (main = pipe_cuda.cu) */
    if (!rc && mb) rc = emit_program(mb, dir, quiet, NULL, "bwd"); /* program_bwd.c, weights_bwd.bin */
    if (!rc) rc = emit_program(ms, dir, quiet, cuda ? &cs : NULL, NULL);
    if (!rc && mb && !quiet) { /* the stash per microbatch: the backward entry's galv.state inputs */
      int n = 0;
      int64_t bytes = 0;
      for (int a = 0; a < mb->main->body->nargs; a++)
        if (mb->main->arg_is_state && mb->main->arg_is_state[a]) {
          const gv_type *t = &mb->main->body->args[a]->type;
          n++, bytes += (gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype) + 63) / 64 * 64;
        }
      fprintf(stderr, "galvc: stage %d: forward and backward entries, stash %d values, %lld bytes per microbatch "
                      "(the stage DP's estimate %lld)\n", s, n, (long long)bytes, (long long)pl->cost[s].act_bytes);
    }
    if (!rc) { /* the stage table and (cpu) its Makefile: mpicc, -DGALV_PIPE_STAGE, pipe_stage.c */
      char path[4200];
      snprintf(path, sizeof path, "%spipe_stage.c", dir);
      FILE *f = fopen(path, "w");
      if (!f) rc = gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
      else {
        fprintf(f, "/* Generated by galvc: pipeline stage %d of %d (runtime/galv_pipe.h). */\n#include \"runtime/galv_pipe.h\"\n\n", s, S);
        fprintf(f, "const int galv_pipe_stage = %d, galv_pipe_nstages = %d, galv_pipe_microbatches = %d;\n", s, S, pa->B);
        fprintf(f, "const int galv_pipe_first_rank[] = {");
        for (int i = 0; i <= S; i++) fprintf(f, "%s%d", i ? ", " : "", first_rank[i]);
        fprintf(f, "};\nconst double galv_pipe_predicted_ms[] = {");
        for (int i = 0; i < S; i++) fprintf(f, "%s%.6f", i ? ", " : "", (double)pl->cost[i].ns / 1e6);
        fprintf(f, "};\nconst galv_pipe_value galv_pipe_in[] = {\n");
        for (int i = 0; i < io->nin; i++) fprintf(f, "    {\"%s\", %d, 0},\n", io->in[i].name, io->in[i].peer);
        fprintf(f, "    {0, 0, 0}};\nconst int galv_pipe_nin = %d;\nconst galv_pipe_value galv_pipe_out[] = {\n", io->nin);
        for (int i = 0; i < io->nout; i++) fprintf(f, "    {\"%s\", -1, 0x%llxull},\n", io->out[i].name, (unsigned long long)io->out[i].dst_mask);
        fprintf(f, "    {0, 0, 0}};\nconst int galv_pipe_nout = %d;\n", io->nout);
        /* training: schedule, optimizer, the parameters' weights.bin slots (the emitter's layout: arg order, 64-aligned) */
        const gv_train_options *to = &gv_train_opts;
        fprintf(f, "const int galv_pipe_training = %d, galv_pipe_schedule = %d; /* 0 gpipe, 1 1f1b */\n", train ? 1 : 0,
                pa->sched == GV_SCHED_1F1B ? 1 : 0);
        fprintf(f, "const char galv_pipe_optimizer[] = \"%s\";\n", train ? to->optimizer : "");
        fprintf(f, "const double galv_pipe_hparams[6] = {%.17g, %.17g, %.17g, %.17g, %.17g, %.17g}; /* lr wd beta1 beta2 eps momentum */\n",
                to->lr, to->weight_decay, to->beta1, to->beta2, to->eps, to->momentum);
        fprintf(f, "const galv_io galv_pipe_params[] = {\n");
        int np = 0;
        int64_t w = 0;
        for (int a = 0; a < ms->main->body->nargs; a++) {
          if (!ms->main->arg_is_param[a]) continue;
          const gv_type *t = &ms->main->body->args[a]->type;
          int64_t nb = gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype);
          fprintf(f, "    {\"%s\", %s, %d, {", ms->main->arg_names[a], cg_rt_dtype(t->dtype), t->rank);
          for (int d = 0; d < t->rank; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
          fprintf(f, "%s}, 1, %lld, %lld},\n", t->rank ? "" : "0", (long long)w, (long long)nb);
          w = (w + nb + 63) / 64 * 64;
          np++;
        }
        fprintf(f, "    {0}};\nconst int galv_pipe_nparams = %d;\n", np);
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
        /* training with a stash: the backward entry (program_bwd.c); else none */
        if (mb) fprintf(f, "GALV_PIPE_ENTRY_DECL(bwd);\nconst galv_pipe_entry galv_pipe_bwd = GALV_PIPE_ENTRY(bwd);\n");
        else fprintf(f, "const galv_pipe_entry galv_pipe_bwd = {0};\n");
        rc = write_xfers(f, ms, mb, io, s, dev, pa, train);
        if (fclose(f) && !rc) rc = gv_error_plain("%s: write failed", path);
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
        f = fopen(path, "w");
        if (!f) rc = gv_error_plain("%s: cannot write file", path);
        else {
          fprintf(f, "# pipeline stage %d of %d: main = runtime/pipe.c (run all stages with ../launch)\n", s, S);
          for (char *line = strtok(mk, "\n"); line; line = strtok(NULL, "\n")) {
            if (!strncmp(line, "CC ?= cc", 8)) fprintf(f, "MPICC ?= mpicc\nCC = $(MPICC)\n");
            else if (!strncmp(line, "COMM = ", 7)) fprintf(f, "COMM = mpi\n");
            else if (!strncmp(line, "WARN = ", 7)) fprintf(f, "WARN = -DGALV_PIPE_STAGE %s\n", line + 7);
            else if (!strncmp(line, "SRC = program.c ", 16))
              fprintf(f, "SRC = program.c %spipe_stage.c %s\n", mb ? "program_bwd.c " : "", line + 16);
            else fprintf(f, "%s\n", line);
          }
          if (fclose(f)) rc = gv_error_plain("%s: write failed", path);
        }
      }
      free(mk);
    }
    if (!rc && build) rc = build_program(dir, quiet);
    free(io);
    if (ms) gv_module_free(ms);
    if (mb) gv_module_free(mb);
  }
  if (!rc) { /* out/launch: mpirun MPMD, one program per stage */
    char path[4200];
    snprintf(path, sizeof path, "%s%slaunch", out, out[strlen(out) - 1] == '/' ? "" : "/");
    FILE *f = fopen(path, "w");
    if (!f) rc = gv_error_plain("%s: cannot write file: %s", path, strerror(errno));
    else {
      fprintf(f, "#!/bin/sh\n# Generated by galvc: the %d pipeline stages, %d microbatches, ranks per stage", S, pa->B);
      for (int s = 0; s < S; s++) fprintf(f, "%s%d", s ? "," : " ", dev[s]);
      fprintf(f, "; ranks -> stage programs.\n"
                 "# usage: ./launch [PROGRAM OPTIONS] (every stage gets the same options); MPIRUN overrides mpirun.\n%s"
                 "d=$(cd \"$(dirname \"$0\")\" && pwd)\n[ \"$(id -u)\" = 0 ] && ROOT=--allow-run-as-root\n"
                 "exec ${MPIRUN:-mpirun $ROOT --oversubscribe --bind-to none} ${MPIRUN_ARGS:-}",
              cuda ? "# CUDA stages: one device per rank (NCCL); built with make COMM=staged every rank may share one GPU.\n"
                     "# GALV_STAGE_PROGRAM (or GALV_PROGRAM)=program-cpu runs the stages' CPU builds (make cpu in each stage).\n" : "");
      for (int s = 0; s < S; s++)
        fprintf(f, cuda ? "%s -np %d \"$d/stage%d/${GALV_STAGE_PROGRAM:-${GALV_PROGRAM:-program}}\" \"$@\"" : "%s -np %d \"$d/stage%d/program\" \"$@\"",
                s ? " :" : "", dev[s], s);
      fprintf(f, "\n");
      if (fclose(f) || chmod(path, 0755)) rc = gv_error_plain("%s: write failed", path);
      else if (!quiet) {
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

int main(int argc, char **argv) {
  gv_progname = "galvc";
  const char *model = NULL, *out = NULL, *emit = NULL, *target = NULL, *dump_after = NULL, *dump_dir = "galvc-dumps";
  int verify_each = 0, stats = 0, quiet = 0, train = 0, build = 1;
  int64_t gpus = 1, gpus_per_node = 0;
  int gpus_given = 0; /* --gpus asks for GPUs: the cuda target unless --target says otherwise */
  gv_cuda_options cuda = {.arch = "sm_90"};
  const char *mesh_spec = NULL;
  const char *cluster_spec = NULL;
  int report_cost = 0, plan_only = 0;
  gv_import_options opt = {.batch = 1, .seq = 128, .load_weights = true};
  gv_input_shape shapes[64];
  int nshapes = 0;
  pipe_args pa = {.B = 1, .sched = GV_SCHED_1F1B};

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
#define TAKES(flag)                                                                                \
  ((strcmp(a, flag) == 0 && (i + 1 < argc ? (val = argv[++i]) != NULL : missing_value(flag))) ||   \
   (strncmp(a, flag "=", sizeof(flag)) == 0 && (val = a + sizeof(flag))))
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("galvc %s\n", GALV_VERSION);
      return 0;
    } else if (TAKES("--cluster")) {
      cluster_spec = val;
    } else if (strcmp(a, "--report-cost") == 0) {
      report_cost = 1;
    } else if (TAKES("--gpus")) {
      if (parse_pos_int("--gpus", val, &gpus)) return 2;
      gpus_given = 1;
    } else if (TAKES("--gpus-per-node")) {
      if (parse_pos_int("--gpus-per-node", val, &gpus_per_node)) return 2;
    } else if (TAKES("--mesh")) {
      mesh_spec = val;
    } else if (TAKES("--layers")) {
      int64_t k;
      if (parse_pos_int("--layers", val, &k)) return 2;
      gv_pipe_opts.layers = k > 1000000 ? 1000000 : (int)k;
    } else if (TAKES("--pipeline-stages") || TAKES("--pp")) {
      int64_t k = 0;
      if (strcmp(val, "auto") && strcmp(val, "0") && parse_pos_int("--pipeline-stages", val, &k)) return 2;
      if (k > GV_PIPE_MAX_STAGES) { gv_error_plain("--pipeline-stages %lld: at most %d", (long long)k, GV_PIPE_MAX_STAGES); return 2; }
      pa.stages = (int)k;
      pa.on = true;
    } else if (TAKES("--stage-devices")) {
      const char *c = val;
      pa.nsdev = 0;
      for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(c, &end, 10);
        if (errno || end == c || v <= 0 || v > 65536 || (*end && *end != ',') || pa.nsdev == GV_PIPE_MAX_STAGES) {
          gv_error_plain("--stage-devices %s: expected one positive device count per stage joined by ',' (e.g. 2,1)", val);
          return 2;
        }
        pa.sdev[pa.nsdev++] = (int)v;
        if (!*end) break;
        c = end + 1;
      }
    } else if (TAKES("--stage-cost")) {
      if (strcmp(val, "planner") && strcmp(val, "analytic")) { gv_error_plain("--stage-cost %s: expected planner or analytic", val); return 2; }
      pa.analytic = strcmp(val, "analytic") == 0;
    } else if (TAKES("--stage-cuts")) {
      if (strcmp(val, "dp") && strcmp(val, "equal")) { gv_error_plain("--stage-cuts %s: expected dp or equal", val); return 2; }
      pa.cuts = strcmp(val, "equal") == 0 ? 2 : 1;
    } else if (TAKES("--microbatches")) {
      int64_t k = 0;
      if (strcmp(val, "auto") && strcmp(val, "0") && parse_pos_int("--microbatches", val, &k)) return 2;
      pa.B = k > 1000000 ? 1000000 : (int)k;
    } else if (TAKES("--schedule")) {
      if (strcmp(val, "gpipe") && strcmp(val, "1f1b")) { gv_error_plain("--schedule %s: expected gpipe or 1f1b", val); return 2; }
      pa.sched = strcmp(val, "1f1b") == 0 ? GV_SCHED_1F1B : GV_SCHED_GPIPE;
    } else if (TAKES("--trace-plan")) {
      pa.trace_plan = val;
    } else if (strcmp(a, "--pipeline-recompute") == 0) {
      pa.recompute = true;
    } else if (strcmp(a, "--pipe-stats") == 0) {
      gv_pipe_opts.quiet = false;
    } else if (TAKES("--strategy")) {
      gv_shard_opts.strategy = val;
    } else if (TAKES("--plan")) {
      gv_plan_opts.plan_in = val;
    } else if (TAKES("--plan-out")) {
      gv_plan_opts.plan_out = val;
    } else if (strcmp(a, "--plan-only") == 0) {
      plan_only = 1;
    } else if (TAKES("--memory-limit")) {
      if (parse_pos_int("--memory-limit", val, &gv_plan_opts.memory_limit)) return 2;
    } else if (TAKES("--plan-search")) {
      if (strcmp(val, "exhaustive") && strcmp(val, "dp")) {
        gv_error_plain("--plan-search %s: expected dp or exhaustive", val);
        return 2;
      }
      gv_plan_opts.exhaustive = strcmp(val, "exhaustive") == 0;
    } else if (TAKES("--sharding")) {
      gv_shard_opts.file = val;
    } else if (TAKES("--batch")) {
      if (parse_pos_int("--batch", val, &opt.batch)) return 2;
    } else if (TAKES("--seq")) {
      if (parse_pos_int("--seq", val, &opt.seq)) return 2;
    } else if (TAKES("--input-shape")) {
      const char *eq = strrchr(val, '=');
      if (!eq || eq == val) {
        gv_error_plain("--input-shape expects NAME=DIMS (e.g. input_ids=8x128), got '%s'", val);
        return 2;
      }
      if (nshapes == 64) {
        gv_error_plain("too many --input-shape options");
        return 2;
      }
      gv_input_shape *s = &shapes[nshapes];
      s->rank = gv_parse_dims(eq + 1, s->dims, GV_MAX_RANK);
      if (s->rank < 0) {
        gv_error_plain("--input-shape %s: dims must be positive integers joined by 'x' (at most %d)", val,
                       GV_MAX_RANK);
        return 2;
      }
      static char names[64][256];
      snprintf(names[nshapes], sizeof names[0], "%.*s", (int)(eq - val), val);
      s->name = names[nshapes];
      nshapes++;
    } else if (TAKES("--emit")) {
      emit = val;
    } else if (TAKES("--target")) {
      target = val;
    } else if (TAKES("--cuda-arch")) {
      cuda.arch = val;
    } else if (TAKES("--precision")) {
      if (strcmp(val, "fp32") != 0 && strcmp(val, "bf16") != 0) {
        gv_error_plain("--precision %s: expected fp32 or bf16", val);
        return 2;
      }
      cuda.bf16 = strcmp(val, "bf16") == 0;
    } else if (strcmp(a, "--no-build") == 0) {
      build = 0;
    } else if (TAKES("-o")) {
      out = val;
    } else if (TAKES("--dump-ir-after")) {
      dump_after = val;
    } else if (TAKES("--dump-dir")) {
      dump_dir = val;
    } else if (strcmp(a, "--verify-each") == 0) {
      verify_each = 1;
    } else if (strcmp(a, "--stats") == 0) {
      stats = 1;
    } else if (strcmp(a, "--train") == 0) {
      train = 1;
    } else if (TAKES("--loss")) {
      gv_train_opts.loss = val;
    } else if (TAKES("--labels")) {
      gv_train_opts.labels = val;
    } else if (TAKES("--optimizer")) {
      gv_train_opts.optimizer = val;
    } else if (TAKES("--recompute")) {
      gv_train_opts.recompute = val;
    } else if (TAKES("--ignore-index")) {
      char *end;
      gv_train_opts.ignore_index = strtoll(val, &end, 10);
      if (*end || !*val) { gv_error_plain("--ignore-index expects an integer, got '%s'", val); return 2; }
    } else if (TAKES("--lr") || TAKES("--weight-decay") || TAKES("--beta1") || TAKES("--beta2") || TAKES("--eps") ||
               TAKES("--momentum")) {
      char *end;
      double v = strtod(val, &end);
      if (*end || !*val || v < 0) { gv_error_plain("%.*s expects a non-negative number, got '%s'", (int)strcspn(a, "="), a, val); return 2; }
      const char *k = a + 2;
      double *dst = !strncmp(k, "lr", 2) ? &gv_train_opts.lr : !strncmp(k, "weight-decay", 12) ? &gv_train_opts.weight_decay
                  : !strncmp(k, "beta1", 5) ? &gv_train_opts.beta1 : !strncmp(k, "beta2", 5) ? &gv_train_opts.beta2
                  : !strncmp(k, "eps", 3) ? &gv_train_opts.eps : &gv_train_opts.momentum;
      *dst = v;
    } else if (strcmp(a, "--no-weights") == 0) {
      opt.load_weights = false;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (a[0] == '-' && a[1]) {
      gv_error_plain("unknown option '%s' (see galvc --help)", a);
      return 2;
    } else if (!model) {
      model = a;
    } else {
      gv_error_plain("more than one model given ('%s' and '%s')", model, a);
      return 2;
    }
#undef TAKES
  }
  if (!model) {
    usage(stderr);
    return 2;
  }
  if (emit && strcmp(emit, "ir") != 0 && strcmp(emit, "program") != 0) {
    gv_error_plain("--emit=%s: unknown output kind (known: ir, program)", emit);
    return 2;
  }
  if (!target) target = gpus_given ? "cuda" : "cpu";
  if (strcmp(target, "cpu") != 0 && strcmp(target, "cuda") != 0) {
    gv_error_plain("--target %s: unknown target (known: cpu, cuda)", target);
    return 2;
  }
  /* A directory output gets the program (unless --emit=ir); anything else the IR. */
  bool program = emit ? strcmp(emit, "program") == 0 : out && is_dir_arg(out);
  struct stat ost;
  if (program && out && !is_dir_arg(out) && stat(out, &ost) != 0 && ensure_dir(out)) { /* --emit=program -o NEW: a directory */
    gv_error_plain("%s: cannot create output directory: %s", out, strerror(errno));
    return 1;
  }
  if (program && (!out || !is_dir_arg(out))) {
    gv_error_plain("--emit=program writes a directory: give -o DIR/");
    return 2;
  }
  if (cuda.bf16 && program && !pa.on && strcmp(target, "cpu") == 0) {
    gv_error_plain("--precision bf16: the cpu target computes fp32 (bf16 storage is the cuda target's: --target cuda)");
    return 2;
  }
  if (dump_after && strcmp(dump_after, "all") != 0 && strcmp(dump_after, "import") != 0 &&
      !gv_pass_lookup(dump_after)) {
    gv_error_plain("--dump-ir-after=%s: no such pass (see galvc --help)", dump_after);
    return 2;
  }
  /* --strategy auto (the default with --gpus > 1 and nothing pinned) and
   * --plan run the planner (plan-sharding) before propagate-sharding. */
  if (gv_shard_opts.strategy && strcmp(gv_shard_opts.strategy, "auto") == 0) gv_shard_opts.strategy = NULL, gv_plan_opts.active = true;
  if (!gv_shard_opts.strategy && !gv_shard_opts.file && (gpus > 1 || gv_plan_opts.plan_in)) gv_plan_opts.active = true;
  if (gv_plan_opts.plan_in) gv_plan_opts.active = true;
  if (plan_only && !gv_plan_opts.active) {
    gv_error_plain("--plan-only needs the planner (--gpus > 1 without --strategy / --sharding, or --plan)");
    return 2;
  }
  if (gv_plan_opts.active && (gv_shard_opts.strategy || gv_shard_opts.file)) {
    gv_error_plain("--plan / --strategy auto do not combine with --strategy %s or --sharding", gv_shard_opts.strategy ? gv_shard_opts.strategy : "");
    return 2;
  }
  /* --stage-devices: one count per stage, summing to --gpus (or giving it) */
  if (pa.nsdev) {
    int64_t sum = 0;
    for (int i = 0; i < pa.nsdev; i++) sum += pa.sdev[i];
    if (!pa.on || !pa.stages || pa.nsdev != pa.stages) {
      gv_error_plain("--stage-devices has %d entries: it needs a fixed --pipeline-stages with as many stages", pa.nsdev);
      return 2;
    }
    if (gpus_given && sum != gpus) {
      gv_error_plain("--stage-devices %d stages: %lld devices in all, but --gpus is %lld", pa.nsdev, (long long)sum, (long long)gpus);
      return 2;
    }
    gpus = sum;
  }
  /* The mesh: --mesh, or one axis for the strategy. */
  const char *axn[3];
  int64_t axs[3];
  int naxes = 0;
  static char meshbuf[256];
  if (mesh_spec) {
    snprintf(meshbuf, sizeof meshbuf, "%s", mesh_spec);
    int64_t prod = 1;
    for (char *t = strtok(meshbuf, ","); t; t = strtok(NULL, ",")) {
      char *eq = strchr(t, '='), *end;
      if (naxes == 3 || !eq || eq == t) {
        gv_error_plain("--mesh %s: expected 1 to 3 NAME=SIZE axes joined by ',' (e.g. dp=2,tp=4)", mesh_spec);
        return 2;
      }
      *eq = 0;
      long long v = strtoll(eq + 1, &end, 10);
      if (*end || v <= 0) {
        gv_error_plain("--mesh %s: axis '%s' needs a positive size", mesh_spec, t);
        return 2;
      }
      axn[naxes] = t;
      axs[naxes++] = v;
      prod *= v;
    }
    if (!naxes) {
      gv_error_plain("--mesh %s: no axes", mesh_spec);
      return 2;
    }
    for (int i = 0; i < pa.nsdev; i++)
      if (pa.sdev[i] > 1 && pa.sdev[i] != prod) {
        gv_error_plain("--stage-devices with --mesh %s: a stage of %d devices does not have the mesh's %lld (use --strategy tp|dp for uneven stages)",
                       mesh_spec, pa.sdev[i], (long long)prod);
        return 2;
      }
    if (!pa.nsdev && prod != (pa.stages ? gpus / pa.stages : gpus)) {
      char shape[64] = "";
      for (int a = 0; a < naxes; a++) snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", a ? "x" : "", (long long)axs[a]);
      if (pa.stages)
        gv_error_plain("mesh %s has %lld devices, not the %lld of each pipeline stage (--mesh %s: the axes multiply to "
                       "--gpus %lld / --pipeline-stages %d)", shape, (long long)prod, (long long)(gpus / pa.stages), mesh_spec,
                       (long long)gpus, pa.stages);
      else
        gv_error_plain("mesh %s has %lld devices, not --gpus %lld (--mesh %s: the axes multiply to --gpus)", shape,
                       (long long)prod, (long long)gpus, mesh_spec);
      return 2;
    }
  } else if (gpus > 1 || gv_shard_opts.strategy) {
    const char *st = gv_shard_opts.strategy ? gv_shard_opts.strategy : "dp";
    if (strchr(st, ',')) {
      gv_error_plain("--strategy %s needs --mesh (e.g. --mesh dp=2,tp=4)", st);
      return 2;
    }
    axn[0] = strcmp(st, "tp") == 0 ? "tp" : "dp";
    axs[0] = pa.stages ? gpus / pa.stages : gpus; /* pipeline stages: resized per stage (stage_mesh) */
    naxes = 1;
  }
  if (gv_shard_opts.strategy) {
    char sb[64];
    snprintf(sb, sizeof sb, "%s", gv_shard_opts.strategy);
    for (char *t = strtok(sb, ","); t; t = strtok(NULL, ","))
      if (strcmp(t, "dp") && strcmp(t, "tp") && strcmp(t, "zero")) {
        gv_error_plain("--strategy %s: unknown strategy '%s' (known: dp, tp, zero, dp,tp)", gv_shard_opts.strategy, t);
        return 2;
      }
  }
  if (gpus_per_node && gpus % gpus_per_node && gpus > gpus_per_node) {
    gv_error_plain("--gpus %lld is not a whole number of nodes of %lld", (long long)gpus, (long long)gpus_per_node);
    return 2;
  }
  gv_cluster cluster;
  memset(&cluster, 0, sizeof cluster); /* not loaded without --cluster / --report-cost / a plan */
  if ((cluster_spec || report_cost || gv_plan_opts.active) && gv_cluster_load(cluster_spec ? cluster_spec : "cpu-local", &cluster))
    return 2;
  /* Nodes of the cluster's kind as many as the devices need (--gpus-per-node overrides the node size). */
  if (gpus_per_node) cluster.devices_per_node = gpus_per_node;
  if (cluster.devices_per_node > 0 && gpus > cluster.devices_per_node * cluster.nodes) cluster.nodes = (gpus + cluster.devices_per_node - 1) / cluster.devices_per_node;
  gv_plan_opts.cluster = &cluster;
  gv_plan_opts.devices = gpus;
  gv_plan_opts.mesh_fixed = mesh_spec != NULL;
  gv_plan_opts.quiet = quiet && !plan_only;
  static char planpath[4096];
  if (gv_plan_opts.active && !gv_plan_opts.plan_out) {
    if (out && is_dir_arg(out)) {
      if (ensure_dir(out)) {
        gv_error_plain("%s: cannot create output directory: %s", out, strerror(errno));
        return 1;
      }
      snprintf(planpath, sizeof planpath, "%s%splan.json", out, out[strlen(out) - 1] == '/' ? "" : "/");
    } else snprintf(planpath, sizeof planpath, "plan.json");
    gv_plan_opts.plan_out = planpath;
  }
  gv_shard_opts.quiet = quiet;
  opt.shapes = shapes;
  opt.nshapes = nshapes;

  if (pa.recompute && (!pa.on || !train)) {
    gv_error_plain("--pipeline-recompute applies to pipeline training: it needs --train and --pipeline-stages");
    return 2;
  }
  if (pa.on && cuda.bf16) {
    gv_error_plain("--pipeline-stages with --target cuda: the stage programs are fp32 (drop --precision bf16)");
    return 2;
  }
  if (pa.on) {
    if (gv_shard_opts.file || gv_plan_opts.plan_in || (mesh_spec && !gv_shard_opts.strategy)) {
      gv_error_plain("--pipeline-stages combines with --strategy tp|dp|dp,tp (stages of more than one device; --mesh per stage), not with --sharding / --plan / --strategy auto yet");
      return 2;
    }
    gv_plan_opts.active = false;
    pa.naxes = gv_shard_opts.strategy ? naxes : 0;
    pa.mesh_given = mesh_spec != NULL;
    for (int a = 0; a < pa.naxes; a++) pa.axn[a] = axn[a], pa.axs[a] = axs[a];
    /* the cluster as loaded (not grown for the planner above): one node of max(S, --gpus) unless --gpus-per-node */
    if (gv_cluster_load(cluster_spec ? cluster_spec : "cpu-local", &cluster)) return 2;
    if (gpus_per_node) cluster.devices_per_node = gpus_per_node;
    int64_t need = gpus > pa.stages ? gpus : pa.stages;
    if (!gpus_per_node && need > cluster.devices_per_node * cluster.nodes) cluster.devices_per_node = need, cluster.nodes = 1;
    else if (cluster.devices_per_node > 0 && need > cluster.devices_per_node * cluster.nodes)
      cluster.nodes = (need + cluster.devices_per_node - 1) / cluster.devices_per_node;
    pa.layers = gv_pipe_opts.layers;
    return compile_pipeline(model, opt, &pa, gpus, &cluster, out, quiet, build, verify_each, train,
                            strcmp(target, "cuda") == 0 ? &cuda : NULL) ? 1 : 0;
  }
  double t0 = now();
  gv_module *m = gv_import_onnx(model, &opt);
  if (!m) return 1;
  int rc = 0;
  if (naxes && !gv_module_add_mesh(m, "m", naxes, axn, axs)) rc = 1;
  if (stats) print_stats(m, "import");
  if (!quiet) fprintf(stderr, "galvc: imported %s: %d ops (%.3f s)\n", model, count_ops(m->main->body), now() - t0);
  char inputs[1024], run_args[1024];
  describe_inputs(m, "%1$s %2$s", ", ", inputs, sizeof inputs);
  describe_inputs(m, train ? "%1$s" : "--input %1$s=FILE.npy", train ? ", " : " ", run_args, sizeof run_args);
  if (!quiet) fprintf(stderr, "galvc: inputs %s (symbolic dims: --batch %lld, --seq %lld)\n", inputs, (long long)opt.batch, (long long)opt.seq);
  int dumpn = 0;
  if (dump_after && (strcmp(dump_after, "all") == 0 || strcmp(dump_after, "import") == 0))
    rc = dump(m, dump_dir, dumpn, "import");
  if (!rc && gv_verify(m)) rc = 1;
  const char *passes[NPIPELINE + NTRAIN];
  int npasses = 0;
  for (int i = 0; i < NPIPELINE; i++) {
    passes[npasses++] = pipeline[i];
    for (int j = 0; train && j < NTRAIN && strcmp(pipeline[i], "dce") == 0; j++) passes[npasses++] = train_pipeline[j];
  }
  for (int i = 0; !rc && i < npasses; i++) {
    const gv_pass *p = gv_pass_lookup(passes[i]);
    double t = now();
    if (strcmp(p->name, "propagate-sharding") == 0 && gv_plan_opts.active) {
      if (gv_pass_plan_sharding(m)) { rc = 1; break; }
      if (!quiet) fprintf(stderr, "galvc: %-18s %6d ops (%.3f s)\n", "plan-sharding", count_ops(m->main->body), now() - t);
      if (plan_only) break;
      t = now();
    }
    if (p->run(m)) { rc = 1; break; }
    if (strcmp(p->name, "loss") == 0) describe_inputs(m, "%1$s %2$s", ", ", inputs, sizeof inputs); /* + the labels */
    if (verify_each && gv_verify(m)) { rc = 1; break; }
    if (stats) print_stats(m, p->name);
    if (!quiet) fprintf(stderr, "galvc: %-18s %6d ops (%.3f s)\n", p->name, count_ops(m->main->body), now() - t);
    if (!quiet && strcmp(p->name, "memory-plan") == 0) print_arena(m);
    if (dump_after && (strcmp(dump_after, "all") == 0 || strcmp(dump_after, p->name) == 0))
      rc = dump(m, dump_dir, i + 1, p->name);
  }
  (void)dumpn;
  if (plan_only) {
    gv_module_free(m);
    return rc;
  }
  if (!rc && gv_verify(m)) rc = 1;
  if (!rc && report_cost) gv_cost_report(&cluster, m, stdout);
  if (!rc && program) {
    if (ensure_dir(out)) rc = gv_error_plain("%s: cannot create output directory: %s", out, strerror(errno));
    if (!rc) rc = emit_program(m, out, quiet, strcmp(target, "cuda") == 0 ? &cuda : NULL, NULL);
    if (!rc && build) rc = build_program(out, quiet);
    if (!rc) rc = write_readme(out, argc, argv, train, strcmp(target, "cuda") == 0, inputs, run_args);
    if (!rc && !quiet) print_run_hint(out, build, train, run_args);
  } else if (!rc) {
    if (!out || strcmp(out, "-") == 0) {
      if (!report_cost) {
        gv_print_module(m, stdout);
        if (!quiet) fprintf(stderr, "galvc: wrote the IR text to stdout (-o DIR/ writes the program, -o FILE the IR)\n");
      }
    } else {
      struct stat st;
      size_t ol = strlen(out);
      char path[4096];
      if ((ol && out[ol - 1] == '/') || (stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
        if (ensure_dir(out)) {
          rc = gv_error_plain("%s: cannot create output directory", out);
        } else {
          const char *base = strrchr(model, '/');
          base = base ? base + 1 : model;
          size_t bl = strlen(base);
          if (bl > 5 && strcmp(base + bl - 5, ".onnx") == 0) bl -= 5;
          snprintf(path, sizeof path, "%s%s%.*s.mlir", out, out[ol - 1] == '/' ? "" : "/", (int)bl, base);
          rc = write_ir(m, path) ? 1 : 0;
          if (!rc && !quiet) fprintf(stderr, "galvc: wrote %s (IR text)\n", path);
        }
      } else {
        rc = write_ir(m, out) ? 1 : 0;
        if (!rc && !quiet) fprintf(stderr, "galvc: wrote %s (IR text; -o DIR/ writes the program)\n", out);
      }
    }
  }
  gv_module_free(m);
  return rc ? 1 : 0;
}
