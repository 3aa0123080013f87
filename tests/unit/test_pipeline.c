/* test_pipeline — the stage DP (planner/pipeline.c) against brute force on
 * small problems: every contiguous partition of up to 7 layer groups into
 * stages, every sub-mesh assignment using all devices, every B; the DP's
 * step time is within 1% of the optimum (its t_max enumeration skips values
 * within 1% of the last one tried) and its plan is consistent. Also:
 * block signatures change the number of solves, not the answer; 1F1B fits
 * memory limits GPipe does not; bad input (more stages than layer groups, a
 * memory limit no partition fits) fails with one error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/pipeline.h"

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

static int cost(void *ctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *o) {
  synth *s = ctx;
  memset(o, 0, sizeof *o);
  int64_t p = nodes * per_node, w = 0, pw = 0, aw = 0;
  for (int g = first; g < last; g++) w += s->w[g], pw += s->pw[g], aw += s->aw[g];
  o->ns = w * 1000 / (B * p) + 30 * p + 7;
  o->state_bytes = pw / p;
  o->act_bytes = aw / (B * p);
  o->feasible = true;
  return 0;
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
      int64_t inflight = sch_ == GV_SCHED_GPIPE ? B_ : (st - i < B_ ? st - i : B_);
      if (c.state_bytes + inflight * c.act_bytes > lim_) return;
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
  for (int t = 0; t < 60; t++) {
    synth s;
    int L = 1 + t % 7;
    for (int g = 0; g < L; g++) {
      s.w[g] = 100 + rand() % 2000;
      s.pw[g] = 1000 + rand() % 5000;
      s.aw[g] = 1000 + rand() % 8000;
    }
    int64_t D = (t % 3 == 0) ? 4 : (t % 3 == 1 ? 2 : 8);
    int mbs[] = {1, 2, 4, 8};
    gv_schedule sch = t % 2 ? GV_SCHED_1F1B : GV_SCHED_GPIPE;
    int64_t lim = t % 4 == 3 ? 9000 : 0;
    gv_pipe_problem p = {.ngroups = L, .sig = NULL, .cluster = &c, .devices = D, .mb_choices = mbs, .nmb = 4,
                         .schedule = sch, .mem_limit = lim, .stages = 0, .cost = cost, .ctx = &s};
    gv_pipe_plan pl;
    int rc = gv_pipe_solve(&p, &pl);
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
          (long long)D, sch ? "1f1b" : "gpipe", (long long)pl.step_ns, (long long)bb);
    int64_t used = 0;
    for (int i = 0; i < pl.nstages; i++) {
      used += pl.nodes[i] * pl.per_node[i];
      CHECK(pl.first[i] < pl.first[i + 1], "case %d: empty stage", t);
    }
    CHECK(used == D && pl.first[0] == 0 && pl.first[pl.nstages] == L, "case %d: plan does not cover", t);
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
    gv_pipe_plan a, b;
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
  }
  /* bad input */
  {
    synth s = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    int mbs[] = {1};
    gv_pipe_problem p = {.ngroups = 3, .cluster = &c, .devices = 4, .mb_choices = mbs, .nmb = 1, .stages = 4,
                         .cost = cost, .ctx = &s};
    gv_pipe_plan pl;
    CHECK(gv_pipe_solve(&p, &pl) == -1, "more stages than groups must fail");
    p.stages = 0;
    p.mem_limit = 1;
    s.pw[0] = s.pw[1] = s.pw[2] = 1 << 20;
    CHECK(gv_pipe_solve(&p, &pl) == 1, "no partition fits must fail");
  }
  printf("%d brute-force cases, %d failures\n", cases, fails);
  return fails ? 1 : 0;
}
