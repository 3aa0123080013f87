/* memory_plan.c — the memory-plan pass: places every activation in one
 * arena, reusing bytes between values whose lifetimes do not overlap
 * (the contract is docs/device-program.md, "Memory plan").
 *
 * Schedule: the program order, one point per op (an if before the ops of
 * its regions; a fused op's body is part of the fused op). Block arguments
 * are defined at point 0. A value is live from its definition to its last
 * use; views (GV_VIEW) alias their operand, so the root value stays live as
 * long as any alias is used; graph outputs are used by galv.return, the
 * last point; the operand of a collective left in flight (ir/comm_sync.h)
 * stays live until the first read of its result, where the emitters sync
 * (so no op writes over it while the call runs), or until the overlap
 * window's wait (a collective marked `wait_posted` waits for the calls
 * posted before the previous marked one). Each value takes its storage bytes (ir/storage.h: a value the
 * storage pass stores 16-bit takes 2 bytes per element, not its type's 4).
 * Parameters, constants and views of them are not in the arena
 * (offset -1). Placement: values in some order, each put at the lowest
 * 64-byte-aligned offset where it overlaps no placed value with an
 * overlapping live range (first_fit.c: near-linear in the values, not
 * quadratic); two orders are tried (by size descending, by definition
 * point) and the smaller arena kept. lower_bound is the most (unaligned) bytes live
 * at any one point.
 *
 * Results: galv.arena as the first op of the body (replacing an old one),
 * and `offsets` on every op with results except galv.constant and the ops
 * inside galv.fused bodies. The pass prints nothing, never changes what the
 * program computes, and never lets two simultaneously-live values share a
 * byte. value->id is scratch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/comm_sync.h"
#include "../ir/storage.h"
#include "first_fit.h"
#include "passes.h"

#define ALIGN 64

typedef struct {
  int root;      /* id of the value whose bytes this one uses (itself unless a view) */
  bool external; /* parameter, constant or a view of one: not in the arena */
  bool planned;  /* a value of the schedule (not inside a fused body) */
  int64_t bytes; /* root only */
  int start, end;
  bool fl_end;   /* root: its end is an in-flight call's completion (fl_done), not a read */
  int64_t off;
  const gv_value *val; /* for GALV_MEM_PEAK's listing */
} vinfo;

typedef struct {
  gv_module *m;
  vinfo *v;
  int nvals;
  int point;
  int (*fl)[3];  /* collectives in flight: their result's root id, their operand's root id, their post number */
  int nfl, capfl;
  int posted;    /* collectives posted so far */
  int mark;      /* the post number of the last wait_posted collective, -1: none */
} ctx;

static int number(gv_block *b, int n) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
    for (int r = 0; r < op->nregions; r++) n = number(op->regions[r], n);
  }
  return n;
}

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static void use(ctx *c, const gv_value *u, int point) {
  vinfo *r = &c->v[c->v[u->id].root];
  if (point > r->end) r->end = point, r->fl_end = false;
}

const gv_mem_observer *gv_memory_plan_observer;

/* In-flight call k is done at point p: its operand lives to p; it leaves the list (the last takes its place). */
static void fl_done(ctx *c, int k, int p) {
  vinfo *o = &c->v[c->fl[k][1]];
  if (p > o->end) o->end = p, o->fl_end = true;
  c->nfl--;
  for (int j = 0; j < 3; j++) c->fl[k][j] = c->fl[c->nfl][j];
}

/* A collective left in flight (ir/comm_sync.h) reads its operand until the
 * sync point before the first read of its result: the operand stays live
 * until that read, so that no op writes over it while the call runs (the
 * emitters would sync before such a write, and the overlap would be lost). */
static void in_flight_reads(ctx *c, const gv_op *op, int p) {
  for (int i = 0; i < op->nopnds && c->nfl; i++) {
    int r = c->v[op->opnds[i]->id].root;
    for (int k = 0; k < c->nfl; k++)
      if (c->fl[k][0] == r) fl_done(c, k--, p);
  }
  for (int r = 0; r < op->nregions && c->nfl; r++)
    for (const gv_op *b = op->regions[r]->first; b && c->nfl; b = b->next) in_flight_reads(c, b, p);
}

/* Defines the results of the ops of b and records the uses of their
 * operands, one point per op, in schedule order. */
static int walk(ctx *c, gv_block *b) {
  gv_module *m = c->m;
  for (gv_op *op = b->first; op; op = op->next) {
    if (op->code == GV_OP_ARENA) continue;
    int p = ++c->point;
    if (gv_memory_plan_observer) gv_memory_plan_observer->point(gv_memory_plan_observer->ud, p, op);
    if (c->nfl && !b->parent) in_flight_reads(c, op, p);
    if (c->nfl && !b->parent && gv_comm_is_collective(op) && gv_get_int(op, "wait_posted", 0) && c->mark >= 0) {
      /* the overlap window (comm_sync.h): the calls posted before the previous marked one are waited for here */
      for (int k = 0; k < c->nfl; k++)
        if (c->fl[k][2] < c->mark) fl_done(c, k--, p);
    }
    for (int i = 0; i < op->nopnds; i++) {
      if (!c->v[op->opnds[i]->id].planned)
        return gv_error_op(m, op, "memory-plan: operand %d is not a value of the schedule", i);
      use(c, op->opnds[i], p);
    }
    if (!b->parent && gv_comm_is_collective(op) && op->nopnds && op->nres && !gv_comm_sync_at_once(op)) {
      if (c->nfl == c->capfl) {
        int cap = c->capfl ? 2 * c->capfl : 16;
        int(*n)[3] = realloc(c->fl, sizeof *n * (size_t)cap);
        if (!n) return gv_error_plain("memory-plan: out of memory");
        c->fl = n, c->capfl = cap;
      }
      if (gv_get_int(op, "wait_posted", 0)) c->mark = c->posted;
      c->fl[c->nfl][0] = op->res[0]->id; /* a collective's result is no view: its own root */
      c->fl[c->nfl][1] = c->v[op->opnds[0]->id].root;
      c->fl[c->nfl++][2] = c->posted++;
    }
    for (int i = 0; i < op->nres; i++) {
      const gv_value *res = op->res[i];
      vinfo *vi = &c->v[res->id];
      vi->planned = true;
      vi->root = res->id;
      vi->val = res;
      vi->start = vi->end = p;
      if (op->code == GV_OP_CONSTANT) {
        vi->external = true;
        continue;
      }
      if ((gv_ops[op->code].flags & GV_VIEW) && op->nopnds >= 1 && op->nres == 1) {
        vinfo *src = &c->v[op->opnds[0]->id];
        vi->root = src->root;
        vi->external = src->external;
        continue;
      }
      int64_t n = gv_type_numel(&res->type);
      size_t es = gv_dtype_size(gv_value_storage(res)); /* the storage pass's dtype (16-bit under --precision) */
      if (n < 0 || es == 0) return gv_error_op(m, op, "memory-plan: result %d has no static shape and dtype", i);
      if (n > INT64_MAX / 2 / (int64_t)es) return gv_error_op(m, op, "memory-plan: result %d is too large", i);
      vi->bytes = n * (int64_t)es;
    }
    if (op->code != GV_OP_FUSED)
      for (int r = 0; r < op->nregions; r++)
        if (walk(c, op->regions[r])) return -1;
  }
  return 0;
}

static int64_t off_of(const ctx *c, const gv_value *v) {
  const vinfo *vi = &c->v[v->id];
  return vi->external ? -1 : c->v[vi->root].off;
}

static void annotate(ctx *c, gv_block *b) {
  for (gv_op *op = b->first; op; op = op->next) {
    if (op->nres > 0 && op->code != GV_OP_CONSTANT) {
      int64_t buf[16], *offs = op->nres <= 16 ? buf : gv_alloc(c->m->arena, (size_t)op->nres * sizeof *offs);
      for (int i = 0; i < op->nres; i++) offs[i] = off_of(c, op->res[i]);
      gv_set_ints(c->m, op, "offsets", op->nres, offs);
    }
    if (op->code != GV_OP_FUSED)
      for (int r = 0; r < op->nregions; r++) annotate(c, op->regions[r]);
  }
}

static const vinfo *sort_base;

static int by_size(const void *a, const void *b) {
  const vinfo *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

static int by_start(const void *a, const void *b) {
  const vinfo *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

typedef struct {
  int64_t lo, hi;
} range;


/* Places roots[0..n) (in that order) at the lowest fitting offsets
 * (first_fit.c): a value goes at the lowest offset where it overlaps no
 * placed value whose lifetime overlaps its own. Returns the arena size, or
 * -1 when out of memory; a size > cap when the arena passes cap (the
 * placement then abandoned, no offset set). */
static int64_t place(vinfo *v, const int *roots, int n, int npoints, int64_t cap) {
  gv_ff_block *b = malloc((size_t)(n + 1) * sizeof *b);
  int *order = malloc((size_t)(n + 1) * sizeof *order);
  int64_t total = -1;
  if (b && order) {
    for (int i = 0; i < n; i++) {
      const vinfo *a = &v[roots[i]];
      b[i] = (gv_ff_block){.start = a->start, .end = a->end, .size = align_up(a->bytes)};
      order[i] = i;
    }
    total = gv_first_fit_below(b, order, n, npoints, cap);
    for (int i = 0; total >= 0 && total <= cap && i < n; i++) v[roots[i]].off = b[i].off;
  }
  free(b);
  free(order);
  return total;
}

/* Training steps (functions with galv.updates): a result that updates an
 * argument is written straight into that argument's bytes (the state
 * buffer, offset -1, in_place[i] = 1) when every use of the argument is at
 * or before the result's definition and a use at the definition is by the
 * defining elementwise op itself, over exactly its size (each element is
 * read before it is written). Otherwise it is placed in the arena and the
 * runtime copies it after the step (in_place[i] = 0). */
static int64_t *update_in_place(ctx *c, gv_func *f) {
  gv_block *body = f->body;
  gv_op *ret = gv_block_terminator(body);
  int n = ret ? ret->nopnds : 0;
  int64_t *ip = gv_alloc(c->m->arena, (size_t)(n + 1) * sizeof *ip);
  for (int i = 0; i < n; i++) {
    ip[i] = 0;
    int a = f->res_updates[i];
    gv_value *r = ret->opnds[i];
    if (a < 0 || a >= body->nargs || !r->def) continue;
    const gv_value *arg = body->args[a];
    vinfo *rv = &c->v[r->id], *av = &c->v[arg->id];
    const gv_op *d = r->def;
    bool ew = d->code == GV_OP_FUSED || (gv_ops[d->code].flags & GV_ELEMENTWISE);
    if (rv->external || rv->root != r->id || !gv_type_equal(&r->type, &arg->type)) continue;
    if (av->end > rv->start || (av->end == rv->start && !ew)) continue;
    rv->external = true; /* its views follow after the loop (one pass, not one per result) */
    ip[i] = 1;
  }
  for (int k = 0; k < c->nvals; k++)
    if (c->v[k].planned && c->v[c->v[k].root].external) c->v[k].external = true;
  return ip;
}

static int64_t vbytes(const gv_value *v) { return gv_type_numel(&v->type) * (int64_t)gv_dtype_size(v->type.dtype); }

/* The gradients a training step holds for its update: per trained
 * parameter P the gradient its update reads, as big as P's optimizer state
 * ("opt.X:P", split like the update: the whole gradient at ZeRO stage 0, the
 * shard at stages 2 and 3), except where the update slices it out of a
 * whole (all-reduced) gradient (ZeRO-1: a galv.shard_slice at
 * "optimizer/OPT/P" reading a computed value), which lives whole until the
 * update. A parameter
 * without state counts its own bytes. No state at all (no optimizer, or the
 * state not named): the parameters' bytes. */
static int64_t grad_bytes(gv_func *f, int64_t pb) {
  gv_block *body = f->body;
  gv_arg_index names;
  if (!f->arg_is_state || gv_arg_index_build(&names, f)) return pb;
  int n = body->nargs;
  int64_t *g = calloc((size_t)n + 1, sizeof *g); /* per parameter: its gradient's bytes, 0 unknown */
  if (!g) {
    gv_arg_index_free(&names);
    return pb;
  }
  for (int i = 0; i < n; i++) {
    const char *nm = f->arg_names[i], *c = nm && !strncmp(nm, "opt.", 4) ? strchr(nm, ':') : NULL;
    if (!c || !f->arg_is_state[i]) continue;
    int lo, hi;
    gv_arg_index_find(&names, c + 1, &lo, &hi);
    for (int k = lo; k < hi; k++) {
      int j = names.idx[k];
      if (f->arg_is_param[j] && !g[j] && body->args[j]->type.rank == body->args[i]->type.rank) g[j] = vbytes(body->args[i]);
    }
  }
  for (gv_op *op = body->first; op; op = op->next) {
    const char *nm = op->code == GV_OP_SHARD_SLICE && op->loc && !strncmp(op->loc, "optimizer/", 10) ? strchr(op->loc + 10, '/') : NULL;
    if (!nm || !op->opnds[0]->def) continue; /* a slice of P itself (weight decay) is no gradient */
    int lo, hi;
    gv_arg_index_find(&names, nm + 1, &lo, &hi);
    for (int k = lo; k < hi; k++)
      if (f->arg_is_param[names.idx[k]]) g[names.idx[k]] = vbytes(op->opnds[0]);
  }
  int64_t gb = 0;
  for (int i = 0; i < n; i++)
    if (gv_arg_trains(f, i)) gb += g[i] ? g[i] : vbytes(body->args[i]);
  free(g);
  gv_arg_index_free(&names);
  return gb;
}

/* The memory breakdown of a training step, as galv.arena attributes:
 * param_bytes, grad_bytes (grad_bytes above; 16-bit under --grad-dtype bf16),
 * optimizer_bytes (galv.state arguments), activation_bytes (the most bytes
 * of forward values live at once: values defined up to the loss, forward
 * temporaries included), saved_activation_bytes (forward values still live
 * after the loss: those kept for backward), working_copy_bytes (ZeRO-1/2
 * under 16-bit training: the whole 16-bit copies of the split master
 * weights, gathers marked working_copy, held in the arena for the step;
 * not counted as activations; absent when none). */
static void train_breakdown(ctx *c, gv_func *f, const int *roots, int nroots, gv_op *arena) {
  gv_block *body = f->body;
  int64_t pb = 0, ob = 0;
  for (int i = 0; i < body->nargs; i++) {
    int64_t b = gv_type_numel(&body->args[i]->type) * (int64_t)gv_dtype_size(body->args[i]->type.dtype);
    if (f->arg_is_param[i]) pb += b;
    else if (f->arg_is_state && f->arg_is_state[i]) ob += b;
  }
  gv_op *ret = gv_block_terminator(body);
  int lossp = ret && ret->nopnds ? c->v[c->v[ret->opnds[0]->id].root].start : c->point;
  int64_t *diff = calloc((size_t)c->point + 2, sizeof *diff), live = 0, act = 0, wc = 0;
  /* ZeRO-1/2's whole 16-bit working copies (the gathers marked working_copy, propagate-sharding): model
   * states held in the arena for the step, counted apart from the activations */
  int nv = 0;
  for (int i = 0; i < body->nargs; i++) nv = body->args[i]->id + 1 > nv ? body->args[i]->id + 1 : nv;
  for (gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) nv = op->res[i]->id + 1 > nv ? op->res[i]->id + 1 : nv;
  char *copy = calloc((size_t)nv + 1, 1);
  for (gv_op *op = body->first; copy && op; op = op->next)
    if (op->nres == 1 && gv_get_attr(op, "working_copy") && op->res[0]->id >= 0 && !copy[c->v[op->res[0]->id].root]) {
      copy[c->v[op->res[0]->id].root] = 1;
      wc += c->v[c->v[op->res[0]->id].root].bytes;
    }
  for (int i = 0; diff && i < nroots; i++) {
    const vinfo *r = &c->v[roots[i]];
    if (r->start > lossp || (copy && copy[roots[i]])) continue;
    diff[r->start] += r->bytes;
    diff[r->end + 1] -= r->bytes;
  }
  for (int p = 0; diff && p <= lossp; p++) {
    live += diff[p];
    if (live > act) act = live;
  }
  int64_t saved = 0;
  for (int i = 0; i < nroots; i++) {
    const vinfo *r = &c->v[roots[i]];
    if (r->start <= lossp && r->end > lossp && !(copy && copy[roots[i]])) saved += r->bytes;
  }
  free(diff), free(copy);
  gv_set_int(c->m, arena, "param_bytes", pb);
  /* gradients at their storage: --grad-dtype bf16 under 16-bit storage (the storage pass) halves them */
  bool g16 = gv_precision_opts.storage != GV_DT_F32 && gv_precision_opts.grad != GV_DT_F32 && gv_module_has_narrow_storage(c->m);
  int64_t gb = grad_bytes(f, pb);
  gv_set_int(c->m, arena, "grad_bytes", g16 ? gb / 2 : gb);
  gv_set_int(c->m, arena, "optimizer_bytes", ob);
  if (wc) gv_set_int(c->m, arena, "working_copy_bytes", wc);
  gv_set_int(c->m, arena, "activation_bytes", act);
  gv_set_int(c->m, arena, "saved_activation_bytes", saved);
}

/* GALV_MEM_PEAK=N[:FILE] (a debugging aid; stderr, or appended to FILE: the
 * planner's realisations run with stderr silenced): the N largest values
 * live at the busiest point (lower_bound's), with the node that defines
 * each, its bytes and live range in ops. */
static void peak_dump(const ctx *c, const int *roots, int nroots, int at, int64_t total, const char *spec) {
  int n = atoi(spec), nl = 0;
  const char *path = strchr(spec, ':');
  FILE *out = path ? fopen(path + 1, "a") : stderr;
  int *live = out ? malloc((size_t)(nroots + 1) * sizeof *live) : NULL;
  if (!live) {
    if (out && out != stderr) fclose(out);
    return;
  }
  for (int i = 0; i < nroots; i++)
    if (c->v[roots[i]].start <= at && c->v[roots[i]].end >= at) live[nl++] = roots[i];
  sort_base = c->v;
  qsort(live, (size_t)nl, sizeof *live, by_size);
  fprintf(out, "memory-plan: busiest point %d of %d: %lld bytes in %d values; the largest:\n", at, c->point,
          (long long)total, nl);
  for (int i = 0; i < nl && i < (n > 0 ? n : 20); i++) {
    const vinfo *v = &c->v[live[i]];
    const gv_op *d = v->val ? v->val->def : NULL;
    fprintf(out, "memory-plan:   %13lld  ops %d-%d  %s %s\n", (long long)v->bytes, v->start, v->end,
            d ? gv_ops[d->code].name : "input", d && d->loc ? d->loc : "");
  }
  free(live);
  if (out != stderr) fclose(out);
}

int gv_pass_memory_plan(gv_module *m) {
  if (!m->main || !m->main->body) return gv_error(m, "memory-plan: module has no function");
  gv_func *f = m->main;
  gv_block *body = f->body;
  if (body->first && body->first->code == GV_OP_ARENA) gv_op_unlink(body->first);
  int n = number(body, 0);
  ctx c = {.m = m, .v = calloc((size_t)n + 1, sizeof(vinfo)), .nvals = n, .mark = -1};
  int *roots = malloc((size_t)(n + 1) * sizeof *roots);
  int64_t *diff = NULL;
  range *best = NULL; /* (value id, offset) of the chosen placement */
  int rc = -1;
  if (!c.v || !roots) {
    gv_error(m, "memory-plan: out of memory");
    goto done;
  }
  for (int i = 0; i < body->nargs; i++) {
    const gv_value *a = body->args[i];
    vinfo *vi = &c.v[a->id];
    vi->planned = true;
    vi->root = a->id;
    vi->external = f->arg_is_param[i] || (f->arg_is_state && f->arg_is_state[i]);
    int64_t k = gv_type_numel(&a->type);
    size_t es = gv_dtype_size(gv_value_storage(a)); /* a 16-bit inference program's inputs: 2 bytes */
    if (!vi->external && (k < 0 || es == 0 || k > INT64_MAX / 2 / (int64_t)es)) {
      gv_error(m, "memory-plan: input '%s' has no static shape and dtype", f->arg_names[i]);
      goto done;
    }
    if (!vi->external) vi->bytes = k * (int64_t)es;
  }
  if (walk(&c, body)) goto done;
  for (int k = 0; k < c.nfl; k++) /* results nobody reads: in flight until the end of the run */
    if (c.v[c.fl[k][1]].end < c.point) c.v[c.fl[k][1]].end = c.point, c.v[c.fl[k][1]].fl_end = false;
  int64_t *in_place = f->res_updates ? update_in_place(&c, f) : NULL;

  int nroots = 0;
  for (int i = 0; i < n; i++)
    if (c.v[i].planned && !c.v[i].external && c.v[i].root == i) roots[nroots++] = i;
  /* Two placement orders (largest first; earliest first); the smaller
   * arena wins, ties to the first. */
  sort_base = c.v;
  int64_t total = -1;
  int (*const orders[])(const void *, const void *) = {by_size, by_start};
  best = malloc((size_t)(nroots + 1) * sizeof *best);
  if (!best) {
    gv_error(m, "memory-plan: out of memory");
    goto done;
  }
  /* No placement is below the most aligned bytes live at one point (the
   * values live there hold disjoint bytes): an order that reaches it is
   * kept, as the later one could only tie (ties go to the first). */
  diff = calloc((size_t)c.point + 2, sizeof *diff);
  if (!diff) {
    gv_error(m, "memory-plan: out of memory");
    goto done;
  }
  for (int i = 0; i < nroots; i++) {
    const vinfo *r = &c.v[roots[i]];
    diff[r->start] += align_up(r->bytes);
    diff[r->end + 1] -= align_up(r->bytes);
  }
  int64_t least = 0, held = 0;
  for (int p = 0; p <= c.point; p++) {
    held += diff[p];
    if (held > least) least = held;
  }
  free(diff);
  diff = NULL;
  for (int o = 0; o < 2 && total != least; o++) {
    qsort(roots, (size_t)nroots, sizeof *roots, orders[o]);
    int64_t t = place(c.v, roots, nroots, c.point + 1, total < 0 ? INT64_MAX : total);
    if (t < 0) {
      gv_error(m, "memory-plan: out of memory");
      goto done;
    }
    if (total < 0 || t < total) {
      total = t;
      for (int i = 0; i < nroots; i++) best[i] = (range){roots[i], c.v[roots[i]].off};
    }
  }
  for (int i = 0; i < nroots; i++) c.v[best[i].lo].off = best[i].hi;

  /* Most bytes live at once: +bytes at start, -bytes after end. */
  diff = calloc((size_t)c.point + 2, sizeof *diff);
  if (!diff) {
    gv_error(m, "memory-plan: out of memory");
    goto done;
  }
  for (int i = 0; i < nroots; i++) {
    const vinfo *r = &c.v[roots[i]];
    diff[r->start] += r->bytes;
    diff[r->end + 1] -= r->bytes;
  }
  int64_t live = 0, lower = 0;
  int busiest = 0;
  for (int p = 0; p <= c.point; p++) {
    live += diff[p];
    if (live > lower) lower = live, busiest = p;
  }
  for (int i = 0; gv_memory_plan_observer && i < nroots; i++) {
    const vinfo *r = &c.v[roots[i]];
    gv_memory_plan_observer->root(gv_memory_plan_observer->ud, r->start, r->end, r->bytes, r->fl_end);
  }
  if (getenv("GALV_MEM_PEAK")) peak_dump(&c, roots, nroots, busiest, lower, getenv("GALV_MEM_PEAK"));

  annotate(&c, body);
  gv_op *arena = gv_op_new(m, GV_OP_ARENA, 0, NULL, 0);
  gv_op_set_loc(m, arena, "arena", NULL);
  int64_t *argoff = gv_alloc(m->arena, (size_t)(body->nargs + 1) * sizeof *argoff);
  for (int i = 0; i < body->nargs; i++) argoff[i] = off_of(&c, body->args[i]);
  gv_set_ints(m, arena, "arg_offsets", body->nargs, argoff);
  gv_set_int(m, arena, "bytes", total);
  gv_set_int(m, arena, "lower_bound", lower);
  if (in_place) {
    gv_op *r = gv_block_terminator(body);
    gv_set_ints(m, arena, "in_place", r->nopnds, in_place);
    train_breakdown(&c, f, roots, nroots, arena);
  }
  if (body->first) gv_insert_before(body->first, arena);
  else gv_block_append(body, arena);
  rc = 0;
done:
  free(diff);
  free(best);
  free(roots);
  free(c.v);
  free(c.fl);
  return rc;
}
