/* profile.h — measured per-layer figures for the planner (galvc --profile
 * FILE, docs/planner.md "Profiles"). A profile gives, per layer kind (the
 * repeated layers; the outer part: embedding, final norm, head, loss), the
 * forward / backward / recomputation time of one microbatch of b samples
 * per device at tensor-parallel degree tp, and the activation bytes a layer
 * keeps for its backward (or, recomputed, its checkpoint). The planner
 * replaces the analytic compute time (and kept activations) of those units
 * by these figures; communication stays the cluster model's.
 *
 * Two formats are read:
 *   - Galvatron's profiled inputs as the anchor's planner_inputs.json holds
 *     them (compute_ms.per_layer_fwd_ms_fit: fwd = a * b / tp + c;
 *     bwd_over_fwd; recompute_extra_fwd; embed_lmhead_fwd_ms_fit;
 *     memory_MB.per_layer_activation_MB_per_sample_by_tp_sp, MiB per sample
 *     by tp and "checkpoint");
 *   - galvc's own ("format": "galvc-profile", "version": 1): measured points
 *     per kind (bench/layer_profile.py writes it from a program's
 *     --profile-out).
 * It is data: no pass logic, no cost formulas beyond reading the figures. */
#ifndef GALV_PROFILE_H
#define GALV_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GV_PROFILE_MAX_POINTS 64
#define GV_PROFILE_MAX_TP 16

typedef struct {
  int64_t b, tp;         /* samples per microbatch per device, tensor-parallel degree */
  double fwd_ms;         /* one microbatch */
  double bwd_ms;         /* < 0: not given (an inference program's profile: the backward stays analytic) */
  double rec_ms;         /* recomputation in the backward; < 0: not given (= fwd_ms) */
  double act_bytes;      /* activations kept for backward, one microbatch; < 0: not given */
  double ckpt_bytes;     /* kept when the layer is recomputed (its inputs); < 0: not given */
} gv_profile_point;

typedef struct {
  bool present;
  char field[48];        /* where the kind's figures live in the file (messages) */
  /* Galvatron: fwd_ms = fit_a * b / tp + fit_c, bwd = bwd_over_fwd * fwd, rec = rec_over_fwd * fwd */
  bool fit;
  double fit_a, fit_c, bwd_over_fwd, rec_over_fwd;
  int nact;              /* activation bytes per sample by tp (Galvatron), and the checkpoint's */
  int64_t act_tp[GV_PROFILE_MAX_TP];
  double act_per_sample[GV_PROFILE_MAX_TP];
  double ckpt_per_sample; /* < 0: none */
  /* galvc: measured points */
  int npts;
  gv_profile_point pts[GV_PROFILE_MAX_POINTS];
} gv_profile_kind;

typedef struct gv_profile {
  char path[512];
  char format[16];       /* "galvatron" | "galvc" */
  int64_t layers, hidden, seq, vocab; /* the model it was measured on; 0: not given (unchecked) */
  gv_profile_kind layer, outer;
} gv_profile;

/* Reads FILE (a regular file of at most 16 MiB). Returns 0, or -1 after one
 * error line naming the file and the field (or line). */
int gv_profile_load(const char *path, gv_profile *out);
/* The same from text; origin names it in errors (fuzz target, tests). */
int gv_profile_parse(const char *text, size_t len, const char *origin, gv_profile *out);

/* Checks the profile against the model (each value 0: unknown, unchecked).
 * Returns 0, or -1 after one error line naming the file and the field. */
int gv_profile_check(const gv_profile *p, int64_t layers, int64_t hidden, int64_t seq, int64_t vocab);

/* Times (ms) of one microbatch of b samples per device at tensor-parallel
 * degree tp: forward, backward (< 0: not measured), recomputation (the
 * forward's when not measured). Returns 0, or 1 when the kind has no
 * figure at that tp (galvc points: none measured at tp). */
int gv_profile_time(const gv_profile_kind *k, int64_t b, int64_t tp, double *fwd, double *bwd, double *rec);
/* Activation bytes one microbatch of b samples keeps for the layer's
 * backward at tp (recomputed: the checkpoint). Returns 0, or 1 when the
 * kind gives none (the memory stays analytic). */
int gv_profile_act(const gv_profile_kind *k, int64_t b, int64_t tp, bool recomputed, double *bytes);
/* Whether the kind has time figures at tp (memory figures: *mem). */
bool gv_profile_has_tp(const gv_profile_kind *k, int64_t tp, bool *mem);

#endif
