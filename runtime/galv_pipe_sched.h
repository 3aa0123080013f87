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
 *
 * Saved microbatches in flight at most: B (GPipe), min(B, S - s) (1F1B),
 * min(B, S) (ZB-H1: S - s - 1 + s awaiting their B or W, plus one). */
#ifndef GALV_PIPE_SCHED_H
#define GALV_PIPE_SCHED_H

#include <stdint.h>

enum { GALV_SCHED_GPIPE = 0, GALV_SCHED_1F1B = 1, GALV_SCHED_ZBH1 = 2 };

typedef struct {
  int fwd, mb; /* fwd: 1 forward entry F(mb), 0 backward entry B(mb) (under ZB-H1: the input-gradient part) */
  int w;       /* 1: the weight-gradient entry W(mb) (ZB-H1 only; fwd = 0) */
} galv_pipe_act;

/* The entries per microbatch: 3 under ZB-H1 (F, B, W), else 2. */
static inline int galv_pipe_nacts(int sched) { return sched == GALV_SCHED_ZBH1 ? 3 : 2; }

/* Fills acts[0 .. nacts(sched) B) with stage s's entries (of S stages, B
 * microbatches); returns their count. */
static inline int galv_pipe_order(int S, int s, int B, int sched, galv_pipe_act *acts) {
  int na = 0, w = sched != GALV_SCHED_GPIPE ? (S - s - 1 < B ? S - s - 1 : B) : B;
  if (sched == GALV_SCHED_ZBH1) {
    int f = 0, b = 0, g = 0;
    for (; f < w; f++) acts[na++] = (galv_pipe_act){1, f, 0};
    for (int r = 0; r < s && f < B; r++, f++, b++) /* W deferred */
      acts[na++] = (galv_pipe_act){1, f, 0}, acts[na++] = (galv_pipe_act){0, b, 0};
    for (; f < B; f++, b++, g++)
      acts[na++] = (galv_pipe_act){1, f, 0}, acts[na++] = (galv_pipe_act){0, b, 0}, acts[na++] = (galv_pipe_act){0, g, 1};
    for (; b < B; b++, g++) acts[na++] = (galv_pipe_act){0, b, 0}, acts[na++] = (galv_pipe_act){0, g, 1};
    for (; g < B; g++) acts[na++] = (galv_pipe_act){0, g, 1};
    return na;
  }
  for (int j = 0; j < w; j++) acts[na++] = (galv_pipe_act){1, j, 0};
  for (int j = 0; j < B - w; j++) acts[na++] = (galv_pipe_act){1, w + j, 0}, acts[na++] = (galv_pipe_act){0, j, 0};
  for (int j = B - w; j < B; j++) acts[na++] = (galv_pipe_act){0, j, 0};
  return na;
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

#endif
