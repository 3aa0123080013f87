/* stage_cost.c — the stage DP's cost from the intra-operator planner
 * (docs/pipeline.md, "Stage costs from the intra-operator planner").
 *
 * gv_stage_module: layer groups [first, last) of a module imported at the
 * microbatch size (after cluster-layers: `layer` attributes) as the stage
 * program galvc builds: a copy (printed and parsed: no weights), stages 0 /
 * 1 / 2 = the groups before / inside / after the range, gv_stage_extract
 * of stage 1 (crossing values become "pp." inputs and outputs) and, in
 * training, gv_stage_train (the last stage adds the loss).
 *
 * gv_stage_cost_intra (a gv_stage_cost_fn): that module planned by
 * gv_plan_intra on the stage's sub-mesh (with --mesh, on the mesh's shape;
 * with --strategy dp,tp too, with the preset's roles: dp over the axis named
 * dp, the layers' tp over the one named tp, no ZeRO; --strategy dp / tp
 * without --mesh: one axis of the stage's devices with that role; where that
 * role has no plan, the planner's own plan, the way's planner_plan: galvc
 * compiles that plan for the stage). Time per microbatch = the plan's
 * predicted step (twice for a stage other than the last in training with
 * ctx->recompute: that runtime runs the combined function in the forward
 * and in the backward entry; once otherwise: the stage's forward and
 * backward entries, passes/stage_stash.c) + gv_pipe_transfer_ns (the "pp."
 * bytes received and sent per microbatch, the plan's kernels at the
 * cluster's launch overhead). Memory per device: states = the plan's
 * memory (weights buffer, arena: one microbatch's working set, reused) and,
 * in training, what runtime/pipe.c allocates beside it: the gradient sums
 * (the parameters' bytes; half with --grad-dtype bf16: bf16 sums), the
 * optimizer state (ctx->opt_states x them;
 * ZeRO-1: over the plan's dp ranks, whose all-gather per step is zero_ns),
 * (the backward entry's constants beside the forward entry's in one weights buffer) and the
 * receive buffers (the last and stashing stages' forward inputs, an
 * earlier stage's gradients of the values it sends: gv_stage_bytes recv,
 * send); per microbatch in flight: an earlier training stage's stash
 * (stage-stash's backward entry's galv.state inputs, 64-byte aligned, over
 * the stage's devices) or, recomputing, the inputs the runtime saves; the
 * last stage's kept input gradients (as stored); inference: the values in
 * transit. Each way carries the copies the runtime sends from per
 * microbatch (send_bytes, gsend_bytes: interleaved 1F1B keeps them). Under ZB-H1 (ctx->zb) the
 * stage's entries are compiled with the W split (stash_entries): whether it
 * has a weight-gradient entry (what the split changes in the entries'
 * constants and arena, zb_bytes: its parameters are the other entries',
 * one weights buffer), what W reads per microbatch
 * (zb_act_bytes) and the stash on a device.
 * With ctx->choose_recompute / choose_zero the cost offers the range's ways
 * (gv_stage_cost.var: stash or recompute, without or with ZeRO-1), each
 * priced as above from the one plan; with ctx->choose_layer_rc those of
 * each per-layer recomputation mode (none, selective, all: the recompute
 * pass inside the stage program, each mode's program realised and planned
 * on its own: its second forward in the plan's time, its smaller stash,
 * its arena); the stage DP takes per stage the fastest that fits
 * (docs/pipeline.md, "Recomputation and ZeRO per stage").
 * Results are kept per (first, last, sub-mesh) across the DP's runs. */
#define _POSIX_C_SOURCE 200809L
#include "stage_cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes.h"
#include "plan_sharding.h"
#include "stage_extract.h"
#include "layer_units.h"
#include "../ir/storage.h"
#include "../planner/cost.h"

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The largest parameter gradient's f32 bytes (whole, before any split: an upper bound of a rank's): with
 * --grad-dtype bf16 the runtime widens one bf16 sum at a time into a buffer of that size for the optimizer
 * (runtime/pipe.c grad_f32). */
static int64_t grad_max_f32(const gv_module *m) {
  const gv_func *f = m->main;
  const gv_op *ret = gv_block_terminator(f->body);
  int64_t mx = 0;
  for (int i = 0; ret && f->res_names && i < f->nres_names && i < ret->nopnds; i++)
    if (f->res_names[i] && !strncmp(f->res_names[i], "grad:", 5)) {
      int64_t n = gv_type_numel(&ret->opnds[i]->type);
      if (n > 0 && 4 * n > mx) mx = 4 * n;
    }
  return mx;
}

/* The stash an earlier stage's backward entry reads per microbatch (m: its
 * training function, consumed). -1 after an error line. */
static int64_t stash_bytes(gv_module *m) {
  const char *part = gv_pipe_opts.stash;
  gv_pipe_opts.stash = "backward";
  int rc = gv_pass_stage_stash(m);
  gv_pipe_opts.stash = part;
  /* 16-bit storage: the stash is held as the backward entry stores its inputs, decided as galvc decides it for
   * the entry (fuse, then storage: tools/galvc_pipeline.c's back passes) */
  if (!rc && gv_precision_opts.storage != GV_DT_F32) rc = gv_pass_fuse(m) || gv_pass_storage(m);
  if (rc) return -1;
  int64_t n = 0;
  const gv_func *f = m->main;
  for (int a = 0; a < f->body->nargs; a++)
    if (f->arg_is_state && f->arg_is_state[a]) { /* in its storage dtype (16-bit under --precision), as the stash holds it */
      int64_t b = gv_value_storage_bytes(f->body->args[a]);
      n += ((b > 0 ? b : 0) + 63) / 64 * 64;
    }
  return n;
}

/* runs the named passes on m in order; nonzero on the first failure */
static int run_passes(gv_module *m, const char *const *names, int n) {
  for (int i = 0; i < n; i++) {
    const gv_pass *p = gv_pass_lookup(names[i]);
    if (!p || p->run(m)) return 1;
  }
  return 0;
}

/* An entry split out of p by stage-stash's part (NULL: p itself, whole), through fuse, storage and memory-plan; its
 * arena, constants and scratch in *mem, and (st) its galv.state inputs as stored on a device, 64-byte aligned each (a
 * value the plan leaves whole is whole on every device). NULL when a pass refused. */
static gv_module *stash_entry(const gv_module *p, const char *part, gv_mem *mem, int64_t *st) {
  static const char *const back[] = {"fuse", "storage", "memory-plan"};
  gv_module *e = gv_module_clone(p);
  const char *keep = gv_pipe_opts.stash;
  gv_pipe_opts.stash = part;
  int rc = !e || (part && gv_pass_stage_stash(e)) || run_passes(e, back, 3);
  gv_pipe_opts.stash = keep;
  if (rc) {
    gv_module_free(e);
    return NULL;
  }
  gv_cost_memory(e, mem);
  if (st) {
    *st = 0;
    const gv_func *f = e->main;
    for (int a = 0; a < f->body->nargs; a++)
      if (f->arg_is_state && f->arg_is_state[a]) {
        int64_t b = gv_value_storage_bytes(f->body->args[a]);
        *st += ((b > 0 ? b : 0) + 63) / 64 * 64;
      }
  }
  return e;
}

/* A stage's entries as galvc compiles them (tools/galvc_pipeline.c), what stash_entries finds */
typedef struct {
  int64_t held;  /* an earlier stage's forward and backward entries: their constants, collective scratch, the larger
                  * arena and the larger conversion scratch (runtime/pipe.c holds one arena for a stage's entries,
                  * the largest of theirs, beside each entry's constants and scratch) */
  int64_t stash; /* an earlier stage's stash per microbatch on a device: the backward entry's galv.state inputs */
  bool wsplit;   /* zb: the backward splits into B and W (it has parameter gradients and other results) */
  int64_t delta; /* wsplit: the entries' held bytes with the W split less without it (W's working set leaves B's) */
  int64_t wact;  /* wsplit: what W reads per microbatch on a device, held from B until W (W's galv.state inputs) */
} stage_entries;

/* The stage's entries as galvc compiles them: the plan applied and partitioned; an earlier stage's training program
 * split by stage-stash into its forward and backward entries (earlier), each through fuse, storage and memory-plan:
 * the arena the runtime holds, where the plan's cost prices the combined program's (forward and backward planned as
 * one, the stash live across it), and the stash as the backward entry stores it. With zb (ZB-H1) the backward (the
 * last stage: its combined program) split once more into its input-gradient entry B and weight-gradient entry W, when
 * it has parameter gradients and other results (the first stage sends no gradient back: no W entry). Returns 0, or
 * nonzero when a pass refused (the caller keeps the combined program's figures). */
static int stash_entries(const gv_module *m, const gv_plan *plan, bool earlier, bool zb, stage_entries *o) {
  static const char *const sp[] = {"propagate-sharding", "storage", "spmd-partition"};
  gv_module *c = gv_module_clone(m), *bw = NULL, *e[4] = {NULL, NULL, NULL, NULL};
  const char *part = gv_pipe_opts.stash;
  memset(o, 0, sizeof *o);
  const gv_shard_options keep = gv_shard_opts;
  gv_shard_opts.strategy = NULL;
  if (gv_plan_opts.intra_sp && plan->t_layer >= 0) /* the preset dp,tp,sp: sp on every op, as the realisations have it */
    gv_shard_opts.sp_axis = plan->axis[plan->t_layer], gv_shard_opts.sp_op = NULL;
  gv_error_quiet++; /* a refusal here is no error of the compile: the estimate stays the combined program's */
  /* the planner's own plan: its sp units, as its realisations had them */
  int rc = !c || gv_plan_apply(c, plan) || (!gv_plan_opts.intra_sp && gv_plan_sp_region(c, plan)) || run_passes(c, sp, 3);
  gv_shard_opts.strategy = keep.strategy, gv_shard_opts.sp_axis = keep.sp_axis, gv_shard_opts.sp_op = keep.sp_op;
  /* the backward: an earlier stage's backward entry, the last stage's combined program */
  if (!rc && earlier) {
    rc = !(bw = gv_module_clone(c));
    gv_pipe_opts.stash = "backward";
    if (!rc) rc = gv_pass_stage_stash(bw);
    gv_pipe_opts.stash = part;
  }
  const gv_module *src = earlier ? bw : c;
  gv_mem mf = {0}, mb = {0}, mi = {0}, mw = {0};
  int64_t sb = 0;
  /* the forward entry and the backward (earlier: its stash); the combined program (last). The stash values the
   * forward entry stores fp32 are read fp32 by the backward (galvc's stage_wide, tools/galvc_pipeline.c stash_wide):
   * the backward's storage takes the same list, so its stash is sized as compiled */
  enum { WIDE_MAX = 1024 };
  const char *wide[WIDE_MAX];
  int nwide = 0;
  if (!rc) rc = earlier && !(e[0] = stash_entry(c, "forward", &mf, NULL));
  if (!rc && e[0]) nwide = gv_stash_wide(e[0], wide, 0, WIDE_MAX);
  const char *const *wkeep = gv_precision_opts.stage_wide;
  const int nwkeep = gv_precision_opts.nstage_wide;
  if (nwide) gv_precision_opts.stage_wide = wide, gv_precision_opts.nstage_wide = nwide;
  if (!rc) rc = !(e[1] = stash_entry(src, NULL, &mb, &sb));
  gv_precision_opts.stage_wide = wkeep, gv_precision_opts.nstage_wide = nwkeep;
#define MX(x, y) ((x) > (y) ? (x) : (y))
  if (!rc) {
    o->held = mf.constants + mb.constants + mf.comm + mb.comm + MX(mf.arena, mb.arena) + MX(mf.convert, mb.convert);
    o->stash = earlier ? sb : 0;
  }
  bool w = false, b = false;
  for (int i = 0; !rc && zb && i < src->main->nres_names; i++) {
    const char *n = src->main->res_names[i];
    bool g = n && !strncmp(n, "grad:", 5) && strncmp(n, "grad:pp.", 8);
    w |= g, b |= !g;
  }
  /* with the W split: the forward entry, B and W */
  if (!rc && w && b) rc = !(e[2] = stash_entry(src, "input-grad", &mi, NULL)) || !(e[3] = stash_entry(src, "weight-grad", &mw, &o->wact));
  if (!rc && w && b) {
    int64_t two = mf.constants + mi.constants + mw.constants + mf.comm + mi.comm + mw.comm + MX(mf.arena, MX(mi.arena, mw.arena)) +
                  MX(mf.convert, MX(mi.convert, mw.convert));
    o->wsplit = true, o->delta = two - o->held;
  }
#undef MX
  gv_error_quiet--;
  for (int k = 0; k < 4; k++) gv_module_free(e[k]);
  gv_module_free(bw);
  gv_module_free(c);
  return rc;
}

static int64_t type_bytes(const gv_type *t) {
  int64_t n = gv_type_numel(t);
  return n > 0 ? n * (int64_t)gv_dtype_size(t->dtype) : 0;
}

/* whether op (or an op of its regions) reads a value a top-level op of layers [first, last) of body computes (not a
 * constant: constants are copied, never sent) */
static bool reads_range(const gv_op *op, const gv_block *body, int first, int last, bool fl) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_op *d = op->opnds[i]->def;
    if (!d || d->parent != body || (!d->nopnds && !d->nregions)) continue;
    if (fl && !gv_dtype_is_float(op->opnds[i]->type.dtype)) continue;
    const int64_t l = gv_get_int(d, "layer", -1);
    if (l >= first && l < last) return true;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next)
      if (reads_range(o, body, first, last, fl)) return true;
  return false;
}

bool gv_stage_range_sends(const gv_module *base, int first, int last) {
  /* a later layer or the return reading the range's values: one pass over the readers (each operand's defining op),
   * not one per value over every later op */
  const gv_block *body = base->main->body;
  for (const gv_op *u = body->first; u; u = u->next)
    if ((u->code == GV_OP_RETURN || gv_get_int(u, "layer", -1) >= last) && reads_range(u, body, first, last, false)) return true;
  return false;
}

bool gv_stage_range_sends_float(const gv_module *base, int first, int last) {
  const gv_block *body = base->main->body;
  for (const gv_op *u = body->first; u; u = u->next)
    if (u->code != GV_OP_RETURN && gv_get_int(u, "layer", -1) >= last && reads_range(u, body, first, last, true)) return true;
  return false;
}

gv_module *gv_stage_module(const gv_module *base, int first, int last, int ngroups, bool training, gv_stage_bytes *bytes) {
  gv_module *m = gv_module_clone(base); /* in memory; through the text only when that cannot copy it */
  if (!m) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
      gv_error_plain("pipeline: out of memory");
      return NULL;
    }
    gv_print_module(base, f);
    fclose(f);
    m = gv_parse_module(buf, len, base->source);
    free(buf);
  }
  if (!m) return NULL;
  if (bytes) memset(bytes, 0, sizeof *bytes);
  int cuts[4] = {0, first, last, ngroups};
  gv_stage_io *io = calloc(1, sizeof *io);
  int rc = !io || gv_pipe_assign_stages(m, cuts, 3) || gv_stage_extract(m, 1, 3, io);
  free(io);
  if (!rc && bytes) {
    const gv_func *fn = m->main;
    const int64_t mb = gv_stage_microbatch(base);
    for (int a = 0; a < fn->body->nargs; a++) {
      const char *n = fn->arg_names ? fn->arg_names[a] : NULL;
      if (fn->arg_is_param[a]) continue;
      const gv_type *t = &fn->body->args[a]->type;
      int64_t b = type_bytes(t);
      bytes->saved += b;
      const bool pp = n && !strncmp(n, "pp.", 3), rows = mb > 0 && t->rank >= 1 && t->dims[0] == mb;
      if (pp) bytes->in += b, bytes->in_rows += rows ? b : 0;
      if (pp && rows) bytes->rows_gcd = gcd64(bytes->rows_gcd, gv_type_numel(t));
    }
    const gv_op *ret = gv_block_terminator(fn->body);
    for (int i = 0; ret && i < ret->nopnds; i++) {
      const char *n = fn->res_names && i < fn->nres_names ? fn->res_names[i] : NULL;
      const gv_type *t = &ret->opnds[i]->type;
      if (n && !strncmp(n, "pp.", 3) && strcmp(n, "pp.seed")) {
        const bool rows = mb > 0 && t->rank >= 1 && t->dims[0] == mb;
        bytes->out += type_bytes(t), bytes->out_rows += rows ? type_bytes(t) : 0;
        if (rows) bytes->rows_gcd = gcd64(bytes->rows_gcd, gv_type_numel(t));
      }
    }
  }
  if (!rc && training) rc = gv_stage_train(m, 1, last == ngroups ? 2 : 3);
  if (!rc && training && bytes) { /* the training program's buffers as runtime/pipe.c holds them */
    const gv_func *fn = m->main;
    const int64_t mb = gv_stage_microbatch(base);
    const bool s16 = gv_precision_opts.storage != GV_DT_F32;
    for (int a = 0; a < fn->body->nargs; a++) { /* the forward's inputs (the labels with them), not the gradients */
      const char *n = fn->arg_names ? fn->arg_names[a] : NULL;
      if (fn->arg_is_param[a] || (n && !strncmp(n, "gin:", 4))) continue;
      const gv_type *t = &fn->body->args[a]->type;
      const bool pp = n && !strncmp(n, "pp.", 3), rows = mb > 0 && t->rank >= 1 && t->dims[0] == mb;
      int64_t b = type_bytes(t);
      if (pp && s16 && t->dtype == GV_DT_F32) b /= 2; /* stored 16-bit on both sides (ir/storage.h) */
      bytes->recv += (b + 63) / 64 * 64;
      if (pp && rows) bytes->recv_rows += (b + 63) / 64 * 64;
      if (pp) bytes->gsend += b, bytes->gsend_rows += rows ? b : 0;
      if (pp) bytes->gkeep += (b + 63) / 64 * 64, bytes->gkeep_rows += rows ? (b + 63) / 64 * 64 : 0;
    }
    /* the values sent on: runtime/pipe.c keeps a send copy and a gradient buffer per receiving stage, which the stages
     * after this one decide: each counted once (exact where one stage reads what this one sends, a chain of layers;
     * a value read by two later stages, a skip over a stage, is a copy short) */
    const gv_op *ret = gv_block_terminator(fn->body);
    for (int i = 0; ret && i < ret->nopnds; i++) {
      const char *n = fn->res_names && i < fn->nres_names ? fn->res_names[i] : NULL;
      const gv_type *t = &ret->opnds[i]->type;
      if (!n || strncmp(n, "pp.", 3) || !strcmp(n, "pp.seed")) continue;
      int64_t b = type_bytes(t);
      if (s16 && t->dtype == GV_DT_F32) b /= 2;
      bytes->send += b, bytes->send_rows += mb > 0 && t->rank >= 1 && t->dims[0] == mb ? b : 0;
    }
  }
  if (!rc) rc = gv_verify(m);
  if (rc) {
    gv_module_free(m);
    return NULL;
  }
  return m;
}

struct gv_stage_cache {
  int first, last;
  int64_t nodes, per_node;
  gv_stage_cost c;
  int64_t inc; /* the bound its searches had (gv_plan_opts.stage_incumbent_ns; 0: none): read again under one as tight */
};

/* x's entry for the range on nodes x per_node, or x->ncache */
static int cache_find(const gv_intra_stage_ctx *x, int first, int last, int64_t nodes, int64_t per_node) {
  int i = 0;
  while (i < x->ncache && !(x->cache[i].first == first && x->cache[i].last == last && x->cache[i].nodes == nodes &&
                            x->cache[i].per_node == per_node))
    i++;
  return i;
}

static void plan_desc(const gv_plan *p, bool sp_all, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  bool zero = false;
  int sp = 0; /* the layers with sequence parallelism (the planner's per unit; the preset dp,tp,sp: every one) */
  for (int u = 0; u < p->nunits; u++) zero |= p->zero[u] != 0, sp += u > 0 && p->sp[u] != 0;
  for (int a = 0; a < p->naxes && k < n; a++) {
    if (p->size[a] == 1) continue;
    const char *r = p->dmask & (1u << a) ? "dp" : a == p->t_layer ? "tp" : a == p->t_outer ? "vocab" : "rep";
    k += (size_t)snprintf(buf + k, n - k, "%s%s=%lld", k ? "," : "", r, (long long)p->size[a]);
  }
  if (sp_all && p->t_layer >= 0 && k < n) k += (size_t)snprintf(buf + k, n - k, "+sp");
  else if (sp && k < n) k += sp == p->nunits - 1 ? (size_t)snprintf(buf + k, n - k, "+sp") : (size_t)snprintf(buf + k, n - k, "+sp(%d)", sp);
  if (zero && k < n) k += (size_t)snprintf(buf + k, n - k, "+zero");
  if (!k) snprintf(buf, n, "1 device");
}

int64_t gv_stage_microbatch(const gv_module *base) {
  const gv_func *f = base->main;
  for (int i = 0; i < f->body->nargs; i++) {
    const gv_value *v = f->body->args[i];
    if ((f->arg_is_param && f->arg_is_param[i]) || (f->arg_is_state && f->arg_is_state[i]) || v->type.rank < 1) continue;
    return v->type.dims[0] > 0 ? v->type.dims[0] : 0;
  }
  return 0;
}

int gv_stage_units_set(gv_intra_stage_ctx *x, const gv_layer_units *lu) {
  x->outer_fl = calloc((size_t)x->ngroups + 1, sizeof *x->outer_fl);
  x->lay_lo = malloc(((size_t)lu->nl + 1) * sizeof *x->lay_lo), x->lay_hi = malloc(((size_t)lu->nl + 1) * sizeof *x->lay_hi);
  x->outer_total = 0, x->units_ok = false, x->nl = lu->nl;
  if (!x->outer_fl || !x->lay_lo || !x->lay_hi) return gv_error_plain("pipeline: out of memory");
  for (int u = 0; u <= lu->nl; u++) x->lay_lo[u] = x->ngroups, x->lay_hi[u] = -1;
  for (const gv_op *op = x->base->main->body->first; op; op = op->next) {
    const int g = (int)gv_get_int(op, "layer", -1), u = gv_layer_units_loc(lu, op->loc);
    if (g < 0 || g >= x->ngroups || u < 0 || u > lu->nl) continue;
    if (u) {
      if (g < x->lay_lo[u]) x->lay_lo[u] = g;
      if (g > x->lay_hi[u]) x->lay_hi[u] = g;
      continue;
    }
    const int64_t f = gv_op_flops(op, NULL, NULL);
    if (f > 0) x->outer_fl[g] += (double)f, x->outer_total += (double)f;
  }
  x->units_ok = true;
  return 0;
}

/* The share of the model's outer unit that the stage of groups [first, last) holds (gv_plan_opts.profile_outer_share):
 * its outer ops' forward FLOPs over all outer ops' (the head's dot is most of it, the embedding's lookup none); -1
 * where the stage's outer ops have no FLOPs, 0 when unknown (the whole figure, as before) */
static double stage_outer_share(const gv_intra_stage_ctx *x, int first, int last) {
  if (!x->units_ok || x->outer_total <= 0) return 0;
  double f = 0;
  for (int g = first; g < last && g < x->ngroups; g++) f += x->outer_fl[g];
  return f > 0 ? f / x->outer_total : -1;
}

/* The model's layers whole in groups [first, last); -1 when one lies partly in them (a cut inside a layer), -2 when the
 * units are not found */
static int stage_layers_whole(const gv_intra_stage_ctx *x, int first, int last) {
  if (!x->units_ok) return -2;
  int n = 0;
  for (int u = 1; u <= x->nl; u++) {
    if (x->lay_hi[u] < 0) continue;
    const bool in_lo = x->lay_lo[u] >= first && x->lay_lo[u] < last, in_hi = x->lay_hi[u] >= first && x->lay_hi[u] < last;
    if (in_lo != in_hi) return -1;
    n += in_lo;
  }
  return n;
}

int gv_stage_cost_intra(void *vctx, int first, int last, int64_t nodes, int64_t per_node, int B, gv_stage_cost *out) {
  gv_intra_stage_ctx *x = vctx;
  memset(out, 0, sizeof *out);
  if (B != x->B) return 0; /* the module is at the microbatch size of x->B only */
  if (!gv_stage_range_sends(x->base, first, last)) return 0; /* nothing later uses it: no stage on its own */
  const int ci = cache_find(x, first, last, nodes, per_node);
  if (ci < x->ncache) { /* made under no bound, or one as loose as this one: read */
    const struct gv_stage_cache *e = &x->cache[ci];
    if (!e->inc || (gv_plan_opts.stage_incumbent_ns > 0 && gv_plan_opts.stage_incumbent_ns <= e->inc)) {
      *out = e->c;
      return 0;
    }
  }
  /* a training stage before the last one is trained through the floating-point values it sends on (its seed: their
   * gradients); a range sending integers only (a position ids' or a mask's computation on its own) is no stage (never
   * cached: checked on a miss only) */
  if (x->training && last < x->ngroups && !gv_stage_range_sends_float(x->base, first, last)) {
    out->int_only = true;
    return 0;
  }
  /* --profile: the profile's figures are per layer found by structure, so a stage is priced by them only where its
   * program's layers are the model's layers it holds whole: a range cutting a layer, or one whose layers its own
   * program does not find (a single layer: the planner finds layers by their repetition), is no stage (docs/planner.md,
   * "Profiles") */
  const int prof_layers = gv_plan_opts.profile ? stage_layers_whole(x, first, last) : -2;
  if (getenv("GALV_PLAN_DEBUG") && gv_plan_opts.profile && x->units_ok) { /* the ranges and their shares */
    fprintf(stderr, "plan-debug: profile stage groups %d-%d: %d layers whole; the layers' groups", first, last - 1, prof_layers);
    for (int u = 1; u <= x->nl; u++) fprintf(stderr, " %d-%d", x->lay_lo[u], x->lay_hi[u]);
    fprintf(stderr, "; outer share %.4f\n", stage_outer_share(x, first, last));
  }
  if (prof_layers == -1) return 0;
  double t0 = now_s();
  /* the per-layer recomputation modes priced: none, selective, all (chosen), else --recompute's (the recompute pass
   * in gv_stage_train; each mode its own stage program, planned on its own) */
  const char *keep = gv_train_opts.recompute;
  const char *modes[3] = {keep};
  signed char lcodes[3] = {(signed char)gv_layer_rc_code(keep)};
  int nmodes = 1;
  if (x->training && x->choose_layer_rc) {
    modes[0] = "none", modes[1] = "selective", modes[2] = "all", nmodes = 3;
    lcodes[0] = GV_LAYER_RC_NONE, lcodes[1] = GV_LAYER_RC_SELECTIVE, lcodes[2] = GV_LAYER_RC_ALL;
  }
  gv_stage_cost first_way = {0}, least_way = {0};
  int nways = 0, nfit = 0, nleast = 0, nbounded = 0; /* nbounded: plans none of which fit and run under the bound */
  int64_t least_mem = 0; /* the smallest plan memory when no mode's plan fits */
  int64_t zb_act = 0, zb_delta = 0; /* ZB-H1 (stash_entries): what W reads per microbatch on a device (0: no W entry) and
                                      * what the W split changes in the entries' arena and scratch */
  for (int lm = 0; lm < nmodes; lm++) {
    gv_train_opts.recompute = modes[lm];
    gv_stage_bytes sb;
    /* a mode the search offers (not --recompute's) that the range does not admit (selective without an attention
     * core, all without a layer: the recompute pass refuses the program) is no way of it, quietly */
    const bool offered = lm > 0 && x->training && x->choose_layer_rc;
    if (offered) gv_error_quiet++;
    gv_module *m = gv_stage_module(x->base, first, last, x->ngroups, x->training, &sb);
    if (offered) gv_error_quiet--;
    if (!m && offered) {
      gv_train_opts.recompute = keep;
      continue;
    }
    if (!m) {
      gv_train_opts.recompute = keep;
      return -1;
    }
    gv_plan plans[2];
    gv_plan_cost pcs[2];
    int prc[2] = {1, 1};
    bool fallback[2] = {false, false}; /* the one-axis preset had no plan: the planner's own (compiled so) */
    int64_t devices = nodes * per_node;
    /* the parameters other stages hold too: their gradients stay whole in the program (the runtime sums them across
     * the stages), as galvc compiles the stage; the others' are returned split as their parameters */
    /* A split one is priced as split alike by every holding stage (runtime/pipe.c sums it block by block; galvc
     * compiles it so where the holders' splits agree, which a range alone cannot see): its gradient returned split
     * (gv_pipe_opts.shared_split), the sum's messages its block (sblk: the blocks each plan splits it into) */
    const char *whole[64];
    int nwhole = 0, wsh[64];
    for (int i = 0; i < x->nshared && nwhole < 64; i++) {
      const gv_shared_param *sp = &x->shared[i];
      bool in = false, out = false;
      for (int g = 0; g < sp->ngroups; g++) in |= sp->groups[g] >= first && sp->groups[g] < last, out |= sp->groups[g] < first || sp->groups[g] >= last;
      const char *n = sp->arg >= 0 && sp->arg < x->base->main->body->nargs ? x->base->main->arg_names[sp->arg] : NULL;
      if (in && out && n) wsh[nwhole] = i, whole[nwhole++] = n;
    }
    int64_t sblk[2][64];
    const bool shared_whole = getenv("GALV_PIPE_SHARED_WHOLE") != NULL; /* galvc's diagnostic: every shared one whole */
    int64_t mprod = x->mesh_naxes ? 1 : 0;
    for (int a = 0; a < x->mesh_naxes; a++) mprod *= x->mesh_shape[a];
    bool on_mesh = mprod == devices && x->mesh_naxes > 1; /* --mesh: the stage's plans on its shape */
    bool one = x->one_axis && devices > 1 && !on_mesh;   /* --strategy dp / tp: one axis of the stage's devices */
    const bool roles = (on_mesh || one) && x->mesh_roles; /* the preset's roles (else the planner's own plan) */
    const int64_t *shape = on_mesh ? x->mesh_shape : one ? &devices : NULL;
    bool earlier = x->training && last < x->ngroups;
    /* crossing values kept split over dp (x->xsplit: as galvc compiles the stage from the preset): the program returns
     * its rows of the values whose dim 0 is the batch (the return's batch_split; propagate-sharding keeps such a
     * result in its own sharding when that splits dim 0 only), so the realised plan has no gather of them */
    const bool xs = x->xsplit && roles && x->mesh_dp >= 0 && devices > 1;
    gv_op *xret = xs ? gv_block_terminator(m->main->body) : NULL;
    if (xret) {
      const gv_func *fn = m->main;
      const char **names = calloc((size_t)fn->nres_names + 1, sizeof *names);
      int nn = 0;
      for (int i = 0; names && i < fn->nres_names && i < xret->nopnds; i++) {
        const char *n = fn->res_names[i];
        if (n && (!strncmp(n, "pp.", 3) || !strncmp(n, "grad:pp.", 8)) && strcmp(n, "pp.seed")) names[nn++] = n;
      }
      if (nn) gv_set_strs(m, xret, "batch_split", nn, names);
      free(names);
    }
    bool grads = !x->training || gv_stage_has_grads(m); /* false: a forward-only stage (nothing trains in it) */
    /* the programs planned: as compiled without ZeRO-2 (unless --pipeline-zero 2 is given) and, where ZeRO-2 is given
     * or offered, with its parameter gradients left unreduced over the ranks holding equal parameters (no all-reduce
     * per microbatch: time, and the arena without the reduced copies) */
    /* no ZeRO with gv_pipe_opts.grad_once: the unreduced program too (the runtime all-reduces the step's sums once) */
    const bool once_none = x->training && !x->zero && gv_pipe_opts.grad_once;
    bool want[2] = {false, x->training && grads && devices > 1 && (x->zero == 2 || (!x->zero && (x->choose_zero || once_none)))};
    /* the reduced program: ZeRO-1 (given or offered), none without once_none; ZeRO-2 given: the unreduced where it applies */
    want[0] = !want[1] || x->zero == 1 || (!x->zero && (x->choose_zero || !once_none));
    int rc = 0;
    for (int k = 0; k < 2 && rc >= 0; k++) {
      if (!want[k]) continue;
      const char *const *keep_whole = gv_pipe_opts.zero2_whole;
      int keep_nwhole = gv_pipe_opts.nzero2_whole;
      gv_pipe_opts.zero2 = k == 1;
      gv_pipe_opts.zero2_shared = k == 1 && once_none; /* as galvc compiles the stage without ZeRO (runtime/pipe.c) */
      gv_pipe_opts.zero2_whole = whole, gv_pipe_opts.nzero2_whole = nwhole;
      gv_pipe_opts.shared_split = whole, gv_pipe_opts.nshared_split = shared_whole ? 0 : nwhole;
      gv_plan_opts.intra_roles = roles, gv_plan_opts.intra_dp = x->mesh_dp, gv_plan_opts.intra_tp = x->mesh_tp;
      gv_plan_opts.intra_sp = gv_plan_opts.intra_roles && x->sp;
      gv_plan_opts.intra_batch = gv_stage_microbatch(x->base); /* a stage input it does not divide stays whole */
      gv_plan_opts.profile_outer_share = gv_plan_opts.profile ? stage_outer_share(x, first, last) : 0;
      rc = prc[k] = gv_plan_intra(m, devices, shape, on_mesh ? x->mesh_naxes : one ? 1 : 0, x->cluster, x->mem_limit, &plans[k], &pcs[k]);
      gv_plan_opts.intra_roles = gv_plan_opts.intra_sp = false;
      if (rc != 0 && one) { /* the one-axis role has no plan on this stage (a microbatch dp cannot split): priced by
                             * the planner's own plan, and the way says so: galvc compiles that plan for the stage
                             * (and its crossing values replicated) */
        if (xret) gv_set_strs(m, xret, "batch_split", 0, NULL);
        rc = prc[k] = gv_plan_intra(m, devices, NULL, 0, x->cluster, x->mem_limit, &plans[k], &pcs[k]);
        fallback[k] = true;
      }
      if (rc == 0 && prof_layers >= 0 && plans[k].nunits - 1 != prof_layers) { /* its layers not found: not priced by the
                                                                                  * profile, no way of it */
        rc = prc[k] = 1;
        memset(&pcs[k], 0, sizeof pcs[k]);
      }
      if (rc == 1 && pcs[k].bounded) { /* nothing it could be faster than the bound with: no way of it */
        nbounded++;
        memset(&pcs[k], 0, sizeof pcs[k]);
      }
      gv_plan_opts.intra_batch = 0, gv_plan_opts.profile_outer_share = 0;
      gv_pipe_opts.zero2_whole = keep_whole, gv_pipe_opts.nzero2_whole = keep_nwhole;
      gv_pipe_opts.shared_split = NULL, gv_pipe_opts.nshared_split = 0;
      gv_pipe_opts.zero2 = false, gv_pipe_opts.zero2_shared = false;
      x->plans++;
      for (int i = 0; i < nwhole; i++) sblk[k][i] = 1;
      if (rc >= 0 && nwhole && devices > 1 && !shared_whole && (rc == 0 || pcs[k].mem_total > 0) &&
          gv_plan_arg_blocks(m, &plans[k], x->cluster, whole, nwhole, sblk[k]))
        rc = -1;
    }
    gv_train_opts.recompute = keep;
    /* the ways: an earlier training stage stashes or recomputes (forced, or both offered), with or without ZeRO */
    bool can_rc = earlier && grads, rc_ways[2];
    int nrc = 0;
    if (!can_rc || x->recompute || !x->choose_recompute) rc_ways[nrc++] = can_rc && x->recompute;
    else rc_ways[nrc++] = false, rc_ways[nrc++] = true;
    bool g16 = x->training && gv_precision_opts.grad != GV_DT_F32 && gv_precision_opts.storage != GV_DT_F32;
    int64_t pmax = g16 ? grad_max_f32(m) : 0; /* bf16 sums: the optimizer's widening buffer */
    /* a plan (fitting or the smallest that does not): its ways' stash */
    bool some = (want[0] && (!prc[0] || pcs[0].mem_total > 0)) || (want[1] && (!prc[1] || pcs[1].mem_total > 0));
    /* each plan's entries as compiled: an earlier stage's stashing way (the arena the runtime holds, the stash per
     * device) and, under ZB-H1 (x->zb: it runs the stashing ways without per-layer recomputation), the backward (the
     * last stage's: its combined program) split into B and W, else the stage has no W entry */
    const bool ent_do = can_rc && !rc_ways[0];
    const bool zb_do = x->zb && x->training && grads && (can_rc || last == x->ngroups) && lcodes[lm] == GV_LAYER_RC_NONE;
    bool ent_ok[2] = {false, false};
    stage_entries ents[2];
    memset(ents, 0, sizeof ents);
    for (int k = 0; k < 2 && rc >= 0 && (ent_do || zb_do); k++) {
      if (!want[k] || (prc[k] && pcs[k].mem_total <= 0)) continue;
      const char *const *keep_whole = gv_pipe_opts.zero2_whole;
      int keep_nwhole = gv_pipe_opts.nzero2_whole;
      gv_pipe_opts.zero2 = k == 1, gv_pipe_opts.zero2_shared = k == 1 && once_none; /* as planned above */
      gv_pipe_opts.zero2_whole = whole, gv_pipe_opts.nzero2_whole = nwhole;
      gv_pipe_opts.shared_split = whole, gv_pipe_opts.nshared_split = shared_whole ? 0 : nwhole;
      gv_plan_opts.intra_roles = !fallback[k] && roles, gv_plan_opts.intra_dp = x->mesh_dp,
      gv_plan_opts.intra_tp = x->mesh_tp, gv_plan_opts.intra_batch = gv_stage_microbatch(x->base);
      gv_plan_opts.intra_sp = gv_plan_opts.intra_roles && x->sp;
      gv_plan_opts.profile_outer_share = gv_plan_opts.profile ? stage_outer_share(x, first, last) : 0;
      ent_ok[k] = !stash_entries(m, &plans[k], can_rc, zb_do, &ents[k]);
      gv_plan_opts.intra_roles = gv_plan_opts.intra_sp = false, gv_plan_opts.intra_batch = 0, gv_plan_opts.profile_outer_share = 0;
      gv_pipe_opts.zero2 = false, gv_pipe_opts.zero2_shared = false;
      gv_pipe_opts.zero2_whole = keep_whole, gv_pipe_opts.nzero2_whole = keep_nwhole;
      gv_pipe_opts.shared_split = NULL, gv_pipe_opts.nshared_split = 0;
      if (ent_ok[k] && ents[k].wsplit) { /* the stage's figures: the least the split saves over its plans, the most W reads */
        if (zb_act <= 0 || ents[k].delta > zb_delta) zb_delta = ents[k].delta;
        if (ents[k].wact > zb_act) zb_act = ents[k].wact;
      }
    }
    int64_t stash = rc >= 0 && some && can_rc && !rc_ways[0] ? stash_bytes(m) : 0;
    gv_module_free(m);
    if (stash < 0 || rc < 0) return -1;
    for (int k = 0; k < 2; k++) {
      if (!want[k]) continue;
      const gv_plan_cost pc = pcs[k];
      const bool fits = prc[k] == 0;
      if (!fits) {
        if (pc.mem_total <= 0) continue; /* no plan applies */
        if (!least_mem || pc.mem_total < least_mem) least_mem = pc.mem_total;
      }
      const gv_plan plan = plans[k];
      if (fits) nfit++;
      /* the ZeRO ways of this program: without ZeRO-2, none and / or ZeRO-1 (given, or both offered); with it,
       * the sums reduce-scattered once per step and / or per microbatch (--zero-reduce, else both offered) */
      int zl[3], nzl = 0;
      if (k == 0) {
        if (x->training && x->zero == 1) zl[nzl++] = GV_ZERO_1;
        else {
          if (!once_none || !want[1]) zl[nzl++] = GV_ZERO_NONE; /* else none is the unreduced program's (k 1) */
          if (x->training && !x->zero && x->choose_zero) zl[nzl++] = GV_ZERO_1;
        }
      } else {
        if (once_none) zl[nzl++] = GV_ZERO_NONE; /* the step's sums all-reduced once */
        if (x->zero == 2 || (!x->zero && x->choose_zero)) {
          if (x->zero_reduce <= 0) zl[nzl++] = GV_ZERO_2;
          if (x->zero_reduce != 0) zl[nzl++] = GV_ZERO_2_EACH;
        }
      }
      for (int wr = 0; wr < nrc; wr++)
        for (int wz = 0; wz < nzl; wz++) {
          bool recompute = rc_ways[wr];
          int zero = zl[wz];
          memset(out, 0, sizeof *out);
          int runs = recompute ? 2 : 1; /* recompute: the combined program in both entries */
          out->recompute = recompute;
          out->layer_rc = lcodes[lm];
          /* kept split (xs, the preset's plan): each rank sends and receives its rows of the batch-carrying values,
           * bytes / D (D: the plan's dp ranks), none all-gathered */
          int64_t D = 1;
          for (int a = 0; xs && !fallback[k] && a < plan.naxes; a++)
            if (plan.dmask & (1u << a)) D *= plan.size[a];
          /* ... scattered over the q = devices / D ranks holding each block and gathered among them, where dp is the
           * mesh's first axis alone and every block divides q ways (tools/galvc_pipeline.c xs_scatter) */
          const int64_t q = gv_pipe_scatter_q(x->cluster, nodes * per_node, D, plan.dmask == 1u, sb.rows_gcd);
          out->xfer_ns = gv_pipe_transfer_split_ns(x->cluster, nodes, per_node, sb.in, sb.out, sb.in_rows, sb.out_rows, D, q,
                                                   runs * pc.kernels, x->training);
          out->ns = runs * pc.step_ns + out->xfer_ns;
          out->comm_ns = runs * pc.exposed_ns;
          /* memory per device as runtime/pipe.c allocates it: the plan's total (the weights buffer: parameters and
           * constants; the arena, which holds the parameter gradients the program outputs); in training beside them
           * the gradient sums (the parameters' bytes), the optimizer state (opt_states x the parameters' bytes;
           * ZeRO: divided by the ranks holding equal parameters, the plan's dp ranks when it splits no parameter
           * over them); an earlier stage's backward entry reads the same weights buffer (its constants after the
           * forward entry's: runtime/pipe.c galv_pipe_bwd_base), so no copy of the parameters */
          /* stashing: the two entries' constants, collective scratch and (one, the larger) arena instead of the
           * combined program's */
          const bool ent = x->training && can_rc && !recompute && ent_ok[k];
          out->state_bytes = ent ? pc.mem_params + pc.mem_optimizer + ents[k].held : pc.mem_total;
          if (x->training) {
            int64_t g = 1;
            bool zsplit = false;
            for (int u = 0; u < plan.nunits; u++) zsplit |= plan.zero[u] != 0;
            for (int a = 0; zero && !zsplit && a < plan.naxes; a++)
              if (plan.dmask & (1u << a)) g *= plan.size[a];
            if (zero && g < 2) { /* no dp ranks to split over: offered, the same way as without; given, runs without */
              if (!x->zero) continue;
              zero = GV_ZERO_NONE;
            }
            int64_t gd = 1; /* no ZeRO in the unreduced program: the ranks the step's sums are all-reduced over */
            for (int a = 0; k == 1 && !zero && !zsplit && a < plan.naxes; a++)
              if (plan.dmask & (1u << a)) gd *= plan.size[a];
            int64_t opt = (int64_t)x->opt_states * pc.mem_params;
            /* the gradient sums: the parameters' bytes, half with --grad-dtype bf16 (bf16 sums of bf16 gradients) */
            int64_t sums = g16 ? pc.mem_params / 2 : pc.mem_params;
            int64_t es = g16 ? 2 : 4, nf = (sums / es + g - 1) / g; /* ZeRO-2: the chunk's elements */
            /* ZeRO-2 per microbatch (runtime/pipe.c): no local sums; the chunk's sums (ZE_BUCKETS x g buckets of bs
             * elements, at least the chunk), one bucket per rank staged for each reduce-scatter, and its result */
            int64_t bs = (nf + GV_ZERO_EACH_BUCKETS * g - 1) / (GV_ZERO_EACH_BUCKETS * g);
            /* the parameters shared with stages outside (runtime/pipe.c): per microbatch under ZeRO-2 their own
             * sums (acc: this rank's block); a whole one's whole step sum (accw) and one received from another
             * stage (wtmp, the largest: a split one's block), in the sums' dtype */
            int64_t shloc = 0, shacc = 0, shtmp = 0;
            for (int i = 0; i < nwhole; i++) {
              const int64_t b = x->shared[wsh[i]].bytes, loc = (b + sblk[k][i] - 1) / sblk[k][i];
              shloc += loc;
              if (sblk[k][i] > 1) shtmp = loc > shtmp ? loc : shtmp;
              else shacc += b, shtmp = b > shtmp ? b : shtmp;
            }
            int64_t held = zero == GV_ZERO_2_EACH ? es * (GV_ZERO_EACH_BUCKETS * g * bs + g * bs + bs) + shloc / (4 / es) : sums;
            out->state_bytes += held + pmax + (g > 1 ? (opt + g - 1) / g : opt);
            out->state_bytes += (shacc + shtmp) / (4 / es);
            /* the receive buffers (runtime/pipe.c inbuf, gbuf): the last stage's and a stashing stage's forward
             * inputs (a recomputing stage receives into its saved inputs), an earlier stage's gradients of the
             * values it sends, one per receiving stage; the rows kept split a rank's share */
            if (last == x->ngroups || (can_rc && !recompute))
              out->state_bytes += sb.recv - sb.recv_rows + ((sb.recv_rows + D - 1) / D + 63) / 64 * 64; /* recv_dev */
            if (earlier) out->state_bytes += sb.send - sb.send_rows + (sb.send_rows + D - 1) / D;
            /* the dp ranks' collectives below as the stage's mesh lays them out (ranks row-major, nodes of
             * devices_per_node consecutive ranks: a dp axis outside tp has one rank per node when tp fills it) */
            gv_mesh pm = {.naxes = plan.naxes};
            for (int a = 0; a < plan.naxes; a++) pm.size[a] = plan.size[a];
            if (gd > 1) { /* none, the gradients reduced once (runtime/pipe.c, galv_pipe_zero 4): the step's sums all-reduced
                           * once over the ranks holding equal parameters (the program, planned so above, leaves them) */
              out->zero_ns = gv_cost_mesh_group(x->cluster, &pm, plan.dmask, GV_COLL_ALL_REDUCE, sums);
            }
            if (g > 1) { /* ZeRO-1: the parameters all-gathered over the g ranks after each update */
              out->zero_ns = gv_cost_mesh_group(x->cluster, &pm, plan.dmask, GV_COLL_ALL_GATHER, pc.mem_params);
              out->zero_ranks = g;
              out->zero = (signed char)zero;
              if (zero == GV_ZERO_2) { /* ZeRO-2 (runtime/pipe.c): the program (planned so above) leaves the gradients
                                        * unreduced; the runtime sums the microbatches locally and reduce-scatters the
                                        * step's sums once, into a chunk of sums / g */
                out->zero_ns += gv_cost_mesh_group(x->cluster, &pm, plan.dmask, GV_COLL_REDUCE_SCATTER, sums);
                out->state_bytes += (sums + g - 1) / g;
              } else if (zero == GV_ZERO_2_EACH) { /* each microbatch's gradients reduce-scattered, a bucket at a time */
                const int64_t rs = GV_ZERO_EACH_BUCKETS * g * gv_cost_mesh_group(x->cluster, &pm, plan.dmask, GV_COLL_REDUCE_SCATTER, es * g * bs);
                out->ns += rs, out->comm_ns += rs;
              }
            }
            /* the runtime's optimizer update once per step, memory-bound: per element it reads the parameter, the
             * gradient sum and the optimizer state and writes the parameter and the state (on a ZeRO-1 rank its
             * chunk), and an earlier stage copies the parameters to its backward entry's weights */
            const gv_cluster *cl = x->cluster;
            double bw = cl->memory_gbps * (cl->memory_efficiency > 0 ? cl->memory_efficiency : 1.0); /* bytes per ns */
            if (bw > 0) {
              double upd = ((double)pc.mem_params * (2 + 2 * x->opt_states) + (double)sums) / (double)g +
                           (can_rc && !recompute ? 2.0 * (double)pc.mem_params : 0);
              out->opt_ns = (int64_t)(upd / bw);
              /* per microbatch, the runtime adds the entries' parameter gradients into the sums (runtime/pipe.c
               * accumulate; 16-bit sums on the device too, the op16 hook): it reads the sum and the gradient and
               * writes the sum, 3 x the sums' bytes; ZeRO-2 per microbatch (ze_pass) copies the gradients into its
               * staging buckets (2 x the sums' bytes) and adds the reduce-scattered bucket into the rank's chunk
               * (3 x the chunk's) */
              const double gbytes = zero == GV_ZERO_2_EACH ? 2.0 * (double)sums + 3.0 * (double)((sums + g - 1) / g)
                                                           : 3.0 * (double)sums;
              out->grad_ns = (int64_t)(gbytes / bw);
              out->ns += out->grad_ns;
            }
          }
          /* the values in transit / saved inputs per device: the rows kept split are a rank's share */
          const int64_t in_dev = sb.in - sb.in_rows + (sb.in_rows + D - 1) / D, out_dev = sb.out - sb.out_rows + (sb.out_rows + D - 1) / D;
          /* training, as runtime/pipe.c saves them: a recomputing stage its forward's inputs (the receive buffer's
           * layout), the last stage the gradients of its received values (64-byte aligned, as stored) */
          const int64_t recv_dev = sb.recv - sb.recv_rows + ((sb.recv_rows + D - 1) / D + 63) / 64 * 64,
                        gkeep_dev = sb.gkeep - sb.gkeep_rows + ((sb.gkeep_rows + D - 1) / D + 63) / 64 * 64;
          out->act_bytes = !x->training ? in_dev + out_dev : !grads ? 0 : ent ? ents[k].stash
                                                                   : can_rc && !recompute ? (stash + devices - 1) / devices
                                                                   : last == x->ngroups   ? gkeep_dev
                                                                                          : recv_dev;
          out->feasible = true;
          /* the copies sent per microbatch (interleaved: held until proven received): the values on, the gradients back */
          out->send_bytes = last < x->ngroups ? sb.send - sb.send_rows + (sb.send_rows + D - 1) / D : 0;
          out->gsend_bytes = x->training && grads ? sb.gsend - sb.gsend_rows + (sb.gsend_rows + D - 1) / D : 0;
          /* the stage's copies of shared parameters are in its program (memory); their gradient sum with the other
           * holding stages runs once per step */
          /* (each message: the whole gradient, or a split one's block; in the sums' dtype) */
          int64_t *shb = malloc(sizeof *shb * (size_t)(x->nshared + 1));
          for (int i = 0; shb && i < x->nshared; i++) shb[i] = x->shared[i].bytes / (g16 ? 2 : 1);
          for (int i = 0; shb && i < nwhole; i++)
            if (sblk[k][i] > 1) shb[wsh[i]] = (x->shared[wsh[i]].bytes + sblk[k][i] - 1) / sblk[k][i] / (g16 ? 2 : 1);
          out->once_ns = gv_pipe_shared_ns(x->cluster, x->shared, x->nshared, first, last, nodes, per_node, x->training, shb) +
                         out->zero_ns + out->opt_ns;
          free(shb);
          /* the DP's key among the ways: ZeRO's per-step collectives spread over the step's microbatches */
          out->key_ns = out->ns + out->zero_ns / (x->B > 0 ? x->B : 1);
          plan_desc(&plan, !fallback[k] && roles && x->sp, out->desc, sizeof out->desc);
          out->planner_plan = fallback[k];
          /* a per-layer mode that changes nothing here (no attention core, no layer in the stage, or the whole stage
           * recomputed and its arena the same): the same way as an earlier one */
          bool dup = false;
          for (int v = 0; v < first_way.nvar && !dup; v++) {
            const gv_stage_var *w = &first_way.var[v];
            dup = w->recompute == out->recompute && w->zero_ranks == out->zero_ranks && w->zero == out->zero &&
                  w->state_bytes == out->state_bytes && w->act_bytes == out->act_bytes && w->ns <= out->ns;
          }
          if (!fits) { /* the smallest plan's ways, priced alike: what the no-fit stage needs (states + saved bytes) */
            if (!nleast) least_way = *out;
            gv_stage_cost_add_way(&least_way, out);
            nleast++;
            continue;
          }
          if (dup) continue;
          if (!nways) first_way = *out;
          gv_stage_cost_add_way(&first_way, out); /* the way just priced, as var[nways] */
          nways++;
        }
    }
    /* the other per-layer modes cannot beat the step bound when this mode (none, the first) cannot: each of its
     * programs found its fastest plan (no faster candidate over the memory limit), and its fastest way runs at or
     * above the bound per microbatch (gv_plan_opts.stage_incumbent_ns, against the way's ns less its transfers as
     * the stage DP's step bound counts it; what the search's bound left out runs above it too); recomputing adds
     * work to every plan of the same sharding, so selective and all are slower still: not planned */
    bool rest_slower = lm == 0 && nmodes > 1 && gv_plan_opts.stage_incumbent_ns > 0 && nways > 0;
    for (int k = 0; k < 2 && rest_slower; k++)
      if (want[k]) rest_slower = prc[k] == 0 && !pcs[k].memory_bound;
    int64_t fastest = INT64_MAX;
    for (int v = 0; rest_slower && v < first_way.nvar; v++)
      if (first_way.var[v].ns - first_way.var[v].xfer_ns < fastest) fastest = first_way.var[v].ns - first_way.var[v].xfer_ns;
    if (rest_slower && first_way.nvar == 0) fastest = first_way.ns - first_way.xfer_ns;
    rest_slower = rest_slower && fastest >= gv_plan_opts.stage_incumbent_ns;
    if (lm == 0 && nmodes > 1 && gv_plan_opts.stage_incumbent_ns > 0 && nways > 0 && getenv("GALV_PLAN_DEBUG"))
      fprintf(stderr, "plan-debug: stage groups %d-%d, no recomputation: fastest way %lld ns per microbatch against the bound "
                      "%lld: selective and all %s\n", first, last - 1, (long long)(fastest == INT64_MAX ? -1 : fastest),
              (long long)gv_plan_opts.stage_incumbent_ns, rest_slower ? "not planned (slower)" : "planned");
    if (rest_slower) break; /* selective and all: slower than this mode, which the step bound already cuts */
  }
  if (nfit) {
    if (nways < 2) first_way.nvar = 0;
    *out = first_way;
    /* ZB-H1's weight-gradient entry: its constants and working set (the split's delta; its parameters are the other
     * entries', one weights buffer: runtime/pipe.c galv_pipe_wgt_base) and what B saves for it per microbatch: the
     * schedule adds them (none where the backward does not split) */
    out->zb_bytes = zb_act > 0 ? zb_delta : 0;
    out->zb_act_bytes = zb_act > 0 ? zb_act : 0;
  } else if (nleast) { /* no plan fits: its ways as priced, which the DP's memory check refuses (each needs more than the
                        * planner's limit, which is the DP's), and the partition's need its error reports */
    if (nleast < 2) least_way.nvar = 0;
    *out = least_way;
    out->zb_bytes = zb_act > 0 ? zb_delta : 0;
    out->zb_act_bytes = zb_act > 0 ? zb_act : 0;
    out->feasible = true;
    snprintf(out->desc, sizeof out->desc, "no plan fits");
  } else if (least_mem > 0) { /* no plan fits and none priced: the smallest plan memory */
    memset(out, 0, sizeof *out);
    out->ns = 1;
    out->state_bytes = least_mem;
    out->feasible = true;
    snprintf(out->desc, sizeof out->desc, "no plan fits");
  } else memset(out, 0, sizeof *out);
  if (!nfit && nbounded) { /* cut short by the bound, not by memory: no way of it could be in a faster pipeline */
    memset(out, 0, sizeof *out);
    out->bounded = true;
    snprintf(out->desc, sizeof out->desc, "bounded");
  }
  if (getenv("GALV_PLAN_DEBUG")) /* each range's outcome: why the stage DP finds no partition */
    fprintf(stderr, "plan-debug: stage groups %d-%d on %lld x %lld: %s, %d way%s, state %lld act %lld ns %lld (transfers %lld, gradient sum %lld, once per step %lld) (%s)\n", first, last - 1,
            (long long)nodes, (long long)per_node, !out->feasible ? "no plan" : nfit ? "planned" : "no plan fits", nways,
            nways == 1 ? "" : "s", (long long)out->state_bytes, (long long)out->act_bytes, (long long)out->ns, (long long)out->xfer_ns,
            (long long)out->grad_ns, (long long)out->once_ns, out->desc);
  if (x->ncache == x->capcache) {
    int cap = x->capcache ? 2 * x->capcache : 256;
    struct gv_stage_cache *nc = realloc(x->cache, (size_t)cap * sizeof *nc);
    if (!nc) return gv_error_plain("pipeline: out of memory");
    x->cache = nc;
    x->capcache = cap;
  }
  /* (an entry of the same range made under a tighter bound is replaced) */
  x->cache[ci] = (struct gv_stage_cache){first, last, nodes, per_node, *out, gv_plan_opts.stage_incumbent_ns};
  if (ci == x->ncache) x->ncache++;
  x->seconds += now_s() - t0;
  return 0;
}

void gv_intra_stage_ctx_free(gv_intra_stage_ctx *x) {
  free(x->cache), free(x->outer_fl), free(x->lay_lo), free(x->lay_hi);
  x->cache = NULL, x->outer_fl = NULL, x->lay_lo = x->lay_hi = NULL;
  x->ncache = x->capcache = 0;
}
