/* stage_extract.c — the per-stage programs of a pipeline (docs/pipeline.md,
 * "Per-stage executables").
 *
 * gv_pipe_group_stats: per layer group (cluster-layers' `layer` attribute)
 * the figures the stage DP's analytic cost needs: forward FLOPs, parameter
 * bytes (a parameter counts in the group of its first user), activation
 * bytes (results of the group's ops) and bytes leaving the group.
 *
 * gv_pipe_assign_stages: `stage = i` on every top-level op from its layer
 * group and the plan's group ranges (first[i] <= layer < first[i+1]); an op
 * without a layer (none after cluster-layers) gets stage 0; an operand-free
 * op without regions (a constant) gets the stage of its first user.
 *
 * gv_pipe_shared_params: the parameters read by more than one layer group,
 * with those groups. A parameter read by several stages (a tied embedding,
 * an initializer the exporter merged) is kept by each of them
 * (gv_stage_extract drops only unused arguments); the runtime sums the
 * copies' gradients across those stages before one identical update
 * (docs/pipeline.md, "Shared parameters").
 *
 * gv_stage_extract: keeps stage s's ops. A value defined in another stage
 * and used in s becomes a new function input named "pp.OP.RES" (OP: the
 * definer's position in the body, RES: its result index; the same name in
 * both stages, since every stage module is compiled from the same import);
 * a value of s used in another stage becomes an extra output of the same
 * name. Constants another stage defines are kept in s (copied, not sent).
 * With gv_pipe_opts.relay (training pipelines) a floating-point value read
 * past the next stage is relayed: its definer sends it to the next stage
 * only, each stage up to the last one reading it receives it from the stage
 * before and returns it as is (the same name), so every transfer is between
 * neighbours and its gradient comes back the same way (docs/pipeline.md,
 * "Values read past the next stage: relayed").
 * The original outputs s defines stay outputs. Unused arguments (inputs and
 * parameters other stages use) are dropped. io lists the crossing values
 * with their peer stages, in name order, so that sender and receiver agree
 * on the order of the messages between any two stages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "passes.h"
#include "stage_extract.h"

static int64_t op_stage(const gv_op *op) { return gv_get_int(op, "stage", -1); }

static bool uses(const gv_op *op, const gv_value *v) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i] == v) return true;
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next)
      if (uses(o, v)) return true;
  return false;
}

static void replace_in(gv_op *op, gv_value *from, gv_value *to) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i] == from) op->opnds[i] = to;
  for (int r = 0; r < op->nregions; r++) gv_replace_uses(op->regions[r], from, to);
}

static void clear_nested(gv_block *b);

/* The top-level ops that use each value of the body (an operand of the op
 * or of an op in its regions), in program order, each op once per value:
 * the questions "which later op uses v" then cost v's uses, not a scan of
 * the rest of the block per value (quadratic: the stage DP extracts a stage
 * from the whole model per candidate). Values are numbered (value->id:
 * arguments, then top-level results; nested values -1); ops[k] is the k-th
 * top-level op, stage[k] its `stage` (-1 when none). */
typedef struct {
  gv_op **ops;
  int64_t *stage;
  int nops, nvals;
  int *first, *tail, *next, *user; /* per value: first and last entry; per entry: next entry, user op index */
  int nent;
} users_ix;

static void users_free(users_ix *U) {
  free(U->ops), free(U->stage), free(U->first), free(U->tail), free(U->next), free(U->user);
  memset(U, 0, sizeof *U);
}

static int count_opnds(const gv_op *op) {
  int n = op->nopnds;
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) n += count_opnds(o);
  return n;
}

static void users_add(users_ix *U, int k, const gv_op *op) {
  for (int i = 0; i < op->nopnds; i++) {
    int id = op->opnds[i]->id;
    if (id < 0 || id >= U->nvals || (U->tail[id] >= 0 && U->user[U->tail[id]] == k)) continue;
    int e = U->nent++;
    U->user[e] = k, U->next[e] = -1;
    if (U->tail[id] >= 0) U->next[U->tail[id]] = e;
    else U->first[id] = e;
    U->tail[id] = e;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) users_add(U, k, o);
}

static int users_build(users_ix *U, gv_block *body) {
  memset(U, 0, sizeof *U);
  int nv = body->nargs, nops = 0, nent = 0;
  for (gv_op *op = body->first; op; op = op->next) nv += op->nres, nops++, nent += count_opnds(op);
  U->ops = malloc(sizeof *U->ops * (size_t)(nops + 1));
  U->stage = malloc(sizeof *U->stage * (size_t)(nops + 1));
  U->first = malloc(sizeof *U->first * (size_t)(nv + 1));
  U->tail = malloc(sizeof *U->tail * (size_t)(nv + 1));
  U->next = malloc(sizeof *U->next * (size_t)(nent + 1));
  U->user = malloc(sizeof *U->user * (size_t)(nent + 1));
  if (!U->ops || !U->stage || !U->first || !U->tail || !U->next || !U->user) {
    users_free(U);
    return -1;
  }
  int id = 0;
  for (int a = 0; a < body->nargs; a++) body->args[a]->id = id++;
  for (gv_op *op = body->first; op; op = op->next) {
    U->ops[U->nops] = op;
    U->stage[U->nops++] = gv_get_int(op, "stage", -1);
    for (int i = 0; i < op->nres; i++) op->res[i]->id = id++;
    for (int r = 0; r < op->nregions; r++) clear_nested(op->regions[r]);
  }
  U->nvals = id;
  for (int v = 0; v < id; v++) U->first[v] = U->tail[v] = -1;
  for (int k = 0; k < U->nops; k++) users_add(U, k, U->ops[k]);
  return 0;
}

static bool is_term(const gv_op *op) { return (gv_ops[op->code].flags & GV_TERMINATOR) != 0; }

static int64_t type_bytes(const gv_type *t) {
  int64_t n = gv_type_numel(t);
  return n > 0 ? n * (int64_t)gv_dtype_size(t->dtype) : 0;
}

/* float_reach: group lu reads the floating-point values op (or an op of its regions) reads from top-level ops of
 * body (constants aside: copied, never sent) */
static void float_reach(const gv_op *op, const gv_block *body, int64_t lu, int ngroups, gv_group_stats *out) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_op *d = op->opnds[i]->def;
    if (!d || d->parent != body || (!d->nopnds && !d->nregions)) continue;
    const int64_t ld = gv_get_int(d, "layer", -1);
    if (ld < 0 || ld >= ngroups) continue;
    if (lu + 1 > out[ld].reach) out[ld].reach = (int)lu + 1;
    if (gv_dtype_is_float(op->opnds[i]->type.dtype) && lu + 1 > out[ld].float_reach) out[ld].float_reach = (int)lu + 1;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) float_reach(o, body, lu, ngroups, out);
}

int gv_pipe_group_stats(gv_module *m, int ngroups, const int64_t *flops, gv_group_stats *out) {
  gv_block *body = m->main->body;
  memset(out, 0, sizeof *out * (size_t)ngroups);
  for (int g = 0; g < ngroups; g++) out[g].flops = flops[g], out[g].float_reach = out[g].reach = -1;
  for (gv_op *op = body->first; op; op = op->next) {
    const int64_t lu = gv_get_int(op, "layer", -1);
    if (!is_term(op) && lu >= 0 && lu < ngroups) float_reach(op, body, lu, ngroups, out);
  }
  for (gv_op *op = body->first; op; op = op->next) {
    if (is_term(op)) continue;
    int64_t l = gv_get_int(op, "layer", -1);
    if (l < 0 || l >= ngroups) continue;
    for (int i = 0; i < op->nres; i++) {
      int64_t b = type_bytes(&op->res[i]->type);
      out[l].act_bytes += b;
      for (gv_op *u = op->next; u; u = u->next)
        if (!is_term(u) && gv_get_int(u, "layer", -1) != l && uses(u, op->res[i])) {
          out[l].out_bytes += b;
          break;
        }
    }
  }
  for (int a = 0; a < body->nargs; a++) {
    if (!m->main->arg_is_param[a]) continue;
    for (gv_op *u = body->first; u; u = u->next)
      if (!is_term(u) && uses(u, body->args[a])) {
        int64_t l = gv_get_int(u, "layer", -1);
        if (l >= 0 && l < ngroups) out[l].param_bytes += type_bytes(&body->args[a]->type);
        break;
      }
  }
  return 0;
}

/* gv_pipe_group_stash: per layer group, the bytes a stage's stash keeps per
 * microbatch for it (passes/stage_stash.c), estimated on the whole model's
 * training function (m: clustered, then loss and autodiff; forward ops carry
 * `layer`, the loss and backward ops do not). A value the backward reads (a
 * non-parameter input or a forward result used by an op that is neither
 * forward nor on the loss's path) counts once in each group whose forward
 * ops use it (the stage that runs that op's backward stashes it: a received
 * value in the receiving stage), else in its defining group. An elementwise
 * op whose operands the backward reads anyway is recomputed by its group's
 * stage (as stage-stash does): not counted there; counted in a later group
 * that uses it, and credit[g] holds what g counts that g - 1 recomputes
 * (not kept when both are in one stage). */
static void add_uses(const gv_op *op, const int *vid, void (*f)(void *, int), void *ctx) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i]->id >= 0 && vid[op->opnds[i]->id] >= 0) f(ctx, op->opnds[i]->id);
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) add_uses(o, vid, f, ctx);
}
static void clear_nested(gv_block *b) {
  for (int a = 0; a < b->nargs; a++) b->args[a]->id = -1;
  for (gv_op *o = b->first; o; o = o->next) {
    for (int i = 0; i < o->nres; i++) o->res[i]->id = -1;
    for (int r = 0; r < o->nregions; r++) clear_nested(o->regions[r]);
  }
}
static void mark_id(void *ctx, int id) { ((bool *)ctx)[id] = true; }
typedef struct {
  const bool *needb;
  const int *recg; /* the group that recomputes the value in its backward, -1 none */
  int *lastg;
  const int64_t *bytes;
  int64_t *stash, *credit;
  int g;
} stash_ctx;
static void count_id(void *vctx, int id) {
  stash_ctx *c = vctx;
  if (!c->needb[id] || c->lastg[id] == c->g || c->recg[id] == c->g) return;
  c->lastg[id] = c->g;
  c->stash[c->g] += c->bytes[id];
  if (c->recg[id] >= 0 && c->recg[id] == c->g - 1) c->credit[c->g] += c->bytes[id]; /* the previous group recomputes it */
}

int gv_pipe_group_stash(gv_module *m, int ngroups, int64_t *stash, int64_t *credit) {
  gv_func *f = m->main;
  gv_block *body = f->body;
  memset(stash, 0, sizeof *stash * (size_t)ngroups);
  memset(credit, 0, sizeof *credit * (size_t)ngroups);
  gv_op *ret = gv_block_terminator(body);
  if (!ret || !ret->nopnds) return gv_error(m, "pipeline: the training function has no loss");
  int nv = body->nargs, nops = 0;
  for (gv_op *op = body->first; op; op = op->next) nv += op->nres, nops++;
  int *vid = malloc(sizeof *vid * (size_t)(nv + 1)), *defl = malloc(sizeof *defl * (size_t)(nv + 1)),
      *lastg = malloc(sizeof *lastg * (size_t)(nv + 1)), *recg = malloc(sizeof *recg * (size_t)(nv + 1));
  int64_t *bytes = calloc((size_t)nv + 1, sizeof *bytes);
  bool *needb = calloc((size_t)nv + 1, 1), *lossv = calloc((size_t)nv + 1, 1);
  gv_op **ops = malloc(sizeof *ops * (size_t)(nops + 1));
  if (!vid || !defl || !lastg || !recg || !bytes || !needb || !lossv || !ops) {
    free(vid), free(defl), free(lastg), free(recg), free(bytes), free(needb), free(lossv), free(ops);
    return gv_error(m, "pipeline: out of memory");
  }
  /* ids: top-level values only (the others' ids point past vid's range: reset to -1 below) */
  int id = 0;
  for (int a = 0; a < body->nargs; a++) {
    body->args[a]->id = id, vid[id] = f->arg_is_param[a] ? -1 : 0, defl[id] = -1, lastg[id] = -1, recg[id] = -1;
    bytes[id++] = type_bytes(&body->args[a]->type);
  }
  int k = 0;
  for (gv_op *op = body->first; op; op = op->next) {
    ops[k++] = op;
    int64_t l = gv_get_int(op, "layer", -1);
    for (int i = 0; i < op->nres; i++) {
      op->res[i]->id = id, vid[id] = 0, defl[id] = l >= 0 && l < ngroups ? (int)l : -1, lastg[id] = -1, recg[id] = -1;
      bytes[id++] = type_bytes(&op->res[i]->type);
    }
    for (int r = 0; r < op->nregions; r++) clear_nested(op->regions[r]);
  }
  /* the loss's path: the ops the first result needs */
  if (ret->opnds[0]->id >= 0) lossv[ret->opnds[0]->id] = true;
  for (k = nops - 1; k >= 0; k--) {
    gv_op *op = ops[k];
    bool need = false;
    for (int i = 0; i < op->nres; i++) need |= lossv[op->res[i]->id];
    if (need) add_uses(op, vid, mark_id, lossv);
  }
  /* what the backward reads */
  for (k = 0; k < nops; k++) {
    gv_op *op = ops[k];
    if (is_term(op) || gv_get_int(op, "layer", -1) >= 0) continue;
    bool onloss = false;
    for (int i = 0; i < op->nres; i++) onloss |= lossv[op->res[i]->id];
    if (!onloss) add_uses(op, vid, mark_id, needb);
  }
  for (int v = 0; v < nv; v++) /* only forward values (and inputs) are stashed */
    if (needb[v] && v >= body->nargs && defl[v] < 0) needb[v] = false;
  /* as stage-stash does: an elementwise forward op whose operands the backward reads anyway (or
   * parameters, constants) is recomputed, not stashed, by its own group's stage (a later group
   * that uses the result still stashes it) */
  for (k = 0; k < nops; k++) {
    gv_op *op = ops[k];
    int64_t l = gv_get_int(op, "layer", -1);
    if (l < 0 || l >= ngroups || op->nres != 1 || op->nregions || !needb[op->res[0]->id] ||
        (op->code != GV_OP_FUSED && !(gv_ops[op->code].flags & GV_ELEMENTWISE)))
      continue;
    bool ok = true;
    for (int i = 0; i < op->nopnds && ok; i++) {
      const gv_value *u = op->opnds[i];
      ok = u->id >= 0 && (needb[u->id] || vid[u->id] < 0 || (u->def && !u->def->nopnds && !u->def->nregions));
    }
    if (ok) recg[op->res[0]->id] = (int)l;
  }
  stash_ctx c = {needb, recg, lastg, bytes, stash, credit, 0};
  for (k = 0; k < nops; k++) {
    int64_t l = gv_get_int(ops[k], "layer", -1);
    if (l < 0 || l >= ngroups) continue;
    c.g = (int)l;
    add_uses(ops[k], vid, count_id, &c);
  }
  for (int v = body->nargs; v < nv; v++) /* read only by the backward: in its defining group */
    if (needb[v] && lastg[v] == -1 && recg[v] < 0) stash[defl[v]] += bytes[v];
  free(vid), free(defl), free(lastg), free(recg), free(bytes), free(needb), free(lossv), free(ops);
  return 0;
}

int gv_pipe_assign_stages(gv_module *m, const int *first, int nstages) {
  gv_block *body = m->main->body;
  for (gv_op *op = body->first; op; op = op->next) {
    if (is_term(op)) continue;
    int64_t l = gv_get_int(op, "layer", -1), s = 0;
    for (int i = 0; l >= 0 && i < nstages; i++)
      if (l >= first[i] && l < first[i + 1]) s = i;
    gv_set_int(m, op, "stage", s);
  }
  users_ix U; /* built after the stages above are set */
  if (users_build(&U, body)) return gv_error(m, "pipeline: out of memory");
  for (int k = 0; k < U.nops; k++) {
    gv_op *op = U.ops[k];
    if (is_term(op) || op->nopnds || op->nregions || op->nres != 1) continue;
    for (int e = U.first[op->res[0]->id]; e >= 0; e = U.next[e]) /* its first user (a constant uses nothing) */
      if (!is_term(U.ops[U.user[e]])) {
        gv_set_int(m, op, "stage", U.stage[U.user[e]]);
        break;
      }
  }
  users_free(&U);
  return 0;
}

static int add_io(gv_module *m, gv_stage_io *io, bool in, const char *name, int peer, uint64_t mask) {
  int *n = in ? &io->nin : &io->nout;
  if (*n >= GV_STAGE_IO_MAX) return gv_error(m, "pipeline: more than %d values cross one stage boundary", GV_STAGE_IO_MAX);
  gv_stage_value *x = in ? &io->in[*n] : &io->out[*n];
  x->name = gv_strdup(m->arena, name);
  x->peer = peer;
  x->dst_mask = mask;
  (*n)++;
  return 0;
}

static void mark_param_uses(const gv_op *op, const gv_func *f, uint64_t bit, uint64_t *mask) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *v = op->opnds[i];
    if (v->def || v->block != f->body || v->index < 0 || v->index >= f->body->nargs) continue;
    if (f->arg_is_param && f->arg_is_param[v->index]) mask[v->index] |= bit;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) mark_param_uses(o, f, bit, mask);
}


static int int_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int gv_pipe_shared_params(const gv_module *m, gv_shared_param **out, int *nout) {
  const gv_func *f = m->main;
  const int na = f->body->nargs;
  *out = NULL, *nout = 0;
  int *cnt = calloc((size_t)na + 1, sizeof *cnt), **grp = calloc((size_t)na + 1, sizeof *grp);
  uint64_t *bit = calloc((size_t)na + 1, sizeof *bit);
  int rc = !cnt || !grp || !bit;
  for (const gv_op *op = f->body->first; !rc && op; op = op->next) {
    if (is_term(op)) continue;
    int64_t l = gv_get_int(op, "layer", -1);
    if (l < 0) continue;
    memset(bit, 0, sizeof *bit * (size_t)na);
    mark_param_uses(op, f, 1, bit);
    for (int a = 0; a < na && !rc; a++) {
      if (!bit[a] || (cnt[a] && grp[a][cnt[a] - 1] == (int)l)) continue;
      int *g = realloc(grp[a], sizeof *g * (size_t)(cnt[a] + 1));
      if (!g) rc = 1;
      else grp[a] = g, g[cnt[a]++] = (int)l;
    }
  }
  int n = 0;
  gv_shared_param *sp = rc ? NULL : calloc((size_t)na + 1, sizeof *sp);
  if (!sp) rc = 1;
  for (int a = 0; !rc && a < na; a++) {
    if (cnt[a] < 2) continue;
    qsort(grp[a], (size_t)cnt[a], sizeof(int), int_cmp);
    int u = 1;
    for (int i = 1; i < cnt[a]; i++)
      if (grp[a][i] != grp[a][u - 1]) grp[a][u++] = grp[a][i];
    if (u < 2) continue;
    const gv_type *t = &f->body->args[a]->type;
    sp[n++] = (gv_shared_param){gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype), a, u, grp[a]};
    grp[a] = NULL;
  }
  for (int a = 0; grp && a < na; a++) free(grp[a]);
  free(cnt), free(grp), free(bit);
  if (rc) {
    free(sp);
    return gv_error_plain("pipeline: out of memory");
  }
  *out = sp, *nout = n;
  return 0;
}

void gv_pipe_shared_params_free(gv_shared_param *sp, int n) {
  for (int i = 0; sp && i < n; i++) free(sp[i].groups);
  free(sp);
}

/* Marks in used[] the arguments of body that op (or an op in its regions) reads. */
static void mark_arg_uses(const gv_op *op, const gv_block *body, bool *used) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *v = op->opnds[i];
    if (!v->def && v->block == body && v->index >= 0 && v->index < body->nargs && body->args[v->index] == v) used[v->index] = true;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) mark_arg_uses(o, body, used);
}

/* Appends an output (v, a copy of name) to the growing ro / rn (nr of cap). */
static int push_out(gv_module *m, gv_value ***ro, const char ***rn, int *nr, int *cap, gv_value *v, const char *name) {
  if (*nr == *cap) {
    *cap *= 2;
    gv_value **r2 = realloc(*ro, sizeof **ro * (size_t)*cap);
    if (r2) *ro = r2;
    const char **n2 = realloc(*rn, sizeof **rn * (size_t)*cap);
    if (n2) *rn = n2;
    if (!r2 || !n2) return gv_error(m, "pipeline: out of memory");
  }
  (*ro)[*nr] = v;
  (*rn)[(*nr)++] = gv_strdup(m->arena, name);
  return 0;
}

int gv_stage_extract(gv_module *m, int s, int nstages, gv_stage_io *io) {
  gv_func *f = m->main;
  gv_block *body = f->body;
  memset(io, 0, sizeof *io);
  gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return gv_error(m, "pipeline: the function has no return");
  if (nstages > 64) return gv_error(m, "pipeline: at most 64 stages");
  users_ix U;
  if (users_build(&U, body)) return gv_error(m, "pipeline: out of memory");
  /* constants used in s stay in s (a constant uses nothing: the other ops' stages stay) */
  for (int k = 0; k < U.nops; k++) {
    gv_op *op = U.ops[k];
    if (is_term(op) || U.stage[k] == s || op->nopnds || op->nregions) continue;
    for (int e = U.first[op->res[0]->id]; e >= 0; e = U.next[e])
      if (!is_term(U.ops[U.user[e]]) && U.stage[U.user[e]] == s) {
        gv_set_int(m, op, "stage", s);
        U.stage[k] = s;
        break;
      }
  }
  /* outputs: the original ones s defines (an input returned as is: the last stage) */
  int nr = 0, cap = ret->nopnds + 8;
  gv_value **ro = malloc(sizeof *ro * (size_t)cap);
  const char **rn = malloc(sizeof *rn * (size_t)cap);
  if (!ro || !rn) {
    free(ro), free(rn), users_free(&U);
    return gv_error(m, "pipeline: out of memory");
  }
  for (int i = 0; i < ret->nopnds; i++) {
    gv_value *v = ret->opnds[i];
    int64_t vs = v->def ? op_stage(v->def) : nstages - 1;
    if (vs != s) continue;
    ro[nr] = v;
    rn[nr++] = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
  }
  int rc = 0;
  char name[64];
  for (int idx = 0; idx < U.nops && !rc; idx++) {
    gv_op *op = U.ops[idx];
    if (is_term(op)) continue;
    int64_t a = U.stage[idx];
    for (int ri = 0; ri < op->nres && !rc; ri++) {
      gv_value *v = op->res[ri];
      snprintf(name, sizeof name, "pp.%d.%d", idx, ri);
      /* relayed (gv_pipe_opts.relay): a floating-point value read past the next stage goes stage by stage to the
       * last stage reading it (jmax), each stage between receiving it from the one before and returning it as is */
      int64_t jmax = -1;
      if (gv_pipe_opts.relay && gv_dtype_is_float(v->type.dtype) && (op->nopnds || op->nregions))
        for (int e = U.first[v->id]; e >= 0; e = U.next[e])
          if (!is_term(U.ops[U.user[e]]) && U.stage[U.user[e]] > jmax) jmax = U.stage[U.user[e]];
      const bool relay = jmax > a + 1;
      if (a == s) {
        uint64_t mask = 0;
        if (!op->nopnds && !op->nregions) continue; /* a constant: every stage that uses it has its copy */
        for (int e = U.first[v->id]; e >= 0; e = U.next[e])
          if (!is_term(U.ops[U.user[e]]) && U.stage[U.user[e]] != s) mask |= 1ull << U.stage[U.user[e]];
        if (relay) mask = (mask & ((2ull << s) - 1)) | 1ull << (s + 1); /* the next stage only (an earlier one: as before) */
        if (!mask) continue;
        if (!gv_type_is_static(&v->type)) { rc = gv_error_op(m, op, "pipeline: a value crossing stages has no static shape"); break; }
        if (push_out(m, &ro, &rn, &nr, &cap, v, name)) { rc = -1; break; }
        rc = add_io(m, io, false, name, -1, mask);
      } else {
        bool used = false;
        for (int e = U.first[v->id]; e >= 0 && !used; e = U.next[e])
          used = !is_term(U.ops[U.user[e]]) && U.stage[U.user[e]] == s;
        const bool through = relay && a < s && s < jmax; /* s relays it on */
        if (!used && !through) continue;
        if (a > s) { rc = gv_error_op(m, op, "pipeline: stage %d uses a value of the later stage %lld", s, (long long)a); break; }
        if (!gv_type_is_static(&v->type)) { rc = gv_error_op(m, op, "pipeline: a value crossing stages has no static shape"); break; }
        gv_value *arg = gv_func_add_arg(m, f, name, v->type, false);
        arg->id = -1; /* not a value of the index */
        for (int e = U.first[v->id]; e >= 0; e = U.next[e])
          if (!is_term(U.ops[U.user[e]]) && U.stage[U.user[e]] == s) replace_in(U.ops[U.user[e]], v, arg);
        rc = add_io(m, io, true, name, relay ? s - 1 : (int)a, 0);
        if (!rc && through) { /* returned as received, to the next stage (same name) */
          rc = push_out(m, &ro, &rn, &nr, &cap, arg, name) ? -1 : add_io(m, io, false, name, -1, 1ull << (s + 1));
        }
      }
    }
  }
  users_free(&U);
  if (!rc) {
    gv_op_set_operands(m, ret, nr, ro);
    const char **names = gv_alloc(m->arena, sizeof *names * (size_t)(nr ? nr : 1));
    memcpy(names, rn, sizeof *names * (size_t)nr);
    f->res_names = names;
    f->nres_names = nr;
  }
  free(ro);
  free(rn);
  if (rc) return rc;
  if (!nr) return gv_error(m, "pipeline: stage %d has no outputs (nothing later uses it)", s);
  /* drop the other stages' ops (users before definers: from the end) */
  for (gv_op *op = body->last, *prev; op; op = prev) {
    prev = op->prev;
    if (!is_term(op) && op_stage(op) != s) gv_op_unlink(op);
  }
  /* drop unused arguments (marked in one walk of what is left) */
  bool *used = calloc((size_t)body->nargs + 1, sizeof *used);
  if (!used) return gv_error(m, "pipeline: out of memory");
  for (const gv_op *u = body->first; u; u = u->next) mark_arg_uses(u, body, used);
  int k = 0;
  for (int a = 0; a < body->nargs; a++) {
    gv_value *v = body->args[a];
    if (!used[a]) continue;
    body->args[k] = v;
    v->index = k;
    f->arg_names[k] = f->arg_names[a];
    f->arg_is_param[k] = f->arg_is_param[a];
    f->param_data[k] = f->param_data[a];
    if (f->arg_is_state) f->arg_is_state[k] = f->arg_is_state[a];
    if (f->arg_is_frozen) f->arg_is_frozen[k] = f->arg_is_frozen[a];
    if (f->arg_sharding) f->arg_sharding[k] = f->arg_sharding[a];
    k++;
  }
  free(used);
  body->nargs = k;
  return 0;
}

/* gv_stage_train: stage s of a pipelined training step (docs/pipeline.md,
 * "Pipeline training"), after gv_stage_extract. One combined function per
 * stage: the last stage adds the loss (the loss pass over its first output);
 * an earlier stage keeps only its "pp." outputs, gets one input
 * "gin:pp.OP.RES" per floating-point one (the gradient the later stages send
 * back) and differentiates the seed sum_k reduce_sum(out_k * gin_k), whose
 * gradients are exactly the vector-Jacobian products. Autodiff then runs
 * with the floating-point "pp." inputs counted as parameters (the
 * attention chains fused first under --fused-attention by the pass
 * fuse-attention, as between the train list's loss and autodiff), so the
 * results are: loss (or "pp.seed"), grad:<param> per parameter, grad:pp.X
 * per received floating-point value, then (earlier stages) the "pp."
 * outputs again. An earlier stage's function is then split into a forward
 * and a backward entry with a stash between them (passes/stage_stash.c);
 * with galvc --pipeline-recompute the runtime runs it whole as the forward
 * entry (gin = 0: the sent values) and again as the backward entry (the
 * microbatch's saved inputs and the received gradients): recomputation at
 * stage boundaries. */
bool gv_stage_has_grads(const gv_module *m) {
  const gv_func *f = m->main;
  for (int i = 0; f->res_names && i < f->nres_names; i++)
    if (f->res_names[i] && !strncmp(f->res_names[i], "grad:", 5)) return true;
  return false;
}

int gv_stage_train(gv_module *m, int s, int nstages) {
  gv_func *f = m->main;
  gv_block *body = f->body;
  gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return gv_error(m, "pipeline: the function has no return");
  int nout = 0;
  gv_value **outs = NULL;
  gv_op **oseed = NULL; /* per value sent: its seed term's galv.mul (NULL: an integer, no term), whose operand 0 is the
                         * value after fuse-attention and autodiff (a pass replacing it, the attention chain's output
                         * by galv.attention's, updates the operand, not outs[]) */
  const char **onames = NULL;
  if (s == nstages - 1) {
    if (gv_pass_loss(m)) return -1;
    /* loss scaling: the last stage's seed is what the runtime hands it per microbatch, a plain input
     * "opt.loss_scale" (autodiff multiplies by it): the scale x the microbatch's share of the step's loss, so the
     * gradients have the one-program step's magnitudes (runtime/pipe.c keeps the scale, checks and skips) */
    if (gv_train_opts.loss_scale_mode && !gvb_loss_scale_arg(f)) {
      gv_value *l = ret->nopnds ? ret->opnds[0] : NULL;
      if (!l) return gv_error(m, "pipeline: the last stage returns no loss");
      gv_func_add_arg(m, f, "opt.loss_scale", gv_type_make(l->type.dtype, 0, NULL), false);
    }
  } else {
    outs = gv_alloc(m->arena, sizeof *outs * (size_t)(ret->nopnds + 1));
    oseed = gv_alloc(m->arena, sizeof *oseed * (size_t)(ret->nopnds + 1));
    onames = gv_alloc(m->arena, sizeof *onames * (size_t)(ret->nopnds + 1));
    gvb b = {m, ret, "pipeline/seed"};
    gv_value *seed = NULL;
    for (int i = 0; i < ret->nopnds; i++) {
      const char *rn = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
      gv_value *v = ret->opnds[i];
      if (!rn || strncmp(rn, "pp.", 3)) continue; /* an original output of an earlier stage: not part of the loss */
      outs[nout] = v, oseed[nout] = NULL;
      onames[nout++] = rn;
      if (!gv_dtype_is_float(v->type.dtype)) continue;
      char gname[80];
      snprintf(gname, sizeof gname, "gin:%s", rn);
      gv_value *gin = gv_func_add_arg(m, f, gv_strdup(m->arena, gname), v->type, false);
      gv_value *vg = gvb_bin(&b, GV_OP_MUL, v, gin);
      if (vg && vg->def && vg->def->nopnds == 2 && vg->def->opnds[0] == v) oseed[nout - 1] = vg->def;
      gv_op *op = vg ? gvb_new(&b, GV_OP_REDUCE_SUM, 1, (gv_value *[]){vg}) : NULL;
      if (!op) return -1;
      gv_set_int(m, op, "keepdims", 0);
      gv_value *r = gvb_fin(&b, op);
      if (r && r->type.dtype != GV_DT_F32) return gv_error(m, "pipeline training: %s is not f32 (only f32 values cross stages in training)", rn);
      seed = !r ? NULL : seed ? gvb_bin(&b, GV_OP_ADD, seed, r) : r;
      if (!seed) return -1;
    }
    if (!seed) return gv_error(m, "pipeline: stage %d sends no floating-point value to later stages: nothing to train", s);
    gv_op_set_operands(m, ret, 1, &seed);
    f->res_names = gv_alloc(m->arena, sizeof *f->res_names);
    f->res_names[0] = "pp.seed";
    f->nres_names = 1;
    f->res_updates = NULL;
  }
  bool *marked = calloc((size_t)body->nargs + 1, 1);
  if (!marked) return gv_error(m, "pipeline: out of memory");
  int nwrt = 0; /* what a gradient can reach: trained parameters, received floating-point values */
  for (int a = 0; a < body->nargs; a++) {
    if (!f->arg_is_param[a] && f->arg_names[a] && !strncmp(f->arg_names[a], "pp.", 3) &&
        gv_dtype_is_float(body->args[a]->type.dtype))
      marked[a] = f->arg_is_param[a] = true;
    nwrt += marked[a] || gv_arg_trains(f, a);
  }
  /* an earlier stage with nothing to train and nothing received (e.g. only frozen embeddings): forward only, its
   * function returns the seed without gradients; the runtime's backward of it only receives the gradients */
  /* loss scaling: only the last stage's seed is scaled; an earlier stage's gradients arrive scaled already */
  int lsm = gv_train_opts.loss_scale_mode;
  if (lsm) gv_train_opts.loss_scale_mode = s < nstages - 1 ? 0 : 2; /* the last stage: scaled by its input */
  /* --fused-attention (docs/fused-attention.md): the chains fused as the train pass list does between loss and
   * autodiff, with the received values counted as parameters (a functor operand one depends on keeps its chain) */
  int rc = s < nstages - 1 && !nwrt ? 0 : gv_pass_fuse_attention(m) ? -1 : gv_pass_autodiff(m);
  gv_train_opts.loss_scale_mode = lsm;
  for (int a = 0; a < body->nargs; a++)
    if (marked[a]) f->arg_is_param[a] = false;
  free(marked);
  /* --recompute inside the stage (docs/pipeline.md, "Recomputation per layer inside stages"): the layers' forward
   * ops cloned before their backward uses, so stage-stash stashes only what the clones read (the layers' inputs
   * under "all", all but the attention cores under "selective") and the backward entry recomputes the rest */
  if (!rc && (s == nstages - 1 || nwrt) && gv_train_opts.recompute && strcmp(gv_train_opts.recompute, "none"))
    rc = gv_pass_recompute(m);
  if (rc || !nout) return rc;
  for (int i = 0; i < nout; i++)
    if (oseed[i]) outs[i] = oseed[i]->opnds[0]; /* the value as the passes left it */
  int n0 = ret->nopnds;
  gv_value **all = gv_alloc(m->arena, sizeof *all * (size_t)(n0 + nout));
  const char **names = gv_alloc(m->arena, sizeof *names * (size_t)(n0 + nout));
  for (int i = 0; i < n0; i++) all[i] = ret->opnds[i], names[i] = f->res_names[i];
  for (int i = 0; i < nout; i++) all[n0 + i] = outs[i], names[n0 + i] = onames[i];
  gv_op_set_operands(m, ret, n0 + nout, all);
  f->res_names = names;
  f->nres_names = n0 + nout;
  return 0;
}
