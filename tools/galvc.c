/* galvc — the compiler driver. The pipeline is the straight list of passes
 * in `pipeline` below; each pass is one file in passes/. This file parses
 * options, imports the model, runs the list and writes the results. It must
 * never hold pass logic. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "../codegen/codegen.h"
#include "../codegen/comm.h"
#include "../codegen/cpu/cpu.h"
#include "../frontend/onnx_import.h"
#include "../ir/attention.h"
#include "../ir/ir.h"
#include "../passes/passes.h"
#include "../passes/plan_sharding.h"
#include "../planner/cost.h"
#include "../planner/cross_mesh.h"
#include "../passes/stage_cost.h"
#include "../passes/stage_extract.h"
#include "../planner/pipeline.h"
#include "../planner/profile.h"
#include "../runtime/galv_pipe_sched.h"
#include "galvc.h"

#ifndef GALV_VERSION
#define GALV_VERSION "0.0.0"
#endif

/* The pipeline, in order. */
static const char *const pipeline[] = {
    "shape-infer",    /* every value gets a type; shapes static once dims are bound */
    "compute-f32",    /* with --precision bf16|fp16: a model computed in that dtype (.half()) computes in fp32 */
    "fold-constants", /* shape chains, masks, constant If -> constants */
    "canonicalize",   /* decomposed LayerNorm / RMSNorm / GELU -> single ops */
    "dce",            /* drop what nothing uses */
    "cluster-layers", /* with --layers K: METIS layer groups (docs/pipeline.md) */
    "propagate-sharding", /* with --gpus > 1 / --mesh: shardings, galv.reshard (docs/sharding.md) */
    "regather",       /* training: ZeRO-3 parameters gathered again per layer that reads them (docs/sharding.md) */
    "storage",        /* with --precision bf16: the global program's storage, which the collectives move */
    "spmd-partition", /* one rank's local program: local shapes, collectives */
    "fuse",           /* elementwise chains -> galv.fused (docs/device-program.md) */
    "overlap",        /* gradient reductions posted as the backward produces them (docs/planner.md) */
    "bucket",         /* gradient reductions coalesced into --bucket-mb buckets, one call each (docs/planner.md) */
    "storage",        /* with --precision bf16|fp16: the values stored 16-bit */
    "memory-plan",    /* one activation arena: galv.arena, offsets */
};
enum { NPIPELINE = sizeof pipeline / sizeof pipeline[0] };

/* With --train, inserted right after dce: the training step. */
const char *const train_pipeline[NTRAIN] = {
    "master-weights", /* 16-bit trained parameters: fp32 masters (a model stored in bf16 / fp16) */
    "loss",      /* --loss over the first output; new input --labels */
    "fuse-attention", /* attention chains -> galv.attention, no S x S values (docs/fused-attention.md) */
    "autodiff",  /* gradients of the loss for every parameter */
    "recompute", /* --recompute layers: forward clones before their backward uses */
    "accumulate", /* --microbatches B (no pipeline): B microbatches' gradients summed */
    "optimizer", /* --optimizer update; the function becomes the training step */
};

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
          "  --overlap on|off         on (default): gradient reductions posted as the backward produces them,\n"
          "                           ZeRO-3 gathers one layer ahead (docs/planner.md, \"Step time: two streams\")\n"
          "  --bucket-mb X|auto       gradient reductions of one kind and group coalesced into buckets of at most\n"
          "                           X MiB, one collective each (PyTorch DDP's default is 25; default here 0: one\n"
          "                           call per gradient); auto: 0 and sizes from the cluster's latency x bandwidth\n"
          "                           priced, the fastest kept (per candidate plan; plan.json bucket_mb;\n"
          "                           docs/planner.md, \"Gradient buckets\")\n"
          "  --strategy dp|tp|zero1|zero2|zero3|dp,tp|zero2,tp|tp,sp|dp,tp,sp|auto  sharding presets\n"
          "                           (docs/sharding.md; zero = zero3, ZeRO stages); auto (the default with\n"
          "                           --gpus > 1): the planner searches (docs/planner.md)\n"
          "  --plan FILE              reuse a saved plan.json; --plan-out FILE writes it (default: -o DIR/plan.json,\n"
          "                           -o FILE: plan.json next to FILE; without -o only --plan-out writes it;\n"
          "                           with --pipeline-stages: --plan-out writes the stage DP's pipelined plan)\n"
          "  --plan-only              stop after planning (with --no-weights: shapes only, for big models); the report\n"
          "                           gives each layer group's choice, time, memory and runner-up (docs/planner.md); a\n"
          "                           single group's change that realises faster within the limit is taken (the polish)\n"
          "  --memory-limit BYTES     memory per device for the planner (default: the cluster's)\n"
          "  --memory-reserve F[,BYTES]  hold back the fraction F (0 <= F < 1) of that memory and BYTES more per\n"
          "                           device (framework context): the planner plans in what is left, e.g. 0.2,1073741824\n"
          "                           as Galvatron does (20%% of the budget + 1 GiB per stage); the usable memory is printed\n"
          "  --profile FILE           measured per-layer forward / backward / recompute times and activation memory\n"
          "                           replace the cost model's figures for those layers (Galvatron's profiled inputs or a\n"
          "                           galvc-profile JSON, e.g. from bench/layer_profile.py; docs/planner.md, \"Profiles\")\n"
          "  --zero-stages 1,2,3      training: the ZeRO stages the planner may give each layer besides none\n"
          "                           (default 2,3 per layer, and with microbatches stage 1 on every layer; docs/planner.md)\n"
          "  --plan-search dp|exhaustive  dp (default): ZeRO pattern by knapsack DP; exhaustive: realise every\n"
          "                           plan of the space (the exact optimum, small models)\n"
          "  --layers K|blocks        cluster-layers: K layer groups (METIS), or one per repeated block found by\n"
          "                           structure (cuts at the model's layer boundaries, as Megatron-LM's stages);\n"
          "                           --pipe-stats prints a summary (docs/pipeline.md); default with a given\n"
          "                           --pipeline-stages S: blocks when the model has 4 or more per stage, else 4 S\n"
          "  --pipeline-stages S (--pp S)  pipeline: S stages (cluster-layers + stage DP), one program per stage\n"
          "                           in DIR/stageI/, DIR/launch runs them (mpirun MPMD; across nodes\n"
          "                           GALV_HOSTS=h0,h1,.. places each rank on its device's node); --microbatches B (1),\n"
          "                           --schedule 1f1b|gpipe|zb-h1|interleaved|auto (training: 1f1b; auto: the one\n"
          "                           with the shortest predicted timeline; interleaved with --virtual-stages V:\n"
          "                           S x V stages, V per device group of --gpus / S devices, Megatron's order; auto\n"
          "                           prices it when V is given; the default search tries V = 2..4 itself),\n"
          "                           --trace-plan FILE (the cost model's Chrome trace; with --train:\n"
          "                           forward, backward (and weight) per stage and microbatch, the runtime's order);\n"
          "                           --gpus N: N / S devices per stage, each stage's sharding from the planner\n"
          "                           (sp on its layers where memory binds it: the stage line says +sp)\n"
          "                           (or --strategy tp|dp|dp,tp|dp,tp,sp [--mesh]); S = auto (0): the stage DP chooses\n"
          "                           the stages, each stage's devices (equal k = 1, 2, 4 .. with S k <= --gpus,\n"
          "                           or uneven over all --gpus) and each stage's plan; --microbatches auto: B\n"
          "                           among the divisors of --batch; the choice is printed. --stage-cost\n"
          "                           planner|analytic: stage costs from the intra-operator planner per stage\n"
          "                           program (default) or the analytic formula\n"
          "                           --stage-cuts dp|equal: the stage DP's cuts (default) or K/S layer groups per\n"
          "                           stage (equal cuts; --layers K = the blocks; docs/pipeline.md)\n"
          "                           stages of k devices: --gpus S*k [--strategy tp|dp (or --mesh per stage with\n"
          "                           --strategy dp,tp or dp,tp,sp)]; --stage-devices 2,1: devices per stage\n"
          "                           (may differ; sum = --gpus). Values crossing stages move as the cross-mesh\n"
          "                           plan's tiles, each byte once, then an all-gather inside the receiving stage\n"
          "                           --target cuda (the default with --gpus): CUDA stage programs (make: NCCL,\n"
          "                           make COMM=staged: ranks sharing a GPU, make cpu; fp32, bf16 training;\n"
          "                           docs/cuda-target.md); --precision bf16|fp16: crossing values, their\n"
          "                           gradients and the stash 16-bit (docs/pipeline.md, \"16-bit storage\")\n"
          "                           --train: an earlier stage's program has a forward and a backward entry with a\n"
          "                           per-microbatch stash between them (both targets); --pipeline-recompute: one\n"
          "                           combined program per stage that recomputes its forward in the backward\n"
          "  --pipeline-recompute=on|off|auto  on = --pipeline-recompute (every earlier stage); off: none; auto (the\n"
          "                           default): --pipeline-stages auto and the default search choose it per stage\n"
          "  --pipeline-zero 0|1|2|auto training: 1 splits each stage's optimizer state (AdamW moments, SGD momentum)\n"
          "                           over the stage's ranks that hold the same parameters; each updates its chunk\n"
          "                           and all-gathers the parameters (ZeRO-1 inside pipeline stages; both targets);\n"
          "                           2: the gradient sums too, reduce-scattered once per step or per microbatch\n"
          "                           (ZeRO-2, --zero-reduce); 0: never; auto (the default): chosen per stage\n"
          "  (default search)         --gpus N > 1 without --pipeline-stages / --strategy / --mesh / --microbatches /\n"
          "                           --recompute: one program and pipelines of 2 or more stages are planned (under --profile\n"
          "                           the stages cut between whole layers, two at least per stage), the\n"
          "                           faster predicted step is compiled and plan.json records it (--plan replays a\n"
          "                           pipelined plan.json); --pipeline-stages 1: one program only (docs/planner.md)\n"
          "  --sharding FILE          pinned shardings: NAME [{\"dp\"}, {}, {\"tp\"}] per line; @sequence_parallel AXIS\n"
          "  --cluster PRESET|FILE.json  the cluster model (docs/cluster.md); presets: a100-40g, a100-80g,\n"
          "                           h100-sxm, h200, cpu-local (default: h100-sxm for --target cuda,\n"
          "                           cpu-local for --target cpu)\n"
          "  --report-cost            print the cost model's per-op table (FLOPs, bytes, time), totals and\n"
          "                           memory per device for the compiled program (stdout; no IR there); with\n"
          "                           --pipeline-stages the pipeline's whole predicted step and its largest stage\n"
          "  --input-shape NAME=DxD.. bind a graph input's shape, e.g. input_ids=8x128 (repeatable)\n"
          "  --batch N                bind symbolic batch dims (batch, batch_size, N, B...) (default 1)\n"
          "  --seq N                  bind symbolic sequence dims (seq, sequence, seq_len, T...) (default 128)\n"
          "  --seed N                 seed of the training-mode Dropout masks (default 0; recorded in plan.json)\n"
          "  -o PATH                  a directory (ends in '/' or exists): write the program there\n"
          "                           (program.c, weights.bin, Makefile, runtime/, README) and build it with\n"
          "                           make; a file (or none: stdout): write the IR after the pipeline\n"
          "  --target cpu|cuda        code generation target: cuda (CUDA C + cuBLAS + NCCL, built with nvcc;\n"
          "                           runs where a GPU is) is the default when --gpus is given, cpu (C +\n"
          "                           OpenBLAS + MPI; runs anywhere) otherwise (docs/cuda-target.md, cpu-target.md)\n"
          "  --cuda-arch sm_90[,sm_80]  GPU architectures of the cuda target (default sm_90)\n"
          "  --precision fp32|bf16|fp16  float storage, both targets (bf16 / fp16: 16-bit storage, fp32 compute\n"
          "                           and accumulation; fp16 training with --loss-scale; with --train mixed\n"
          "                           precision: fp32 parameters, optimizer state and parameter gradients,\n"
          "                           16-bit activations and GEMM inputs)\n"
          "  --grad-dtype fp32|bf16|fp16  --train --precision bf16 / fp16 (the same dtype): the parameter gradients'\n"
          "                           storage (and so their dp / ZeRO reduction's dtype unless --reduce-dtype; with\n"
          "                           --pipeline-stages also the runtime's sums over the microbatches; fp16: the\n"
          "                           loss scale's overflow check reads the 16-bit sums); default fp32\n"
          "  --reduce-dtype fp32|bf16|fp16  --train with 16-bit --precision: the dtype in which the gradient\n"
          "                           reductions (dp all-reduce, ZeRO reduce-scatter) move the gradients' partial\n"
          "                           sums (default: the gradient's, --grad-dtype); 16-bit: the --precision dtype\n"
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
          "  --clip-grad-norm X       scale the gradients to a global 2-norm of at most X before the update\n"
          "                           (torch's clip_grad_norm_; every trained parameter counted once)\n"
          "  --loss-scale dynamic|S   --train --precision fp16 (default dynamic) or bf16: the loss x the scale before\n"
          "                           the backward, the gradients unscaled before clipping and the update; a step\n"
          "                           whose gradients hold an inf / NaN on any rank is skipped (parameters and\n"
          "                           optimizer state unchanged). dynamic: torch's GradScaler (--loss-scale-init X\n"
          "                           65536, --loss-scale-growth X 2, --loss-scale-backoff X 0.5,\n"
          "                           --loss-scale-interval N 2000); S: a fixed scale\n"
          "  --microbatches B|auto    (without --pipeline-stages) gradient accumulation: the step runs B\n"
          "                           microbatches of batch/B samples in turn (one microbatch's activations),\n"
          "                           sums their gradients and updates once; auto: the fewest that fit the\n"
          "                           memory (--memory-limit or the cluster's; the planner also falls back to\n"
          "                           more microbatches when the whole batch fits no plan or its plan is memory\n"
          "                           bound: one search on 2 microbatches of batch/C samples, C = batch /\n"
          "                           gcd(batch, gpus), its plan compiled at the fewest of C's divisors it fits,\n"
          "                           then twice as many (up to 8x the fewest that fit) while the step improves;\n"
          "                           --microbatches 1: never)\n"
          "  --zero-reduce once|per-microbatch  with ZeRO-3 and --microbatches: reduce-scatter every\n"
          "                           microbatch's gradient into the shard as it is made (per-microbatch, the\n"
          "                           default: only shards held), or sum whole gradients and reduce-scatter\n"
          "                           once per step (once: B = 1's bytes); ZeRO-1 reduces once, ZeRO-2 per\n"
          "                           microbatch (with --pipeline-stages: ZeRO-2 stages' form; not given: chosen\n"
          "                           per stage)\n"
          "  --fused-attention on|off|auto  training: each attention chain (QK^T, scale / mask, softmax, PV) as one\n"
          "                           galv.attention op whose backward recomputes the scores, no S x S value stored\n"
          "                           (docs/fused-attention.md); auto (default): fused where its kernel is the\n"
          "                           default (--target cpu, fp32 and 16-bit); on: also the CUDA target's plain kernels\n"
          "  --recompute=none|all|L,..  recompute these layers' activations in backward (layer = NAME.N\n"
          "                           segment of the node names, e.g. h.0 / layers.3, or its index N);\n"
          "                           first:K: the first K layers found by structure (one program);\n"
          "                           selective[:L,..|:first:K]: only the attention cores (QK^T, scale / mask,\n"
          "                           softmax, dropout; all layers, or those listed), the rest of each layer kept;\n"
          "                           not given with the planner (--gpus N): none, and when that plan is\n"
          "                           memory bound also selective and all, each with the fewest microbatches\n"
          "                           that fit (and more, as above), then each recomputing plan on its first K\n"
          "                           layers only (the fewest K that fit); the fastest predicted step wins\n"
          "                           (plan.json records it); with --pipeline-stages: inside every stage\n"
          "                           program (its stash keeps what the recomputed backward reads); not given:\n"
          "                           chosen per stage (none / selective / all) with the stages chosen\n"
          "  --freeze NAME|GLOB       this float initializer does not train (repeatable; fnmatch globs;\n"
          "  --trainable NAME|GLOB    the last matching option wins over the default rule, docs/autodiff.md)\n"
          "  -q, --quiet              no progress output, no plan report (the choice is polished either way)\n"
          "  (options that contradict each other, e.g. a training option without --train, are an error)\n"
          "  -h, --help, --version\n"
          "\n"
          "passes:\n");
  for (int i = 0; i < gv_pass_count; i++)
    fprintf(f, "  %-16s %s\n", gv_pass_table[i].name, gv_pass_table[i].help);
  fprintf(f, "\nexamples:\n  galvc gpt2.onnx --input-shape input_ids=8x128 --emit=ir -o gpt2.mlir\n"
             "  galvc gpt2.onnx --batch 2 --seq 16 --target cpu -o out/ && out/program --input input_ids=ids.npy -o res\n"
             "  galvc gpt2.onnx --gpus 8 --batch 8 -o out8/ && out8/launch --input input_ids=ids.npy -o res   (CUDA, 8 ranks)\n");
}

int count_ops(const gv_block *b) {
  int n = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    n++;
    for (int r = 0; r < op->nregions; r++) n += count_ops(op->regions[r]);
  }
  return n;
}

/* The recomputation search's winner: the mode with a plan (B[k] > 0) and the
 * fastest predicted step, the least recomputation on a tie; -1 when none. */
static int rc_fastest(const int *B, const int64_t *step, int n) {
  int best = -1;
  for (int k = 0; k < n; k++)
    if (B[k] && (best < 0 || step[k] < step[best])) best = k;
  return best;
}

/* The fastest step so far, the later searches' bound: of the steps realised (real) and the deferred count choices
 * still priced only (each mode's, and the current mode's fastest count) */
static int64_t inc_now(int64_t real, const int *B, const int64_t *step, const bool *virt, int n, int mb_B, int64_t mb_step,
                       bool mb_virt) {
  int64_t inc = real;
  for (int k = 0; k < n; k++)
    if (B[k] && virt[k] && (!inc || step[k] < inc)) inc = step[k];
  if (mb_B && mb_virt && (!inc || mb_step < inc)) inc = mb_step;
  return inc;
}

enum { VIRT_OFF_PCT = 1 };
#define VIRT_OFF (1.0 + VIRT_OFF_PCT / 100.0) /* a deferred choice realised this much slower than priced: compared again */

/* --recompute's value for MODE (selective or all) on the first k layers found by structure: "none" for k = 0,
 * "first:K" or "selective:first:K" (passes/recompute.c). */
static const char *part_list_of(char *buf, size_t n, const char *mode, int k) {
  if (k <= 0) snprintf(buf, n, "none");
  else snprintf(buf, n, "%sfirst:%d", strcmp(mode, "selective") ? "" : "selective:", k);
  return buf;
}

/* The next k to realise between lo (known not to fit: memory lo_mem, step lo_step) and hi (fits: hi_mem, hi_step),
 * lo < k < hi: where the memory, taken as linear in k between the two, meets the limit, or, when that lies above it,
 * the first k whose step, taken as linear the same way, is no faster than the best so far (a k that does not fit
 * there ends the mode: every k that fits is above it). Any k in (lo, hi) keeps the search exact; these only make it
 * short (memory and step grow about linearly as layers stop recomputing). */
static int part_next(int lo, int64_t lo_mem, int64_t lo_step, int hi, int64_t hi_mem, int64_t hi_step, int64_t limit,
                     int64_t best) {
  double span = hi - lo;
  int k = lo + (hi - lo) / 2;
  if (lo_mem > hi_mem) k = lo + (int)ceil((double)(lo_mem - limit) * span / (double)(lo_mem - hi_mem));
  if (hi_step > lo_step && best > lo_step) {
    int kb = lo + (int)floor((double)(best - lo_step) * span / (double)(hi_step - lo_step)) + 1;
    if (kb < k) k = kb;
  }
  return k <= lo ? lo + 1 : k >= hi ? hi - 1 : k;
}

/* Recomputation on some layers searched on the stand-in (docs/planner.md, "Recomputation on some layers priced from
 * two microbatches"): at a count B > 2 each k is first priced on the program of 2 microbatches (its second repeated,
 * as the count search prices counts), its figures corrected by the last k realised in full (realised less priced:
 * first the mode's own plan on every layer, realised at its count); only the k that search picks is realised in full,
 * then the correction taken there and the search run again between the bounds realised, until two neighbours are
 * known in full (the fewest that fits and one that does not) or the step bounds the rest. */
typedef struct {
  int L;                   /* the layers */
  int64_t *mem, *step;     /* the stand-in's priced figures per k (0..L), -1 not priced; PART_NONE: does not realise */
  int flo, fh;             /* realised in full: the most k known not to fit (-1 none), the fewest known to fit (L) */
  int64_t fh_step, fh_mem; /* fh's realised figures */
  int64_t cmem, cstep;     /* the correction (realised less priced) at the last k realised in full */
  int priced, full;        /* stand-ins priced and programs realised in full for this mode */
} part_stand_st;
#define PART_NONE (INT64_MAX / 4)
/* The fewest microbatches at which the k and the polish's changes are priced first: below it a program of B copies
 * realises in little more than the stand-in of 2 (Llama2-7B at 4: 0.13-0.18 s against 0.11 s), and the pricing's
 * own runs cost more than they save. GALV_STAND_MIN=N (3 or more) sets it (the tests price tiny models' 4). */
static int stand_min(void) {
  const char *e = getenv("GALV_STAND_MIN");
  int v = e ? atoi(e) : 0;
  return v >= 3 ? v : 8;
}
#define PART_MARGIN 0.002 /* a k priced this much over the step to beat is left out (the corrected estimate's error) */
enum { PS_PRICE, PS_FULL, PS_DONE };

static bool part_stand_begin(part_stand_st *s, int L, int64_t step, int64_t mem) {
  free(s->mem), free(s->step);
  memset(s, 0, sizeof *s);
  s->mem = malloc((size_t)(L + 1) * sizeof *s->mem), s->step = malloc((size_t)(L + 1) * sizeof *s->step);
  if (!s->mem || !s->step) return free(s->mem), free(s->step), s->mem = s->step = NULL, false;
  for (int k = 0; k <= L; k++) s->mem[k] = s->step[k] = -1;
  s->L = L, s->flo = -1, s->fh = L, s->fh_step = step, s->fh_mem = mem;
  return true;
}

static void part_stand_end(part_stand_st *s) {
  free(s->mem), free(s->step);
  s->mem = s->step = NULL;
}

/* The next k: priced on the stand-in (PS_PRICE), realised in full (PS_FULL); PS_DONE: the mode's search ends (fh is
 * the fewest k known to fit). Between the bounds realised in full, the fewest k whose corrected price fits the limit,
 * searched by part_next over the prices, is realised. The correction is exact only where it was taken (the B copies'
 * first-fit arena fragments by another amount per k: 8-256 MB on a 3B Llama at 128 copies), so a k is known not to
 * fit only from its price alone over the limit (the copies never take less than two): a k priced no faster than best
 * that does not fit ends the search (every k that fits is slower), one whose price alone fits is realised first, as is
 * the k below the fewest that fits when it is priced faster than best and its price alone fits. */
static int part_stand_next(const part_stand_st *s, int64_t limit, int64_t best, int *k) {
  int lo = s->flo, hi = s->fh;
  if (s->mem[hi] < 0) return *k = hi, PS_PRICE; /* the bound's price: the correction there */
#define PCM(j) (s->mem[j] >= PART_NONE ? PART_NONE : s->mem[j] + s->cmem)
#define PCS(j) (s->step[j] >= PART_NONE ? PART_NONE : s->step[j] + s->cstep)
#define OVER(j) (s->mem[j] > limit) /* over the limit as priced: over it realised */
  const double bar = (double)best * (1.0 + PART_MARGIN);
  if (lo < 0) {
    if (s->mem[0] < 0) return *k = 0, PS_PRICE;
    if (PCM(0) <= limit) hi = 0;
    else if ((double)PCS(0) >= bar) return OVER(0) ? PS_DONE : (*k = 0, PS_FULL);
    else lo = 0;
  }
  while (hi - lo > 1) {
    int j = part_next(lo, PCM(lo), PCS(lo), hi, PCM(hi), PCS(hi), limit, best);
    if (s->mem[j] < 0) return *k = j, PS_PRICE;
    if (PCM(j) <= limit) hi = j;
    else if ((double)PCS(j) >= bar) return OVER(j) ? PS_DONE : (*k = j, PS_FULL);
    else lo = j;
  }
  if (hi != s->fh && (double)PCS(hi) < bar) return *k = hi, PS_FULL;
  if (lo >= 0 && lo != s->flo && !OVER(lo) && (double)PCS(lo) < bar) return *k = lo, PS_FULL;
#undef PCM
#undef PCS
#undef OVER
  return PS_DONE;
}

/* The count search's stand-in count (docs/planner.md, "One planner run per recomputation"): the most
 * microbatches whose size (batch / count) still holds every data-parallel degree the devices can give the batch
 * (a multiple of gcd(batch, devices)): batch / gcd(batch, devices). */
static int count_top_of(int64_t batch, int64_t devices) {
  int64_t a = batch, b = devices > 0 ? devices : 1;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a > 0 && batch / a <= INT32_MAX ? (int)(batch / a) : 1;
}

/* The fewest microbatches c (a divisor of top, c > floor) at which the plan priced at top microbatches fits lim,
 * its memory scaled with the microbatch size: its activations but the data inputs (the whole batch at every count)
 * times top / c, the rest (states, gradient sums) as priced; *est gets that memory. top when no fewer fit. */
static int count_pick(const gv_plan_cost *pc, int top, int floor, int64_t lim, int64_t *est) {
  int64_t act = pc->mem_activations - pc->mem_data;
  if (act < 0) act = 0;
  for (int c = floor + 1; c < top; c++) {
    if (top % c) continue;
    int64_t m = pc->mem_total + act * (top / c - 1);
    if (m <= lim) {
      *est = m;
      return c;
    }
  }
  *est = pc->mem_total;
  return top;
}

/* The least needs the count search's failed probes found, per recomputation mode (docs/planner.md, "The no-plan
 * figure and the counts' own programs"): each probe that found no plan at c0 microbatches records the least need it
 * weighed; at c >= c0 a candidate needs at least need x c0 / c (its activations scale with the microbatch, its
 * states do not shrink), less 3 % for the estimate's error. A count probed on its own program (own: counts 1 and 2,
 * or any count once the stand-ins are off) fits no plan; a stand-in's record (priced from two microbatches) only
 * bounds. */
enum { NEED_RECS = 64 };
typedef struct {
  int n;
  struct {
    int c;
    bool own;
    int64_t need;
  } r[NEED_RECS];
} need_recs;

static void need_add(need_recs *nr, int c, bool own, int64_t need) {
  if (need <= 0) return;
  for (int i = 0; i < nr->n; i++)
    if (nr->r[i].c == c) {
      nr->r[i].own |= own;
      if (need > nr->r[i].need) nr->r[i].need = need;
      return;
    }
  if (nr->n < NEED_RECS) nr->r[nr->n].c = c, nr->r[nr->n].own = own, nr->r[nr->n].need = need, nr->n++;
}

/* the least need at c the records show (0: none bounds it); *own_at: c was probed on its own program */
static double need_bound(const need_recs *nr, int c, int *own_at) {
  double lb = 0;
  *own_at = 0;
  for (int i = 0; i < nr->n; i++) {
    if (nr->r[i].c > c) continue;
    const double v = (double)(nr->r[i].need - nr->r[i].need / 33) * (double)nr->r[i].c / (double)c;
    if (v > lb) lb = v;
    if (nr->r[i].c == c) *own_at |= nr->r[i].own;
  }
  return lb;
}

/* The next count above `from` (a divisor of batch) the search must probe on its own program: not one probed there
 * already (it fits no plan), and not one whose bound is over lim and above the least need seen on the counts' own
 * programs (lm, -1: none), so the error line's least need stays the least over the counts, a real program's (a
 * stand-in's record only bounds: its arena of two microbatches fragments less than the count's, its estimate low
 * by up to 8 % on small models). 0: none; *lo / *hi get the first and last counts skipped. */
static int next_own_count(const need_recs *nr, int from, int64_t batch, int64_t lim, int64_t lm, int *lo, int *hi) {
  *lo = *hi = 0;
  for (int64_t c = from + 1; c <= batch; c++) {
    if (batch % c) continue;
    int own_at;
    const double lb = need_bound(nr, (int)c, &own_at);
    if (own_at) continue;
    if (lim > 0 && lb > (double)lim && lm >= 0 && lb > (double)lm) {
      if (!*lo) *lo = (int)c;
      *hi = (int)c;
      continue;
    }
    return (int)c;
  }
  return 0;
}

/* The recomputation mode after r in the order ord[0..nrc) and its first count (*B): B0, or on the counts' own
 * programs (own) the first count next_own_count leaves, a mode with none passed over (said so unless quiet). -1:
 * none left. */
/* The recomputation modes the default search leaves out: those the model's forward program does not admit (selective:
 * no attention core, dot -> [elementwise] -> softmax -> dot, as ALiBi attention's baddbmm; all: no repeated blocks),
 * which the recompute pass refuses with an error line (rc_mode_ops) */
static bool rc_na[3];

/* The op count of the training program after the recompute pass under mode (no weights read), -1 when the pass
 * refuses the mode: a mode whose count equals none's recomputes nothing in this model (selective where the attention
 * is fused: its scores are never kept) and searching it would repeat none's search. */
static int rc_mode_ops(const char *model, gv_import_options opt, const char *mode) {
  static const char *const names[] = {"shape-infer", "compute-f32", "fold-constants", "canonicalize", "dce",
                                      "master-weights", "loss", "fuse-attention", "autodiff", "recompute"};
  const char *keep = gv_train_opts.recompute;
  const int64_t kmb = gv_train_opts.microbatches;
  opt.load_weights = false;
  gv_error_quiet++;
  gv_module *m = gv_import_onnx(model, &opt);
  bool ok = m && !gv_verify(m);
  gv_train_opts.recompute = mode, gv_train_opts.microbatches = 1;
  for (size_t i = 0; ok && i < sizeof names / sizeof names[0]; i++) ok = !gv_pass_lookup(names[i])->run(m);
  gv_train_opts.recompute = keep, gv_train_opts.microbatches = kmb;
  gv_error_quiet--;
  int n = ok ? count_ops(m->main->body) : -1;
  if (m) gv_module_free(m);
  return n;
}

static int next_mode(const int *ord, int nrc, int r, bool own, const need_recs *nr, const char *const *names, int B0,
                     int64_t batch, bool mb_search, int64_t lim, int64_t lm, int quiet, int *B) {
  int pos = 0, lo, hi;
  while (pos < nrc && ord[pos] != r) pos++;
  for (int q = pos + 1; q < nrc; q++) {
    if (ord[q] < 3 && rc_na[ord[q]]) continue; /* the model does not admit it */
    if (!own) return *B = B0, ord[q];
    if ((*B = next_own_count(&nr[ord[q]], B0 - 1, mb_search ? batch : B0, lim, lm, &lo, &hi))) return ord[q];
    if (!quiet)
      fprintf(stderr, "galvc: recompute=%s on the counts' own programs: every count probed already, or its least need "
                      "over the limit and the least need seen: not probed\n", names[ord[q]]);
  }
  return -1;
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
  long long wc = (long long)gv_get_int(a, "working_copy_bytes", 0);
  /* per parameter of the model (a split parameter counts its global elements) */
  const gv_func *f = m->main;
  double np = 0;
  for (int i = 0; i < f->body->nargs; i++) {
    if (!f->arg_is_param[i]) continue;
    double e = (double)gv_type_numel(&f->body->args[i]->type);
    const gv_sharding *s = f->arg_sharding ? f->arg_sharding[i] : NULL;
    for (int d = 0; s && d < s->rank; d++) e *= (double)gv_sharding_dim_split(s, d);
    np += e;
  }
  char wcs[96] = "";
  if (wc) snprintf(wcs, sizeof wcs, ", 16-bit working copies %lld (in the arena)", wc);
  fprintf(stderr, "galvc: memory: parameters %lld bytes, gradients %lld, optimizer state %lld%s (model states %lld = "
                  "%.2f bytes per parameter), activations kept for backward %lld (forward peak %lld), arena %lld\n",
          pb, gb, ob, wcs, pb + gb + ob + wc, np > 0 ? (double)(pb + gb + ob + wc) / np : 0.0, kept, act, bytes);
}

/* DIR and its missing parents (mkdir -p); -1 with errno when a component is not a directory. */
int ensure_dir(const char *dir) {
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

FILE *galvc_open_out(galv_wfile *w, const char *path, int exec) {
  char err[4400];
  FILE *f = galv_wfile_open(w, path, exec, err, sizeof err);
  if (!f) gv_error_plain("%s", err);
  return f;
}

int galvc_close_out(galv_wfile *w, int rc) {
  char err[4400];
  if (rc) return galv_wfile_abandon(w), rc;
  return galv_wfile_commit(w, err, sizeof err) ? gv_error_plain("%s", err) : 0;
}

static int write_ir(const gv_module *m, const char *path) {
  galv_wfile w;
  FILE *f = galvc_open_out(&w, path, 0);
  if (!f) return -1;
  gv_print_module(m, f);
  return galvc_close_out(&w, 0);
}

static int dump(const gv_module *m, const char *dir, int n, const char *name) {
  if (ensure_dir(dir)) return gv_error_plain("%s: cannot create dump directory", dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/%02d-%s.mlir", dir, n, name);
  return write_ir(m, path);
}


bool is_dir_arg(const char *out) {
  struct stat st;
  size_t n = strlen(out);
  return (n && out[n - 1] == '/') || (stat(out, &st) == 0 && S_ISDIR(st.st_mode));
}

/* Emit: the target's program (CPU: program.c; CUDA: program.cu), weights.bin, Makefile, runtime/. */
int64_t galvc_emit_const_base; /* gv_emit_options.const_base of the next emit_program (a stage's backward entry) */

int emit_program(gv_module *m, const char *dir, int quiet, const gv_cuda_options *cuda, const char *entry) {
  gv_emit_options eo = {.quiet = quiet, .entry = entry, .const_base = galvc_emit_const_base};
  double t = now();
  if (cuda ? gv_emit_cuda(m, dir, &eo, cuda) : gv_emit_cpu(m, dir, &eo)) return 1;
  if (!quiet) fprintf(stderr, "galvc: wrote %s%sprogram%s%s.%s (%d kernels, %.3f s)\n", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                      entry ? "_" : "", entry ? entry : "", cuda ? "cu" : "c", eo.nkernels, now() - t);
  return 0;
}

/* Build: `make -C DIR` (its output on stderr). */
int build_program(const char *dir, int quiet) {
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
  galv_wfile w;
  FILE *f = galvc_open_out(&w, path, 0);
  if (!f) return -1;
  fprintf(f, "Written by galvc %s:", GALV_VERSION);
  for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
  fprintf(f, "\n\n%s program (%s); inputs, the global shapes the files hold:\n  %s\n\n",
          train ? "A training step" : "An inference", cuda ? "CUDA target: program.cu, and program.c for make cpu" : "CPU target: program.c",
          inputs);
  fprintf(f, "build:  make%s\n", cuda ? "        (make cpu: ./program-cpu, the same program on the CPU)" : "");
  fprintf(f, "        one object per source (%s), then one link: make -jN compiles them side by side,\n"
             "        a rebuild recompiles only what changed; make clean removes them\n",
          cuda ? "nvcc.d/, cpu.d/, emu.d/, emu-race.d/ and the host runtime's *.o" : "obj/, obj-debug/ for make debug");
  run_line(line, sizeof line, out, true, train, args);
  fprintf(f, "run:    %s\n", line);
  if (cuda && strstr(line, "launch"))
    fprintf(f, "        without a GPU: make cpu, then GALV_PROGRAM=program-cpu ./launch ...\n");
  fprintf(f, "\nFiles: weights.bin (the parameters%s), Makefile, runtime/ (linked into the program)%s.\n",
          strstr(line, "launch") ? ", one block per rank" : "", strstr(line, "launch") ? ", launch (mpirun)" : "");
  return galvc_close_out(&w, 0);
}

double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An option that takes a value came last: one error line, exit 2. */
/* Records option flag = v (see `once` in the option loop); a second value
 * differing from the first fills dup (the first such only). */
static void note_once(const char **flags, const char **vals, int *n, const char *flag, const char *v, char *dup,
                      size_t dn) {
  if (!strcmp(flag, "--input-shape") || !strcmp(flag, "--freeze") || !strcmp(flag, "--trainable")) return;
  for (int k = 0; k < *n; k++)
    if (!strcmp(flags[k], flag)) {
      if (strcmp(vals[k], v) && !dup[0])
        snprintf(dup, dn, "%s given twice with different values ('%s', then '%s'): give it once", flag, vals[k], v);
      return;
    }
  if (*n < 96) flags[*n] = flag, vals[*n] = v, ++*n;
}

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


/* --memory-reserve: the memory the planners plan in, (1 - frac) x the limit
 * (--memory-limit or the cluster's) less bytes; printed. Returns 0, or 2
 * after an error line when nothing is left. */
static int apply_reserve(const gv_cluster *c, double frac, int64_t bytes, int quiet) {
  int64_t lim = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : c->memory_bytes;
  int64_t use = (int64_t)((double)lim * (1 - frac)) - bytes;
  if (use <= 0) {
    gv_error_plain("--memory-reserve %g,%lld leaves no memory of the %lld bytes per device", frac, (long long)bytes, (long long)lim);
    return 2;
  }
  if (!quiet)
    fprintf(stderr, "galvc: usable memory per device: %lld bytes (%lld less %g%% and %lld bytes reserved)\n", (long long)use,
            (long long)lim, frac * 100, (long long)bytes);
  gv_plan_opts.memory_limit = use;
  return 0;
}

/* The default search's two answers, one line each (-q: none): one program's
 * predicted step (the realised program's critical path, plan-sharding) and
 * the pipeline's (the stage DP's step over the stage programs' planned
 * costs), then the choice. one < 0: no program fits. */
#define JOINT_ONE_OVER 1.25 /* one program's stand-in over this x the pipeline's realised step: not realised */
static int64_t joint_one_bounded; /* one program's searches ended with every candidate bounded above this pipeline step */
static void joint_report(const galvc_pipe_choice *jc, int64_t one, int B, const char *rc, int train, int quiet) {
  if (quiet) return;
  if (one < 0 && joint_one_bounded)
    fprintf(stderr, "galvc: default search: one program: none realised (every recomputation's candidates bounded above, or "
                    "priced over %.2f x, the pipeline's step %.3f ms)\n", JOINT_ONE_OVER, (double)joint_one_bounded / 1e6);
  else if (one >= 0)
    fprintf(stderr, "galvc: default search: one program: predicted step %.3f ms (%d microbatch%s%s%s; the realised program's "
                    "critical path)\n", (double)one / 1e6, B, B == 1 ? "" : "es", rc ? ", recompute=" : "", rc ? rc : "");
  else fprintf(stderr, "galvc: default search: one program: no plan fits the memory\n");
  if (jc->found)
    fprintf(stderr, "galvc: default search: pipeline: predicted step %.3f ms (%d stages, devices:strategy %s; %d microbatches, %s; "
                    "the schedule %.3f ms over the stage programs' planned costs + once per step %.3f ms)\n", (double)jc->step_ns / 1e6,
            jc->S, jc->desc, jc->B, !train ? "inference" : gv_schedule_name(jc->sched),
            (double)(jc->step_ns - jc->once_ns) / 1e6, (double)jc->once_ns / 1e6);
  else if (jc->cut) {
    fprintf(stderr, "galvc: default search: pipeline: no candidate planned in full (%d cut short: the stages planned bound the step "
                    "above one program's", jc->cut);
    if (jc->skipped) fprintf(stderr, "; %d not planned: their analytic step %.3f ms and more, over 1.25 x one program's", jc->skipped,
                             (double)jc->skip_key / 1e6);
    fprintf(stderr, ")\n");
  } else if (jc->skipped)
    fprintf(stderr, "galvc: default search: pipeline: %s%d candidate%s not planned (their analytic step %.3f ms and more, over "
                    "1.25 x one program's)\n", jc->planned ? "none planned fits the memory; " : "", jc->skipped,
            jc->skipped == 1 ? "" : "s", (double)jc->skip_key / 1e6);
  else fprintf(stderr, "galvc: default search: pipeline: no plan of 2 or more stages fits the memory\n");
  bool pipe = jc->found && (one < 0 || jc->step_ns < one);
  fprintf(stderr, "galvc: default search: chose %s; pipelines searched in %.2f s CPU (%d candidate%s screened with the analytic "
                  "stage cost, %d planned%s)\n", pipe ? "the pipeline" : "one program", jc->cpu_s, jc->screened,
          jc->screened == 1 ? "" : "s", jc->planned, jc->cut ? ", some cut short: slower than the step to beat" : "");
}

/* The default search chose the pipeline (one: one program's step, -1 when
 * none fits): compiled as --pipeline-stages compiles those stages, its
 * plan.json written; neither fits: one error line with the smaller
 * minimum and the term that binds it. */
static int joint_finish(const char *model, gv_import_options opt, const pipe_args *pa, const galvc_pipe_choice *jc, int64_t one,
                        int oneB, const char *onerc, gv_cluster *cluster, const char *out, int quiet, int build, int verify_each, int train, int plan_only,
                        const gv_cuda_options *cuda, int64_t gpus) {
  if (!jc->found) {
    const gv_plan_outcome *o = &gv_plan_last;
    int64_t lim = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cluster->memory_bytes;
    bool pipe_smaller = jc->min_need >= 0 && (o->min_mem <= 0 || jc->min_need < o->min_mem);
    const gv_plan_cost *k = &o->min_cost;
    const bool acts = k->mem_activations >= k->mem_params && k->mem_activations >= k->mem_optimizer;
    const bool one = !pipe_smaller && (!o->min_terms || (!acts && k->mem_optimizer >= k->mem_params)); /* a singular noun */
    const char *big = pipe_smaller ? (jc->min_act > jc->min_state ? "the activations of one microbatch" : "the model states")
                      : !o->min_terms ? "memory"
                      : acts ? "activations"
                      : k->mem_optimizer >= k->mem_params ? "optimizer state" : "parameters";
    char other[160] = "";
    if (jc->min_need >= 0 && o->min_mem > 0)
      snprintf(other, sizeof other, "; one program's smallest %lld, a pipeline stage's %lld", (long long)o->min_mem, (long long)jc->min_need);
    gv_error_plain("%s: no plan fits the memory limit of %lld bytes per device on %lld devices: the smallest needs %lld bytes (%s, "
                   "%s %s%s): raise --memory-limit or add devices", model, (long long)lim, (long long)gpus,
                   (long long)(pipe_smaller ? jc->min_need : o->min_mem), pipe_smaller ? "a pipeline stage" : "one program", big,
                   one ? "dominates" : "dominate", other);
    return 1;
  }
  joint_report(jc, one, oneB, onerc, train, quiet);
  char note[256];
  snprintf(note, sizeof note, "{\"chosen\": \"pipeline\", \"pipeline_step_ns\": %lld, \"one_program_step_ns\": %lld}",
           (long long)jc->step_ns, (long long)one);
  galvc_pipeline_options(); /* the options its candidates were planned under (one program's search changed them) */
  pipe_args pc = *pa;
  pc.on = true, pc.joint = true, pc.cuts_given = true, pc.analytic = false, pc.cuts = 0;
  pc.stages = jc->S, pc.B = jc->B, pc.layers = jc->K, pc.nsdev = jc->S, pc.sched = jc->sched;
  pc.vstages = jc->sched == GV_SCHED_INTERLEAVED && jc->V > 1 ? jc->V : 0; /* the S stages: P groups x V chunks */
  pc.naxes = 0, pc.mesh_given = false, pc.plan_only = plan_only, pc.stage_limit = jc->stage_limit;
  if (jc->mesh_dp) galvc_pipe_preset(&pc, jc->mesh_dp, jc->mesh_tp, jc->mesh_sp); /* the stages as the preset compiles them (their
                                                                        * crossing values split over dp) */
  pc.plan_out = gv_plan_opts.plan_out, pc.plan_note = note;
  int64_t g = 0;
  for (int i = 0; i < jc->S; i++) pc.sdev[i] = jc->dev[i], g += jc->dev[i];
  for (int i = 0; i <= jc->S; i++) pc.first[i] = jc->first[i];
  gv_plan_opts.active = false;
  return compile_pipeline(model, opt, &pc, g, cluster, out, quiet, build, verify_each, train, cuda) ? 1 : 0;
}

int main(int argc, char **argv) {
  gv_progname = "galvc";
  const char *model = NULL, *out = NULL, *emit = NULL, *target = NULL, *dump_after = NULL, *dump_dir = "galvc-dumps";
  int verify_each = 0, stats = 0, quiet = 0, train = 0, build = 1;
  int scale_opt = 0; /* --loss-scale-init / -growth / -backoff / -interval given */
  double scale_init = 0; /* --loss-scale-init */
  bool fp16 = false; /* --precision fp16: f16 storage (both targets; the storage pass's dtype) */
  const char *prec_given = NULL, *grad_given = NULL; /* --precision / --grad-dtype as given (--plan checks them) */
  int64_t gpus = 1, gpus_per_node = 0;
  int gpus_given = 0; /* --gpus asks for GPUs: the cuda target unless --target says otherwise */
  gv_cuda_options cuda = {.arch = "sm_90"};
  const char *mesh_spec = NULL;
  const char *cluster_spec = NULL;
  int report_cost = 0, plan_only = 0;
  gv_import_options opt = {.batch = 1, .seq = 128, .load_weights = true};
  gv_input_shape shapes[64];
  int nshapes = 0;
  gv_train_select select[64];
  int nselect = 0;
  pipe_args pa = {.B = 1, .sched = GV_SCHED_AUTO};
  bool sched_auto = false; /* --schedule auto given */
  /* options that only apply with another, remembered to name them in a conflict */
  const char *train_opt = NULL, *adam_opt = NULL, *pipe_opt = NULL;
  int mb_given = 0, zero_reduce_given = 0, recompute_given = 0;
  bool seed_given = false;
  int fused_attn = -1; /* --fused-attention: 1 on, 0 off, -1 auto (default: where gv_attn_train_kernel says a kernel runs it) */
  static char train_opt_buf[32];
  int momentum_given = 0, ignore_given = 0, arch_given = 0, search_given = 0, memlim_given = 0, dump_dir_given = 0;
  int zstages_given = 0;
  const char *profile_path = NULL;
  double reserve_frac = 0;
  int64_t reserve_bytes = 0;
  int reserve_given = 0;

  /* Options taking a value, as given: the same option again with another
   * value is an error (which was meant?), with the same value harmless.
   * --input-shape (one per input, checked per input), --freeze and
   * --trainable (lists) repeat by design. */
  static const char *seen_flag[96], *seen_val[96];
  int nseen = 0;
  char dup[512] = "";
#define once(flag, v) (note_once(seen_flag, seen_val, &nseen, flag, v, dup, sizeof dup), 1)
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = NULL;
#define TAKES(flag)                                                                                \
  (((strcmp(a, flag) == 0 && (i + 1 < argc ? (val = argv[++i]) != NULL : missing_value(flag))) ||  \
    (strncmp(a, flag "=", sizeof(flag)) == 0 && (val = a + sizeof(flag)))) &&                      \
   once(flag, val))
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
      if (!strcmp(val, "blocks")) gv_pipe_opts.blocks = true, gv_pipe_opts.layers = 0;
      else if (parse_pos_int("--layers", val, &k)) return 2;
      else gv_pipe_opts.layers = k > 1000000 ? 1000000 : (int)k, gv_pipe_opts.blocks = false;
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
      pipe_opt = "--stage-cost";
      if (strcmp(val, "planner") && strcmp(val, "analytic")) { gv_error_plain("--stage-cost %s: expected planner or analytic", val); return 2; }
      pa.analytic = strcmp(val, "analytic") == 0;
    } else if (TAKES("--stage-cuts")) {
      pipe_opt = "--stage-cuts";
      if (strcmp(val, "dp") && strcmp(val, "equal")) { gv_error_plain("--stage-cuts %s: expected dp or equal", val); return 2; }
      pa.cuts = strcmp(val, "equal") == 0 ? 2 : 1;
    } else if (TAKES("--microbatches")) {
      mb_given = 1; /* with --pipeline-stages the pipeline's; without, gradient accumulation (--train) */
      int64_t k = 0;
      if (strcmp(val, "auto") && strcmp(val, "0") && parse_pos_int("--microbatches", val, &k)) return 2;
      pa.B = k > 1000000 ? 1000000 : (int)k;
    } else if (TAKES("--schedule")) {
      pipe_opt = "--schedule";
      if (strcmp(val, "gpipe") && strcmp(val, "1f1b") && strcmp(val, "zb-h1") && strcmp(val, "interleaved") && strcmp(val, "auto")) {
        gv_error_plain("--schedule %s: expected 1f1b, gpipe, zb-h1, interleaved or auto", val);
        return 2;
      }
      pa.sched = !strcmp(val, "1f1b") ? GV_SCHED_1F1B : !strcmp(val, "zb-h1") ? GV_SCHED_ZBH1
               : !strcmp(val, "interleaved") ? GV_SCHED_INTERLEAVED : !strcmp(val, "auto") ? GV_SCHED_AUTO : GV_SCHED_GPIPE;
      sched_auto = !strcmp(val, "auto");
    } else if (TAKES("--virtual-stages")) {
      pipe_opt = "--virtual-stages";
      int64_t k = 0;
      if (parse_pos_int("--virtual-stages", val, &k)) return 2;
      if (k < 2 || k > 64) {
        gv_error_plain("--virtual-stages %s: expected 2 .. 64 model chunks per device group", val);
        return 2;
      }
      pa.vstages = (int)k;
    } else if (TAKES("--trace-plan")) {
      pipe_opt = "--trace-plan";
      pa.trace_plan = val;
    } else if (strcmp(a, "--pipeline-recompute") == 0) {
      pa.recompute = true;
    } else if (strncmp(a, "--pipeline-recompute=", 21) == 0) {
      val = a + 21;
      if (strcmp(val, "on") && strcmp(val, "off") && strcmp(val, "auto")) {
        gv_error_plain("--pipeline-recompute=%s: expected on, off or auto", val);
        return 2;
      }
      pa.recompute = !strcmp(val, "on"), pa.recompute_off = !strcmp(val, "off");
    } else if (TAKES("--pipeline-zero")) {
      if (strcmp(val, "0") && strcmp(val, "1") && strcmp(val, "2") && strcmp(val, "auto")) {
        gv_error_plain("--pipeline-zero expects 0, 1, 2 or auto, got '%s'", val);
        return 2;
      }
      pa.zero = !strcmp(val, "1") ? 1 : !strcmp(val, "2") ? 2 : 0, pa.zero_off = !strcmp(val, "0");
    } else if (strcmp(a, "--pipe-stats") == 0) {
      gv_pipe_opts.quiet = false;
    } else if (TAKES("--overlap")) {
      if (strcmp(val, "on") && strcmp(val, "off")) {
        gv_error_plain("--overlap %s: expected on or off", val);
        return 2;
      }
      gv_shard_opts.no_overlap = strcmp(val, "off") == 0;
    } else if (TAKES("--bucket-mb")) {
      char *end;
      errno = 0;
      bool au = !strcmp(val, "auto");
      double v = au ? 0 : strtod(val, &end);
      if (au) gv_shard_opts.bucket_bytes = GV_BUCKET_AUTO;
      else if (errno || *end || !*val || !(v >= 0) || v > 1e6) {
        gv_error_plain("--bucket-mb expects auto or a non-negative number of MiB (0: one call per gradient), got '%s'", val);
        return 2;
      } else gv_shard_opts.bucket_bytes = (int64_t)(v * 1048576.0 + 0.5);
    } else if (TAKES("--strategy")) {
      gv_shard_opts.strategy = val;
    } else if (TAKES("--plan")) {
      gv_plan_opts.plan_in = val;
    } else if (TAKES("--plan-out")) {
      gv_plan_opts.plan_out = val;
    } else if (strcmp(a, "--plan-only") == 0) {
      plan_only = 1;
    } else if (TAKES("--memory-limit")) {
      memlim_given = 1;
      if (parse_pos_int("--memory-limit", val, &gv_plan_opts.memory_limit)) return 2;
    } else if (TAKES("--memory-reserve")) {
      reserve_given = 1;
      char *end;
      errno = 0;
      reserve_frac = strtod(val, &end);
      long long rb = 0;
      bool ok = !errno && end != val && reserve_frac >= 0 && reserve_frac < 1;
      if (ok && *end == ',') {
        char *e2;
        errno = 0;
        rb = strtoll(end + 1, &e2, 10);
        ok = !errno && e2 != end + 1 && !*e2 && rb >= 0 && end[1] != '-' && end[1] != '+';
      } else ok = ok && !*end;
      if (!ok) {
        gv_error_plain("--memory-reserve %s: expected FRACTION[,BYTES]: a fraction from 0 to below 1 of the memory per device, "
                       "then optionally whole bytes per device (e.g. 0.2,1073741824)", val);
        return 2;
      }
      reserve_bytes = rb;
    } else if (TAKES("--profile")) {
      profile_path = val;
    } else if (TAKES("--plan-search")) {
      search_given = 1;
      if (strcmp(val, "exhaustive") && strcmp(val, "dp")) {
        gv_error_plain("--plan-search %s: expected dp or exhaustive", val);
        return 2;
      }
      gv_plan_opts.exhaustive = strcmp(val, "exhaustive") == 0;
    } else if (TAKES("--zero-stages")) {
      zstages_given = 1;
      gv_plan_opts.zero_stages = 0;
      for (const char *c = val; *c; c++) {
        if (*c >= '1' && *c <= '3' && !(gv_plan_opts.zero_stages & (1u << (*c - '0'))) && (c[1] == ',' || !c[1]))
          gv_plan_opts.zero_stages |= 1u << (*c - '0');
        else if (*c != ',' || c == val || !c[1]) {
          gv_error_plain("--zero-stages %s: expected a list of ZeRO stages from 1 to 3, each once (e.g. 1,2,3)", val);
          return 2;
        }
      }
      if (!gv_plan_opts.zero_stages) {
        gv_error_plain("--zero-stages %s: expected a list of ZeRO stages from 1 to 3, each once (e.g. 1,2,3)", val);
        return 2;
      }
    } else if (TAKES("--sharding")) {
      gv_shard_opts.file = val;
    } else if (TAKES("--batch")) {
      if (parse_pos_int("--batch", val, &opt.batch)) return 2;
      pa.batch_given = true;
    } else if (TAKES("--seq")) {
      if (parse_pos_int("--seq", val, &opt.seq)) return 2;
    } else if (TAKES("--seed")) {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(val, &end, 10);
      if (errno || *end || !*val || *val == '-' || v > (1ull << 53)) {
        gv_error_plain("--seed expects an integer from 0 to 2^53, got '%s'", val);
        return 2;
      }
      opt.seed = gv_train_opts.seed = v, seed_given = true;
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
      for (int k = 0; k < nshapes; k++)
        if (!strcmp(shapes[k].name, names[nshapes])) {
          gv_error_plain("--input-shape %s: input '%s' is given a shape twice", val, names[nshapes]);
          return 2;
        }
      s->name = names[nshapes];
      nshapes++;
    } else if (TAKES("--emit")) {
      emit = val;
    } else if (TAKES("--target")) {
      target = val;
    } else if (TAKES("--cuda-arch")) {
      arch_given = 1;
      cuda.arch = val;
    } else if (TAKES("--precision")) {
      if (strcmp(val, "fp32") != 0 && strcmp(val, "bf16") != 0 && strcmp(val, "fp16") != 0) {
        gv_error_plain("--precision %s: expected fp32, bf16 or fp16", val);
        return 2;
      }
      cuda.bf16 = strcmp(val, "bf16") == 0;
      fp16 = strcmp(val, "fp16") == 0;
      prec_given = val;
    } else if (TAKES("--grad-dtype")) {
      if (strcmp(val, "fp32") != 0 && strcmp(val, "bf16") != 0 && strcmp(val, "fp16") != 0) {
        gv_error_plain("--grad-dtype %s: expected fp32, bf16 or fp16", val);
        return 2;
      }
      gv_precision_opts.grad = !strcmp(val, "bf16") ? GV_DT_BF16 : !strcmp(val, "fp16") ? GV_DT_F16 : GV_DT_F32;
      grad_given = val;
    } else if (TAKES("--reduce-dtype")) {
      if (strcmp(val, "fp32") != 0 && strcmp(val, "bf16") != 0 && strcmp(val, "fp16") != 0) {
        gv_error_plain("--reduce-dtype %s: expected fp32, bf16 or fp16", val);
        return 2;
      }
      gv_precision_opts.reduce = !strcmp(val, "fp32") ? GV_DT_F32 : !strcmp(val, "bf16") ? GV_DT_BF16 : GV_DT_F16;
    } else if (strcmp(a, "--no-build") == 0) {
      build = 0;
    } else if (TAKES("-o")) {
      out = val;
    } else if (TAKES("--dump-ir-after")) {
      dump_after = val;
    } else if (TAKES("--dump-dir")) {
      dump_dir_given = 1;
      dump_dir = val;
    } else if (strcmp(a, "--verify-each") == 0) {
      verify_each = 1;
    } else if (strcmp(a, "--stats") == 0) {
      stats = 1;
    } else if (strcmp(a, "--train") == 0) {
      train = 1;
    } else if (TAKES("--loss")) {
      train_opt = "--loss";
      gv_train_opts.loss = val;
    } else if (TAKES("--labels")) {
      train_opt = "--labels";
      gv_train_opts.labels = val;
    } else if (TAKES("--optimizer")) {
      train_opt = "--optimizer";
      gv_train_opts.optimizer = val;
    } else if (TAKES("--zero-reduce")) {
      zero_reduce_given = 1;
      if (strcmp(val, "once") && strcmp(val, "per-microbatch")) {
        gv_error_plain("--zero-reduce %s: expected once or per-microbatch", val);
        return 2;
      }
      gv_train_opts.zero_reduce_each = strcmp(val, "per-microbatch") == 0;
    } else if (TAKES("--fused-attention")) {
      if (strcmp(val, "on") && strcmp(val, "off") && strcmp(val, "auto")) {
        gv_error_plain("--fused-attention %s: expected on, off or auto", val);
        return 2;
      }
      train_opt = "--fused-attention", fused_attn = !strcmp(val, "on") ? 1 : !strcmp(val, "off") ? 0 : -1;
    } else if (TAKES("--recompute")) {
      train_opt = "--recompute", recompute_given = 1;
      gv_train_opts.recompute = val;
    } else if (TAKES("--freeze") || TAKES("--trainable")) {
      train_opt = a[2] == 't' ? "--trainable" : "--freeze";
      if (nselect == (int)(sizeof select / sizeof *select)) { gv_error_plain("too many --freeze / --trainable (at most 64)"); return 2; }
      select[nselect++] = (gv_train_select){val, a[2] == 't'};
    } else if (TAKES("--ignore-index")) {
      train_opt = "--ignore-index", ignore_given = 1;
      char *end;
      gv_train_opts.ignore_index = strtoll(val, &end, 10);
      if (*end || !*val) { gv_error_plain("--ignore-index expects an integer, got '%s'", val); return 2; }
    } else if (TAKES("--lr") || TAKES("--weight-decay") || TAKES("--beta1") || TAKES("--beta2") || TAKES("--eps") ||
               TAKES("--momentum")) {
      char *end;
      double v = strtod(val, &end);
      if (*end || !*val || v < 0) { gv_error_plain("%.*s expects a non-negative number, got '%s'", (int)strcspn(a, "="), a, val); return 2; }
      const char *k = a + 2;
      snprintf(train_opt_buf, sizeof train_opt_buf, "%.*s", (int)strcspn(a, "="), a);
      train_opt = train_opt_buf;
      if (!strncmp(k, "momentum", 8)) momentum_given = 1;
      else if (!strncmp(k, "beta", 4) || !strncmp(k, "eps", 3)) adam_opt = train_opt_buf;
      double *dst = !strncmp(k, "lr", 2) ? &gv_train_opts.lr : !strncmp(k, "weight-decay", 12) ? &gv_train_opts.weight_decay
                  : !strncmp(k, "beta1", 5) ? &gv_train_opts.beta1 : !strncmp(k, "beta2", 5) ? &gv_train_opts.beta2
                  : !strncmp(k, "eps", 3) ? &gv_train_opts.eps : &gv_train_opts.momentum;
      *dst = v;
    } else if (TAKES("--clip-grad-norm")) {
      char *end;
      double v = strtod(val, &end);
      if (*end || !*val || !(v > 0) || v > 1e30) { gv_error_plain("--clip-grad-norm expects a positive number, got '%s'", val); return 2; }
      gv_train_opts.clip_grad_norm = v;
    } else if (TAKES("--loss-scale")) {
      char *end;
      double v = strtod(val, &end);
      if (!strcmp(val, "dynamic")) gv_train_opts.loss_scale_mode = 2;
      else if (*end || !*val || !(v > 0) || v > 1e38) {
        gv_error_plain("--loss-scale expects dynamic or a positive number, got '%s'", val);
        return 2;
      } else gv_train_opts.loss_scale_mode = 1, gv_train_opts.loss_scale = v;
    } else if (TAKES("--loss-scale-init") || TAKES("--loss-scale-growth") || TAKES("--loss-scale-backoff") ||
               TAKES("--loss-scale-interval")) {
      char *end;
      double v = strtod(val, &end);
      const char *k = a + 13;
      bool interval = !strncmp(k, "interval", 8), backoff = !strncmp(k, "backoff", 7), growth = !strncmp(k, "growth", 6);
      if (*end || !*val || !(v > 0) || v > 1e38 || (backoff && !(v < 1)) || (growth && !(v > 1)) ||
          (interval && (v != (double)(int64_t)v || v > 1e15))) {
        gv_error_plain("--loss-scale-%.*s expects %s, got '%s'", (int)strcspn(k, "="), k,
                       interval ? "a positive integer" : backoff ? "a number in (0, 1)" : growth ? "a number > 1" : "a positive number", val);
        return 2;
      }
      if (interval) gv_train_opts.scale_interval = (int64_t)v;
      else if (backoff) gv_train_opts.scale_backoff = v;
      else if (growth) gv_train_opts.scale_growth = v;
      else scale_init = v;
      scale_opt = 1;
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
#undef once
  }
  if (dup[0]) { /* an option given twice with different values: which one was meant? */
    gv_error_plain("%s", dup);
    return 2;
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
  /* The cluster the planner and --report-cost assume without --cluster: the
   * CUDA target's programs run on GPUs, so an H100 SXM node (80 GB: a plan
   * that fits it fits an H200 too); the CPU target's on this machine. */
  const char *default_cluster = strcmp(target, "cuda") == 0 ? "h100-sxm" : "cpu-local";
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
  /* the plan's numerics (precision, gradient dtype, clipping): taken, or the same as given; read before the checks
   * that depend on them (a missing file is reported where the plan itself is read, after the option checks) */
  if (gv_plan_opts.plan_in && access(gv_plan_opts.plan_in, F_OK) == 0) {
    gv_plan_numerics pn;
    if (gv_plan_read_numerics(gv_plan_opts.plan_in, &pn)) return 1;
    const char *clip_s = NULL;
    char cbuf[2][40];
    if (pn.clip >= 0 && gv_train_opts.clip_grad_norm > 0 && pn.clip != gv_train_opts.clip_grad_norm)
      clip_s = "--clip-grad-norm";
    snprintf(cbuf[0], sizeof cbuf[0], "%g", pn.clip), snprintf(cbuf[1], sizeof cbuf[1], "%g", gv_train_opts.clip_grad_norm);
    const char *what = pn.precision && prec_given && strcmp(pn.precision, prec_given) ? "--precision"
                       : pn.grad_dtype && grad_given && strcmp(pn.grad_dtype, grad_given) ? "--grad-dtype"
                       : pn.clip == 0 && gv_train_opts.clip_grad_norm > 0 ? "--clip-grad-norm" : clip_s;
    if (what) {
      const int p = !strcmp(what, "--precision"), g = !strcmp(what, "--grad-dtype");
      if (pn.clip == 0 && !p && !g)
        gv_error_plain("%s: the plan was made without --clip-grad-norm, but --clip-grad-norm %s is given (give the plan "
                       "alone, or the same)", gv_plan_opts.plan_in, cbuf[1]);
      else
        gv_error_plain("%s: the plan was made with %s %s, but %s %s is given (give the plan alone, or the same)",
                       gv_plan_opts.plan_in, what, p ? pn.precision : g ? pn.grad_dtype : cbuf[0], what,
                       p ? prec_given : g ? grad_given : cbuf[1]);
      return 2;
    }
    if (pn.precision && !prec_given) cuda.bf16 = !strcmp(pn.precision, "bf16"), fp16 = !strcmp(pn.precision, "fp16");
    if (pn.grad_dtype && !grad_given && train)
      gv_precision_opts.grad = !strcmp(pn.grad_dtype, "bf16") ? GV_DT_BF16 : !strcmp(pn.grad_dtype, "fp16") ? GV_DT_F16 : GV_DT_F32;
    if (pn.clip > 0 && train) gv_train_opts.clip_grad_norm = pn.clip;
  }
  /* the storage pass stores values 16-bit as the cuda target runs them: the memory plan, --report-cost and the
   * planner price that storage (docs/cuda-target.md, "Storage precision") */
  if (cuda.bf16) gv_precision_opts.storage = GV_DT_BF16;
  if (fp16) gv_precision_opts.storage = GV_DT_F16;
  if ((gv_train_opts.loss_scale_mode || scale_opt) && !train) {
    gv_error_plain("--loss-scale applies to the training step: it needs --train");
    return 2;
  }
  if ((gv_train_opts.loss_scale_mode || scale_opt) && !fp16 && !cuda.bf16) {
    gv_error_plain("--loss-scale: loss scaling is for 16-bit training (--precision fp16; bf16 allowed), not fp32");
    return 2;
  }
  if (scale_opt && gv_train_opts.loss_scale_mode == 1) {
    gv_error_plain("--loss-scale-init / -growth / -backoff / -interval tune the dynamic scale, not a static --loss-scale %g",
                   gv_train_opts.loss_scale);
    return 2;
  }
  if (fp16 && train && !gv_train_opts.loss_scale_mode) gv_train_opts.loss_scale_mode = 2; /* torch's GradScaler */
  if (scale_opt && !gv_train_opts.loss_scale_mode) gv_train_opts.loss_scale_mode = 2;
  if (scale_init > 0) gv_train_opts.loss_scale = scale_init;
  if (gv_precision_opts.grad != GV_DT_F32 && (gv_precision_opts.grad != gv_precision_opts.storage || !train)) {
    const char *g = gv_precision_opts.grad == GV_DT_BF16 ? "bf16" : "fp16";
    gv_error_plain("--grad-dtype %s: 16-bit parameter gradients are part of mixed-precision training in that dtype (give "
                   "--train --precision %s)", g, g);
    return 2;
  }
  if (gv_precision_opts.reduce != GV_DT_UNKNOWN && (!train || gv_precision_opts.storage == GV_DT_F32)) {
    gv_error_plain("--reduce-dtype: the gradient reductions' dtype is part of mixed-precision training (give --train "
                   "--precision bf16|fp16)");
    return 2;
  }
  if (gv_precision_opts.reduce != GV_DT_UNKNOWN && gv_precision_opts.reduce != GV_DT_F32 &&
      gv_precision_opts.reduce != gv_precision_opts.storage) {
    gv_error_plain("--reduce-dtype %s with --precision %s: the 16-bit reduction dtype is the program's 16-bit dtype "
                   "(one per program)", gv_precision_opts.reduce == GV_DT_BF16 ? "bf16" : "fp16",
                   gv_precision_opts.storage == GV_DT_BF16 ? "bf16" : "fp16");
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
  if (plan_only && !gv_plan_opts.active && !pa.on) {
    gv_error_plain("--plan-only needs the planner (--gpus > 1 without --strategy / --sharding, or --plan)");
    return 2;
  }
  if (gv_plan_opts.active && (gv_shard_opts.strategy || gv_shard_opts.file)) {
    gv_error_plain("--plan / --strategy auto do not combine with --strategy %s or --sharding", gv_shard_opts.strategy ? gv_shard_opts.strategy : "");
    return 2;
  }
  /* --pipeline-stages 1 alone: no pipeline (one program; the default search then plans no pipelines) */
  bool no_pipe = false;
  if (pa.on && pa.stages == 1 && !pipe_opt && !pa.nsdev && !pa.recompute && !mb_given) pa.on = false, no_pipe = true;
  /* Conflicting options: an option that the others make meaningless is one
   * error line, never silently ignored or overridden. */
  {
    bool sgd = strcmp(gv_train_opts.optimizer, "sgd") == 0, planner = gv_plan_opts.active && !pa.on;
    const char *why = NULL;
    char msg[256];
    if (train_opt && !train) snprintf(msg, sizeof msg, "%s applies to the training step: it needs --train", train_opt), why = msg;
    else if (momentum_given && !sgd)
      why = "--momentum is SGD's: it needs --optimizer sgd (AdamW takes --beta1, --beta2, --eps)";
    else if (adam_opt && sgd) snprintf(msg, sizeof msg, "%s is AdamW's: it does not combine with --optimizer sgd", adam_opt), why = msg;
    else if (ignore_given && strcmp(gv_train_opts.loss, "mse") == 0)
      why = "--ignore-index is cross_entropy's: it does not combine with --loss mse";
    else if (arch_given && strcmp(target, "cpu") == 0) why = "--cuda-arch applies to --target cuda, not --target cpu";
    else if (mb_given && !pa.on && !train)
      why = "--microbatches without --pipeline-stages accumulates gradients over microbatches: it needs --train";
    else if (zero_reduce_given && !train) why = "--zero-reduce applies to the training step: it needs --train";
    else if (zero_reduce_given && pa.on && (pa.zero == 1 || pa.zero_off))
      why = "--zero-reduce chooses the form of ZeRO-2 in pipeline stages: it does not combine with --pipeline-zero 0 or 1";
    else if (zero_reduce_given && !pa.on && !mb_given && !gv_plan_opts.plan_in && !gv_plan_opts.active) /* the planner's microbatch search takes it */
      why = "--zero-reduce chooses how accumulated gradients are reduced: it needs --microbatches (or the planner's microbatch search, --gpus N)";
    else if (pipe_opt && !pa.on) snprintf(msg, sizeof msg, "%s applies to pipelines: it needs --pipeline-stages", pipe_opt), why = msg;
    else if (search_given && gv_plan_opts.plan_in) why = "--plan-search does not combine with --plan (a saved plan is applied, not searched)";
    else if (zstages_given && !train) why = "--zero-stages applies to the training step: it needs --train";
    else if (zstages_given && gv_plan_opts.plan_in) why = "--zero-stages does not combine with --plan (the plan gives each unit's stage)";
    else if (zstages_given && !planner && !pa.on)
      why = "--zero-stages applies to the planner (--gpus > 1 without --strategy / --sharding; --strategy zero1|zero2|zero3 fixes the stage)";
    else if (search_given && !planner)
      why = "--plan-search applies to the planner (--gpus > 1 without --strategy / --sharding, not --pipeline-stages)";
    else if (memlim_given && !planner && !pa.on && !(mb_given && !pa.B))
      why = "--memory-limit applies to the planner or the pipeline stage DP (not --strategy / --sharding, nor one device, unless "
            "--train --microbatches auto)";
    else if (reserve_given && !planner && !pa.on && !(mb_given && !pa.B))
      why = "--memory-reserve applies to the planner or the pipeline stage DP (not --strategy / --sharding, nor one device, unless "
            "--train --microbatches auto)";
    else if (profile_path && !planner && !pa.on)
      why = "--profile applies to the planner or the pipeline stage DP (--gpus > 1 without --strategy / --sharding, or --pipeline-stages)";
    else if (gv_plan_opts.plan_out && !planner && !pa.on)
      why = "--plan-out writes the planner's plan: it needs the planner (--gpus > 1 without --strategy / --sharding, --plan, or "
            "--pipeline-stages)";
    else if (plan_only && report_cost) why = "--report-cost does not combine with --plan-only (planning stops before the program it costs)";
    else if (plan_only && emit) snprintf(msg, sizeof msg, "--emit=%s does not combine with --plan-only (nothing is emitted)", emit), why = msg;
    else if (dump_dir_given && !dump_after) why = "--dump-dir needs --dump-ir-after (nothing is dumped without it)";
    else if (!build && !program) why = "--no-build applies to a program output (-o DIR/): the output here is IR text";
    else if (!opt.load_weights && program && !plan_only)
      why = "--no-weights imports shapes only: a program (-o DIR/) needs the weights (--emit=ir or --plan-only take none)";
    else if (gv_shard_opts.file && gpus <= 1 && !mesh_spec) why = "--sharding pins values on a mesh: it needs --gpus > 1 or --mesh";
    if (why) {
      gv_error_plain("%s", why);
      return 2;
    }
  }
  /* Interleaved 1F1B: --pipeline-stages P device groups, V chunks each (S = P V stage programs). */
  if (pa.sched == GV_SCHED_INTERLEAVED && !pa.vstages) {
    gv_error_plain("--schedule interleaved needs --virtual-stages V (the model chunks per device group, V >= 2)");
    return 2;
  }
  if (pa.vstages && pa.sched != GV_SCHED_INTERLEAVED && !sched_auto) {
    gv_error_plain("--virtual-stages applies to --schedule interleaved (or auto, which then prices it)");
    return 2;
  }
  if (pa.vstages && !train) {
    gv_error_plain("--virtual-stages: the interleaved schedule orders training's forward and backward entries: it needs --train");
    return 2;
  }
  if (pa.vstages && (!pa.stages || pa.nsdev || (gpus > 1 && gpus % pa.stages))) {
    gv_error_plain("--virtual-stages %d: --pipeline-stages P counts the device groups (S = P x %d stages, each on its group's "
                   "devices): it needs a fixed P, groups of equal devices (--gpus a multiple of P, or none) and no "
                   "--stage-devices", pa.vstages, pa.vstages);
    return 2;
  }
  if (pa.vstages && pa.stages < 2) {
    gv_error_plain("--virtual-stages %d with --pipeline-stages %d: interleaving needs at least 2 device groups", pa.vstages, pa.stages);
    return 2;
  }
  if (pa.vstages && (int64_t)pa.stages * pa.vstages > 64) {
    gv_error_plain("--pipeline-stages %d x --virtual-stages %d: at most 64 stages", pa.stages, pa.vstages);
    return 2;
  }
  if (pa.vstages && pa.B > 0 && pa.B % pa.stages) {
    gv_error_plain("--microbatches %d with --schedule interleaved over %d device groups: the microbatches must be a multiple of %d",
                   pa.B, pa.stages, pa.stages);
    return 2;
  }
  if (pa.vstages && pa.recompute) {
    gv_error_plain("--schedule interleaved does not combine with --pipeline-recompute (the chunks run their stashing entries)");
    return 2;
  }
  /* --recompute inside pipeline stages (docs/pipeline.md, "Recomputation per layer inside stages"): forced when
   * given, else chosen per stage with the stages */
  pa.layer_rc_given = recompute_given;
  bool layer_rc_on = recompute_given && gv_train_opts.recompute && strcmp(gv_train_opts.recompute, "none");
  if (pa.on && train && layer_rc_on && pa.sched == GV_SCHED_ZBH1) {
    gv_error_plain("--recompute=%s inside pipeline stages runs under --schedule 1f1b, gpipe or interleaved (ZB-H1's "
                   "weight-gradient entry reads the stash)", gv_train_opts.recompute);
    return 2;
  }
  /* --plan FILE holding a pipelined plan (the default search's choice): the same stages, compiled as
   * --pipeline-stages compiles them (docs/planner.md, "Pipelines in the default search") */
  const char *pipe_plan_path = NULL; /* a pipelined plan's file (its stages read into pa) */
  if (gv_plan_opts.plan_in && !pa.on) {
    bool found = false;
    if (galvc_plan_read_pipeline(gv_plan_opts.plan_in, &pa, &found)) return 1;
    if (found) {
      int64_t sum = 0;
      for (int i = 0; i < pa.nsdev; i++) sum += pa.sdev[i];
      if (pa.vstages > 1) sum /= pa.vstages; /* interleaved: a device group's V stages share its devices */
      if (gpus_given && sum != gpus) {
        gv_error_plain("%s: the plan's %d pipeline stages have %lld devices in all, but --gpus is %lld", gv_plan_opts.plan_in,
                       pa.stages, (long long)sum, (long long)gpus);
        return 2;
      }
      if (mesh_spec || mb_given || recompute_given) {
        gv_error_plain("%s: a pipelined plan gives the stages, their devices and microbatches: it does not combine with %s",
                       gv_plan_opts.plan_in, mesh_spec ? "--mesh" : mb_given ? "--microbatches" : "--recompute");
        return 2;
      }
      if (!train && pa.sched != GV_SCHED_1F1B) pa.sched = GV_SCHED_1F1B;
      if (pa.preset) { /* the stages' preset, as if given (--plan refuses --strategy and --mesh beside it, above) */
        gv_shard_opts.strategy = pa.preset;
        if (pa.preset_mesh) mesh_spec = pa.preset_mesh;
      }
      pipe_plan_path = gv_plan_opts.plan_in;
      gv_plan_opts.plan_in = NULL; /* --plan-out (or -o DIR/'s plan.json) records the replayed stages */
    }
  }
  /* --stage-devices: one count per stage, summing to --gpus (or giving it) */
  if (pa.nsdev) {
    int64_t sum = 0;
    for (int i = 0; i < pa.nsdev; i++) sum += pa.sdev[i];
    if (!pa.on || !pa.stages || pa.nsdev != pa.stages) {
      gv_error_plain("--stage-devices has %d entries: it needs a fixed --pipeline-stages with as many stages", pa.nsdev);
      return 2;
    }
    if (pa.vstages > 1 && pipe_plan_path) sum /= pa.vstages; /* a plan's interleaved stages: V on each device group */
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
    bool tp_sp = strcmp(st, "tp,sp") == 0; /* one tp axis: sequence parallelism needs no other */
    if (strchr(st, ',') && !tp_sp) {
      gv_error_plain("--strategy %s needs --mesh (e.g. --mesh dp=2,tp=4)", st);
      return 2;
    }
    axn[0] = strcmp(st, "tp") == 0 || tp_sp ? "tp" : "dp";
    axs[0] = pa.stages ? gpus / pa.stages : gpus; /* pipeline stages: resized per stage (stage_mesh) */
    naxes = 1;
  }
  if (gv_shard_opts.strategy) {
    char sb[64];
    bool has_tp = false, has_sp = false;
    snprintf(sb, sizeof sb, "%s", gv_shard_opts.strategy);
    for (char *t = strtok(sb, ","); t; t = strtok(NULL, ",")) {
      if (strcmp(t, "dp") && strcmp(t, "tp") && strcmp(t, "zero") && strcmp(t, "zero1") && strcmp(t, "zero2") && strcmp(t, "zero3") &&
          strcmp(t, "sp")) {
        gv_error_plain("--strategy %s: unknown strategy '%s' (known: dp, tp, zero1, zero2, zero3 (= zero), dp,tp, zero1,tp, tp,sp, "
                       "dp,tp,sp, ...)", gv_shard_opts.strategy, t);
        return 2;
      }
      has_tp |= !strcmp(t, "tp"), has_sp |= !strcmp(t, "sp");
    }
    if (has_sp && !has_tp) {
      gv_error_plain("--strategy %s: sp (sequence parallelism) splits the values between tensor-parallel blocks over the "
                     "sequence: it needs tp (--strategy tp,sp or dp,tp,sp)", gv_shard_opts.strategy);
      return 2;
    }
  }
  if (gpus_per_node && gpus % gpus_per_node && gpus > gpus_per_node) {
    gv_error_plain("--gpus %lld is not a whole number of nodes of %lld", (long long)gpus, (long long)gpus_per_node);
    return 2;
  }
  gv_cluster cluster;
  memset(&cluster, 0, sizeof cluster); /* not loaded without --cluster / --report-cost / a plan */
  bool mb_auto = train && !pa.on && mb_given && !pa.B; /* --microbatches auto: the smallest B that fits */
  if ((cluster_spec || report_cost || gv_plan_opts.active || mb_auto || gv_shard_opts.bucket_bytes == GV_BUCKET_AUTO) && gv_cluster_load(cluster_spec ? cluster_spec : default_cluster, &cluster))
    return 2;
  /* Nodes of the cluster's kind as many as the devices need (--gpus-per-node overrides the node size). */
  if (gpus_per_node) cluster.devices_per_node = gpus_per_node;
  if (cluster.devices_per_node > 0 && gpus > cluster.devices_per_node * cluster.nodes) cluster.nodes = (gpus + cluster.devices_per_node - 1) / cluster.devices_per_node;
  cluster.fused_attention = strcmp(target, "cuda") == 0 && !(train && (cuda.bf16 || fp16)); /* as codegen/cuda fuses attention */
  /* the 16-bit conversion scratch priced is the target's: the CPU kernels widen 16-bit operands to fp32 */
  gv_cost_convert_fn = strcmp(target, "cpu") == 0 ? gv_cpu_convert_scratch : NULL;
  /* training's galv.attention (docs/fused-attention.md): auto fuses where gv_attn_train_kernel (ir/attention.c)
   * says a kernel runs it by default; on wherever a kernel runs it, elsewhere only priced under --plan-only */
  int fattn_kernel = gv_attn_train_kernel(target, cuda.bf16 ? GV_DT_BF16 : fp16 ? GV_DT_F16 : GV_DT_F32);
  int fattn = gv_attn_train_fuse(fattn_kernel, fused_attn, plan_only);
  if (fattn < 0) {
    gv_error_plain("--fused-attention on: no --target %s kernel runs fused attention with --precision %s (only "
                   "priced, under --plan-only)", target, cuda.bf16 ? "bf16" : fp16 ? "fp16" : "fp32");
    return 2;
  }
  gv_train_opts.unfused_attention = !fattn;
  gv_plan_opts.cluster = &cluster;
  if (reserve_given && !pa.on && apply_reserve(&cluster, reserve_frac, reserve_bytes, quiet)) return 2;
  static gv_profile profile;
  if (profile_path) {
    if (gv_profile_load(profile_path, &profile)) return 2;
    gv_plan_opts.profile = &profile;
  }
  gv_plan_opts.devices = gpus;
  gv_plan_opts.mesh_fixed = mesh_spec != NULL;
  gv_plan_opts.quiet = quiet; /* -q: errors only, --plan-only too (the plan: --plan-out) */
  static char planpath[4096];
  if (gv_plan_opts.active && !gv_plan_opts.plan_out) {
    if (out && is_dir_arg(out)) {
      if (ensure_dir(out)) {
        gv_error_plain("%s: cannot create output directory: %s", out, strerror(errno));
        return 1;
      }
      snprintf(planpath, sizeof planpath, "%s%splan.json", out, out[strlen(out) - 1] == '/' ? "" : "/");
    } else if (out) { /* -o FILE (the IR): plan.json next to it */
      const char *slash = strrchr(out, '/');
      snprintf(planpath, sizeof planpath, "%.*splan.json", slash ? (int)(slash - out + 1) : 0, out);
    }
    if (out) gv_plan_opts.plan_out = planpath; /* no -o (IR on stdout): only with --plan-out */
  }
  gv_shard_opts.quiet = quiet;
  opt.shapes = shapes;
  opt.nshapes = nshapes;
  opt.select = select;
  opt.nselect = nselect;

  /* Training pipelines run 1F1B unless told; --schedule auto chooses by
   * timeline, running the stage DP per schedule (ZB-H1's weight-gradient
   * entries priced from each stage's entries compiled with the W split:
   * more planning time; docs/pipeline.md, "Schedules"). */
  if (train && pa.sched == GV_SCHED_AUTO && !sched_auto) pa.sched = GV_SCHED_1F1B;
  if (gv_train_opts.clip_grad_norm > 0 && !train) {
    gv_error_plain("--clip-grad-norm applies to training: it needs --train");
    return 2;
  }
  if (pa.recompute && (!pa.on || !train)) {
    gv_error_plain("--pipeline-recompute applies to pipeline training: it needs --train and --pipeline-stages");
    return 2;
  }
  if (pa.zero && (!pa.on || !train)) {
    gv_error_plain("--pipeline-zero applies to pipeline training: it needs --train and --pipeline-stages");
    return 2;
  }
  if (zero_reduce_given && pa.on) { /* ZeRO-2's form in the stages (the runtime's); the stage programs accumulate nothing */
    pa.zero_reduce = gv_train_opts.zero_reduce_each ? 2 : 1;
    gv_train_opts.zero_reduce_each = false;
  }
  { /* training stages over more than one rank reduce their data-parallel gradients once per step (runtime/pipe.c,
     * galv_pipe_zero 4, on either target: the CUDA stages run the same schedule on device buffers), the reduction in
     * the sums' dtype (--reduce-dtype another: per microbatch) */
    const gv_dtype sums = gv_precision_opts.grad != GV_DT_F32 && gv_precision_opts.storage != GV_DT_F32 ? gv_precision_opts.grad : GV_DT_F32;
    gv_pipe_opts.grad_once = gv_precision_opts.reduce == GV_DT_UNKNOWN || gv_precision_opts.reduce == sums;
  }
  gv_pipe_opts.relay = train; /* training stages relay a floating-point value read past the next stage (stage_extract.c) */
  if (pa.sched == GV_SCHED_ZBH1 && pa.recompute) {
    gv_error_plain("--schedule zb-h1 splits each stage's stashed backward into its input- and weight-gradient entries: "
                   "it does not combine with --pipeline-recompute");
    return 2;
  }
  if (pa.on && cuda.bf16 && strcmp(target, "cuda") == 0 && !plan_only && !train) {
    gv_error_plain("--pipeline-stages with --precision bf16 --target cuda: bf16 inference stages are not supported on the "
                   "cuda target yet (training stages are; inference stages run on the cpu target; --plan-only prices them)");
    return 2;
  }
  if (pa.on) {
    if (gv_shard_opts.file || gv_plan_opts.plan_in || (mesh_spec && !gv_shard_opts.strategy)) {
      gv_error_plain("--pipeline-stages: %s", gv_shard_opts.file || gv_plan_opts.plan_in
                                                 ? "--sharding and --plan FILE do not combine with it (a pipeline's plan.json "
                                                   "replays with --plan alone)"
                                                 : "--mesh shapes the stages of a preset: give --strategy dp|tp|dp,tp|dp,tp,sp "
                                                   "with it (without both, the planner chooses each stage's mesh)");
      return 2;
    }
    gv_plan_opts.active = false;
    pa.plan_out = gv_plan_opts.plan_out; /* --plan-out: the stage DP's plan.json (its stages, each stage's way) */
    pa.naxes = gv_shard_opts.strategy ? naxes : 0;
    pa.mesh_given = mesh_spec != NULL;
    for (int a = 0; a < pa.naxes; a++) pa.axn[a] = axn[a], pa.axs[a] = axs[a];
    /* the cluster as loaded (not grown for the planner above): one node of max(S, --gpus) unless --gpus-per-node */
    if (gv_cluster_load(cluster_spec ? cluster_spec : default_cluster, &cluster)) return 2;
    if (reserve_given && apply_reserve(&cluster, reserve_frac, reserve_bytes, quiet)) return 2;
    cluster.fused_attention = strcmp(target, "cuda") == 0 && !(train && cuda.bf16); /* as codegen/cuda fuses attention */
    if (gpus_per_node) cluster.devices_per_node = gpus_per_node;
    int64_t need = gpus > pa.stages ? gpus : pa.stages;
    if (pa.vstages && need < need * pa.vstages) need *= pa.vstages; /* the DP's view: each of the P V stages on its own devices */
    if (!gpus_per_node && need > cluster.devices_per_node * cluster.nodes) cluster.devices_per_node = need, cluster.nodes = 1;
    else if (cluster.devices_per_node > 0 && need > cluster.devices_per_node * cluster.nodes)
      cluster.nodes = (need + cluster.devices_per_node - 1) / cluster.devices_per_node;
    if (pa.cuts_given && gv_pipe_opts.layers && gv_pipe_opts.layers != pa.layers) {
      gv_error_plain("%s: the plan's stages cut %d layer groups: it does not combine with --layers %d", pipe_plan_path,
                     pa.layers, gv_pipe_opts.layers);
      return 2;
    }
    if (!pa.cuts_given) pa.layers = gv_pipe_opts.layers; /* a plan.json's groups are its own (layer_groups) */
    pa.plan_only = plan_only;
    pa.report_cost = report_cost;
    return compile_pipeline(model, opt, &pa, gpus, &cluster, out, quiet, build, verify_each, train,
                            strcmp(target, "cuda") == 0 ? &cuda : NULL) ? 1 : 0;
  }
  /* Gradient accumulation (--microbatches B, no pipeline): the import at the
   * microbatch size, the accumulate pass restores the batch. B is fixed, or
   * the smallest divisor of the batch whose program fits (--microbatches
   * auto; and training plans of the planner when the whole batch fits no
   * plan): a B that does not fit is dropped and the next one compiled. */
  if (train && gv_plan_opts.plan_in) { /* the plan's dropout seed: taken, or the same as --seed */
    uint64_t ps;
    bool found;
    if (gv_plan_read_seed(gv_plan_opts.plan_in, &ps, &found)) return 1;
    if (found && seed_given && ps != opt.seed) {
      gv_error_plain("%s: the plan was compiled with --seed %llu: it conflicts with --seed %llu (give the plan alone, or the same)",
                     gv_plan_opts.plan_in, (unsigned long long)ps, (unsigned long long)opt.seed);
      return 2;
    }
    if (found) opt.seed = gv_train_opts.seed = ps;
  }
  const gv_import_options opt0 = opt;
  int64_t global_batch = 0;
  /* The default search (docs/planner.md, "Pipelines in the default search"): with the planner on more than one
   * device and nothing that fixes one program's shape, pipelines of S >= 2 stages are planned too and the faster
   * predicted step is compiled; when one program fits no plan, the pipeline is taken. */
  bool joint = gv_plan_opts.active && !gv_plan_opts.plan_in && !no_pipe && gpus > 1 && !mesh_spec && !mb_given &&
               !recompute_given && !(gv_train_opts.loss_scale_mode && strcmp(target, "cuda") == 0) &&
               gv_precision_opts.grad == GV_DT_F32 && (plan_only || program) && !report_cost && !dump_after &&
               !(cuda.bf16 && strcmp(target, "cuda") == 0 && !plan_only && !train);
  galvc_pipe_choice jc = {0};
  if (joint) {
    pipe_args pj = pa;
    pj.layers = gv_pipe_opts.layers, pj.plan_only = plan_only, pj.naxes = 0, pj.mesh_given = false;
    const bool blocks0 = gv_pipe_opts.blocks;
    if (galvc_pipeline_search(model, opt0, &pj, gpus, &cluster, quiet, train, &jc) < 0) return 1;
    gv_pipe_opts.blocks = blocks0; /* the pipelines' groups (blocks under --profile) are theirs, kept for them alone */
    if (!quiet && jc.layers >= 0 && jc.layers < 2)
      fprintf(stderr, "galvc: default search: no pipelines (the model has %d layer%s found by structure; a pipeline cuts between "
                      "two or more)\n", jc.layers, jc.layers == 1 ? "" : "s");
    if (jc.layers < 2) joint = false;
  }
  if (train && gv_plan_opts.plan_in) { /* a plan's microbatches: taken, or the same as --microbatches */
    int64_t pb;
    bool each;
    if (gv_plan_read_microbatches(gv_plan_opts.plan_in, &pb, &each)) return 1;
    if ((mb_given && pa.B != pb) || (zero_reduce_given && !pa.on && each != gv_train_opts.zero_reduce_each)) {
      gv_error_plain("%s: the plan accumulates %lld microbatch%s (--zero-reduce %s): it conflicts with --microbatches / "
                     "--zero-reduce (give the plan alone, or the same)", gv_plan_opts.plan_in, (long long)pb, pb > 1 ? "es" : "",
                     each ? "per-microbatch" : "once");
      return 2;
    }
    if (pb > 1) mb_given = 1, pa.B = (int)pb, gv_train_opts.zero_reduce_each = each;
    const char *prc; /* the plan's recomputation: taken, or the same as --recompute */
    if (gv_plan_read_recompute(gv_plan_opts.plan_in, &prc)) return 1;
    if (prc && recompute_given && strcmp(prc, gv_train_opts.recompute)) {
      gv_error_plain("%s: the plan was priced with --recompute=%s: it conflicts with --recompute=%s (give the plan alone, or "
                     "the same)", gv_plan_opts.plan_in, prc, gv_train_opts.recompute);
      return 2;
    }
    if (prc) gv_train_opts.recompute = prc, recompute_given = 1;
  }
  bool mb_search = mb_auto || (train && !pa.on && !mb_given && gv_plan_opts.active && !gv_plan_opts.plan_in);
  int B = train && !pa.on && mb_given ? (pa.B ? pa.B : 1) : 1;
  /* Recomputation searched with the microbatches (the planner's default
   * training search, no --recompute): none first; when its plan was
   * memory bound (more than one microbatch, or a faster candidate over the
   * memory limit), selective and all too, each with the fewest microbatches
   * that fit, and the fastest predicted step wins (then compiled again
   * unless it was the last one tried). */
  static const char *const rc_modes[] = {"none", "selective", "all"};
  enum { NRC = 3 };
  const int B0 = mb_given && !mb_auto ? (pa.B ? pa.B : 1) : 1; /* each recomputation's first microbatch count */
  bool rc_search = train && !pa.on && !recompute_given && gv_plan_opts.active && !gv_plan_opts.plan_in &&
                   (mb_search || mb_given);
  memset(rc_na, 0, sizeof rc_na);
  const int rc_ops0 = rc_search ? rc_mode_ops(model, opt, rc_modes[0]) : -1;
  for (int r = 1; rc_search && r < NRC; r++) { /* the modes the model admits (one import each; no weights read) */
    const int n = rc_mode_ops(model, opt, rc_modes[r]);
    rc_na[r] = n < 0 || n == rc_ops0;
    if (rc_na[r] && !quiet)
      fprintf(stderr, "galvc: recompute=%s does not apply to this model (%s): not searched\n", rc_modes[r],
              n >= 0 && r == 1 ? "it recomputes nothing here: the attention is fused, its scores are not kept; the program is "
                                 "recompute=none's"
              : n >= 0 ? "it recomputes nothing here: the program is recompute=none's"
              : r == 1 ? "no attention core dot -> softmax -> dot in its forward" : "no repeated blocks");
  }
  int rc_mode = 0, rc_B[NRC] = {0};
  int64_t rc_step[NRC] = {0};
  /* More microbatches than the fewest that fit: while the plan is memory
   * bound (a faster candidate was over the limit) each count's smaller
   * microbatch may let a faster plan fit; twice the count (dividing the
   * batch) is tried while the predicted step improves, MB_MORE times at
   * most, and the fastest count is compiled. */
  enum { MB_MORE = 3 };
  int mb_best_B = 0, mb_more = 0;
  int64_t mb_best_step = 0, mb_best_mem = 0;
  bool mb_best_mbound = false;
  /* The fastest step realised so far of a plan that fits (a search's choice realised in full, or a stand-in's choice
   * compiled at its count): the later searches of the default search leave out the combinations whose bound is above
   * it (gv_plan_opts.incumbent_ns; GALV_PLAN_INCUMBENT=off: none) */
  int64_t incumbent = 0, incumbent_real = 0; /* ... of the steps realised (incumbent: also the deferred choices' priced) */
  const bool inc_on = galvc_incumbent_on();
  const bool count_skip = !getenv("GALV_COUNT_SKIP_OFF"); /* counts a probe shows cannot fit are not probed */
  /* the default search's pipelines of equal stages planned as the preset first (cheap: no search per stage): a realised
   * step one program's searches are bounded by like their own (docs/planner.md, "The fastest step so far") */
  if (joint && train && inc_on) {
    if (galvc_pipeline_early(&jc) < 0) return 1;
    if (jc.found) incumbent = incumbent_real = jc.step_ns;
    if (jc.found && !quiet)
      fprintf(stderr, "galvc: default search: the pipeline's step %.3f ms (its preset stages, realised) bounds one program's "
                      "searches\n", (double)jc.step_ns / 1e6);
  }
  bool any_bounded = false; /* a recomputation ended with every candidate bounded above the fastest step so far */
  bool mb_final = false;
  /* the point of the search (recomputation, microbatches) whose smallest candidate needs the least memory: when
   * nothing fits anywhere, the planner's error line is that point's (the true minimum over the points tried) */
  int64_t lm_mem = -1;
  const char *lm_rc = NULL; /* ... when the last layer not recomputed needed less: its recompute list (nofit_list) */
  static char nofit_list[64];
  bool nofit_probed = false, nofit_probe = false;
  int lm_mode = 0, lm_B = 0;
  bool err_final = false;
  int64_t lmo_mem = -1; /* ... of the points probed on their own programs (the counts' own programs start from it) */
  int lmo_mode = 0, lmo_B = 0;
  gv_plan_outcome lmo_out = {0};
  static need_recs nrec[NRC]; /* the failed probes' least needs per mode (next_own_count) */
  memset(nrec, 0, sizeof nrec);
  /* the modes' order: none, selective, all; on the counts' own programs the least need recorded first (so the least
   * need seen drops early and bounds more counts of the others) */
  int rc_ord[NRC] = {0, 1, 2};
  gv_plan_outcome lm_out = {0}; /* that point's outcome (the default search's joint error reads it) */
  /* Counts priced from two microbatches (docs/planner.md, "Microbatch counts priced"): while the driver searches
   * counts, a count B > 2 is planned on the program of 2 microbatches of batch / B samples, priced for B (the
   * planner repeats the second microbatch); the count chosen is then compiled at B with that plan, realised in
   * full (the estimate and the realised step printed). When the realised program does not fit, B is planned in
   * full as before. */
  bool mb_stand = train && !pa.on && gv_plan_opts.active && !gv_plan_opts.plan_in && !mb_auto &&
                  (mb_search || rc_search || (mb_given && B > 2)) && !getenv("GALV_COUNT_FULL");
  bool count_real = false, count_full = false, rc_search0 = rc_search;
  static gv_plan stand_plan; /* the stand-in's choice, compiled at its count */
  enum { STAND_TRIES = 2 };   /* budget corrections before a count is planned in full */
  int64_t stand_est = 0, stand_mem = 0, stand_cut = 0, stand_lim = 0; /* a stand-in's budget correction: the limit less the excess realised */
  int stand_tries = 0;
  /* One planner run for the counts (docs/planner.md, "One planner run per recomputation"): when the whole batch
   * (or the fewest count that fits) is memory bound or fits no plan, the next run is the stand-in at count_top
   * (count_top_of), not each count in turn; its choice is compiled at the fewest of count_top's divisors its
   * memory, scaled with the microbatch size, fits (count_pick), above the counts that fit no plan (rc_fail) and
   * those it realised over the limit at (pick_over); the estimate and the realised step and memory printed. */
  int count_top = 0, rc_fail[NRC] = {0}, rc_fit[NRC] = {0}, pick_over = 0, pick_from = 0; /* rc_fit: the most searched that fit */
  int64_t pick_mem = 0;
  static gv_plan_cost pick_cost; /* the stand-in's priced figures (count_pick again after an over-limit realisation) */
  bool real_stored = false, stand_mbound = false; /* compiling a choice again; the priced search's memory_bound */
  static gv_plan mb_best_plan, rc_plan[NRC];      /* the choices compiled at a picked count (compiled again as they are) */
  int mb_best_from = 0, rc_from[NRC] = {0};       /* ... the count they were priced at (0: planned again) */
  const int64_t mem_limit_user = gv_plan_opts.memory_limit;
  /* Recomputation on some layers (docs/planner.md, "Recomputation on some layers"): after the recomputation search,
   * each recomputing mode's plan (at its count) is realised in full with its first k layers recomputed and none on
   * the rest (recompute=first:k or selective:first:k, passes/recompute.c): k = 0 first, then the fewest k that fit,
   * searched between the bounds known (part_next; memory only grows as layers stop recomputing, the step only shrinks,
   * so a k that does not fit with a step no faster than the best so far ends the mode: every k that fits is slower);
   * the modes in order of their steps. The
   * fastest of these and the uniform modes' is compiled (its plan.json records first:k, as --recompute=first:k gives
   * it). GALV_RECOMPUTE_PARTIAL=off: the uniform modes alone. */
  static gv_plan part_plan, part_win_plan;
  static char part_list[64], part_win[64];
  int part_mode = -1, part_k = -1, part_lo = 0, part_hi = 0, part_L = 0, part_q[2] = {0}, part_nq = 0, part_qi = 0;
  int part_win_mode = -1, part_win_k = 0, part_win_B = 0;
  int64_t part_step = 0, part_mem = 0, part_best = 0, part_win_mem = 0;
  bool part0_fits = false; /* the first mode's k = 0: whether it fit, its step and memory */
  int64_t part0_step = 0, part0_mem = 0, part_lo_step = 0, part_lo_mem = 0, part_limit = 0, rc_mem[NRC] = {0};
  const char *part_env = getenv("GALV_RECOMPUTE_PARTIAL");
  const bool part_search = !(part_env && !strcmp(part_env, "off"));
  /* ... at a count B >= stand_min() searched on the stand-in first (part_stand_next; GALV_RECOMPUTE_PARTIAL=full: each k
   * realised in full) */
  const bool part_stand_on = mb_stand && !(part_env && !strcmp(part_env, "full"));
  const int stand_lo = stand_min();
  static part_stand_st ps;
  bool part_ps = false, part_stand = false, part_inc = false; /* this mode on the stand-in; this k priced; part_best an incumbent's */
  const char *plan_out_user = gv_plan_opts.plan_out;
  /* the polish (gv_plan_polish): where the planner chose the plan (not --plan, not --sharding) */
  const bool polish = gv_plan_opts.active && !gv_plan_opts.plan_in && !gv_shard_opts.file;
  bool polished_once = false;
  /* polish_run: the plan compiled after the polish: 1 the polished plan, 2 the choice again. At a count B >= stand_min()
   * (stand-ins on) the choice is priced on the stand-in first (polish_priced) and the polish prices each change there,
   * realising in full only those priced faster within the limit (docs/planner.md, "The polish priced from two
   * microbatches"); GALV_PLAN_POLISH=full: each change realised in full as before */
  int polish_run = 0;
  bool polish_priced = false, polish_explained = false; /* the stand-in's run; the report explains its program */
  bool report_priced = false; /* that run for the report alone (--plan: no polish) */
  static gv_plan polish_base;                           /* the choice */
  const char *polish_env = getenv("GALV_PLAN_POLISH");
  const bool polish_stand_on = mb_stand && !(polish_env && !strcmp(polish_env, "full"));
  /* a recomputation mode's count choice not realised while the modes are searched (docs/planner.md, "A mode's count
   * realised only when it wins"): its priced figures stand for it (the bound of the later searches, rc_step, the
   * reference of its search on fewer layers, whose correction is then taken at the first k realised) and it is
   * compiled at its count only if it wins; realised slower than priced by VIRT_OFF or than another mode, the modes
   * are compared again with its figures realised. GALV_COUNT_DEFER=off: realised at once as before; =skew:P (tests): the priced step
   * taken P % lower, as an estimate that far off would be */
  const char *defer_env = getenv("GALV_COUNT_DEFER");
  const bool defer_on = !(defer_env && !strcmp(defer_env, "off"));
  const double defer_skew = defer_env && !strncmp(defer_env, "skew:", 5) ? atof(defer_env + 5) / 100.0 : 0.0;
  bool count_virtual = false, mb_best_virtual = false, rc_virtual[NRC] = {0}; /* the figures priced, not realised */
  int64_t virt_price = 0, mb_best_price = 0, rc_price[NRC] = {0}; /* ... their price (the step but under skew:P) */
  int virt_final = -1; /* the mode whose priced choice is realised as the winner */
  if (rc_search) gv_train_opts.recompute = rc_modes[0];
  if (train && !pa.on && mb_given && galvc_microbatch_shapes(model, &opt, &pa, mb_auto ? 0 : B, &global_batch)) return 1;
  gv_module *m = NULL;
  int rc = 0;
retry:
  rc = 0;
  count_virtual = false;
  incumbent = inc_now(incumbent_real, rc_B, rc_price, rc_virtual, NRC, mb_best_B, mb_best_price, mb_best_virtual);
  gv_train_opts.microbatches = B;
  gv_plan_opts.count_as = (part_stand || polish_priced || (part_k < 0 && mb_stand && !count_real && !count_full)) && B > 2 ? B : 0;
  /* not at a mode's first count: there the search also answers whether anything fits at all, and a bound that left
   * out the combinations that fit would send the mode to more microbatches for plans no faster (the rest); but where
   * the default search has a pipeline (galvc_pipeline_early: compiled when no one program beats it) the first counts
   * are bounded too: what the bound leaves out cannot beat the fastest step realised so far, the pipeline's or a
   * faster one program's (a mode whose every combination is bounded at its first count ends there: on Llama2-7B,
   * recompute=all) */
  const bool inc_pipe = joint && jc.found;
  gv_plan_opts.incumbent_ns = inc_on && part_k < 0 && !mb_final && !polish_priced && (rc_search || mb_search) && (B != B0 || inc_pipe) ? incumbent : 0;
  /* a recomputing mode searched for its plan on every layer stands for its plans on fewer layers too (the search on
   * fewer layers starts from it): those recompute less, down to none's compute, so its candidates are bounded against
   * 4/3 of the step to beat (recomputing every layer's forward adds at most a third of a layer's forward and backward;
   * a candidate whose bound is above that has no variant on fewer layers under the step either). Bounded against the
   * step itself, recompute=all on Llama2-7B with Galvatron's profile on 16 GPUs / 80 GiB was left out at its first
   * count, and with it first:24, the fastest plan (3952.974 against 3978.953 ms) */
  if (gv_plan_opts.incumbent_ns > 0 && rc_search && rc_mode > 0 && part_search)
    gv_plan_opts.incumbent_ns += gv_plan_opts.incumbent_ns / 3;
  /* a stand-in whose choice the pipeline's step rules out (JOINT_ONE_OVER below) is not realised in full: the reduced
   * programs' prediction is enough to rule it out (GALV_JOINT_OVER_REALISE=1: realised as before) */
  gv_plan_opts.over_ns = gv_plan_opts.count_as && joint && jc.found && incumbent == jc.step_ns && !part_stand && !polish_priced &&
                                 !getenv("GALV_JOINT_OVER_REALISE")
                             ? (int64_t)(JOINT_ONE_OVER * (double)incumbent)
                             : 0;
  if (gv_plan_opts.count_as) gv_train_opts.microbatches = 2;
  gv_plan_opts.plan_fixed = part_k >= 0 ? &part_plan : polish_priced ? &polish_base : count_real ? &stand_plan : NULL;
  gv_plan_opts.plan_out = gv_plan_opts.count_as || part_k >= 0 ? NULL : plan_out_user; /* the count's own program writes the plan */
  gv_plan_opts.memory_limit = gv_plan_opts.count_as && stand_cut && !part_stand && !polish_priced ? stand_lim - stand_cut : mem_limit_user;
  if ((B > 1 || global_batch) && galvc_microbatch_shapes(model, &opt, &pa, B, &global_batch)) return galvc_microbatch_done(), 1;
  int next_B = 0; /* the next candidate when this B does not fit (found when needed) */
  /* the planner: no plan fits is 1, not an error line (a given count's stand-in too: then planned in full for its own line) */
  gv_plan_opts.probe = !err_final && (mb_search || rc_search || joint || gv_plan_opts.count_as || count_real);
  /* a run galvc may compile keeps its plan for the report's runner-up per layer group (gv_plan_explain, once chosen) */
  gv_plan_opts.explain = (!quiet || polish) && (!gv_plan_opts.count_as || polish_priced) && !polish_explained;
  double t0 = now();
  m = gv_import_onnx(model, &opt);
  if (!m) return galvc_microbatch_done(), 1;
  if (naxes && !gv_module_add_mesh(m, "m", naxes, axn, axs)) rc = 1;
  if (stats) print_stats(m, "import");
  if (!quiet) fprintf(stderr, "galvc: imported %s: %d ops (%.3f s)\n", model, count_ops(m->main->body), now() - t0);
  char inputs[1024], run_args[1024];
  describe_inputs(m, "%1$s %2$s", ", ", inputs, sizeof inputs);
  describe_inputs(m, train ? "%1$s" : "--input %1$s=FILE.npy", train ? ", " : " ", run_args, sizeof run_args);
  if (!quiet) fprintf(stderr, "galvc: inputs %s (symbolic dims: --batch %lld, --seq %lld)\n", inputs, (long long)opt.batch, (long long)opt.seq);
  if (!quiet && train) gv_print_trainable(m->main, "galvc", stderr);
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
    double t = now(), tc = cpu_now();
    if (strcmp(p->name, "propagate-sharding") == 0 && gv_plan_opts.active) {
      int pr = gv_pass_plan_sharding(m);
      gv_plan_opts.over_ns = 0; /* this run's alone (not the pipelines' stage searches) */
      if (nofit_probe) { /* nothing fitting elsewhere: the least need's mode with the last layer not recomputed */
        nofit_probe = false;
        if (pr < 0) { rc = 1; break; }
        if (pr || gv_plan_last.cost.mem_total > gv_plan_last.limit) { /* no plan here either: its need, where less */
          const int64_t need = pr ? gv_plan_last.min_mem : gv_plan_last.cost.mem_total;
          if (!quiet)
            fprintf(stderr, "galvc: recompute=%s, %d microbatch%s: no plan fits either (its least need %lld bytes)\n",
                    gv_train_opts.recompute, B, B > 1 ? "es" : "", (long long)need);
          if (need >= 0 && need < lm_mem) lm_mem = need, lm_out = gv_plan_last, lm_B = B, lm_rc = nofit_list;
          gv_module_free(m);
          m = NULL;
          goto nofit_end;
        }
        if (!quiet)
          fprintf(stderr, "galvc: recompute=%s, %d microbatch%s: fits (%lld bytes per device), where recomputing every layer "
                          "does not\n", gv_train_opts.recompute, B, B > 1 ? "es" : "", (long long)gv_plan_last.cost.mem_total);
      }
      if (polish_priced) { /* the choice priced on the stand-in: polished there, the polished plan realised next */
        polish_priced = false;
        if (pr < 0) { rc = 1; break; }
        static gv_plan pol;
        int q = 0;
        if (!pr) {
          polish_explained = true; /* the report explains on the stand-in kept (the count compiled next keeps none) */
          q = report_priced ? 0 : gv_plan_polish(&pol, quiet ? NULL : stderr);
          if (q < 0) { rc = 1; break; }
        }
        gv_module_free(m);
        stand_plan = q > 0 ? pol : polish_base, pick_from = B, count_real = real_stored = true, polish_run = q > 0 ? 1 : 2;
        goto retry;
      }
      if (polish_run) { /* the polished choice compiled (gv_plan_polish below), or the choice again: nothing more decided */
        const int mode = polish_run;
        polish_run = 0, count_real = real_stored = false;
        if (pr) { rc = 1; break; }
        if (mode == 1 && !quiet)
          fprintf(stderr, "galvc: the polished plan compiled: predicted step %.3f ms, %lld bytes per device\n",
                  (double)gv_plan_last.cost.step_ns / 1e6, (long long)gv_plan_last.cost.mem_total);
        goto polished;
      }
      if (part_k >= 0) { /* a recomputing mode's plan with its first part_k layers recomputed: realised in full, or priced */
        if (pr < 0) { rc = 1; break; }
        bool fits = !pr && gv_plan_last.cost.mem_total <= gv_plan_last.limit;
        int64_t step = gv_plan_last.cost.step_ns;
        bool end = false;
        int64_t mem = gv_plan_last.cost.mem_total;
        part_limit = gv_plan_last.limit;
        if (part_stand) { /* priced on the stand-in: its figures kept; the correction's reference when k is a bound */
          ps.mem[part_k] = pr ? PART_NONE : mem, ps.step[part_k] = pr ? PART_NONE : step, ps.priced++;
          if (part_k == ps.fh && !pr) ps.cmem = ps.fh_mem - mem, ps.cstep = ps.fh_step - step;
          if (!quiet) {
            if (pr)
              fprintf(stderr, "galvc: recompute=%s on %d of %d layers: the plan does not realise (priced from 2)\n", rc_modes[part_mode],
                      part_k, part_L);
            else
              fprintf(stderr, "galvc: recompute=%s on %d of %d layers, %d microbatches: priced from 2 %.3f ms, %lld bytes per device "
                              "(corrected %.3f ms, %lld bytes%s)\n", rc_modes[part_mode], part_k, part_L, B, (double)step / 1e6,
                      (long long)mem, (double)(step + ps.cstep) / 1e6, (long long)(mem + ps.cmem),
                      mem + ps.cmem <= part_limit ? "" : ", over the limit");
          }
        } else {
          if (!quiet) {
            if (pr)
              fprintf(stderr, "galvc: recompute=%s on %d of %d layers: the plan does not realise\n", rc_modes[part_mode], part_k, part_L);
            else
              fprintf(stderr, "galvc: recompute=%s on %d of %d layers, %d microbatch%s: predicted step %.3f ms, %lld bytes per device%s\n",
                      rc_modes[part_mode], part_k, part_L, B, B > 1 ? "es" : "", (double)step / 1e6,
                      (long long)gv_plan_last.cost.mem_total, fits ? "" : " (over the limit)");
          }
          if (part_ps) { /* realised in full after the stand-in's search: a bound, and the correction from here */
            ps.full++;
            if (!pr && ps.mem[part_k] >= 0 && ps.mem[part_k] < PART_NONE)
              ps.cmem = mem - ps.mem[part_k], ps.cstep = step - ps.step[part_k];
            if (fits) ps.fh = part_k, ps.fh_step = step, ps.fh_mem = mem;
            else ps.flo = part_k, end = pr || step >= part_best;
          } else {
            if (part_k == 0 && part_qi == 0) part0_fits = fits, part0_step = pr ? INT64_MAX : step, part0_mem = mem;
            if (fits) part_hi = part_k, part_step = step, part_mem = mem;
            else part_lo = part_k, part_lo_step = step, part_lo_mem = mem, end = pr || step >= part_best; /* every k that fits is above: no faster */
          }
        }
        gv_module_free(m);
        if (part_ps) {
          int k = 0, act = end ? PS_DONE : part_stand_next(&ps, part_limit, part_best, &k);
          if (act != PS_DONE) {
            part_k = k, part_stand = act == PS_PRICE;
            gv_train_opts.recompute = part_list_of(part_list, sizeof part_list, rc_modes[part_mode], part_k);
            goto retry;
          }
          part_stand = false, part_hi = ps.fh, part_step = ps.fh_step, part_mem = ps.fh_mem;
          if (!quiet)
            fprintf(stderr, "galvc: recompute=%s on fewer layers: %d priced from 2, %d realised in full at %d microbatches\n",
                    rc_modes[part_mode], ps.priced, ps.full, B);
        } else if (!end && part_hi - part_lo > 1) {
          part_k = part_next(part_lo, part_lo_mem, part_lo_step, part_hi, part_mem, part_step, part_limit, part_best);
          gv_train_opts.recompute = part_list_of(part_list, sizeof part_list, rc_modes[part_mode], part_k);
          goto retry;
        }
        if (part_hi < part_L && part_step < part_best) { /* fewer layers recomputed: the fastest so far */
          part_best = part_step, part_win_mode = part_mode, part_win_k = part_hi, part_win_B = B, part_win_mem = part_mem;
          part_win_plan = part_plan;
          part_list_of(part_win, sizeof part_win, rc_modes[part_mode], part_hi);
        }
        while (++part_qi < part_nq) { /* the next recomputing mode: k = 0 first */
          int q = part_q[part_qi];
          part_mode = q, part_plan = rc_plan[q], part_lo = -1, part_hi = part_L, part_k = 0;
          part_step = rc_step[q], part_mem = rc_mem[q];
          B = rc_B[part_mode];
          if ((part_ps = part_stand_on && B >= stand_lo && part_stand_begin(&ps, part_L, rc_step[q], rc_mem[q]))) { /* priced first */
            part_stand = true, part_k = part_L;
            gv_train_opts.recompute = part_list_of(part_list, sizeof part_list, rc_modes[part_mode], part_k);
            goto retry;
          }
          /* its k = 0 realised already (the first mode's plan and count): not again */
          if (rc_B[q] == rc_B[part_q[0]] && !memcmp(&rc_plan[q], &rc_plan[part_q[0]], sizeof rc_plan[q])) {
            if (!quiet)
              fprintf(stderr, "galvc: recompute=%s on 0 of %d layers: recompute=%s's plan and count, realised above\n", rc_modes[q],
                      part_L, rc_modes[part_q[0]]);
            if (part0_fits || part0_step >= part_best) continue; /* the same k = 0; or every k is slower */
            part_lo = 0, part_lo_step = part0_step, part_lo_mem = part0_mem;
            part_k = part_next(part_lo, part_lo_mem, part_lo_step, part_hi, part_mem, part_step, part_limit, part_best);
          }
          gv_train_opts.recompute = part_list_of(part_list, sizeof part_list, rc_modes[part_mode], part_k);
          goto retry;
        }
        part_k = -1, part_ps = part_stand = false;
        part_stand_end(&ps);
        int best = rc_fastest(rc_B, rc_step, NRC);
        if (part_win_mode >= 0) { /* compiled: the fastest with fewer layers recomputed */
          if (!quiet)
            fprintf(stderr, "galvc: recompute=%s on %d of %d layers (recompute=%s), %d microbatch%s: the fastest predicted step "
                            "(%.3f ms, %lld bytes; on every layer %.3f ms)\n", rc_modes[part_win_mode], part_win_k, part_L,
                    part_win, part_win_B, part_win_B > 1 ? "es" : "", (double)part_best / 1e6, (long long)part_win_mem,
                    (double)rc_step[part_win_mode] / 1e6);
          gv_train_opts.recompute = part_win;
          B = part_win_B, mb_final = true;
          stand_plan = part_win_plan, pick_from = B, count_real = real_stored = true;
        } else { /* the uniform winner compiled again */
          if (!quiet)
            fprintf(stderr, "galvc: recomputation on fewer layers: none faster that fits%s: recompute=%s\n",
                    part_inc && part_best == incumbent ? " (nor faster than the fastest step realised so far)" : "", rc_modes[best]);
          gv_train_opts.recompute = rc_modes[best];
          B = rc_B[best], mb_final = true;
          if (rc_from[best]) stand_plan = rc_plan[best], pick_from = rc_from[best], count_real = true, real_stored = !rc_virtual[best];
          if (rc_virtual[best]) virt_final = best, stand_est = rc_step[best], stand_mem = rc_mem[best];
        }
        goto retry;
      }
      if (pr == 1 && count_real) { /* the stand-in's choice does not realise at its count: the count in full */
        if (!quiet) fprintf(stderr, "galvc: %d microbatches: the plan chosen from 2 does not realise at %d: planned in full\n", B, B);
        gv_module_free(m);
        m = NULL;
        if (virt_final >= 0) { /* a deferred winner: the modes compared again without it, where there are others */
          const int vm = virt_final;
          int others = 0;
          for (int k = 0; k < NRC; k++) others += k != vm && rc_B[k];
          virt_final = -1, rc_virtual[vm] = false;
          if (others) {
            rc_B[vm] = 0, count_real = real_stored = false, rc_mode = vm;
            goto rc_end;
          }
        }
        count_real = real_stored = false, stand_cut = 0, count_full = true, mb_final = true, pick_from = 0;
        goto retry;
      }
      if (pr == 1 && stand_cut && gv_plan_opts.count_as) { /* no plan within the corrected budget: the count in full */
        if (!quiet) fprintf(stderr, "galvc: %d microbatches: no plan within the corrected budget: planned in full\n", B);
        gv_module_free(m);
        stand_cut = 0, count_full = true, mb_final = true;
        goto retry;
      }
      if (err_final && pr) { rc = 1; break; } /* the least point's own error line */
      if (pr == 1 && gv_plan_last.bounded) { /* no candidate here can be faster than a plan realised already */
        any_bounded = true;
        if (!quiet)
          fprintf(stderr, "galvc: recompute=%s, %d microbatch%s: every candidate's bound is above the fastest step so far (%.3f ms): "
                          "none is faster\n", gv_train_opts.recompute ? gv_train_opts.recompute : "none", B, B > 1 ? "es" : "",
                  (double)incumbent / 1e6);
      mode_bounded:
        if (mb_best_B && !mb_final) goto best_count; /* more microbatches of this recomputation: the fastest so far */
        int nb_bounded = 0, nm_bounded = rc_search ? next_mode(rc_ord, NRC, rc_mode, !mb_stand, nrec, rc_modes, B0, global_batch,
                                                             mb_search, count_skip ? gv_plan_last.limit : 0,
                                                             lm_mem, quiet, &nb_bounded) : -1;
        if (nm_bounded >= 0) { /* this recomputation at no count: the next one */
          gv_module_free(m);
          mb_best_B = 0, mb_more = 0, mb_final = false;
          gv_train_opts.recompute = rc_modes[rc_mode = nm_bounded];
          B = nb_bounded;
          goto retry;
        }
        if (rc_search && rc_fastest(rc_B, rc_step, NRC) >= 0) { /* the last recomputation: the search ends as after a plan */
          mb_best_B = 0, mb_more = 0, mb_final = false;
          goto rc_end;
        }
        if (joint && jc.found && incumbent == jc.step_ns) goto pipe_bounded; /* no one program beats the pipeline's step */
      }
      if (pr == 1 && gv_plan_last.min_mem >= 0 && (lm_mem < 0 || gv_plan_last.min_mem < lm_mem))
        lm_mem = gv_plan_last.min_mem, lm_mode = rc_mode, lm_B = B, lm_out = gv_plan_last;
      if (pr == 1 && !gv_plan_opts.count_as && gv_plan_last.min_mem >= 0 && (lmo_mem < 0 || gv_plan_last.min_mem < lmo_mem))
        lmo_mem = gv_plan_last.min_mem, lmo_mode = rc_mode, lmo_B = B, lmo_out = gv_plan_last;
      if (pr == 1 && !gv_plan_last.bounded) {
        need_add(&nrec[rc_mode], B, !gv_plan_opts.count_as, gv_plan_last.min_need);
        if (getenv("GALV_PLAN_DEBUG"))
          fprintf(stderr, "galvc: count search: recompute=%s, %d microbatches%s: no plan; the least need %lld, the least memory %lld\n",
                  rc_modes[rc_mode], B, gv_plan_opts.count_as ? " (priced from 2)" : "", (long long)gv_plan_last.min_need,
                  (long long)gv_plan_last.min_mem);
      }
      if (pr == 1 && mb_best_B && !mb_final) { /* more microbatches fit no plan: the fastest count so far */
        if (!quiet) fprintf(stderr, "galvc: no plan fits with %d microbatches: %d microbatch%s, the fastest predicted step (%.3f ms)\n",
                            B, mb_best_B, mb_best_B > 1 ? "es" : "", (double)mb_best_step / 1e6);
        gv_module_free(m);
        m = NULL;
        if (rc_search && mb_best_from) { /* its figures known (realised, or priced and deferred): recorded as they are, the
                                          * next recomputation searched (the count compiled again only if it wins) */
          B = mb_best_B, pick_from = mb_best_from, mb_final = true;
          gv_plan_last.cost.step_ns = mb_best_step, gv_plan_last.cost.mem_total = mb_best_mem, gv_plan_last.plan = mb_best_plan;
          stand_mbound = mb_best_mbound;
          count_real = real_stored = true, count_virtual = mb_best_virtual, virt_price = mb_best_price;
          goto realised;
        }
        B = mb_best_B, mb_final = true;
        goto retry;
      }
      if (pr == 1) {
        if (!global_batch) { /* the planner's fallback: the batch is read only now */
          gv_import_options o1 = opt0;
          if (galvc_microbatch_shapes(model, &o1, &pa, 0, &global_batch)) { rc = 1; break; }
        }
        if (B > rc_fail[rc_mode]) rc_fail[rc_mode] = B;
        if (mb_stand && !count_top) count_top = count_top_of(global_batch, gpus);
        int Bf = B; /* the most microbatches known to fit no plan */
        if (mb_search && mb_stand && count_top > B) next_B = count_top; /* the stand-in of the counts up to count_top */
        /* count_top not probed where this probe shows it cannot fit: every candidate needs at least the least need
         * weighed here (less 3 % for the estimate's error), and at c microbatches a candidate's activations are at
         * least B / c of its activations here (a microbatch of fewer samples holds no more than its share of them),
         * its state unchanged, so its need at c is at least need x B / c; at or above the limit count_top is taken
         * as probed and failed (the rule below goes on from it, as it would have) */
        const int64_t lneed = gv_plan_last.min_need - gv_plan_last.min_need / 33, llim = gv_plan_last.limit;
        if (next_B == count_top && count_top > B && lneed > 0 && llim > 0 && count_skip &&
            (double)lneed * (double)B / (double)count_top > (double)llim) {
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches cannot fit either (the least need here, %lld bytes, x %d / %d is over the "
                            "limit %lld): not probed\n", count_top, (long long)gv_plan_last.min_need, B, count_top, (long long)llim);
          Bf = count_top, next_B = 0;
          if (Bf > rc_fail[rc_mode]) rc_fail[rc_mode] = Bf;
        }
        /* past count_top: the stand-in at the largest multiple of B dividing the batch within 8 B (count_pick then
         * takes the fewest of its divisors above B that its choice's scaled memory fits), not each divisor in turn */
        for (int64_t d = 8 * (int64_t)Bf; mb_search && mb_stand && count_top && Bf >= count_top && !next_B && d >= 2 * (int64_t)Bf; d -= Bf)
          if (d <= global_batch && global_batch % d == 0) next_B = (int)d;
        /* each count in turn (the counts on their own programs): those the probes show cannot fit (the least needs
         * recorded, as above: next_own_count) and cannot need less than the least need seen (lm_mem: the error line's,
         * when none fits), and those probed on their own programs already, are skipped */
        const int64_t own_lim = count_skip ? llim : 0;
        int skip_lo = 0, skip_hi = 0;
        if (mb_search && !next_B) next_B = next_own_count(&nrec[rc_mode], Bf, global_batch, own_lim, lm_mem, &skip_lo, &skip_hi);
        if (skip_lo && !quiet)
          fprintf(stderr, "galvc: %d to %d microbatches cannot fit either (the least needs probed, x their counts / the count, are "
                          "over the limit %lld and the least need seen): not probed\n", skip_lo, skip_hi, (long long)llim);
        if (!next_B && rc_search) { /* none fits with this recomputation: the next one (on the counts' own programs: the
                                     * next with a count left to probe) */
          int nb = B0, nm = next_mode(rc_ord, NRC, rc_mode, !mb_stand, nrec, rc_modes, B0, global_batch, mb_search, own_lim, lm_mem,
                                      quiet, &nb);
          if (nm >= 0) {
            if (!quiet) fprintf(stderr, "galvc: recompute=%s: no plan fits: trying recompute=%s\n", rc_modes[rc_mode], rc_modes[nm]);
            gv_module_free(m);
            gv_train_opts.recompute = rc_modes[rc_mode = nm];
            B = nb;
            goto retry;
          }
        }
        if (!next_B) { /* no candidate left: the planner's own error line */
          int best = rc_search ? rc_fastest(rc_B, rc_step, NRC) : -1;
          if (best >= 0) { /* an earlier recomputation had a plan: that one */
            gv_module_free(m);
            rc_search = false;
            gv_train_opts.recompute = rc_modes[best];
            B = rc_B[best], mb_final = true;
            if (!quiet) fprintf(stderr, "galvc: recompute=%s with %d microbatch%s: the fastest predicted step (%.3f ms)\n",
                                rc_modes[best], B, B > 1 ? "es" : "", (double)rc_step[best] / 1e6);
            goto retry;
          }
          if (joint && jc.found && any_bounded && incumbent == jc.step_ns) { /* the other recomputations bounded above the
                                                                             * pipeline's step, this one fits nowhere */
          pipe_bounded:
            gv_module_free(m);
            joint_one_bounded = jc.step_ns;
            if (galvc_pipeline_plan(&jc, -1) < 0) return 1;
            galvc_microbatch_done();
            return joint_finish(model, opt0, &pa, &jc, -1, 0, NULL, &cluster, out, quiet, build, verify_each, train, plan_only,
                                strcmp(target, "cuda") == 0 ? &cuda : NULL, gpus);
          }
          /* nothing fits as priced from two microbatches: the counts searched on their own programs, from the first
           * mode and count the probes do not show cannot fit (next_own_count), the least need seen that of the
           * points probed on their own programs (counts 1 and 2) */
          int fm = -1, fb = 0, lo, hi;
          if (mb_stand) lm_mem = lmo_mem, lm_mode = lmo_mode, lm_B = lmo_B, lm_out = lmo_out;
          const int64_t own_lim0 = count_skip ? gv_plan_last.limit : 0;
          if (mb_stand && rc_search0) { /* the modes by their least need recorded, ascending (none recorded: last) */
            int64_t least[NRC];
            for (int r = 0; r < NRC; r++) {
              least[r] = INT64_MAX;
              for (int i = 0; i < nrec[r].n; i++) least[r] = nrec[r].r[i].need < least[r] ? nrec[r].r[i].need : least[r];
              rc_ord[r] = r;
            }
            for (int i = 1; i < NRC; i++)
              for (int j = i; j > 0 && least[rc_ord[j]] < least[rc_ord[j - 1]]; j--) {
                int t = rc_ord[j];
                rc_ord[j] = rc_ord[j - 1], rc_ord[j - 1] = t;
              }
          }
          for (int q = 0; mb_stand && q < (rc_search0 ? NRC : 1); q++) {
            fm = rc_search0 ? rc_ord[q] : rc_mode;
            if (rc_search0 && rc_na[fm]) continue; /* the model does not admit it */
            if ((fb = next_own_count(&nrec[fm], B0 - 1, mb_search ? global_batch : B0, own_lim0, lm_mem, &lo, &hi))) break;
          }
          if (mb_stand && !fb && !quiet)
            fprintf(stderr, "galvc: nothing fits as priced from two microbatches, and the counts' own programs cannot fit either "
                            "(each probed already, or its least need over the limit and the least need seen): not probed\n");
          if (mb_stand && fb) {
            gv_module_free(m);
            if (!quiet)
              fprintf(stderr, "galvc: nothing fits as priced from two microbatches: the counts on their own programs, from "
                              "recompute=%s with %d microbatch%s\n", rc_search0 ? rc_modes[fm] : gv_train_opts.recompute ?
                              gv_train_opts.recompute : "none", fb, fb > 1 ? "es" : "");
            mb_stand = count_full = false, mb_final = false, pick_over = 0, mb_best_from = 0;
            memset(rc_fail, 0, sizeof rc_fail), memset(rc_from, 0, sizeof rc_from), memset(rc_fit, 0, sizeof rc_fit);
            rc_search = rc_search0, rc_mode = fm, B = fb, mb_best_B = 0, mb_more = 0;
            memset(rc_B, 0, sizeof rc_B), memset(rc_step, 0, sizeof rc_step), memset(rc_virtual, 0, sizeof rc_virtual);
            virt_final = -1;
            if (rc_search) gv_train_opts.recompute = rc_modes[fm];
            goto retry;
          }
          /* recomputation searched and nothing fits: the least need's recomputing mode once more with every layer
           * but the last recomputed, at that count (docs/planner.md, "The no-plan figure"): the last layer's backward
           * follows its forward at once, so recomputing it keeps no activation less, and its recomputation can add to
           * the busiest point (a 9-layer GPT-2 on 4 devices, 4 microbatches: first:8 needs 2966276 bytes, all
           * 2998020). A plan that fits is compiled; else its need stands for the mode where it is less. */
          if (rc_search0 && part_search && !nofit_probed && lm_mem >= 0 && lm_mode > 0 && lm_out.layers >= 2) {
            nofit_probed = true;
            gv_module_free(m);
            m = NULL;
            nofit_probe = true;
            gv_train_opts.recompute = part_list_of(nofit_list, sizeof nofit_list, rc_modes[lm_mode], lm_out.layers - 1);
            if (!quiet)
              fprintf(stderr, "galvc: nothing fits: recompute=%s with %d microbatch%s (recompute=%s on every layer but the last)\n",
                      nofit_list, lm_B, lm_B > 1 ? "es" : "", rc_modes[lm_mode]);
            B = lm_B, rc_mode = lm_mode, rc_search = false, mb_final = true, count_full = true, stand_cut = 0;
            count_real = real_stored = false, pick_from = 0, virt_final = -1; /* searched, not a choice compiled again */
            goto retry;
          }
        nofit_end:
          if (joint) { /* no program fits: the pipeline, or one error line with the smaller minimum */
            gv_module_free(m);
            if (galvc_pipeline_plan(&jc, -1) < 0) return 1;
            if (lm_mem >= 0) gv_plan_last = lm_out; /* one program's least need over the points tried */
            galvc_microbatch_done();
            return joint_finish(model, opt0, &pa, &jc, -1, 0, NULL, &cluster, out, quiet, build, verify_each, train, plan_only,
                                strcmp(target, "cuda") == 0 ? &cuda : NULL, gpus);
          }
          if (lm_mem >= 0 && (lm_mode != rc_mode || lm_B != B || !m || lm_rc)) { /* an earlier point needed less: its error */
            gv_module_free(m);
            if (lm_rc) gv_train_opts.recompute = lm_rc;
            else if (rc_search || nofit_probed) gv_train_opts.recompute = rc_modes[lm_mode];
            rc_mode = lm_mode, B = lm_B, err_final = true;
            goto retry;
          }
          gv_plan_opts.probe = false;
          pr = gv_pass_plan_sharding(m);
        }
      }
      if (pr == 1 && next_B) { /* no plan fits at this microbatch size: the next one */
        if (!quiet) fprintf(stderr, "galvc: no plan fits with %d microbatch%s of %lld: trying %d\n", B, B > 1 ? "es" : "",
                            (long long)(global_batch / B), next_B);
        gv_module_free(m);
        B = next_B;
        goto retry;
      }
      if (pr) { rc = 1; break; }
      if (!gv_plan_opts.count_as && gv_plan_last.cost.mem_total <= gv_plan_last.limit) { /* realised and fits: the bound of the later searches */
        if (!incumbent || gv_plan_last.cost.step_ns < incumbent) incumbent = gv_plan_last.cost.step_ns;
        if (!incumbent_real || gv_plan_last.cost.step_ns < incumbent_real) incumbent_real = gv_plan_last.cost.step_ns;
      }
    realised:;
      const int real_from = count_real ? pick_from : 0; /* this pass compiled a priced plan at B: the count it was priced at */
      const bool stored = count_real && real_stored;        /* ... a choice compiled again (its figures known) */
      if (count_real) { /* the priced choice realised at its count */
        int64_t real = gv_plan_last.cost.step_ns;
        if (virt_final >= 0) { /* a deferred winner realised: against its price and the other modes */
          const int vm = virt_final;
          const bool over = gv_plan_last.cost.mem_total > gv_plan_last.limit;
          int alt = -1, others = 0;
          for (int k = 0; k < NRC; k++)
            if (k != vm && rc_B[k]) {
              others++;
              if (rc_mem[k] <= gv_plan_last.limit && (over || rc_step[k] < real) && (alt < 0 || rc_step[k] < rc_step[alt])) alt = k;
            }
          virt_final = -1, rc_virtual[vm] = false;
          if ((over && others) || (!over && (alt >= 0 || (double)real > VIRT_OFF * (double)rc_step[vm]))) {
            /* the modes compared again with its figures realised (over the limit: without it), the recomputation on
             * fewer layers searched again against them */
            if (!quiet)
              fprintf(stderr, "galvc: recompute=%s, %d microbatches: realised %.3f ms, %lld bytes per device (priced %.3f ms)%s%s: the "
                              "recomputation modes compared again%s\n", rc_modes[vm], B, (double)real / 1e6,
                      (long long)gv_plan_last.cost.mem_total, (double)rc_step[vm] / 1e6, !over && alt >= 0 ? ", slower than recompute=" : "",
                      !over && alt >= 0 ? rc_modes[alt] : "", over ? " without it (over the limit)" : "");
            if (over) rc_B[vm] = 0;
            else rc_step[vm] = rc_price[vm] = real, rc_mem[vm] = gv_plan_last.cost.mem_total, rc_plan[vm] = gv_plan_last.plan, rc_B[vm] = B,
                 rc_from[vm] = B;
            count_real = real_stored = false;
            if (over) gv_module_free(m), m = NULL;
            rc_mode = vm;
            goto rc_end;
          }
        }
        if (count_virtual) {
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches: predicted step %.3f ms (priced from 2), %lld bytes per device: realised only if "
                            "recompute=%s stays the fastest\n", B, (double)real / 1e6, (long long)gv_plan_last.cost.mem_total,
                    rc_modes[rc_mode]);
        } else if (!quiet && !stored && pick_from == B)
          fprintf(stderr, "galvc: %d microbatches: predicted step %.3f ms (priced from 2), realised %.3f ms at %d (%+.2f %%), %lld bytes "
                          "per device\n", B, (double)stand_est / 1e6, (double)real / 1e6, B,
                  stand_est ? 100.0 * (double)(real - stand_est) / (double)stand_est : 0.0, (long long)gv_plan_last.cost.mem_total);
        else if (!quiet && !stored) /* compiled at fewer microbatches than priced: the estimate is the priced count's step */
          fprintf(stderr, "galvc: %d microbatches: predicted step %.3f ms (priced at %d%s), realised %.3f ms at %d (%+.2f %%), %lld bytes "
                          "per device (estimated %lld, %+.2f %%)\n", B, (double)stand_est / 1e6, pick_from, pick_from > 2 ? " from 2" : "",
                  (double)real / 1e6, B, stand_est ? 100.0 * (double)(real - stand_est) / (double)stand_est : 0.0,
                  (long long)gv_plan_last.cost.mem_total, (long long)stand_mem,
                  stand_mem ? 100.0 * (double)(gv_plan_last.cost.mem_total - stand_mem) / (double)stand_mem : 0.0);
        count_real = real_stored = false;
        gv_plan_opts.plan_fixed = NULL;
        if (!stored && pick_from != B && gv_plan_last.cost.mem_total > gv_plan_last.limit) { /* over at the picked count: the next */
          int over = B;
          pick_over = B;
          B = count_pick(&pick_cost, pick_from, pick_over, gv_plan_last.limit, &pick_mem);
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches: %lld bytes over the memory limit (%lld) realised: compiled at %d\n", over,
                    (long long)(gv_plan_last.cost.mem_total - gv_plan_last.limit), (long long)gv_plan_last.limit, B);
          stand_mem = B != pick_from ? pick_mem : pick_cost.mem_total;
          gv_module_free(m);
          count_real = true;
          goto retry;
        }
        if (!stored && gv_plan_last.cost.mem_total > gv_plan_last.limit) { /* over the limit realised: a smaller budget, then in full */
          int64_t excess = gv_plan_last.cost.mem_total - gv_plan_last.limit;
          int64_t err = gv_plan_last.cost.mem_total - stand_mem; /* the estimate's error: the budget's correction */
          bool again = stand_tries < STAND_TRIES;
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches: %lld bytes over the memory limit (%lld) realised: %s\n", B, (long long)excess,
                    (long long)gv_plan_last.limit, again ? "planned again from 2 within the limit less the estimate's error" : "planned in full");
          gv_module_free(m);
          pick_from = 0;
          if (again) stand_lim = gv_plan_last.limit, stand_cut += err > excess ? err : excess, stand_tries++;
          else stand_cut = 0, count_full = true;
          goto retry;
        }
        stand_cut = 0, stand_tries = 0, pick_over = 0, pick_from = 0;
        gv_plan_last.memory_bound = stand_mbound; /* the search's answer, not the realisation's */
      } else if (count_full) {
        count_full = false; /* planned in full at this count: the next counts from stand-ins again */
      } else if (gv_plan_opts.count_as && joint && jc.found && incumbent == jc.step_ns &&
                 (double)gv_plan_last.cost.step_ns > JOINT_ONE_OVER * (double)incumbent) {
        /* the pipeline's step bounds the count: a stand-in priced over 1.25 x it (its fewer microbatches and the
         * realisation change the step by a few per cent) is not compiled at its count, and the recomputation ends as
         * when every candidate is bounded (its bound is compute and tp communication only: a choice may fit only at
         * many microbatches, its data-parallel traffic a multiple of the pipeline's step) */
        any_bounded = true;
        if (!quiet)
          fprintf(stderr, "galvc: recompute=%s, %d microbatches: predicted step %.3f ms (priced from 2), over %.2f x the pipeline's "
                          "step (%.3f ms): not realised\n", gv_train_opts.recompute ? gv_train_opts.recompute : "none", B,
                  (double)gv_plan_last.cost.step_ns / 1e6, JOINT_ONE_OVER, (double)incumbent / 1e6);
        goto mode_bounded;
      } else if (mb_stand && !mb_auto && (gv_plan_opts.count_as || (mb_search && B > 1 && global_batch))) {
        /* a priced choice: compiled at the fewest of B's divisors its scaled memory fits (B when it holds no fewer
         * whole-batch divisions, or the count is given), realised there; the search goes on with those figures */
        int pick = B;
        if (mb_search && global_batch && !count_top) count_top = count_top_of(global_batch, gpus);
        pick_cost = gv_plan_last.cost;
        if (mb_search && (count_top % B == 0 || B > count_top)) {
          int fl = rc_fail[rc_mode] > pick_over ? rc_fail[rc_mode] : pick_over; /* above the counts known or searched */
          if (rc_fit[rc_mode] > fl && rc_fit[rc_mode] < B) fl = rc_fit[rc_mode];
          pick = count_pick(&pick_cost, B, fl, gv_plan_last.limit, &pick_mem);
        }
        /* more microbatches while memory bound: a stand-in priced no faster than the fastest count so far, or whose
         * fewest count is that one, is not compiled at its count (a full realisation of B copies); the fastest
         * compiled again, as when a larger count realised was not faster */
        const bool no_faster = gv_plan_opts.count_as && mb_search && !mb_final && mb_best_B && B > mb_best_B &&
                               (pick == mb_best_B || gv_plan_last.cost.step_ns >= mb_best_step);
        if (no_faster) {
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches: predicted step %.3f ms (priced from 2)%s: %d microbatch%s, the fastest predicted "
                            "step (%.3f ms)\n", B, (double)gv_plan_last.cost.step_ns / 1e6,
                    pick == mb_best_B && gv_plan_last.cost.step_ns < mb_best_step ? ", its fewest count searched already" : "",
                    mb_best_B, mb_best_B > 1 ? "es" : "", (double)mb_best_step / 1e6);
          goto best_count;
        }
        if (pick != B && !quiet)
          fprintf(stderr, "galvc: %d microbatches: the plan priced at %d fits %d microbatch%s of %lld (memory scaled with the "
                          "microbatch: %lld bytes per device, limit %lld): planned at %d\n", B, B, pick, pick > 1 ? "es" : "",
                  (long long)(global_batch / pick), (long long)pick_mem, (long long)gv_plan_last.limit, pick);
        if (pick != B) { /* fewer microbatches fit: that count searched (its own plan, not this one at a smaller size) */
          gv_module_free(m);
          B = pick;
          goto retry;
        }
        if (gv_plan_opts.count_as) {
          stand_plan = gv_plan_last.plan, stand_est = gv_plan_last.cost.step_ns, stand_mbound = gv_plan_last.memory_bound;
          stand_mem = pick != B ? pick_mem : gv_plan_last.cost.mem_total;
          gv_module_free(m);
          pick_from = B, B = pick;
          count_real = true;
          /* while the recomputation modes are searched, the priced figures stand for the realisation (defer_on) */
          if (defer_on && rc_search && !stand_cut && gv_plan_last.cost.mem_total <= gv_plan_last.limit) {
            m = NULL, count_virtual = true;
            virt_price = stand_est;
            if (defer_skew > 0) stand_est = gv_plan_last.cost.step_ns = (int64_t)((double)stand_est * (1.0 - defer_skew));
            goto realised;
          }
          goto retry;
        }
      }
      if (B > 1 && mb_search && !mb_best_B && !quiet && !real_from)
        fprintf(stderr, "galvc: microbatches: %d of %lld samples (batch %lld): the fewest with a plan that fits\n", B,
                (long long)(global_batch / B), (long long)global_batch);
      if (mb_search && !mb_auto && !mb_final) { /* --microbatches auto: the fewest that fit, as documented */
        int64_t step = gv_plan_last.cost.step_ns;
        const int base = real_from > B ? real_from : B; /* the counts up to the one priced are covered */
        bool better = !mb_best_B || step < mb_best_step;
        if (better)
          mb_best_B = B, mb_best_step = step, mb_best_from = real_from, mb_best_plan = gv_plan_last.plan, mb_best_virtual = count_virtual,
          mb_best_mem = gv_plan_last.cost.mem_total, mb_best_mbound = gv_plan_last.memory_bound, mb_best_price = count_virtual ? virt_price : step;
        if (!real_from && B > rc_fit[rc_mode]) rc_fit[rc_mode] = B; /* searched on its own program (or a stand-in of it) */
        if (!global_batch && better && gv_plan_last.memory_bound) { /* the batch, read only now */
          gv_import_options o1 = opt0;
          if (galvc_microbatch_shapes(model, &o1, &pa, 0, &global_batch)) { rc = 1; break; }
        }
        int next = 2 * base, steps = 1;
        if (mb_stand && global_batch && !count_top) count_top = count_top_of(global_batch, gpus);
        if (mb_stand && count_top > base && count_top % base == 0) /* the stand-in at count_top's largest divisor in reach */
          for (int d = count_top; d > base; d--)
            if (count_top % d == 0 && d % base == 0 && d <= base << (MB_MORE - mb_more)) {
              next = d, steps = 0;
              while (base << steps < d) steps++;
              break;
            }
        bool more = better && gv_plan_last.memory_bound && mb_more < MB_MORE && global_batch && next <= global_batch &&
                    global_batch % next == 0;
        if (more) {
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatch%s: predicted step %.3f ms, memory bound: trying %d\n", B, B > 1 ? "es" : "",
                    (double)step / 1e6, next);
          gv_module_free(m);
          B = next, mb_more += steps;
          goto retry;
        }
        if (mb_best_B != B) { /* a larger count was not faster: the fastest compiled again */
          if (!quiet)
            fprintf(stderr, "galvc: %d microbatches: predicted step %.3f ms: %d microbatch%s, the fastest predicted step (%.3f ms)\n", B,
                    (double)step / 1e6, mb_best_B, mb_best_B > 1 ? "es" : "", (double)mb_best_step / 1e6);
        best_count: /* the fastest count of this recomputation compiled again (as stored when it was priced from 2) */
          gv_module_free(m);
          B = mb_best_B, mb_final = true;
          if (mb_best_from) stand_plan = mb_best_plan, pick_from = mb_best_from, count_real = true, real_stored = !mb_best_virtual;
          if (mb_best_virtual) stand_est = mb_best_step, mb_best_virtual = false; /* realised now: no longer a bound */
          goto retry;
        }
        if (mb_more && !quiet)
          fprintf(stderr, "galvc: microbatches: %d of %lld samples: the fastest predicted step (%.3f ms)\n", B,
                  (long long)(global_batch / B), (double)step / 1e6);
      }
      mb_best_B = 0, mb_more = 0, mb_final = false; /* the next recomputation searches its counts anew */
      if (rc_search) {
        rc_B[rc_mode] = B, rc_step[rc_mode] = gv_plan_last.cost.step_ns, rc_from[rc_mode] = real_from, rc_plan[rc_mode] = gv_plan_last.plan;
        rc_mem[rc_mode] = gv_plan_last.cost.mem_total, rc_virtual[rc_mode] = count_virtual;
        rc_price[rc_mode] = count_virtual ? virt_price : rc_step[rc_mode];
        int nb_more = B0, nm_more = next_mode(rc_ord, NRC, rc_mode, !mb_stand, nrec, rc_modes, B0, global_batch, mb_search,
                                              count_skip ? gv_plan_last.limit : 0, lm_mem, 1, &nb_more);
        bool more = nm_more >= 0 && (rc_mode > 0 || B > 1 || real_from > 1 || gv_plan_last.memory_bound);
        if (!quiet && (more || rc_mode > 0)) /* the common case (not memory bound) prints nothing more */
          fprintf(stderr, "galvc: recompute=%s: %d microbatch%s, predicted step %.3f ms%s\n", rc_modes[rc_mode], B,
                  B > 1 ? "es" : "", (double)rc_step[rc_mode] / 1e6,
                  more && rc_mode == 0 && nm_more == 1 ? " (memory bound: trying recompute=selective and all)" : "");
        if (more) {
          gv_module_free(m);
          gv_train_opts.recompute = rc_modes[rc_mode = nm_more];
          B = nb_more;
          goto retry;
        }
      rc_end:;
        int best = rc_fastest(rc_B, rc_step, NRC);
        rc_search = false;
        if (rc_mode > 0 && !quiet)
          fprintf(stderr, "galvc: recompute=%s with %d microbatch%s: the fastest predicted step (%.3f ms)\n", rc_modes[best],
                  rc_B[best], rc_B[best] > 1 ? "es" : "", (double)rc_step[best] / 1e6);
        part_L = rc_plan[best].nunits - 1; /* the model's layers (every mode's plan has them) */
        part_nq = 0;
        for (int k = 1; part_search && part_L >= 2 && k < NRC; k++) /* the recomputing modes with a plan, fastest first */
          if (rc_B[k]) {
            int at = part_nq++;
            while (at > 0 && rc_step[part_q[at - 1]] > rc_step[k]) part_q[at] = part_q[at - 1], at--;
            part_q[at] = k;
          }
        if (part_nq) { /* fewer layers recomputed (part_list_of): k = 0, then part_next */
          gv_module_free(m);
          part_qi = 0, part_best = rc_step[best], part_win_mode = -1;
          part_mode = part_q[0], part_plan = rc_plan[part_mode], part_lo = -1, part_hi = part_L, part_k = 0;
          part_step = rc_step[part_mode], part_mem = rc_mem[part_mode];
          B = rc_B[part_mode], mb_final = true;
          incumbent = inc_now(incumbent_real, rc_B, rc_price, rc_virtual, NRC, mb_best_B, mb_best_price, mb_best_virtual);
          if (incumbent > 0 && incumbent < part_best) part_best = incumbent, part_inc = true; /* a faster pipeline realised */
          if ((part_ps = part_stand_on && B >= stand_lo && part_stand_begin(&ps, part_L, part_step, part_mem))) part_stand = true, part_k = part_L;
          gv_train_opts.recompute = part_list_of(part_list, sizeof part_list, rc_modes[part_mode], part_k);
          goto retry;
        }
        if (best != rc_mode || rc_virtual[best] || !m) { /* compiled again with the winner (its plan.json too) */
          gv_module_free(m);
          gv_train_opts.recompute = rc_modes[best];
          B = rc_B[best], mb_final = true;
          if (rc_from[best]) stand_plan = rc_plan[best], pick_from = rc_from[best], count_real = true, real_stored = !rc_virtual[best];
          if (rc_virtual[best]) virt_final = best, stand_est = rc_step[best], stand_mem = rc_mem[best];
          goto retry;
        }
      }
      if (joint) { /* one program fits: the faster of it and the pipeline */
        joint = false;
        int64_t one = gv_plan_last.cost.step_ns;
        if (galvc_pipeline_plan(&jc, one) < 0) {
          gv_module_free(m);
          return 1;
        }
        if (jc.found && jc.step_ns < one) {
          gv_module_free(m);
          galvc_microbatch_done();
          return joint_finish(model, opt0, &pa, &jc, one, B, train ? gv_train_opts.recompute : NULL, &cluster, out, quiet, build, verify_each, train, plan_only,
                              strcmp(target, "cuda") == 0 ? &cuda : NULL, gpus);
        }
        joint_report(&jc, one, B, train ? gv_train_opts.recompute : NULL, train, quiet);
      }
      /* the search's choice polished (docs/planner.md, "The choice polished"): one layer group's choice changed at a
       * time, realised in full; a faster plan that fits is compiled in its place (once: the polish itself goes on
       * from each change it takes) */
      if (polish && !polished_once) {
        polished_once = true;
        if (polish_stand_on && B >= stand_lo) { /* priced from 2 microbatches (polish_priced) */
          polish_base = gv_plan_last.plan;
          gv_module_free(m);
          polish_priced = true, count_real = real_stored = false;
          goto retry;
        }
        static gv_plan pol;
        int q = gv_plan_polish(&pol, quiet ? NULL : stderr);
        if (q < 0) { rc = 1; break; }
        if (q > 0) {
          gv_module_free(m);
          stand_plan = pol, pick_from = B, count_real = real_stored = true, polish_run = 1;
          goto retry;
        }
      }
      /* --plan at B >= stand_min() (no polish): the report's runner-ups priced on a stand-in of the plan, as the polish's
       * are, not each realised in full (a program of B copies each); the plan compiled again reads its realisation back
       * (GALV_PLAN_POLISH=full or GALV_COUNT_FULL: realised in full as before) */
      if (!polish && !polished_once && !quiet && train && gv_plan_opts.plan_in && !pa.on && B >= stand_lo && !getenv("GALV_COUNT_FULL") &&
          !(polish_env && !strcmp(polish_env, "full"))) {
        polished_once = true;
        polish_base = gv_plan_last.plan;
        gv_module_free(m);
        polish_priced = report_priced = true, count_real = real_stored = false;
        goto retry;
      }
    polished:
      if (!quiet)
        fprintf(stderr, "galvc: %-18s %6d ops (%.3f s, cpu %.3f s)\n", "plan-sharding", count_ops(m->main->body), now() - t,
                cpu_now() - tc);
      /* the compiled plan: each layer group's runner-up (its realisations timed on their own line, not the pass's) */
      if (!quiet && gv_plan_explain(stderr)) { rc = 1; break; }
      if (plan_only) break;
      t = now(), tc = cpu_now();
    }
    if (p->run(m)) { rc = 1; break; }
    if (strcmp(p->name, "loss") == 0) describe_inputs(m, "%1$s %2$s", ", ", inputs, sizeof inputs); /* + the labels */
    if (verify_each && gv_verify(m)) { rc = 1; break; }
    if (stats) print_stats(m, p->name);
    if (!quiet)
      fprintf(stderr, "galvc: %-18s %6d ops (%.3f s, cpu %.3f s)\n", p->name, count_ops(m->main->body), now() - t, cpu_now() - tc);
    if (!quiet && strcmp(p->name, "memory-plan") == 0) print_arena(m);
    if (mb_auto && !gv_plan_opts.active && strcmp(p->name, "memory-plan") == 0) { /* one program: its own memory */
      for (int64_t c = B + 1; c <= global_batch && !next_B; c++)
        if (global_batch % c == 0) next_B = (int)c;
      gv_mem mem;
      gv_cost_memory(m, &mem);
      int64_t lim = gv_plan_opts.memory_limit ? gv_plan_opts.memory_limit : cluster.memory_bytes;
      if (mem.total > lim && next_B) {
        if (!quiet) fprintf(stderr, "galvc: %d microbatch%s of %lld need %lld bytes, over %lld: trying %d\n", B, B > 1 ? "es" : "",
                            (long long)(global_batch / B), (long long)mem.total, (long long)lim, next_B);
        gv_module_free(m);
        B = next_B;
        goto retry;
      }
      if (mem.total > lim) { rc = gv_error_plain("%s: %d microbatches of %lld samples still need %lld bytes per device, over %lld", model, B,
                                                  (long long)(global_batch / B), (long long)mem.total, (long long)lim); break; }
      if (!quiet) fprintf(stderr, "galvc: microbatches: %d of %lld samples (batch %lld): the fewest that fit (%lld bytes)\n", B,
                          (long long)(global_batch / B), (long long)global_batch, (long long)mem.total);
    }
    if (dump_after && (strcmp(dump_after, "all") == 0 || strcmp(dump_after, p->name) == 0))
      rc = dump(m, dump_dir, i + 1, p->name);
  }
  (void)dumpn;
  galvc_microbatch_done();
  if (plan_only) {
    gv_module_free(m);
    return rc;
  }
  /* the steps after the passes get the passes' progress line too (CPU
   * seconds per step: bench/pass_scaling.sh reads them) */
#define STEP_LINE(name, t, tc)                                                                                        \
  do {                                                                                                               \
    if (!rc && !quiet)                                                                                               \
      fprintf(stderr, "galvc: %-18s %6d ops (%.3f s, cpu %.3f s)\n", name, count_ops(m->main->body), now() - (t), \
              cpu_now() - (tc));                                                                                     \
  } while (0)
  double tc0 = cpu_now();
  t0 = now();
  if (!rc && gv_verify(m)) rc = 1;
  STEP_LINE("verify", t0, tc0);
  if (!rc && report_cost) gv_cost_report(&cluster, m, stdout);
  if (!rc && report_cost && gv_plan_opts.profile) gv_plan_profile_report(m, stdout); /* which figures the profile gives */
  if (!rc && program) {
    if (ensure_dir(out)) rc = gv_error_plain("%s: cannot create output directory: %s", out, strerror(errno));
    t0 = now(), tc0 = cpu_now();
    if (!rc) rc = emit_program(m, out, quiet, strcmp(target, "cuda") == 0 ? &cuda : NULL, NULL);
    STEP_LINE("codegen", t0, tc0);
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
        t0 = now(), tc0 = cpu_now();
        rc = write_ir(m, out) ? 1 : 0;
        STEP_LINE("print-ir", t0, tc0);
        if (!rc && !quiet) fprintf(stderr, "galvc: wrote %s (IR text; -o DIR/ writes the program)\n", out);
      }
    }
  }
  gv_module_free(m);
  return rc ? 1 : 0;
}
