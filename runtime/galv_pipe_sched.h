/* galv_pipe_sched.h — the order of a training stage's forward and backward
 * microbatch entries (docs/pipeline.md, "Pipeline training"). One
 * definition for the runtime (runtime/pipe.c, pipe_train) and for galvc's
 * cost-model timeline (--trace-plan), so the plan and the run cannot order
 * them differently.
 *
 *   GPipe (one_f_one_b = 0): F0 .. F(B-1), B0 .. B(B-1)
 *   1F1B: w = min(S - s - 1, B) warm-up forwards, then F(w+i), B(i) for
 *         i < B - w, then the cool-down backwards B(B-w) .. B(B-1)
 *
 * Saved microbatches in flight at most: B (GPipe), min(B, S - s) (1F1B). */
#ifndef GALV_PIPE_SCHED_H
#define GALV_PIPE_SCHED_H

typedef struct {
  int fwd, mb; /* fwd: 1 forward entry F(mb), 0 backward entry B(mb) */
} galv_pipe_act;

/* Fills acts[0 .. 2B) with stage s's entries (of S stages, B microbatches);
 * returns 2B. */
static inline int galv_pipe_order(int S, int s, int B, int one_f_one_b, galv_pipe_act *acts) {
  int na = 0, w = one_f_one_b ? (S - s - 1 < B ? S - s - 1 : B) : B;
  for (int j = 0; j < w; j++) acts[na++] = (galv_pipe_act){1, j};
  for (int j = 0; j < B - w; j++) acts[na++] = (galv_pipe_act){1, w + j}, acts[na++] = (galv_pipe_act){0, j};
  for (int j = B - w; j < B; j++) acts[na++] = (galv_pipe_act){0, j};
  return na;
}

#endif
