/* spmd_partition.c — `spmd-partition` (docs/sharding.md): the global
 * program with shardings (propagate-sharding) becomes the local program of
 * one rank. Every value gets its local type (each dim divided by the sizes
 * of the mesh axes that split it; an indivisible dim is an error naming the
 * value). galv.reshard ops are lowered to galv.reduce_scatter / all_reduce
 * (pending sums), all_to_all / all_gather (splits removed or moved) and
 * shard_slice (splits added, no communication). Each collective carries
 * `bytes`, this rank's sent bytes by the formulas of runtime/galv_comm.h
 * (the mesh records, before partitioning, the planner's own prediction
 * from the global program: gv_cost_comm_bytes, predicted_bytes);
 * unless gv_shard_opts.quiet, a table "collective, axes, shape,
 * bytes/device" goes to stderr. Ops whose local computation differs from
 * the global one by more than shapes (all derived from the op table's
 * factor kinds): a reduce_mean over split dims is rescaled by 1/p (its
 * local sums are added up later), a gather from a split table (GATHER
 * factor) looks up only the rows this rank holds (galv.axis_index) and
 * yields zeros elsewhere, a partial sum completed by the consumer;
 * cross_entropy / cross_entropy_grad on split logits become Megatron's
 * vocab-parallel cross entropy (lower_cross_entropy).
 * Without a mesh the pass does nothing. */
#include "build.h"
#include "passes.h"
#include "../planner/cost.h"
#include "../ir/attention.h"
#include "../ir/storage.h"

#include <stdio.h>
#include <string.h>

/* The collective table grouped per layer (printed after the total). */
enum { MAX_GROUPS = 256, NKIND = 4 };
typedef struct {
  char key[48];
  int n[3];           /* forward, backward (/grad), optimizer */
  int64_t bytes[3];
  int kind[NKIND];    /* all_reduce, all_gather, reduce_scatter, all_to_all */
} layer_group;

typedef struct {
  gv_module *m;
  const gv_mesh *mesh;
  int64_t total;
  int64_t kind_bytes[NKIND]; /* per collective kind, as the ops' `bytes` */
  int ncoll;
  layer_group g[MAX_GROUPS];
  int ng;
  struct ce_stats { /* vocab-parallel cross entropy: row statistics shared by the loss and its gradient */
    gv_value *x, *lab, *lse, *ohf, *valid, *cnt1;
  } ce[8];
  int nce;
  gv_subst *sub; /* replaced values, resolved as the walk reaches each use */
  bool stage2;   /* the function is a training pipeline stage's entry (gv_func_stage_kind 2; its names do not change here) */
} spmd;

static void count_layer(spmd *S, gv_opcode code, int64_t bytes, const char *loc) {
  char key[48];
  gv_layer_key(loc, key, sizeof key);
  /* the gradient sums of accumulated microbatches ("accumulate/P") are backward work */
  int phase = loc && !strncmp(loc, "optimizer", 9) ? 2 : loc && (strstr(loc, "/grad") || !strncmp(loc, "accumulate/", 11)) ? 1 : 0;
  int k = code == GV_OP_ALL_REDUCE ? 0 : code == GV_OP_ALL_GATHER ? 1 : code == GV_OP_REDUCE_SCATTER ? 2 : 3;
  int i = 0;
  while (i < S->ng && strcmp(S->g[i].key, key)) i++;
  if (i == S->ng) {
    if (S->ng == MAX_GROUPS) i = MAX_GROUPS - 1, snprintf(S->g[i].key, sizeof S->g[i].key, "(more)");
    else memset(&S->g[i], 0, sizeof S->g[i]), snprintf(S->g[i].key, sizeof S->g[i].key, "%s", key), S->ng++;
  }
  S->g[i].n[phase]++;
  S->g[i].bytes[phase] += bytes;
  S->g[i].kind[k]++;
}

static void print_layers(const spmd *S) {
  fprintf(stderr, "galvc: spmd: per layer       forward: n      bytes   backward: n      bytes  optimizer: n      bytes  "
                  "kinds (all_reduce/all_gather/reduce_scatter/all_to_all)\n");
  for (int i = 0; i < S->ng; i++) {
    const layer_group *g = &S->g[i];
    fprintf(stderr, "galvc: spmd:   %-20s %4d %10lld         %4d %10lld          %4d %10lld  %d/%d/%d/%d\n", g->key, g->n[0],
            (long long)g->bytes[0], g->n[1], (long long)g->bytes[1], g->n[2], (long long)g->bytes[2], g->kind[0], g->kind[1],
            g->kind[2], g->kind[3]);
  }
}

static const char *vname(const gv_value *v, char *buf, size_t n) {
  if (v->name && *v->name) snprintf(buf, n, "'%s'", v->name);
  else if (!v->def) snprintf(buf, n, "argument %d", v->index);
  else snprintf(buf, n, "result %d", v->index);
  return buf;
}

/* Global type -> local type under s; -1 after an error naming op / value. */
static int local_type(spmd *S, const gv_op *op, const gv_value *v, const gv_sharding *s, gv_type *out) {
  *out = v->type;
  if (!s) return 0;
  for (int d = 0; d < s->rank && d < v->type.rank; d++) {
    int64_t p = gv_sharding_dim_split(s, d);
    if (p == 1) continue;
    if (v->type.dims[d] < 0 || v->type.dims[d] % p) {
      char ax[64] = "", nb[300]; /* the axes' names, for the error */
      for (int k = 0; k < s->naxes[d]; k++)
        snprintf(ax + strlen(ax), sizeof ax - strlen(ax), "%s%s", k ? "x" : "", s->mesh->axis[s->axes[d][k]]);
      if (op)
        return gv_error_op(S->m, op, "spmd: %s dim %d of size %lld does not divide into %lld shards (mesh axes %s)",
                           vname(v, nb, sizeof nb), d, (long long)v->type.dims[d], (long long)p, ax);
      return gv_error(S->m, "spmd: %s dim %d of size %lld does not divide into %lld shards (mesh axes %s)",
                      vname(v, nb, sizeof nb), d, (long long)v->type.dims[d], (long long)p, ax);
    }
    out->dims[d] /= p;
  }
  return 0;
}

static int64_t type_bytes(const gv_type *t) {
  int64_t n = gv_type_numel(t);
  return n < 0 ? 0 : n * (int64_t)gv_dtype_size(t->dtype);
}

/* A collective over the given axes mask on x, before pos. */
static gv_value *coll(spmd *S, gv_opcode code, gv_value *x, unsigned axes, int d1, int d2, const char *reduce, gv_op *pos) {
  int64_t gp = 1;
  for (int a = 0; a < S->mesh->naxes; a++)
    if (axes & (1u << a)) gp *= S->mesh->size[a];
  if (gp == 1) return x; /* a group of one rank: nothing to do */
  gv_op *o = gv_op_new(S->m, code, 1, &x, 1);
  gv_op_set_loc(S->m, o, pos->loc, NULL);
  const char *names[GV_MAX_MESH_AXES];
  int n = 0;
  int64_t p = 1;
  for (int a = 0; a < S->mesh->naxes; a++)
    if (axes & (1u << a)) names[n++] = S->mesh->axis[a], p *= S->mesh->size[a];
  gv_set_str(S->m, o, "mesh", S->mesh->name);
  gv_set_strs(S->m, o, "axes", n, names);
  if (reduce) gv_set_str(S->m, o, "reduce", reduce);
  if (code == GV_OP_ALL_GATHER || code == GV_OP_REDUCE_SCATTER || code == GV_OP_SHARD_SLICE) gv_set_int(S->m, o, "dim", d1);
  if (code == GV_OP_ALL_TO_ALL) {
    gv_set_int(S->m, o, "split_dim", d1);
    gv_set_int(S->m, o, "concat_dim", d2);
  }
  if (gv_infer_op(S->m, o, NULL)) return NULL;
  int64_t nb = code == GV_OP_ALL_GATHER ? type_bytes(&o->res[0]->type) : type_bytes(&x->type);
  /* moved as stored: a value the storage pass stores 16-bit moves 2 bytes per element (ir/storage.h); the
   * collective stores its result like its operand (the storage pass's rule), which a chain of them reads */
  gv_dtype st = gv_value_storage(x);
  /* an inference program under 16-bit storage stores every f32 value 16-bit (passes/storage.c), the values
   * this pass makes itself too (a vocab-parallel embedding's masked lookup), which the storage pass annotates
   * only later, on the device program */
  if (st == GV_DT_F32 && x->type.dtype == GV_DT_F32 && gv_precision_opts.storage != GV_DT_F32 && S->m->main &&
      !S->m->main->res_updates && !S->stage2) /* a training stage: per value, as a step */
    st = gv_precision_opts.storage;
  if (st != x->type.dtype) {
    const char *name = gv_dtype_name(st);
    nb = nb / (int64_t)gv_dtype_size(x->type.dtype) * (int64_t)gv_dtype_size(st);
    gv_set_strs(S->m, o, "storage", 1, &name);
  }
  int64_t bytes = code == GV_OP_ALL_REDUCE ? 2 * (p - 1) * nb / p : code == GV_OP_SHARD_SLICE ? 0 : (p - 1) * nb / p;
  gv_set_int(S->m, o, "bytes", bytes);
  gv_insert_before(pos, o);
  if (code != GV_OP_SHARD_SLICE && !gv_shard_opts.quiet) {
    char ts[128], ax[64] = "";
    gv_type_str(&x->type, ts, sizeof ts);
    for (int k = 0; k < n; k++) snprintf(ax + strlen(ax), sizeof ax - strlen(ax), "%s%s", k ? "," : "", names[k]);
    fprintf(stderr, "galvc: spmd: %-15s %-8s %-28s %12lld  %s\n", gv_ops[code].name, ax, ts, (long long)bytes, pos->loc);
  }
  if (code != GV_OP_SHARD_SLICE) {
    S->ncoll++, count_layer(S, code, bytes, pos->loc);
    S->kind_bytes[code == GV_OP_ALL_REDUCE ? 0 : code == GV_OP_ALL_GATHER ? 1 : code == GV_OP_REDUCE_SCATTER ? 2 : 3] += bytes;
  }
  S->total += bytes;
  return o->res[0];
}

static bool dim_prefix(const gv_sharding *c, const gv_sharding *w, int d) {
  if (c->naxes[d] > w->naxes[d]) return false;
  for (int k = 0; k < c->naxes[d]; k++)
    if (c->axes[d][k] != w->axes[d][k]) return false;
  return true;
}

/* Lowers reshard op (operand local already) to collectives. */
static int lower_reshard(spmd *S, gv_op *op, const gv_sharding *have) {
  const gv_sharding *want = gv_op_sharding(op, 0);
  gv_value *x = op->opnds[0];
  gv_sharding c = have ? *have : (gv_sharding){.mesh = S->mesh, .rank = x->type.rank};
  if (!want) return gv_error_op(S->m, op, "spmd: galv.reshard without a sharding");
  if (want->partial & ~c.partial) return gv_error_op(S->m, op, "spmd: cannot reshard a complete value into a partial sum");
  /* 1. pending sums: reduce_scatter where the target splits a dim next by that axis, else all_reduce */
  unsigned ar = 0;
  for (int a = 0; a < S->mesh->naxes && x; a++) {
    if (!(c.partial & (1u << a)) || (want->partial & (1u << a))) continue;
    int dd = -1;
    for (int d = 0; d < c.rank; d++)
      if (dim_prefix(&c, want, d) && want->naxes[d] > c.naxes[d] && want->axes[d][c.naxes[d]] == a) dd = d;
    if (dd >= 0 && x->type.dims[dd] % S->mesh->size[a] == 0) {
      x = coll(S, GV_OP_REDUCE_SCATTER, x, 1u << a, dd, 0, "sum", op);
      c.axes[dd][c.naxes[dd]++] = (uint8_t)a;
    } else {
      ar |= 1u << a;
    }
    c.partial &= ~(1u << a);
  }
  if (ar && x) x = coll(S, GV_OP_ALL_REDUCE, x, ar, 0, 0, "sum", op);
  /* 2. splits the target does not have: moved (all_to_all) or removed (all_gather), minor axis first */
  for (int d = 0; d < c.rank && x; d++) {
    while (x && !dim_prefix(&c, want, d)) {
      int a = c.axes[d][--c.naxes[d]];
      int d2 = -1;
      for (int e = 0; e < c.rank; e++)
        if (e != d && dim_prefix(&c, want, e) && want->naxes[e] > c.naxes[e] && want->axes[e][c.naxes[e]] == a) d2 = e;
      if (d2 >= 0 && x->type.dims[d2] % S->mesh->size[a] == 0) {
        x = coll(S, GV_OP_ALL_TO_ALL, x, 1u << a, d2, d, NULL, op);
        c.axes[d2][c.naxes[d2]++] = (uint8_t)a;
      } else {
        x = coll(S, GV_OP_ALL_GATHER, x, 1u << a, d, 0, NULL, op);
      }
    }
  }
  /* 3. splits to add: local slices */
  for (int d = 0; d < c.rank && x; d++)
    while (x && c.naxes[d] < want->naxes[d]) {
      int a = want->axes[d][c.naxes[d]];
      x = coll(S, GV_OP_SHARD_SLICE, x, 1u << a, d, 0, NULL, op);
      c.axes[d][c.naxes[d]++] = (uint8_t)a;
    }
  if (!x) return -1;
  if (!gv_sharding_equal(&c, want)) return gv_error_op(S->m, op, "spmd: cannot lower this reshard");
  if (x != op->opnds[0]) { /* later reshards of this value read its global sharding here */
    const gv_sharding *w[1] = {want};
    gv_set_shardings(S->m, x->def, w);
    if (gv_get_attr(op, "working_copy")) gv_set_int(S->m, x->def, "working_copy", 1); /* ZeRO-1/2's 16-bit copy (memory-plan) */
  }
  gv_subst_add(S->sub, op->res[0], x, NULL);
  gv_op_unlink(op);
  return 0;
}

/* reduce_mean over split dims: each rank averages its D/p entries and the
 * pending sum over the splitting axes adds p such means, so the local mean
 * is scaled by 1/p. The reduced dims come from the op's axes (none: all),
 * not from its sharding rule: the rule is derived from types, and the
 * operand's type is local here, where a split dim of local extent 1 (one
 * sample per rank) is a size-1 dim the rule gives no factor; the global
 * types the rule was meant for no longer exist. */
/* op, built here to stand for x's pending partial value, is stored like x (the storage pass's decision on
 * the global program: a 16-bit value stays 16-bit), so the collective completing it moves what the planner
 * predicted from the global program (2 bytes per element under --precision bf16) */
static void store_like(spmd *S, gv_op *op, const gv_value *x) {
  gv_dtype st = gv_value_storage(x);
  if (st == x->type.dtype) return;
  const char *name = gv_dtype_name(st);
  gv_set_strs(S->m, op, "storage", 1, &name);
}

static int fix_mean(spmd *S, gv_op *op, const gv_sharding *xs) {
  if (!xs) return 0;
  const int64_t *axes;
  int na = gv_get_ints(op, "axes", &axes), rank = op->opnds[0]->type.rank;
  int64_t p = 1;
  for (int d = 0; d < xs->rank && d < rank; d++) {
    bool red = na <= 0;
    for (int k = 0; k < na && !red; k++) red = axes[k] == d || axes[k] + rank == d;
    if (red) p *= gv_sharding_dim_split(xs, d);
  }
  if (p == 1) return 0;
  gvb b = {S->m, op->next, op->loc};
  gv_value *res = op->res[0];
  gv_value *c = gvb_cst(&b, res->type.dtype, 1.0 / (double)p);
  gv_value *y = gvb_bin(&b, GV_OP_MUL, res, c);
  if (!y) return -1;
  store_like(S, y->def, res);
  gv_subst_add(S->sub, res, y, y->def); /* the multiply keeps reading res */
  const gv_sharding *sh[1] = {gv_op_sharding(op, 0)};
  gv_set_shardings(S->m, y->def, sh);
  return 0;
}

/* gather from a table split on its gather axis: masked local lookup. */
static int lower_gather(spmd *S, gv_op *op, const gv_sharding *ts) {
  int rank = op->opnds[0]->type.rank;
  int ax = (int)gv_get_int(op, "axis", 0);
  if (ax < 0) ax += rank;
  if (!ts || ax < 0 || ax >= ts->rank || !ts->naxes[ax]) return 0;
  unsigned axes = 0;
  for (int k = 0; k < ts->naxes[ax]; k++) axes |= 1u << ts->axes[ax][k];
  int64_t vloc = op->opnds[0]->type.dims[ax], vglob = vloc * gv_sharding_dim_split(ts, ax);
  gvb b = {S->m, op, op->loc};
  gv_value *idx = op->opnds[1];
  gv_dtype it = idx->type.dtype;
  gv_op *ai = gv_op_new(S->m, GV_OP_AXIS_INDEX, 0, NULL, 1);
  gv_op_set_loc(S->m, ai, op->loc, NULL);
  const char *names[GV_MAX_MESH_AXES];
  int n = 0;
  for (int a = 0; a < S->mesh->naxes; a++)
    if (axes & (1u << a)) names[n++] = S->mesh->axis[a];
  gv_set_str(S->m, ai, "mesh", S->mesh->name);
  gv_set_strs(S->m, ai, "axes", n, names);
  gv_value *coord = gvb_fin(&b, ai);
  if (coord && it != GV_DT_I64) {
    gv_op *cst = gvb_new(&b, GV_OP_CAST, 1, &coord);
    if (!cst) return -1;
    gv_set_type(S->m, cst, "to", it);
    coord = gvb_fin(&b, cst);
  }
  gv_value *off = gvb_bin(&b, GV_OP_MUL, coord, gvb_cst(&b, it, (double)vloc));
  gv_value *zero = gvb_cst(&b, it, 0.0);
  gv_value *wrapped = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){gvb_bin(&b, GV_OP_LESS, idx, zero),
                                                               gvb_bin(&b, GV_OP_ADD, idx, gvb_cst(&b, it, (double)vglob)), idx});
  gv_value *li = gvb_bin(&b, GV_OP_SUB, wrapped, off);
  gv_value *in = gvb_bin(&b, GV_OP_AND, gvb_bin(&b, GV_OP_GREATER_EQUAL, li, zero),
                         gvb_bin(&b, GV_OP_LESS, li, gvb_cst(&b, it, (double)vloc)));
  gv_value *lic = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){in, li, zero});
  if (!lic) return -1;
  op->opnds[1] = lic;
  /* mask broadcast to the result: [1]*ax + idx dims + [1]*(rank-ax-1) */
  gv_op *rs = gvb_new(&b, GV_OP_RESHAPE, 1, &in);
  if (!rs) return -1;
  gv_type mt = gv_type_make(GV_DT_BOOL, 0, NULL);
  for (int d = 0; d < ax; d++) mt.dims[mt.rank++] = 1;
  for (int d = 0; d < in->type.rank; d++) mt.dims[mt.rank++] = in->type.dims[d];
  for (int d = ax + 1; d < rank; d++) mt.dims[mt.rank++] = 1;
  rs->res[0]->type = mt;
  gv_value *mask = gvb_fin(&b, rs);
  gvb a = {S->m, op->next, op->loc};
  gv_value *res = op->res[0];
  gv_value *y = gvb_op(&a, GV_OP_WHERE, 3, (gv_value *[]){mask, res, gvb_cst(&a, res->type.dtype, 0.0)});
  if (!y) return -1;
  store_like(S, y->def, res);
  gv_subst_add(S->sub, res, y, y->def); /* the where keeps reading res */
  const gv_sharding *sh[1] = {gv_op_sharding(op, 0)};
  gv_set_shardings(S->m, y->def, sh);
  return 0;
}

static gv_value *axis_index(spmd *S, gvb *b, unsigned axes, gv_dtype it);

/* gather_grad whose table dim (axis) is split (propagate-sharding's
 * gather_grad_rows): this rank's rows only, as Megatron's vocab-parallel
 * embedding backward: ids shifted by the rank's first row, those outside
 * its rows sent to row 0 with their dy rows zeroed (dy and the ids stay
 * whole over the table's axes). */
static int lower_gather_grad(spmd *S, gv_op *op) {
  const gv_sharding *rs = gv_op_sharding(op, 0);
  int ax = (int)gv_get_int(op, "axis", 0);
  if (!rs || ax < 0 || ax >= rs->rank || !rs->naxes[ax]) return 0;
  unsigned axes = 0;
  for (int k = 0; k < rs->naxes[ax]; k++) axes |= 1u << rs->axes[ax][k];
  gv_value *dy = op->opnds[0], *idx = op->opnds[1];
  int64_t vloc = op->res[0]->type.dims[ax];
  gv_dtype it = idx->type.dtype;
  gvb b = {S->m, op, op->loc};
  gv_value *off = gvb_bin(&b, GV_OP_MUL, axis_index(S, &b, axes, it), gvb_cst(&b, it, (double)vloc));
  gv_value *zero = gvb_cst(&b, it, 0.0);
  gv_value *li = gvb_bin(&b, GV_OP_SUB, idx, off);
  gv_value *in = gvb_bin(&b, GV_OP_AND, gvb_bin(&b, GV_OP_GREATER_EQUAL, li, zero),
                         gvb_bin(&b, GV_OP_LESS, li, gvb_cst(&b, it, (double)vloc)));
  gv_value *lic = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){in, li, zero});
  if (!lic) return -1;
  /* the mask broadcast to dy: [1]*ax + the ids' dims + [1]*(dy's rank - ax - the ids' rank) */
  gv_op *r = gvb_new(&b, GV_OP_RESHAPE, 1, &in);
  if (!r) return -1;
  gv_type mt = gv_type_make(GV_DT_BOOL, 0, NULL);
  for (int d = 0; d < ax; d++) mt.dims[mt.rank++] = 1;
  for (int d = 0; d < in->type.rank; d++) mt.dims[mt.rank++] = in->type.dims[d];
  while (mt.rank < dy->type.rank) mt.dims[mt.rank++] = 1;
  r->res[0]->type = mt;
  gv_value *mask = gvb_fin(&b, r);
  gv_value *dym = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){mask, dy, gvb_cst(&b, dy->type.dtype, 0.0)});
  if (!dym) return -1;
  store_like(S, dym->def, dy);
  op->opnds[0] = dym;
  op->opnds[1] = lic;
  gv_set_int(S->m, op, "dim", vloc);
  return 0;
}

/* galv.axis_index over the axes mask, as a value of dtype it. */
static gv_value *axis_index(spmd *S, gvb *b, unsigned axes, gv_dtype it) {
  gv_op *ai = gv_op_new(S->m, GV_OP_AXIS_INDEX, 0, NULL, 1);
  gv_op_set_loc(S->m, ai, b->loc, NULL);
  const char *names[GV_MAX_MESH_AXES];
  int n = 0;
  for (int a = 0; a < S->mesh->naxes; a++)
    if (axes & (1u << a)) names[n++] = S->mesh->axis[a];
  gv_set_str(S->m, ai, "mesh", S->mesh->name);
  gv_set_strs(S->m, ai, "axes", n, names);
  gv_value *coord = gvb_fin(b, ai);
  if (coord && it != GV_DT_I64) {
    gv_op *cst = gvb_new(b, GV_OP_CAST, 1, &coord);
    if (!cst) return NULL;
    gv_set_type(S->m, cst, "to", it);
    coord = gvb_fin(b, cst);
  }
  return coord;
}

/* dropout (docs/training.md "Dropout"): the mask is a function of the
 * global coordinates, so the local op gets this rank's shard offsets as an
 * operand, off = sum over the split dims d of e_d * local_d * axis_index(d's
 * axes) (i64 [rank]), and `rows`, the global dim 0 (a pipeline
 * microbatch's rows). A dropout already partitioned (two operands) stays.
 * The mask of a tensor of rank r whose local dims are dims, split as sh
 * says in its first nsplit dims: the offsets value (NULL when none is
 * split) and `rows` set on op. */
static int mask_offsets(spmd *S, gv_op *op, int r, const int64_t *dims, const gv_sharding *sh, int nsplit, gv_value **offp) {
  gv_set_int(S->m, op, "rows", dims[0] * (sh && nsplit > 0 ? gv_sharding_dim_split(sh, 0) : 1));
  gvb b = {S->m, op, op->loc};
  gv_value *off = NULL;
  for (int d = 0; sh && d < nsplit && d < sh->rank; d++) {
    if (!sh->naxes[d]) continue;
    unsigned axes = 0;
    for (int k = 0; k < sh->naxes[d]; k++) axes |= 1u << sh->axes[d][k];
    int64_t rr = r;
    gv_tensor *e = gv_tensor_new(S->m->arena, gv_type_make(GV_DT_I64, 1, &rr));
    ((int64_t *)e->data)[d] = dims[d];
    gv_op *c = gv_constant_new(S->m, e);
    gv_op_set_loc(S->m, c, op->loc, NULL);
    gv_value *term = gvb_bin(&b, GV_OP_MUL, gvb_fin(&b, c), axis_index(S, &b, axes, GV_DT_I64));
    off = off ? gvb_bin(&b, GV_OP_ADD, off, term) : term;
    if (!off) return -1;
  }
  *offp = off;
  return 0;
}

static int lower_dropout(spmd *S, gv_op *op) {
  const gv_type *t = &op->res[0]->type;
  if (op->nopnds != 1 || t->rank < 1) return 0;
  gv_value *off;
  if (mask_offsets(S, op, t->rank, t->dims, gv_op_sharding(op, 0), t->rank, &off)) return -1;
  if (off) gv_op_set_operands(S->m, op, 2, (gv_value *[]){op->opnds[0], off});
  return 0;
}

/* galv.attention / attention_grad with dropout (docs/fused-attention.md): the
 * same for its scores [batch..., Sq, Sk], whose batch dims are split as the
 * results' (the sharding rule splits no other), the offsets appended as the
 * last operand (gv_attn_off). */
static int lower_attention_dropout(spmd *S, gv_op *op) {
  gv_attn_geo g;
  if (!gv_get_attr(op, "ratio") || gv_attn_off(op) >= 0 || gv_attn_geometry(S->m, op, &g)) return 0;
  int64_t dims[6];
  for (int d = 0; d < g.nb; d++) dims[d] = g.bd[d];
  dims[g.nb] = g.Sq, dims[g.nb + 1] = g.Sk;
  gv_value *off, *in[GV_ATTN_MAX_FN + 8];
  if (mask_offsets(S, op, g.nb + 2, dims, gv_op_sharding(op, 0), g.nb, &off)) return -1;
  if (!off || op->nopnds + 1 > (int)(sizeof in / sizeof in[0])) return 0;
  for (int i = 0; i < op->nopnds; i++) in[i] = op->opnds[i];
  in[op->nopnds] = off;
  gv_op_set_operands(S->m, op, op->nopnds + 1, in);
  return 0;
}

/* reduce_sum / reduce_max over the last dim (kept) or, last < 0, over all
 * dims (a scalar). */
static gv_value *reduce(gvb *b, gv_opcode code, gv_value *x, int last) {
  gv_op *o = gvb_new(b, code, 1, &x);
  if (!o) return NULL;
  if (last >= 0) gv_set_ints(b->m, o, "axes", 1, (int64_t[]){last});
  else gv_set_int(b->m, o, "keepdims", 0);
  return gvb_fin(b, o);
}

/* Megatron's vocab-parallel cross entropy (docs/sharding.md): logits
 * [.., V] split on V over the axes vax (and on row dims over rax), labels
 * split like the rows. Per row: max = all_reduce(max, vax) of the local
 * max, sum = all_reduce(sum, vax) of the local sum exp(x - max), the label's
 * logit picked by the rank whose vocab block holds it (offset = axis_index
 * x V_local) and all_reduce(sum, vax)'d; loss = sum over counted rows of
 * log(sum) + max - target, and the count, all_reduce(sum, rax)'d, divided.
 * The gradient (softmax - onehot) x dloss / count is local: it reuses the
 * loss's row statistics (no communication), or computes them when alone.
 * Logits without splits keep the op. */
static int lower_cross_entropy(spmd *S, gv_op *op) {
  bool grad = op->code == GV_OP_CROSS_ENTROPY_GRAD;
  gv_value *x = op->opnds[grad ? 1 : 0], *lab = op->opnds[grad ? 2 : 1];
  const gv_sharding *xs = gv_value_sharding(S->m, x);
  int r = x->type.rank;
  unsigned vax = 0, rax = 0;
  for (int d = 0; xs && d < xs->rank && d < r; d++)
    for (int k = 0; k < xs->naxes[d]; k++) *(d == r - 1 ? &vax : &rax) |= 1u << xs->axes[d][k];
  if (!vax && !rax) return 0;
  gv_dtype dt = x->type.dtype, it = lab->type.dtype;
  int64_t vloc = x->type.dims[r - 1];
  gvb b = {S->m, op, op->loc};
  struct ce_stats *st = NULL;
  for (int i = 0; i < S->nce; i++)
    if (S->ce[i].x == x && S->ce[i].lab == lab) st = &S->ce[i];
  struct ce_stats tmp;
  if (!st) {
    st = S->nce < (int)(sizeof S->ce / sizeof S->ce[0]) ? &S->ce[S->nce++] : &tmp;
    memset(st, 0, sizeof *st);
    gv_value *mx = reduce(&b, GV_OP_REDUCE_MAX, x, r - 1);
    if (vax && mx) mx = coll(S, GV_OP_ALL_REDUCE, mx, vax, 0, 0, "max", op);
    gv_value *se = reduce(&b, GV_OP_REDUCE_SUM, gvb_un(&b, GV_OP_EXP, gvb_bin(&b, GV_OP_SUB, x, mx)), r - 1);
    if (vax && se) se = coll(S, GV_OP_ALL_REDUCE, se, vax, 0, 0, "sum", op);
    gv_value *lse = gvb_bin(&b, GV_OP_ADD, gvb_un(&b, GV_OP_LOG, se), mx);
    /* labels [..] -> [.., 1], shifted by this rank's vocab offset */
    gv_op *rs = gvb_new(&b, GV_OP_RESHAPE, 1, &lab);
    if (!rs || !lse) return -1;
    gv_type lt = lab->type;
    lt.dims[lt.rank++] = 1;
    rs->res[0]->type = lt;
    gv_value *lab1 = gvb_fin(&b, rs), *ll = lab1;
    if (vax) ll = gvb_bin(&b, GV_OP_SUB, lab1, gvb_bin(&b, GV_OP_MUL, axis_index(S, &b, vax, it), gvb_cst(&b, it, (double)vloc)));
    gv_tensor *io = gv_tensor_new(S->m->arena, gv_type_make(it, 1, (int64_t[]){vloc}));
    if (it == GV_DT_I64) /* the same values as gv_tensor_set_i's, without a call per element */
      for (int64_t c = 0; c < vloc; c++) ((int64_t *)io->data)[c] = c;
    else
      for (int64_t c = 0; c < vloc; c++) gv_tensor_set_i(io, c, c);
    gv_op *ci = gv_constant_new(S->m, io);
    gv_op_set_loc(S->m, ci, op->loc, NULL);
    gv_value *iota = gvb_fin(&b, ci);
    gv_value *one = gvb_cst(&b, dt, 1.0), *zero = gvb_cst(&b, dt, 0.0);
    st->ohf = gvb_op(&b, GV_OP_WHERE, 3, (gv_value *[]){gvb_bin(&b, GV_OP_EQUAL, ll, iota), one, zero});
    st->valid = gvb_op(&b, GV_OP_WHERE, 3,
                       (gv_value *[]){gvb_bin(&b, GV_OP_EQUAL, lab1, gvb_cst(&b, it, (double)gv_get_int(op, "ignore_index", -100))),
                                      zero, one});
    gv_value *cnt = reduce(&b, GV_OP_REDUCE_SUM, st->valid, -1);
    if (rax && cnt) cnt = coll(S, GV_OP_ALL_REDUCE, cnt, rax, 0, 0, "sum", op);
    st->cnt1 = gvb_bin(&b, GV_OP_MAX, cnt, one);
    st->x = x, st->lab = lab, st->lse = lse;
    if (!st->ohf || !st->valid || !st->cnt1) return -1;
  }
  gv_value *res = op->res[0], *y;
  if (grad) {
    gv_value *p = gvb_un(&b, GV_OP_EXP, gvb_bin(&b, GV_OP_SUB, x, st->lse));
    gv_value *g = gvb_bin(&b, GV_OP_MUL, gvb_bin(&b, GV_OP_SUB, p, st->ohf), st->valid);
    y = gvb_bin(&b, GV_OP_MUL, g, gvb_bin(&b, GV_OP_DIV, op->opnds[0], st->cnt1));
  } else {
    gv_value *tgt = reduce(&b, GV_OP_REDUCE_SUM, gvb_bin(&b, GV_OP_MUL, st->ohf, x), r - 1);
    if (vax && tgt) tgt = coll(S, GV_OP_ALL_REDUCE, tgt, vax, 0, 0, "sum", op);
    gv_value *sum = reduce(&b, GV_OP_REDUCE_SUM, gvb_bin(&b, GV_OP_MUL, gvb_bin(&b, GV_OP_SUB, st->lse, tgt), st->valid), -1);
    if (rax && sum) sum = coll(S, GV_OP_ALL_REDUCE, sum, rax, 0, 0, "sum", op);
    y = gvb_bin(&b, GV_OP_DIV, sum, st->cnt1);
  }
  if (!y) return -1;
  if (!gv_type_equal(&y->type, &res->type))
    return gv_error_op(S->m, op, "spmd: vocab-parallel cross entropy: result type mismatch");
  /* the value standing for the op's result is stored as the storage pass stored that result on the global
   * program (the logits' gradient 16-bit under --precision bf16), so a reshard of it moves the bytes the
   * planner predicted */
  store_like(S, y->def, res);
  const gv_sharding *sh[1] = {gv_op_sharding(op, 0)};
  gv_set_shardings(S->m, y->def, sh);
  gv_subst_add(S->sub, res, y, NULL);
  gv_op_unlink(op);
  return 0;
}

/* Walks the body once in program order: reshards lowered to collectives,
 * local result types, the ops whose local form differs rewritten. */
static int partition(spmd *S, gv_func *f) {
  gv_op *op = f->body->first;
  while (op) {
    gv_op *next = op->next;
    gv_subst_op(S->sub, op); /* values replaced earlier in the walk */
    if (op->nregions) return gv_error_op(S->m, op, "spmd: ops with regions are not supported");
    if (op->code == GV_OP_RESHARD) {
      /* the operand's global sharding: its producer's attribute (already local typed) */
      const gv_sharding *have = gv_value_sharding(S->m, op->opnds[0]);
      gv_type t;
      if (local_type(S, op, op->res[0], gv_op_sharding(op, 0), &t)) return -1;
      if (lower_reshard(S, op, have)) return -1;
      op = next;
      continue;
    }
    const gv_sharding *x0 = op->nopnds ? gv_value_sharding(S->m, op->opnds[0]) : NULL;
    for (int i = 0; i < op->nres; i++) {
      gv_type t;
      if (local_type(S, op, op->res[i], gv_op_sharding(op, i), &t)) return -1;
      op->res[i]->type = t;
    }
    if (op->code == GV_OP_SLICE_GRAD) /* its zeros' shape: the local result's (a dim the window leaves whole may be split) */
      gv_set_ints(S->m, op, "shape", op->res[0]->type.rank, op->res[0]->type.dims);
    if (op->code == GV_OP_REDUCE_MEAN && fix_mean(S, op, x0)) return -1;
    if (op->code == GV_OP_GATHER && lower_gather(S, op, x0)) return -1;
    if (op->code == GV_OP_GATHER_GRAD && lower_gather_grad(S, op)) return -1;
    if (op->code == GV_OP_DROPOUT && lower_dropout(S, op)) return -1;
    if ((op->code == GV_OP_ATTENTION || op->code == GV_OP_ATTENTION_GRAD) && lower_attention_dropout(S, op)) return -1;
    if ((op->code == GV_OP_CROSS_ENTROPY || op->code == GV_OP_CROSS_ENTROPY_GRAD) && lower_cross_entropy(S, op)) return -1;
    op = next;
  }
  gv_subst_block(S->sub, f->body); /* ops the walk skipped: those it inserted */
  return 0;
}

int gv_pass_spmd_partition(gv_module *m) {
  if (!m->nmeshes || !m->main) return 0;
  gv_func *f = m->main;
  static spmd S; /* the layer table is large: not on the stack */
  memset(&S, 0, sizeof S);
  S.m = m;
  S.mesh = m->meshes[0];
  S.stage2 = gv_func_stage_kind(f) == 2;
  /* The planner's prediction from the global program, kept on the mesh for
   * the runtime's check against the bytes it hands to MPI: it must not be
   * derived from what this pass builds (planner/comm_predict.c). */
  m->meshes[0]->has_predicted = gv_mesh_devices(m->meshes[0]) > 1 && gv_cost_comm_bytes(m, m->meshes[0]->predicted) == 0;
  for (int i = 0; i < f->body->nargs; i++) {
    gv_value *v = f->body->args[i];
    gv_type t;
    if (local_type(&S, NULL, v, f->arg_sharding ? f->arg_sharding[i] : NULL, &t)) return -1;
    v->type = t;
  }
  if (!gv_shard_opts.quiet)
    fprintf(stderr, "galvc: spmd: %-15s %-8s %-28s %12s  %s\n", "collective", "axes", "shape (local)", "bytes/device", "node");
  S.sub = gv_subst_new();
  int rc = partition(&S, f);
  gv_subst_free(S.sub);
  if (rc) return -1;
  /* The program built here must send what the planner predicted from the
   * global program; a difference is a defect of one of the two, reported
   * now rather than by the runtime's check (which compares the prediction
   * with the bytes the program hands to MPI). */
  static const char *const kinds[NKIND] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  for (int k = 0; k < NKIND && m->meshes[0]->has_predicted; k++)
    if (S.kind_bytes[k] != m->meshes[0]->predicted[k])
      return gv_error(m, "spmd: the partitioned program sends %lld bytes of %s per device per run, the planner "
                         "predicted %lld from the global program",
                      (long long)S.kind_bytes[k], kinds[k], (long long)m->meshes[0]->predicted[k]);
  if (!gv_shard_opts.quiet)
    fprintf(stderr, "galvc: spmd: %d collectives, %lld bytes/device in total (mesh %s, %lld devices)\n", S.ncoll,
            (long long)S.total, S.mesh->name, (long long)gv_mesh_devices(S.mesh));
  if (!gv_shard_opts.quiet && S.ncoll) print_layers(&S);
  return 0;
}
