/* propagate_sharding.c — `propagate-sharding` (docs/sharding.md).
 *
 * Gives every value of the function a sharding on the module's first mesh
 * (none: the pass does nothing). Pinned values come from the input IR
 * (`sharding` attributes, `galv.sharding` of arguments), from a sharding
 * file (gv_shard_opts.file) and from the strategy presets
 * (gv_shard_opts.strategy: dp, tp, zero, dp,tp, tp,sp, dp,tp,sp; sp:
 * sequence parallelism, the pins of sequence_parallel below, also a
 * file's `@sequence_parallel AXIS`). Propagation uses only the
 * op table's dimension mappings (ir/shard_rules.c): forward (results from
 * operands) and backward (unknown operands from results) sweeps until a
 * fixed point; still unknown arguments become replicated. Then each op is
 * materialised in program order: the factor assignment comes from its
 * results (contracting / gather factors from its operands), an operand
 * whose sharding differs from the one the op needs gets a `galv.reshard`
 * before the op, and a result the op cannot produce as recorded gets one
 * after it. Function results are replicated, except training results that
 * replace an argument (galv.updates), which keep that argument's sharding,
 * and a training pipeline stage's parameter gradients ("grad:P"), which
 * take their parameter's (stage_grad_sharding).
 */
#include "passes.h"
#include "sharding_roles.h"
#include "../runtime/galv_file.h"
#include "../ir/storage.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint8_t n[GV_MAX_FACTORS];
  uint8_t ax[GV_MAX_FACTORS][GV_MAX_MESH_AXES];
  unsigned used;
} fax;

typedef struct {
  gv_module *m;
  const gv_mesh *mesh;
  int nvals, capvals;
  gv_value **vals;
  const gv_sharding **sh; /* per value id */
  bool strict;            /* a tp preset: a head split that does not fit is an error */
  int sp_axis;            /* sequence parallelism over this mesh axis (tp,sp; a file's @sequence_parallel), -1 none */
  const gv_sharding **sp_base; /* per value id: a region value's tp sharding (before its sequence split), else NULL */
  int64_t ntp;            /* the tp axis size under a tp preset */
  gv_op **made;           /* reshards inserted before consumers, reused for the same target */
  int *made_next;         /* per made reshard: the next one made of the same value, -1 */
  int nmade, capmade;
  struct made_map {       /* value -> its first and last made reshard (open addressing) */
    const gv_value **key;
    int *first, *last;
    size_t cap, n;
  } mm;
  gv_subst *sub;          /* results replaced by their reshards, resolved as materialise reaches each use */
} prop;

static bool has_axis(const gv_mesh *mesh, const char *name) { return gv_mesh_axis(mesh, name, strlen(name)) >= 0; }

/* The axes of dim d of (side, i) assigned to its factors, merged into fa;
 * false when not expressible (indivisible, conflicting). */
static bool dim_to_factors(const gv_shard_rule *r, int side, int i, int d, const gv_sharding *s, fax *fa) {
  if (!s || d >= s->rank || !s->naxes[d]) return true;
  int nf = r->nf[side][i][d];
  if (!nf) return false;
  fax t = *fa;
  uint8_t cnt[GV_DIM_FACTORS] = {0}, lst[GV_DIM_FACTORS][GV_MAX_MESH_AXES];
  int j = 0;
  int64_t rem = r->size[r->f[side][i][d][0]];
  for (int k = 0; k < s->naxes[d]; k++) {
    int a = s->axes[d][k];
    int64_t sz = s->mesh->size[a];
    while (rem == 1 && j + 1 < nf) rem = r->size[r->f[side][i][d][++j]];
    if (rem % sz) return false;
    rem /= sz;
    lst[j][cnt[j]++] = (uint8_t)a;
  }
  for (int q = 0; q < nf; q++) {
    int f = r->f[side][i][d][q];
    if (!cnt[q]) continue;
    if (t.n[f]) {
      if (t.n[f] != cnt[q] || memcmp(t.ax[f], lst[q], cnt[q])) return false;
      continue;
    }
    for (int k = 0; k < cnt[q]; k++)
      if (t.used & (1u << lst[q][k])) return false;
    t.n[f] = cnt[q];
    memcpy(t.ax[f], lst[q], cnt[q]);
    for (int k = 0; k < cnt[q]; k++) t.used |= 1u << lst[q][k];
  }
  *fa = t;
  return true;
}

/* The axes of dim d of (side, i) under fa (into ax, count returned); false
 * when the split factors do not form one contiguous block of the dim or
 * break mesh order. A dim made of factors (major first) f1, f2, ... is
 * split in contiguous blocks only when every factor before the last split
 * one is split completely: [B,T,3*H*Dh] -> [B,T,3,H,Dh] with H split over
 * tp (3 unsplit) is rank r holding q, k and v of its heads, which is no
 * block of the 3*H*Dh dim (the ViT fused-qkv bug: it was taken for one). */
static bool dim_axes(const prop *P, const gv_shard_rule *r, int side, int i, int d, const fax *fa, uint8_t *ax, uint8_t *nax) {
  bool open = true, ok = true;
  uint8_t n = 0;
  for (int q = 0; q < r->nf[side][i][d]; q++) {
    int f = r->f[side][i][d][q];
    int64_t p = 1;
    for (int k = 0; k < fa->n[f]; k++) {
      if (!open || (n && ax[n - 1] > fa->ax[f][k]) || n >= GV_MAX_MESH_AXES) {
        ok = false;
        break;
      }
      ax[n++] = fa->ax[f][k];
      p *= P->mesh->size[fa->ax[f][k]];
    }
    if (p < r->size[f]) open = false;
  }
  *nax = n;
  return ok;
}

/* Drops factor assignments that some operand or result of the op cannot
 * express as a block split (dim_axes false): that factor then stays
 * unsplit in this op, and reshards before / after it convert (an
 * all_gather of the operand, a shard_slice of the result), never a wrong
 * split. */
static void drop_inexpressible(const prop *P, const gv_shard_rule *r, fax *fa) {
  for (bool again = true; again;) {
    again = false;
    for (int side = 0; side < 2; side++)
      for (int i = 0; i < r->nvals[side] && i < GV_SHARD_MAX_VALUES; i++)
        for (int d = 0; d < r->rank[side][i]; d++) {
          uint8_t ax[GV_MAX_MESH_AXES], n;
          if (dim_axes(P, r, side, i, d, fa, ax, &n)) continue;
          for (int q = 0; q < r->nf[side][i][d]; q++) {
            int f = r->f[side][i][d][q];
            for (int k = 0; k < fa->n[f]; k++) fa->used &= ~(1u << fa->ax[f][k]);
            if (fa->n[f]) again = true;
            fa->n[f] = 0;
          }
        }
  }
}

/* The sharding of (side, i) under fa; dims whose factors do not form a
 * contiguous block (or break mesh order) stay unsharded and set *lossy. */
static gv_sharding *factors_to_sharding(prop *P, const gv_shard_rule *r, int side, int i, const fax *fa, bool *lossy) {
  gv_sharding *s = gv_sharding_new(P->m, P->mesh, r->rank[side][i]);
  for (int d = 0; d < s->rank; d++) {
    uint8_t n = 0, ax[GV_MAX_MESH_AXES];
    bool ok = dim_axes(P, r, side, i, d, fa, ax, &n);
    if (!ok) {
      if (lossy) *lossy = true;
      continue;
    }
    s->naxes[d] = n;
    memcpy(s->axes[d], ax, n);
  }
  return s;
}

static unsigned reduce_axes(const gv_shard_rule *r, const fax *fa) {
  unsigned m = 0;
  for (int f = 0; f < r->nfactors; f++)
    if (r->kind[f] != GV_FACTOR_PASS)
      for (int k = 0; k < fa->n[f]; k++) m |= 1u << fa->ax[f][k];
  return m;
}

static const gv_sharding *replicated(prop *P, const gv_value *v) {
  return gv_sharding_new(P->m, P->mesh, v->type.rank);
}

static const char *opname(const gv_op *op) { return gv_ops[op->code].name; }

static bool is_param(const gv_module *m, const gv_value *v);

/* Operands in the order their shardings count: computed values first, then
 * data arguments, then parameters and state (ZeRO's split weights yield to
 * the activations' batch split). */
static int operand_order(const prop *P, const gv_op *op, int *ord) {
  int n = 0;
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < op->nopnds && i < GV_SHARD_MAX_VALUES; i++) {
      const gv_value *v = op->opnds[i];
      const gv_func *f = P->m->main;
      bool wt = !v->def && (is_param(P->m, v) || (f->arg_is_state && v->block == f->body && f->arg_is_state[v->index]));
      int cls = v->def ? 0 : wt ? 2 : 1;
      if (cls == pass) ord[n++] = i;
    }
  return n;
}

static bool fused_split(const gv_op *u, const gv_value *v, int64_t tp);

/* Forward: every operand known (or an unknown function argument, which
 * then follows) -> results. Returns 1 when something changed, -1 on error. */
static int forward(prop *P, gv_op *op) {
  bool need = false;
  for (int i = 0; i < op->nres; i++) need |= !P->sh[op->res[i]->id];
  if (!need) return 0;
  int known = 0;
  for (int i = 0; i < op->nopnds; i++) {
    if (P->sh[op->opnds[i]->id]) known++;
    else if (op->opnds[i]->def) return 0;
  }
  if (op->nopnds && !known) return 0;
  if (op->code == GV_OP_CROSS_ENTROPY_GRAD && op->nopnds == 3 && P->sh[op->opnds[1]->id] && !P->sh[op->res[0]->id]) {
    /* d logits: split like the logits (vocab-parallel cross entropy) */
    gv_sharding *s = gv_sharding_new(P->m, P->mesh, op->res[0]->type.rank);
    *s = *P->sh[op->opnds[1]->id];
    s->partial = 0;
    P->sh[op->res[0]->id] = s;
  }
  gv_shard_rule r;
  if (gv_shard_rule_of(op, &r)) {
    for (int i = 0; i < op->nres; i++)
      if (!P->sh[op->res[i]->id]) P->sh[op->res[i]->id] = replicated(P, op->res[i]);
    for (int i = 0; i < op->nopnds; i++)
      if (!P->sh[op->opnds[i]->id]) P->sh[op->opnds[i]->id] = replicated(P, op->opnds[i]);
    return 1;
  }
  fax fa;
  memset(&fa, 0, sizeof fa);
  unsigned part = 0;
  bool allpart = r.linear && op->nopnds > 0;
  bool first = true;
  int ord[GV_SHARD_MAX_VALUES], nord = operand_order(P, op, ord);
  if (known < op->nopnds) allpart = false;
  for (int oi = 0; oi < nord; oi++) {
    int i = ord[oi];
    const gv_sharding *s = P->sh[op->opnds[i]->id];
    if (!s) continue;
    if (first) part = s->partial, first = false;
    if (s->partial != part || !s->partial) allpart = false;
    for (int d = 0; d < s->rank; d++) {
      if (!dim_to_factors(&r, 0, i, d, s, &fa) && P->strict && op->code == GV_OP_RESHAPE &&
          !fused_split(op, op->opnds[i], P->ntp)) {
        const gv_type *x = &op->opnds[i]->type;
        char b[128];
        gv_type_str(&op->res[0]->type, b, sizeof b);
        return gv_error_op(P->m, op,
                           "sharding: dim %d (size %lld) split %lld ways does not fit the reshape to %s; "
                           "the tensor-parallel degree must divide the head count",
                           d, (long long)x->dims[d], (long long)gv_sharding_dim_split(s, d), b);
      }
    }
  }
  for (int i = 0; i < op->nres; i++) {
    if (P->sh[op->res[i]->id]) continue;
    gv_sharding *s = factors_to_sharding(P, &r, 1, i, &fa, NULL);
    s->partial = reduce_axes(&r, &fa) | (allpart ? part : 0);
    P->sh[op->res[i]->id] = s;
  }
  for (int i = 0; i < op->nopnds; i++)
    if (!P->sh[op->opnds[i]->id]) P->sh[op->opnds[i]->id] = factors_to_sharding(P, &r, 0, i, &fa, NULL);
  return 1;
}

/* Backward: every result known -> unknown operands (no partial). */
static int backward(prop *P, gv_op *op) {
  bool need = false;
  for (int i = 0; i < op->nopnds; i++) need |= !P->sh[op->opnds[i]->id];
  if (!need) return 0;
  for (int i = 0; i < op->nres; i++)
    if (!P->sh[op->res[i]->id]) return 0;
  gv_shard_rule r;
  bool none = gv_shard_rule_of(op, &r) != 0;
  /* an op with no rule (cross_entropy, ...) gathers whatever it gets: it
   * does not make its operands replicated (that would undo the batch split
   * of everything before the loss); they come from elsewhere or default.
   * The return of an inference function still asks for replicated results
   * (outputs are whole); a training step's results are the loss and
   * updates, which take their arguments' shardings when materialised. A
   * training pipeline stage's results (the loss, parameter gradients, the
   * gradients sent back, grad:pp.X, and the values sent on, pp.X) are whole
   * too, but that is the runtime's need, met by the reshards materialise
   * puts at the return; asked for here, it would make a value replicated
   * before forward reaches it (a tied head's transposed weight is reached
   * only in a later sweep), and the sent-back gradient d x = d logits . W
   * then needs the logits' gradient all-gathered ([B, S, V] where gathering
   * d x moves [B, S, h]). */
  if (none && (op->code != GV_OP_RETURN || P->m->main->res_updates || gv_func_stage_kind(P->m->main) == 2)) return 0;
  fax fa;
  memset(&fa, 0, sizeof fa);
  for (int i = 0; !none && i < op->nres; i++) {
    const gv_sharding *s = P->sh[op->res[i]->id];
    for (int d = 0; d < s->rank; d++) dim_to_factors(&r, 1, i, d, s, &fa);
  }
  int ord[GV_SHARD_MAX_VALUES], nord = none ? 0 : operand_order(P, op, ord);
  for (int oi = 0; oi < nord; oi++) {
    const gv_sharding *s = P->sh[op->opnds[ord[oi]]->id];
    for (int d = 0; s && d < s->rank; d++) dim_to_factors(&r, 0, ord[oi], d, s, &fa);
  }
  for (int i = 0; i < op->nopnds; i++) {
    gv_value *v = op->opnds[i];
    if (P->sh[v->id]) continue;
    P->sh[v->id] = none ? replicated(P, v) : factors_to_sharding(P, &r, 0, i, &fa, NULL);
  }
  return 1;
}

/* The slot of v in the made map (grown to twice its entries). Out of memory exits. */
static size_t made_slot(struct made_map *M, const gv_value *v) {
  if (2 * (M->n + 1) > M->cap) {
    struct made_map g = {.cap = M->cap ? 2 * M->cap : 256};
    g.key = calloc(g.cap, sizeof *g.key);
    g.first = malloc(g.cap * sizeof *g.first);
    g.last = malloc(g.cap * sizeof *g.last);
    if (!g.key || !g.first || !g.last) {
      fprintf(stderr, "%s: error: propagate-sharding: out of memory\n", gv_progname);
      exit(1);
    }
    for (size_t i = 0; i < M->cap; i++)
      if (M->key[i]) {
        size_t k = made_slot(&g, M->key[i]);
        g.key[k] = M->key[i], g.first[k] = M->first[i], g.last[k] = M->last[i], g.n++;
      }
    free(M->key);
    free(M->first);
    free(M->last);
    *M = g;
  }
  size_t i = (size_t)(((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull) & (M->cap - 1);
  while (M->key[i] && M->key[i] != v) i = (i + 1) & (M->cap - 1);
  return i;
}

/* A reshard of v to target before pos (after: after pos). One made before a
 * consumer is reused by the next consumer wanting the same target (the
 * reshards made of v, in the order made, through the made map: not a scan
 * of every reshard made, which was quadratic). */
static gv_value *reshard(prop *P, gv_value *v, const gv_sharding *target, gv_op *pos, bool after) {
  if (!after && P->mm.cap) {
    size_t k = made_slot(&P->mm, v);
    for (int i = P->mm.key[k] ? P->mm.first[k] : -1; i >= 0; i = P->made_next[i])
      if (P->made[i]->opnds[0] == v && gv_sharding_equal(gv_op_sharding(P->made[i], 0), target)) return P->made[i]->res[0];
  }
  gv_op *o = gv_op_new(P->m, GV_OP_RESHARD, 1, &v, 1);
  o->res[0]->type = v->type;
  gv_op_set_loc(P->m, o, pos->loc, NULL);
  const gv_sharding *t[1] = {target};
  gv_set_shardings(P->m, o, t);
  if (after) {
    if (pos->next) gv_insert_before(pos->next, o);
    else gv_block_append(pos->parent, o);
  } else {
    gv_insert_before(pos, o);
    if (P->nmade == P->capmade) {
      int cap = P->capmade ? 2 * P->capmade : 64;
      gv_op **nm = gv_alloc(P->m->arena, (size_t)cap * sizeof *nm);
      int *nn = gv_alloc(P->m->arena, (size_t)cap * sizeof *nn);
      if (P->nmade) memcpy(nm, P->made, (size_t)P->nmade * sizeof *nm), memcpy(nn, P->made_next, (size_t)P->nmade * sizeof *nn);
      P->made = nm;
      P->made_next = nn;
      P->capmade = cap;
    }
    size_t k = made_slot(&P->mm, v);
    if (!P->mm.key[k]) P->mm.key[k] = v, P->mm.first[k] = P->nmade, P->mm.n++;
    else P->made_next[P->mm.last[k]] = P->nmade;
    P->mm.last[k] = P->nmade;
    P->made_next[P->nmade] = -1;
    P->made[P->nmade++] = o;
  }
  return o->res[0];
}

/* Reshards after op where its results' recorded shardings differ from the
 * actual ones (act). */
static void reshard_results(prop *P, gv_op *op, const gv_sharding **act) {
  gv_op *last = op;
  for (int i = 0; i < op->nres; i++) {
    gv_value *v = op->res[i];
    const gv_sharding *want = P->sh[v->id];
    if (gv_sharding_equal(act[i], want)) continue;
    gv_value *nv = reshard(P, v, want, last, true);
    last = nv->def;
    gv_subst_add(P->sub, v, nv, nv->def); /* every later use reads the reshard; the reshard reads v */
  }
}

/* cross_entropy(logits, labels) / cross_entropy_grad(dloss, logits,
 * labels): the logits keep their splits (vocab and rows; pending sums
 * completed), the labels are split like the logits' rows, dloss is
 * replicated; the loss is replicated, d logits split like the logits.
 * spmd-partition lowers it to Megatron's vocab-parallel form. */
static int materialise_ce(prop *P, gv_op *op) {
  bool grad = op->code == GV_OP_CROSS_ENTROPY_GRAD;
  if (op->nopnds != (grad ? 3 : 2) || op->nres != 1) return gv_error_op(P->m, op, "sharding: malformed galv.%s", opname(op));
  gv_value *x = op->opnds[grad];
  const gv_sharding *have = gv_value_sharding(P->m, x);
  if (!have) have = P->sh[x->id];
  gv_sharding *xs = gv_sharding_new(P->m, P->mesh, x->type.rank);
  if (have && have->rank == xs->rank) *xs = *have;
  xs->partial = 0;
  for (int i = 0; i < op->nopnds; i++) {
    gv_value *v = op->opnds[i];
    gv_sharding *want = gv_sharding_new(P->m, P->mesh, v->type.rank);
    if (v == x) want = xs;
    else if (i == (grad ? 2 : 1))
      for (int d = 0; d < v->type.rank && d + 1 < xs->rank; d++) {
        want->naxes[d] = xs->naxes[d];
        memcpy(want->axes[d], xs->axes[d], sizeof want->axes[d]);
      }
    const gv_sharding *h = gv_value_sharding(P->m, v);
    if (!h) h = P->sh[v->id];
    if (!gv_sharding_equal(h, want)) op->opnds[i] = reshard(P, v, want, op, false);
  }
  const gv_sharding **act = gv_alloc(P->m->arena, sizeof *act);
  act[0] = grad ? xs : gv_sharding_new(P->m, P->mesh, op->res[0]->type.rank);
  gv_set_shardings(P->m, op, act);
  reshard_results(P, op, act);
  return 0;
}

/* Required shardings of op's operands and its actual result shardings. */
/* ZeRO-2 (gv_pipe_opts.zero2, a training stage program): the mesh axes of more than one rank that no parameter's
 * sharding uses (as galvc's galv_pipe_zero_axes), else 0 */
static unsigned zero2_axes(const prop *P) {
  const gv_func *f = P->m->main;
  if (!gv_pipe_opts.zero2 || gv_func_stage_kind(f) != 2 || !P->mesh) return 0;
  unsigned used = 0, all = 0;
  for (int a = 0; a < f->body->nargs; a++) {
    const gv_sharding *sh = f->arg_is_param[a] ? P->sh[f->body->args[a]->id] : NULL;
    for (int d = 0; sh && d < sh->rank; d++)
      for (int x = 0; x < sh->naxes[d]; x++) used |= 1u << sh->axes[d][x];
  }
  for (int x = 0; x < P->mesh->naxes; x++)
    if (P->mesh->size[x] > 1) all |= 1u << x;
  return all & ~used;
}

/* result i is the gradient of a parameter of f ("grad:P") not named in gv_pipe_opts.zero2_whole; with
 * gv_pipe_opts.zero2_shared one named there (other stages hold it too) as well, left pending whole in its dims:
 * runtime/pipe.c all-reduces its step sum over the ranks first, then sums it across the stages (no per-microbatch
 * reduction, e.g. a tied embedding's input gradient all-gathered over dp) */
static bool zero2_grad(const gv_func *f, int i) {
  const char *n = i < f->nres_names && f->res_names ? f->res_names[i] : NULL;
  if (!n || strncmp(n, "grad:", 5)) return false;
  for (int k = 0; !gv_pipe_opts.zero2_shared && k < gv_pipe_opts.nzero2_whole; k++)
    if (!strcmp(gv_pipe_opts.zero2_whole[k], n + 5)) return false;
  for (int a = 0; a < f->body->nargs; a++)
    if (f->arg_is_param[a] && f->arg_names && f->arg_names[a] && !strcmp(f->arg_names[a], n + 5)) return true;
  return false;
}

/* A training stage's parameter gradient (result i "grad:P", P a parameter argument of f not named in
 * gv_pipe_opts.zero2_whole: a parameter other stages hold too, whose gradient the runtime sums whole across them,
 * unless gv_pipe_opts.shared_split names it too: every holding stage splits it alike, summed block by block):
 * the sharding it is returned in, P's own. runtime/pipe.c adds it to this rank's block of the sums as it is, so no
 * rank holds, nor gathers, the whole gradient of a split parameter (docs/pipeline.md, "Stages of more than one
 * device"). NULL: not such a result (returned replicated). */
static const gv_sharding *stage_grad_sharding(const prop *P, const gv_func *f, int i, int kind) {
  const char *n = i < f->nres_names && f->res_names ? f->res_names[i] : NULL;
  if (kind != 2 || !n || strncmp(n, "grad:", 5) || !strncmp(n, "grad:pp.", 8)) return NULL;
  bool split = false;
  for (int k = 0; k < gv_pipe_opts.nshared_split && !split; k++) split = !strcmp(gv_pipe_opts.shared_split[k], n + 5);
  for (int k = 0; k < gv_pipe_opts.nzero2_whole && !split; k++)
    if (!strcmp(gv_pipe_opts.zero2_whole[k], n + 5)) return NULL;
  for (int a = 0; a < f->body->nargs; a++)
    if (f->arg_is_param[a] && f->arg_names && f->arg_names[a] && !strcmp(f->arg_names[a], n + 5)) {
      const gv_sharding *sh = P->sh[f->body->args[a]->id];
      return sh && !sh->partial ? sh : NULL;
    }
  return NULL;
}

/* A pipeline stage's crossing result kept split over the batch (docs/pipeline.md, "Cross-mesh transfers"): result i
 * named in the return's `batch_split` (strs: "pp.X" sent to a later stage, "grad:pp.X" sent back) is returned with
 * dim 0 split over the return's `batch_axes` (mesh axis names), or, without `batch_axes`, in its own sharding when
 * that splits dim 0 (no pending sum; another dim's split, as sequence parallelism splits the tokens, gathered): the
 * sender keeps its rows and the cross-stage transfer moves them rank to rank, no gather over dim 0's axes. NULL: not such a result, or its sharding is not a batch split (replicated). */
static const gv_sharding *batch_split_sharding(prop *P, const gv_op *ret, const gv_func *f, int i, const gv_value *v) {
  const gv_attr *names = gv_get_attr(ret, "batch_split");
  const char *n = i < f->nres_names && f->res_names ? f->res_names[i] : NULL;
  if (!names || names->kind != GV_ATTR_STRS || !n || v->type.rank < 1) return NULL;
  bool listed = false;
  for (int k = 0; k < names->u.strs.n && !listed; k++) listed = !strcmp(names->u.strs.v[k], n);
  if (!listed) return NULL;
  const gv_attr *axes = gv_get_attr(ret, "batch_axes");
  if (axes && axes->kind == GV_ATTR_STRS) {
    gv_sharding *w = gv_sharding_new(P->m, P->mesh, v->type.rank);
    int64_t p = 1;
    for (int k = 0; k < axes->u.strs.n; k++) {
      int a = gv_mesh_axis(P->mesh, axes->u.strs.v[k], strlen(axes->u.strs.v[k]));
      if (a < 0 || w->naxes[0] >= GV_MAX_MESH_AXES) return NULL;
      w->axes[0][w->naxes[0]++] = (uint8_t)a;
      p *= P->mesh->size[a];
    }
    return w->naxes[0] && v->type.dims[0] > 0 && v->type.dims[0] % p == 0 ? w : NULL;
  }
  const gv_sharding *have = gv_value_sharding(P->m, v);
  if (!have || have->partial || have->rank != v->type.rank || !have->naxes[0]) return NULL;
  bool other = false;
  for (int d = 1; d < have->rank; d++) other |= have->naxes[d] != 0;
  if (!other) return have;
  /* split on other dims too (sequence parallelism's split of the tokens over tp): those gathered, dim 0's kept */
  gv_sharding *w = gv_sharding_new(P->m, P->mesh, v->type.rank);
  w->naxes[0] = have->naxes[0];
  memcpy(w->axes[0], have->axes[0], sizeof w->axes[0]);
  return w;
}

/* v's elements on a device under s (its dims divided by their splits; pending sums count whole) */
static int64_t local_numel(const gv_value *v, const gv_sharding *s) {
  int64_t n = gv_type_numel(&v->type);
  for (int d = 0; s && n > 0 && d < s->rank && d < v->type.rank; d++) n /= gv_sharding_dim_split(s, d);
  return n;
}

static int materialise(prop *P, gv_op *op) {
  const gv_func *f = P->m->main;
  if (op->code == GV_OP_CROSS_ENTROPY || op->code == GV_OP_CROSS_ENTROPY_GRAD) return materialise_ce(P, op);
  /* a reshard in the input (the planner's ZeRO gradient pins) keeps its
   * operand's sharding and its own: spmd-partition lowers the pair */
  if (op->code == GV_OP_RESHARD) return 0;
  if (op->code == GV_OP_RETURN) {
    const unsigned z2 = zero2_axes(P);
    const int kind = gv_func_stage_kind(f);
    for (int i = 0; i < op->nopnds; i++) {
      gv_value *v = op->opnds[i];
      int upd = f->res_updates && i < f->nres_names ? f->res_updates[i] : -1;
      const gv_sharding *gs = upd < 0 ? stage_grad_sharding(P, f, i, kind) : NULL;
      if (!gs && upd < 0) gs = batch_split_sharding(P, op, f, i, v);
      const gv_sharding *want = upd >= 0 && f->arg_sharding && f->arg_sharding[upd] ? f->arg_sharding[upd] : gs ? gs : replicated(P, v);
      const gv_sharding *have = gv_value_sharding(P->m, v);
      if (z2 && have && (have->partial & z2) && zero2_grad(f, i)) { /* ZeRO-2: the sum over z2 left pending */
        gv_sharding *w = gv_sharding_new(P->m, P->mesh, v->type.rank);
        if (gs && gs->rank == w->rank) /* split as its parameter (as without ZeRO-2): this rank's block, pending */
          memcpy(w->naxes, gs->naxes, sizeof w->naxes), memcpy(w->axes, gs->axes, sizeof w->axes);
        w->partial = have->partial & z2;
        want = w;
      }
      if (gv_sharding_equal(have, want)) continue;
      op->opnds[i] = reshard(P, v, want, op, false);
      /* an updated parameter gathered after a ZeRO-1/2 update: the update's collective (its layer's optimizer row) */
      if (upd >= 0 && v->def && op->opnds[i]->def && op->opnds[i]->def->loc && !strcmp(op->opnds[i]->def->loc, op->loc ? op->loc : ""))
        gv_op_set_loc(P->m, op->opnds[i]->def, v->def->loc, NULL);
    }
    return 0;
  }
  gv_shard_rule r;
  bool none = gv_shard_rule_of(op, &r) != 0;
  fax fa;
  memset(&fa, 0, sizeof fa);
  unsigned rpart = 0;
  for (int i = 0; !none && i < op->nres; i++) {
    const gv_sharding *s = P->sh[op->res[i]->id];
    rpart |= s->partial;
    for (int d = 0; d < s->rank; d++) dim_to_factors(&r, 1, i, d, s, &fa);
  }
  /* contracting / gather factors: from the operands, the first that splits them */
  int ord[GV_SHARD_MAX_VALUES], nord = none ? 0 : operand_order(P, op, ord);
  for (int oi = 0; oi < nord; oi++) {
    int i = ord[oi];
    const gv_sharding *s = gv_value_sharding(P->m, op->opnds[i]);
    /* a dot reading a sequence-parallel value contracts it as tp did (whole:
     * the operand is all-gathered, one gather shared with the forward's), not
     * over the sequence split (a pending sum of a weight gradient); so does
     * any other op whose result is more than half its operand on a device (an embedding's
     * gradient, gather_grad, scattering the tokens into the table: one
     * all-gather of the tokens' gradient moves less than the all-reduce of the
     * table's pending sum); a small result (a norm's weight gradient) is
     * summed over the split */
    const gv_value *ov = op->opnds[i];
    if (P->sp_base && ov->id >= 0 && ov->id < P->nvals && P->vals[ov->id] == ov && P->sp_base[ov->id] &&
        (op->code == GV_OP_DOT ||
         (op->nres == 1 && 2 * local_numel(op->res[0], P->sh[op->res[0]->id]) > local_numel(ov, P->sp_base[ov->id]))))
      s = P->sp_base[ov->id];
    for (int d = 0; s && d < s->rank && d < r.rank[0][i]; d++) {
      bool only_red = r.nf[0][i][d] > 0;
      for (int q = 0; q < r.nf[0][i][d]; q++) only_red &= r.kind[r.f[0][i][d][q]] != GV_FACTOR_PASS;
      if (only_red) dim_to_factors(&r, 0, i, d, s, &fa);
    }
  }
  if (!none) drop_inexpressible(P, &r, &fa);
  unsigned red = none ? 0 : reduce_axes(&r, &fa);
  unsigned through = (!none && r.linear) ? rpart & ~red : 0;
  for (int i = 0; i < op->nopnds; i++) {
    gv_value *v = op->opnds[i];
    gv_sharding *want = none ? gv_sharding_new(P->m, P->mesh, v->type.rank) : factors_to_sharding(P, &r, 0, i, &fa, NULL);
    if (through && gv_dtype_is_float(v->type.dtype)) want->partial = through;
    const gv_sharding *have = gv_value_sharding(P->m, v);
    if (!have) have = P->sh[v->id];
    if (!gv_sharding_equal(have, want)) op->opnds[i] = reshard(P, v, want, op, false);
  }
  const gv_sharding **act = gv_alloc(P->m->arena, (size_t)(op->nres ? op->nres : 1) * sizeof *act);
  for (int i = 0; i < op->nres; i++) {
    gv_value *v = op->res[i];
    gv_sharding *a = none ? gv_sharding_new(P->m, P->mesh, v->type.rank) : factors_to_sharding(P, &r, 1, i, &fa, NULL);
    a->partial = red | through;
    act[i] = a;
  }
  gv_set_shardings(P->m, op, act);
  reshard_results(P, op, act);
  return 0;
}

/* ---------------------------------------------------------------- pins */

static gv_sharding *split_dim(prop *P, const gv_value *v, int d, const char *axis) {
  int a = gv_mesh_axis(P->mesh, axis, strlen(axis));
  if (a < 0 || d < 0 || d >= v->type.rank || v->type.dims[d] <= 0 || v->type.dims[d] % P->mesh->size[a]) return NULL;
  gv_sharding *s = gv_sharding_new(P->m, P->mesh, v->type.rank);
  s->naxes[d] = 1;
  s->axes[d][0] = (uint8_t)a;
  return s;
}

static void pin(prop *P, gv_value *v, const gv_sharding *s) {
  if (!s) return;
  const gv_sharding *old = P->sh[v->id];
  if (!old) {
    P->sh[v->id] = s;
    return;
  }
  /* combine: add s's split axes to dims where old has none */
  gv_sharding *c = gv_sharding_new(P->m, P->mesh, s->rank);
  *c = *old;
  unsigned used = 0;
  for (int d = 0; d < c->rank; d++)
    for (int k = 0; k < c->naxes[d]; k++) used |= 1u << c->axes[d][k];
  for (int d = 0; d < c->rank; d++)
    if (!c->naxes[d] && s->naxes[d] && !(used & (1u << s->axes[d][0]))) {
      c->naxes[d] = 1;
      c->axes[d][0] = s->axes[d][0];
    }
  P->sh[v->id] = c;
}

/* v, or the value v casts between float types (a chain of them): a parameter read through casts (a model
 * stored in 16 bits: its fp32 master cast to the stored type and the model's own cast back,
 * passes/master_weights.c) plays the parameter's role, and its pins go on the parameter itself */
static gv_value *cast_root(const gv_value *v) {
  while (v && v->def && v->def->code == GV_OP_CAST && v->def->nopnds == 1 && gv_dtype_is_float(v->type.dtype) &&
         gv_dtype_is_float(v->def->opnds[0]->type.dtype))
    v = v->def->opnds[0];
  return (gv_value *)v;
}

static bool is_param(const gv_module *m, const gv_value *v) {
  const gv_func *f = m->main;
  v = cast_root(v);
  return v && !v->def && v->block == f->body && f->arg_is_param && f->arg_is_param[v->index];
}

static bool is_activation(const gv_op *op) {
  switch (op->code) {
  case GV_OP_GELU: case GV_OP_RELU: case GV_OP_SILU: case GV_OP_TANH: case GV_OP_SIGMOID: case GV_OP_ERF: return true;
  default: return false;
  }
}

/* A reshape of v whose last dim (the column split) becomes several dims,
 * the major one not divisible by tp while others follow it: a fused
 * projection [.., K*H*Dh] -> [.., K, H, Dh] (ViT's qkv, K = 3). A column
 * split of that dim is no head split (each rank would hold parts of q and
 * k), so the dot is not made column-parallel: it stays replicated and the
 * heads are split after the reshape (shard_slice, no communication). A
 * plain [.., H*Dh] -> [.., H, Dh] with tp not dividing H stays column (the
 * strict tp preset then reports the head count). */
static bool fused_split(const gv_op *u, const gv_value *v, int64_t tp) {
  gv_shard_rule r;
  if (tp <= 1 || gv_shard_rule_of(u, &r) || v->type.rank < 1) return false;
  int d = v->type.rank - 1;
  if (r.nf[0][0][d] < 3) return false;
  return r.size[r.f[0][0][d][0]] % tp != 0;
}

/* The users of each value among the top-level ops of one block, in program
 * order (op, then operand index): the role questions look at a value's
 * users, which a scan of the rest of the block found in time linear in the
 * block per question (quadratic over a model). Keyed by value pointer. */
struct gv_users {
  const gv_block *b;
  size_t cap;          /* slots, a power of two */
  const gv_value **key; /* per slot */
  int *head, *tail;    /* per slot: its first and last use (entries) */
  struct use_entry {
    const gv_op *op;
    int opnd, next;
  } *e;
  int n;
};

static size_t users_slot(const gv_users *U, const gv_value *v) {
  size_t i = (size_t)(((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull) & (U->cap - 1);
  while (U->key[i] && U->key[i] != v) i = (i + 1) & (U->cap - 1);
  return i;
}

gv_users *gv_users_new(const gv_block *b) {
  int n = 0;
  for (const gv_op *op = b->first; op; op = op->next) n += op->nopnds;
  gv_users *U = calloc(1, sizeof *U);
  if (!U) return NULL;
  U->b = b;
  U->cap = 16;
  while (U->cap < 2 * (size_t)n + 2) U->cap *= 2;
  U->key = calloc(U->cap, sizeof *U->key);
  U->head = malloc(U->cap * sizeof *U->head);
  U->tail = malloc(U->cap * sizeof *U->tail);
  U->e = malloc(((size_t)n + 1) * sizeof *U->e);
  if (!U->key || !U->head || !U->tail || !U->e) {
    gv_users_free(U);
    return NULL;
  }
  for (const gv_op *op = b->first; op; op = op->next)
    for (int i = 0; i < op->nopnds; i++) {
      size_t k = users_slot(U, op->opnds[i]);
      if (!U->key[k]) U->key[k] = op->opnds[i], U->head[k] = -1;
      U->e[U->n] = (struct use_entry){op, i, -1};
      if (U->head[k] < 0) U->head[k] = U->n;
      else U->e[U->tail[k]].next = U->n;
      U->tail[k] = U->n++;
    }
  return U;
}

void gv_users_free(gv_users *U) {
  if (!U) return;
  free(U->key);
  free(U->head);
  free(U->tail);
  free(U->e);
  free(U);
}

/* The first use of v (an entry index), -1 if none. */
static int users_first(const gv_users *U, const gv_value *v) {
  size_t k = users_slot(U, v);
  return U->key[k] ? U->head[k] : -1;
}

/* An embedding gradient (gather_grad) materialised whole whose every use is
 * a reshard splitting its table dim (axis) the same way — a tp-split
 * table's gradient sliced to the rank's rows for its optimizer, for a
 * pipeline stage's return or for the sum with a tied head's vocab-parallel
 * gradient — is computed split instead (the rule's result-only factor):
 * each rank scatter-adds only the ids in its rows (spmd-partition masks dy
 * and shifts the ids), no whole table and no slice of it, as Megatron's
 * vocab-parallel embedding. Its other dims and pending sums stay; a
 * reshard that does more than the slice (completing a sum) stays, from
 * the rows. Uses that want it whole (a gradient returned whole) keep it. */
static int gather_grad_rows(prop *P, gv_func *f) {
  /* the uses of every candidate (one gather_grad per microbatch) read from one users index and the reshards dropped
   * by one deferred replacement: a scan of the rest of the block per candidate and a replacement over the whole
   * block per reshard were quadratic in the microbatches (a 3B Llama at 256: 47 % of a realisation) */
  gv_users *U = NULL;
  gv_op **drop = NULL; /* the reshards that now only slice to the rows the gradient has */
  int ndrop = 0, cdrop = 0;
  for (gv_op *g = f->body->first; g; g = g->next) {
    if (g->code != GV_OP_GATHER_GRAD || g->nres != 1) continue;
    gv_value *v = g->res[0];
    const gv_sharding *a = gv_op_sharding(g, 0);
    int ax = (int)gv_get_int(g, "axis", 0);
    if (!a || ax < 0 || ax >= a->rank || a->naxes[ax] || v->type.dims[ax] <= 1) continue;
    if (!U && !(U = gv_users_new(f->body))) return free(drop), gv_error(P->m, "propagate-sharding: out of memory");
    const gv_sharding *t0 = NULL;
    bool ok = true;
    for (int k = users_first(U, v); k >= 0 && ok; k = U->e[k].next) {
      const gv_op *u = U->e[k].op;
      const gv_sharding *t = u->code == GV_OP_RESHARD ? gv_op_sharding(u, 0) : NULL;
      ok = t && t->rank == a->rank && t->naxes[ax] &&
           (!t0 || (t0->naxes[ax] == t->naxes[ax] && !memcmp(t0->axes[ax], t->axes[ax], t->naxes[ax])));
      if (ok) t0 = t;
    }
    if (!ok || !t0) continue;
    unsigned am = 0, used = a->partial;
    for (int k = 0; k < t0->naxes[ax]; k++) am |= 1u << t0->axes[ax][k];
    for (int d = 0; d < a->rank; d++)
      for (int k = 0; k < a->naxes[d]; k++) used |= 1u << a->axes[d][k];
    if (used & am) continue;
    gv_sharding *s = gv_sharding_new(P->m, P->mesh, a->rank);
    *s = *a;
    s->naxes[ax] = t0->naxes[ax];
    memcpy(s->axes[ax], t0->axes[ax], sizeof s->axes[ax]);
    const gv_sharding **sh = gv_alloc(P->m->arena, sizeof *sh);
    sh[0] = s;
    gv_set_shardings(P->m, g, sh);
    for (int k = users_first(U, v); k >= 0; k = U->e[k].next) {
      gv_op *u = (gv_op *)U->e[k].op;
      if (u->code != GV_OP_RESHARD || U->e[k].opnd != 0 || !gv_sharding_equal(gv_op_sharding(u, 0), s)) continue;
      if (ndrop == cdrop) {
        cdrop = cdrop ? 2 * cdrop : 16;
        gv_op **d2 = realloc(drop, (size_t)cdrop * sizeof *d2);
        if (!d2) return free(drop), gv_users_free(U), gv_error(P->m, "propagate-sharding: out of memory");
        drop = d2;
      }
      drop[ndrop++] = u;
    }
  }
  gv_users_free(U); /* the block changes below */
  if (ndrop) {
    gv_subst *sub = gv_subst_new();
    for (int i = 0; i < ndrop; i++) {
      gv_subst_add(sub, drop[i]->res[0], drop[i]->opnds[0], NULL);
      gv_op_unlink(drop[i]);
    }
    gv_subst_block(sub, f->body);
    gv_subst_free(sub);
  }
  free(drop);
  return 0;
}

/* gv_megatron_is_column's question about one use u (operand i) of v: 1
 * column, 0 not, -1 undecided (*next: a bias add's result to follow). */
static int column_use(const gv_module *m, const gv_op *u, int i, const gv_value *v, int64_t tp, const gv_value **next) {
  if (is_activation(u) || u->code == GV_OP_SPLIT) return 1;
  if (u->code == GV_OP_RESHAPE && u->res[0]->type.rank > v->type.rank) return !fused_split(u, v, tp);
  if (u->code == GV_OP_MUL) {
    const gv_value *o = u->opnds[1 - i];
    if (o->def && is_activation(o->def)) return 1;
  }
  if (u->code == GV_OP_ADD && is_param(m, u->opnds[1 - i])) *next = u->res[0];
  return -1;
}

/* A dot with a parameter rhs whose result (after an optional bias add) feeds
 * an activation, a head-split reshape, a split or a gating mul. The uses are
 * visited in program order, the first decisive one answering (U: the users
 * of op's block; another block is scanned). */
bool gv_megatron_is_column(const gv_module *m, const gv_users *U, const gv_op *op, int64_t tp) {
  if (op->code != GV_OP_DOT || !is_param(m, op->opnds[1])) return false;
  const gv_value *v = op->res[0];
  for (int pass = 0; pass < 2; pass++) {
    const gv_value *next = NULL;
    int r = -1;
    if (U && U->b == op->parent) {
      for (int k = users_first(U, v); k >= 0 && r < 0; k = U->e[k].next)
        r = column_use(m, U->e[k].op, U->e[k].opnd, v, tp, &next);
    } else {
      for (const gv_op *u = op->next; u && r < 0; u = u->next)
        for (int i = 0; i < u->nopnds && r < 0; i++)
          if (u->opnds[i] == v) r = column_use(m, u, i, v, tp, &next);
    }
    if (r >= 0) return r;
    if (!next) break;
    v = next;
  }
  return false;
}

/* is_vocab_head's question about one use: 1 the head, -1 undecided. */
static int head_use(const gv_module *m, const gv_op *u, int i, const gv_value *v, const gv_value **next) {
  if (u->code == GV_OP_CROSS_ENTROPY && i == 0) return 1;
  if (u->code == GV_OP_RESHAPE && u->res[0]->type.rank >= 1 && v->type.rank >= 1 &&
      u->res[0]->type.dims[u->res[0]->type.rank - 1] == v->type.dims[v->type.rank - 1])
    *next = u->res[0];
  if (u->code == GV_OP_ADD && is_param(m, u->opnds[1 - i])) *next = u->res[0];
  return -1;
}

/* A dot with a parameter rhs whose result (after an optional bias add or
 * reshape) is the logits of galv.cross_entropy: the vocab-parallel head. */
static bool head_logits(const gv_module *m, const gv_users *U, const gv_op *op);
static bool is_vocab_head(const gv_module *m, const gv_users *U, const gv_op *op) {
  return op->code == GV_OP_DOT && is_param(m, op->opnds[1]) && head_logits(m, U, op);
}
/* ... whatever its rhs: the dot's result is the logits */
static bool head_logits(const gv_module *m, const gv_users *U, const gv_op *op) {
  const gv_value *v = op->res[0];
  for (int depth = 0; depth < 3; depth++) {
    const gv_value *next = NULL;
    if (U && U->b == op->parent) {
      for (int k = users_first(U, v); k >= 0; k = U->e[k].next)
        if (head_use(m, U->e[k].op, U->e[k].opnd, v, &next) > 0) return true;
    } else {
      for (const gv_op *u = op->next; u; u = u->next)
        for (int i = 0; i < u->nopnds; i++)
          if (u->opnds[i] == v && head_use(m, u, i, v, &next) > 0) return true;
    }
    if (!next) break;
    v = next;
  }
  return false;
}

/* The walk back from a value: each value explored once at its smallest
 * depth (a value explored without success at depth d0 cannot succeed at
 * d >= d0, which sees less of the graph), so shared sub-graphs (residual
 * streams, the backward program) are not walked once per path. */
typedef struct {
  const gv_value **v;
  int *depth;
  size_t cap, n;
} seen_map;

static int *seen_slot(seen_map *s, const gv_value *v) {
  if (2 * (s->n + 1) > s->cap) {
    seen_map g = {.cap = s->cap ? 2 * s->cap : 256};
    g.v = calloc(g.cap, sizeof *g.v);
    g.depth = calloc(g.cap, sizeof *g.depth);
    if (!g.v || !g.depth) {
      free(g.v);
      free(g.depth);
      return NULL;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i]) {
        int *d = seen_slot(&g, s->v[i]);
        *d = s->depth[i];
      }
    free(s->v);
    free(s->depth);
    *s = g;
  }
  size_t i = (size_t)(((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull) & (s->cap - 1);
  while (s->v[i] && s->v[i] != v) i = (i + 1) & (s->cap - 1);
  if (!s->v[i]) {
    s->v[i] = v;
    s->depth[i] = INT_MAX;
    s->n++;
  }
  return &s->depth[i];
}

static bool from_column(const gv_module *m, const gv_users *U, const gv_value *v, int depth, int64_t tp, seen_map *seen) {
  if (!v || !v->def || depth > 48) return false;
  int *at = seen_slot(seen, v);
  if (at && *at <= depth) return false;
  if (at) *at = depth;
  const gv_op *d = v->def;
  if (d->code == GV_OP_LAYER_NORM || d->code == GV_OP_RMS_NORM) return false;
  if (d->code == GV_OP_DOT && is_param(m, d->opnds[1]))
    return gv_megatron_is_column(m, U, d, tp) || (tp != 1 && gv_megatron_is_column(m, U, d, 1));
  for (int i = 0; i < d->nopnds; i++)
    if (from_column(m, U, d->opnds[i], depth + 1, tp, seen)) return true;
  return false;
}

/* A dot with a parameter rhs whose lhs comes from a column-parallel chain. */
bool gv_megatron_from_column(const gv_module *m, const gv_users *U, const gv_value *v, int depth, int64_t tp) {
  seen_map seen = {0};
  bool r = from_column(m, U, v, depth, tp, &seen);
  free(seen.v);
  free(seen.depth);
  return r;
}

int gv_dot_rhs_dim(const gv_op *op, bool contracting) {
  const int64_t *rc, *rb;
  int nrc = gv_get_ints(op, "rhs_contract", &rc), nrb = gv_get_ints(op, "rhs_batch", &rb);
  const gv_type *t = &op->opnds[1]->type;
  for (int d = 0; d < t->rank; d++) {
    bool c = false, b = false;
    for (int k = 0; k < nrc; k++) c |= rc[k] == d;
    for (int k = 0; k < nrb; k++) b |= rb[k] == d;
    if (!b && c == contracting) return d;
  }
  return -1;
}


/* ---------------------------------------------------------------- ZeRO stages */

static bool loc_is(const gv_op *op, const char *prefix) {
  return op && op->loc && (!prefix[0] || op->loc[0] == prefix[0]) && !strncmp(op->loc, prefix, strlen(prefix));
}

/* The parameter a ZeRO op belongs to: "optimizer/OPT/P" or "accumulate/P". */
static int zero_param_of(const gv_func *f, const gv_arg_index *names, const gv_op *op, bool *update) {
  const char *nm = NULL;
  *update = false;
  if (loc_is(op, "optimizer/")) nm = strchr(op->loc + 10, '/'), *update = true;
  else if (loc_is(op, "accumulate/")) nm = op->loc + 10;
  if (!nm) return -1;
  int lo, hi;
  gv_arg_index_find(names, nm + 1, &lo, &hi);
  for (int k = lo; k < hi; k++)
    if (f->arg_is_param[names->idx[k]]) return names->idx[k];
  return -1;
}

int gv_zero_stage_pins(gv_module *m, const gv_mesh *mesh, const uint8_t *stage, unsigned dmask, const gv_pin_io *io) {
  gv_func *f = m->main;
  int n = f->body->nargs;
  int64_t dp = 1;
  for (int a = 0; a < mesh->naxes; a++)
    if (dmask & (1u << a)) dp *= mesh->size[a];
  if (dp <= 1) return 0;
  const gv_sharding **zs = calloc((size_t)n + 1, sizeof *zs); /* per parameter: its ZeRO split */
  const gv_sharding **ws = calloc((size_t)n + 1, sizeof *ws); /* per parameter: whole over dmask */
  gv_value **g = calloc((size_t)n + 1, sizeof *g), **g2 = calloc((size_t)n + 1, sizeof *g2); /* the gradient the update reads, resharded */
  gv_arg_index names;
  if (!zs || !ws || !g || !g2 || gv_arg_index_build(&names, f)) {
    free(zs), free(ws), free(g), free(g2);
    return gv_error(m, "propagate-sharding: out of memory");
  }
  /* 16-bit training in one program (not a pipeline stage): at stages 1 and 2
   * the parameter (the fp32 master weight) is split like its optimizer state
   * and the step reads a whole 16-bit working copy (Megatron's distributed
   * optimizer; below) */
  const bool split16 = gv_precision_opts.storage != GV_DT_F32 && gv_func_stage_kind(f) == 0;
  for (int i = 0; i < n; i++) {
    gv_value *v = f->body->args[i];
    if (!stage[i] || !gv_arg_trains(f, i)) continue;
    const gv_sharding *base = io->get(io->ctx, v);
    if (base && base->partial) continue;
    gv_sharding *w = gv_sharding_new(m, mesh, v->type.rank), *z = gv_sharding_new(m, mesh, v->type.rank);
    int zd = -1;
    if (base && base->rank == v->type.rank) {
      *w = *base;
      for (int d = 0; d < w->rank; d++) { /* the planner pins stage 3 with the dmask split already there */
        int k = 0;
        for (int j = 0; j < w->naxes[d]; j++)
          if (dmask & (1u << w->axes[d][j])) zd = d;
          else w->axes[d][k++] = w->axes[d][j];
        w->naxes[d] = (uint8_t)k;
      }
    }
    for (int d = 0; zd < 0 && d < v->type.rank; d++)
      if (!w->naxes[d] && v->type.dims[d] > 0 && v->type.dims[d] % dp == 0) zd = d;
    if (zd < 0) continue; /* no dim to split: the parameter stays at stage 0 */
    *z = *w;
    z->naxes[zd] = 0;
    for (int a = 0; a < mesh->naxes; a++) /* dmask axes major, in mesh order, before a tp split of the same dim */
      if (dmask & (1u << a)) z->axes[zd][z->naxes[zd]++] = (uint8_t)a;
    for (int j = 0; j < w->naxes[zd]; j++) z->axes[zd][z->naxes[zd]++] = w->axes[zd][j];
    zs[i] = z, ws[i] = w;
    io->pin(io->ctx, v, stage[i] >= 3 || split16 ? z : w);
  }
  /* optimizer state "opt.X:P" of P's shape: P's ZeRO split */
  for (int i = 0; f->arg_is_state && i < n; i++) {
    const char *nm = f->arg_names[i], *c = nm && !strncmp(nm, "opt.", 4) ? strchr(nm, ':') : NULL;
    if (!c || !f->arg_is_state[i]) continue;
    int lo, hi;
    gv_arg_index_find(&names, c + 1, &lo, &hi);
    for (int k = lo; k < hi; k++) {
      int j = names.idx[k];
      if (f->arg_is_param[j] && zs[j] && gv_type_equal(&f->body->args[i]->type, &f->body->args[j]->type))
        io->pin(io->ctx, f->body->args[i], zs[j]);
    }
  }
  for (gv_op *op = f->body->first; op; op = op->next) {
    bool update;
    int j = zero_param_of(f, &names, op, &update);
    if (j < 0 || !zs[j]) continue;
    const gv_type *pt = &f->body->args[j]->type;
    int st = stage[j];
    if (!update && st != 2) continue; /* stage 1 sums whole gradients and reduces once; stage 3: --zero-reduce */
    if (op->nres == 1 && gv_type_equal(&op->res[0]->type, pt) && !io->get(io->ctx, op->res[0])) io->pin(io->ctx, op->res[0], zs[j]);
    if (st == 3) continue;
    for (int k = 0; k < op->nopnds; k++) {
      gv_value *o = op->opnds[k];
      if (!o->def || !gv_type_equal(&o->type, pt)) continue;
      if (update) { /* the gradient: not a value of the update itself */
        if (loc_is(o->def, "optimizer/")) continue;
        if (!g[j]) {
          g[j] = o;
          g2[j] = st == 2 && loc_is(o->def, "accumulate/") ? o : io->pin_use(io->ctx, o, st == 1 ? ws[j] : zs[j]);
        }
        if (o == g[j]) op->opnds[k] = g2[j];
      } else if (!loc_is(o->def, "accumulate/")) /* stage 2: a microbatch's gradient, into the shard as it is made */
        op->opnds[k] = io->pin_use(io->ctx, o, zs[j]);
    }
  }
  /* split16: every reader of P but its update reads one gather of it (a galv.reshard to P's whole sharding marked
   * `working_copy`, right before its first reader), kept whole for the step: the regather pass leaves it alone, and
   * the storage pass gathers it as a 16-bit copy of the updated master's shard (2 bytes per element) wherever its
   * readers read it 16-bit. The update reads the master shard; the step's new P is that shard, so nothing is
   * gathered after the update, and checkpoints hold the (gathered) fp32 master. */
  int copies = 0;
  /* each argument's first reader (gv_pin_use_before's op, found for all in one walk: the copies inserted below read
   * their own parameter only, which leaves every other argument's first reader as it is), then every reader of a
   * copied parameter after its copy, the update aside, reads the copy (one walk for all: each copy is inserted before
   * its parameter's first reader) */
  gv_op **first = split16 ? calloc((size_t)n + 1, sizeof *first) : NULL;
  gv_value **copy = split16 ? calloc((size_t)n + 1, sizeof *copy) : NULL;
  if (split16 && (!first || !copy)) {
    free(first), free(copy), gv_arg_index_free(&names), free(zs), free(ws), free(g), free(g2);
    return gv_error(m, "propagate-sharding: out of memory");
  }
  for (gv_op *op = split16 ? f->body->first : NULL; op; op = op->next)
    for (int k = 0; k < op->nopnds; k++) {
      const gv_value *o = op->opnds[k];
      if (!o->def && o->block == f->body && o->index >= 0 && o->index < n && !first[o->index]) first[o->index] = op;
    }
  for (int i = 0; split16 && i < n; i++) {
    if (!zs[i] || stage[i] >= 3) continue;
    gv_value *v = f->body->args[i];
    if (!first[i] || loc_is(first[i], "optimizer/")) continue; /* only the update reads P */
    gv_value *c = io->pin_use(io->ctx, v, ws[i]);
    if (c == v || !c->def) continue;
    gv_set_int(m, c->def, "working_copy", 1);
    copies++;
    copy[i] = c;
  }
  for (gv_op *op = copies ? f->body->first : NULL; op; op = op->next) {
    if (loc_is(op, "optimizer/")) continue;
    for (int k = 0; k < op->nopnds; k++) {
      const gv_value *o = op->opnds[k];
      if (!o->def && o->block == f->body && o->index >= 0 && o->index < n && copy[o->index] && op != copy[o->index]->def)
        op->opnds[k] = copy[o->index];
    }
  }
  free(first), free(copy);
  if (copies) gv_count_uses(f->body);
  gv_arg_index_free(&names);
  free(zs), free(ws), free(g), free(g2);
  return 0;
}

static const gv_sharding *prop_get(void *ctx, const gv_value *v) { return ((prop *)ctx)->sh[v->id]; }
static void prop_pin(void *ctx, gv_value *v, const gv_sharding *s) { ((prop *)ctx)->sh[v->id] = s; }
/* The gradient's consumers read a galv.reshard inserted after its producer
 * (pinning the value itself would not do: a sum of pending dp sums pinned
 * replicated reduces its operands, each microbatch's gradient, instead of
 * itself). The reshard keeps both shardings (materialise) and joins the
 * value table. */
static gv_value *prop_pin_use(void *ctx, gv_value *v, const gv_sharding *s) {
  prop *P = ctx;
  const gv_op *at;
  gv_op *before = gv_pin_use_before(P->m->main->body, v, &at);
  if (!before) return v;
  gv_op *o = gv_op_new(P->m, GV_OP_RESHARD, 1, &v, 1);
  o->res[0]->type = v->type;
  gv_op_set_loc(P->m, o, at->loc, at->onnx_op);
  gv_set_shardings(P->m, o, &s);
  gv_insert_before(before, o);
  if (P->nvals + 1 >= P->capvals) { /* doubling: one reshard per gradient */
    int cap = 2 * P->capvals + 2;
    gv_value **vals = realloc(P->vals, (size_t)cap * sizeof *vals);
    if (!vals) abort();
    P->vals = vals;
    const gv_sharding **sh = realloc((void *)P->sh, (size_t)cap * sizeof *sh);
    if (!sh) abort();
    P->sh = sh, P->capvals = cap;
  }
  o->res[0]->id = P->nvals;
  P->vals[P->nvals] = o->res[0];
  P->sh[P->nvals++] = s;
  return o->res[0];
}

static int preset_pins(prop *P, const char *strategy) {
  gv_func *f = P->m->main;
  bool dp = false, tp = false, zero = false, sp = false;
  int stage = 0; /* zero1 / zero2 (gv_zero_stage_pins); zero = zero3 keeps its own pins below */
  char buf[64];
  snprintf(buf, sizeof buf, "%s", strategy);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
    dp |= strcmp(t, "dp") == 0;
    tp |= strcmp(t, "tp") == 0;
    zero |= strcmp(t, "zero") == 0 || strcmp(t, "zero3") == 0;
    if (!strcmp(t, "zero1") || !strcmp(t, "zero2")) stage = t[4] - '0';
    sp |= strcmp(t, "sp") == 0;
  }
  if (sp && !tp) return gv_error(P->m, "strategy %s: sequence parallelism (sp) splits the values between tensor-parallel blocks over the sequence: it needs tp", strategy);
  if (sp && has_axis(P->mesh, "tp")) P->sp_axis = gv_mesh_axis(P->mesh, "tp", 2); /* no tp axis: tp pins nothing either */
  if ((zero || stage) && !has_axis(P->mesh, "dp"))
    return gv_error(P->m, "strategy %s: ZeRO shards over the data-parallel mesh axis dp, which the mesh does not have (give "
                          "--mesh dp=N,...)", strategy);
  if (zero || stage) dp = true;
  P->strict = tp;
  if (dp && has_axis(P->mesh, "dp")) {
    for (int i = 0; i < f->body->nargs; i++) {
      gv_value *v = f->body->args[i];
      bool state = f->arg_is_state && f->arg_is_state[i];
      if (f->arg_sharding && f->arg_sharding[i]) continue; /* pinned in the IR (pipeline stages: pp.X replicated) */
      if (!f->arg_is_param[i] && !state && v->type.rank >= 1) {
        gv_sharding *s = split_dim(P, v, 0, "dp");
        int64_t p = P->mesh->size[gv_mesh_axis(P->mesh, "dp", 2)];
        if (!s && v->type.dims[0] != 1)
          return gv_error(P->m, "strategy dp: input '%s' has batch dim of size %lld, which does not divide into %lld shards (mesh axes dp)",
                          f->arg_names[i], (long long)v->type.dims[0], (long long)p);
        /* accumulated microbatches (passes/accumulate.c) are split over dp one by one */
        int64_t mb = gv_train_opts.microbatches;
        if (s && mb > 1 && (v->type.dims[0] / mb) % p)
          return gv_error(P->m, "strategy dp: input '%s': a microbatch of %lld samples (batch %lld in --microbatches %lld) does not "
                                "divide into %lld shards (mesh axes dp)", f->arg_names[i], (long long)(v->type.dims[0] / mb),
                          (long long)v->type.dims[0], (long long)mb, (long long)p);
        pin(P, v, s);
      }
    }
  }
  if (tp && has_axis(P->mesh, "tp")) {
    int64_t ntp = P->ntp = P->mesh->size[gv_mesh_axis(P->mesh, "tp", 2)];
    int npins = 0;
    gv_users *U = gv_users_new(f->body); /* NULL (out of memory): the role questions scan */
    for (gv_op *op = f->body->first; op; op = op->next) {
      const gv_sharding *s = NULL;
      gv_value *w = NULL;
      if (op->code == GV_OP_GATHER && is_param(P->m, op->opnds[0]) && gv_get_int(op, "axis", 0) == 0 &&
          op->opnds[0]->type.rank == 2)
        s = split_dim(P, w = op->opnds[0], 0, "tp");
      else if (op->code == GV_OP_CONV && is_param(P->m, op->opnds[1]) && gv_conv_channel_split(op))
        s = split_dim(P, w = op->opnds[1], 0, "tp"); /* output channels (the conv rule's channel factor) */
      else if (op->code == GV_OP_DOT && is_param(P->m, op->opnds[1]) && (gv_megatron_is_column(P->m, U, op, ntp) || is_vocab_head(P->m, U, op)))
        s = split_dim(P, w = op->opnds[1], gv_dot_rhs_dim(op, false), "tp");
      else if (op->code == GV_OP_DOT && is_param(P->m, op->opnds[1]) && gv_megatron_from_column(P->m, U, op->opnds[0], 0, ntp))
        s = split_dim(P, w = op->opnds[1], gv_dot_rhs_dim(op, true), "tp");
      else if (op->code == GV_OP_DOT && op->opnds[1]->def && op->opnds[1]->def->code == GV_OP_TRANSPOSE &&
               is_param(P->m, op->opnds[1]->def->opnds[0]) && head_logits(P->m, U, op)) {
        /* a tied head reading the embedding through a transpose (a pipeline's last stage, without the embedding's
         * gather): the parameter's dim the transpose maps the head's columns from, as the planner's role */
        const gv_op *tr = op->opnds[1]->def;
        const int64_t *perm = NULL;
        int np = gv_get_ints(tr, "perm", &perm), d = gv_dot_rhs_dim(op, false);
        if (np == tr->opnds[0]->type.rank && d >= 0 && d < np && perm[d] >= 0 && perm[d] < np)
          s = split_dim(P, w = tr->opnds[0], (int)perm[d], "tp");
      }
      if (s) pin(P, cast_root(w), s), npins++;
    }
    gv_users_free(U);
    /* a preset that shards nothing would silently replicate the whole model on every rank */
    if (!npins)
      fprintf(stderr, "%s: warning: --strategy tp shards nothing in this model (no matrix product, embedding or "
                      "convolution weight splits over the %lld tp ranks): every rank computes the whole model\n",
              gv_progname, (long long)ntp);
  }
  /* ZeRO-3: every parameter split over dp on the first dim its tp split (above) leaves whole and dp divides
   * (a row-parallel weight split on its rows by tp: its columns), else dp major before tp on a dim both divide;
   * its optimizer state follows it (below). Pinned after tp: a dp split pinned first on the dim tp then needs
   * would leave a row-parallel weight without its tp split. */
  for (int i = 0; zero && has_axis(P->mesh, "dp") && i < f->body->nargs; i++) {
    gv_value *v = f->body->args[i];
    if (!f->arg_is_param[i] || (f->arg_sharding && f->arg_sharding[i])) continue;
    int a = gv_mesh_axis(P->mesh, "dp", 2);
    int64_t p = P->mesh->size[a];
    const gv_sharding *old = P->sh[v->id];
    int zd = -1;
    for (int d = 0; zd < 0 && d < v->type.rank; d++)
      if ((!old || !old->naxes[d]) && v->type.dims[d] > 0 && v->type.dims[d] % p == 0) zd = d;
    if (zd >= 0) {
      pin(P, v, split_dim(P, v, zd, "dp"));
      continue;
    }
    for (int d = 0; old && zd < 0 && d < v->type.rank; d++) {
      int64_t q = p;
      for (int k = 0; k < old->naxes[d]; k++) q *= P->mesh->size[old->axes[d][k]];
      if (old->naxes[d] && old->naxes[d] < GV_MAX_MESH_AXES && v->type.dims[d] > 0 && v->type.dims[d] % q == 0) zd = d;
    }
    if (zd < 0) continue; /* no dim to split: the parameter stays whole over dp */
    gv_sharding *c = gv_sharding_new(P->m, P->mesh, v->type.rank);
    *c = *old;
    for (int k = c->naxes[zd]; k > 0; k--) c->axes[zd][k] = c->axes[zd][k - 1];
    c->axes[zd][0] = (uint8_t)a, c->naxes[zd]++;
    P->sh[v->id] = c;
  }
  /* optimizer state "opt.X:PARAM" is split like its parameter (else the
   * updated state would be gathered at the end of every step) */
  gv_arg_index names;
  if (gv_arg_index_build(&names, f)) return gv_error(P->m, "propagate-sharding: out of memory");
  for (int i = 0; f->arg_is_state && i < f->body->nargs; i++) {
    const char *nm = f->arg_names[i], *c = nm && !strncmp(nm, "opt.", 4) ? strchr(nm, ':') : NULL;
    if (!c || P->sh[f->body->args[i]->id]) continue;
    int lo, hi;
    gv_arg_index_find(&names, c + 1, &lo, &hi);
    for (int k = lo; k < hi; k++) {
      int j = names.idx[k];
      if (f->arg_is_param[j] && P->sh[f->body->args[j]->id] && f->body->args[j]->type.rank == f->body->args[i]->type.rank)
        P->sh[f->body->args[i]->id] = P->sh[f->body->args[j]->id];
    }
  }
  if (stage) { /* ZeRO-1 / -2: state and update split over dp, the parameter whole */
    uint8_t *st = calloc((size_t)f->body->nargs + 1, 1);
    if (!st) {
      gv_arg_index_free(&names);
      return gv_error(P->m, "propagate-sharding: out of memory");
    }
    for (int i = 0; i < f->body->nargs; i++) st[i] = (uint8_t)(gv_arg_trains(f, i) ? stage : 0);
    gv_pin_io io = {P, prop_get, prop_pin, prop_pin_use};
    int rc = gv_zero_stage_pins(P->m, P->mesh, st, 1u << gv_mesh_axis(P->mesh, "dp", 2), &io);
    free(st);
    if (rc) {
      gv_arg_index_free(&names);
      return rc;
    }
  }
  /* ZeRO: the update of a dp-split parameter P (ops at "optimizer/OPT/P")
   * runs on P's shard: its param-shaped values are split like P, so its
   * gradient (a pending dp sum) is reduce-scattered where the update first
   * reads it, not all-reduced and then sliced. */
  for (gv_op *op = f->body->first; zero && op; op = op->next) {
    const char *loc = op->loc && !strncmp(op->loc, "optimizer/", 10) ? strchr(op->loc + 10, '/') : NULL;
    if (!loc || op->nres != 1 || P->sh[op->res[0]->id]) continue;
    int lo, hi;
    gv_arg_index_find(&names, loc + 1, &lo, &hi);
    for (int k = lo; k < hi; k++) {
      int j = names.idx[k];
      gv_value *p = f->body->args[j];
      const gv_sharding *ps = P->sh[p->id];
      if (!f->arg_is_param[j] || !ps) continue;
      bool split = false;
      for (int d = 0; d < ps->rank; d++) split |= ps->naxes[d] > 0;
      if (split && !ps->partial && gv_type_equal(&op->res[0]->type, &p->type)) P->sh[op->res[0]->id] = ps;
      break;
    }
  }
  gv_arg_index_free(&names);
  return 0;
}

/* --zero-reduce per-microbatch (the default; passes/accumulate.c): the
 * gradient sums of a parameter P whose step reads it split (ZeRO-3: P
 * split over an axis that splits the data inputs, and no whole working
 * copy read in its place), ops at "accumulate/P", are split like P, and
 * each microbatch's gradient they add, a pending dp sum, is read through a
 * galv.reshard to P's split right after its producer: reduce-scattered
 * into the shard as it is made, the first microbatch's too, so no whole
 * gradient is held past its layer's backward. Stages 1 and 2 under 16-bit
 * training split P too (the fp32 master) but read a whole working copy:
 * left alone (stage 1 sums whole gradients and reduces once; stage 2's
 * sums are pinned already, gv_zero_stage_pins). With --zero-reduce once
 * the sums stay pending and are reduced once, where the optimizer reads
 * them. */
static void pin_accumulate(prop *P) {
  gv_func *f = P->m->main;
  const int n = f->body->nargs;
  unsigned batch = 0; /* the axes splitting the data inputs' dim 0: ZeRO shards over them */
  for (int j = 0; j < n; j++) {
    const gv_sharding *s = P->sh[f->body->args[j]->id];
    if (f->arg_is_param[j] || (f->arg_is_state && f->arg_is_state[j]) || !s || s->rank < 1) continue;
    for (int a = 0; a < s->naxes[0]; a++) batch |= 1u << s->axes[0][a];
  }
  bool *whole = calloc((size_t)n + 1, sizeof *whole); /* read through a whole working copy (stages 1 / 2, 16-bit) */
  if (!whole) return;
  for (const gv_op *op = f->body->first; op; op = op->next)
    if (op->code == GV_OP_RESHARD && op->nopnds == 1 && !op->opnds[0]->def && op->opnds[0]->block == f->body &&
        op->opnds[0]->index >= 0 && op->opnds[0]->index < n && gv_get_attr(op, "working_copy"))
      whole[op->opnds[0]->index] = true;
  for (gv_op *op = f->body->first; op; op = op->next) {
    const char *nm = op->loc && !strncmp(op->loc, "accumulate/", 11) ? op->loc + 11 : NULL;
    if (!nm || op->nres != 1 || P->sh[op->res[0]->id]) continue;
    for (int j = 0; j < n; j++) {
      gv_value *p = f->body->args[j];
      const gv_sharding *ps = P->sh[p->id];
      if (!f->arg_is_param[j] || !ps || !f->arg_names[j] || strcmp(f->arg_names[j], nm)) continue;
      bool zero = false;
      for (int d = 0; d < ps->rank; d++)
        for (int a = 0; a < ps->naxes[d]; a++) zero |= (batch >> ps->axes[d][a]) & 1;
      if (zero && !whole[j] && !ps->partial && gv_type_equal(&op->res[0]->type, &p->type)) {
        P->sh[op->res[0]->id] = ps;
        for (int k = 0; k < op->nopnds; k++) { /* a microbatch's gradient: into the shard right after its producer */
          gv_value *o = op->opnds[k];
          if (o->def && !(o->def->loc && !strncmp(o->def->loc, "accumulate/", 11)) && gv_type_equal(&o->type, &p->type))
            op->opnds[k] = prop_pin_use(P, o, ps);
        }
      }
      break;
    }
  }
  free(whole);
}

/* Sharding file: one value a line, `NAME [{"dp"}, {}, {"tp"}]` (mesh: the
 * first); '#' starts a comment. Strict: a regular file of at most 16 MiB,
 * lines of at most 4095 bytes, nothing after the closing ']' but a comment,
 * each value named once. */
enum { SHARD_FILE_MAX = 16 << 20, SHARD_LINE_MAX = 4095 };

static const char *skip_ws(const char *c) {
  while (*c == ' ' || *c == '\t') c++;
  return c;
}

static int pin_line(prop *P, const char *path, int ln, char *s, int *seen) {
  gv_func *f = P->m->main;
  if (*s == '@') { /* @sequence_parallel AXIS: the region between the AXIS-parallel blocks split over the sequence */
    static const char kw[] = "@sequence_parallel";
    const char *c = s + sizeof kw - 1;
    if (strncmp(s, kw, sizeof kw - 1) || (*c != ' ' && *c != '\t'))
      return gv_error_plain("%s:%d: unknown directive '%.40s' (known: @sequence_parallel AXIS)", path, ln, s);
    c = skip_ws(c);
    const char *e = c;
    while (*e && *e != ' ' && *e != '\t' && *e != '#') e++;
    int a = e > c ? gv_mesh_axis(P->mesh, c, (size_t)(e - c)) : -1;
    if (a < 0) return gv_error_plain("%s:%d: @sequence_parallel: '%.*s' is no axis of the mesh", path, ln, (int)(e - c), c);
    if (P->sp_axis >= 0 && P->sp_axis != a)
      return gv_error_plain("%s:%d: @sequence_parallel %s, but sequence parallelism already runs over %s", path, ln, P->mesh->axis[a],
                            P->mesh->axis[P->sp_axis]);
    e = skip_ws(e);
    if (*e && *e != '#') return gv_error_plain("%s:%d: @sequence_parallel: unexpected text after the axis: '%.20s'", path, ln, e);
    P->sp_axis = a;
    return 0;
  }
  const char *e = s;
  while (*e && *e != ' ' && *e != '\t' && *e != '[') e++;
  char name[1024];
  if ((size_t)(e - s) >= sizeof name) return gv_error_plain("%s:%d: value name too long", path, ln);
  snprintf(name, sizeof name, "%.*s", (int)(e - s), s);
  gv_value *v = NULL;
  for (int i = 0; i < f->body->nargs && !v; i++)
    if (f->arg_names[i] && strcmp(f->arg_names[i], name) == 0) v = f->body->args[i];
  for (gv_op *op = f->body->first; op && !v; op = op->next)
    for (int i = 0; i < op->nres && !v; i++)
      if (op->res[i]->name && strcmp(op->res[i]->name, name) == 0) v = op->res[i];
  if (!v) return gv_error_plain("%s:%d: sharding file names '%s', which is no value of the model", path, ln, name);
  if (seen[v->id]) return gv_error_plain("%s:%d: '%s' is given a sharding twice (first on line %d)", path, ln, name, seen[v->id]);
  gv_sharding *sh = gv_sharding_new(P->m, P->mesh, v->type.rank);
  const char *c = skip_ws(e);
  if (*c != '[') return gv_error_plain("%s:%d: expected NAME [{...}, ...]", path, ln);
  c = skip_ws(c + 1);
  int d = 0;
  unsigned used = 0;
  while (*c != ']') {
    if (!*c) return gv_error_plain("%s:%d: '%s': the line ends before its closing ']'", path, ln, name);
    if (d && *c == ',') c = skip_ws(c + 1); /* a comma between dims */
    else if (d) return gv_error_plain("%s:%d: '%s': expected ',' or ']' at '%.20s'", path, ln, name, c);
    if (!*c) return gv_error_plain("%s:%d: '%s': the line ends before its closing ']'", path, ln, name);
    if (*c != '{' || d >= v->type.rank)
      return gv_error_plain("%s:%d: '%s' has rank %d; expected one {axes} per dim at '%.20s'", path, ln, name, v->type.rank, c);
    c = skip_ws(c + 1);
    for (int k = 0; *c != '}'; k++) {
      if (!*c) return gv_error_plain("%s:%d: '%s': the line ends before its closing '}'", path, ln, name);
      if (k && *c == ',') c = skip_ws(c + 1);
      else if (k) return gv_error_plain("%s:%d: '%s': expected ',' or '}' at '%.20s'", path, ln, name, c);
      const char *q = *c == '"' ? strchr(c + 1, '"') : NULL;
      int a = q ? gv_mesh_axis(P->mesh, c + 1, (size_t)(q - c - 1)) : -1;
      if (!*c) return gv_error_plain("%s:%d: '%s': the line ends before its closing '}'", path, ln, name);
      if (a < 0 || (used & (1u << a)) || sh->naxes[d] >= GV_MAX_MESH_AXES)
        return gv_error_plain("%s:%d: '%s': bad or repeated mesh axis at '%.20s'", path, ln, name, c);
      used |= 1u << a;
      sh->axes[d][sh->naxes[d]++] = (uint8_t)a;
      c = skip_ws(q + 1);
    }
    c = skip_ws(c + 1), d++;
  }
  c = skip_ws(c + 1);
  if (*c && *c != '#') return gv_error_plain("%s:%d: '%s': unexpected text after the closing ']': '%.20s'", path, ln, name, c);
  if (d != v->type.rank) return gv_error_plain("%s:%d: '%s' has rank %d, the sharding lists %d dims", path, ln, name, v->type.rank, d);
  for (int k = 0; k < d; k++)
    if (v->type.dims[k] > 0 && v->type.dims[k] % gv_sharding_dim_split(sh, k))
      return gv_error_plain("%s:%d: '%s' dim %d of size %lld is not divisible into %lld shards", path, ln, name, k,
                            (long long)v->type.dims[k], (long long)gv_sharding_dim_split(sh, k));
  P->sh[v->id] = sh;
  seen[v->id] = ln;
  return 0;
}

static int file_pins(prop *P, const char *path) {
  char *text = NULL, err[256];
  size_t len = 0;
  if (galv_read_whole(path, SHARD_FILE_MAX, &text, &len, err, sizeof err))
    return gv_error_plain("%s: cannot read the sharding file: %s", path, err);
  int *seen = calloc((size_t)P->nvals + 1, sizeof *seen); /* the line that pinned each value */
  if (!seen) abort();
  int rc = 0, ln = 0;
  for (char *s = text; !rc && s < text + len;) {
    char *nl = memchr(s, '\n', (size_t)(text + len - s));
    char *end = nl ? nl : text + len;
    char *next = end + 1;
    ln++;
    if (memchr(s, 0, (size_t)(end - s))) rc = gv_error_plain("%s:%d: the line holds a NUL byte (not a text file?)", path, ln);
    if (end > s && end[-1] == '\r') end--;
    *end = 0; /* within the buffer: galv_read_whole leaves room for a NUL */
    if (rc) break;
    else if (end - s > SHARD_LINE_MAX) rc = gv_error_plain("%s:%d: line longer than %d bytes", path, ln, SHARD_LINE_MAX);
    else {
      const char *t = skip_ws(s);
      if (*t && *t != '#') rc = pin_line(P, path, ln, (char *)t, seen);
    }
    s = next;
  }
  free(seen);
  free(text);
  return rc ? -1 : 0;
}

/* Forward and backward sweeps to a fixed point; values still unknown
 * then become replicated (arguments first, so their users follow them). */
static int fixed_point(prop *P, int n) {
  gv_func *f = P->m->main;
  for (int iter = 0; iter < 4 * n + 8; iter++) {
    int changed = 0;
    for (gv_op *op = f->body->first; op; op = op->next) {
      int c = forward(P, op);
      if (c < 0) return -1;
      changed |= c > 0;
    }
    for (gv_op *op = f->body->last; op; op = op->prev) changed |= backward(P, op) > 0;
    if (changed) continue;
    bool any = false;
    for (int i = 0; i < P->nvals; i++)
      if (!P->sh[i] && !P->vals[i]->def) {
        P->sh[i] = replicated(P, P->vals[i]);
        any = true;
      }
    if (!any) {
      for (int i = 0; i < P->nvals && !any; i++)
        if (!P->sh[i]) P->sh[i] = replicated(P, P->vals[i]), any = true;
    }
    if (!any) break;
  }
  return 0;
}

/* ------------------------------------------------ sequence parallelism */

/* Megatron-SP (Korthikanti et al. 2022) as pins over tp's own shardings.
 * Under tp every value between two tensor-parallel blocks (the row-parallel
 * result once its pending sum is complete, bias adds, residual adds, norms
 * and their gradients) is whole on every tp rank. The region is found from
 * the fixed point of the tp pins: it starts at each consumer of a pending
 * tp sum whose result has the sum's dims and carries its token dim (the
 * dim before the last, hidden one: the sequence of [B, S, H], the tokens
 * of [B*S, H]) as a PASS factor, and grows through users of that kind
 * whose result is neither split nor pending over tp; it stops at matrix
 * products (the column-parallel dots, the head, the weight gradients), at
 * reshapes and at the optimizer. Its values then also split their token
 * dim over tp, every other value keeps its tp sharding, and materialise
 * inserts the reshards at the region's edges: a pending sum entering it
 * is reduce-scattered (not all-reduced), a dot leaving it all-gathers its
 * operand (the forward's gather is reused by the weight gradient: the
 * bytes per step equal tp's, all_reduce = reduce_scatter + all_gather). */
static bool sp_carries(const gv_op *u, const gv_value *from, const gv_value *to) {
  gv_shard_rule r;
  if (u->code == GV_OP_DOT || u->code == GV_OP_RESHARD || u->nres != 1 || to->type.rank < 2 ||
      to->type.rank != from->type.rank || !gv_dtype_is_float(to->type.dtype) || gv_shard_rule_of(u, &r))
    return false;
  int d = to->type.rank - 2;
  if (to->type.dims[d] != from->type.dims[d]) return false;
  if (u->loc && !strncmp(u->loc, "optimizer", 9)) return false;
  if (r.nf[1][0][d] != 1) return false;
  int fct = r.f[1][0][d][0];
  if (r.kind[fct] != GV_FACTOR_PASS) return false;
  for (int i = 0; i < u->nopnds && i < GV_SHARD_MAX_VALUES; i++)
    if (u->opnds[i] == from && r.rank[0][i] == from->type.rank && r.nf[0][i][d] == 1 && r.f[0][i][d][0] == fct) return true;
  return false;
}

static bool sp_touches(const gv_sharding *s, int a) {
  if (s->partial & (1u << a)) return true;
  for (int d = 0; d < s->rank; d++)
    for (int k = 0; k < s->naxes[d]; k++)
      if (s->axes[d][k] == a) return true;
  return false;
}

/* Whether op's result i is a pending sum over axis a: recorded so, or
 * (where a backward sweep recorded the complete value and materialise
 * then reshards right after the op) an operand dim made only of
 * contracting / gather factors split over a. */
static bool sp_pending(const prop *P, const gv_op *op, int i, int a) {
  if (P->sh[op->res[i]->id]->partial & (1u << a)) return true;
  gv_shard_rule r;
  if (op->nres != 1 || gv_shard_rule_of(op, &r)) return false;
  for (int k = 0; k < op->nopnds && k < GV_SHARD_MAX_VALUES; k++) {
    const gv_sharding *s = P->sh[op->opnds[k]->id];
    for (int d = 0; s && d < s->rank && d < r.rank[0][k]; d++) {
      bool red = r.nf[0][k][d] > 0, on_a = false;
      for (int q = 0; q < r.nf[0][k][d]; q++) red &= r.kind[r.f[0][k][d][q]] != GV_FACTOR_PASS;
      for (int q = 0; q < s->naxes[d]; q++) on_a |= s->axes[d][q] == a;
      if (red && on_a) return true;
    }
  }
  return false;
}

static int sequence_parallel(prop *P) {
  gv_func *f = P->m->main;
  int a = P->sp_axis;
  bool *in = calloc((size_t)P->nvals + 1, sizeof *in);
  P->sp_base = calloc((size_t)P->nvals + 1, sizeof *P->sp_base);
  gv_value **work = malloc(((size_t)P->nvals + 1) * sizeof *work);
  gv_users *U = gv_users_new(f->body);
  if (!in || !work || !U || !P->sp_base) {
    free(in), free(work), gv_users_free(U);
    return gv_error(P->m, "propagate-sharding: out of memory");
  }
  int nw = 0, nregion = 0;
  for (gv_op *op = f->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) {
      gv_value *v = op->res[i];
      if (!sp_pending(P, op, i, a)) continue;
      work[nw++] = v; /* a pending tp sum: its users may start the region */
      while (nw) {
        gv_value *x = work[--nw];
        for (int k = users_first(U, x); k >= 0; k = U->e[k].next) {
          const gv_op *u = U->e[k].op;
          gv_value *y = u->nres == 1 ? u->res[0] : NULL;
          if (!y || in[y->id] || sp_touches(P->sh[y->id], a) || !sp_carries(u, x, y)) continue;
          if (gv_shard_opts.sp_op && !gv_shard_opts.sp_op(u, gv_shard_opts.sp_arg)) continue; /* a plan's unit without sp */
          in[y->id] = true;
          work[nw++] = y;
        }
      }
    }
  /* a pending sum recorded complete (the reshard right after its op) that
   * feeds the region stays pending: its region users reduce-scatter it */
  for (gv_op *op = f->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) {
      gv_value *v = op->res[i];
      if ((P->sh[v->id]->partial & (1u << a)) || !sp_pending(P, op, i, a)) continue;
      bool feeds = false;
      for (int k = users_first(U, v); k >= 0 && !feeds; k = U->e[k].next)
        feeds = U->e[k].op->nres == 1 && in[U->e[k].op->res[0]->id];
      if (!feeds) continue;
      gv_sharding *ps = gv_sharding_new(P->m, P->mesh, v->type.rank);
      *ps = *P->sh[v->id];
      ps->partial |= 1u << a;
      P->sh[v->id] = ps;
    }
  int rc = 0;
  for (int i = 0; i < P->nvals && !rc; i++) {
    if (!in[i]) continue;
    gv_value *v = P->vals[i];
    int d = v->type.rank - 2;
    gv_sharding *s = gv_sharding_new(P->m, P->mesh, v->type.rank);
    *s = *P->sh[i];
    int k = s->naxes[d];
    if (k >= GV_MAX_MESH_AXES) continue;
    while (k > 0 && s->axes[d][k - 1] > a) s->axes[d][k] = s->axes[d][k - 1], k--; /* mesh order */
    s->axes[d][k] = (uint8_t)a;
    s->naxes[d]++;
    int64_t p = gv_sharding_dim_split(s, d);
    if (v->type.dims[d] <= 0 || v->type.dims[d] % p) {
      char b[128];
      gv_type_str(&v->type, b, sizeof b);
      rc = gv_error_op(P->m, v->def,
                       "sequence parallelism: the token dim %d of this %s does not divide into %lld shards (tp %lld%s); "
                       "the sequence length must be a multiple of the tp degree",
                       d, b, (long long)p, (long long)P->mesh->size[a], p > P->mesh->size[a] ? " times the other axes splitting it" : "");
      break;
    }
    P->sp_base[i] = P->sh[i];
    P->sh[i] = s;
    nregion++;
  }
  if (!rc && !nregion)
    fprintf(stderr, "%s: warning: sequence parallelism over %s finds no value between tensor-parallel blocks to split over "
                    "the sequence: the program is plain tp\n", gv_progname, P->mesh->axis[a]);
  free(in);
  free(work);
  gv_users_free(U);
  return rc;
}

int gv_pass_propagate_sharding(gv_module *m) {
  if (!m->nmeshes || !m->main) return 0;
  gv_func *f = m->main;
  prop P = {.m = m, .mesh = m->meshes[0], .sp_axis = -1};
  int n = f->body->nargs;
  for (gv_op *op = f->body->first; op; op = op->next) {
    if (op->nregions) return gv_error_op(m, op, "sharding: ops with regions (galv.%s) are not supported", opname(op));
    n += op->nres;
  }
  P.vals = calloc((size_t)n + 1, sizeof *P.vals);
  P.sh = calloc((size_t)n + 1, sizeof *P.sh);
  P.capvals = n + 1;
  if (!P.vals || !P.sh) {
    free(P.vals);
    free(P.sh);
    return gv_error(m, "out of memory");
  }
  int k = 0;
  for (int i = 0; i < f->body->nargs; i++) {
    P.vals[k] = f->body->args[i];
    P.vals[k]->id = k;
    P.sh[k] = f->arg_sharding ? f->arg_sharding[i] : NULL;
    k++;
  }
  for (gv_op *op = f->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) {
      P.vals[k] = op->res[i];
      P.vals[k]->id = k;
      P.sh[k] = gv_op_sharding(op, i);
      k++;
    }
  P.nvals = k;
  int rc = 0;
  if (gv_shard_opts.strategy) rc = preset_pins(&P, gv_shard_opts.strategy);
  if (!rc && gv_shard_opts.file) rc = file_pins(&P, gv_shard_opts.file);
  if (!rc && gv_train_opts.zero_reduce_each) pin_accumulate(&P);
  if (!rc) rc = fixed_point(&P, n);
  if (!rc && P.sp_axis < 0 && gv_shard_opts.sp_axis) P.sp_axis = gv_mesh_axis(P.mesh, gv_shard_opts.sp_axis, strlen(gv_shard_opts.sp_axis));
  if (!rc && P.sp_axis >= 0) rc = sequence_parallel(&P);
  if (!rc) {
    if (!f->arg_sharding) f->arg_sharding = gv_alloc(m->arena, (size_t)(f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs) * sizeof *f->arg_sharding);
    for (int i = 0; i < f->body->nargs; i++) f->arg_sharding[i] = P.sh[i] ? P.sh[i] : replicated(&P, f->body->args[i]);
    P.sub = gv_subst_new();
    gv_op *op = f->body->first;
    while (op && !rc) {
      gv_op *next = op->next; /* the reshards materialise inserts after op are not revisited */
      gv_subst_op(P.sub, op);
      rc = materialise(&P, op);
      op = next;
    }
    gv_subst_block(P.sub, f->body);
    gv_subst_free(P.sub);
    if (!rc) rc = gather_grad_rows(&P, f);
  }
  free(P.vals);
  free(P.sh);
  free(P.mm.key);
  free(P.mm.first);
  free(P.mm.last);
  free(P.sp_base);
  return rc ? -1 : 0;
}
