/* test_stage_cost — the stage DP's cost from the intra-operator planner
 * (passes/stage_cost.c) on a synthetic 4-layer residual MLP (params
 * h.L.w1, h.L.w2): the stage program of a group range has the crossing
 * values as "pp." inputs / outputs with their bytes; gv_stage_cost_intra
 * returns the planner's time plus exactly gv_pipe_transfer_ns of those
 * bytes, memory from the plan, and a plan for 1 and 2 devices; in training
 * the earlier stage costs more than inference and keeps its stash (the
 * stage-stash backward entry's inputs, more than the stage's inputs);
 * recomputing, twice the time and only the inputs; the DP over it gives consistent plans; with
 * 4 microbatches cpu-local's link makes more than one stage pay and a slow
 * link fewer; a large launch overhead per kernel makes one microbatch the
 * best. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"
#include "passes/plan_sharding.h"
#include "passes/stage_cost.h"

static int fails;
#define CHECK(c, ...)                                              \
  do {                                                             \
    if (!(c)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                                \
      fputc('\n', stderr);                                         \
      fails++;                                                     \
    }                                                              \
  } while (0)

#define DOT "{lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>}"
enum { L = 4, H = 64 };

/* h = h + dot(gelu(dot(h, w1_l)), w2_l), l = 0..L-1; input x: N x H */
static gv_module *make_model(int N) {
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap), t[64];
  snprintf(t, sizeof t, "tensor<%dx%dxf32>", N, H);
  n += (size_t)snprintf(s + n, cap - n, "\"galv.func\"() ({\n^bb0(%%arg0: %s", t);
  for (int l = 0; l < 2 * L; l++) n += (size_t)snprintf(s + n, cap - n, ", %%arg%d: tensor<%dx%dxf32>", l + 1, H, H);
  n += (size_t)snprintf(s + n, cap - n, "):\n");
  int v = 0, h = -1;
  for (int l = 0; l < L; l++) {
    char hb[32];
    if (h < 0) snprintf(hb, sizeof hb, "%%arg0");
    else snprintf(hb, sizeof hb, "%%%d", h);
    int w = 1 + 2 * l;
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.dot\"(%s, %%arg%d) " DOT " : (%s, tensor<%dx%dxf32>) -> %s\n", v, hb, w, t, H, H, t);
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.gelu\"(%%%d) {approximate = \"none\"} : (%s) -> %s\n", v + 1, v, t, t);
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.dot\"(%%%d, %%arg%d) " DOT " : (%s, tensor<%dx%dxf32>) -> %s\n", v + 2, v + 1, w + 1, t, H, H, t);
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.add\"(%%%d, %s) : (%s, %s) -> %s\n", v + 3, v + 2, hb, t, t, t);
    h = v + 3;
    v += 4;
  }
  n += (size_t)snprintf(s + n, cap - n, "  \"galv.return\"(%%%d) : (%s) -> ()\n}) {arg_attrs = [{galv.name = \"x\"}", h, t);
  for (int l = 0; l < L; l++)
    n += (size_t)snprintf(s + n, cap - n, ", {galv.name = \"h.%d.w1\", galv.param}, {galv.name = \"h.%d.w2\", galv.param}", l, l);
  n += (size_t)snprintf(s + n, cap - n, "], res_attrs = [{galv.name = \"y\"}], sym_name = \"main\"} : () -> ()\n");
  gv_module *m = gv_parse_module(s, n, "mlp");
  free(s);
  gv_layer_groups g;
  if (m && gv_cluster_layers(m, L, &g)) {
    gv_module_free(m);
    return NULL;
  }
  return m;
}

static int count_pp(const gv_module *m, bool args) {
  const gv_func *f = m->main;
  int k = 0;
  if (args) {
    for (int a = 0; a < f->body->nargs; a++) k += f->arg_names[a] && !strncmp(f->arg_names[a], "pp.", 3);
  } else {
    for (int i = 0; i < f->nres_names; i++) k += f->res_names[i] && !strncmp(f->res_names[i], "pp.", 3);
  }
  return k;
}

int main(void) {
  gv_progname = "test_stage_cost";
  gv_cluster c;
  if (gv_cluster_load("cpu-local", &c)) return 1;
  c.nodes = 1, c.devices_per_node = 4;
  gv_plan_opts.cluster = &c;
  gv_module *m = make_model(16);
  CHECK(m != NULL, "model");
  if (!m) return 1;
  /* the stage program of groups 1..2 */
  gv_stage_bytes sb;
  gv_module *st = gv_stage_module(m, 1, 3, L, false, &sb);
  CHECK(st != NULL, "stage module");
  if (st) {
    CHECK(sb.in == 16 * H * 4 && sb.out == 16 * H * 4, "pp bytes in %lld out %lld (expected %d each)", (long long)sb.in,
          (long long)sb.out, 16 * H * 4);
    CHECK(count_pp(st, true) == 1 && count_pp(st, false) == 1, "pp inputs %d outputs %d", count_pp(st, true), count_pp(st, false));
    gv_module_free(st);
  }
  CHECK(gv_stage_range_sends(m, 1, 3) && gv_stage_range_sends(m, 0, L), "ranges send");
  /* the callback: planner time + the transfer of exactly those bytes */
  gv_intra_stage_ctx x = {.base = m, .ngroups = L, .B = 1, .cluster = &c};
  gv_stage_cost a1, a2, w, t1;
  CHECK(gv_stage_cost_intra(&x, 1, 3, 1, 1, 1, &a1) == 0 && a1.feasible, "cost [1,3) on 1");
  CHECK(gv_stage_cost_intra(&x, 1, 3, 1, 2, 1, &a2) == 0 && a2.feasible, "cost [1,3) on 2");
  CHECK(gv_stage_cost_intra(&x, 0, L, 1, 1, 1, &w) == 0 && w.feasible, "cost [0,L) on 1");
  CHECK(a1.xfer_ns == gv_pipe_transfer_ns(&c, 1, 1, sb.in, sb.out, 0, false) && a1.xfer_ns > 0, "xfer %lld", (long long)a1.xfer_ns);
  CHECK(w.xfer_ns == 0, "the whole model sends nothing: xfer %lld", (long long)w.xfer_ns);
  CHECK(a1.ns > a1.xfer_ns && a1.state_bytes >= 2 * H * H * 4 * 2, "cost [1,3): %lld ns, %lld state bytes", (long long)a1.ns,
        (long long)a1.state_bytes);
  /* 2 devices hold at most the 1-device states plus the collectives' two pack buffers (dp replicates the states;
   * each buffer here at most one H x H weight's gradient) */
  CHECK(a2.state_bytes <= a1.state_bytes + 2 * H * H * 4, "2 devices: states %lld > 1 device's %lld + the pack buffers",
        (long long)a2.state_bytes, (long long)a1.state_bytes);
  int64_t plans = x.plans;
  CHECK(gv_stage_cost_intra(&x, 1, 3, 1, 1, 1, &t1) == 0 && x.plans == plans && t1.ns == a1.ns, "cached");
  printf("[1,3) on 1 device: %.4f ms (transfer %.4f), on 2: %.4f ms (%s); whole model on 1: %.4f ms\n", a1.ns / 1e6, a1.xfer_ns / 1e6,
         a2.ns / 1e6, a2.desc, w.ns / 1e6);
  gv_intra_stage_ctx_free(&x);
  /* training: the earlier stage runs its forward and backward entries once each and keeps its stash
   * (the backward entry's galv.state inputs); recomputing, its combined function twice and its inputs */
  gv_intra_stage_ctx xt = {.base = m, .ngroups = L, .B = 1, .training = true, .cluster = &c};
  gv_intra_stage_ctx xr = {.base = m, .ngroups = L, .B = 1, .training = true, .recompute = true, .cluster = &c};
  gv_stage_cost tr, rr;
  CHECK(gv_stage_cost_intra(&xt, 1, 3, 1, 1, 1, &tr) == 0 && tr.feasible, "training cost");
  CHECK(gv_stage_cost_intra(&xr, 1, 3, 1, 1, 1, &rr) == 0 && rr.feasible, "recomputing training cost");
  CHECK(tr.ns > 2 * (a1.ns - a1.xfer_ns), "training %lld ns vs inference %lld", (long long)tr.ns, (long long)a1.ns);
  /* the runtime's gradient sum per microbatch (3 x the sums' bytes at the memory bandwidth) once either way */
  CHECK(tr.grad_ns > 0 && rr.grad_ns == tr.grad_ns, "the gradient sum priced: %lld, recomputing %lld ns", (long long)tr.grad_ns,
        (long long)rr.grad_ns);
  CHECK(rr.ns - rr.xfer_ns - rr.grad_ns == 2 * (tr.ns - tr.xfer_ns - tr.grad_ns), "recomputing runs twice: %lld vs %lld ns",
        (long long)rr.ns, (long long)tr.ns);
  CHECK(rr.act_bytes == sb.saved && sb.saved > 0, "recomputing saves the inputs per microbatch: %lld", (long long)rr.act_bytes);
  gv_module *bm = gv_stage_module(m, 1, 3, L, true, NULL);
  int64_t stash = 0;
  gv_pipe_opts.stash = "backward";
  CHECK(bm && gv_pass_stage_stash(bm) == 0, "the stage's backward entry");
  gv_pipe_opts.stash = NULL;
  for (int a = 0; bm && bm->main->arg_is_state && a < bm->main->body->nargs; a++)
    if (bm->main->arg_is_state[a])
      stash += (gv_type_numel(&bm->main->body->args[a]->type) * 4 + 63) / 64 * 64;
  if (bm) gv_module_free(bm);
  CHECK(tr.act_bytes == stash && stash > sb.saved, "training keeps the stash per microbatch: %lld (stash %lld, inputs %lld)",
        (long long)tr.act_bytes, (long long)stash, (long long)sb.saved);
  /* both ways offered (choose_recompute): var[0] the stashing way, var[1] the recomputing one, each as the forced
   * cost; one device: no ZeRO-1 way (choose_zero offers none without dp ranks); the last stage has one way */
  gv_intra_stage_ctx xc = {.base = m, .ngroups = L, .B = 1, .training = true, .choose_recompute = true, .choose_zero = true,
                           .cluster = &c};
  gv_stage_cost cw, lw;
  CHECK(gv_stage_cost_intra(&xc, 1, 3, 1, 1, 1, &cw) == 0 && cw.feasible && cw.nvar == 2, "two ways: nvar %d", cw.nvar);
  CHECK(!cw.var[0].recompute && cw.var[0].ns == tr.ns && cw.var[0].act_bytes == tr.act_bytes && cw.var[0].state_bytes == tr.state_bytes &&
            cw.var[1].recompute && cw.var[1].ns == rr.ns && cw.var[1].act_bytes == rr.act_bytes && cw.var[1].state_bytes == rr.state_bytes &&
            cw.ns == tr.ns && !cw.recompute,
        "the ways = the forced costs: stash %lld ns %lld bytes, recompute %lld ns %lld bytes", (long long)cw.var[0].ns,
        (long long)cw.var[0].act_bytes, (long long)cw.var[1].ns, (long long)cw.var[1].act_bytes);
  /* the stashing way's two entries share one weights buffer (runtime/pipe.c galv_pipe_bwd_base): a copy of the range's
   * two H x H weights would add 2 H H 4 bytes over recomputing's states; the entries' arenas and constants differ from
   * the combined program's by far less than half of that */
  CHECK(tr.state_bytes < rr.state_bytes + H * H * 4, "stashing keeps no backward-entry weight copy: %lld vs recomputing %lld",
        (long long)tr.state_bytes, (long long)rr.state_bytes);
  CHECK(gv_stage_cost_intra(&xc, 3, L, 1, 1, 1, &lw) == 0 && lw.feasible && lw.nvar == 0 && !lw.recompute, "the last stage: one way");
  gv_intra_stage_ctx_free(&xc);
  gv_intra_stage_ctx_free(&xt);
  gv_intra_stage_ctx_free(&xr);
  /* the DP over the planner's costs, one device per stage, S = 1..4 (as
   * galvc's auto mode for k = 1): consistent plans; over a slow link the
   * best keeps one stage (nothing to send) */
  int mb4[] = {4};
  gv_cluster slow = c;
  slow.intra_gbps = slow.inter_gbps = 0.01;
  gv_module *m4 = make_model(4); /* 4 microbatches of 4 rows */
  int bests[2] = {0, 0};
  for (int k = 0; k < 2 && m4; k++) {
    gv_intra_stage_ctx d = {.base = m4, .ngroups = L, .B = 4, .cluster = k ? &slow : &c};
    int bestS = 0;
    int64_t best = INT64_MAX;
    for (int S = 1; S <= L; S++) {
      gv_pipe_problem p = {.ngroups = L, .cluster = d.cluster, .devices = S, .mesh_devices = 1, .stages = S, .mb_choices = mb4,
                           .nmb = 1, .cost = gv_stage_cost_intra, .ctx = &d};
      gv_pipe_plan pl;
      int rc = gv_pipe_solve(&p, &pl);
      CHECK(rc == 0, "DP rc %d", rc);
      if (rc) continue;
      int64_t sum = 0, mx = 0;
      for (int i = 0; i < pl.nstages; i++) sum += pl.cost[i].ns, mx = pl.cost[i].ns > mx ? pl.cost[i].ns : mx;
      CHECK(pl.step_ns == sum + (pl.B - 1) * mx && pl.nstages == S, "step");
      if (pl.step_ns < best) best = pl.step_ns, bestS = S;
    }
    printf("%s link: best %d stages of one device, %.4f ms (%lld stage programs planned in %.3f s)\n", k ? "slow" : "cpu-local",
           bestS, best / 1e6, (long long)d.plans, d.seconds);
    bests[k] = bestS;
    gv_intra_stage_ctx_free(&d);
  }
  CHECK(bests[0] > 1 && bests[1] < bests[0], "stages: cpu-local %d, slow link %d", bests[0], bests[1]);
  if (m4) gv_module_free(m4);
  /* microbatches: one stage, B = 1, 2, 4 (the module at 16 / B rows); a
   * launch overhead of 1 ms per kernel makes B = 1 the best */
  gv_cluster lc = c;
  lc.launch_overhead_us = 1000;
  int bestB = 0;
  int64_t best = INT64_MAX;
  for (int B = 1; B <= 4; B *= 2) {
    gv_module *mb = make_model(16 / B);
    if (!mb) { CHECK(0, "model B=%d", B); continue; }
    gv_intra_stage_ctx d = {.base = mb, .ngroups = L, .B = B, .cluster = &lc};
    int mbs[] = {B};
    gv_pipe_problem q = {.ngroups = L, .cluster = &lc, .devices = 1, .mb_choices = mbs, .nmb = 1, .stages = 1, .cost = gv_stage_cost_intra, .ctx = &d};
    gv_pipe_plan pl;
    int rc = gv_pipe_solve(&q, &pl);
    CHECK(rc == 0 && pl.cost[0].xfer_ns >= 1000000, "B=%d: rc %d, overhead %lld", B, rc, (long long)pl.cost[0].xfer_ns);
    if (!rc && pl.step_ns < best) best = pl.step_ns, bestB = B;
    gv_intra_stage_ctx_free(&d);
    gv_module_free(mb);
  }
  CHECK(bestB == 1, "1 ms launches: best B %d", bestB);
  gv_module_free(m);
  printf("%d failures\n", fails);
  return fails ? 1 : 0;
}
