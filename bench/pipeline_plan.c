/* pipeline_plan — the stage DP (planner/pipeline.c) on a 96-layer GPT-3
 * 175B shape (h 12288, 96 heads, seq 2048, vocab 51200, global batch 1536)
 * on 1024 GPUs (128 nodes x 8, h100-sxm preset), plan-only, training, 1F1B.
 * The layer-group costs are synthetic (analytic, from the GPT formulas of
 * REFERENCES.md: 24bsh^2 + 4bs^2h FLOPs per layer forward, 12h^2
 * parameters, Korthikanti activations s*b*h*(34 + 5as/h) bytes), not from
 * an imported model: 98 groups (embedding, 96 layers, head) with block
 * signatures, so the 96 equal layers are solved once per (range length,
 * sub-mesh, B). Prints the plan, the number of stage solves and the time.
 * Usage: pipeline_plan [LAYERS] [GPUS] */
#include <stdio.h>
#include <stdlib.h>

#include "planner/pipeline.h"

int main(int argc, char **argv) {
  gv_progname = "pipeline_plan";
  int L = argc > 1 ? atoi(argv[1]) : 96;
  int64_t gpus = argc > 2 ? atoll(argv[2]) : 1024;
  if (L < 1 || L > 250 || gpus < 1) return fprintf(stderr, "usage: pipeline_plan [LAYERS<=250] [GPUS]\n"), 2;
  gv_cluster c;
  if (gv_cluster_load("h100-sxm", &c)) return 1;
  c.nodes = (gpus + c.devices_per_node - 1) / c.devices_per_node;
  const double h = 12288, s = 2048, a = 96, V = 51200, b = 1536;
  int G = L + 2;
  gv_group_stats *g = calloc((size_t)G, sizeof *g);
  /* reach, float_reach 0: not known (every range counts as sending a floating-point value on) */
  uint64_t *sig = calloc((size_t)G, sizeof *sig);
  g[0] = (gv_group_stats){0, (int64_t)(V * h * 4), (int64_t)(b * s * h * 2), (int64_t)(b * s * h * 2), 0, 0, 0};
  sig[0] = 1;
  for (int l = 1; l <= L; l++) {
    g[l] = (gv_group_stats){(int64_t)(24 * b * s * h * h + 4 * b * s * s * h), (int64_t)(12 * h * h * 4),
                            (int64_t)(s * b * h * (34 + 5 * a * s / h)), (int64_t)(b * s * h * 2), 0, 0, 0};
    sig[l] = 2;
  }
  g[L + 1] = (gv_group_stats){(int64_t)(2 * b * s * h * V), (int64_t)(V * h * 4), (int64_t)(b * s * V * 2), 0, 0, 0, 0};
  sig[L + 1] = 3;
  gv_analytic_ctx ctx = {.g = g, .ngroups = G, .batch = (int64_t)b, .training = true, .dtype_bytes = 2, .cluster = &c,
                         .opt_states = 2}; /* AdamW */
  int mbs[] = {16, 32, 64, 128, 256};
  gv_pipe_problem p = {.ngroups = G, .sig = sig, .cluster = &c, .devices = gpus, .mb_choices = mbs, .nmb = 5,
                       .schedule = GV_SCHED_1F1B, .mem_limit = 0, .stages = 0, .cost = gv_stage_cost_analytic, .ctx = &ctx};
  gv_pipe_plan pl;
  printf("GPT-3 175B shape: %d layers (+ embedding, head), %lld GPUs (%lld x %lld, %s), batch 1536, seq 2048, 1F1B\n", L,
         (long long)gpus, (long long)c.nodes, (long long)c.devices_per_node, c.name);
  int rc = gv_pipe_solve(&p, &pl);
  if (rc == 0) gv_pipe_plan_print(&pl, stdout);
  /* the same without block signatures: every range is solved */
  p.sig = NULL;
  gv_pipe_plan pl2;
  int rc2 = gv_pipe_solve(&p, &pl2);
  if (rc2 == 0)
    printf("without block signatures: %lld stage solves, %.3f s, same step time: %s\n", (long long)pl2.solves,
           pl2.seconds, pl2.step_ns == pl.step_ns ? "yes" : "no");
  free(g);
  free(sig);
  return rc || rc2;
}
