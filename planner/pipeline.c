/* pipeline.c — the stage DP of pipeline.h (docs/pipeline.md).
 *
 * Sub-mesh shapes (Alpa): inside one node (devices <= devices_per_node)
 * 1 x 2^k; across nodes whole nodes n x devices_per_node, n = 1 .. nodes
 * (n <= 16 or a power of two). Devices are counted in units (1 device, or 1
 * node across nodes); the stages use all of them.
 *
 * For each B and each candidate t_max (the distinct stage times, ascending,
 * skipping values within 1% of the previous one tried), with s the number
 * of stages from the end (1F1B in-flight count min(B, s)):
 *   F[s][k][d] = min over (j > k, mesh m of u units <= d) of
 *                F[s-1][j][d-u] + t(k, j, m)   with t <= t_max and memory ok,
 *   T = min_s F[s][0][D] + (B - 1) * t_max,
 * stopping when B * t_max >= best T (no later candidate can win). */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "cost.h"
#include "runtime/galv_pipe_sched.h"

#define MAX_MESHES 40

/* The stage costs: an open-addressing table of keys naming entries of a pool of costs (a cost is some 3 KB, its
 * key 16 bytes: growing the table moves keys only, and the pool holds as many costs as were computed). The key
 * holds the microbatch count, so no cost is read across counts: the table is emptied per count, and the pool's
 * entries are reused. */
typedef struct {
  uint64_t key;
  unsigned used; /* the cache's gen: in use (another value: empty) */
  uint32_t idx;  /* its cost: pool[idx] */
  int32_t k, j;  /* the range that computed it */
  unsigned seen; /* the last solve that looked it up (cache.solve) */
} centry;

typedef struct {
  centry *t;
  size_t cap, n;
  unsigned gen; /* >= 1; a reused table's next solve (or count) takes the next one (every entry empty again) */
  gv_stage_cost *pool;
  size_t poolcap;
  unsigned solve; /* the solve on the table now (a kept table: tells a cost's first look-up in it) */
} cache;

/* Every entry empty (n = 0): the next generation. */
static void cache_empty(cache *c) {
  c->n = 0;
  if (++c->gen == 0) { /* wrapped: every entry's mark cleared */
    for (size_t i = 0; i < c->cap; i++) c->t[i].used = 0;
    c->gen = 1;
  }
}

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

static centry *cache_slot(cache *c, uint64_t key) {
  if (c->n >= c->poolcap) {
    size_t np = c->poolcap ? 2 * c->poolcap : 256;
    gv_stage_cost *n = realloc(c->pool, np * sizeof *n);
    if (!n) return NULL;
    c->pool = n, c->poolcap = np;
  }
  if (c->n * 2 >= c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 1024;
    centry *nt = calloc(nc, sizeof(centry));
    if (!nt) return NULL;
    for (size_t i = 0; i < c->cap; i++)
      if (c->t[i].used == c->gen) {
        size_t h = (size_t)(c->t[i].key & (nc - 1));
        while (nt[h].used == c->gen) h = (h + 1) & (nc - 1);
        nt[h] = c->t[i];
      }
    free(c->t);
    c->t = nt;
    c->cap = nc;
  }
  size_t h = (size_t)(key & (c->cap - 1));
  while (c->t[h].used == c->gen && c->t[h].key != key) h = (h + 1) & (c->cap - 1);
  return &c->t[h];
}

struct gv_pipe_table {
  cache ch;
};
gv_pipe_table *gv_pipe_table_new(void) { return calloc(1, sizeof(gv_pipe_table)); }
void gv_pipe_table_empty(gv_pipe_table *t) {
  if (t) cache_empty(&t->ch);
}
void gv_pipe_table_free(gv_pipe_table *t) {
  if (t) free(t->ch.t), free(t->ch.pool), free(t);
}

/* One way of a stage as the DP's inner loop weighs it: its ns, state (+ ZB-H1's copy), activations per microbatch
 * in flight and choice key (key_ns, else ns). */
typedef struct {
  int64_t ns, need0, act, wact, key;
  int64_t fs, bs; /* interleaved: the stage's send copies per microbatch (gv_stage_cost send_bytes, gsend_bytes) */
} dway;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* a[0..n) ascending: the t_max candidates (a million stage times per solve on a 96-layer model, sorted once per
 * microbatch count: qsort spent seconds of the screen there). An LSD radix sort over 16-bit digits, the digits above
 * the largest value skipped, when every value is >= 0 and scratch is had; else qsort. The same order either way. */
static void sort_i64(int64_t *a, size_t n) {
  int64_t mx = 0;
  bool neg = false;
  for (size_t i = 0; i < n; i++) {
    if (a[i] < 0) neg = true;
    if (a[i] > mx) mx = a[i];
  }
  enum { BITS = 16, NB = 1 << BITS };
  int64_t *t = n > 1024 && !neg ? malloc(n * sizeof *t) : NULL;
  size_t *cnt = t ? malloc(NB * sizeof *cnt) : NULL;
  if (!cnt) {
    free(t);
    qsort(a, n, sizeof *a, cmp_i64);
    return;
  }
  int64_t *src = a, *dst = t;
  for (int shift = 0; shift < 64 && (mx >> shift) > 0; shift += BITS) {
    memset(cnt, 0, NB * sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[((uint64_t)src[i] >> shift) & (NB - 1)]++;
    size_t sum = 0;
    for (size_t d = 0; d < NB; d++) {
      size_t c = cnt[d];
      cnt[d] = sum, sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[cnt[((uint64_t)src[i] >> shift) & (NB - 1)]++] = src[i];
    int64_t *x = src;
    src = dst, dst = x;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
  free(cnt);
  free(t);
}

/* With exactly S stages, groups [k, j) can be a stage only when the groups
 * before and after it can hold the other S - 1 stages (one group each at
 * least); other ranges are not costed. */
static bool usable(int S, int L, int k, int j) {
  if (!S) return true;
  int lo = (k > 0) + (j < L), hi = k + (L - j);
  return lo <= S - 1 && S - 1 <= hi;
}

/* gv_pipe_inflight; the DP's charge and the plan's figure, interleaved (V > 1): the group's peak per chunk */
int64_t gv_pipe_inflight(gv_schedule sched, int S, int s, int B) {
  return sched == GV_SCHED_GPIPE ? B : sched == GV_SCHED_ZBH1 ? (S < B ? S : B) : (s < B ? s : B);
}
static int64_t dp_inflight(const gv_pipe_problem *p, int V, int il_inflight, int s, int S, int B) {
  return V > 1 ? il_inflight : gv_pipe_inflight(p->schedule, S, s, B);
}

/* adds the point (a, b) to ch unless a point holds at least as much of both; drops the points it holds as much as */
static void charge_point(gv_pipe_charge *ch, int64_t a, int64_t b) {
  for (int q = 0; q < ch->n; q++)
    if (ch->a[q] >= a && ch->b[q] >= b) return;
  int m = 0;
  for (int q = 0; q < ch->n; q++)
    if (!(a >= ch->a[q] && b >= ch->b[q])) ch->a[m] = ch->a[q], ch->b[m] = ch->b[q], m++;
  ch->n = m;
  if (m < 4) ch->a[m] = a, ch->b[m] = b, ch->n++;
  else { /* a fifth (none seen: two at most on S <= 12, B <= 20): the last widened to hold it, an upper bound */
    if (a > ch->a[3]) ch->a[3] = a;
    if (b > ch->b[3]) ch->b[3] = b;
  }
}

/* The DP's charge for the stage s positions from the end of a plan of S stages (dp_inflight's; under ZB-H1 the peak
 * of its order: position S - s from the start, the first when S < s, S free beyond the run's count) */
static void dp_charge(const gv_pipe_problem *p, int V, int il_inflight, int s, int S, int B, gv_pipe_charge *ch);

void gv_pipe_charge_make(gv_schedule sched, int S, int i, int B, int64_t inflight, gv_pipe_charge *ch) {
  memset(ch, 0, sizeof *ch);
  ch->n = 1, ch->a[0] = inflight, ch->b[0] = 0;
  if (sched != GV_SCHED_ZBH1 || B < 1 || S < 1 || i < 0 || i >= S) return;
  galv_pipe_act *o = malloc(sizeof *o * (size_t)(3 * B));
  if (!o) { /* out of memory: every microbatch in flight holding both */
    ch->a[0] = ch->b[0] = inflight;
    return;
  }
  /* galv_pipe_peak over the order, counting the microbatches whose stash (a) and whose W bytes (b) are live */
  const int last = i == S - 1, na = galv_pipe_order(S, i, B, GALV_SCHED_ZBH1, o);
  int64_t a = 0, b = 0;
  ch->n = 0;
  for (int k = 0; k < na; k++) {
    if (o[k].fwd) a++, b += last;
    else if (!o[k].w) {
      if (!last) b++, charge_point(ch, a, b); /* W's bytes copied out of the stash before it goes: both live */
      a--;
    } else b--;
    charge_point(ch, a, b);
  }
  if (!ch->n) ch->n = 1, ch->a[0] = ch->b[0] = 0;
  free(o);
}

static void dp_charge(const gv_pipe_problem *p, int V, int il_inflight, int s, int S, int B, gv_pipe_charge *ch) {
  const int i = S > s ? S - s : 0;
  gv_pipe_charge_make(V > 1 ? GV_SCHED_INTERLEAVED : p->schedule, i + s, i, B, dp_inflight(p, V, il_inflight, s, S, B), ch);
  /* interleaved: the stage's share of its device group's figure (S fixed: stage i of S / V groups) */
  if (V > 1) ch->il_P = S / V, ch->il_V = V, ch->il_i = i, ch->il_B = B;
}

int64_t gv_pipe_il_share(int P, int V, int i, int B, int64_t act, int64_t fs, int64_t bs) {
  int64_t fb[GV_PIPE_MAX_STAGES] = {0}, f[GV_PIPE_MAX_STAGES] = {0}, b[GV_PIPE_MAX_STAGES] = {0};
  galv_pipe_act one[64], *acts = 2 * V * B <= 64 ? one : malloc(sizeof *acts * (size_t)(2 * V * B));
  if (P < 1 || V < 1 || V > GV_PIPE_MAX_STAGES || i < 0 || i >= P * V || !acts) { /* every microbatch of every chunk */
    if (acts != one) free(acts);
    return (int64_t)V * B * (act + fs + bs);
  }
  const int c = i / P;
  fb[c] = act, f[c] = fs, b[c] = bs;
  int64_t held = galv_pipe_group_held(P, V, i % P, B, fb, f, b, NULL, NULL, acts);
  if (acts != one) free(acts);
  return held;
}

int64_t gv_pipe_group_mem(const gv_pipe_plan *pl, int d, int64_t *states) {
  const int V = pl->vstages > 1 ? pl->vstages : 1, P = pl->nstages / V, B = pl->B;
  int64_t fb[GV_PIPE_MAX_STAGES] = {0}, fs[GV_PIPE_MAX_STAGES] = {0}, bs[GV_PIPE_MAX_STAGES] = {0}, st = 0;
  for (int c = 0; c < V; c++) {
    const gv_stage_cost *sc = &pl->cost[c * P + d];
    st += sc->state_bytes, fb[c] = sc->act_bytes, fs[c] = sc->send_bytes, bs[c] = sc->gsend_bytes;
  }
  if (states) *states = st;
  galv_pipe_act one[64], *acts = 2 * V * B <= 64 ? one : malloc(sizeof *acts * (size_t)(2 * V * B));
  if (!acts) return INT64_MAX / 4;
  int64_t held = galv_pipe_group_held(P, V, d, B, fb, fs, bs, NULL, NULL, acts);
  if (acts != one) free(acts);
  return st + held;
}

int64_t gv_pipe_plan_saved(const gv_pipe_plan *pl, int i) {
  const gv_stage_cost *c = &pl->cost[i];
  if (pl->schedule != GV_SCHED_ZBH1) return pl->inflight[i] * c->act_bytes;
  gv_pipe_charge ch;
  gv_pipe_charge_make(pl->schedule, pl->nstages, i, pl->B, pl->inflight[i], &ch);
  return gv_pipe_charge_bytes(&ch, c->act_bytes, c->zb_act_bytes);
}

/* ZB-H1 with the stage count free charges each stage min(B, S), S the plan's stage count, which the DP (run from
 * the last stage) does not know: one DP run per charge n = 1 .. min(B, smax), run n < B taking the plans of
 * exactly n stages, run B those of B stages or more. Other schedules, S fixed, or no stage's way bound by the
 * charge: one run, n = 0. */
static int zb_runs(const gv_pipe_problem *p, int smax, int B) {
  return p->schedule == GV_SCHED_ZBH1 && !p->stages ? (smax < B ? smax : B) : 0;
}
/* the stage count run n charges for (dp_inflight's S); one run with S free: B (only where no way of any stage
 * needs fewer in flight to fit, so the charge changes no choice: binds below) */
static int run_total(const gv_pipe_problem *p, int n, int B) { return n ? n : p->stages ? p->stages : B; }
/* whether some way of a costed stage does not fit the limit with B microbatches in flight: only then do ZB-H1's
 * runs per charge differ from one run */
static bool binds(const gv_stage_cost *const *C, size_t nC, int64_t B, int64_t limit) {
  for (size_t i = 0; i < nC; i++) {
    const gv_stage_cost *c = C[i];
    if (!c || !c->feasible) continue;
    if (c->state_bytes + c->zb_bytes + B * (c->act_bytes + c->zb_act_bytes) > limit) return true;
    for (int w = 0; w < c->nvar; w++)
      if (c->var[w].state_bytes + c->zb_bytes + B * (c->var[w].act_bytes + c->zb_act_bytes) > limit) return true;
  }
  return false;
}
/* does a plan of s stages belong to run n */
static bool run_takes(const gv_pipe_problem *p, int n, int B, int s) {
  if (p->stages) return s == p->stages;
  return !n || (n < B ? s == n : s >= B);
}

void gv_stage_cost_add_way(gv_stage_cost *c, const gv_stage_cost *w) {
  if (c->nvar >= GV_STAGE_MAX_VARS) return;
  gv_stage_var *v = &c->var[c->nvar++];
  *v = (gv_stage_var){w->ns, w->state_bytes, w->act_bytes, w->once_ns, w->zero_ns, w->opt_ns, w->zero_ranks, w->xfer_ns,
                      w->grad_ns, w->key_ns, w->recompute, w->zero, w->layer_rc, w->planner_plan, "", 0};
  memcpy(v->desc, w->desc, sizeof v->desc);
  v->comm_ns = w->comm_ns;
}

void gv_stage_cost_add_var(gv_stage_cost *c) { gv_stage_cost_add_way(c, c); }

const char *gv_zero_name(int zero) {
  return zero == GV_ZERO_1 ? "zero-1" : zero == GV_ZERO_2 ? "zero-2" : zero == GV_ZERO_2_EACH ? "zero-2/mb" : NULL;
}

/* the way's ZeRO (GV_ZERO_*): its level where it splits over ranks */
static int way_zero(int64_t zero_ranks, int zero) { return zero_ranks > 1 ? (zero ? zero : GV_ZERO_1) : GV_ZERO_NONE; }

/* the DP's key among a stage's ways (0: ns) */
static int64_t way_key(const gv_stage_var *w) { return w->key_ns ? w->key_ns : w->ns; }

bool gv_schedule_recomputes(gv_schedule sched) { return sched != GV_SCHED_ZBH1 && sched != GV_SCHED_INTERLEAVED; }

const char *gv_layer_rc_name(int layer_rc) {
  static const char *const n[] = {"none", "selective", "all", "listed"};
  return layer_rc >= 0 && layer_rc < 4 ? n[layer_rc] : "none";
}

int gv_layer_rc_code(const char *spec) {
  return !spec || !strcmp(spec, "none") ? GV_LAYER_RC_NONE
         : !strcmp(spec, "all")         ? GV_LAYER_RC_ALL
         : !strcmp(spec, "selective")   ? GV_LAYER_RC_SELECTIVE
                                        : GV_LAYER_RC_LISTED;
}

/* A way that recomputes (the whole stage or per layer): only where the schedule runs such stages. */
/* whether sched runs way w: a recomputing stage (its backward entry recomputes its forward from the inputs) runs under
 * GPipe and 1F1B only (gv_schedule_recomputes); per-layer recomputation inside the stage program (its entries stash the
 * layers' inputs) under every schedule but ZB-H1, whose weight-gradient entry reads the stash */
static bool runs_way(const gv_stage_var *w, gv_schedule sched) {
  return (!w->recompute || gv_schedule_recomputes(sched)) && (w->layer_rc == GV_LAYER_RC_NONE || sched != GV_SCHED_ZBH1);
}

void gv_stage_cost_use(gv_stage_cost *c, int v, gv_schedule sched) {
  if (v >= 0 && v < c->nvar) {
    const gv_stage_var *w = &c->var[v];
    c->ns = w->ns, c->state_bytes = w->state_bytes, c->act_bytes = w->act_bytes, c->once_ns = w->once_ns;
    c->zero_ns = w->zero_ns, c->opt_ns = w->opt_ns, c->zero_ranks = w->zero_ranks, c->xfer_ns = w->xfer_ns;
    c->grad_ns = w->grad_ns, c->comm_ns = w->comm_ns;
    c->recompute = w->recompute, c->layer_rc = w->layer_rc, c->zero = w->zero, c->key_ns = w->key_ns;
    c->planner_plan = w->planner_plan;
    memcpy(c->desc, w->desc, sizeof c->desc);
    c->way = v;
  }
  if (sched == GV_SCHED_ZBH1) c->state_bytes += c->zb_bytes, c->zb_bytes = 0;
}

int gv_stage_cost_pick(const gv_stage_cost *c, const gv_pipe_charge *ch0, int64_t limit, int64_t tmax, gv_schedule sched,
                       int want_recompute, int want_zero, int want_layer) {
  gv_pipe_charge chc = *ch0, *ch = &chc; /* interleaved: the stage's own send copies */
  chc.il_fs = c->send_bytes, chc.il_bs = c->gsend_bytes;
  const int64_t zb = sched == GV_SCHED_ZBH1 ? c->zb_bytes : 0;
  if (c->nvar < 2) { /* one way: the main fields */
    bool ok = (tmax < 0 || c->ns <= tmax) && c->state_bytes + zb + gv_pipe_charge_bytes(ch, c->act_bytes, c->zb_act_bytes) <= limit &&
              (want_recompute < 0 || want_recompute == (int)c->recompute) &&
              (want_zero < 0 || want_zero == way_zero(c->zero_ranks, c->zero)) &&
              (want_layer < 0 || want_layer == c->layer_rc);
    return ok ? 0 : -1;
  }
  int best = -1;
  for (int i = 0; i < c->nvar; i++) {
    const gv_stage_var *w = &c->var[i];
    if (!runs_way(w, sched) || (want_recompute >= 0 && want_recompute != (int)w->recompute) ||
        (want_zero >= 0 && want_zero != way_zero(w->zero_ranks, w->zero)) || (want_layer >= 0 && want_layer != w->layer_rc))
      continue;
    if ((tmax >= 0 && w->ns > tmax) || w->state_bytes + zb + gv_pipe_charge_bytes(ch, w->act_bytes, c->zb_act_bytes) > limit) continue;
    if (best < 0 || way_key(w) < way_key(&c->var[best])) best = i;
  }
  return best;
}

int64_t gv_stage_cost_min_need(const gv_stage_cost *c, const gv_pipe_charge *ch0, gv_schedule sched, int *v) {
  gv_pipe_charge chc = *ch0, *ch = &chc; /* interleaved: the stage's own send copies */
  chc.il_fs = c->send_bytes, chc.il_bs = c->gsend_bytes;
  const int64_t zb = sched == GV_SCHED_ZBH1 ? c->zb_bytes : 0;
  *v = 0;
  if (c->nvar < 2) return c->state_bytes + zb + gv_pipe_charge_bytes(ch, c->act_bytes, c->zb_act_bytes);
  int64_t best = INT64_MAX;
  for (int i = 0; i < c->nvar; i++) {
    const gv_stage_var *w = &c->var[i];
    if (!runs_way(w, sched)) continue;
    int64_t need = w->state_bytes + zb + gv_pipe_charge_bytes(ch, w->act_bytes, c->zb_act_bytes);
    if (need < best) best = need, *v = i;
  }
  return best;
}

/* The DP's tables and the ranges' figures for one solve and B (gv_pipe_solve's), read by dp_pass. */
typedef struct {
  const gv_pipe_problem *p;
  int L, nm, S, V, il_inflight, B, n, Sn; /* n: the ZB-H1 charge run (zb_runs), Sn: its most stages */
  int64_t Du, limit;
  const int64_t *mn, *mk, *mu;
  int64_t *F;
  int32_t *Fj;
  int8_t *Fm;
  uint8_t *Rt;
  int32_t *Rlo, *Rhi;
  size_t nR;
  const int64_t *fast, *wofs;
  const int64_t *fmax; /* per range [k, j) and sub-mesh: the largest fast over [k, k + 1) .. [k, j) (-1: none feasible) */
  const uint8_t *wn;
  const dway *dw;
  /* interleaved (V > 1): the limit per device group; the ways' shares of their groups per stage position (-1: not
   * yet computed; ilm[w x S + i], w the way's index in dw, i the stage); the plan found, checked per group before it
   * is taken; the plans refused so */
  int64_t glimit, *ilm, *rejected;
  gv_pipe_plan *tmp;
  /* per cost's ways (by their offset in dw) over this pass's t_max: the first way of the least key within t_max,
   * memory aside (-1: none); where it fits a stage it is the pick */
  int32_t *pk;
  uint32_t *pkg, *gen; /* pk[i] holds this pass's figure where pkg[i] == *gen (one more each pass) */
} dp_ctx;

/* What way o + i (its offset in dw) holds for the microbatches in flight at stage position s from the end: its share
 * of its device group (interleaved, gv_pipe_il_share, once per way and stage), else the charge's bytes */
static int64_t way_held(const dp_ctx *x, const dway *w, size_t o, int i, int s, const gv_pipe_charge *ch) {
  if (x->V <= 1) return gv_pipe_charge_bytes(ch, w->act, w->wact);
  int64_t *hm = &x->ilm[(o + (size_t)i) * (size_t)x->S + (size_t)(x->S - s)];
  if (*hm < 0) *hm = gv_pipe_il_share(x->S / x->V, x->V, x->S - s, x->B, w->act, w->fs, w->bs);
  return *hm;
}

#define DP_INF (INT64_MAX / 4)
/* One pass of the DP over a t_max: F[s][k][d] for s = 1 .. Sn stages from the end, entries under bound only.
 * With best (a plan pass): a plan of s stages on all the devices whose step is under *best becomes *best and out
 * (the bound then tightened). Without (a probe): only whether some plan exists; the first found ends the pass.
 * Returns whether a plan was found. */
static bool dp_pass(const dp_ctx *x, int64_t tmax, int64_t bound, int64_t *best, gv_pipe_plan *out, const gv_stage_cost *const *C) {
  const gv_pipe_problem *p = x->p;
  const int L = x->L, nm = x->nm, S = x->S, V = x->V, B = x->B, n = x->n;
  const int64_t Du = x->Du, limit = x->limit, INF = DP_INF;
  const int64_t *mn = x->mn, *mk = x->mk, *mu = x->mu, *fast = x->fast, *wofs = x->wofs;
  int64_t *F = x->F;
  int32_t *Fj = x->Fj, *Rlo = x->Rlo, *Rhi = x->Rhi;
  int8_t *Fm = x->Fm;
  uint8_t *Rt = x->Rt;
  const uint8_t *wn = x->wn;
  const dway *dw = x->dw;
  bool found = false;
  const uint32_t gen = ++*x->gen;
#define IX(s, k, d) (((size_t)(s) * (size_t)(L + 1) + (size_t)(k)) * (size_t)(Du + 1) + (size_t)(d))
/* per range [k, j) and sub-mesh m; j the fastest-varying (the DP's innermost loop walks j) */
#define CX(k, j, m) (((size_t)(k) * (size_t)nm + (size_t)(m)) * (size_t)(L + 1) + (size_t)(j))
#define RX(s, k) ((size_t)(s) * (size_t)(L + 1) + (size_t)(k))
  memset(Rt, 0, x->nR);
  Rt[RX(0, L)] = 1, Rlo[RX(0, L)] = Rhi[RX(0, L)] = 0;
  for (int64_t d = 0; d <= Du; d++) F[IX(0, L, d)] = INF;
  F[IX(0, L, 0)] = 0;
  /* the rows of s - 1 stages written: [jlo, jhi] holds every k whose row has a finite entry (outside it no range
   * [k, j) continues into a cover of [j, L), the j loop's iterations there do nothing) */
  int jlo = L, jhi = L;
  for (int s = 1; s <= x->Sn; s++) {
    gv_pipe_charge ch; /* the saved bytes the stage s positions from the end holds at its peak */
    dp_charge(p, V, x->il_inflight, s, run_total(p, n, B), B, &ch);
    int nlo = L + 1, nhi = -1; /* this row's, for s + 1 */
    for (int k = L - s; k >= 0; k--)
      for (int m = 0; m < nm; m++) {
        /* the loop below walks j from k + 1 and stops at the first range slower than t_max: it starts at jlo
         * instead where no range before it is (fmax), the iterations skipped being the ones that do nothing */
        int j0 = k + 1;
        if (jlo > j0) {
          if (x->fmax[CX(k, jlo - 1, m)] > tmax) continue; /* it stopped before jlo */
          j0 = jlo;
        }
        const int j1 = L - (s - 1) < jhi ? L - (s - 1) : jhi;
        for (int j = j0; j <= j1; j++) {
          if (p->stage_devices && mn[m] * mk[m] != p->stage_devices[S - s]) break; /* position S - s from the start */
          const int64_t fastest = fast[CX(k, j, m)];
          if (fastest < 0) continue; /* infeasible */
          if (fastest > tmax) break; /* a longer range is no faster */
          const size_t rp = RX(s - 1, j);
          if (!Rt[rp] || Rlo[rp] > Rhi[rp]) continue; /* no way to cover [j, L) with s - 1 stages */
          /* gv_stage_cost_pick's way (the fastest by key within tmax that fits, the earlier on a tie) over the
           * dense copy of the range's ways */
          const size_t o = (size_t)wofs[CX(k, j, m)];
          const dway *wv = dw + o;
          int64_t ns = -1, bk = 0;
          int32_t *pkp = &x->pk[o];
          if (x->pkg[o] != gen) { /* the least key within t_max, memory aside */
            x->pkg[o] = gen, *pkp = -1;
            for (int i = 0, nw = wn[CX(k, j, m)]; i < nw; i++)
              if (wv[i].ns <= tmax && (*pkp < 0 || wv[i].key < wv[*pkp].key)) *pkp = i;
          }
          if (*pkp < 0) continue; /* no way within t_max */
          if (wv[*pkp].need0 + way_held(x, &wv[*pkp], o, *pkp, s, &ch) <= limit) ns = wv[*pkp].ns; /* the pick: it fits */
          for (int i = 0, nw = ns < 0 ? wn[CX(k, j, m)] : 0; i < nw; i++) { /* else the scan over the ways */
            if (wv[i].ns > tmax || wv[i].need0 + way_held(x, &wv[i], o, i, s, &ch) > limit) continue;
            if (ns < 0 || wv[i].key < bk) ns = wv[i].ns, bk = wv[i].key;
          }
          if (ns < 0) continue;
          const size_t r = RX(s, k);
          if (!Rt[r]) { /* its first write: the row filled */
            for (int64_t d = 0; d <= Du; d++) F[IX(s, k, d)] = INF;
            Rt[r] = 1, Rlo[r] = INT32_MAX, Rhi[r] = -1;
          }
          const int64_t dlo = Rlo[rp] + mu[m], dhi = Rhi[rp] + mu[m] < Du ? Rhi[rp] + mu[m] : Du;
          for (int64_t d = dlo; d <= dhi; d++) {
            int64_t prev = F[IX(s - 1, j, d - mu[m])];
            if (prev >= INF) continue;
            int64_t v = prev + ns;
            if (v < F[IX(s, k, d)] && v < bound) {
              F[IX(s, k, d)] = v;
              Fj[IX(s, k, d)] = j;
              Fm[IX(s, k, d)] = (int8_t)m;
              if (d < Rlo[r]) Rlo[r] = (int32_t)d;
              if (d > Rhi[r]) Rhi[r] = (int32_t)d;
            }
          }
        }
        const size_t rk = RX(s, k);
        if (Rt[rk] && Rlo[rk] <= Rhi[rk]) {
          if (k < nlo) nlo = k;
          if (k > nhi) nhi = k;
        }
      }
    jlo = nlo, jhi = nhi;
    if (!run_takes(p, n, B, s)) continue;
    if (!Rt[RX(s, 0)] || Rhi[RX(s, 0)] < Du) continue; /* no plan of s stages on all the devices */
    int64_t v = F[IX(s, 0, Du)];
    if (v >= INF) continue;
    found = true;
    if (!best) return true; /* a probe */
    int64_t T = v + (int64_t)(B - 1) * tmax;
    if (T < *best) {
      /* reconstruct (interleaved: into x->tmp, taken when each device group's memory fits its limit) */
      gv_pipe_plan *const keep = out;
      if (V > 1) out = x->tmp;
      out->nstages = s;
      out->B = B;
      out->schedule = p->schedule;
      out->vstages = V;
      out->limit = x->glimit;
      int k = 0;
      int64_t d = Du, mx = 0, sum = 0;
      for (int st = 0, ss = s; ss >= 1; ss--, st++) {
        int j = Fj[IX(ss, k, d)], m = Fm[IX(ss, k, d)];
        out->first[st] = k;
        out->nodes[st] = mn[m];
        out->per_node[st] = mk[m];
        out->cost[st] = *C[CX(k, j, m)];
        /* what the DP charged the stage: the plan's s stages are the run's charge (run_takes) */
        out->inflight[st] = dp_inflight(p, V, x->il_inflight, ss, s, B);
        gv_pipe_charge cs;
        dp_charge(p, V, x->il_inflight, ss, s, B, &cs);
        /* the stage's way as the DP took it (the same pick) */
        gv_stage_cost_use(&out->cost[st], gv_stage_cost_pick(&out->cost[st], &cs, limit, tmax, p->schedule, -1, -1, -1), p->schedule);
        if (out->cost[st].ns > mx) mx = out->cost[st].ns;
        sum += out->cost[st].ns;
        d -= mu[m];
        k = j;
      }
      out->first[s] = L;
      out->max_ns = mx;
      out->sum_ns = sum;
      out->step_ns = sum + (int64_t)(B - 1) * mx;
      bool fits = true;
      for (int d = 0; V > 1 && d < s / V && fits; d++) fits = gv_pipe_group_mem(out, d, NULL) <= x->glimit;
      if (V > 1 && fits) { /* taken: the plan's fields (out's counters kept) */
        keep->nstages = s, keep->B = B, keep->schedule = out->schedule, keep->vstages = V, keep->limit = x->glimit;
        memcpy(keep->first, out->first, sizeof out->first[0] * (size_t)(s + 1));
        memcpy(keep->nodes, out->nodes, sizeof out->nodes[0] * (size_t)s);
        memcpy(keep->per_node, out->per_node, sizeof out->per_node[0] * (size_t)s);
        memcpy(keep->cost, out->cost, sizeof out->cost[0] * (size_t)s);
        memcpy(keep->inflight, out->inflight, sizeof out->inflight[0] * (size_t)s);
        keep->max_ns = mx, keep->sum_ns = sum, keep->step_ns = out->step_ns;
      }
      out = keep;
      if (!fits) { /* a device group over its limit: refused (the caller's second pass charges each stage its share
                    * against limit / V, whose plans fit) */
        (*x->rejected)++;
        continue;
      }
      *best = T;
      bound = *best - (int64_t)(B - 1) * tmax;
    }
  }
  return found;
#undef IX
#undef CX
#undef RX
}

int gv_pipe_solve(const gv_pipe_problem *p, gv_pipe_plan *out) {
  static const gv_stage_cost unusable = {.feasible = false};
  memset(out, 0, sizeof *out);
  double t0 = now();
  const gv_cluster *c = p->cluster;
  int L = p->ngroups;
  if (L < 1) return gv_error_plain("pipeline: no layer groups");
  if (p->stages < 0) return gv_error_plain("pipeline: --stages %d: expected >= 1", p->stages);
  if (p->stages > L)
    return gv_error_plain("pipeline: %d stages but only %d layer groups: more stages than layers", p->stages, L);
  if (p->stages > GV_PIPE_MAX_STAGES) return gv_error_plain("pipeline: at most %d stages", GV_PIPE_MAX_STAGES);
  int64_t D = p->devices, k_node = c->devices_per_node;
  if (D < 1 || D > gv_cluster_devices(c))
    return gv_error_plain("pipeline: %lld devices on a cluster of %lld", (long long)D, (long long)gv_cluster_devices(c));
  if (p->stages > D) return gv_error_plain("pipeline: %d stages need at least as many devices (have %lld)", p->stages, (long long)D);
  /* sub-meshes */
  int64_t mn[MAX_MESHES], mk[MAX_MESHES], mu[MAX_MESHES], unit;
  int nm = 0;
  if (D <= k_node) {
    unit = 1;
    for (int64_t s = 1; s <= D && nm < MAX_MESHES; s *= 2) mn[nm] = 1, mk[nm] = s, mu[nm++] = s;
    if (mk[nm - 1] != D) mn[nm] = 1, mk[nm] = D, mu[nm++] = D;
  } else {
    if (D % k_node) return gv_error_plain("pipeline: %lld devices are not whole nodes of %lld", (long long)D, (long long)k_node);
    unit = k_node;
    /* equal stages (mesh_devices) of whole nodes: that node count whatever it is (Megatron's 145.6B row: 24) */
    const int64_t ne = p->mesh_devices > 0 && p->mesh_devices % k_node == 0 ? p->mesh_devices / k_node : 0;
    for (int64_t n = 1; n <= D / k_node && nm < MAX_MESHES; n++)
      if (n <= 16 || !(n & (n - 1)) || n == ne) mn[nm] = n, mk[nm] = k_node, mu[nm++] = n;
  }
  if (p->mesh_devices > 0) { /* equal stages: only sub-meshes of mesh_devices devices */
    int keep = 0;
    for (int m = 0; m < nm; m++)
      if (mn[m] * mk[m] == p->mesh_devices) mn[keep] = mn[m], mk[keep] = mk[m], mu[keep++] = mu[m];
    if (!keep)
      return gv_error_plain("pipeline: no sub-mesh of %lld devices on %lld devices (%lld per node)", (long long)p->mesh_devices,
                            (long long)D, (long long)k_node);
    nm = keep;
  }
  if (p->stage_devices) { /* fixed device counts per stage: each a sub-mesh, all of them the devices */
    int64_t sum = 0;
    if (!p->stages) return gv_error_plain("pipeline: device counts per stage need a fixed number of stages");
    for (int i = 0; i < p->stages; i++) {
      bool found = false;
      for (int m = 0; m < nm; m++) found |= mn[m] * mk[m] == p->stage_devices[i];
      if (!found)
        return gv_error_plain("pipeline: stage %d's %d devices are no sub-mesh of %lld devices (%lld per node: 1, 2, 4 .. inside a node, "
                              "else whole nodes)", i, p->stage_devices[i], (long long)D, (long long)k_node);
      sum += p->stage_devices[i];
    }
    if (sum != D) return gv_error_plain("pipeline: the stages' devices add up to %lld, not %lld", (long long)sum, (long long)D);
  }
  /* the cost keys' sub-mesh (its shape, not its index: a kept table holds other solves' costs) and cluster view */
  uint64_t mshape[MAX_MESHES];
  for (int m = 0; m < nm; m++) mshape[m] = (uint64_t)mn[m] << 32 | (uint64_t)mk[m];
  const uint64_t view = (uint64_t)c->nodes << 32 | (uint64_t)c->devices_per_node;
  const int V = p->schedule == GV_SCHED_INTERLEAVED ? p->vstages : 1;
  /* the ways the schedule runs (runs_way): recomputing stages not under ZB-H1 (its W entry reads the stash) nor the
   * interleaved schedule (stashing chunks), per-layer recomputation not under ZB-H1 */
  const gv_schedule psch = p->schedule;
  const int64_t zbh = p->schedule == GV_SCHED_ZBH1; /* the W entry's own bytes count (zb_bytes) */
  if (V > 1 && (!p->stages || p->stages % V))
    return gv_error_plain("pipeline: the interleaved schedule needs a fixed stage count, a multiple of %d chunks per device", V);
  int64_t Du = D / unit;
  int64_t limit = p->mem_limit > 0 ? p->mem_limit : c->memory_bytes;
  int il_inflight = 0; /* interleaved: (chunk, microbatch) entries the first group holds at its peak, per chunk (ceil) */
  /* interleaved: each device group holds V stages; a plan is taken when each group's memory (gv_pipe_group_mem) fits
   * the limit. The DP charges each stage its share of its group (gv_pipe_il_share): a first pass against the whole
   * limit (a group needs at least each of its stages' share), its plans checked per group; where it refused one, a
   * second pass against limit / V (the shares add up to at least the group's figure: each of its plans fits) */
  const int64_t glimit = limit;
  int64_t il_rejected = 0, *ilm = NULL;
  gv_pipe_plan *il_tmp = V > 1 ? malloc(sizeof *il_tmp) : NULL;
  if (V > 1 && !il_tmp) return gv_error_plain("pipeline: out of memory");
  if (V > 1) limit /= V;
  int S = p->stages ? p->stages : (int)(L < Du ? L : Du);
  if (S > GV_PIPE_MAX_STAGES) S = GV_PIPE_MAX_STAGES;
  size_t nF = (size_t)(S + 1) * (size_t)(L + 1) * (size_t)(Du + 1);
  size_t nC = (size_t)L * (size_t)(L + 1) * (size_t)nm;
  int64_t *F = malloc(nF * sizeof(int64_t));
  int32_t *Fj = malloc(nF * sizeof(int32_t));
  int8_t *Fm = malloc(nF);
  /* per row (s, k) of F in the DP over a t_max: whether it was written (then filled, else never read) and the
   * least and most d of its finite entries: the DP reads only those, and fills a row when it first writes it */
  const size_t nR = (size_t)(S + 1) * (size_t)(L + 1);
  uint8_t *Rt = malloc(nR);
  int32_t *Rlo = malloc(nR * sizeof(int32_t)), *Rhi = malloc(nR * sizeof(int32_t));
  const gv_stage_cost **C = calloc(nC, sizeof(gv_stage_cost *));
  int64_t *wofs = malloc(nC * sizeof(int64_t)); /* per range and sub-mesh: its ways in dw, wn of them */
  uint32_t *eix = malloc(nC * sizeof(uint32_t)); /* per usable range and sub-mesh: its cost's index in the table (the
                                                  * first sweep's look-up, read by the second) */
  uint8_t *wn = calloc(nC, 1);
  dway *dw = NULL;
  size_t ndw = 0, capdw = 0;
  int64_t *fmax = malloc(nC * sizeof(int64_t)); /* dp_ctx.fmax */
  uint8_t *seen = NULL;                          /* per stage cost of the table: its ways among the t_max candidates */
  int64_t *efast = NULL, *eofs = NULL;           /* ... its fastest way's ns and its ways' offset in dw */
  uint8_t *ewn = NULL;                           /* ... and its count of ways */
  int32_t *pk = NULL;                            /* dp_ctx.pk */
  uint32_t *pkg = NULL, pk_gen = 0;
  int64_t *fast = malloc(nC * sizeof(int64_t)); /* per range and sub-mesh: its fastest way's ns (-1: infeasible), read
                                                 * by the DP's inner loop without touching the cost itself */
  int64_t *cand = malloc(nC * GV_STAGE_MAX_VARS * sizeof(int64_t));
  int64_t *gbase = malloc(nC * GV_STAGE_MAX_VARS * sizeof(int64_t)); /* the t_max groups' smallest candidate */
  const char *pe = getenv("GALV_PIPE_PRUNE");
  const bool prune = !(pe && !strcmp(pe, "off"));
  cache own = {.gen = 1}, *chp = &own; /* the stage costs: this solve's own table, or the caller's emptied */
  const bool keep = p->table && p->keep_costs && prune;
  if (p->table) {
    chp = &p->table->ch;
    if (!keep) cache_empty(chp);
  }
  chp->solve++;
  int rc = -1;
  int64_t best = INT64_MAX, min_need = INT64_MAX;
  /* no partition fits: the partition whose largest stage needs the least (the binding figure), that stage */
  int64_t bind = INT64_MAX, bind_state = 0, bind_act = 0, bind_n = 0, bind_dev = 0;
  int bind_first = 0, bind_last = 0;
  if (!F || !Fj || !Fm || !C || !cand || !gbase || !fast || !fmax || !wofs || !eix || !wn || !Rt || !Rlo || !Rhi) {
    gv_error_plain("pipeline: out of memory (%d groups, %lld device units)", L, (long long)Du);
    goto done;
  }
#define IX(s, k, d) (((size_t)(s) * (size_t)(L + 1) + (size_t)(k)) * (size_t)(Du + 1) + (size_t)(d))
/* per range [k, j) and sub-mesh m; j the fastest-varying (the DP's innermost loop walks j) */
#define CX(k, j, m) (((size_t)(k) * (size_t)nm + (size_t)(m)) * (size_t)(L + 1) + (size_t)(j))
  const int64_t INF = DP_INF;
  for (int tier = V > 1 ? 0 : 1; tier < 2; tier++) {
  if (tier && V > 1 && !il_rejected) break; /* the first pass refused no plan: its plans are the DP's */
  limit = tier ? glimit / V : glimit;
  for (int bi = 0; bi < p->nmb; bi++) {
    int B = p->mb_choices[bi];
    if (B < 1) continue;
    if (V > 1) {
      if (B % (p->stages / V)) continue; /* the interleaved order needs B a multiple of the groups */
      galv_pipe_act *ga = malloc(sizeof *ga * (size_t)(2 * V * B));
      int pmb = 0;
      int64_t one[GV_PIPE_MAX_STAGES];
      for (int i = 0; i < V; i++) one[i] = 1;
      if (!ga) {
        gv_error_plain("pipeline: out of memory");
        goto done;
      }
      galv_pipe_peak_group(ga, galv_pipe_order_group(p->stages / V, V, 0, B, ga), one, &pmb);
      free(ga);
      il_inflight = (pmb + V - 1) / V;
    }
    /* the stage cost table for this B (its key holds B: none of another B's is read) */
    if (bi && !keep) cache_empty(chp);
    int ncand = 0;
    for (int k = 0; k < L; k++) {
      uint64_t h = 0x12345;
      for (int j = k + 1; j <= L; j++) {
        h = mix(h, p->sig ? p->sig[j - 1] : (uint64_t)(j - 1) * 0x100000001b3ull);
        if (!p->sig) h = mix(h, (uint64_t)k);
        if (!usable(p->stages, L, k, j)) continue;
        for (int m = 0; m < nm; m++) {
          uint64_t key = mix(mix(mix(mix(mix(h, (uint64_t)(j - k)), mshape[m]), (uint64_t)B), (uint64_t)(k == 0) | (uint64_t)(j == L) << 1), view);
          centry *e = cache_slot(chp, key);
          if (!e) {
            gv_error_plain("pipeline: out of memory");
            goto done;
          }
          out->lookups++;
          if (e->used != chp->gen) {
            if (p->cost(p->ctx, k, j, mn[m], mk[m], B, &chp->pool[chp->n])) goto done;
            e->used = chp->gen;
            e->key = key;
            e->idx = (uint32_t)chp->n++;
            e->k = k, e->j = j, e->seen = chp->solve;
            out->solves++;
          } else if (e->seen != chp->solve) { /* an earlier solve's (a kept table): taken if this range computed it */
            if (e->k != k || e->j != j) {
              if (p->cost(p->ctx, k, j, mn[m], mk[m], B, &chp->pool[e->idx])) goto done;
              e->k = k, e->j = j;
              out->solves++;
            }
            e->seen = chp->solve;
          }
          eix[CX(k, j, m)] = e->idx;
          C[CX(k, j, m)] = NULL;
        }
      }
    }
    ndw = 0;
    /* the t_max candidates: each stage cost's ways once (many ranges share one cost: the same layers on the same
     * sub-mesh), marked by its index in the table */
    free(seen), free(efast), free(eofs), free(ewn);
    seen = calloc(chp->n ? chp->n : 1, 1);
    efast = malloc((chp->n ? chp->n : 1) * sizeof *efast), eofs = malloc((chp->n ? chp->n : 1) * sizeof *eofs);
    ewn = malloc(chp->n ? chp->n : 1);
    if (!seen || !efast || !eofs || !ewn) {
      gv_error_plain("pipeline: out of memory");
      goto done;
    }
    /* second sweep: pointers (the table may have moved while growing), from the first's indices */
    for (int k = 0; k < L; k++) {
      for (int j = k + 1; j <= L; j++) {
        for (int m = 0; m < nm; m++) {
          if (!usable(p->stages, L, k, j)) {
            C[CX(k, j, m)] = &unusable;
            fast[CX(k, j, m)] = -1;
            continue;
          }
          const uint32_t ei = eix[CX(k, j, m)];
          gv_stage_cost *ec = &chp->pool[ei];
          C[CX(k, j, m)] = ec;
          fast[CX(k, j, m)] = -1;
          if (ec->feasible && seen[ei]) { /* a cost met already (the same layers on the same sub-mesh): its ways read */
            fast[CX(k, j, m)] = efast[ei];
            wofs[CX(k, j, m)] = eofs[ei];
            wn[CX(k, j, m)] = ewn[ei];
          } else if (ec->feasible) {
            int64_t fastest = ec->ns; /* of its ways (the analytic cost's may differ in (dp, tp)) */
            for (int w = 1; w < ec->nvar; w++)
              if (runs_way(&ec->var[w], psch) && ec->var[w].ns < fastest) fastest = ec->var[w].ns;
            fast[CX(k, j, m)] = efast[ei] = fastest;
            /* the ways the DP's pick weighs, dense (recomputing ones only where the schedule runs them), once per
             * cost: the ranges that share it read the same (a dense copy per range was most of the DP's cache
             * misses on GPT-3's 192 groups) */
            const int64_t zbw = p->schedule == GV_SCHED_ZBH1 ? ec->zb_bytes : 0;
            if (ndw + (size_t)GV_STAGE_MAX_VARS + 1 > capdw) {
              size_t nc2 = capdw ? 2 * capdw : 4096;
              dway *n2 = realloc(dw, nc2 * sizeof *dw);
              if (!n2) {
                gv_error_plain("pipeline: out of memory");
                goto done;
              }
              dw = n2, capdw = nc2;
            }
            wofs[CX(k, j, m)] = (int64_t)ndw;
            if (ec->nvar < 2) dw[ndw++] = (dway){ec->ns, ec->state_bytes + zbw, ec->act_bytes, ec->zb_act_bytes, 0, ec->send_bytes, ec->gsend_bytes};
            for (int w = 0; ec->nvar >= 2 && w < ec->nvar; w++) {
              const gv_stage_var *v = &ec->var[w];
              if (!runs_way(v, psch)) continue;
              dw[ndw++] = (dway){v->ns, v->state_bytes + zbw, v->act_bytes, ec->zb_act_bytes, v->key_ns ? v->key_ns : v->ns,
                                 ec->send_bytes, ec->gsend_bytes};
            }
            wn[CX(k, j, m)] = (uint8_t)(ndw - (size_t)wofs[CX(k, j, m)]);
            eofs[ei] = wofs[CX(k, j, m)], ewn[ei] = wn[CX(k, j, m)];
            int vv;
            gv_pipe_charge one = {.n = 1, .a = {1}};
            int64_t need = gv_stage_cost_min_need(ec, &one, p->schedule, &vv);
            if (need < min_need)
              min_need = need, out->min_state = (ec->nvar < 2 ? ec->state_bytes : ec->var[vv].state_bytes) + zbh * ec->zb_bytes,
              out->min_act = ec->nvar < 2 ? ec->act_bytes : ec->var[vv].act_bytes;
            if (!seen[ei]) {
              seen[ei] = 1;
              cand[ncand++] = ec->ns;
              for (int w = 1; w < ec->nvar && ncand < (int)nC * GV_STAGE_MAX_VARS; w++) /* the slower ways' times too */
                if (runs_way(&ec->var[w], psch)) cand[ncand++] = ec->var[w].ns;
            }
          }
        }
      }
    }
    for (int k = 0; k < L; k++)
      for (int m = 0; m < nm; m++) {
        int64_t mx = -1;
        for (int j = k + 1; j <= L; j++) {
          if (fast[CX(k, j, m)] > mx) mx = fast[CX(k, j, m)];
          fmax[CX(k, j, m)] = mx;
        }
      }
    sort_i64(cand, (size_t)ncand);
    const int nruns = binds(C, nC, B, limit) ? zb_runs(p, S, B) : 0;
    if (V > 1) { /* the ways' shares of their groups, computed when first read */
      free(ilm);
      ilm = malloc(sizeof *ilm * (ndw ? ndw : 1) * (size_t)S);
      if (!ilm) {
        gv_error_plain("pipeline: out of memory");
        goto done;
      }
      for (size_t i = 0; i < ndw * (size_t)S; i++) ilm[i] = -1;
    }
    dp_ctx dpx = {.p = p, .L = L, .nm = nm, .S = S, .V = V, .il_inflight = il_inflight, .Du = Du, .limit = limit, .mn = mn,
                  .mk = mk, .mu = mu, .F = F, .Fj = Fj, .Fm = Fm, .Rt = Rt, .Rlo = Rlo, .Rhi = Rhi, .nR = nR, .fast = fast, .fmax = fmax,
                  .wofs = wofs, .wn = wn, .dw = dw, .glimit = glimit, .ilm = ilm, .rejected = &il_rejected, .tmp = il_tmp,
                  .gen = &pk_gen};
    free(pk), free(pkg);
    pk = malloc((ndw ? ndw : 1) * sizeof *pk), pkg = calloc(ndw ? ndw : 1, sizeof *pkg);
    pk_gen = 0;
    if (!pk || !pkg) {
      gv_error_plain("pipeline: out of memory");
      goto done;
    }
    dpx.pk = pk, dpx.pkg = pkg;
    /* the t_max tried: candidates within 1% of each other are tried once, at the largest of the run (the smallest
     * would rule out stages 1% slower than it: one stage over many groups could then find no plan at all); cand[g]
     * becomes group g's t_max, gbase[g] its smallest */
    int ng = 0;
    for (int ci = 0; ci < ncand; ci++) {
      int64_t base = cand[ci];
      while (ci + 1 < ncand && cand[ci + 1] < base + base / 100 + 1) ci++;
      gbase[ng] = base, cand[ng++] = cand[ci];
    }
    dpx.B = B;
    for (int n = nruns ? 1 : 0; n <= nruns; n++) {
      dpx.n = n, dpx.Sn = n && n < B ? n : S; /* the most stages of this run's plans */
      /* The first t_max with a plan (GALV_PIPE_PRUNE=off: from the first): whether some partition fits at t_max
       * grows with t_max (each range offers the ways of ns <= t_max, the memory does not depend on it), so the
       * t_max before the first that has one find nothing and change nothing; one pass over every range at the
       * largest t_max, then a doubling and a bisection find it (a probe pass: no bound, no plan taken). */
      int g0 = 0;
      if (prune && ng > 0) {
        if (!dp_pass(&dpx, cand[ng - 1], INF, NULL, NULL, NULL)) g0 = ng; /* no t_max has a plan */
        else {
          int lo = 0, hi = ng - 1, step = 1; /* the first with a plan is in (lo - 1, hi]: hi has one */
          while (lo + step - 1 < hi && !dp_pass(&dpx, cand[lo + step - 1], INF, NULL, NULL, NULL)) lo += step, step *= 2;
          if (lo + step - 1 < hi) hi = lo + step - 1;
          while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (dp_pass(&dpx, cand[mid], INF, NULL, NULL, NULL)) hi = mid;
            else lo = mid + 1;
          }
          g0 = lo;
        }
      }
      for (int gi = g0; gi < ng; gi++) {
        int64_t base = gbase[gi], tmax = cand[gi];
        if ((double)B * (double)base >= (double)best) break;
        out->tmax_tried++;
        dp_pass(&dpx, tmax, best == INT64_MAX ? INF : best - (int64_t)(B - 1) * tmax, &best, out, C);
      }
    }
    if (best == INT64_MAX && ncand && !(p->probe && p->no_min_need)) { /* nothing fits at this B: the partition with the
                                                                       * smallest largest need */
      const int nruns = binds(C, nC, B, limit) ? zb_runs(p, S, B) : 0;
      for (int n = nruns ? 1 : 0; n <= nruns; n++) {
        const int Sn = n && n < B ? n : S;
#define RX(s, k) ((size_t)(s) * (size_t)(L + 1) + (size_t)(k))
        /* rows as in dp_pass (pruned): filled when first written, read between their least and most finite d
         * (the entries outside are infinite: the same minima); unpruned, all of F filled and every d read */
        if (prune) {
          memset(Rt, 0, nR);
          Rt[RX(0, L)] = 1, Rlo[RX(0, L)] = Rhi[RX(0, L)] = 0;
          for (int64_t d = 0; d <= Du; d++) F[IX(0, L, d)] = INF;
        } else
          for (size_t i = 0; i < nF; i++) F[i] = INF;
        F[IX(0, L, 0)] = 0;
        for (int s = 1; s <= Sn; s++) {
          gv_pipe_charge ch;
          dp_charge(p, V, il_inflight, s, run_total(p, n, B), B, &ch);
          for (int k = L - s; k >= 0; k--)
            for (int m = 0; m < nm; m++)
              for (int j = k + 1; j <= L - (s - 1); j++) {
                if (p->stage_devices && mn[m] * mk[m] != p->stage_devices[S - s]) break;
                int64_t dlo = mu[m], dhi = Du;
                const size_t rp = RX(s - 1, j), r = RX(s, k);
                /* pruned: the row read and the range's fastest way (-1: no way) before the cost itself */
                if (prune && (!Rt[rp] || Rlo[rp] > Rhi[rp] || fast[CX(k, j, m)] < 0)) continue;
                const gv_stage_cost *sc = C[CX(k, j, m)];
                if (!sc->feasible) continue;
                if (prune) {
                  dlo = Rlo[rp] + mu[m], dhi = Rhi[rp] + mu[m] < Du ? Rhi[rp] + mu[m] : Du;
                  if (!Rt[r]) {
                    for (int64_t d = 0; d <= Du; d++) F[IX(s, k, d)] = INF;
                    Rt[r] = 1, Rlo[r] = INT32_MAX, Rhi[r] = -1;
                  }
                }
                int vv;
                int64_t need = gv_stage_cost_min_need(sc, &ch, p->schedule, &vv);
                for (int64_t d = dlo; d <= dhi; d++) {
                  int64_t prev = F[IX(s - 1, j, d - mu[m])];
                  if (prev >= INF) continue;
                  int64_t v = prev > need ? prev : need;
                  /* pruned: an entry at the least need found so far or more cannot lower it (a partition's need
                   * is at least each of its entries'); the entries under it are the same as unpruned */
                  if (v < F[IX(s, k, d)] && (!prune || v < bind)) {
                    F[IX(s, k, d)] = v, Fj[IX(s, k, d)] = j, Fm[IX(s, k, d)] = (int8_t)m;
                    if (prune && d < Rlo[r]) Rlo[r] = (int32_t)d;
                    if (prune && d > Rhi[r]) Rhi[r] = (int32_t)d;
                  }
                }
              }
          if (!run_takes(p, n, B, s)) continue;
          if (prune && (!Rt[RX(s, 0)] || Rhi[RX(s, 0)] < Du)) continue; /* no partition of s stages on all the devices */
#undef RX
          int64_t v = F[IX(s, 0, Du)];
          if (v >= INF || v >= bind) continue;
          bind = v;
          int k = 0;
          int64_t d = Du;
          for (int ss = s; ss >= 1; ss--) { /* the stage that needs v */
            int j = Fj[IX(ss, k, d)], m = Fm[IX(ss, k, d)];
            const gv_stage_cost *sc = C[CX(k, j, m)];
            int64_t inflight = dp_inflight(p, V, il_inflight, ss, s, B);
            gv_pipe_charge ch;
            dp_charge(p, V, il_inflight, ss, s, B, &ch);
            int vv;
            if (gv_stage_cost_min_need(sc, &ch, p->schedule, &vv) == v) {
              bind_first = k, bind_last = j, bind_n = inflight;
              bind_state = (sc->nvar < 2 ? sc->state_bytes : sc->var[vv].state_bytes) + zbh * sc->zb_bytes;
              bind_act = sc->nvar < 2 ? sc->act_bytes : sc->var[vv].act_bytes;
              bind_dev = mn[m] * mk[m];
            }
            d -= mu[m];
            k = j;
          }
        }
      }
    }
  }
  }
  limit = V > 1 ? glimit / V : glimit;
  if (best == INT64_MAX && bind < INT64_MAX) {
    out->min_need = bind; /* the binding figure: no partition needs less */
    if (p->probe) { /* the caller reports (the default search: the smaller of its minima) */
      rc = 1;
      goto done;
    }
    gv_error_plain("pipeline: no partition fits the memory limit of %.3f GiB (%lld bytes) per device: the partition whose "
                   "largest stage needs the least still needs %.3f GiB (%lld bytes) in groups %d-%d on %lld devices (%.3f GiB "
                   "states + %lld x %.3f GiB saved per microbatch in flight)%s",
                   (double)limit / (1 << 30), (long long)limit, (double)bind / (1 << 30), (long long)bind, bind_first,
                   bind_last - 1, (long long)bind_dev, (double)bind_state / (1 << 30), (long long)bind_n,
                   (double)bind_act / (1 << 30),
                   p->nmb == 1 && p->mb_choices[0] == 1 && bind_act > 0
                       ? "; the whole batch is one microbatch: --microbatches N (or auto) splits it" : "");
    rc = 1;
    goto done;
  }
  if (best == INT64_MAX) {
    out->min_need = min_need == INT64_MAX ? -1 : min_need;
    if (p->probe) {
      rc = 1;
      goto done;
    }
    if (min_need == INT64_MAX)
      gv_error_plain("pipeline: no stage of the %d layer groups can run on any sub-mesh of %lld devices%s", L,
                     (long long)D, p->why_none ? p->why_none : "");
    else { /* some stages fit, but no partition is made of stages that plan: name the ranges that do not */
      int nbad = 0, ncost = 0, bf = -1, bl = -1;
      int64_t bd = 0;
      for (int k = 0; k < L; k++)
        for (int j = k + 1; j <= L; j++)
          for (int m = 0; m < nm; m++) {
            const gv_stage_cost *sc = C[CX(k, j, m)];
            if (!sc || sc == &unusable || (p->mesh_devices > 0 && mn[m] * mk[m] != p->mesh_devices)) continue;
            ncost++;
            if (sc->feasible) continue;
            if (!nbad++ || j - k < bl - bf) bf = k, bl = j, bd = mn[m] * mk[m]; /* the shortest such range */
          }
      if (!nbad)
        gv_error_plain("pipeline: no partition of the %d layer groups into %s%d stages covers the %lld devices with the sub-meshes "
                       "allowed", L, p->stages ? "" : "up to ", p->stages ? p->stages : S, (long long)D);
      else
      gv_error_plain("pipeline: no partition of the %d layer groups into %s%d stages on %lld devices has a plan for every stage, "
                     "whatever the memory limit: %d of the %d stage programs costed have no plan on their sub-mesh (the "
                     "shortest: groups %d-%d on %lld device%s; GALV_PLAN_DEBUG=1 prints each), and the stages that plan need "
                     "%.3f GiB at least with one microbatch in flight (the limit: %.3f GiB)%s",
                     L, p->stages ? "" : "up to ", p->stages ? p->stages : S, (long long)D, nbad, ncost, bf, bl - 1, (long long)bd, bd == 1 ? "" : "s",
                     (double)min_need / (1 << 30), (double)limit / (1 << 30), p->why_none ? p->why_none : "");
    }
    rc = 1;
    goto done;
  }
  rc = 0;
done:
  out->seconds = now() - t0;
  free(F);
  free(Fj);
  free(Fm);
  free(Rt), free(Rlo), free(Rhi);
  free((void *)C);
  free(fast), free(fmax), free(seen), free(efast), free(eofs), free(ewn), free(pk), free(pkg);
  free(wofs), free(eix), free(wn), free(dw);
  free(cand), free(gbase);
  free(own.t), free(own.pool);
  free(ilm), free(il_tmp);
  return rc;
#undef IX
#undef CX
}

bool gv_pipe_across(const gv_cluster *c, int64_t k) {
  return gv_cluster_devices(c) > c->devices_per_node && k >= c->devices_per_node;
}

int64_t gv_pipe_scatter_q(const gv_cluster *c, int64_t k, int64_t D, bool dp_first, int64_t elems) {
  const char *e = getenv("GALV_PIPE_SCATTER");
  if ((e && !strcmp(e, "off")) || !dp_first || D < 2 || k <= D || k % D || elems <= 0 || elems % k || !gv_pipe_across(c, k))
    return 1;
  return k / D;
}

int64_t gv_pipe_transfer_split_ns(const gv_cluster *c, int64_t nodes, int64_t per_node, int64_t in_bytes, int64_t out_bytes,
                                  int64_t in_rows, int64_t out_rows, int64_t D, int64_t q, int64_t kernels, bool training) {
  if (D <= 1 || (in_rows <= 0 && out_rows <= 0)) return gv_pipe_transfer_ns(c, nodes, per_node, in_bytes, out_bytes, kernels, training);
  int64_t k = nodes * per_node;
  bool across = gv_pipe_across(c, k);
  if (q < 1 || !across) q = 1; /* inside a node the scatter's gather costs what it saves: not used (xs_scatter) */
  /* the q ranks of a block: consecutive, inside a node while q fits one */
  const int64_t q_per = q < per_node ? q : per_node, q_nodes = (q + q_per - 1) / q_per;
  int64_t t = 0;
  for (int dir = 0; dir < (training ? 2 : 1); dir++) { /* training: the gradients travel back the same way */
    int64_t recv = dir ? out_bytes : in_bytes, send = dir ? in_bytes : out_bytes;
    int64_t rrows = dir ? out_rows : in_rows, srows = dir ? in_rows : out_rows;
    const int64_t rblock = (rrows + D - 1) / D, sblock = (srows + D - 1) / D;
    t += gv_cost_collective(c, GV_COLL_P2P, (recv - rrows + k - 1) / k + (rblock + q - 1) / q, 2, across);
    if (k > 1 && recv > rrows) t += gv_cost_collective_levels(c, GV_COLL_ALL_GATHER, recv - rrows, per_node, nodes);
    if (q > 1 && rblock > 0) t += gv_cost_collective_levels(c, GV_COLL_ALL_GATHER, rblock, q_per, q_nodes);
    t += gv_cost_collective(c, GV_COLL_P2P, (send - srows + k - 1) / k + (sblock + q - 1) / q, 2, across);
  }
  return t + (int64_t)((double)kernels * c->launch_overhead_us * 1e3 + 0.5);
}

int64_t gv_pipe_transfer_ns(const gv_cluster *c, int64_t nodes, int64_t per_node, int64_t in_bytes, int64_t out_bytes,
                            int64_t kernels, bool training) {
  int64_t k = nodes * per_node;
  bool across = gv_cluster_devices(c) > c->devices_per_node && k >= c->devices_per_node;
  int64_t t = 0;
  for (int dir = 0; dir < (training ? 2 : 1); dir++) { /* training: the gradients travel back */
    int64_t recv = dir ? out_bytes : in_bytes, send = dir ? in_bytes : out_bytes;
    t += gv_cost_collective(c, GV_COLL_P2P, (recv + k - 1) / k, 2, across);
    if (k > 1) t += gv_cost_collective_levels(c, GV_COLL_ALL_GATHER, recv, per_node, nodes);
    t += gv_cost_collective(c, GV_COLL_P2P, (send + k - 1) / k, 2, across);
  }
  return t + (int64_t)((double)kernels * c->launch_overhead_us * 1e3 + 0.5);
}

static bool shared_reads(const gv_shared_param *q, int first, int last, bool *outside) {
  bool in = false;
  *outside = false;
  for (int i = 0; i < q->ngroups; i++) {
    if (q->groups[i] >= first && q->groups[i] < last) in = true;
    else *outside = true;
  }
  return in;
}

int64_t gv_pipe_shared_extra_bytes(const gv_shared_param *sp, int n, int first, int last) {
  int64_t b = 0;
  bool out;
  for (int i = 0; i < n; i++)
    if (sp[i].ngroups && sp[i].groups[0] < first && shared_reads(&sp[i], first, last, &out)) b += sp[i].bytes;
  return b;
}

int64_t gv_pipe_shared_ns(const gv_cluster *c, const gv_shared_param *sp, int n, int first, int last, int64_t nodes,
                          int64_t per_node, bool training, const int64_t *bytes) {
  if (!training) return 0;
  int64_t k = nodes * per_node, t = 0;
  bool across = gv_cluster_devices(c) > c->devices_per_node && k >= c->devices_per_node, out;
  for (int i = 0; i < n; i++) {
    const int64_t b = bytes ? bytes[i] : sp[i].bytes;
    if (shared_reads(&sp[i], first, last, &out) && out) t += 2 * gv_cost_collective(c, GV_COLL_P2P, b, 2, across);
  }
  return t;
}

/* A stage cost emptied: its fields before var[] and after it (var[] itself is read only up to nvar, and the analytic
 * cost below runs for every range of the screen: clearing and copying its 24 ways each time was most of its time) */
static void cost_clear(gv_stage_cost *c) {
  memset(c, 0, offsetof(gv_stage_cost, var));
  c->way = 0, c->bounded = false;
}

/* *dst = *src, var[] up to src->nvar */
static void cost_copy(gv_stage_cost *dst, const gv_stage_cost *src) {
  memcpy(dst, src, offsetof(gv_stage_cost, var));
  memcpy(dst->var, src->var, sizeof src->var[0] * (size_t)(src->nvar > 0 ? src->nvar : 0));
  dst->way = src->way, dst->bounded = src->bounded;
}

/* the analytic cost of one way of the stage: recompute (an earlier training stage), zero (ZeRO-1 over dp) */
/* The range's figures every way of it reads (analytic_way): its groups' sums, the shared parameters' copies and
 * sync, the transfers in and out. */
typedef struct {
  gv_group_stats s;
  int64_t boundaries, shared_ns, in_b, xfer;
  int first; /* the range's first group (0: the first stage, which sends no gradient back) */
} analytic_range;
static void analytic_range_of(const gv_analytic_ctx *x, int first, int last, int64_t nodes, int64_t per_node, int B,
                              analytic_range *r) {
  const gv_cluster *c = x->cluster;
  gv_group_stats s = {0};
  int64_t boundaries = 0;
  for (int g = first; g < last; g++) {
    s.flops += x->g[g].flops;
    s.param_bytes += x->g[g].param_bytes;
    s.act_bytes += x->g[g].act_bytes - (g > first ? x->g[g].act_credit : 0);
    boundaries += x->g[g].out_bytes;
  }
  s.param_bytes += gv_pipe_shared_extra_bytes(x->shared, x->nshared, first, last); /* copies of shared parameters */
  r->s = s, r->boundaries = boundaries, r->first = first;
  r->shared_ns = gv_pipe_shared_ns(c, x->shared, x->nshared, first, last, nodes, per_node, x->training, NULL);
  int64_t in_b = first > 0 ? x->g[first - 1].out_bytes / B : 0, out_b = last < x->ngroups ? x->g[last - 1].out_bytes / B : 0;
  r->in_b = in_b;
  r->xfer = gv_pipe_transfer_ns(c, nodes, per_node, in_b, out_b, 0, x->training);
}

static int analytic_way(const gv_analytic_ctx *x, const analytic_range *rg, bool recompute, int zero, int last, int64_t nodes,
                        int64_t per_node, int B, gv_stage_cost *out) {
  const gv_cluster *c = x->cluster;
  cost_clear(out);
  int64_t p = nodes * per_node;
  if (B < 1 || x->batch % B) return 0; /* infeasible: the microbatch must divide the batch */
  int64_t mb = x->batch / B;
  const gv_group_stats s = rg->s;
  const int64_t boundaries = rg->boundaries, shared_ns = rg->shared_ns, in_b = rg->in_b, xfer = rg->xfer;
  int64_t best_dp = 0, best_tp = 0;
  double peak = gv_cluster_flops(c, x->dtype_bytes == 2 ? GV_DT_BF16 : GV_DT_F32);
  int64_t best = -1, best_need = -1;
  const int64_t limit = x->mem_limit > 0 ? x->mem_limit : c->memory_bytes;
  for (int64_t tp = 1; tp <= per_node && tp <= p; tp *= 2) {
    if (p % tp) continue;
    int64_t dp = p / tp;
    if (mb % dp) continue;
    double f = (double)s.flops / (double)B * (x->training ? 3.0 : 1.0);
    int64_t compute = (int64_t)(f / (double)p / peak * 1e9) + 1;
    int64_t comm = 0;
    if (tp > 1) {
      /* two all-reduces of the group outputs forward, two backward */
      int64_t bytes = boundaries / B / dp;
      comm = (x->training ? 4 : 2) * gv_cost_collective_levels(c, GV_COLL_ALL_REDUCE, bytes, tp, 1);
    }
    int64_t once = 0;
    if (x->training && dp > 1)
      once = gv_cost_collective_levels(c, GV_COLL_ALL_REDUCE, s.param_bytes / tp * (x->dtype_bytes) / 4,
                                       nodes > 1 ? per_node / tp : dp, nodes > 1 ? nodes : 1);
    int64_t t = compute + comm + xfer;
    int64_t words = s.param_bytes / 4; /* parameters (counted in f32 words) */
    /* training, per parameter as runtime/pipe.c keeps it: the fp32 weight (one buffer for a stage's forward and
     * backward entries), its gradient sum and the optimizer state (ZeRO-1: over dp) */
    int64_t opt = (int64_t)x->opt_states * 4 * words, zopt = zero && dp > 1 ? (opt + dp - 1) / dp : opt;
    int64_t states = x->training ? (8 * words + zopt) / tp : words * x->dtype_bytes / tp;
    if (x->training && zero == 2 && dp > 1) { /* ZeRO-2: this rank's chunk of the sums beside them; the step's gradient
                                                * all-reduce becomes a reduce-scatter (and the all-gather below) */
      states += (4 * words / tp + dp - 1) / dp;
      once = gv_cost_collective_levels(c, GV_COLL_REDUCE_SCATTER, s.param_bytes / tp * (x->dtype_bytes) / 4,
                                       nodes > 1 ? per_node / tp : dp, nodes > 1 ? nodes : 1);
    }
    /* training: one microbatch's activations (the arena's working set, the stash an earlier stage keeps per
     * microbatch in flight); recomputing, an earlier stage keeps its inputs instead, the last stage the
     * gradients it sends back (about its inputs) */
    int64_t one = s.act_bytes / B / dp / tp, act = one;
    if (x->training) states += one, act = last < x->ngroups && !recompute ? one : in_b;
    if (!x->training) act = boundaries / B / dp; /* inference keeps only what crosses */
    int64_t need = states + act;
    bool fits = need <= limit, best_fits = best >= 0 && best_need <= limit;
    /* the fastest that fits (one microbatch in flight), else the one that needs the least */
    if (best < 0 || (fits && (!best_fits || t < best)) || (!fits && !best_fits && need < best_need)) {
      best = t;
      best_need = need;
      out->zero_ns = x->training && zero && dp > 1 ? gv_cost_collective_levels(c, GV_COLL_ALL_GATHER, 4 * words / tp, nodes > 1 ? per_node / tp : dp,
                                                                                       nodes > 1 ? nodes : 1) : 0;
      out->zero_ranks = x->training && zero && dp > 1 ? dp : 0;
      out->zero = (signed char)(out->zero_ranks ? zero : 0);
      if (out->zero_ranks && zero == 2) out->zero_ns += once, once = 0; /* ZeRO-2: the reduce-scatter is ZeRO's too */
      once += out->zero_ns;
      out->key_ns = t + out->zero_ns / B;
      out->ns = t;
      out->state_bytes = states;
      out->act_bytes = act;
      out->once_ns = once + shared_ns;
      out->xfer_ns = xfer;
      out->feasible = true;
      out->recompute = x->training && recompute && last < x->ngroups;
      /* ZB-H1's weight-gradient entry (a stage that sends a gradient back): about one microbatch's activations read
       * from B until W (its parameters are the stage's weights buffer's; no arena figure here) */
      out->zb_bytes = 0;
      out->zb_act_bytes = x->training && rg->first > 0 ? one : 0;
      best_dp = dp, best_tp = tp;
    }
  }
  if (best >= 0) snprintf(out->desc, sizeof out->desc, "dp=%lld,tp=%lld", (long long)best_dp, (long long)best_tp);
  return 0;
}

int gv_stage_cost_analytic(void *vctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *out) {
  const gv_analytic_ctx *x = vctx;
  bool earlier = x->training && last < x->ngroups;
  if (earlier) { /* a training stage before the last sends a floating-point value on (its seed), as gv_stage_cost_intra */
    int reach = -1; /* the last group reached */
    for (int g = first; g < last && reach < last; g++) {
      const int r = x->g[g].float_reach;
      if (!r) reach = last; /* not known */
      else if (r - 1 > reach) reach = r - 1;
    }
    if (reach < last) {
      cost_clear(out);
      out->int_only = true;
      return 0;
    }
  }
  /* the ways offered: the forced or only choice, or both (choose_*) */
  int nr = 0, nz = 0;
  bool rcs[2];
  int zs[3];
  if (!earlier || x->recompute || !x->choose_recompute) rcs[nr++] = earlier && x->recompute;
  else rcs[nr++] = false, rcs[nr++] = true;
  if (!x->training || x->zero || !x->choose_zero) zs[nz++] = x->training ? x->zero : 0;
  else zs[nz++] = 0, zs[nz++] = 1, zs[nz++] = 2; /* ZeRO-2 reduced once per step (the per-microbatch form: not priced here) */
  gv_stage_cost w, first_way;
  cost_clear(&first_way);
  analytic_range rg = {0};
  if (B >= 1 && x->batch % B == 0) analytic_range_of(x, first, last, nodes, per_node, B, &rg);
  int n = 0;
  for (int r = 0; r < nr; r++)
    for (int z = 0; z < nz; z++) {
      if (analytic_way(x, &rg, rcs[r], zs[z], last, nodes, per_node, B, &w)) return -1;
      if (!w.feasible) continue;
      if (z && w.zero_ranks < 2) continue; /* offered ZeRO without dp ranks to split over: the same as without */
      if (!n) cost_copy(&first_way, &w);
      gv_stage_cost_add_way(&first_way, &w);
      n++;
    }
  if (n < 2) first_way.nvar = 0;
  cost_copy(out, &first_way);
  return 0;
}

/* Interleaved (vstages V > 1): a device group's once-per-step part is its V stages' together (their reductions share
 * the device's links, their updates its memory), the stages g, g + P, ... of P = S / V groups; else a stage's own. */
static int once_groups(const gv_pipe_plan *pl) {
  return pl->vstages > 1 && pl->nstages % pl->vstages == 0 ? pl->nstages / pl->vstages : pl->nstages;
}

int64_t gv_pipe_plan_once_ns(const gv_pipe_plan *pl) {
  const gv_pipe_step_parts p = gv_pipe_plan_parts(pl);
  return p.sync + p.zero + p.upd;
}

int64_t gv_pipe_plan_full_ns(const gv_pipe_plan *pl) {
  return (pl->sched_ns > 0 ? pl->sched_ns : pl->step_ns) + gv_pipe_plan_once_ns(pl);
}

gv_pipe_step_parts gv_pipe_plan_parts(const gv_pipe_plan *pl) {
  gv_pipe_step_parts r = {.sched = pl->sched_ns > 0 ? pl->sched_ns : pl->step_ns};
  const int P = once_groups(pl);
  int64_t best = -1;
  for (int g = 0; g < P; g++) { /* the slowest stage (interleaved: device group, k its first stage) */
    int64_t t = 0;
    for (int i = g; i < pl->nstages; i += P) t += pl->cost[i].once_ns;
    if (t > best) best = t, r.k = g;
  }
  for (int i = r.k; i < pl->nstages; i += P) {
    const gv_stage_cost *c = &pl->cost[i];
    const int64_t z = c->zero_ranks > 1 ? c->zero_ns : 0;
    r.zero += z, r.upd += c->opt_ns, r.sync += c->once_ns - z - c->opt_ns;
  }
  return r;
}

/* A stage's way in words: "dp=4, recompute, zero-1, recompute=selective" */
static void way_words(const gv_stage_var *w, char *buf, size_t n) {
  const int z = way_zero(w->zero_ranks, w->zero);
  snprintf(buf, n, "%s%s%s%s%s%s", w->desc[0] ? w->desc : "as planned", w->recompute ? ", recompute" : "", z ? ", " : "",
           z ? gv_zero_name(z) : "", w->layer_rc ? ", recompute=" : "", w->layer_rc ? gv_layer_rc_name(w->layer_rc) : "");
}

/* Each stage's runner-up among its ways (the stage cost's var[]: recomputation, ZeRO, per-layer recomputation
 * offered for the stage's range and sub-mesh): the fastest other way that fits the limit with the stage's microbatches
 * in flight (else the fastest), and why the DP took the chosen one (docs/planner.md, "Each layer group explained") */
static void stage_runner_up(const gv_pipe_plan *pl, int i, FILE *f) {
  const gv_stage_cost *c = &pl->cost[i];
  if (c->nvar < 2) return;
  const int chosen = c->way;
  const bool il = pl->schedule == GV_SCHED_INTERLEAVED && pl->vstages > 1; /* memory per device group: not per way here */
  gv_pipe_charge ch;
  gv_pipe_charge_make(pl->schedule, pl->nstages, i, pl->B, pl->inflight[i], &ch);
  /* ZB-H1: the chosen way's states hold the weight-gradient entry's bytes (gv_stage_cost_use), every way's would */
  const int64_t zb = pl->schedule == GV_SCHED_ZBH1 ? c->state_bytes - c->var[chosen].state_bytes : 0;
  int best = -1, over = -1, n = 0;
  int64_t need_b = 0, need_o = 0;
  for (int v = 0; v < c->nvar; v++) {
    const gv_stage_var *w = &c->var[v];
    if (v == chosen || !runs_way(w, pl->schedule)) continue;
    n++;
    int64_t need = w->state_bytes + zb +
                   (pl->schedule == GV_SCHED_ZBH1 ? gv_pipe_charge_bytes(&ch, w->act_bytes, c->zb_act_bytes) : pl->inflight[i] * w->act_bytes);
    const int64_t key = way_key(w);
    if (il || !pl->limit || need <= pl->limit) {
      if (best < 0 || key < way_key(&c->var[best])) best = v, need_b = need;
    } else if (over < 0 || key < way_key(&c->var[over])) over = v, need_o = need;
  }
  if (!n) return;
  const int r = best >= 0 ? best : over;
  const gv_stage_var *w = &c->var[r];
  char wd[128];
  way_words(w, wd, sizeof wd);
  const int64_t ck = way_key(&c->var[chosen]), rk = way_key(w);
  fprintf(f, "  stage %d runner-up (%s): %.3f ms/microbatch (%+.3f; with ZeRO's per-step collectives spread over the "
             "microbatches %+.3f)", i, wd, (double)w->ns / 1e6, (double)(w->ns - c->ns) / 1e6, (double)(rk - ck) / 1e6);
  if (!il) fprintf(f, ", %lld bytes per device", (long long)(best >= 0 ? need_b : need_o));
  if (best < 0) fprintf(f, ": over the memory limit of %lld bytes", (long long)pl->limit);
  else if (rk > ck) fprintf(f, ": slower");
  else if (rk == ck && r > chosen) fprintf(f, ": as fast (on a tie the DP keeps the earlier way: no per-layer recomputation, "
                                           "no ZeRO, stash first)");
  else fprintf(f, ": as fast or faster by its key and within the limit here, not the stage DP's pick (the DP charged the stage otherwise)");
  fprintf(f, " (%d other way%s", n, n == 1 ? "" : "s");
  if (best >= 0 && over >= 0 && way_key(&c->var[over]) < rk) {
    way_words(&c->var[over], wd, sizeof wd);
    fprintf(f, "; %s faster, %.3f ms/microbatch, but %lld bytes: over the limit", wd, (double)c->var[over].ns / 1e6, (long long)need_o);
  }
  fprintf(f, ")\n");
}

void gv_pipe_plan_print(const gv_pipe_plan *pl, void *file) {
  FILE *f = file;
  /* the whole step (galvc's key, plan.json predicted_step_ns): the schedule's part (the timeline's makespan, or the
   * stage DP's formula) and the once-per-step part (plan.json sync_ns) of the slowest stage there: its gradient
   * reduction after the last microbatch with the shared parameters' sum, ZeRO's collectives and the update */
  const gv_pipe_step_parts p = gv_pipe_plan_parts(pl);
  const int64_t once = gv_pipe_plan_once_ns(pl), full = p.sched + once;
  fprintf(f, "pipeline: %d stages, %d microbatches, step %.3f ms (schedule %.3f ms + once per step %.3f ms; the stage DP's "
             "formula: sum %.3f ms + (B-1) x max %.3f ms = %.3f ms)\n", pl->nstages, pl->B, (double)full / 1e6,
          (double)p.sched / 1e6, (double)once / 1e6, (double)pl->sum_ns / 1e6, (double)pl->max_ns / 1e6, (double)pl->step_ns / 1e6);
  if (once > 0)
    fprintf(f, "pipeline: predicted step %.3f ms = schedule %.3f ms + once-per-step sync %.3f ms + ZeRO %.3f ms + update %.3f ms "
               "(the once-per-step part: %s %d's)\n", (double)full / 1e6, (double)p.sched / 1e6, (double)p.sync / 1e6,
            (double)p.zero / 1e6, (double)p.upd / 1e6, once_groups(pl) < pl->nstages ? "device group" : "stage", p.k);
  else fprintf(f, "pipeline: predicted step %.3f ms = schedule %.3f ms (nothing once per step)\n", (double)full / 1e6, (double)p.sched / 1e6);
  for (int i = 0; i < pl->nstages; i++)
    fprintf(f, "  stage %d: groups %d-%d on %lldx%lld (%s%s%s%s): %.3f ms/microbatch, %.2f GiB states + %lld x %.2f GiB activations (%lld bytes per device)\n",
            i, pl->first[i], pl->first[i + 1] - 1, (long long)pl->nodes[i], (long long)pl->per_node[i], pl->cost[i].desc,
            pl->cost[i].recompute ? ", recompute" : "", pl->cost[i].layer_rc ? ", recompute=" : "",
            pl->cost[i].layer_rc ? gv_layer_rc_name(pl->cost[i].layer_rc) : "", (double)pl->cost[i].ns / 1e6, (double)pl->cost[i].state_bytes / (1 << 30),
            (long long)pl->inflight[i], (double)pl->cost[i].act_bytes / (1 << 30),
            (long long)(pl->cost[i].state_bytes + gv_pipe_plan_saved(pl, i)));
  for (int i = 0; i < pl->nstages; i++) { /* the stage's time by term (the planned stage programs'; 0: not priced) */
    const gv_stage_cost *c = &pl->cost[i];
    if (c->comm_ns > 0 || c->grad_ns > 0 || c->xfer_ns > 0)
      fprintf(f, "  stage %d time: %.3f ms/microbatch = compute %.3f + exposed communication %.3f + transfers and overhead %.3f + "
                 "gradient sums %.3f\n", i, (double)c->ns / 1e6, (double)(c->ns - c->comm_ns - c->xfer_ns - c->grad_ns) / 1e6,
              (double)c->comm_ns / 1e6, (double)c->xfer_ns / 1e6, (double)c->grad_ns / 1e6);
  }
  for (int i = 0; i < pl->nstages; i++) stage_runner_up(pl, i, f);
  if (pl->schedule == GV_SCHED_INTERLEAVED && pl->vstages > 1) /* a device's memory: its group's V stages (what the DP checked) */
    for (int d = 0, P = pl->nstages / pl->vstages; d < P; d++) {
      int64_t st = 0, mem = gv_pipe_group_mem(pl, d, &st);
      fprintf(f, "  device group %d (stages", d);
      for (int c = 0; c < pl->vstages; c++) fprintf(f, "%s%d", c ? "," : " ", c * P + d);
      fprintf(f, "): %.2f GiB states + %.2f GiB saved activations, send copies and batons at their peak (%lld bytes per device)\n",
              (double)st / (1 << 30), (double)(mem - st) / (1 << 30), (long long)mem);
    }
  for (int i = 0; i < pl->nstages; i++)
    if (pl->cost[i].zero_ranks > 1 && way_zero(pl->cost[i].zero_ranks, pl->cost[i].zero) == GV_ZERO_1)
      fprintf(f, "  stage %d: ZeRO-1: optimizer state over %lld ranks, parameters all-gathered after the update: %.3f ms per step\n", i,
              (long long)pl->cost[i].zero_ranks, (double)pl->cost[i].zero_ns / 1e6);
    else if (pl->cost[i].zero_ranks > 1)
      fprintf(f, "  stage %d: ZeRO-2: optimizer state and gradient sums over %lld ranks, reduce-scattered %s, parameters "
                 "all-gathered after the update: %.3f ms per step\n", i, (long long)pl->cost[i].zero_ranks,
              pl->cost[i].zero == GV_ZERO_2_EACH ? "per microbatch" : "once per step", (double)pl->cost[i].zero_ns / 1e6);
  fprintf(f, "pipeline: %lld stage solves for %lld lookups, %lld t_max tried, %.3f s\n", (long long)pl->solves,
          (long long)pl->lookups, (long long)pl->tmax_tried, pl->seconds);
}

const char *gv_schedule_name(gv_schedule s) {
  return s == GV_SCHED_GPIPE ? "gpipe" : s == GV_SCHED_1F1B ? "1f1b" : s == GV_SCHED_ZBH1 ? "zb-h1"
         : s == GV_SCHED_INTERLEAVED ? "interleaved" : "auto";
}

void gv_pipe_timeline_free(gv_pipe_timeline *t) {
  free(t->ev);
  t->ev = NULL;
  t->nev = 0;
}

int gv_pipe_timeline_make(const gv_pipe_plan *pl, bool train, gv_schedule sched, gv_pipe_timeline *t) {
  const int S = pl->nstages, B = pl->B, il = train && sched == GV_SCHED_INTERLEAVED;
  const int V = il ? pl->vstages : 1, P = S / (V > 0 ? V : 1), G = il ? P : S; /* G device groups */
  const int per = train ? galv_pipe_nacts(sched) * B : B, gper = per * V; /* entries per stage, per group */
  memset(t, 0, sizeof *t);
  if (S < 1 || S > GV_PIPE_MAX_STAGES || B < 1 || (train && sched == GV_SCHED_AUTO))
    return gv_error_plain("pipeline timeline: %d stages, %d microbatches, schedule %s", S, B, gv_schedule_name(sched)), -1;
  if (il && (V < 2 || S % V || P < 2 || B % P))
    return gv_error_plain("pipeline timeline: interleaved over %d stages, %d chunks per group, %d microbatches: the stages must be "
                          "V x P (P >= 2 groups) and the microbatches a multiple of P", S, V, B), -1;
  size_t n = (size_t)S * (size_t)B;
  int64_t *end = malloc(sizeof *end * n * 3); /* per stage and microbatch: F, B, W end (-1: not placed) */
  galv_pipe_act *acts = malloc(sizeof *acts * (size_t)G * (size_t)gper), *sacts = malloc(sizeof *sacts * (size_t)gper); /* galv_pipe_order_v: 2 V B */
  int *next = calloc((size_t)G, sizeof *next);
  t->ev = malloc(sizeof *t->ev * (size_t)S * (size_t)per);
  if (!end || !acts || !sacts || !next || !t->ev) {
    free(end), free(acts), free(sacts), free(next), gv_pipe_timeline_free(t);
    return gv_error_plain("out of memory"), -1;
  }
  for (size_t k = 0; k < 3 * n; k++) end[k] = -1;
#define END(kind, i, j) end[(size_t)(kind) * n + (size_t)(i) * (size_t)B + (size_t)(j)] /* kind 0 F, 1 B, 2 W */
  for (int i = 0; i < G; i++) { /* each group's order (a stage's, chunk 0, but for the interleaved schedule) */
    galv_pipe_act *a = acts + (size_t)i * (size_t)gper;
    if (il) galv_pipe_order_group(P, V, i, B, a);
    else if (train) galv_pipe_order(S, i, B, sched, a);
    else
      for (int j = 0; j < B; j++) a[j] = (galv_pipe_act){1, j, 0, 0};
  }
  int64_t free_at[GV_PIPE_MAX_STAGES] = {0};
  int left = G * gper, rc = 0;
  t->ngroups = G;
  while (left) { /* each group takes its next entry once the entries it depends on have ended */
    int progress = 0;
    for (int gi = 0; gi < G; gi++) {
      if (next[gi] == gper) continue;
      const galv_pipe_act *a = &acts[(size_t)gi * (size_t)gper + (size_t)next[gi]];
      const int i = a->chunk * P + gi; /* the entry's stage (chunk 0: the group's stage) */
      int64_t dep = 0;
      if (a->fwd) {
        if (i && END(0, i - 1, a->mb) < 0) continue;
        if (i) dep = END(0, i - 1, a->mb);
      } else if (!a->w) {
        if ((i + 1 < S && END(1, i + 1, a->mb) < 0) || END(0, i, a->mb) < 0) continue;
        dep = END(0, i, a->mb);
        if (i + 1 < S && END(1, i + 1, a->mb) > dep) dep = END(1, i + 1, a->mb);
      } else {
        if (END(1, i, a->mb) < 0) continue;
        dep = END(1, i, a->mb);
      }
      int64_t ns = pl->cost[i].ns, fwd = train ? ns / 3 : ns, bwd = sched == GV_SCHED_ZBH1 ? (ns - fwd) / 2 : ns - fwd;
      int64_t dur = a->fwd ? fwd : a->w ? ns - fwd - bwd : bwd;
      int64_t start = dep > free_at[gi] ? dep : free_at[gi];
      free_at[gi] = start + dur;
      END(a->fwd ? 0 : a->w ? 2 : 1, i, a->mb) = start + dur;
      t->busy_ns[i] += dur;
      t->group_busy_ns[gi] += dur;
      if (start + dur > t->makespan_ns) t->makespan_ns = start + dur;
      t->ev[t->nev++] = (gv_pipe_event){i, a->fwd ? 1 : a->w ? 2 : 0, a->mb, start, dur};
      next[gi]++, left--, progress = 1;
    }
    if (!progress) {
      rc = gv_error_plain("pipeline timeline: the %s schedule deadlocks (no stage can run its next entry)", gv_schedule_name(sched));
      break;
    }
  }
#undef END
  for (int i = 0; !rc && i < S; i++) {
    t->bubble_ns[i] = t->makespan_ns - t->busy_ns[i];
    int64_t ab = pl->cost[i].act_bytes;
    int na = train ? galv_pipe_order_v(S, V, i, B, sched, sacts) : 0;
    t->peak_bytes[i] = train ? galv_pipe_peak(sacts, na, ab, sched == GV_SCHED_ZBH1 ? pl->cost[i].zb_act_bytes : 0, i == S - 1, &t->peak_mb[i]) : 0;
  }
  for (int gi = 0; !rc && gi < G; gi++) {
    t->group_bubble_ns[gi] = t->makespan_ns - t->group_busy_ns[gi];
    if (!il) {
      t->group_peak_bytes[gi] = t->peak_bytes[gi], t->group_peak_mb[gi] = t->peak_mb[gi];
      continue;
    }
    int64_t fb[GV_PIPE_MAX_STAGES];
    for (int c = 0; c < V; c++) fb[c] = pl->cost[c * P + gi].act_bytes;
    t->group_peak_bytes[gi] = galv_pipe_peak_group(acts + (size_t)gi * (size_t)gper, gper, fb, &t->group_peak_mb[gi]);
  }
  free(end), free(acts), free(sacts), free(next);
  if (rc) gv_pipe_timeline_free(t);
  return rc ? -1 : 0;
}
