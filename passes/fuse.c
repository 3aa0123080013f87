/* fuse.c — the fuse pass: groups elementwise ops into galv.fused ops
 * (docs/device-program.md), so that each group runs as one loop.
 *
 * An op is fusible when it is elementwise (GV_ELEMENTWISE: arithmetic,
 * cast, where, compares, gelu, silu, ...), has one result with a static
 * shape and no regions, and is no gradient sum over microbatches
 * ("accumulate/..."; passes/accumulate.c). The pass walks each block once in program order and
 * keeps at most one open group per iteration shape:
 *   - a fusible op joins the open group of its result shape (or opens one);
 *   - any op that uses a value of an open group it does not join closes that
 *     group (uses inside its regions count).
 * Ops that are neither (an independent matmul, a fusible op of another
 * shape) are skipped over: they stay where they are. A closed group of two
 * or more ops becomes one galv.fused op at the position of its last member.
 * That is legal because every member's operands are defined before the
 * member (so before the last member), and every op outside the group that
 * uses a member's value comes after the group closed, so after its last
 * member. Operands from outside become block arguments (deduplicated, in
 * first-use order); member values used outside the group are yielded; the
 * fused op takes the last member's location. A group of one op is left as
 * it is (the emitters handle lone elementwise ops). Regions of galv.if are
 * fused block by block.
 *
 * The pass must never change what the program computes nor move an op
 * before a definition of its operands; it creates no new arithmetic.
 * value->id and value->nuses are scratch (numbered and counted on entry).
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct {
  gv_op **ops; /* members in program order */
  int n, cap;
  gv_type shape;
  bool open;
} group;

typedef struct {
  gv_module *m;
  int *gid;      /* by value id: 1 + index of the group that defines it, 0 none */
  int *pos;      /* by value id: a member's index in its group (build's scratch) */
  int nids;
  group *groups;
  int ngroups, cap;
  int nfused;
  gv_subst *sub; /* group results replaced by the fused op's, resolved as the walk reaches each use */
  bool oom;
} ctx;

static int number(gv_block *b, int n) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
    for (int r = 0; r < op->nregions; r++) n = number(op->regions[r], n);
  }
  return n;
}

/* Values created by this pass have id 0, which belongs to no group. */
static int gid_of(const ctx *c, const gv_value *v) {
  return v->id > 0 && v->id < c->nids ? c->gid[v->id] - 1 : -1;
}

static bool fusible(const gv_op *op) {
  if (!(gv_ops[op->code].flags & GV_ELEMENTWISE) || op->nres != 1 || op->nregions) return false;
  /* gradient sums over microbatches (passes/accumulate.c) stay lone adds: a
   * chain g0 + g1 + ... fused into one loop at its last member would keep
   * every microbatch's gradient live to the end of the step */
  if (op->loc && op->loc[0] == 'a' && !strncmp(op->loc, "accumulate/", 11)) return false;
  const gv_type *t = &op->res[0]->type;
  if (t->dtype == GV_DT_UNKNOWN || !gv_type_is_static(t)) return false;
  for (int i = 0; i < op->nopnds; i++) {
    const gv_type *u = &op->opnds[i]->type;
    if (u->dtype == GV_DT_UNKNOWN || !gv_type_is_static(u) || u->rank > t->rank) return false;
  }
  return true;
}

static bool same_shape(const gv_type *a, const gv_type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

static bool add_member(ctx *c, int g, gv_op *op) {
  group *G = &c->groups[g];
  if (G->n == G->cap) {
    int cap = G->cap ? 2 * G->cap : 4;
    gv_op **ops = realloc(G->ops, (size_t)cap * sizeof *ops);
    if (!ops) return false;
    G->ops = ops;
    G->cap = cap;
  }
  G->ops[G->n++] = op;
  c->gid[op->res[0]->id] = g + 1;
  return true;
}

static int new_group(ctx *c, const gv_type *shape) {
  if (c->ngroups == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    group *gs = realloc(c->groups, (size_t)cap * sizeof *gs);
    if (!gs) return -1;
    c->groups = gs;
    c->cap = cap;
  }
  group *G = &c->groups[c->ngroups];
  memset(G, 0, sizeof *G);
  G->shape = *shape;
  G->open = true;
  return c->ngroups++;
}

/* The index of an outside operand among the fused op's arguments: open
 * addressing on the value pointer (a group can have thousands of members,
 * say an optimizer's updates: no scan per operand). */
static int ext_slot(gv_value **keys, int *vals, size_t mask, gv_value *u, int *next, gv_value **ext) {
  size_t h = ((uintptr_t)u >> 4) * 0x9e3779b97f4a7c15ull & mask;
  while (keys[h] && keys[h] != u) h = (h + 1) & mask;
  if (!keys[h]) keys[h] = u, vals[h] = *next, ext[(*next)++] = u;
  return vals[h];
}

/* Turns group g (two or more members, all still in block b) into one
 * galv.fused op at the place of its last member. Linear in the members'
 * operands. */
static int build(ctx *c, gv_block *b, int g) {
  gv_module *m = c->m;
  group *G = &c->groups[g];
  int k = G->n, next = 0, ny = 0, nslots = 0;
  for (int i = 0; i < k; i++) nslots += G->ops[i]->nopnds;
  size_t cap = 16;
  while (cap < 2 * (size_t)nslots + 2) cap *= 2;
  gv_value **ext = malloc((size_t)(nslots + 1) * sizeof *ext);
  gv_value **ys = malloc((size_t)(k + 1) * sizeof *ys);
  gv_value **keys = calloc(cap, sizeof *keys);
  int *vals = malloc(cap * sizeof *vals), *inside = calloc((size_t)k + 1, sizeof *inside);
  if (!ext || !ys || !keys || !vals || !inside) {
    free(ext), free(ys), free(keys), free(vals), free(inside);
    return gv_error(m, "fuse: out of memory");
  }
  /* member values: their index in the group (value ids of members are valid: original ops) */
  for (int i = 0; i < k; i++) c->pos[G->ops[i]->res[0]->id] = i;
  for (int i = 0; i < k; i++) {
    const gv_op *op = G->ops[i];
    for (int j = 0; j < op->nopnds; j++) {
      gv_value *u = op->opnds[j];
      if (gid_of(c, u) == g) inside[c->pos[u->id]]++; /* used inside the group */
      else ext_slot(keys, vals, cap - 1, u, &next, ext);
    }
  }
  /* Yield the members whose value has a use outside the group. */
  for (int i = 0; i < k; i++) {
    gv_value *v = G->ops[i]->res[0];
    if (v->nuses > inside[i] || (i == k - 1 && ny == 0)) ys[ny++] = v;
  }
  gv_op *last = G->ops[k - 1], *anchor = last->next;
  gv_block *rb = gv_block_new(m);
  for (int e = 0; e < next; e++) gv_block_add_arg(m, rb, ext[e]->type);
  for (int i = 0; i < k; i++) {
    gv_op *op = G->ops[i];
    gv_op_unlink(op);
    gv_block_append(rb, op);
    for (int j = 0; j < op->nopnds; j++)
      if (gid_of(c, op->opnds[j]) != g) op->opnds[j] = rb->args[ext_slot(keys, vals, cap - 1, op->opnds[j], &next, ext)];
  }
  gv_op *y = gv_op_new(m, GV_OP_YIELD, ny, ys, 0);
  y->loc = last->loc;
  y->onnx_op = last->onnx_op;
  gv_block_append(rb, y);
  gv_op *f = gv_op_new(m, GV_OP_FUSED, next, ext, ny);
  f->loc = last->loc;
  f->onnx_op = last->onnx_op;
  for (int i = 0; i < ny; i++) {
    f->res[i]->type = ys[i]->type;
    f->res[i]->name = ys[i]->name;
    /* Uses outside the group follow (every op that used a member's value
     * before now closed the group): resolved as the walk reaches them. */
    gv_subst_add(c->sub, ys[i], f->res[i], NULL);
  }
  gv_op_add_region(m, f, rb);
  if (anchor) gv_insert_before(anchor, f);
  else gv_block_append(b, f);
  c->nfused++;
  free(ext), free(ys), free(keys), free(vals), free(inside);
  return 0;
}

static int close_group(ctx *c, gv_block *b, int g) {
  c->groups[g].open = false;
  return c->groups[g].n >= 2 ? build(c, b, g) : 0;
}

/* Closes every open group of `open` (other than keep) that op uses,
 * including uses inside op's regions. */
static int close_used(ctx *c, gv_block *b, const gv_op *op, int *open, int *nopen, int keep) {
  for (int i = 0; i < op->nopnds; i++) {
    int g = gid_of(c, op->opnds[i]);
    if (g < 0 || g == keep || !c->groups[g].open) continue;
    for (int o = 0; o < *nopen; o++)
      if (open[o] == g) {
        open[o] = open[--*nopen];
        break;
      }
    if (close_group(c, b, g)) return -1;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *in = op->regions[r]->first; in; in = in->next)
      if (close_used(c, b, in, open, nopen, keep)) return -1;
  return 0;
}

static int fuse_block(ctx *c, gv_block *b) {
  int n = 0;
  for (gv_op *op = b->first; op; op = op->next) n++;
  int *open = malloc((size_t)(n + 1) * sizeof *open), nopen = 0, rc = 0;
  if (!open) return gv_error(c->m, "fuse: out of memory");
  for (gv_op *op = b->first, *next; op && !rc; op = next) {
    next = op->next;
    gv_subst_op(c->sub, op);
    for (int r = 0; r < op->nregions && !rc; r++) rc = fuse_block(c, op->regions[r]);
    if (rc) break;
    int target = -1;
    bool can = fusible(op);
    if (can)
      for (int o = 0; o < nopen && target < 0; o++)
        if (same_shape(&c->groups[open[o]].shape, &op->res[0]->type)) target = open[o];
    uint64_t ver = gv_subst_version(c->sub);
    if ((rc = close_used(c, b, op, open, &nopen, target))) break;
    if (gv_subst_version(c->sub) != ver) gv_subst_op(c->sub, op); /* the groups it closed are fused ops now */
    if (!can) continue;
    if (target < 0) {
      target = new_group(c, &op->res[0]->type);
      if (target < 0) {
        rc = gv_error(c->m, "fuse: out of memory");
        break;
      }
      open[nopen++] = target;
    }
    if (!add_member(c, target, op)) rc = gv_error(c->m, "fuse: out of memory");
  }
  for (int o = 0; o < nopen && !rc; o++) rc = close_group(c, b, open[o]);
  free(open);
  return rc;
}

int gv_pass_fuse(gv_module *m) {
  if (!m->main || !m->main->body) return gv_error(m, "fuse: module has no function");
  gv_block *body = m->main->body;
  ctx c = {.m = m};
  c.nids = number(body, 1);
  c.gid = calloc((size_t)c.nids + 1, sizeof *c.gid);
  c.pos = calloc((size_t)c.nids + 1, sizeof *c.pos);
  if (!c.gid || !c.pos) {
    free(c.gid), free(c.pos);
    return gv_error(m, "fuse: out of memory");
  }
  gv_count_uses(body);
  c.sub = gv_subst_new();
  int rc = fuse_block(&c, body);
  if (!rc) gv_subst_block(c.sub, body);
  gv_subst_free(c.sub);
  for (int g = 0; g < c.ngroups; g++) free(c.groups[g].ops);
  free(c.groups);
  free(c.gid), free(c.pos);
  return rc;
}
