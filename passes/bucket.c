/* bucket.c — the bucket pass (docs/planner.md, "Step time: two streams",
 * "Gradient buckets"): gradient reductions coalesced into buckets, as
 * PyTorch DDP and Megatron do. spmd-partition gives every trained
 * parameter's gradient its own reduction (galv.all_reduce, ZeRO-2/3
 * galv.reduce_scatter), which the overlap pass
 * posts right after the backward op that produces the gradient; each pays
 * the collective's latency. This pass takes those reductions in program
 * order (the order the backward produces the gradients) and groups the
 * ones of one kind, mesh, axes, reduction, dtype and storage into buckets
 * of at most --bucket-mb MiB (gv_shard_opts.bucket_bytes; a gradient larger
 * than the cap is a bucket of its own). A bucket of two or more becomes
 *   pack:    the gradients flattened (views) and concatenated into one
 *            contiguous buffer (galv.concat) where the last of them is
 *            produced: [n] for all_reduce; [p, c] for reduce_scatter, each
 *            gradient's p blocks side by side, so block j of the bucket is
 *            every gradient's block j;
 *   call:    one collective on that buffer (its `bytes` the members' sum,
 *            `bucket` their count), posted there on the communication
 *            queue;
 *   unpack:  each gradient's reduced part sliced out (galv.slice, then a
 *            view to its type) right before the first op that reads it
 *            (the update), where the emitters' sync rule (ir/comm_sync.h)
 *            waits for the call.
 * Pack and unpack are copies (DDP's default, gradient_as_bucket_view off);
 * placing the gradients in the bucket's bytes by the memory plan, which
 * would save them, is not built. A gradient joins a bucket only if no
 * earlier member's reduced value is read before it is produced (without the
 * overlap pass the reductions sit at their updates: a bucket then holds the
 * gradients reduced before the first of those updates). ZeRO-2's
 * reduce-scatters, which spmd-partition already places in the backward,
 * are bucketed the same way. Only gradient reductions join (grad_reader:
 * the update or the microbatch sums read them first); any other reduction
 * (the loss's, tp's activation gradients, even when read late) is a
 * bucket of one and stays as it is; so do reductions synced
 * at once (packed through scratch, ir/comm_sync.h: a scatter dim with a
 * non-unit extent before it). Only the order and grouping of the calls changes: every element
 * is reduced over the same ranks in the same dtype, so results are those of
 * one call per gradient. Nothing happens with --bucket-mb 0. With
 * --bucket-mb auto (GV_BUCKET_AUTO) the pass prices cap 0 and a few caps from
 * the cluster's latency x bandwidth on copies of the program and applies the
 * fastest (gv_pass_bucket, docs/planner.md "The bucket size chosen"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/comm_sync.h"
#include "../ir/storage.h"
#include "../planner/cost.h"
#include "build.h"
#include "passes.h"
#include "plan_sharding.h"

static bool is_view(const gv_op *op) { return (gv_ops[op->code].flags & GV_VIEW) != 0; }

/* v's root through views */
static const gv_value *root(const gv_value *v) {
  while (v->def && is_view(v->def) && v->def->nopnds) v = v->def->opnds[0];
  return v;
}

typedef struct {
  gv_op *op;        /* the reduction */
  int64_t bytes;    /* its operand's bytes as stored (the cap counts these) */
  int first_read;   /* position of the first top-level non-view op reading its result (through views) */
  gv_op *reader;    /* that op */
  gv_op **views;    /* top-level views of its result before that reader, in order */
  int nviews, capviews;
  int bucket;       /* index of its bucket; -1: none */
} cand;

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

/* The group size of a reduce_scatter: operand dim / result dim along `dim`. */
static int64_t scatter_p(const gv_op *op) {
  int64_t d = gv_get_int(op, "dim", 0);
  return op->opnds[0]->type.dims[d] / op->res[0]->type.dims[d];
}

static bool candidate(const gv_op *op) {
  if ((op->code != GV_OP_ALL_REDUCE && op->code != GV_OP_REDUCE_SCATTER) || op->nopnds != 1 || op->nres != 1 || op->nregions || gv_comm_sync_at_once(op))
    return false;
  const gv_type *x = &op->opnds[0]->type, *o = &op->res[0]->type;
  if (!gv_type_is_static(x) || !gv_type_is_static(o) || x->rank < 1 || x->dtype != o->dtype) return false;
  if (op->code == GV_OP_REDUCE_SCATTER) {
    int64_t d = gv_get_int(op, "dim", 0);
    if (d < 0 || d >= x->rank || o->rank != x->rank || o->dims[d] < 1 || x->dims[d] % o->dims[d] ||
        prod(x->dims, 0, (int)d) != 1)
      return false;
  }
  return true;
}

static bool same_attr(const gv_op *a, const gv_op *b, const char *name) {
  const gv_attr *x = gv_get_attr(a, name), *y = gv_get_attr(b, name);
  if (!x || !y) return x == y;
  if (x->kind != y->kind) return false;
  if (x->kind == GV_ATTR_STRS) {
    if (x->u.strs.n != y->u.strs.n) return false;
    for (int i = 0; i < x->u.strs.n; i++)
      if (strcmp(x->u.strs.v[i], y->u.strs.v[i])) return false;
    return true;
  }
  if (x->kind == GV_ATTR_STR) return !strcmp(x->u.s, y->u.s);
  return gv_get_int(a, name, 0) == gv_get_int(b, name, 0);
}

/* a and b may share one call */
static bool same_key(const gv_op *a, const gv_op *b) {
  if (a->code != b->code || a->opnds[0]->type.dtype != b->opnds[0]->type.dtype) return false;
  if (strcmp(gv_get_str(a, "mesh", ""), gv_get_str(b, "mesh", "")) || !same_attr(a, b, "axes")) return false;
  if (strcmp(gv_get_str(a, "reduce", "sum"), gv_get_str(b, "reduce", "sum"))) return false;
  if (gv_value_storage(a->res[0]) != gv_value_storage(b->res[0]) || gv_value_storage(a->opnds[0]) != gv_value_storage(b->opnds[0]))
    return false;
  return a->code != GV_OP_REDUCE_SCATTER || scatter_p(a) == scatter_p(b);
}

/* the ops of op and its regions read a candidate's result: note op (top level, id) as its first reader */
static void note_reads(const gv_op *op, gv_op *top, int id, cand *c) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *r = root(op->opnds[i]);
    if (r->def && r->def->id < 0 && c[-r->def->id - 1].first_read == -1) c[-r->def->id - 1].first_read = id, c[-r->def->id - 1].reader = top;
  }
  for (int k = 0; k < op->nregions; k++)
    for (const gv_op *o = op->regions[k]->first; o; o = o->next) note_reads(o, top, id, c);
}

static gv_value *reshape(gvb *b, gv_value *x, int rank, const int64_t *dims) {
  gv_op *o = gvb_new(b, GV_OP_RESHAPE, 1, &x);
  if (!o) return NULL;
  o->res[0]->type = gv_type_make(x->type.dtype, rank, dims);
  return gvb_fin(b, o);
}

/* One bucket: the members mem[0..k) in program order. */
static int emit_bucket(gv_module *m, cand *c, const int *mem, int k, gv_subst *sub) {
  gv_op *last = c[mem[k - 1]].op, *first = c[mem[0]].op;
  bool rs = first->code == GV_OP_REDUCE_SCATTER;
  int64_t p = rs ? scatter_p(first) : 1;
  gvb b = {m, last, last->loc};
  gv_value **parts = gv_alloc(m->arena, sizeof *parts * (size_t)k);
  int64_t total = 0, bytes = 0;
  for (int i = 0; i < k; i++) {
    gv_op *op = c[mem[i]].op;
    int64_t n = gv_type_numel(&op->opnds[0]->type);
    int64_t d[2] = {rs ? p : n, n / p};
    parts[i] = reshape(&b, op->opnds[0], rs ? 2 : 1, d);
    if (!parts[i]) return -1;
    total += n / p;
    bytes += gv_get_int(op, "bytes", 0);
  }
  gv_op *cat = gvb_new(&b, GV_OP_CONCAT, k, parts);
  if (!cat) return -1;
  gv_set_int(m, cat, "axis", rs ? 1 : 0);
  gv_value *buf = gvb_fin(&b, cat);
  if (!buf) return -1;
  gv_op *call = gvb_new(&b, first->code, 1, &buf);
  if (!call) return -1;
  for (int i = 0; i < first->nattrs; i++) /* mesh, axes, reduce, storage, ...; not the member's sharding (its shape) */
    if (strcmp(first->attrs[i].name, "sharding") && strcmp(first->attrs[i].name, "bytes")) gv_set_attr(m, call, &first->attrs[i]);
  gv_set_int(m, call, "bytes", bytes);
  gv_set_int(m, call, "bucket", k);
  if (rs) gv_set_int(m, call, "dim", 0);
  gv_value *red = gvb_fin(&b, call);
  if (!red) return -1;
  int64_t off = 0;
  for (int i = 0; i < k; i++) {
    cand *x = &c[mem[i]];
    gv_op *op = x->op;
    const gv_type *t = &op->res[0]->type;
    int64_t n = gv_type_numel(t);
    gv_op *reader = x->reader;
    for (int v = 0; v < x->nviews; v++) { /* views of the result move with its unpacking, to just before the reader */
      gv_op_unlink(x->views[v]);
      gv_insert_before(reader, x->views[v]);
    }
    gvb u = {m, x->nviews ? x->views[0] : reader, op->loc};
    gv_op *s = gvb_new(&u, GV_OP_SLICE, 1, &red);
    if (!s) return -1;
    int64_t st = off, en = off + n, ax = rs ? 1 : 0, one = 1;
    gv_set_ints(m, s, "starts", 1, &st);
    gv_set_ints(m, s, "ends", 1, &en);
    gv_set_ints(m, s, "axes", 1, &ax);
    gv_set_ints(m, s, "steps", 1, &one);
    gv_value *part = gvb_fin(&u, s);
    gv_value *r = part ? reshape(&u, part, t->rank, t->dims) : NULL;
    if (!r) return -1;
    gv_subst_add(sub, op->res[0], r, NULL);
    off += n;
  }
  for (int i = 0; i < k; i++) gv_op_unlink(c[mem[i]].op);
  return 0;
}

/* Buckets of at most cap bytes. dry: nothing changes; *sig gets a hash of
 * the grouping (equal for caps that group alike). */
/* A gradient's reduction is first read by the update (passes/optimizer.c: loss unscaling, clipping, the
 * optimizer, all at "optimizer/...") or by the microbatch sums (passes/accumulate.c, "accumulate/..."). Any
 * other reduction (a vocab-parallel cross-entropy's row statistics, an activation's or its gradient's partial
 * sum) stays alone even when its reader comes late, as the loss's may under gradient accumulation: the storage
 * plan may store it otherwise than the gradients (fp32 row statistics beside 16-bit gradients), and one bucket
 * is one dtype. */
static bool grad_reader(const gv_op *op) {
  return op->loc && ((op->loc[0] == 'o' && !strncmp(op->loc, "optimizer/", 10)) || (op->loc[0] == 'a' && !strncmp(op->loc, "accumulate/", 11)));
}

static int bucket_with(gv_module *m, int64_t cap, bool dry, uint64_t *sig) {
  if (sig) *sig = 0;
  if (!m->main || !m->main->body || cap <= 0) return 0;
  gv_block *b = m->main->body;
  int nc = 0;
  for (gv_op *op = b->first; op; op = op->next) nc += candidate(op);
  if (nc < 2) return 0;
  cand *c = calloc((size_t)nc, sizeof *c);
  int *mem = malloc(sizeof *mem * (size_t)nc);
  if (!c || !mem) abort();
  /* ids: a candidate -(index + 1), every other top-level op its position */
  int id = 0, k = 0;
  for (gv_op *op = b->first; op; op = op->next, id++) {
    if (candidate(op)) {
      c[k] = (cand){.op = op, .bytes = gv_value_storage_bytes(op->opnds[0]), .first_read = -1, .bucket = -1};
      op->id = -(++k);
    } else {
      op->id = id;
    }
  }
  id = 0;
  for (gv_op *op = b->first; op; op = op->next, id++) {
    if (op->id < 0) {
      note_reads(op, op, id, c); /* a candidate reading another's result (not a gradient's reduction): below */
      continue;
    }
    if (is_view(op) && op->nopnds) {
      const gv_value *r = root(op->opnds[0]);
      if (r->def && r->def->id < 0 && c[-r->def->id - 1].first_read < 0) {
        cand *x = &c[-r->def->id - 1];
        if (x->nviews == x->capviews) {
          x->capviews = x->capviews ? 2 * x->capviews : 4;
          x->views = realloc(x->views, sizeof *x->views * (size_t)x->capviews);
          if (!x->views) abort();
        }
        x->views[x->nviews++] = op;
      }
      continue;
    }
    note_reads(op, op, op->id, c);
  }
  /* positions of the candidates, for the rule "no member's result is read before a later member is produced" */
  int *pos = malloc(sizeof *pos * (size_t)nc);
  if (!pos) abort();
  id = 0;
  for (gv_op *op = b->first; op; op = op->next, id++)
    if (op->id < 0) pos[-op->id - 1] = id;
  /* a candidate whose operand is another candidate's result, or that is read by one, stays alone */
  for (int i = 0; i < nc; i++) {
    const gv_value *r = root(c[i].op->opnds[0]);
    if (r->def && r->def->id < 0) c[i].first_read = -2, c[-r->def->id - 1].first_read = -2;
  }
  for (int i = 0; i < nc; i++)
    if (c[i].first_read >= 0 && (c[i].first_read < pos[i] || !c[i].reader || !grad_reader(c[i].reader))) c[i].first_read = -2;
  /* greedy, in program order: each key's open bucket takes the next reduction while it fits */
  int nb = 0;
  int *open = malloc(sizeof *open * (size_t)nc); /* per open bucket: a member (its key), bytes, earliest read */
  int64_t *obytes = malloc(sizeof *obytes * (size_t)nc);
  int *oread = malloc(sizeof *oread * (size_t)nc), *oid = malloc(sizeof *oid * (size_t)nc);
  if (!open || !obytes || !oread || !oid) abort();
  int nopen = 0;
  for (int i = 0; i < nc; i++) {
    if (c[i].first_read < 0) continue;
    int j = 0;
    while (j < nopen && !same_key(c[open[j]].op, c[i].op)) j++;
    if (j < nopen && (obytes[j] + c[i].bytes > cap || oread[j] < pos[i])) { /* closed: full, or read already */
      open[j] = open[nopen - 1], obytes[j] = obytes[nopen - 1], oread[j] = oread[nopen - 1], oid[j] = oid[nopen - 1];
      nopen--;
      j = nopen;
    }
    if (j == nopen) open[nopen] = i, obytes[nopen] = 0, oread[nopen] = c[i].first_read, oid[nopen++] = nb++;
    obytes[j] += c[i].bytes;
    if (c[i].first_read < oread[j]) oread[j] = c[i].first_read;
    c[i].bucket = oid[j];
  }
  free(open), free(obytes), free(oread), free(oid), free(pos);
  int *cnt = calloc((size_t)nb + 1, sizeof *cnt);
  if (!cnt) abort();
  for (int i = 0; i < nc; i++)
    if (c[i].bucket >= 0) cnt[c[i].bucket]++;
  if (dry) { /* FNV-1a over each candidate's bucket (-1: alone) */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nc; i++) {
      int64_t v = c[i].bucket >= 0 && cnt[c[i].bucket] >= 2 ? c[i].bucket : -1;
      h = (h ^ (uint64_t)v) * 1099511628211ull;
    }
    if (sig) *sig = h;
    for (int i = 0; i < nc; i++) free(c[i].views);
    free(c), free(mem), free(cnt);
    return 0;
  }
  gv_subst *sub = gv_subst_new();
  int rc = 0, made = 0, joined = 0;
  for (int bi = 0; bi < nb && !rc; bi++) {
    if (cnt[bi] < 2) continue;
    int n = 0;
    for (int i = 0; i < nc; i++)
      if (c[i].bucket == bi) mem[n++] = i;
    rc = emit_bucket(m, c, mem, n, sub);
    made++, joined += n;
  }
  if (!rc) gv_subst_block(sub, b);
  gv_subst_free(sub);
  for (int i = 0; i < nc; i++) free(c[i].views);
  free(c), free(mem), free(cnt);
  if (!rc && !gv_shard_opts.quiet && made)
    fprintf(stderr, "bucket: %d gradient reductions in %d buckets of at most %lld bytes (%d calls instead of %d)\n", joined,
            made, (long long)cap, nc - joined + made, nc);
  return rc;
}

/* --bucket-mb auto: the caps priced. alpha x beta of a link is the message
 * size whose transfer takes as long as one step's latency; a bucket of 10x
 * (100x) that spends a tenth (a hundredth) of its time on latency, as DDP's
 * and Megatron's bucket sizes are reasoned. Each link the program may use
 * gives its three: inside a node and, on more than one node, across. */
static int auto_caps(const gv_cluster *cl, int64_t *caps) {
  int n = 0;
  caps[n++] = 0;
  double link[2][2] = {{cl->intra_latency_us, cl->intra_gbps}, {cl->inter_latency_us, cl->inter_gbps}};
  for (int l = 0; l < (cl->nodes > 1 ? 2 : 1); l++) {
    double ab = link[l][0] * 1e-6 * link[l][1] * 1e9; /* bytes */
    for (int f = 1; f <= 100; f *= 10)
      if (ab * f >= 1 && ab * f < 1e12) caps[n++] = (int64_t)(ab * f + 0.5);
  }
  for (int i = 1; i < n; i++) /* ascending: of caps that price alike, the smallest is kept */
    for (int j = i; j > 1 && caps[j] < caps[j - 1]; j--) {
      int64_t t = caps[j];
      caps[j] = caps[j - 1], caps[j - 1] = t;
    }
  return n;
}

/* The step of m with buckets of cap (on a copy): gv_cost_timeline after the
 * passes that follow this one (storage, memory-plan), as the planner prices
 * a realisation. -1 when it cannot be priced. */
static int64_t priced(const gv_module *m, const gv_cluster *cl, int64_t cap) {
  gv_module *c = gv_module_clone(m);
  if (!c) return -1;
  gv_timeline tl;
  int64_t ns = -1;
  if (!bucket_with(c, cap, false, NULL) && !gv_pass_storage(c) && !gv_pass_memory_plan(c) && gv_cost_timeline(cl, c, &tl, NULL) >= 0)
    ns = tl.step_ns;
  gv_module_free(c);
  return ns;
}

int gv_pass_bucket(gv_module *m) {
  int64_t cap = gv_shard_opts.bucket_bytes;
  gv_shard_opts.bucket_chosen = cap > 0 ? cap : 0;
  if (cap == GV_BUCKET_AUTO && gv_shard_opts.bucket_planned >= 0) cap = gv_shard_opts.bucket_chosen = gv_shard_opts.bucket_planned;
  if (cap != GV_BUCKET_AUTO) return bucket_with(m, cap, false, NULL);
  const gv_cluster *cl = gv_plan_opts.cluster;
  if (!cl || cl->devices_per_node < 1 || !m->main || !m->main->body) return 0; /* nothing to price with: one call per gradient */
  int nc = 0;
  for (gv_op *op = m->main->body->first; op; op = op->next) nc += candidate(op);
  if (nc < 2) return 0;
  int64_t caps[8], ns[8];
  uint64_t sig[8];
  int n = auto_caps(cl, caps), best = 0;
  bool quiet = gv_shard_opts.quiet;
  gv_shard_opts.quiet = true;
  for (int i = 0; i < n; i++) {
    ns[i] = -1;
    if (bucket_with(m, caps[i], true, &sig[i])) return -1;
    bool seen = false; /* a cap that groups as a smaller one: the same program */
    for (int j = 0; j < i && !seen; j++) seen = sig[j] == sig[i];
    if (seen) continue;
    ns[i] = priced(m, cl, caps[i]);
    if (ns[i] >= 0 && (ns[best] < 0 || ns[i] < ns[best])) best = i;
  }
  gv_shard_opts.quiet = quiet;
  if (!quiet) {
    fprintf(stderr, "bucket: auto on %s:", cl->name);
    for (int i = 0; i < n; i++)
      if (ns[i] >= 0) fprintf(stderr, " %lld bytes %lld ns%s", (long long)caps[i], (long long)ns[i], i == best ? " (chosen)" : "");
    fputc('\n', stderr);
  }
  gv_shard_opts.bucket_chosen = caps[best];
  return bucket_with(m, caps[best], false, NULL);
}
