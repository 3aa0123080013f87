/* test_pipeline — the stage DP (planner/pipeline.c) against brute force on
 * small problems: every contiguous partition of up to 7 layer groups into
 * stages, every sub-mesh assignment using all devices, every B; the DP's
 * step time is within 1% of the optimum (its t_max enumeration skips values
 * within 1% of the last one tried) and its plan is consistent. Also:
 * block signatures change the number of solves, not the answer; 1F1B fits
 * memory limits GPipe does not; bad input (more stages than layer groups,
 * more stages than devices, a memory limit no partition fits) fails with one
 * error (the stages-and-devices line read back from stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner/cost.h"
#include "planner/pipeline.h"
#include "runtime/galv_pipe_sched.h"

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

typedef struct {
  int64_t w[16], pw[16], aw[16];
} synth;

/* gv_pipe_solve with stderr captured into errbuf */
static char errbuf[1024];
static int solve_captured(const gv_pipe_problem *p, gv_pipe_plan *pl) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  int rc = gv_pipe_solve(p, pl);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(errbuf, 1, sizeof errbuf - 1, tmp);
  errbuf[n] = 0;
  fclose(tmp);
  return rc;
}

static int cost(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  synth *s = ctx;
  memset(o, 0, sizeof *o);
  int64_t p = nodes * per_node, w = 0, pw = 0, aw = 0;
  for (int g = first; g < last; g++) w += s->w[g], pw += s->pw[g], aw += s->aw[g];
  o->ns = w * 1000 / (B * p) + 30 * p + 7;
  o->state_bytes = pw / p;
  o->act_bytes = aw / (B * p);
  o->zb_act_bytes = first > 0 ? o->act_bytes : 0; /* ZB-H1: a stage that sends a gradient back has a W entry reading as
                                                   * much from B until W */
  o->feasible = true;
  return 0;
}

/* cost, but no range holding group 1 has a plan (a stage program the intra-operator planner cannot plan on any
 * sub-mesh: Megatron's 145.6B row once, whose later stages received a causal mask that dp could not split) */
static int cost_hole(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  cost(ctx, first, last, nodes, per_node, B, o);
  if (first <= 1 && last > 1) memset(o, 0, sizeof *o);
  return 0;
}

/* the ways of a stage (gv_stage_cost.var): an earlier stage stashes (act 4000 per microbatch) or recomputes (twice
 * the time, act 100: its inputs); either with ZeRO-1 (states 6000 -> 3000, zero_ranks 2) or not */
static int cost_ways(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  (void)ctx, (void)nodes, (void)per_node, (void)B;
  memset(o, 0, sizeof *o);
  bool earlier = last < 2;
  for (int r = 0; r < (earlier ? 2 : 1); r++)
    for (int z = 0; z < 2; z++) {
      gv_stage_cost w = {.ns = (r ? 2000 : 1000) * (last - first), .state_bytes = z ? 3000 : 6000,
                         .act_bytes = earlier && !r ? 4000 : 100, .zero_ranks = z ? 2 : 0, .zero_ns = z ? 50 : 0,
                         .feasible = true, .recompute = r};
      if (!o->nvar) *o = w;
      gv_stage_cost_add_var(o);
      o->var[o->nvar - 1] = (gv_stage_var){.ns = w.ns, .state_bytes = w.state_bytes, .act_bytes = w.act_bytes, .zero_ns = w.zero_ns,
                                           .zero_ranks = w.zero_ranks, .recompute = w.recompute};
    }
  return 0;
}

/* the per-layer recomputation ways (gv_stage_cost.layer_rc): an earlier stage stashes everything (1000 ns, act 4000),
 * stashes the layers' inputs and recomputes the layers (1300 ns, act 500) or recomputes the whole stage (2000 ns, act
 * 100); states 6000 each; the last stage one way (1000 ns, act 100) */
static int cost_layer_ways(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  (void)ctx, (void)nodes, (void)per_node, (void)B;
  memset(o, 0, sizeof *o);
  static const int64_t ns[3] = {1000, 1300, 2000}, act[3] = {4000, 500, 100};
  for (int k = 0; k < (last < 2 ? 3 : 1); k++) {
    gv_stage_cost w = {.ns = ns[k] * (last - first), .state_bytes = 6000, .act_bytes = last < 2 ? act[k] : 100, .feasible = true,
                       .recompute = k == 2, .layer_rc = k == 1 ? GV_LAYER_RC_ALL : GV_LAYER_RC_NONE};
    if (!o->nvar) *o = w;
    gv_stage_cost_add_way(o, &w);
  }
  if (o->nvar < 2) o->nvar = 0;
  return 0;
}

/* interleaved 1F1B, P = 2 groups x V = 2 chunks, one layer group per stage: stage i a fast way (1000 ns, states
 * st[0][i]) and, where st[1][i] > 0, a slower one (1500 ns, states st[1][i]); every stage saves 1000 bytes per
 * microbatch and keeps 1000-byte send copies of the values on (not the last stage) and of the gradients back (not the
 * first) */
typedef struct {
  int64_t st[2][4];
} il_synth;
static int cost_il(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  const il_synth *s = ctx;
  (void)last, (void)nodes, (void)per_node, (void)B;
  memset(o, 0, sizeof *o);
  for (int k = 0; k < 2 && s->st[k][first] > 0; k++) {
    gv_stage_cost w = {.ns = k ? 1500 : 1000, .state_bytes = s->st[k][first], .act_bytes = 1000, .feasible = true};
    if (!o->nvar) *o = w;
    gv_stage_cost_add_way(o, &w);
  }
  if (o->nvar < 2) o->nvar = 0;
  o->send_bytes = first < 3 ? 1000 : 0, o->gsend_bytes = first > 0 ? 1000 : 0;
  return 0;
}

/* The same answer (rc, plan, or the binding figure when none fits): the DP with its pruning and without
 * (GALV_PIPE_PRUNE=off) must agree to the last field the plan holds. */
static bool same_plan(int ra, const gv_pipe_plan *a, int rb, const gv_pipe_plan *b) {
  if (ra != rb) return false;
  if (ra) return a->min_need == b->min_need;
  if (a->step_ns != b->step_ns || a->nstages != b->nstages || a->B != b->B || a->max_ns != b->max_ns || a->sum_ns != b->sum_ns ||
      a->schedule != b->schedule || a->first[a->nstages] != b->first[b->nstages])
    return false;
  for (int i = 0; i < a->nstages; i++)
    if (a->first[i] != b->first[i] || a->nodes[i] != b->nodes[i] || a->per_node[i] != b->per_node[i] ||
        a->inflight[i] != b->inflight[i] || a->cost[i].ns != b->cost[i].ns || a->cost[i].state_bytes != b->cost[i].state_bytes ||
        a->cost[i].act_bytes != b->cost[i].act_bytes || a->cost[i].recompute != b->cost[i].recompute)
      return false;
  return true;
}
static int solve_unpruned(const gv_pipe_problem *p, gv_pipe_plan *pl) {
  setenv("GALV_PIPE_PRUNE", "off", 1);
  int rc = gv_pipe_solve(p, pl);
  unsetenv("GALV_PIPE_PRUNE");
  return rc;
}

/* brute force: stages from the start; sizes from the list; all devices used */
static int L_, nsz_;
static int64_t sz_[8], D_, lim_;
static synth *S_;
static int B_;
static gv_schedule sch_;
static int64_t best_;
static int cut_[16], msz_[16];
static void rec(int k, int st, int64_t used) {
  if (k == L_) {
    if (used != D_) return;
    int64_t sum = 0, mx = 0;
    for (int i = 0; i < st; i++) {
      gv_stage_cost c;
      cost(S_, cut_[i], cut_[i + 1], 1, sz_[msz_[i]], B_, &c);
      int64_t inflight = sch_ == GV_SCHED_GPIPE ? B_ : (st - i < B_ ? st - i : B_), saved = inflight * c.act_bytes;
      if (sch_ == GV_SCHED_ZBH1) { /* the runtime's peak over the stage's order: the stash until B, W's bytes until W */
        galv_pipe_act a[3 * 8];
        saved = galv_pipe_peak(a, galv_pipe_order(st, i, B_, GALV_SCHED_ZBH1, a), c.act_bytes, c.zb_act_bytes, i == st - 1, NULL);
      }
      if (c.state_bytes + saved > lim_) return;
      sum += c.ns;
      if (c.ns > mx) mx = c.ns;
    }
    int64_t T = sum + (B_ - 1) * mx;
    if (T < best_) best_ = T;
    return;
  }
  for (int j = k + 1; j <= L_; j++)
    for (int m = 0; m < nsz_; m++) {
      if (used + sz_[m] > D_) continue;
      cut_[st] = k;
      cut_[st + 1] = j;
      msz_[st] = m;
      rec(j, st + 1, used + sz_[m]);
    }
}

int main(void) {
  gv_progname = "test_pipeline";
  gv_cluster c;
  if (gv_cluster_load("h100-sxm", &c)) return 1;
  c.nodes = 1;
  c.devices_per_node = 8;
  srand(7);
  int cases = 0;
  for (int t = 0; t < 90; t++) { /* t >= 60: ZB-H1, the stage count free (min(B, S) in flight on every stage) */
    synth s;
    int L = 1 + t % 7;
    for (int g = 0; g < L; g++) {
      s.w[g] = 100 + rand() % 2000;
      s.pw[g] = 1000 + rand() % 5000;
      s.aw[g] = 1000 + rand() % 8000;
    }
    int64_t D = (t % 3 == 0) ? 4 : (t % 3 == 1 ? 2 : 8);
    int mbs[] = {1, 2, 4, 8};
    gv_schedule sch = t >= 60 ? GV_SCHED_ZBH1 : t % 2 ? GV_SCHED_1F1B : GV_SCHED_GPIPE;
    int64_t lim = t % 4 == 3 ? 9000 : 0;
    gv_pipe_problem p = {.ngroups = L, .sig = NULL, .cluster = &c, .devices = D, .mb_choices = mbs, .nmb = 4,
                         .schedule = sch, .mem_limit = lim, .stages = 0, .cost = cost, .ctx = &s};
    static gv_pipe_plan pl, pt;
    int rc = gv_pipe_solve(&p, &pl);
    /* the same solve on a table kept across all the cases (gv_pipe_table: emptied per solve, sized by the largest
     * case so far): the same answer from as many cost calls */
    static gv_pipe_table *tab;
    if (!tab) tab = gv_pipe_table_new();
    p.table = tab;
    int rt = gv_pipe_solve(&p, &pt);
    p.table = NULL;
    CHECK(rt == rc && pt.step_ns == pl.step_ns && pt.nstages == pl.nstages && pt.B == pl.B && pt.solves == pl.solves &&
              !memcmp(pt.first, pl.first, sizeof pl.first),
          "case %d: on a kept table rc %d step %lld (%lld solves), on its own rc %d step %lld (%lld solves)", t, rt,
          (long long)pt.step_ns, (long long)pt.solves, rc, (long long)pl.step_ns, (long long)pl.solves);
    if (t == 89) gv_pipe_table_free(tab), tab = NULL;
    static gv_pipe_plan pu;
    int ru = solve_unpruned(&p, &pu);
    CHECK(same_plan(rc, &pl, ru, &pu), "case %d: pruned rc %d step %lld, unpruned rc %d step %lld", t, rc, (long long)pl.step_ns,
          ru, (long long)pu.step_ns);
    /* brute force */
    L_ = L, D_ = D, S_ = &s, sch_ = sch, lim_ = lim ? lim : c.memory_bytes;
    nsz_ = 0;
    for (int64_t z = 1; z <= D; z *= 2) sz_[nsz_++] = z;
    int64_t bb = INT64_MAX;
    for (int bi = 0; bi < 4; bi++) {
      B_ = mbs[bi];
      best_ = INT64_MAX;
      rec(0, 0, 0);
      if (best_ < bb) bb = best_;
    }
    cases++;
    if (bb == INT64_MAX) {
      CHECK(rc == 1, "case %d: brute force finds nothing, DP rc %d", t, rc);
      continue;
    }
    CHECK(rc == 0, "case %d: DP failed, brute force %lld", t, (long long)bb);
    if (rc) continue;
    CHECK(pl.step_ns >= bb && pl.step_ns <= bb + bb / 100 + 1, "case %d (L=%d D=%lld %s): DP %lld vs optimum %lld", t, L,
          (long long)D, gv_schedule_name(sch), (long long)pl.step_ns, (long long)bb);
    int64_t used = 0;
    for (int i = 0; i < pl.nstages; i++) {
      used += pl.nodes[i] * pl.per_node[i];
      /* the plan's figure is the runtime's count (galv_pipe_peak over the stage's order) and what the DP charged */
      galv_pipe_act a[3 * 8];
      int held = 0;
      galv_pipe_peak(a, galv_pipe_order(pl.nstages, i, pl.B, sch, a), 1, sch == GV_SCHED_ZBH1, i == pl.nstages - 1, &held);
      /* and its saved bytes the runtime's peak (under ZB-H1 with W's bytes until W), within the limit */
      int64_t pk = galv_pipe_peak(a, galv_pipe_order(pl.nstages, i, pl.B, sch, a), pl.cost[i].act_bytes,
                                  sch == GV_SCHED_ZBH1 ? pl.cost[i].zb_act_bytes : 0, i == pl.nstages - 1, NULL);
      if (sch != GV_SCHED_ZBH1) pk = pl.inflight[i] * pl.cost[i].act_bytes;
      CHECK(pl.inflight[i] == held && gv_pipe_plan_saved(&pl, i) == pk && pl.cost[i].state_bytes + pk <= lim_,
            "case %d (%s, %d stages, B %d): stage %d in flight %lld, the order holds %d; saved %lld, the order's peak %lld; "
            "needs %lld of %lld", t, gv_schedule_name(sch), pl.nstages, pl.B, i, (long long)pl.inflight[i], held,
            (long long)gv_pipe_plan_saved(&pl, i), (long long)pk, (long long)(pl.cost[i].state_bytes + pk), (long long)lim_);
      CHECK(pl.first[i] < pl.first[i + 1], "case %d: empty stage", t);
    }
    CHECK(used == D && pl.first[0] == 0 && pl.first[pl.nstages] == L, "case %d: plan does not cover", t);
  }
  /* larger problems, no brute force: the pruned DP (the first t_max with a plan found by probes) against the
   * unpruned one on 16 groups over 1-4 nodes of 8, each schedule, free and fixed stage counts, equal sub-meshes,
   * stages with several ways, memory limits from none to none fitting */
  {
    int agree = 0, none = 0;
    for (int t = 0; t < 120; t++) {
      synth s;
      int L = 4 + t % 13;
      for (int g = 0; g < L; g++) s.w[g] = 100 + rand() % 4000, s.pw[g] = 1000 + rand() % 9000, s.aw[g] = 1000 + rand() % 20000;
      gv_cluster cn = c;
      cn.nodes = 1 + t % 4;
      int mbs[] = {1, 2, 3, 4, 8, 16};
      static const gv_schedule sc[] = {GV_SCHED_1F1B, GV_SCHED_GPIPE, GV_SCHED_ZBH1};
      static const int64_t lims[] = {0, 40000, 12000, 6000, 3000, 500};
      int64_t D = cn.nodes * cn.devices_per_node;
      gv_pipe_problem p = {.ngroups = L, .cluster = &cn, .devices = D, .mb_choices = mbs, .nmb = 6, .schedule = sc[t % 3],
                           .mem_limit = lims[(t / 3) % 6], .stages = t % 5 == 4 && L >= 4 ? 4 : 0,
                           .mesh_devices = t % 7 == 6 ? D / 4 : 0, .cost = t % 11 == 10 ? cost_ways : cost, .ctx = &s};
      static gv_pipe_plan a, b;
      int ra = gv_pipe_solve(&p, &a), rb = solve_unpruned(&p, &b);
      CHECK(same_plan(ra, &a, rb, &b), "large case %d (L=%d D=%lld %s limit %lld): pruned rc %d step %lld (%d stages), "
            "unpruned rc %d step %lld (%d stages)", t, L, (long long)D, gv_schedule_name(p.schedule), (long long)p.mem_limit,
            ra, (long long)a.step_ns, a.nstages, rb, (long long)b.step_ns, b.nstages);
      agree++, none += ra != 0;
    }
    printf("pruned and unpruned stage DP: %d cases the same (%d with no plan)\n", agree, none);
  }
  /* block signatures: same answer, fewer solves */
  {
    synth s;
    for (int g = 0; g < 12; g++) s.w[g] = 500, s.pw[g] = 3000, s.aw[g] = 4000;
    uint64_t sig[12];
    for (int g = 0; g < 12; g++) sig[g] = 42;
    int mbs[] = {4, 8};
    gv_pipe_problem p = {.ngroups = 12, .sig = sig, .cluster = &c, .devices = 8, .mb_choices = mbs, .nmb = 2,
                         .schedule = GV_SCHED_1F1B, .cost = cost, .ctx = &s};
    static gv_pipe_plan a, b;
    int r1 = gv_pipe_solve(&p, &a);
    p.sig = NULL;
    int r2 = gv_pipe_solve(&p, &b);
    CHECK(r1 == 0 && r2 == 0 && a.step_ns == b.step_ns, "signatures change the answer");
    CHECK(a.solves < b.solves, "signatures: %lld solves vs %lld", (long long)a.solves, (long long)b.solves);
    printf("12 equal groups on 8 devices: %lld solves with signatures, %lld without\n", (long long)a.solves,
           (long long)b.solves);
    /* a limit that 1F1B meets and GPipe does not: 4 stages, B = 8 */
    p.stages = 4;
    int mb8[] = {8};
    p.mb_choices = mb8;
    p.nmb = 1;
    p.mem_limit = 3000 * 3 / 2 + 4 * 4000 * 3 / 16 + 1; /* 3 groups on 2 devices, 4 in flight */
    p.schedule = GV_SCHED_1F1B;
    int r3 = gv_pipe_solve(&p, &a);
    p.schedule = GV_SCHED_GPIPE;
    int r4 = gv_pipe_solve(&p, &b);
    CHECK(r3 == 0 && r4 == 1, "1F1B fits (%d), GPipe does not (%d)", r3, r4);
    /* the error's figure binds: the partition whose largest stage needs the least; GPipe fits a limit of
     * that (printed in GiB to 3 decimals: +-0.5 MiB; the sizes scaled by 2^20) plus 1 MiB, not one 1 MiB less */
    p.mem_limit *= 1 << 20;
    for (int g = 0; g < 12; g++) s.pw[g] *= 1 << 20, s.aw[g] *= 1 << 20;
    int r5 = solve_captured(&p, &b);
    double need = 0;
    const char *at = strstr(errbuf, "still needs ");
    CHECK(r5 == 1 && at && sscanf(at, "still needs %lf GiB", &need) == 1 && strstr(errbuf, " in groups ") &&
              strchr(errbuf, '\n') == errbuf + strlen(errbuf) - 1,
          "GPipe over the limit: rc %d, error '%s'", r5, errbuf);
    p.mem_limit = (int64_t)(need * (1 << 30)) + (1 << 20);
    int r6 = gv_pipe_solve(&p, &b);
    p.mem_limit -= 1 << 21;
    int r7 = solve_captured(&p, &b);
    CHECK(r6 == 0 && r7 == 1, "GPipe at the error's %.3f GiB + 1 MiB: %d (fits), - 1 MiB: %d (does not)", need, r6, r7);
    printf("GPipe over the limit: %s", errbuf);
  }
  /* bad input */
  {
    synth s = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    int mbs[] = {1};
    gv_pipe_problem p = {.ngroups = 3, .cluster = &c, .devices = 4, .mb_choices = mbs, .nmb = 1, .stages = 4,
                         .cost = cost, .ctx = &s};
    static gv_pipe_plan pl;
    CHECK(gv_pipe_solve(&p, &pl) == -1, "more stages than groups must fail");
    p.stages = 3;
    p.devices = 2;
    int rc = solve_captured(&p, &pl);
    CHECK(rc == -1 && strstr(errbuf, "pipeline: 3 stages need at least as many devices (have 2)") &&
              strchr(errbuf, '\n') == errbuf + strlen(errbuf) - 1,
          "3 stages on 2 devices: rc %d, error '%s'", rc, errbuf);
    p.devices = 4;
    p.stages = 0;
    p.mem_limit = 1;
    s.pw[0] = s.pw[1] = s.pw[2] = 1 << 20;
    CHECK(gv_pipe_solve(&p, &pl) == 1, "no partition fits must fail");
    /* stages that plan but no partition made of them, whatever the limit: the error names the ranges without a plan
     * (the shortest: group 1 alone), not a memory figure as if the limit bound */
    p.mem_limit = 0;
    p.stages = 3;
    p.cost = cost_hole;
    rc = solve_captured(&p, &pl);
    CHECK(rc == 1 && strstr(errbuf, "has a plan for every stage, whatever the memory limit") &&
              strstr(errbuf, "(the shortest: groups 1-1 on 1 device;") && strchr(errbuf, '\n') == errbuf + strlen(errbuf) - 1,
          "a group no stage plans: rc %d, error '%s'", rc, errbuf);
    printf("a group no stage plans: %s", errbuf);
  }
  /* the transfer term on a stage of 2 devices: per device alpha + bytes / 2 / bandwidth per message, the
   * received bytes all-gathered over the 2 ((p-1) alpha + (p-1)/p bytes / bandwidth), the launches;
   * training: the gradients back the same way */
  {
    gv_cluster t = c;
    t.intra_latency_us = 2, t.intra_gbps = 100, t.launch_overhead_us = 5;
    int64_t x = gv_pipe_transfer_ns(&t, 1, 2, 1000000, 500000, 3, false);
    CHECK(x == (2000 + 5000) + (2000 + 5000) + (2000 + 2500) + 3 * 5000, "transfer inference: %lld ns", (long long)x);
    int64_t y = gv_pipe_transfer_ns(&t, 1, 2, 1000000, 0, 0, true);
    CHECK(y == (2000 + 5000) + (2000 + 5000) + (2000 + 5000), "transfer training (no output: no message): %lld ns", (long long)y);
    int64_t z = gv_pipe_transfer_ns(&t, 1, 1, 1000000, 0, 0, false);
    CHECK(z == 2000 + 10000, "transfer on one device: %lld ns", (long long)z);
    /* values kept split over dp = D (gv_pipe_transfer_split_ns): each rank its rows, bytes / D in the message, no
     * all-gather of them; the rest as above; D = 1: the replicated figure */
    int64_t s1 = gv_pipe_transfer_split_ns(&t, 1, 2, 1000000, 500000, 1000000, 500000, 2, 1, 3, false);
    CHECK(s1 == (2000 + 5000) + (2000 + 2500) + 3 * 5000, "split transfer, all rows: %lld ns", (long long)s1);
    int64_t s2 = gv_pipe_transfer_split_ns(&t, 1, 2, 1000000, 500000, 600000, 500000, 2, 1, 3, false);
    CHECK(s2 == (2000 + 5000) + (2000 + 2000) + (2000 + 2500) + 3 * 5000, "split transfer, 400000 bytes whole: %lld ns",
          (long long)s2);
    int64_t s3 = gv_pipe_transfer_split_ns(&t, 1, 2, 1000000, 500000, 1000000, 500000, 1, 1, 3, false);
    CHECK(s3 == x, "split transfer with D = 1: %lld ns, replicated %lld", (long long)s3, (long long)x);
    int64_t s4 = gv_pipe_transfer_split_ns(&t, 1, 2, 1000000, 0, 1000000, 0, 2, 1, 0, true);
    CHECK(s4 == 2 * (2000 + 5000) && s4 < y, "split transfer training: %lld ns (replicated %lld)", (long long)s4, (long long)y);
    /* q = 2 ranks holding each block (tp) on a stage of 2 nodes x 2: each sends a half of its block across nodes
     * (10 us + 250000 / 10 GB/s) and the receivers all-gather the block inside the node (2 us + 250000 / 100 GB/s),
     * against the whole block across (10 us + 500000 / 10 GB/s); inside one node q is not used */
    gv_cluster u = t;
    u.nodes = 2, u.devices_per_node = 2, u.inter_latency_us = 10, u.inter_gbps = 10;
    int64_t s5 = gv_pipe_transfer_split_ns(&u, 2, 2, 1000000, 0, 1000000, 0, 2, 2, 0, false);
    int64_t s6 = gv_pipe_transfer_split_ns(&u, 2, 2, 1000000, 0, 1000000, 0, 2, 1, 0, false);
    CHECK(s5 == (10000 + 25000) + (2000 + 2500) && s6 == 10000 + 50000, "split transfer scattered over 2: %lld ns, whole blocks %lld",
          (long long)s5, (long long)s6);
    gv_cluster w = u;
    w.nodes = 1, w.devices_per_node = 4;
    int64_t s7 = gv_pipe_transfer_split_ns(&w, 1, 4, 1000000, 0, 1000000, 0, 2, 2, 0, false);
    CHECK(s7 == 2000 + 5000, "split transfer inside a node, q = 2 given: %lld ns (not scattered)", (long long)s7);
    CHECK(gv_pipe_across(&u, 4) && gv_pipe_across(&u, 2) && !gv_pipe_across(&u, 1) && !gv_pipe_across(&w, 4), "gv_pipe_across");
  }
  /* the once-per-step part: the slowest stage's; interleaved, the slowest device group's V stages together (stages
   * g, g + P, ...: their reductions share the device) */
  {
    gv_pipe_plan *q = calloc(1, sizeof *q);
    CHECK(q != NULL, "out of memory");
    if (q) {
      q->nstages = 4, q->vstages = 1, q->B = 4, q->step_ns = 1000;
      const int64_t on[4] = {10, 20, 30, 40}, up[4] = {1, 2, 3, 4};
      for (int i = 0; i < 4; i++) q->cost[i].once_ns = on[i], q->cost[i].opt_ns = up[i];
      gv_pipe_step_parts a = gv_pipe_plan_parts(q);
      CHECK(gv_pipe_plan_once_ns(q) == 40 && a.k == 3 && a.upd == 4 && a.sync == 36, "once per step, 1F1B: %lld (stage %d)",
            (long long)gv_pipe_plan_once_ns(q), a.k);
      q->vstages = 2;
      a = gv_pipe_plan_parts(q);
      CHECK(gv_pipe_plan_once_ns(q) == 60 && a.k == 1 && a.upd == 6 && a.sync == 54 && a.sched + a.sync + a.zero + a.upd ==
                                                                                          gv_pipe_plan_full_ns(q),
            "once per step, interleaved 2 x 2: %lld (group %d)", (long long)gv_pipe_plan_once_ns(q), a.k);
      free(q);
    }
  }
  /* device counts fixed per stage (--stage-devices): the DP's cuts are the best over every cut with
   * those sub-meshes in that order; a count that is no sub-mesh or a wrong sum fails */
  {
    synth sy;
    for (int g = 0; g < 6; g++) sy.w[g] = 300 + 150 * g, sy.pw[g] = 1000, sy.aw[g] = 1000;
    gv_cluster c4 = c;
    c4.nodes = 1, c4.devices_per_node = 4;
    int mbs[] = {4}, sd[] = {2, 1}, bad1[] = {3, 1}, bad2[] = {2, 2};
    gv_pipe_problem p = {.ngroups = 6, .cluster = &c4, .devices = 3, .mb_choices = mbs, .nmb = 1, .stages = 2, .stage_devices = sd,
                         .cost = cost, .ctx = &sy};
    static gv_pipe_plan pl;
    int rc = gv_pipe_solve(&p, &pl);
    int64_t best = INT64_MAX;
    for (int cut = 1; cut < 6; cut++) {
      gv_stage_cost a, b;
      cost(&sy, 0, cut, 1, 2, 4, &a);
      cost(&sy, cut, 6, 1, 1, 4, &b);
      int64_t T = a.ns + b.ns + 3 * (a.ns > b.ns ? a.ns : b.ns);
      if (T < best) best = T;
    }
    CHECK(rc == 0 && pl.per_node[0] == 2 && pl.per_node[1] == 1 && pl.step_ns >= best && pl.step_ns <= best + best / 100 + 1,
          "stage devices 2,1: rc %d, %lld,%lld devices, step %lld vs %lld", rc, (long long)pl.per_node[0], (long long)pl.per_node[1],
          (long long)pl.step_ns, (long long)best);
    p.stage_devices = bad1;
    CHECK(gv_pipe_solve(&p, &pl) == -1, "3,1 on 3 devices");
    p.stage_devices = bad2;
    CHECK(gv_pipe_solve(&p, &pl) == -1, "2,2 on 3 devices");
  }
  /* more stages and microbatches are no longer free: 8 equal groups, one
   * device per stage, S = 1..8 (as galvc's auto mode), analytic stage cost.
   * With a fast link the best plan has the most stages; when the bytes
   * between groups cross a slow link it has fewer; a large per-message
   * latency cuts the microbatches. */
  {
    gv_cluster fast = c;
    fast.nodes = 1, fast.devices_per_node = 8;
    gv_group_stats g[8];
    for (int i = 0; i < 8; i++) g[i] = (gv_group_stats){.flops = 400000000000ll, .param_bytes = 1 << 20, .act_bytes = 1 << 20, .out_bytes = 64 << 20};
    gv_analytic_ctx ax = {.g = g, .ngroups = 8, .batch = 64, .training = false, .dtype_bytes = 2, .cluster = &fast};
    gv_cluster slow = fast, lat = fast;
    slow.intra_gbps = 0.5;        /* 64 MiB per cut: 134 ms at the full batch, against 2.4 ms of compute per group */
    lat.intra_latency_us = 5000;  /* 5 ms per message */
    const gv_cluster *cl[3] = {&fast, &slow, &lat};
    static gv_pipe_plan best[3], pl;
    int mbs[] = {1, 2, 4, 8, 16, 32, 64};
    for (int k = 0; k < 3; k++) {
      best[k].step_ns = INT64_MAX;
      ax.cluster = cl[k];
      for (int S = 1; S <= 8; S++) {
        gv_pipe_problem p = {.ngroups = 8, .cluster = cl[k], .devices = S, .mb_choices = mbs, .nmb = 7, .schedule = GV_SCHED_1F1B,
                             .stages = S, .mesh_devices = 1, .cost = gv_stage_cost_analytic, .ctx = &ax};
        int rc = gv_pipe_solve(&p, &pl);
        CHECK(rc == 0, "transfer DP: cluster %d, %d stages: rc %d", k, S, rc);
        if (!rc && pl.step_ns < best[k].step_ns) best[k] = pl;
      }
    }
    printf("fast link: %d stages x %d microbatches, %.3f ms; slow link: %d x %d, %.3f ms; 5 ms latency: %d x %d, %.3f ms\n",
           best[0].nstages, best[0].B, best[0].step_ns / 1e6, best[1].nstages, best[1].B, best[1].step_ns / 1e6, best[2].nstages,
           best[2].B, best[2].step_ns / 1e6);
    CHECK(best[0].nstages == 8, "fast link: %d stages (expected 8)", best[0].nstages);
    CHECK(best[1].nstages < best[0].nstages, "slow link: %d stages, not fewer than %d", best[1].nstages, best[0].nstages);
    CHECK(best[2].B < best[0].B, "5 ms latency: B %d, not fewer than %d", best[2].B, best[0].B);
    CHECK(best[0].cost[1].xfer_ns > 0 && best[0].cost[1].xfer_ns < best[0].cost[1].ns, "xfer_ns of a middle stage: %lld",
          (long long)best[0].cost[1].xfer_ns);
  }
  /* a shared parameter (a tied embedding: 8 MiB read by groups 0 and 7): a stage holding group 7 but not 0
   * holds a copy (its state bytes grow by 16 bytes per f32 word, training) and sums the gradient with the
   * other holder once per step (once_ns: 2 point-to-point messages of 8 MiB); one stage of all the groups,
   * or one without them, does neither */
  {
    gv_cluster one = c;
    one.nodes = 1, one.devices_per_node = 8;
    gv_group_stats g[8];
    for (int i = 0; i < 8; i++) g[i] = (gv_group_stats){.flops = 1000000000ll, .param_bytes = 1 << 20, .act_bytes = 1 << 20, .out_bytes = 1 << 20};
    g[0].param_bytes += 8 << 20; /* counted in its first reader's group */
    int groups[2] = {0, 7};
    gv_shared_param sp = {.bytes = 8 << 20, .ngroups = 2, .groups = groups};
    gv_analytic_ctx ax = {.g = g, .ngroups = 8, .batch = 8, .training = true, .dtype_bytes = 4, .cluster = &one,
                          .opt_states = 2}; /* AdamW: weight, gradient sum, two moments */
    gv_analytic_ctx as = ax;
    as.shared = &sp, as.nshared = 1;
    gv_stage_cost a0, a1, s0, s1, sall, smid;
    gv_stage_cost_analytic(&ax, 4, 8, 1, 1, 1, &a0);
    gv_stage_cost_analytic(&as, 4, 8, 1, 1, 1, &s0);
    gv_stage_cost_analytic(&ax, 0, 4, 1, 1, 1, &a1);
    gv_stage_cost_analytic(&as, 0, 4, 1, 1, 1, &s1);
    gv_stage_cost_analytic(&as, 0, 8, 1, 1, 1, &sall);
    gv_stage_cost_analytic(&as, 2, 6, 1, 1, 1, &smid);
    int64_t p2p = 2 * gv_cost_collective(&one, GV_COLL_P2P, 8 << 20, 2, false);
    CHECK(s0.state_bytes - a0.state_bytes == (8 << 20) / 4 * 16, "shared copy in the later stage: %lld more state bytes",
          (long long)(s0.state_bytes - a0.state_bytes));
    CHECK(s1.state_bytes == a1.state_bytes, "the first reader's stage: %lld vs %lld state bytes", (long long)s1.state_bytes,
          (long long)a1.state_bytes);
    CHECK(s0.once_ns - a0.once_ns == p2p && s1.once_ns - a1.once_ns == p2p, "gradient sum per step: %lld / %lld ns, expected %lld",
          (long long)(s0.once_ns - a0.once_ns), (long long)(s1.once_ns - a1.once_ns), (long long)p2p);
    CHECK(sall.once_ns == 0 && smid.once_ns == 0, "one stage of all groups / none of the readers: once %lld / %lld ns",
          (long long)sall.once_ns, (long long)smid.once_ns);
    /* a range sending later groups integers only (group 0: a position ids' computation, its floating-point values read
     * by no later group) is no training stage before the last: infeasible, int_only; with group 1 it is one (group 1
     * reaches group 7); the last stage needs nothing sent; float_reach 0 (not known) counts as sending */
    {
      gv_group_stats gi[8];
      memcpy(gi, g, sizeof gi);
      gi[0].float_reach = -1, gi[1].float_reach = 8;
      gv_analytic_ctx ai = ax;
      ai.g = gi;
      gv_stage_cost i0, i01, ilast, iinf, inf0;
      gv_stage_cost_analytic(&ai, 0, 1, 1, 1, 1, &i0);
      gv_stage_cost_analytic(&ai, 0, 2, 1, 1, 1, &i01);
      gv_stage_cost_analytic(&ai, 0, 8, 1, 1, 1, &ilast);
      ai.training = false;
      gv_stage_cost_analytic(&ai, 0, 1, 1, 1, 1, &iinf);
      gv_stage_cost_analytic(&ax, 0, 1, 1, 1, 1, &inf0);
      CHECK(!i0.feasible && i0.int_only, "a range sending integers only: infeasible (%d), int_only (%d)", i0.feasible, i0.int_only);
      CHECK(i01.feasible && !i01.int_only && ilast.feasible && iinf.feasible && inf0.feasible,
            "with a group reaching further / the last stage / inference / reach not known: feasible (%d %d %d %d)",
            i01.feasible, ilast.feasible, iinf.feasible, inf0.feasible);
    }
    CHECK(gv_pipe_shared_extra_bytes(&sp, 1, 4, 8) == 8 << 20 && gv_pipe_shared_extra_bytes(&sp, 1, 0, 8) == 0 &&
              gv_pipe_shared_extra_bytes(&sp, 1, 2, 6) == 0,
          "extra bytes of shared parameters per range");
    /* ZeRO-1 (--pipeline-zero 1): the same stage on 8 devices with its two AdamW moments (8 bytes per f32
     * word) over dp: state bytes 8 x words / tp x (1 - 1/dp) fewer, the all-gather of the weights per step;
     * an earlier stage with a stash also keeps the backward entry's copy of its weights (4 bytes per word) */
    gv_analytic_ctx az = ax;
    az.zero = 1;
    gv_stage_cost n8, z8, e8, r8;
    gv_stage_cost_analytic(&ax, 4, 8, 1, 8, 1, &n8);
    gv_stage_cost_analytic(&az, 4, 8, 1, 8, 1, &z8);
    long long dp = 0, tp = 0;
    sscanf(z8.desc, "dp=%lld,tp=%lld", &dp, &tp);
    int64_t words = 4 * (1 << 20) / 4;
    CHECK(!strcmp(n8.desc, z8.desc) && dp > 1 && z8.zero_ranks == dp && z8.zero_ns > 0 && n8.zero_ns == 0 &&
              n8.state_bytes - z8.state_bytes == 8 * words / tp - (8 * words + dp - 1) / dp / tp,
          "ZeRO-1 over dp: %s / %s, %lld - %lld state bytes, all-gather %lld ns over %lld ranks", n8.desc, z8.desc,
          (long long)n8.state_bytes, (long long)z8.state_bytes, (long long)z8.zero_ns, (long long)z8.zero_ranks);
    /* ZeRO-2 (--pipeline-zero 2, the runtime's per-step reduce-scatter): beside ZeRO-1's state this rank's chunk of
     * the sums (4 bytes per word / tp / dp); the step's gradient all-reduce replaced by a reduce-scatter (cheaper),
     * the all-gather as ZeRO-1's, both ZeRO's collectives (zero_ns: the whole once_ns here) */
    gv_analytic_ctx az2 = ax;
    az2.zero = 2;
    gv_stage_cost t8;
    gv_stage_cost_analytic(&az2, 4, 8, 1, 8, 1, &t8);
    CHECK(!strcmp(t8.desc, z8.desc) && t8.zero_ranks == dp && t8.zero == GV_ZERO_2 && t8.zero_ns > z8.zero_ns && t8.once_ns == t8.zero_ns &&
              t8.state_bytes - z8.state_bytes == (4 * words / tp + dp - 1) / dp && t8.once_ns < z8.once_ns && t8.ns == z8.ns,
          "ZeRO-2 over dp: %s, state %lld vs ZeRO-1 %lld, once %lld vs %lld ns", t8.desc, (long long)t8.state_bytes,
          (long long)z8.state_bytes, (long long)t8.once_ns, (long long)z8.once_ns);
    gv_analytic_ctx ar = ax;
    ar.recompute = true;
    gv_stage_cost_analytic(&ax, 1, 5, 1, 1, 1, &e8); /* g[0] holds the shared copy: a range without it */
    gv_stage_cost_analytic(&ar, 1, 5, 1, 1, 1, &r8);
    /* one weights buffer for an earlier stage's two entries (runtime/pipe.c galv_pipe_bwd_base): stashing holds the
     * parameters once, as recomputing does */
    CHECK(e8.state_bytes == r8.state_bytes, "an earlier stage's backward entry holds no copy of the weights: %lld vs %lld bytes",
          (long long)e8.state_bytes, (long long)r8.state_bytes);
  }
  /* the timeline of each schedule (gv_pipe_timeline_make): 4 equal stages of 3 us per microbatch (F : B = 1 : 2;
   * ZB-H1 F : B : W = 1 : 1 : 1), B = 8. GPipe and 1F1B: (B + S - 1) t; ZB-H1: B t + (S - 1)(F + B - W), the zero-bubble
   * paper's H1 bubble (a third of 1F1B's here); each stage busy B t; held microbatches B, S - s, min(B, S) */
  {
    static gv_pipe_plan pl = {.nstages = 4, .B = 8};
    for (int i = 0; i < 4; i++) pl.cost[i].ns = 3000, pl.cost[i].act_bytes = 100, pl.cost[i].zb_act_bytes = 100;
    int64_t want[3] = {11 * 3000, 11 * 3000, 8 * 3000 + 3 * 1000};
    for (int sc = 0; sc < 3; sc++) {
      static gv_pipe_timeline tl;
      int rc = gv_pipe_timeline_make(&pl, true, (gv_schedule)sc, &tl);
      CHECK(rc == 0 && tl.makespan_ns == want[sc], "%s timeline: rc %d, makespan %lld, expected %lld", gv_schedule_name((gv_schedule)sc),
            rc, (long long)tl.makespan_ns, (long long)want[sc]);
      if (rc) continue;
      CHECK(tl.nev == 4 * 8 * (sc == 2 ? 3 : 2), "%s: %d events", gv_schedule_name((gv_schedule)sc), tl.nev);
      for (int i = 0; i < 4; i++) {
        int held = sc == 0 ? 8 : sc == 1 ? 4 - i : 4;
        CHECK(tl.busy_ns[i] == 8 * 3000 && tl.bubble_ns[i] == tl.makespan_ns - tl.busy_ns[i] && tl.peak_mb[i] == held &&
                  (sc == 2 ? tl.peak_bytes[i] >= held * 100 && tl.peak_bytes[i] <= (held + 1) * 100 : tl.peak_bytes[i] == held * 100),
              "%s stage %d: busy %lld, bubble %lld, %d microbatches held (expected %d), %lld bytes", gv_schedule_name((gv_schedule)sc), i,
              (long long)tl.busy_ns[i], (long long)tl.bubble_ns[i], tl.peak_mb[i], held, (long long)tl.peak_bytes[i]);
      }
      /* W(s, j) after B(s, j), B(s, j) after B(s+1, j) and F(s, j), F(s, j) after F(s-1, j) */
      int64_t end[3][4][8];
      for (int k = 0; k < tl.nev; k++) end[tl.ev[k].kind][tl.ev[k].stage][tl.ev[k].mb] = tl.ev[k].start_ns + tl.ev[k].dur_ns;
      for (int k = 0; k < tl.nev; k++) {
        const gv_pipe_event *e = &tl.ev[k];
        int64_t dep = e->kind == 1 ? (e->stage ? end[1][e->stage - 1][e->mb] : 0)
                      : e->kind == 0 ? (e->stage < 3 && end[0][e->stage + 1][e->mb] > end[1][e->stage][e->mb] ? end[0][e->stage + 1][e->mb]
                                                                                                         : end[1][e->stage][e->mb])
                                     : end[0][e->stage][e->mb];
        CHECK(e->start_ns >= dep, "%s: event %d of stage %d, mb %d starts at %lld before its dependency ends (%lld)",
              gv_schedule_name((gv_schedule)sc), e->kind, e->stage, e->mb, (long long)e->start_ns, (long long)dep);
      }
      printf("timeline %s: 4 stages x 8 microbatches: step %lld ns, bubble of stage 0 %lld ns, held %d %d %d %d\n",
             gv_schedule_name((gv_schedule)sc), (long long)tl.makespan_ns, (long long)tl.bubble_ns[0], tl.peak_mb[0], tl.peak_mb[1],
             tl.peak_mb[2], tl.peak_mb[3]);
      gv_pipe_timeline_free(&tl);
    }
    /* ZB-H1's order: per microbatch one F, B, W each, W after B; the peak over the order with sizes */
    for (int S = 1; S <= 6; S++)
      for (int B = 1; B <= 9; B++)
        for (int st = 0; st < S; st++) {
          galv_pipe_act a[27];
          int n = galv_pipe_order(S, st, B, GALV_SCHED_ZBH1, a), cnt[3][9] = {{0}}, bpos[9], okw = 1;
          for (int k = 0; k < n; k++) {
            int kind = a[k].fwd ? 1 : a[k].w ? 2 : 0;
            cnt[kind][a[k].mb]++;
            if (kind == 0) bpos[a[k].mb] = k;
            if (kind == 2) okw &= cnt[0][a[k].mb] == 1 && bpos[a[k].mb] < k;
          }
          int once = n == 3 * B;
          for (int j = 0; j < B; j++) once &= cnt[0][j] == 1 && cnt[1][j] == 1 && cnt[2][j] == 1;
          int pmb = 0;
          int64_t pk = galv_pipe_peak(a, n, 10, 1, 0, &pmb);
          CHECK(once && okw && pmb == (B < S ? B : S), "zb-h1 order S=%d s=%d B=%d: each entry once %d, W after B %d, held %d", S,
                st, B, once, okw, pmb);
          (void)pk;
          /* the planner's rule (the DP's charge, a plan's and a replayed plan's figure) is what the order holds */
          for (gv_schedule sc = GV_SCHED_GPIPE; sc <= GV_SCHED_ZBH1; sc++) {
            int held = 0;
            galv_pipe_peak(a, galv_pipe_order(S, st, B, sc, a), 10, sc == GV_SCHED_ZBH1, st == S - 1, &held);
            CHECK(gv_pipe_inflight(sc, S, S - st, B) == held, "%s S=%d s=%d B=%d: gv_pipe_inflight %lld, the order holds %d",
                  gv_schedule_name(sc), S, st, B, (long long)gv_pipe_inflight(sc, S, S - st, B), held);
          }
        }
    /* interleaved: each group's order runs every (chunk, microbatch) F and B once, B after F; the stage orders are
     * restrictions with F(j) and B(j) in microbatch order; P = 2, V = 2, B = 4 worked out by hand from Megatron's formulas */
    for (int P = 2; P <= 4; P++)
      for (int V = 2; V <= 3; V++)
        for (int B = P; B <= 3 * P; B += P)
          for (int d = 0; d < P; d++) {
            galv_pipe_act a[2 * 3 * 12];
            int n = galv_pipe_order_group(P, V, d, B, a), f[3][12] = {{0}}, b[3][12] = {{0}}, good = n == 2 * V * B, held = 0, pk = 0;
            for (int k = 0; k < n && good; k++) {
              int (*c)[12] = a[k].fwd ? f : b;
              good &= a[k].chunk >= 0 && a[k].chunk < V && a[k].mb >= 0 && a[k].mb < B && !c[a[k].chunk][a[k].mb]++;
              good &= a[k].fwd || f[a[k].chunk][a[k].mb];
              held += a[k].fwd ? 1 : -1, pk = held > pk ? held : pk;
            }
            int pmb = 0;
            int64_t one[3] = {1, 1, 1}, peak = galv_pipe_peak_group(a, n, one, &pmb);
            for (int c = 0; c < V && good; c++) {
              galv_pipe_act sa[2 * 3 * 12];
              int m = galv_pipe_order_v(P * V, V, c * P + d, B, GALV_SCHED_INTERLEAVED, sa), nf = 0, nb = 0;
              good &= m == 2 * B;
              for (int k = 0; k < m && good; k++) good &= sa[k].fwd ? sa[k].mb == nf++ : sa[k].mb == nb++;
            }
            CHECK(good && peak == pk && pmb == pk, "interleaved order P=%d V=%d d=%d B=%d: entries %d, peak %lld / %d (held %d)", P, V, d,
                  B, n, (long long)peak, pmb, pk);
          }
    {
      static const char *const want[2] = {"F00 F01 F10 F11 F02 B10 F03 B11 F12 B00 F13 B01 B12 B13 B02 B03",
                                          "F00 F01 F10 B10 F11 B11 F02 B00 F03 B01 F12 B12 F13 B13 B02 B03"};
      for (int d = 0; d < 2; d++) {
        galv_pipe_act a[16];
        char got[128] = "";
        int n = galv_pipe_order_group(2, 2, d, 4, a);
        for (int k = 0; k < n; k++)
          snprintf(got + strlen(got), sizeof got - strlen(got), "%s%c%d%d", k ? " " : "", a[k].fwd ? 'F' : 'B', a[k].chunk, a[k].mb);
        CHECK(!strcmp(got, want[d]), "interleaved P=2 V=2 B=4 group %d: %s, expected %s", d, got, want[d]);
      }
    }
    /* a group's memory over its order (galv_pipe_peak_group_mem), worked by hand: P = 2, V = 2, B = 2, group 1 (chunk 1
     * the last stage): F00 F01 F10 F11 B10 B11 B00 B01; stashes 10 / 100, forward sends 1 / 0, backward sends 2 / 20,
     * batons 1000. After F01: 22 + a baton = 1022; F11: 1222; B10 sends 20 before its 100 go: 1242; B11: 1162 - 100 + a
     * baton = 2062, the peak; B00, B01: -8 each. Without batons 242 (after B10's sends); chunk 1 not the last stage (its
     * sends after its stash went) and no batons: 222 (after F11). */
    {
      galv_pipe_act a[8];
      int n = galv_pipe_order_group(2, 2, 1, 2, a);
      const int64_t fb[2] = {10, 100}, fs[2] = {1, 0}, bs[2] = {2, 20}, z[2] = {0, 0}; /* every copy kept until the end */
      int64_t pk = galv_pipe_peak_group_mem(a, n, 2, fb, z, z, fs, bs, NULL, 1, 1000),
              pk0 = galv_pipe_peak_group_mem(a, n, 2, fb, z, z, fs, bs, NULL, 1, 0),
              pkn = galv_pipe_peak_group_mem(a, n, 2, fb, z, z, fs, bs, NULL, -1, 0);
      CHECK(n == 8 && pk == 2062 && pk0 == 242 && pkn == 222,
            "interleaved group memory: %d entries, peak %lld (expected 2062), without batons %lld (242), no last stage %lld (222)",
            n, (long long)pk, (long long)pk0, (long long)pkn);
    }
    /* the copies' releases (galv_pipe_il_grad_release), P = 2, V = 2, B = 4 (the orders above): stage 3's gradient
     * copies j go at its F(j') with j' the first forward after B(j) in stage 2's order F0 F1 B0 B1 F2 F3 B2 B3: 2, 2,
     * none, none; stage 2's from stage 1's F0 F1 F2 B0 F3 B1 B2 B3: 3, none...; stage 1's from stage 0's F0..F3
     * B0..B3: none; stage 0 sends none. Group 1's memory with them (stashes 10 / 100, forward sends 1 / 0 released
     * at B, backward sends 2 / 20, no batons): F00 11, F01 22, F10 122, B10 142 then 42, F11 142, B11 162 then 62,
     * F02 73, B00 64, F03 75, B01 66, F12 releases stage 3's two gradient copies 66 - 40 + 100 = 126, B12 146 then
     * 46, F13 146, B13 166 (the peak) then 66, B02 57, B03 48. Kept until the end (as before): 208 (after B13). With
     * 64-byte batons (galv_pipe_group_held), three changes of chunk before B13's peak: 358. */
    {
      galv_pipe_act a[16];
      int rel[4][4], want[4][4] = {{-1, -1, -1, -1}, {-1, -1, -1, -1}, {3, -1, -1, -1}, {2, 2, -1, -1}}, same = 1;
      for (int st = 0; st < 4; st++) {
        galv_pipe_il_grad_release(2, 2, st, 4, a, rel[st]);
        for (int j = 0; j < 4; j++) same &= rel[st][j] == want[st][j];
      }
      CHECK(same, "interleaved gradient copies' releases: stage 2 %d %d %d %d, stage 3 %d %d %d %d", rel[2][0], rel[2][1],
            rel[2][2], rel[2][3], rel[3][0], rel[3][1], rel[3][2], rel[3][3]);
      const int64_t fb[2] = {10, 100}, fs[2] = {1, 0}, bs[2] = {2, 20}, z[2] = {0, 0};
      int relcnt[8] = {0, 0, 0, 0, 0, 0, 2, 0}; /* chunk 1 (stage 3): two at F(2) */
      int n = galv_pipe_order_group(2, 2, 1, 4, a);
      int64_t pr = galv_pipe_peak_group_mem(a, n, 4, fb, fs, bs, z, z, relcnt, 1, 0),
              pk = galv_pipe_peak_group_mem(a, n, 4, fb, z, z, fs, bs, NULL, 1, 0);
      galv_pipe_act g[16];
      int64_t gh = galv_pipe_group_held(2, 2, 1, 4, fb, fs, bs, NULL, NULL, g);
      CHECK(n == 16 && pr == 166 && pk == 208 && gh == 166 + 3 * GALV_PIPE_BATON_BYTES,
            "interleaved group memory with the copies' releases: %lld (expected 166), kept %lld (208), group_held %lld (166 "
            "+ 3 batons of 64 at the group's chunk changes before B13: 358)", (long long)pr, (long long)pk, (long long)gh);
    }
    /* the interleaved timeline of 4 stages on 2 groups: one entry per group at a time, no deadlock */
    {
      static gv_pipe_plan ip = {.nstages = 4, .B = 4, .vstages = 2};
      for (int i = 0; i < 4; i++) ip.cost[i].ns = 3000, ip.cost[i].act_bytes = 10;
      static gv_pipe_timeline tl;
      int rc = gv_pipe_timeline_make(&ip, true, GV_SCHED_INTERLEAVED, &tl);
      CHECK(rc == 0 && tl.ngroups == 2 && tl.nev == 32 && tl.group_peak_mb[0] == 5 && tl.group_peak_bytes[0] == 50 &&
                tl.group_busy_ns[0] == 8 * 3000,
            "interleaved timeline: rc %d, groups %d, events %d, group 0 peak %d / %lld, busy %lld", rc, tl.ngroups, tl.nev,
            tl.group_peak_mb[0], (long long)tl.group_peak_bytes[0], (long long)tl.group_busy_ns[0]);
      if (!rc) {
        printf("timeline interleaved: 4 stages on 2 groups x 4 microbatches: step %lld ns, bubble of group 0 %lld ns\n",
               (long long)tl.makespan_ns, (long long)tl.group_bubble_ns[0]);
        gv_pipe_timeline_free(&tl);
      }
    }
    /* the DP's memory under ZB-H1: min(B, S) microbatches in flight on every stage */
    synth s;
    for (int g = 0; g < 8; g++) s.w[g] = 500, s.pw[g] = 3000, s.aw[g] = 4000;
    int mb8[] = {8};
    gv_pipe_problem p = {.ngroups = 8, .cluster = &c, .devices = 4, .mb_choices = mb8, .nmb = 1, .stages = 4,
                         .schedule = GV_SCHED_ZBH1, .cost = cost, .ctx = &s};
    static gv_pipe_plan z;
    int rc = gv_pipe_solve(&p, &z);
    CHECK(rc == 0 && z.schedule == GV_SCHED_ZBH1 && z.inflight[0] == 4 && z.inflight[3] == 4, "zb-h1 DP: rc %d, in flight %lld / %lld", rc,
          (long long)z.inflight[0], (long long)z.inflight[3]);
    /* a limit 1F1B meets and ZB-H1 does not: the last stage holds 1 microbatch under 1F1B; under ZB-H1 its input
     * gradients and what W reads of 2 (F(1) while W(0) is deferred): 10000 + 2 x 10000 */
    synth t2 = {{500, 500}, {100, 100}, {4000, 40000}};
    int mb4[] = {4};
    gv_pipe_problem q = {.ngroups = 2, .cluster = &c, .devices = 2, .mb_choices = mb4, .nmb = 1, .stages = 2,
                         .schedule = GV_SCHED_1F1B, .mem_limit = 15000, .cost = cost, .ctx = &t2};
    int r1 = gv_pipe_solve(&q, &z);
    q.schedule = GV_SCHED_ZBH1;
    int r2 = solve_captured(&q, &z);
    CHECK(r1 == 0 && r2 == 1, "limit 15000: 1F1B rc %d (fits), ZB-H1 rc %d (does not)", r1, r2);
  }
  { /* per stage the fastest way that fits: 2 stages, 1F1B, B = 4 (stage 0: 2 microbatches in flight) */
    int mb4[] = {4};
    static gv_pipe_plan w;
    gv_pipe_problem q = {.ngroups = 2, .cluster = &c, .devices = 2, .mb_choices = mb4, .nmb = 1, .stages = 2,
                         .schedule = GV_SCHED_1F1B, .mem_limit = 100000, .cost = cost_ways};
    int rc = gv_pipe_solve(&q, &w); /* everything fits: stash, no ZeRO-1 (the first of equal times) */
    CHECK(rc == 0 && !w.cost[0].recompute && w.cost[0].zero_ranks == 0 && w.cost[1].zero_ranks == 0 && w.step_ns == 5000,
          "no limit: rc %d, stage 0 recompute %d zero %lld, step %lld", rc, w.cost[0].recompute, (long long)w.cost[0].zero_ranks,
          (long long)w.step_ns);
    q.mem_limit = 12000; /* stage 0 stashing: 6000 + 2 x 4000 > 12000; with ZeRO-1 3000 + 8000 fits, as fast */
    rc = gv_pipe_solve(&q, &w);
    CHECK(rc == 0 && !w.cost[0].recompute && w.cost[0].zero_ranks == 2 && w.cost[0].state_bytes == 3000 && w.cost[1].zero_ranks == 0 &&
          w.step_ns == 5000, "limit 12000: rc %d, stage 0 recompute %d zero %lld, stage 1 zero %lld, step %lld", rc,
          w.cost[0].recompute, (long long)w.cost[0].zero_ranks, (long long)w.cost[1].zero_ranks, (long long)w.step_ns);
    q.mem_limit = 6500; /* only recomputing stage 0 fits (6000 + 2 x 100), without ZeRO-1 */
    rc = gv_pipe_solve(&q, &w);
    CHECK(rc == 0 && w.cost[0].recompute && w.cost[0].zero_ranks == 0 && w.cost[0].act_bytes == 100 && w.step_ns == 2000 + 1000 + 3 * 2000,
          "limit 6500: rc %d, stage 0 recompute %d zero %lld, step %lld", rc, w.cost[0].recompute, (long long)w.cost[0].zero_ranks,
          (long long)w.step_ns);
    { /* the report's runner-up of stage 0 among its ways (planner/pipeline.c stage_runner_up): recomputing with
       * ZeRO-1 fits (3000 + 2 x 100) and ties with the choice (2000 ns: the DP keeps the earlier way), stashing
       * without ZeRO is faster (1000 ns) but needs 6000 + 2 x 4000 */
      char *txt = NULL;
      size_t len = 0;
      FILE *mf = open_memstream(&txt, &len);
      gv_pipe_plan_print(&w, mf);
      fclose(mf);
      const char *r0 = txt ? strstr(txt, "  stage 0 runner-up (") : NULL;
      CHECK(r0 && !strncmp(r0, "  stage 0 runner-up (as planned, recompute, zero-1): 0.002 ms/microbatch (+0.000;", 80) &&
                strstr(r0, "3200 bytes per device: as fast (on a tie") && strstr(r0, "(3 other ways; as planned faster, 0.001 ms/microbatch, but 14000 bytes: over the limit)"),
            "limit 6500: stage 0's runner-up line: %s", r0 ? r0 : txt);
      free(txt);
      /* the stage's time by term: what is left of ns after the program's exposed communication, the transfers and
       * the gradient sums is compute */
      static gv_pipe_plan w2;
      w2 = w;
      w2.cost[0].ns = 2000000, w2.cost[0].comm_ns = 300000, w2.cost[0].xfer_ns = 200000, w2.cost[0].grad_ns = 100000;
      txt = NULL, len = 0;
      mf = open_memstream(&txt, &len);
      gv_pipe_plan_print(&w2, mf);
      fclose(mf);
      CHECK(txt && strstr(txt, "  stage 0 time: 2.000 ms/microbatch = compute 1.400 + exposed communication 0.300 + transfers and "
                               "overhead 0.200 + gradient sums 0.100\n") && !strstr(txt, "  stage 1 time:"),
            "the stage's time line: %s", txt);
      free(txt);
    }
    q.schedule = GV_SCHED_ZBH1; /* ZB-H1 stages stash: nothing fits */
    rc = solve_captured(&q, &w);
    CHECK(rc == 1, "limit 6500 under ZB-H1: rc %d (recomputing stages are not offered)", rc);
    printf("ways per stage: stash / ZeRO-1 / recompute chosen at limits 100000 / 12000 / 6500\n");
  }
  { /* the ZeRO ways of one stage (B = 4): none, ZeRO-1 (same ns, an all-gather per step), ZeRO-2 once per step (no
     * all-reduce per microbatch: faster, the reduce-scatter and all-gather per step: key 800 + 600 / 4), ZeRO-2 per
     * microbatch (a reduce-scatter per microbatch: slower, the chunk's sums only) */
    gv_stage_cost c0 = {0};
    static const int64_t ns[4] = {1000, 1000, 800, 1100}, st[4] = {6000, 3000, 3500, 1500}, zns[4] = {0, 50, 600, 50};
    for (int z = 0; z < 4; z++) {
      gv_stage_cost w = {.ns = ns[z], .state_bytes = st[z], .act_bytes = 100, .zero_ns = zns[z], .once_ns = zns[z],
                         .zero_ranks = z ? 2 : 0, .zero = (signed char)z, .key_ns = ns[z] + zns[z] / 4, .feasible = true};
      if (!c0.nvar) c0 = w;
      gv_stage_cost_add_way(&c0, &w);
    }
    const gv_pipe_charge two = {.n = 1, .a = {2}}; /* 2 microbatches in flight */
    int a = gv_stage_cost_pick(&c0, &two, 100000, -1, GV_SCHED_1F1B, -1, -1, -1);
    int b = gv_stage_cost_pick(&c0, &two, 3300, -1, GV_SCHED_1F1B, -1, -1, -1);
    int d = gv_stage_cost_pick(&c0, &two, 3000, -1, GV_SCHED_1F1B, -1, -1, -1);
    int e = gv_stage_cost_pick(&c0, &two, 100000, -1, GV_SCHED_1F1B, -1, GV_ZERO_2_EACH, -1);
    int f = gv_stage_cost_pick(&c0, &two, 100000, 900, GV_SCHED_1F1B, -1, -1, -1);
    CHECK(a == 2 && b == 1 && d == 3 && e == 3 && f == 2 && !strcmp(gv_zero_name(c0.var[3].zero), "zero-2/mb"),
          "ZeRO ways: no limit %d (ZeRO-2), 3300 %d (ZeRO-1), 3000 %d (ZeRO-2 per microbatch), wanted %d, tmax 900 %d", a, b, d, e, f);
  }
  { /* per-layer recomputation: the fastest way that fits, beside stash and whole-stage recomputation (2 stages, 1F1B,
     * B = 4: stage 0 keeps 2 microbatches in flight) */
    int mb4[] = {4};
    static gv_pipe_plan w;
    gv_pipe_problem q = {.ngroups = 2, .cluster = &c, .devices = 2, .mb_choices = mb4, .nmb = 1, .stages = 2,
                         .schedule = GV_SCHED_1F1B, .mem_limit = 100000, .cost = cost_layer_ways};
    int rc = gv_pipe_solve(&q, &w);
    CHECK(rc == 0 && !w.cost[0].recompute && w.cost[0].layer_rc == GV_LAYER_RC_NONE && w.cost[0].ns == 1000,
          "no limit: rc %d, stage 0 recompute %d layer_rc %d", rc, w.cost[0].recompute, w.cost[0].layer_rc);
    q.mem_limit = 7500; /* stash 6000 + 2 x 4000 does not fit; layers recomputed 6000 + 2 x 500 does, faster than the whole stage */
    rc = gv_pipe_solve(&q, &w);
    CHECK(rc == 0 && !w.cost[0].recompute && w.cost[0].layer_rc == GV_LAYER_RC_ALL && w.cost[0].act_bytes == 500 &&
          w.cost[0].ns == 1300, "limit 7500: rc %d, stage 0 recompute %d layer_rc %d act %lld", rc, w.cost[0].recompute,
          w.cost[0].layer_rc, (long long)w.cost[0].act_bytes);
    q.mem_limit = 6300; /* only the whole stage recomputed fits (6000 + 2 x 100) */
    rc = gv_pipe_solve(&q, &w);
    CHECK(rc == 0 && w.cost[0].recompute && w.cost[0].layer_rc == GV_LAYER_RC_NONE, "limit 6300: rc %d, stage 0 recompute %d layer_rc %d",
          rc, w.cost[0].recompute, w.cost[0].layer_rc);
    q.mem_limit = 7500, q.schedule = GV_SCHED_ZBH1; /* ZB-H1 stages stash all: nothing fits */
    rc = solve_captured(&q, &w);
    CHECK(rc == 1, "limit 7500 under ZB-H1: rc %d (per-layer recomputation is not offered)", rc);
    /* a plan.json's way replayed: only the way with that per-layer choice */
    gv_stage_cost sc;
    cost_layer_ways(NULL, 0, 1, 1, 1, 4, &sc);
    const gv_pipe_charge two = {.n = 1, .a = {2}};
    int v = gv_stage_cost_pick(&sc, &two, INT64_MAX / 4, -1, GV_SCHED_1F1B, -1, -1, GV_LAYER_RC_ALL);
    CHECK(v == 1 && !strcmp(gv_layer_rc_name(sc.var[v].layer_rc), "all"), "replay of layer_rc all: way %d", v);
    printf("per-layer recomputation chosen at limit 7500, the whole stage at 6300, none under ZB-H1\n");
  }
  { /* interleaved 1F1B (P = 2, V = 2, B = 4): the DP takes a plan by each device group's memory (gv_pipe_group_mem:
     * its stages' states + the peak over the group's order of their saved bytes, send copies and batons), which the
     * plan and the runtime report. Here a group holds 12,384 (group 0) / 9,192 (group 1) bytes beside its states, where
     * the former check charged each stage ceil(5 / 2) = 3 microbatches (3000 bytes) against the limit / 2 and no send
     * copies. Group 0 (F00 F01 F10 F11 F02 B10 F03 B11 F12 ..., 2000 per forward: stash + copy; B releases its stash
     * and forward copy and stage 2 sends a 1000-byte gradient copy) peaks at F12: 12000 + 6 batons of 64; group 1 (the
     * last stage's chunk, its two gradient copies released at F12) at B13: 9000 + 3 batons. Kept until the step's end
     * (before the copies' releases) they were 15,512 / 13,192. */
    int mb4[] = {4};
    static gv_pipe_plan w, fast;
    il_synth a = {{{10000, 10000, 10000, 10000}, {6000, 6000, 6000, 6000}}};
    gv_pipe_problem q = {.ngroups = 4, .cluster = &c, .devices = 4, .mb_choices = mb4, .nmb = 1, .stages = 4, .vstages = 2,
                         .schedule = GV_SCHED_INTERLEAVED, .mem_limit = 1000000, .cost = cost_il, .ctx = &a};
    int rc = gv_pipe_solve(&q, &fast); /* no limit: the fast ways */
    int64_t g0 = rc ? 0 : gv_pipe_group_mem(&fast, 0, NULL), g1 = rc ? 0 : gv_pipe_group_mem(&fast, 1, NULL);
    CHECK(rc == 0 && fast.vstages == 2 && fast.cost[0].state_bytes == 10000 && g0 == 20000 + 12384 && g1 == 20000 + 9192,
          "interleaved, no limit: rc %d, stage 0 states %lld, groups %lld / %lld (expected 32384 / 29192)", rc,
          (long long)fast.cost[0].state_bytes, (long long)g0, (long long)g1);
    /* limit 30000: the former check passed the fast ways (10000 + 3 x 1000 <= 30000 / 2), whose group 0 needs 32384;
     * now group 0's stages take the slower way (12000 + 12384); group 1 within the limit, free to keep a fast way
     * (the step then no slower than the all-slow plan's 4 x 1500 + 3 x 1500) */
    q.mem_limit = 30000;
    CHECK(10000 + fast.inflight[0] * 1000 <= q.mem_limit / 2 && fast.inflight[0] == 3, "the former charge: %lld in flight",
          (long long)fast.inflight[0]);
    rc = gv_pipe_solve(&q, &w);
    g0 = rc ? 0 : gv_pipe_group_mem(&w, 0, NULL), g1 = rc ? 0 : gv_pipe_group_mem(&w, 1, NULL);
    CHECK(rc == 0 && w.cost[0].state_bytes == 6000 && w.cost[2].state_bytes == 6000 && g0 == 24384 && g1 <= 30000 &&
              w.step_ns <= 4 * 1500 + 3 * 1500,
          "interleaved, limit 30000: rc %d, states %lld %lld %lld %lld, groups %lld / %lld (expected group 0's slower ways: "
          "24384 / at most 30000), step %lld", rc, (long long)w.cost[0].state_bytes, (long long)w.cost[1].state_bytes,
          (long long)w.cost[2].state_bytes, (long long)w.cost[3].state_bytes, (long long)g0, (long long)g1, (long long)w.step_ns);
    /* limit 24000: group 0 does not fit even so (it needs 24384 with the slower ways): no plan */
    q.mem_limit = 24000;
    rc = solve_captured(&q, &w);
    CHECK(rc == 1 && strstr(errbuf, "no partition fits"), "interleaved, limit 24000: rc %d (%s)", rc, errbuf);
    /* uneven states in a group: stage 0 fast with 20000 bytes or slow with 4000, the others 2000 (one way). Limit
     * 40000: the former check refused stage 0's fast way (20000 + 3000 > 40000 / 2); its group needs 20000 + 2000 +
     * 12384 = 34384, which fits: the fast way taken */
    il_synth u = {{{20000, 2000, 2000, 2000}, {4000, 0, 0, 0}}};
    q.ctx = &u, q.mem_limit = 40000;
    rc = gv_pipe_solve(&q, &w);
    g0 = rc ? 0 : gv_pipe_group_mem(&w, 0, NULL);
    CHECK(rc == 0 && w.cost[0].state_bytes == 20000 && w.cost[0].ns == 1000 && g0 == 34384 && 20000 + 3 * 1000 > 40000 / 2,
          "interleaved, uneven, limit 40000: rc %d, stage 0 states %lld ns %lld, group 0 %lld (expected the fast way: 34384)",
          rc, (long long)w.cost[0].state_bytes, (long long)w.cost[0].ns, (long long)g0);
    printf("interleaved: the DP takes plans by each device group's memory (limit 30000: group 0's slower ways, 24384; "
           "limit 40000, uneven: stage 0's fast way, group 0 34384)\n");
  }
  printf("%d brute-force cases, %d failures\n", cases, fails);
  return fails ? 1 : 0;
}
