/* cluster_layers.c — cluster-layers: coarsens the function body's op graph
 * into K layer groups (--layers K) that the stage partitioner
 * (planner/pipeline.c) assigns to pipeline stages (docs/pipeline.md).
 *
 * 1. METIS (METIS_PartGraphKway) partitions the undirected op graph: vertex
 *    weight = the op's FLOPs (planner/cost.c), edge weight = the bytes of the
 *    values between the two ops; both scaled to fit idx_t. K = 1 skips METIS
 *    (METIS 5.1 crashes when asked for one part).
 * 2. Repair into an acyclic ordered sequence: METIS's parts are ranked by the
 *    median program position of their ops; every op then takes
 *    max(its part's rank, the groups of its operands' definers) in one
 *    forward sweep, so every edge goes from a group to itself or to a later
 *    group (acyclic by construction). Sorting the ops by (group, program
 *    position) is then a topological order in which every group is one
 *    contiguous run, and the body is reordered into it.
 * 3. Check: exactly K non-empty groups and each group's FLOPs <= bound =
 *    max((1 + delta) * total / K, total / K + largest op), delta = 0.25.
 *    When the repaired METIS partition misses either (the repair can empty
 *    or overfill groups), the sequence is re-cut: a DP over cut positions of
 *    that order picks K non-empty contiguous runs within the bound with the
 *    least total bytes crossing the cuts (a cut within the bound always
 *    exists once there are >= K ops: the greedy fill gives one).
 * 4. Signatures: each group hashes its ops (opcode, operand / result types,
 *    wiring inside the group) in a canonical order (depth in the group,
 *    then each op's structural hash), not the program's; groups with equal
 *    signatures are the same
 *    block (op attr layer_block = the first such group), so the planner costs
 *    each block once per sub-mesh.
 *
 * Constants (operand-free ops) are no vertices: each takes the least group
 * of its users, so no group holds constants alone (an empty stage).
 *
 * Each top-level op gets the attribute `layer` (its group) and `layer_block`.
 */
#include "passes.h"
#include "layer_units.h"

#include <fcntl.h>
#include <metis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner/cost.h"

gv_pipe_options gv_pipe_opts = {.layers = 0, .delta = 0.25, .quiet = true};

typedef struct {
  int n;
  int nconst;       /* constants: not vertices (op->id = -2 - index) */
  gv_op **ops;      /* body order */
  int64_t *flops;
  int *ndeps;       /* per op: definer indices (top-level ops), incl. uses inside regions */
  int **deps;
  int64_t **dbytes; /* bytes of the value behind each dep */
} graph;

static int64_t value_bytes(const gv_value *v) {
  int64_t n = gv_type_numel(&v->type);
  return n > 0 ? n * (int64_t)gv_dtype_size(v->type.dtype) : 0;
}

/* Collects the top-level definers of every value op (and its regions) uses. */
static void collect_deps(gv_module *m, graph *g, int i, const gv_op *op, int *cap) {
  for (int k = 0; k < op->nopnds; k++) {
    gv_value *v = op->opnds[k];
    if (!v->def || v->def->parent != m->main->body) continue;
    int d = v->def->id;
    if (d < 0 || d == i) continue;
    if (g->ndeps[i] == *cap) {
      *cap = *cap ? 2 * *cap : 4;
      int *nd = gv_alloc(m->arena, sizeof(int) * (size_t)*cap);
      int64_t *nb = gv_alloc(m->arena, sizeof(int64_t) * (size_t)*cap);
      if (g->ndeps[i]) {
        memcpy(nd, g->deps[i], sizeof(int) * (size_t)g->ndeps[i]);
        memcpy(nb, g->dbytes[i], sizeof(int64_t) * (size_t)g->ndeps[i]);
      }
      g->deps[i] = nd;
      g->dbytes[i] = nb;
    }
    g->deps[i][g->ndeps[i]] = d;
    g->dbytes[i][g->ndeps[i]++] = value_bytes(v);
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) collect_deps(m, g, i, o, cap);
}

/* A constant (no operands, no regions), and an op computed from parameters
 * and constants alone (a tied LM head's transposed embedding, a reshaped
 * weight), is no vertex of the graph: it takes the least group of its users.
 * So no group consists of constants alone (an empty pipeline stage), and a
 * view of a parameter stays with the ops that read it: the stage that reads
 * it holds the parameter (a shared parameter when others read it too)
 * instead of receiving its view from another stage every microbatch. Ops
 * are classified in program order (op->id <= -2: such an op). */
static bool is_const(const gv_func *f, const gv_op *op) {
  if (op->nregions || (gv_ops[op->code].flags & GV_TERMINATOR) || op->code == GV_OP_ARENA) return false;
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *v = op->opnds[i];
    if (v->def ? v->def->id > -2 : !(v->block == f->body && v->index >= 0 && v->index < f->body->nargs && f->arg_is_param[v->index]))
      return false;
  }
  return true;
}

/* The group of each constant: the least group among its users' (ops inside
 * regions count as their top-level op); moving a constant earlier keeps the
 * order acyclic, since it depends on nothing. */
static void const_users(const gv_op *op, int r, int *cg) {
  for (int k = 0; k < op->nopnds; k++) {
    const gv_op *d = op->opnds[k]->def;
    if (d && d->id <= -2 && (cg[-2 - d->id] < 0 || r < cg[-2 - d->id])) cg[-2 - d->id] = r;
  }
  for (int i = 0; i < op->nregions; i++)
    for (const gv_op *o = op->regions[i]->first; o; o = o->next) const_users(o, r, cg);
}

int gv_cluster_layers_vertices(gv_module *m) {
  int n = 0, nc = 0;
  gv_block *b = m->main->body;
  for (gv_op *op = b->first; op; op = op->next) op->id = -1;
  for (gv_op *op = b->first; op; op = op->next)
    if (is_const(m->main, op)) op->id = -2 - nc++;
    else if (!(gv_ops[op->code].flags & GV_TERMINATOR) && op->code != GV_OP_ARENA) op->id = n++;
  return n;
}

static void build_graph(gv_module *m, graph *g) {
  gv_block *b = m->main->body;
  int n = 0;
  int nc = 0;
  for (gv_op *op = b->first; op; op = op->next) op->id = -1;
  for (gv_op *op = b->first; op; op = op->next)
    if (is_const(m->main, op)) op->id = -2 - nc++; /* not a vertex: takes its first user's group */
    else if (!(gv_ops[op->code].flags & GV_TERMINATOR) && op->code != GV_OP_ARENA) op->id = n++;
  g->nconst = nc;
  g->n = n;
  g->ops = gv_alloc(m->arena, sizeof(gv_op *) * (size_t)(n + 1));
  g->flops = gv_alloc(m->arena, sizeof(int64_t) * (size_t)(n + 1));
  g->ndeps = gv_alloc(m->arena, sizeof(int) * (size_t)(n + 1));
  g->deps = gv_alloc(m->arena, sizeof(int *) * (size_t)(n + 1));
  g->dbytes = gv_alloc(m->arena, sizeof(int64_t *) * (size_t)(n + 1));
  for (gv_op *op = b->first; op; op = op->next) {
    if (op->id < 0) continue;
    int i = op->id, cap = 0;
    g->ops[i] = op;
    int64_t f = gv_op_flops(op, NULL, NULL);
    g->flops[i] = f > 0 ? f : 0;
    collect_deps(m, g, i, op, &cap);
  }
}

typedef struct { int a, b; int64_t w; } edge;
static int edge_cmp(const void *x, const void *y) {
  const edge *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return 0;
}

/* METIS k-way partition into part[]; returns 0 or -1 (error reported). */
static int run_metis(gv_module *m, const graph *g, int k, int *part) {
  int n = g->n;
  int64_t ne = 0, total_f = 0, total_b = 0;
  for (int i = 0; i < n; i++) {
    ne += g->ndeps[i];
    total_f += g->flops[i];
  }
  edge *e = malloc(sizeof(edge) * (size_t)(ne ? ne : 1));
  idx_t *xadj = calloc((size_t)n + 1, sizeof(idx_t));
  idx_t *adj = malloc(sizeof(idx_t) * (size_t)(2 * ne + 1));
  idx_t *adjw = malloc(sizeof(idx_t) * (size_t)(2 * ne + 1));
  idx_t *vw = malloc(sizeof(idx_t) * (size_t)n);
  idx_t *pt = malloc(sizeof(idx_t) * (size_t)n);
  int64_t *fill = calloc((size_t)n + 1, sizeof(int64_t));
  int rc = -1;
  if (!e || !xadj || !adj || !adjw || !vw || !pt || !fill) {
    gv_error(m, "cluster-layers: out of memory");
    goto out;
  }
  int64_t nE = 0;
  for (int i = 0; i < n; i++)
    for (int d = 0; d < g->ndeps[i]; d++) {
      int a = g->deps[i][d] < i ? g->deps[i][d] : i, b = g->deps[i][d] < i ? i : g->deps[i][d];
      e[nE++] = (edge){a, b, g->dbytes[i][d]};
    }
  qsort(e, (size_t)nE, sizeof(edge), edge_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < nE; i++) {
    if (u && e[u - 1].a == e[i].a && e[u - 1].b == e[i].b) e[u - 1].w += e[i].w;
    else e[u++] = e[i];
  }
  nE = u;
  for (int64_t i = 0; i < nE; i++) total_b += e[i].w;
  /* weights scaled so that sums stay far below 2^31 */
  double fs = total_f > 0 ? 1e8 / (double)total_f : 0, bs = total_b > 0 ? 1e8 / (double)total_b : 0;
  for (int i = 0; i < n; i++) vw[i] = 1 + (idx_t)((double)g->flops[i] * fs);
  for (int64_t i = 0; i < nE; i++) {
    xadj[e[i].a + 1]++;
    xadj[e[i].b + 1]++;
  }
  for (int i = 0; i < n; i++) xadj[i + 1] += xadj[i];
  for (int i = 0; i < n; i++) fill[i] = xadj[i];
  for (int64_t i = 0; i < nE; i++) {
    idx_t w = 1 + (idx_t)((double)e[i].w * bs);
    adj[fill[e[i].a]] = e[i].b;
    adjw[fill[e[i].a]++] = w;
    adj[fill[e[i].b]] = e[i].a;
    adjw[fill[e[i].b]++] = w;
  }
  idx_t nv = n, ncon = 1, np = k, obj = 0;
  idx_t opt[METIS_NOPTIONS];
  METIS_SetDefaultOptions(opt);
  opt[METIS_OPTION_SEED] = 1;
  opt[METIS_OPTION_NUMBERING] = 0;
  /* METIS 5.1 prints its own diagnostics on stdout ("***Cannot bisect a graph with 0 vertices!" when one op's weight
   * outweighs a part's share, e.g. a large vocabulary's head): the partition it returns is repaired below all the
   * same, and galvc's stdout is the user's (the plan, --emit), so they go nowhere */
  fflush(stdout);
  int saved = dup(STDOUT_FILENO), null = saved >= 0 ? open("/dev/null", O_WRONLY) : -1;
  if (null >= 0) dup2(null, STDOUT_FILENO), close(null);
  int r = METIS_PartGraphKway(&nv, &ncon, xadj, adj, vw, NULL, adjw, &np, NULL, NULL, opt, &obj, pt);
  if (saved >= 0) fflush(stdout), dup2(saved, STDOUT_FILENO), close(saved);
  if (r != METIS_OK) {
    gv_error(m, "cluster-layers: METIS failed (code %d) partitioning %d ops into %d groups", r, n, k);
    goto out;
  }
  for (int i = 0; i < n; i++) part[i] = (int)pt[i];
  rc = 0;
out:
  free(e);
  free(xadj);
  free(adj);
  free(adjw);
  free(vw);
  free(pt);
  free(fill);
  return rc;
}

typedef struct { double key; int part; } rankent;
static int rank_cmp(const void *x, const void *y) {
  const rankent *p = x, *q = y;
  if (p->key != q->key) return p->key < q->key ? -1 : 1;
  return p->part - q->part;
}
static int int_cmp(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

/* Re-cut the order seq[] (op indices) into k contiguous non-empty runs with
 * FLOPs <= bound each, least total bytes crossing the cuts. grp[] gets the
 * group per op index. Returns 0, -1 when no cut fits (cannot happen for a
 * bound >= total/k + max op with n >= k; kept as a guard). */
static int recut(const graph *g, const int *seq, int k, int64_t bound, int *grp) {
  int n = g->n;
  int *pos = malloc(sizeof(int) * (size_t)n);
  int64_t *pre = malloc(sizeof(int64_t) * ((size_t)n + 1));
  int64_t *live = calloc((size_t)n + 1, sizeof(int64_t)); /* bytes crossing a cut before position p */
  int64_t *lastuse = malloc(sizeof(int64_t) * (size_t)n);
  int64_t *f = malloc(sizeof(int64_t) * ((size_t)n + 1) * (size_t)(k + 1));
  int *from = malloc(sizeof(int) * ((size_t)n + 1) * (size_t)(k + 1));
  int rc = -1;
  if (!pos || !pre || !live || !lastuse || !f || !from) goto out;
  for (int p = 0; p < n; p++) pos[seq[p]] = p;
  pre[0] = 0;
  for (int p = 0; p < n; p++) pre[p + 1] = pre[p] + g->flops[seq[p]];
  /* each (definer, user) edge crosses the cuts between their positions;
   * count a value once per definer: the furthest user */
  for (int i = 0; i < n; i++) lastuse[i] = -1;
  for (int i = 0; i < n; i++)
    for (int d = 0; d < g->ndeps[i]; d++) {
      int def = g->deps[i][d];
      if (pos[i] > lastuse[def]) lastuse[def] = pos[i];
    }
  {
    int64_t *diff = calloc((size_t)n + 2, sizeof(int64_t));
    if (!diff) goto out;
    for (int i = 0; i < n; i++) {
      if (lastuse[i] < 0) continue;
      int64_t b = 0;
      for (gv_op *op = g->ops[i]; op; op = NULL)
        for (int r = 0; r < op->nres; r++) b += value_bytes(op->res[r]);
      diff[pos[i] + 1] += b;
      diff[lastuse[i] + 1] -= b;
    }
    int64_t acc = 0;
    for (int p = 0; p <= n; p++) {
      acc += diff[p];
      live[p] = acc;
    }
    free(diff);
  }
  const int64_t INF = INT64_MAX / 4;
#define F(kk, j) f[(size_t)(kk) * ((size_t)n + 1) + (size_t)(j)]
#define FROM(kk, j) from[(size_t)(kk) * ((size_t)n + 1) + (size_t)(j)]
  for (int kk = 0; kk <= k; kk++)
    for (int j = 0; j <= n; j++) F(kk, j) = INF;
  F(0, 0) = 0;
  for (int kk = 1; kk <= k; kk++)
    for (int j = kk; j <= n - (k - kk); j++) {
      for (int i = j - 1; i >= kk - 1; i--) {
        if (pre[j] - pre[i] > bound) break;
        if (F(kk - 1, i) >= INF) continue;
        int64_t c = F(kk - 1, i) + (kk > 1 ? live[i] : 0);
        if (c < F(kk, j)) {
          F(kk, j) = c;
          FROM(kk, j) = i;
        }
      }
    }
  if (F(k, n) >= INF) goto out;
  for (int kk = k, j = n; kk >= 1; kk--) {
    int i = FROM(kk, j);
    for (int p = i; p < j; p++) grp[seq[p]] = kk - 1;
    j = i;
  }
#undef F
#undef FROM
  rc = 0;
out:
  free(pos);
  free(pre);
  free(live);
  free(lastuse);
  free(f);
  free(from);
  return rc;
}

static uint64_t fnv(uint64_t h, uint64_t x) {
  for (int i = 0; i < 8; i++) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}
static uint64_t type_hash(uint64_t h, const gv_type *t) {
  h = fnv(h, (uint64_t)t->dtype);
  h = fnv(h, (uint64_t)(int64_t)t->rank);
  for (int d = 0; d < t->rank && d < GV_MAX_RANK; d++) h = fnv(h, (uint64_t)t->dims[d]);
  return h;
}

/* An op in the signatures' canonical order: its group, its depth inside the group (1 + its deepest producer there),
 * its structural hash (code, types, its producers' hashes inside the group), its program position. */
typedef struct {
  int grp, lvl, pos, i;
  uint64_t oh;
} canon_op;

static int canon_cmp(const void *a, const void *b) {
  const canon_op *x = a, *y = b;
  if (x->grp != y->grp) return x->grp < y->grp ? -1 : 1;
  if (x->lvl != y->lvl) return x->lvl < y->lvl ? -1 : 1;
  if (x->oh != y->oh) return x->oh < y->oh ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int gv_cluster_layers(gv_module *m, int k, gv_layer_groups *out) {
  memset(out, 0, sizeof *out);
  if (!m || !m->main || !m->main->body) return gv_error_plain("cluster-layers: no function");
  gv_block *body = m->main->body;
  for (gv_op *op = body->first; op; op = op->next)
    if (op->code == GV_OP_ARENA) return gv_error(m, "cluster-layers: run it before memory-plan");
  /* --layers blocks: the blocks found first (the finder numbers the ops; build_graph's numbering must come after) */
  gv_layer_units lu = {0};
  if (gv_pipe_opts.blocks && gv_layer_units_find(m, &lu)) return -1;
  if (gv_pipe_opts.blocks) { /* K = the blocks (the k asked for is not read) */
    k = lu.nl;
    if (k < 1) {
      gv_layer_units_free(&lu);
      return gv_error(m, "cluster-layers: --layers blocks: the program has no repeated blocks (give --layers K)");
    }
  }
  graph g = {0};
  build_graph(m, &g);
  int n = g.n;
  if (k < 1 || k > n) gv_layer_units_free(&lu);
  if (k < 1) return gv_error(m, "cluster-layers: --layers %d: need at least 1 group", k);
  if (k > n) return gv_error(m, "cluster-layers: --layers %d: more groups than the %d ops of the program", k, n);
  int64_t total = 0, maxop = 0;
  for (int i = 0; i < n; i++) {
    total += g.flops[i];
    if (g.flops[i] > maxop) maxop = g.flops[i];
  }
  int64_t bound = (int64_t)((1.0 + gv_pipe_opts.delta) * (double)total / k);
  if (total / k + maxop > bound) bound = total / k + maxop;
  int *grp = gv_alloc(m->arena, sizeof(int) * (size_t)(n + 1));
  int *seq = gv_alloc(m->arena, sizeof(int) * (size_t)(n + 1));
  int moved = 0;
  bool recut_done = false;
  if (gv_pipe_opts.blocks) { /* --layers blocks: a group per block found by structure, no METIS, no balance */
    /* an op outside the blocks (embedding, final norm, head) takes the group of the last block before it (the
     * first block's before any); then every op at least its operands' groups, so the order stays acyclic */
    int cur = 0;
    for (int i = 0; i < n; i++) {
      int u = gv_layer_units_loc(&lu, g.ops[i]->loc);
      if (u >= 1) cur = u - 1;
      int gi = cur;
      for (int d = 0; d < g.ndeps[i]; d++)
        if (grp[g.deps[i][d]] > gi) gi = grp[g.deps[i][d]];
      if (gi != cur) moved++;
      grp[i] = gi;
    }
    gv_layer_units_free(&lu);
  } else if (k > 1) {
    int *part = malloc(sizeof(int) * (size_t)n);
    rankent *re = malloc(sizeof(rankent) * (size_t)k);
    int *tmp = malloc(sizeof(int) * (size_t)n);
    int *rank = malloc(sizeof(int) * (size_t)k);
    if (!part || !re || !tmp || !rank || run_metis(m, &g, k, part)) {
      free(part); free(re); free(tmp); free(rank);
      return -1;
    }
    /* rank parts by the median program position of their ops */
    for (int p = 0; p < k; p++) {
      int c = 0;
      for (int i = 0; i < n; i++)
        if (part[i] == p) tmp[c++] = i;
      qsort(tmp, (size_t)c, sizeof(int), int_cmp);
      re[p] = (rankent){c ? tmp[c / 2] : (double)n + p, p};
    }
    qsort(re, (size_t)k, sizeof(rankent), rank_cmp);
    for (int r = 0; r < k; r++) rank[re[r].part] = r;
    for (int i = 0; i < n; i++) {
      int gi = rank[part[i]];
      for (int d = 0; d < g.ndeps[i]; d++)
        if (grp[g.deps[i][d]] > gi) gi = grp[g.deps[i][d]];
      if (gi != rank[part[i]]) moved++;
      grp[i] = gi;
    }
    free(part); free(re); free(tmp); free(rank);
  }
  /* order by (group, position): stable counting sort */
  {
    int *cnt = calloc((size_t)k + 1, sizeof(int));
    if (!cnt) return gv_error(m, "cluster-layers: out of memory");
    for (int i = 0; i < n; i++) cnt[grp[i] + 1]++;
    for (int r = 0; r < k; r++) cnt[r + 1] += cnt[r];
    for (int i = 0; i < n; i++) seq[cnt[grp[i]]++] = i;
    free(cnt);
  }
  /* check count and balance; re-cut the order when either fails */
  int64_t *gf = gv_alloc(m->arena, sizeof(int64_t) * (size_t)k);
  int *gn = gv_alloc(m->arena, sizeof(int) * (size_t)k);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    gf[grp[i]] += g.flops[i];
    gn[grp[i]]++;
  }
  for (int r = 0; r < k; r++)
    if (!gn[r] || gf[r] > bound) ok = false;
  if (gv_pipe_opts.blocks) { /* the blocks as they are: the bound is the largest group's */
    for (int r = 0; r < k; r++)
      if (!gn[r]) return gv_error(m, "cluster-layers: --layers blocks: block %d holds no op of its own", r);
    bound = 0;
    for (int r = 0; r < k; r++) bound = gf[r] > bound ? gf[r] : bound;
  } else if (!ok) {
    if (recut(&g, seq, k, bound, grp))
      return gv_error(m, "cluster-layers: no %d groups within the FLOPs bound %lld", k, (long long)bound);
    recut_done = true;
    memset(gf, 0, sizeof(int64_t) * (size_t)k);
    memset(gn, 0, sizeof(int) * (size_t)k);
    for (int i = 0; i < n; i++) {
      gf[grp[i]] += g.flops[i];
      gn[grp[i]]++;
    }
  }
  /* reorder the body into seq (a topological order: groups never decrease
   * along an edge, and within a group program order is kept) */
  gv_op *term = body->last;
  for (int p = 0; p < n; p++) gv_op_unlink(g.ops[seq[p]]);
  for (int p = 0; p < n; p++) {
    if (term && (gv_ops[term->code].flags & GV_TERMINATOR)) gv_insert_before(term, g.ops[seq[p]]);
    else gv_block_append(body, g.ops[seq[p]]);
  }
  /* acyclic check (a guard: true by construction) */
  for (int i = 0; i < n; i++)
    for (int d = 0; d < g.ndeps[i]; d++)
      if (grp[g.deps[i][d]] > grp[i])
        return gv_error_op(m, g.ops[i], "cluster-layers: internal error: group order violated");
  /* signatures */
  uint64_t *sig = gv_alloc(m->arena, sizeof(uint64_t) * (size_t)k);
  int *block = gv_alloc(m->arena, sizeof(int) * (size_t)k);
  int64_t *in_bytes = gv_alloc(m->arena, sizeof(int64_t) * (size_t)k);
  {
    int *local = gv_alloc(m->arena, sizeof(int) * (size_t)(n + 1));
    int *cnt = gv_alloc(m->arena, sizeof(int) * (size_t)k);
    for (int r = 0; r < k; r++) sig[r] = 1469598103934665603ull;
    /* the order the group's ops are hashed in: canonical, not the program's (two copies of a block whose
     * independent ops the program orders differently hash alike: on a 96-layer GPT, layer 68's MLP had two of its
     * ops the other way round, and every range of groups across it was costed apart): by depth in the group, then
     * structural hash; the wiring below is by local index in that order */
    canon_op *co = malloc(sizeof *co * (size_t)(n + 1));
    if (!co) return gv_error(m, "cluster-layers: out of memory");
    for (int p = 0; p < n; p++) {
      int i = seq[p], r = grp[i];
      gv_op *op = g.ops[i];
      uint64_t h = fnv(1469598103934665603ull, (uint64_t)op->code);
      int lv = 0;
      for (int a = 0; a < op->nopnds; a++) {
        gv_value *v = op->opnds[a];
        h = type_hash(h, &v->type);
        if (v->def && v->def->id >= 0 && v->def->parent == body && grp[v->def->id] == r) {
          const canon_op *d = &co[v->def->id];
          h = fnv(fnv(h, d->oh), (uint64_t)v->index);
          if (d->lvl + 1 > lv) lv = d->lvl + 1;
        } else
          h = fnv(h, 0xffffffffull);
      }
      for (int a = 0; a < op->nres; a++) h = type_hash(h, &op->res[a]->type);
      co[i] = (canon_op){.grp = r, .lvl = lv, .pos = p, .i = i, .oh = h};
    }
    qsort(co, (size_t)n, sizeof *co, canon_cmp); /* (co[] by op index no longer read) */
    for (int p = 0; p < n; p++) {
      int i = co[p].i, r = grp[i];
      gv_op *op = g.ops[i];
      local[i] = cnt[r]++;
      uint64_t h = fnv(sig[r], (uint64_t)op->code);
      for (int a = 0; a < op->nopnds; a++) {
        gv_value *v = op->opnds[a];
        h = type_hash(h, &v->type);
        if (v->def && v->def->id >= 0 && v->def->parent == body && grp[v->def->id] == r)
          h = fnv(h, (uint64_t)(local[v->def->id] * 64 + v->index));
        else
          h = fnv(h, 0xffffffffull);
      }
      for (int a = 0; a < op->nres; a++) h = type_hash(h, &op->res[a]->type);
      sig[r] = h;
    }
    free(co);
    for (int i = 0; i < n; i++)
      for (int d = 0; d < g.ndeps[i]; d++)
        if (grp[g.deps[i][d]] != grp[i]) in_bytes[grp[i]] += g.dbytes[i][d];
    for (int r = 0; r < k; r++) {
      block[r] = r;
      for (int q = 0; q < r; q++)
        if (sig[q] == sig[r] && gn[q] == gn[r]) {
          block[r] = q;
          break;
        }
    }
  }
  for (int i = 0; i < n; i++) {
    gv_set_int(m, g.ops[i], "layer", grp[i]);
    gv_set_int(m, g.ops[i], "layer_block", block[grp[i]]);
  }
  if (g.nconst) { /* constants: their first user's group (they stay before every other op of the body) */
    int *cg = malloc(sizeof(int) * (size_t)g.nconst);
    if (!cg) return gv_error(m, "cluster-layers: out of memory");
    for (int c = 0; c < g.nconst; c++) cg[c] = -1;
    for (int i = 0; i < n; i++) const_users(g.ops[i], grp[i], cg);
    for (gv_op *op = body->last; op; op = op->prev) /* users first: a view of a view takes its user's group */
      if (op->id <= -2 && cg[-2 - op->id] >= 0) const_users(op, cg[-2 - op->id], cg);
    for (gv_op *op = body->first; op; op = op->next)
      if (op->id <= -2) {
        int r = cg[-2 - op->id] < 0 ? 0 : cg[-2 - op->id];
        gv_set_int(m, op, "layer", r);
        gv_set_int(m, op, "layer_block", block[r]);
      }
    free(cg);
  }
  out->ngroups = k;
  out->nops = n;
  out->flops = gf;
  out->nops_per = gn;
  out->in_bytes = in_bytes;
  out->sig = sig;
  out->block = block;
  out->total_flops = total;
  out->bound = bound;
  out->moved = moved;
  out->recut = recut_done;
  out->metis = k > 1 && !gv_pipe_opts.blocks;
  out->blocks = gv_pipe_opts.blocks;
  return 0;
}

int gv_pass_cluster_layers(gv_module *m) {
  int k = gv_pipe_opts.layers;
  if (k <= 0 && !gv_pipe_opts.blocks) return 0; /* not asked for */
  gv_layer_groups lg;
  if (gv_cluster_layers(m, k, &lg)) return -1;
  k = lg.ngroups; /* --layers blocks: the blocks */
  if (!gv_pipe_opts.quiet) {
    int64_t mx = 0;
    int nb = 0;
    for (int r = 0; r < k; r++) {
      if (lg.flops[r] > mx) mx = lg.flops[r];
      if (lg.block[r] == r) nb++;
    }
    double mean = (double)lg.total_flops / k;
    fprintf(stderr,
            "cluster-layers: %d groups of %d ops, FLOPs max/mean %.3f (bound %.3f), %d distinct blocks, %s, %d ops moved by the repair\n",
            k, lg.nops, mean > 0 ? (double)mx / mean : 1.0, mean > 0 ? (double)lg.bound / mean : 1.0, nb,
            lg.blocks ? "the blocks found by structure (no METIS)" : !lg.metis ? "one group (no METIS)"
            : lg.recut ? "METIS order re-cut" : "METIS parts kept", lg.moved);
  }
  return 0;
}
