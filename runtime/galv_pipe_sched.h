/* galv_pipe_sched.h — the order of a training stage's microbatch entries
 * (docs/pipeline.md, "Pipeline training" and "Schedules"). One definition
 * for the runtime (runtime/pipe.c, pipe_train), for galvc's cost-model
 * timeline (--trace-plan, planner/pipeline.c gv_pipe_timeline) and for the
 * predicted peak of saved bytes, so the plan and the run cannot order them
 * differently.
 *
 *   GPipe: F0 .. F(B-1), B0 .. B(B-1)
 *   1F1B:  w = min(S - s - 1, B) warm-up forwards, then F(w+i), B(i) for
 *          i < B - w, then the cool-down backwards B(B-w) .. B(B-1)
 *   ZB-H1 (Qi et al. 2023; the backward split into B, the input gradient,
 *          and W, the weight gradient): w warm-up forwards as 1F1B; then s
 *          rounds F, B whose W is deferred (stage s defers s of them: the
 *          later stages, whose 1F1B tail is idle); then F, B, W while
 *          forwards remain; then B, W; then the deferred W's.
 *   Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM's virtual
 *          pipeline stages): S = P V stages on P device groups, group d
 *          holding the V model chunks c = 0 .. V-1, stage c P + d. Per
 *          group one order over V B entries (chunk, microbatch), B a
 *          multiple of P: the k-th forward entry runs chunk (k mod P V) / P
 *          on microbatch (k / (P V)) P + k mod P, the k-th backward entry
 *          chunk V - 1 - (k mod P V) / P on the same microbatch formula;
 *          w = min((P - d - 1) 2 + (V - 1) P, V B) warm-up forwards (all
 *          V B when B = P), then forward k + w, backward k, then the
 *          cool-down backwards. A stage's order is its group's order
 *          restricted to its chunk (galv_pipe_order_v).
 *
 * Saved microbatches in flight at most: B (GPipe), min(B, S - s) (1F1B),
 * min(B, S) (ZB-H1: S - s - 1 + s awaiting their B or W, plus one);
 * interleaved: per group, summed over its chunks, galv_pipe_peak_group. */
#ifndef GALV_PIPE_SCHED_H
#define GALV_PIPE_SCHED_H

#include <stdint.h>
#include <stdlib.h>

enum { GALV_SCHED_GPIPE = 0, GALV_SCHED_1F1B = 1, GALV_SCHED_ZBH1 = 2, GALV_SCHED_INTERLEAVED = 3 };

typedef struct {
  int fwd, mb; /* fwd: 1 forward entry F(mb), 0 backward entry B(mb) (under ZB-H1: the input-gradient part) */
  int w;       /* 1: the weight-gradient entry W(mb) (ZB-H1 only; fwd = 0) */
  int chunk;   /* interleaved, a group's order (galv_pipe_order_group): the model chunk, stage chunk P + d; else 0 */
} galv_pipe_act;

/* The entries per microbatch: 3 under ZB-H1 (F, B, W), else 2. */
static inline int galv_pipe_nacts(int sched) { return sched == GALV_SCHED_ZBH1 ? 3 : 2; }

/* Fills acts[0 .. nacts(sched) B) with stage s's entries (of S stages, B
 * microbatches); returns their count. */
static inline int galv_pipe_order(int S, int s, int B, int sched, galv_pipe_act *acts) {
  int na = 0, w = sched != GALV_SCHED_GPIPE ? (S - s - 1 < B ? S - s - 1 : B) : B;
  if (sched == GALV_SCHED_ZBH1) {
    int f = 0, b = 0, g = 0;
    for (; f < w; f++) acts[na++] = (galv_pipe_act){1, f, 0, 0};
    for (int r = 0; r < s && f < B; r++, f++, b++) /* W deferred */
      acts[na++] = (galv_pipe_act){1, f, 0, 0}, acts[na++] = (galv_pipe_act){0, b, 0, 0};
    for (; f < B; f++, b++, g++)
      acts[na++] = (galv_pipe_act){1, f, 0, 0}, acts[na++] = (galv_pipe_act){0, b, 0, 0}, acts[na++] = (galv_pipe_act){0, g, 1, 0};
    for (; b < B; b++, g++) acts[na++] = (galv_pipe_act){0, b, 0, 0}, acts[na++] = (galv_pipe_act){0, g, 1, 0};
    for (; g < B; g++) acts[na++] = (galv_pipe_act){0, g, 1, 0};
    return na;
  }
  for (int j = 0; j < w; j++) acts[na++] = (galv_pipe_act){1, j, 0, 0};
  for (int j = 0; j < B - w; j++) acts[na++] = (galv_pipe_act){1, w + j, 0, 0}, acts[na++] = (galv_pipe_act){0, j, 0, 0};
  for (int j = B - w; j < B; j++) acts[na++] = (galv_pipe_act){0, j, 0, 0};
  return na;
}

/* Interleaved 1F1B: device group d's order (of P groups, V chunks each, B
 * microbatches, B a multiple of P): 2 V B entries with their chunk. */
static inline int galv_pipe_order_group(int P, int V, int d, int B, galv_pipe_act *acts) {
  const int tot = V * B, pv = P * V;
  int w = B == P ? tot : (P - d - 1) * 2 + (V - 1) * P, na = 0;
  if (w > tot) w = tot;
#define GALV_IL_ACT(k, f) \
  (galv_pipe_act){f, ((k) / pv) * P + (k) % P, 0, f ? ((k) % pv) / P : V - 1 - ((k) % pv) / P}
  for (int k = 0; k < w; k++) acts[na++] = GALV_IL_ACT(k, 1);
  for (int k = 0; k < tot - w; k++) acts[na++] = GALV_IL_ACT(k + w, 1), acts[na++] = GALV_IL_ACT(k, 0);
  for (int k = tot - w; k < tot; k++) acts[na++] = GALV_IL_ACT(k, 0);
#undef GALV_IL_ACT
  return na;
}

/* Stage s's order (of S stages): galv_pipe_order, and under the
 * interleaved schedule (V chunks per group, P = S / V groups) its group's
 * order restricted to its chunk s / P (chunk set to 0). acts: room for
 * 2 V B entries there. */
static inline int galv_pipe_order_v(int S, int V, int s, int B, int sched, galv_pipe_act *acts) {
  if (sched != GALV_SCHED_INTERLEAVED) return galv_pipe_order(S, s, B, sched, acts);
  const int P = S / V, c = s / P;
  int n = galv_pipe_order_group(P, V, s % P, B, acts), na = 0;
  for (int k = 0; k < n; k++)
    if (acts[k].chunk == c) acts[na] = acts[k], acts[na++].chunk = 0;
  return na;
}

/* The peak of saved bytes over a group's interleaved order: F(c, j) saves
 * fbytes[c] (chunk c's stash; the last stage's kept input gradients), B(c,
 * j) releases them. *peak_mb: the most (chunk, microbatch) entries holding
 * saved bytes at once. The runtime measures the same, its chunks' counters
 * passed along the group in the order (runtime/pipe.c). */
static inline int64_t galv_pipe_peak_group(const galv_pipe_act *acts, int na, const int64_t *fbytes, int *peak_mb) {
  int64_t live = 0, peak = 0;
  int n = 0, pn = 0;
  for (int k = 0; k < na; k++) {
    live += acts[k].fwd ? fbytes[acts[k].chunk] : -fbytes[acts[k].chunk];
    n += acts[k].fwd ? 1 : -1;
    if (live > peak) peak = live;
    if (n > pn) pn = n;
  }
  if (peak_mb) *peak_mb = pn;
  return peak;
}

/* The peak of saved bytes over a stage's order: F(j) saves fbytes (an
 * earlier stage's stash; the last stage's kept input gradients), B(j)
 * releases them; with a weight-gradient entry (wbytes > 0) B(j) saves
 * wbytes, what W(j) reads, and W(j) releases them (the last stage runs its
 * input-gradient part inside F(j): last = 1 saves them there). *peak_mb:
 * the most microbatches holding saved bytes at once. The runtime measures
 * the same from its allocations. An earlier stage's B(j) copies W's bytes
 * out of the stash before releasing it, so both count at that moment. */
static inline int64_t galv_pipe_peak(const galv_pipe_act *acts, int na, int64_t fbytes, int64_t wbytes, int last, int *peak_mb) {
  int64_t live = 0, peak = 0;
  int n = 0, pn = 0;
  for (int k = 0; k < na; k++) {
    if (acts[k].fwd) live += fbytes + (last ? wbytes : 0), n++;
    else if (!acts[k].w) {
      if (wbytes && !last) { /* W's bytes are copied out of the stash before it goes: both live a moment */
        live += wbytes;
        if (live > peak) peak = live;
      }
      live -= fbytes;
      if (!wbytes) n--;
    } else if (wbytes) live -= wbytes, n--;
    if (live > peak) peak = live;
    if (n > pn) pn = n;
  }
  if (peak_mb) *peak_mb = pn;
  return peak;
}

/* Interleaved 1F1B: when stage st's gradient copies go (runtime/pipe.c). A
 * gradient stage st sends back at B(j) reaches stage st - 1 at its B(j);
 * the forward input st - 1 sends after that, for its next forward entry
 * F(j'), arrives at st's F(j'), and proves the gradient received: the copy
 * is released there. rel[j] = j' (-1: no forward after B(j) in stage
 * st - 1's order; stage 0: all -1). S = P V stages; acts: room for 2 V B
 * entries. */
static inline void galv_pipe_il_grad_release(int P, int V, int st, int B, galv_pipe_act *acts, int *rel) {
  for (int j = 0; j < B; j++) rel[j] = -1;
  if (st <= 0 || st >= P * V) return;
  int n = galv_pipe_order_v(P * V, V, st - 1, B, GALV_SCHED_INTERLEAVED, acts), next = -1;
  for (int k = n - 1; k >= 0; k--) /* backwards: the next forward's microbatch */
    if (acts[k].fwd) next = acts[k].mb;
    else if (acts[k].mb >= 0 && acts[k].mb < B) rel[acts[k].mb] = next;
}

/* Interleaved 1F1B: the peak over a group's order of what its ranks hold
 * per entry besides their states: the saved bytes (fbytes[c], as
 * galv_pipe_peak_group) and the copies runtime/pipe.c sends from, per
 * chunk c and microbatch: after F(c, j) its forward sends, fsend[c] (each
 * value once per receiving stage) released at B(c, j), where their
 * gradients have come back, and fkeep[c], values no gradient comes back
 * for, kept until the step's end; after B(c, j) its gradients sent back,
 * bsend[c] to the previous stage, released at F(c, j') for each j with
 * galv_pipe_il_grad_release's rel[j] = j' (relcnt[c B + j'] of them; NULL:
 * none released), and bkeep[c] to other stages, kept until the step's end
 * (fkeep, bkeep NULL: none); a baton (baton bytes) where the next entry's
 * chunk differs (also the one into the next step, from the group's last
 * entry to its first). Copies released at an entry go after its receives,
 * before its compute. Chunk lastc (the last stage; -1: none in this group)
 * keeps its input gradients until its B(j) has sent them: its copies and
 * its saved bytes live a moment together. The runtime's tracker sums the
 * group's ranks' live bytes at each entry the same way (runtime/pipe.c,
 * the baton). */
enum { GALV_PIPE_BATON_BYTES = 64 }; /* runtime/pipe.c's baton: 8 int64 counters */
static inline int64_t galv_pipe_peak_group_mem(const galv_pipe_act *acts, int na, int B, const int64_t *fbytes, const int64_t *fsend,
                                               const int64_t *bsend, const int64_t *fkeep, const int64_t *bkeep,
                                               const int *relcnt, int lastc, int64_t baton) {
  int64_t live = na && acts[na - 1].chunk != acts[0].chunk ? baton : 0, peak = live;
  for (int k = 0; k < na; k++) {
    const int c = acts[k].chunk, j = acts[k].mb;
    const int64_t fk = fkeep ? fkeep[c] : 0, bk = bkeep ? bkeep[c] : 0;
    if (acts[k].fwd) {
      if (relcnt && j >= 0 && j < B) live -= bsend[c] * relcnt[c * B + j];
      live += fbytes[c] + fsend[c] + fk;
    } else if (c == lastc) {
      live += bsend[c] + bk - fsend[c];
      if (live > peak) peak = live;
      live -= fbytes[c];
    } else live += bsend[c] + bk - fsend[c] - fbytes[c];
    if (k + 1 < na && acts[k + 1].chunk != c) live += baton;
    if (live > peak) peak = live;
  }
  return peak;
}

/* Interleaved 1F1B: device group d's memory besides its stages' states, the figure galvc prints, the runtime prints
 * beside its tracker and the stage DP checks (planner/pipeline.c gv_pipe_group_mem): galv_pipe_peak_group_mem over
 * the group's order (P groups, V chunks, B microbatches; group P - 1's chunk V - 1 is the last stage) with 64-byte
 * batons, the gradient copies' releases from galv_pipe_il_grad_release. fbytes, fsend, bsend, fkeep, bkeep per chunk
 * as there; acts: room for 2 V B entries. Without memory for the releases' table: none released (an upper bound). */
static inline int64_t galv_pipe_group_held(int P, int V, int d, int B, const int64_t *fbytes, const int64_t *fsend,
                                           const int64_t *bsend, const int64_t *fkeep, const int64_t *bkeep, galv_pipe_act *acts) {
  int *relcnt = (int *)calloc((size_t)V * (size_t)B * 2 + 1, sizeof *relcnt), *rel = relcnt ? relcnt + (size_t)V * B : NULL;
  for (int c = 0; relcnt && c < V; c++) {
    galv_pipe_il_grad_release(P, V, c * P + d, B, acts, rel);
    for (int j = 0; j < B; j++)
      if (rel[j] >= 0) relcnt[c * B + rel[j]]++;
  }
  const int na = galv_pipe_order_group(P, V, d, B, acts);
  const int64_t held = galv_pipe_peak_group_mem(acts, na, B, fbytes, fsend, bsend, fkeep, bkeep, relcnt, d == P - 1 ? V - 1 : -1,
                                                GALV_PIPE_BATON_BYTES);
  free(relcnt);
  return held;
}

#endif
